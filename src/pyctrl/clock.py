"""Clocks: where pyctrl's time-based code reads the time and waits for it.

Everything in pyctrl that waits for time to pass (the workqueue's delayed and
rate-limited items, leader election's lease renewals, informer resyncs, a reconcile's
``requeue_after``) asks a `Clock` instead of calling `time` or `asyncio.sleep` directly, so
that tests can drive time by hand.

A `Clock` tells the time (`Clock.now`, monotonic seconds), sleeps (`Clock.sleep`,
`Clock.sleep_until`), runs a callback at a given time (`Clock.call_at`, which lets a
component wait for "time T or an event, whichever comes first" without a task of its
own), and bounds a block of code by a deadline (`Clock.timeout_at`).

Two implementations ship:

- `RealClock`: the asyncio event loop's monotonic clock. The default everywhere.
- `FakeClock`: a public testing helper. Its time stands still until the test calls
  `FakeClock.advance` or `FakeClock.set`; then every timer and sleeper whose deadline
  has been reached fires, in deadline order, before the call returns. No test has to
  sleep for real::

      clock = FakeClock()
      queue = WorkQueue(clock=clock)
      queue.add_after("key", 5.0)
      clock.advance(5.0)
      assert queue.get_nowait() == "key"

Like asyncio itself, clocks are not thread-safe: use them from the event loop's thread.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import time
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractAsyncContextManager
    from types import TracebackType

__all__ = ["Clock", "FakeClock", "RealClock", "TimerHandle"]


@runtime_checkable
class TimerHandle(Protocol):
    """A callback scheduled with `Clock.call_at`; `cancel` stops it from running.

    `asyncio.TimerHandle` is one.
    """

    def cancel(self) -> None:
        """Stop the callback from running; does nothing if it already ran."""
        ...


@runtime_checkable
class Clock(Protocol):
    """The source of time for pyctrl's time-based behaviour (an extension point).

    Times are monotonic seconds from an arbitrary origin; only differences matter.
    """

    def now(self) -> float:
        """The current time, in monotonic seconds."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` (zero or less: just let other tasks run once)."""
        ...

    async def sleep_until(self, deadline: float) -> None:
        """Wait until `now` reaches ``deadline`` (at once if it already has)."""
        ...

    def call_at(self, when: float, callback: Callable[[], object]) -> TimerHandle:
        """Run ``callback()`` in the event loop once `now` reaches ``when``.

        A callback whose time has already come runs soon, as with `loop.call_soon`.
        """
        ...

    def timeout_at(self, deadline: float | None) -> AbstractAsyncContextManager[None]:
        """An ``async with`` block cancelled with `TimeoutError` at ``deadline``.

        ``None`` means no deadline. Works like `asyncio.timeout_at`, on this clock's time.
        """
        ...


