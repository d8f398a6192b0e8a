"""pyctrl.workqueue rate limiters: per-key backoff, token bucket, max-of, the default."""

from __future__ import annotations

from collections.abc import Hashable

import pytest

from pyctrl.clock import FakeClock
from pyctrl.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
)


def test_exponential_backoff_doubles_from_base() -> None:
    """Successive failures wait base, 2*base, 4*base..."""
    limiter = ItemExponentialFailureRateLimiter[str](base=0.005, max=1000.0)
    assert [limiter.when("a") for _ in range(4)] == [0.005, 0.01, 0.02, 0.04]


def test_exponential_backoff_is_capped_at_max() -> None:
    """The delay never exceeds max."""
    limiter = ItemExponentialFailureRateLimiter[str](base=1.0, max=5.0)
    assert [limiter.when("a") for _ in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]


def test_exponential_backoff_survives_huge_failure_counts() -> None:
    """Thousands of failures stay at max without overflowing."""
    limiter = ItemExponentialFailureRateLimiter[str]()
    for _ in range(5000):
        delay = limiter.when("a")
    assert delay == 1000.0
    assert limiter.num_requeues("a") == 5000


def test_exponential_backoff_is_per_key() -> None:
    """One key's failures do not affect another's delay."""
    limiter = ItemExponentialFailureRateLimiter[str](base=1.0, max=100.0)
    limiter.when("a")
    limiter.when("a")
    assert limiter.when("b") == 1.0
    assert limiter.num_requeues("a") == 2
    assert limiter.num_requeues("b") == 1


def test_forget_resets_the_key() -> None:
    """forget clears the failure count and the next delay is base again."""
    limiter = ItemExponentialFailureRateLimiter[str](base=1.0, max=100.0)
    limiter.when("a")
    limiter.when("a")
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == 1.0


def test_forget_of_an_unknown_key_is_harmless() -> None:
    """Forgetting a key never seen does nothing."""
    limiter = ItemExponentialFailureRateLimiter[str]()
    limiter.forget("never")
    assert limiter.num_requeues("never") == 0


@pytest.mark.parametrize(
    ("base", "maximum", "message"),
    [
        (0.0, 1.0, "base must be a positive finite number"),
        (-1.0, 1.0, "base must be a positive finite number"),
        (1.0, float("inf"), "max must be a positive finite number"),
        (2.0, 1.0, r"max \(1.0\) must be at least base \(2.0\)"),
    ],
)
def test_exponential_limiter_rejects_bad_bounds(base: float, maximum: float, message: str) -> None:
    """Bounds that make no sense are refused with the offending value."""
    with pytest.raises(ValueError, match=message):
        ItemExponentialFailureRateLimiter[str](base=base, max=maximum)


def test_bucket_allows_a_burst_then_spaces_by_qps() -> None:
    """A full bucket lets burst retries through at once, then one per 1/qps seconds."""
    limiter = BucketRateLimiter(qps=10.0, burst=3, clock=FakeClock())
    delays = [limiter.when("x") for _ in range(5)]
    assert delays[:3] == [0.0, 0.0, 0.0]
    assert delays[3] == pytest.approx(0.1)
    assert delays[4] == pytest.approx(0.2)


def test_bucket_refills_over_time_up_to_burst() -> None:
    """Tokens come back at qps, but never beyond the burst size."""
    clock = FakeClock()
    limiter = BucketRateLimiter(qps=1.0, burst=2, clock=clock)
    limiter.when("x")
    limiter.when("x")
    clock.advance(100.0)
    assert [limiter.when("x") for _ in range(3)] == [0.0, 0.0, 1.0]


def test_bucket_is_shared_by_all_keys_and_counts_none() -> None:
    """The bucket does not track keys: forget is a no-op and num_requeues is 0."""
    limiter = BucketRateLimiter(qps=1.0, burst=1, clock=FakeClock())
    assert limiter.when("a") == 0.0
    assert limiter.when("b") == 1.0
    limiter.forget("b")
    assert limiter.num_requeues("b") == 0


@pytest.mark.parametrize(
    ("qps", "burst", "message"),
    [
        (0.0, 1, "qps must be a positive finite number"),
        (1.0, 0, "burst must be an integer >= 1, got 0"),
        (1.0, 1.5, "burst must be an integer >= 1, got 1.5"),
    ],
)
def test_bucket_rejects_bad_settings(qps: float, burst: int, message: str) -> None:
    """Non-positive qps and bursts below one are refused."""
    with pytest.raises(ValueError, match=message):
        BucketRateLimiter(qps=qps, burst=burst)


def test_max_of_takes_the_longest_delay() -> None:
    """MaxOfRateLimiter waits as long as its strictest limiter."""
    limiter = MaxOfRateLimiter[str](
        ItemExponentialFailureRateLimiter(base=1.0, max=100.0),
        BucketRateLimiter(qps=1.0, burst=1, clock=FakeClock()),
    )
    assert limiter.when("a") == 1.0  # per-key says 1, bucket says 0
    assert limiter.when("b") == 1.0  # per-key says 1, bucket says 1
    assert limiter.when("a") == 2.0  # per-key says 2, bucket says 2
    assert limiter.when("a") == 4.0  # per-key says 4, bucket says 3


def test_max_of_forgets_in_every_limiter_and_reports_the_largest_count() -> None:
    """forget reaches all limiters; num_requeues is the maximum."""
    short = ItemExponentialFailureRateLimiter[str](base=1.0, max=10.0)
    long = ItemExponentialFailureRateLimiter[str](base=2.0, max=10.0)
    limiter = MaxOfRateLimiter[str](short, long)
    limiter.when("a")
    short.when("a")
    assert limiter.num_requeues("a") == 2
    limiter.forget("a")
    assert (short.num_requeues("a"), long.num_requeues("a")) == (0, 0)


def test_max_of_needs_a_limiter() -> None:
    """An empty MaxOfRateLimiter is refused."""
    with pytest.raises(ValueError, match="at least one rate limiter"):
        MaxOfRateLimiter[str]()


def test_default_controller_rate_limiter_is_per_key_exponential_only() -> None:
    """The default backs off per key from 5 ms to 1000 s, with no overall bucket."""
    limiter = default_controller_rate_limiter()
    assert isinstance(limiter, ItemExponentialFailureRateLimiter)
    assert (limiter.base, limiter.max) == (0.005, 1000.0)
    # Many distinct keys are never slowed down by each other.
    assert {limiter.when(i) for i in range(1000)} == {0.005}


def test_default_controller_rate_limiter_with_an_overall_bucket() -> None:
    """overall_qps adds a token bucket that slows retries of all keys together."""
    limiter = default_controller_rate_limiter(overall_qps=10.0, overall_burst=2, clock=FakeClock())
    delays = [limiter.when(i) for i in range(3)]
    assert delays[:2] == [0.005, 0.005]
    assert delays[2] == pytest.approx(0.1)


def test_limiters_satisfy_the_protocol() -> None:
    """Every shipped limiter is a RateLimiter."""
    limiters: list[RateLimiter[Hashable]] = [
        ItemExponentialFailureRateLimiter(),
        BucketRateLimiter(qps=1.0, burst=1),
        MaxOfRateLimiter[Hashable](ItemExponentialFailureRateLimiter()),
        default_controller_rate_limiter(),
    ]
    assert all(isinstance(limiter, RateLimiter) for limiter in limiters)
