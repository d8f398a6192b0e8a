"""Rate limiters: how long a key waits before it is retried."""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar, runtime_checkable

from pyctrl.clock import RealClock

if TYPE_CHECKING:
    from pyctrl.clock import Clock

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "default_controller_rate_limiter",
]

K = TypeVar("K", bound=Hashable)
K_contra = TypeVar("K_contra", bound=Hashable, contravariant=True)


@runtime_checkable
class RateLimiter(Protocol[K_contra]):
    """Decides how long a key waits before its next retry (an extension point).

    `WorkQueue.add_rate_limited` asks `when`; the controller calls `forget` once a key
    reconciles cleanly. Mirrors client-go's ``workqueue.TypedRateLimiter``.
    """

    def when(self, key: K_contra) -> float:
        """Seconds ``key`` should wait now; counts as one more failure of ``key``."""
        ...

    def forget(self, key: K_contra) -> None:
        """Stop tracking ``key``: its next `when` starts from scratch."""
        ...

    def num_requeues(self, key: K_contra) -> int:
        """How many failures of ``key`` are being counted."""
        ...


def _positive_finite(name: str, value: float) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


class ItemExponentialFailureRateLimiter(Generic[K]):
    """Per-key exponential backoff: ``base * 2**failures`` seconds, capped at ``max``.

    The first `when` for a key returns ``base``, the next ``2 * base``, and so on up to
    ``max``; `forget` starts the key over. The defaults (5 ms, 1000 s) are
    controller-runtime's.

    Args:
        base: The first delay, in seconds.
        max: The longest delay, in seconds.
    """

    __slots__ = ("_cap_exponent", "_failures", "base", "max")

    def __init__(self, base: float = 0.005, max: float = 1000.0) -> None:
        self.base = _positive_finite("base", base)
        self.max = _positive_finite("max", max)
        if self.max < self.base:
            raise ValueError(f"max ({max!r}) must be at least base ({base!r})")
        # Beyond this many failures base * 2**n exceeds max for sure; the margin covers
        # rounding in log2, and skipping the power keeps it from overflowing.
        self._cap_exponent = math.ceil(math.log2(self.max / self.base)) + 1
        self._failures: dict[K, int] = {}

    def when(self, key: K) -> float:
        """``base * 2**failures`` capped at ``max``, then count one more failure."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        if failures >= self._cap_exponent:
            return self.max
        return min(math.ldexp(self.base, failures), self.max)

    def forget(self, key: K) -> None:
        """Reset ``key``'s failure count."""
        self._failures.pop(key, None)

    def num_requeues(self, key: K) -> int:
        """Failures of ``key`` since it was last forgotten."""
        return self._failures.get(key, 0)

    def __repr__(self) -> str:
        return f"ItemExponentialFailureRateLimiter(base={self.base}, max={self.max})"


class BucketRateLimiter:
    """An overall token bucket: ``qps`` retries a second on average, bursts of ``burst``.

    Shared by all keys; it does not track keys, so `forget` does nothing and
    `num_requeues` is always 0. The bucket starts full. Like
    ``golang.org/x/time/rate``, each `when` takes a token, going into debt when there is
    none, and answers how long until that token would have been there.

    Args:
        qps: Tokens added per second.
        burst: Size of the bucket.
        clock: The time source; defaults to `RealClock`. Give it the queue's clock.
    """

    __slots__ = ("_clock", "_last", "_tokens", "burst", "qps")

    def __init__(self, qps: float, burst: int, *, clock: Clock | None = None) -> None:
        self.qps = _positive_finite("qps", qps)
        if not isinstance(burst, int) or isinstance(burst, bool) or burst < 1:
            raise ValueError(f"burst must be an integer >= 1, got {burst!r}")
        self.burst = burst
        self._clock: Clock = clock if clock is not None else RealClock()
        self._tokens = float(burst)
        self._last: float | None = None

    def when(self, key: object) -> float:
        """Take a token; return 0 if one was there, else the seconds until it is."""
        now = self._clock.now()
        if self._last is not None and now > self._last:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now if self._last is None else max(now, self._last)
        self._tokens -= 1.0
        if self._tokens >= 0.0:
            return 0.0
        return -self._tokens / self.qps

    def forget(self, key: object) -> None:
        """Do nothing: the bucket is shared by all keys."""

    def num_requeues(self, key: object) -> int:
        """Always 0: the bucket does not count per key."""
        return 0

    def __repr__(self) -> str:
        return f"BucketRateLimiter(qps={self.qps}, burst={self.burst})"


class MaxOfRateLimiter(Generic[K]):
    """Combines limiters: waits as long as the strictest of them says.

    Every limiter is asked on each `when` (so each counts the failure); `forget` reaches
    them all; `num_requeues` is the largest count.
    """

    __slots__ = ("limiters",)

    def __init__(self, *limiters: RateLimiter[K]) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one rate limiter")
        self.limiters: tuple[RateLimiter[K], ...] = limiters

    def when(self, key: K) -> float:
        """The longest delay any limiter asks for."""
        return max([limiter.when(key) for limiter in self.limiters])

    def forget(self, key: K) -> None:
        """Forget ``key`` in every limiter."""
        for limiter in self.limiters:
            limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        """The largest failure count any limiter holds for ``key``."""
        return max(limiter.num_requeues(key) for limiter in self.limiters)

    def __repr__(self) -> str:
        return f"MaxOfRateLimiter{self.limiters!r}"


def default_controller_rate_limiter(
    *,
    overall_qps: float | None = None,
    overall_burst: int = 100,
    clock: Clock | None = None,
) -> RateLimiter[Hashable]:
    """The rate limiter controllers use unless told otherwise.

    Per-key exponential backoff from 5 ms to 1000 s, as controller-runtime's priority
    queue has by default. Pass ``overall_qps`` to also cap retries of all keys together
    with a token bucket (client-go's ``DefaultControllerRateLimiter`` used 10 qps, burst
    100), combined with `MaxOfRateLimiter`.

    Args:
        overall_qps: Average retries per second across all keys; ``None`` for no cap.
        overall_burst: Bucket size for the overall cap.
        clock: The time source of the overall bucket; give it the queue's clock.
    """
    per_key: ItemExponentialFailureRateLimiter[Hashable] = ItemExponentialFailureRateLimiter()
    if overall_qps is None:
        return per_key
    return MaxOfRateLimiter[Hashable](
        per_key, BucketRateLimiter(overall_qps, overall_burst, clock=clock)
    )
