"""Reconnect backoff for informers: exponential, jittered, reset after a healthy period."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyctrl.clock import Clock

__all__ = ["BackoffPolicy"]


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    """How long an informer waits before retrying a failed list or watch.

    The n-th consecutive failure waits ``min(initial * factor**n, maximum)`` seconds,
    stretched by a random fraction of up to ``jitter`` so that many operators do not
    reconnect in lockstep after an API server outage. After ``reset_after`` seconds
    without a failure the sequence starts again at ``initial``. The defaults are
    client-go's reflector's (``wait.NewExponentialBackoffManager(800ms, 30s, 2m, 2.0,
    1.0)``): 800 ms doubling to 30 s, each delay stretched by up to 100 % (so a delay
    lies in [d, 2d), at most 60 s), reset after 2 minutes.

    Attributes:
        initial: The first delay, in seconds.
        maximum: The largest delay before jitter, in seconds.
        factor: The growth factor between consecutive delays.
        jitter: The largest random stretch, as a fraction of the delay.
        reset_after: Seconds without a failure after which the delay starts over.
    """

    initial: float = 0.8
    maximum: float = 30.0
    factor: float = 2.0
    jitter: float = 1.0
    reset_after: float = 120.0

    def __post_init__(self) -> None:
        for name in ("initial", "maximum", "jitter", "reset_after"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or math.isnan(value) or value < 0:
                raise ValueError(f"BackoffPolicy.{name} must be a number >= 0, got {value!r}")
        if self.factor < 1:
            raise ValueError(f"BackoffPolicy.factor must be >= 1, got {self.factor!r}")
        if self.maximum < self.initial:
            raise ValueError(
                f"BackoffPolicy.maximum ({self.maximum}) must not be below initial ({self.initial})"
            )


class Backoff:
    """The running state of a `BackoffPolicy`: call `next_delay` at each failure."""

    __slots__ = ("_clock", "_failures", "_last", "_policy", "_random")

    def __init__(self, policy: BackoffPolicy, clock: Clock, random: Callable[[], float]) -> None:
        self._policy = policy
        self._clock = clock
        self._random = random
        self._failures = 0
        self._last: float | None = None

    def next_delay(self) -> float:
        """The delay before the next retry; counts one more failure."""
        now = self._clock.now()
        policy = self._policy
        if self._last is not None and now - self._last > policy.reset_after:
            self._failures = 0
        self._last = now
        base = min(policy.initial * policy.factor**self._failures, policy.maximum)
        if base < policy.maximum:
            self._failures += 1
        return base * (1.0 + policy.jitter * self._random())
