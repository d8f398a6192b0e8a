"""pyctrl.clock: the real clock, and the fake clock tests drive by hand."""

from __future__ import annotations

import asyncio
import functools
import math
import time

import pytest

from pyctrl.clock import Clock, FakeClock, RealClock, TimerHandle


def test_fake_clock_starts_at_the_given_time_and_stands_still() -> None:
    """A FakeClock reads its start time until the test moves it."""
    clock = FakeClock(start=42.0)
    assert clock.now() == 42.0
    assert clock.now() == 42.0


def test_advance_moves_time_forward() -> None:
    """advance adds seconds to the fake time."""
    clock = FakeClock()
    clock.advance(1.5)
    clock.advance(0.5)
    assert clock.now() == 2.0


def test_set_moves_time_to_an_absolute_value() -> None:
    """set jumps the fake time to the given value."""
    clock = FakeClock(start=1.0)
    clock.set(10.0)
    assert clock.now() == 10.0


def test_advance_rejects_negative_seconds() -> None:
    """Monotonic time never goes back: advance(-1) is an error naming the value."""
    clock = FakeClock()
    with pytest.raises(ValueError, match="seconds must be >= 0, got -1"):
        clock.advance(-1)


def test_set_rejects_going_back() -> None:
    """set to an earlier time is an error naming both times."""
    clock = FakeClock(start=5.0)
    with pytest.raises(ValueError, match=r"cannot go back from 5\.0 to 4\.0"):
        clock.set(4.0)


def test_advance_rejects_nan_and_non_numbers() -> None:
    """NaN and non-numbers are refused with a clear error."""
    clock = FakeClock()
    with pytest.raises(ValueError, match="NaN"):
        clock.advance(math.nan)
    with pytest.raises(TypeError, match="seconds must be a number"):
        clock.advance("1")  # type: ignore[arg-type]


def test_timers_fire_in_deadline_order_when_time_reaches_them() -> None:
    """call_at callbacks run during advance, earliest first, only once due."""
    clock = FakeClock()
    fired: list[str] = []
    clock.call_at(3.0, lambda: fired.append("c"))
    clock.call_at(1.0, lambda: fired.append("a"))
    clock.call_at(2.0, lambda: fired.append("b"))
    assert clock.advance(1.5) == 1
    assert fired == ["a"]
    assert clock.advance(10.0) == 2
    assert fired == ["a", "b", "c"]


def test_timers_with_equal_deadlines_fire_in_scheduling_order() -> None:
    """Ties fire in the order the timers were scheduled."""
    clock = FakeClock()
    fired: list[int] = []
    for i in range(5):
        clock.call_at(1.0, functools.partial(fired.append, i))
    clock.advance(1.0)
    assert fired == [0, 1, 2, 3, 4]


def test_cancelled_timer_does_not_fire() -> None:
    """A cancelled timer is neither run nor counted as pending."""
    clock = FakeClock()
    fired: list[str] = []
    handle = clock.call_at(1.0, lambda: fired.append("x"))
    assert clock.pending_timers == 1
    handle.cancel()
    assert clock.pending_timers == 0
    assert clock.next_deadline is None
    assert clock.advance(2.0) == 0
    assert fired == []


def test_timer_scheduled_by_a_timer_fires_in_the_same_advance_if_due() -> None:
    """A callback that schedules another due timer sees it fire before advance returns."""
    clock = FakeClock()
    fired: list[str] = []

    def first() -> None:
        fired.append("first")
        clock.call_at(2.0, lambda: fired.append("second"))

    clock.call_at(1.0, first)
    clock.advance(5.0)
    assert fired == ["first", "second"]


def test_callbacks_read_their_own_deadline_as_the_time() -> None:
    """During advance the time steps through each deadline, then lands on the target."""
    clock = FakeClock()
    seen: list[float] = []
    clock.call_at(1.0, lambda: seen.append(clock.now()))
    clock.call_at(2.5, lambda: seen.append(clock.now()))
    clock.advance(4.0)
    assert seen == [1.0, 2.5]
    assert clock.now() == 4.0


def test_periodic_timer_fires_once_per_period_within_one_advance() -> None:
    """A timer that re-arms itself every second fires four times in advance(4)."""
    clock = FakeClock()
    ticks: list[float] = []

    def tick() -> None:
        ticks.append(clock.now())
        clock.call_at(clock.now() + 1.0, tick)

    clock.call_at(1.0, tick)
    clock.advance(4.0)
    assert ticks == [1.0, 2.0, 3.0, 4.0]


def test_next_deadline_reports_the_earliest_pending_timer() -> None:
    """next_deadline is the earliest deadline still pending."""
    clock = FakeClock()
    clock.call_at(7.0, lambda: None)
    clock.call_at(3.0, lambda: None)
    assert clock.next_deadline == 3.0
    clock.advance(4.0)
    assert clock.next_deadline == 7.0


async def test_call_at_a_past_time_runs_soon_on_the_loop() -> None:
    """A timer already due runs on the event loop without any advance."""
    clock = FakeClock(start=10.0)
    ran = asyncio.Event()
    clock.call_at(5.0, ran.set)
    async with asyncio.timeout(1):
        await ran.wait()


