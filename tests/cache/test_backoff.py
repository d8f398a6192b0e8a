from __future__ import annotations

import pytest

from pyctrl.cache import BackoffPolicy
from pyctrl.cache._backoff import Backoff
from pyctrl.clock import FakeClock


def test_delays_double_from_800ms_to_the_30s_cap() -> None:
    """Without jitter the delays are 0.8, 1.6, 3.2 ... seconds, capped at 30."""
    backoff = Backoff(BackoffPolicy(jitter=0.0), FakeClock(), lambda: 0.5)
    delays = [backoff.next_delay() for _ in range(8)]
    assert delays == pytest.approx([0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0])


def test_jitter_stretches_each_delay_up_to_double_as_client_go_does() -> None:
    """With client-go's reflector jitter (1.0) a delay lies in [d, 2 d), the cap included."""
    low = Backoff(BackoffPolicy(), FakeClock(), lambda: 0.0)
    high = Backoff(BackoffPolicy(), FakeClock(), lambda: 0.999)
    assert low.next_delay() == pytest.approx(0.8)
    assert 1.59 < high.next_delay() < 1.6
    capped = [high.next_delay() for _ in range(10)][-1]
    assert 59.9 < capped < 60.0


def test_delays_start_over_after_a_healthy_period() -> None:
    """Two minutes without a failure reset the delay to the initial one."""
    clock = FakeClock()
    backoff = Backoff(BackoffPolicy(jitter=0.0), clock, lambda: 0.0)
    for _ in range(4):
        backoff.next_delay()
    clock.advance(119.0)
    assert backoff.next_delay() == pytest.approx(12.8)
    clock.advance(121.0)
    assert backoff.next_delay() == pytest.approx(0.8)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"initial": -1.0}, "BackoffPolicy.initial"),
        ({"factor": 0.5}, "BackoffPolicy.factor"),
        ({"initial": 5.0, "maximum": 1.0}, "BackoffPolicy.maximum"),
        ({"jitter": float("nan")}, "BackoffPolicy.jitter"),
    ],
)
def test_invalid_policies_are_refused_naming_the_field(
    kwargs: dict[str, float], message: str
) -> None:
    """A nonsensical policy raises ValueError naming the offending field."""
    with pytest.raises(ValueError, match=message):
        BackoffPolicy(**kwargs)