def _check_time(name: str, value: float) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number of seconds, got {value!r}")
    if math.isnan(value):
        raise ValueError(f"{name} must be a number of seconds, got NaN")
    return float(value)


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class RealClock:
    """The event loop's monotonic clock (`asyncio.AbstractEventLoop.time`).

    Outside a running loop `now` falls back to `time.monotonic`, which is what the default
    asyncio loop reads too.
    """

    __slots__ = ()

    def now(self) -> float:
        """The running loop's time, or `time.monotonic` when no loop runs."""
        try:
            return asyncio.get_running_loop().time()
        except RuntimeError:
            return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` with `asyncio.sleep`."""
        await asyncio.sleep(max(0.0, _check_time("seconds", seconds)))

    async def sleep_until(self, deadline: float) -> None:
        """Wait until the loop's clock reaches ``deadline``."""
        await asyncio.sleep(max(0.0, _check_time("deadline", deadline) - self.now()))

    def call_at(self, when: float, callback: Callable[[], object]) -> TimerHandle:
        """Schedule ``callback`` with the running loop's `call_at`."""
        return asyncio.get_running_loop().call_at(_check_time("when", when), callback)

    def timeout_at(self, deadline: float | None) -> AbstractAsyncContextManager[None]:
        """`asyncio.timeout_at` itself."""
        if deadline is not None:
            deadline = _check_time("deadline", deadline)
        return _AsyncioTimeout(deadline)

    def __repr__(self) -> str:
        return "RealClock()"


class _AsyncioTimeout:
    """Adapts `asyncio.timeout_at` (which yields a `asyncio.Timeout`) to yield ``None``."""

    __slots__ = ("_deadline", "_timeout")

    def __init__(self, deadline: float | None) -> None:
        self._deadline = deadline
        self._timeout: asyncio.Timeout | None = None

    async def __aenter__(self) -> None:
        self._timeout = asyncio.timeout_at(self._deadline)
        await self._timeout.__aenter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        assert self._timeout is not None
        await self._timeout.__aexit__(exc_type, exc, traceback)


class _FakeTimer:
    """One pending `FakeClock.call_at` callback."""

    __slots__ = ("_callback", "_clock", "_done", "when")

    def __init__(self, clock: FakeClock, when: float, callback: Callable[[], object]) -> None:
        self._clock = clock
        self._callback: Callable[[], object] | None = callback
        self._done = False
        self.when = when

    def cancel(self) -> None:
        if not self._done:
            self._done = True
            self._callback = None
            self._clock._timer_finished()

    def _fire(self) -> None:
        if self._done:
            return
        callback = self._callback
        self._done = True
        self._callback = None
        self._clock._timer_finished()
        assert callback is not None
        callback()

    @property
    def pending(self) -> bool:
        return not self._done

    def __repr__(self) -> str:
        state = "pending" if not self._done else "done"
        return f"<FakeClock timer at {self.when} {state}>"


class FakeClock:
    """A clock whose time moves only when the test says so (a public testing helper).

    `advance` and `set` move the time forward; before they return, every timer whose
    deadline has been reached runs, in deadline order (ties in the order they were
    scheduled), and every `sleep` that has reached its deadline is woken. The time steps
    through each deadline on the way: a callback reads its own deadline from `now`, and a
    timer it schedules before the target time fires in the same call, so a periodic timer
    fires as often as it would have on a real clock. A woken sleeper
    resumes the next time the event loop runs, so after advancing, a test waits for the
    outcome it expects (for example ``await asyncio.wait_for(task, 1)``) rather than
    counting loop iterations.

    Args:
        start: The initial time in seconds.
    """

    __slots__ = ("_counter", "_now", "_pending", "_timers", "_waiters")

    def __init__(self, start: float = 0.0) -> None:
        self._now = _check_time("start", start)
        self._timers: list[tuple[float, int, _FakeTimer]] = []
        self._counter = itertools.count()
        self._pending = 0
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []

    def now(self) -> float:
        """The fake time: the start time plus everything advanced so far."""
        return self._now

    async def sleep(self, seconds: float) -> None:
        """Wait until the fake time has moved ``seconds`` forward."""
        await self.sleep_until(self._now + _check_time("seconds", seconds))

    async def sleep_until(self, deadline: float) -> None:
        """Wait until the fake time reaches ``deadline``."""
        deadline = _check_time("deadline", deadline)
        if deadline <= self._now:
            await asyncio.sleep(0)
            return
        woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        timer = self._schedule(deadline, lambda: _wake(woken))
        try:
            await woken
        finally:
            timer.cancel()

    def call_at(self, when: float, callback: Callable[[], object]) -> TimerHandle:
        """Run ``callback`` once the fake time reaches ``when``.

        A timer already due runs on the event loop soon (`loop.call_soon`), as it would on
        a real clock; this needs a running loop.
        """
        when = _check_time("when", when)
        if when <= self._now:
            return asyncio.get_running_loop().call_soon(callback)
        return self._schedule(when, callback)

    def timeout_at(self, deadline: float | None) -> AbstractAsyncContextManager[None]:
        """A block cancelled with `TimeoutError` once the fake time reaches ``deadline``."""
        if deadline is not None:
            deadline = _check_time("deadline", deadline)
        return _ClockTimeout(self, deadline)

    def advance(self, seconds: float) -> int:
        """Move the time forward by ``seconds`` and fire everything that became due.

        Returns:
            How many timers fired (sleepers woken count as timers).

        Raises:
            ValueError: ``seconds`` is negative: monotonic time never goes back.
        """
        seconds = _check_time("seconds", seconds)
        if seconds < 0:
            raise ValueError(f"FakeClock.advance: seconds must be >= 0, got {seconds}")
        return self._move_to(self._now + seconds)

    def set(self, now: float) -> int:
        """Move the time forward to ``now`` and fire everything that became due.

        Returns:
            How many timers fired.

        Raises:
            ValueError: ``now`` is earlier than the current time.
        """
        now = _check_time("now", now)
        if now < self._now:
            raise ValueError(
                f"FakeClock.set: time is monotonic; cannot go back from {self._now} to {now}"
            )
        return self._move_to(now)

    @property
    def pending_timers(self) -> int:
        """How many timers and sleepers wait for a future time."""
        return self._pending

    @property
    def next_deadline(self) -> float | None:
        """The earliest deadline of a pending timer or sleeper, or ``None``."""
        self._drop_cancelled()
        return self._timers[0][0] if self._timers else None

    async def wait_for_timers(self, count: int = 1) -> None:
        """Wait until at least ``count`` timers or sleepers are pending.

        Lets a test advance the clock only once the code under test is waiting on it.
        Bound it with `asyncio.timeout` in case that never happens.
        """
        if count < 0:
            raise ValueError(f"FakeClock.wait_for_timers: count must be >= 0, got {count}")
        while self._pending < count:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append((count, waiter))
            try:
                await waiter
            finally:
                waiter.cancel()

    def _schedule(self, when: float, callback: Callable[[], object]) -> _FakeTimer:
        timer = _FakeTimer(self, when, callback)
        heapq.heappush(self._timers, (when, next(self._counter), timer))
        self._pending += 1
        if self._waiters:
            still_waiting = []
            for count, waiter in self._waiters:
                if waiter.done():
                    continue
                if self._pending >= count:
                    waiter.set_result(None)
                else:
                    still_waiting.append((count, waiter))
            self._waiters = still_waiting
        return timer

    def _timer_finished(self) -> None:
        self._pending -= 1

    def _drop_cancelled(self) -> None:
        while self._timers and not self._timers[0][2].pending:
            heapq.heappop(self._timers)

    def _move_to(self, target: float) -> int:
        fired = 0
        # Step through each deadline, so a callback reads its own deadline as the time and
        # timers it schedules within the step (a periodic timer) fire in the same call.
        while self._timers and self._timers[0][0] <= target:
            when, _, timer = heapq.heappop(self._timers)
            if timer.pending:
                self._now = max(self._now, when)
                fired += 1
                timer._fire()
        self._now = target
        return fired

    def __repr__(self) -> str:
        return f"FakeClock(now={self._now}, pending_timers={self._pending})"


class _ClockTimeout:
    """`Clock.timeout_at` on a clock other than the loop's: a clock timer expires it."""

    __slots__ = ("_clock", "_deadline", "_handle", "_timeout")

    def __init__(self, clock: Clock, deadline: float | None) -> None:
        self._clock = clock
        self._deadline = deadline
        self._timeout: asyncio.Timeout | None = None
        self._handle: TimerHandle | None = None

    async def __aenter__(self) -> None:
        self._timeout = asyncio.timeout(None)
        await self._timeout.__aenter__()
        if self._deadline is not None:
            self._handle = self._clock.call_at(self._deadline, self._expire)

    def _expire(self) -> None:
        assert self._timeout is not None
        self._timeout.reschedule(asyncio.get_running_loop().time())

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._handle is not None:
            self._handle.cancel()
        assert self._timeout is not None
        await self._timeout.__aexit__(exc_type, exc, traceback)