async def test_sleep_wakes_when_time_reaches_its_deadline() -> None:
    """sleep(5) resumes once the fake time has moved 5 seconds, and not before."""
    clock = FakeClock()
    task = asyncio.create_task(clock.sleep(5.0))
    async with asyncio.timeout(1):
        await clock.wait_for_timers(1)
    clock.advance(4.999)
    assert clock.pending_timers == 1
    clock.advance(0.001)
    async with asyncio.timeout(1):
        await task
    assert clock.pending_timers == 0


async def test_sleep_until_a_past_deadline_returns_at_once() -> None:
    """sleep_until a time already reached does not wait for the clock."""
    clock = FakeClock(start=3.0)
    async with asyncio.timeout(1):
        await clock.sleep_until(1.0)
        await clock.sleep(0)
    assert clock.pending_timers == 0


async def test_sleepers_wake_in_deadline_order() -> None:
    """Sleepers with different deadlines resume earliest first."""
    clock = FakeClock()
    woke: list[float] = []

    async def sleeper(seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append(seconds)

    async with asyncio.timeout(1), asyncio.TaskGroup() as tg:
        for seconds in (3.0, 1.0, 2.0):
            tg.create_task(sleeper(seconds))
        await clock.wait_for_timers(3)
        clock.advance(3.0)
    assert woke == [1.0, 2.0, 3.0]


async def test_cancelled_sleep_releases_its_timer() -> None:
    """Cancelling a sleeper removes its timer from the clock."""
    clock = FakeClock()
    task = asyncio.create_task(clock.sleep(10.0))
    async with asyncio.timeout(1):
        await clock.wait_for_timers(1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert clock.pending_timers == 0


async def test_timeout_at_expires_when_fake_time_reaches_deadline() -> None:
    """A timeout_at block is cancelled with TimeoutError once the clock reaches its deadline."""
    clock = FakeClock()
    never = asyncio.Event()

    async def bounded() -> None:
        async with clock.timeout_at(5.0):
            await never.wait()

    task = asyncio.create_task(bounded())
    async with asyncio.timeout(1):
        await clock.wait_for_timers(1)
        clock.advance(5.0)
        with pytest.raises(TimeoutError):
            await task


async def test_timeout_at_does_not_fire_after_the_block_ends() -> None:
    """A block that finishes before its deadline leaves no timer behind and no error."""
    clock = FakeClock()
    async with clock.timeout_at(5.0):
        pass
    assert clock.pending_timers == 0
    clock.advance(10.0)


async def test_timeout_at_a_past_deadline_expires_at_once() -> None:
    """A deadline already reached cancels the block at its first await."""
    clock = FakeClock(start=10.0)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(1), clock.timeout_at(1.0):
            await asyncio.Event().wait()


async def test_timeout_at_none_never_expires() -> None:
    """timeout_at(None) sets no timer."""
    clock = FakeClock()
    async with clock.timeout_at(None):
        assert clock.pending_timers == 0


async def test_wait_for_timers_returns_once_enough_timers_are_pending() -> None:
    """wait_for_timers resumes when the requested number of timers exist."""
    clock = FakeClock()

    async def waiter() -> None:
        await clock.wait_for_timers(2)

    task = asyncio.create_task(waiter())
    clock.call_at(1.0, lambda: None)
    await asyncio.sleep(0)  # let the waiter start and block on one timer of two
    assert not task.done()
    clock.call_at(2.0, lambda: None)
    async with asyncio.timeout(1):
        await task


def test_fake_and_real_clocks_satisfy_the_clock_protocol() -> None:
    """Both clocks are Clocks, and their timer handles are TimerHandles."""
    fake: Clock = FakeClock()
    real: Clock = RealClock()
    assert isinstance(fake, Clock)
    assert isinstance(real, Clock)
    assert isinstance(fake.call_at(1.0, lambda: None), TimerHandle)


async def test_real_clock_reads_the_event_loop_time() -> None:
    """RealClock.now is the running loop's clock."""
    clock = RealClock()
    loop = asyncio.get_running_loop()
    before = loop.time()
    now = clock.now()
    assert before <= now <= loop.time()


def test_real_clock_outside_a_loop_reads_time_monotonic() -> None:
    """Without a running loop RealClock.now falls back to time.monotonic."""
    before = time.monotonic()
    now = RealClock().now()
    assert before <= now <= time.monotonic()


async def test_real_clock_call_at_runs_the_callback_on_the_loop() -> None:
    """RealClock.call_at schedules on the running loop's timer."""
    clock = RealClock()
    ran = asyncio.Event()
    clock.call_at(clock.now(), ran.set)
    async with asyncio.timeout(1):
        await ran.wait()


async def test_real_clock_sleep_until_returns_once_the_deadline_passed() -> None:
    """RealClock.sleep_until waits until the loop clock reaches the deadline."""
    clock = RealClock()
    deadline = clock.now() + 0.01
    async with asyncio.timeout(1):
        await clock.sleep_until(deadline)
        await clock.sleep(0)
    assert clock.now() >= deadline


async def test_real_clock_timeout_at_expires_at_the_deadline() -> None:
    """RealClock.timeout_at raises TimeoutError at its deadline."""
    clock = RealClock()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(1), clock.timeout_at(clock.now() + 0.01):
            await asyncio.Event().wait()
