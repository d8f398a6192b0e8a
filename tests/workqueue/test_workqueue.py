"""pyctrl.workqueue.WorkQueue: deduplication, priorities, delays, rate limits, shutdown."""

from __future__ import annotations

import asyncio
import math
from datetime import timedelta

import pytest

from pyctrl.clock import FakeClock
from pyctrl.reconcile import Request
from pyctrl.workqueue import (
    LOW_PRIORITY,
    ItemExponentialFailureRateLimiter,
    ShutDown,
    ShutDownError,
    WorkQueue,
)


def make_queue(
    clock: FakeClock | None = None, starvation_timeout: float | None = None
) -> WorkQueue[str]:
    return WorkQueue(clock=clock or FakeClock(), starvation_timeout=starvation_timeout)


def drain(queue: WorkQueue[str]) -> list[str]:
    """Hand out and finish every ready key, in the order the queue gives them."""
    keys: list[str] = []
    while True:
        try:
            key = queue.get_nowait()
        except asyncio.QueueEmpty:
            return keys
        keys.append(key)
        queue.done(key)


# -- one key, at most once ---------------------------------------------------------------


def test_added_key_is_handed_out() -> None:
    """A key added is what get_nowait hands out."""
    queue = make_queue()
    queue.add("a")
    assert queue.get_nowait() == "a"


def test_adding_a_queued_key_again_is_a_no_op() -> None:
    """Re-adds of a queued key collapse: it is handed out once."""
    queue = make_queue()
    for _ in range(3):
        queue.add("a")
    assert len(queue) == 1
    assert drain(queue) == ["a"]


def test_key_being_processed_is_not_handed_out_again_until_done() -> None:
    """A key added while processed waits for done, then is handed out again."""
    queue = make_queue()
    queue.add("a")
    assert queue.get_nowait() == "a"
    queue.add("a")
    assert len(queue) == 0
    with pytest.raises(asyncio.QueueEmpty):
        queue.get_nowait()
    queue.done("a")
    assert queue.get_nowait() == "a"


def test_readds_while_processing_collapse_into_one() -> None:
    """Many adds during processing produce exactly one more hand-out."""
    queue = make_queue()
    queue.add("a")
    queue.get_nowait()
    for _ in range(5):
        queue.add("a")
    queue.done("a")
    assert drain(queue) == ["a"]


def test_key_done_without_readd_is_not_handed_out_again() -> None:
    """done on a key that was not re-added leaves the queue empty."""
    queue = make_queue()
    queue.add("a")
    queue.done(queue.get_nowait())
    assert len(queue) == 0
    assert not queue.is_processing("a")


def test_requests_work_as_keys() -> None:
    """reconcile.Request values are deduplicated by value."""
    queue: WorkQueue[Request] = WorkQueue(clock=FakeClock())
    queue.add(Request("ns", "a"))
    queue.add(Request("ns", "a"))
    queue.add(Request("ns", "b"))
    assert queue.get_nowait() == Request("ns", "a")
    assert queue.get_nowait() == Request("ns", "b")


def test_done_for_a_key_not_being_processed_is_an_error() -> None:
    """done for a key never handed out names the key and the queue."""
    queue = make_queue()
    queue.name = "pods"
    with pytest.raises(ValueError, match=r"workqueue 'pods': done\('a'\).*not being processed"):
        queue.done("a")


def test_done_twice_is_an_error() -> None:
    """A second done for the same hand-out is refused."""
    queue = make_queue()
    queue.add("a")
    queue.done(queue.get_nowait())
    with pytest.raises(ValueError, match="not being processed"):
        queue.done("a")


def test_unhashable_key_is_refused_with_its_type() -> None:
    """Adding a list names the problem: keys must be hashable."""
    queue: WorkQueue[object] = WorkQueue(clock=FakeClock())
    with pytest.raises(TypeError, match="keys must be hashable, got list"):
        queue.add(["a"])


def test_get_nowait_on_an_empty_queue_raises_queue_empty() -> None:
    """Nothing ready: get_nowait raises asyncio.QueueEmpty."""
    with pytest.raises(asyncio.QueueEmpty):
        make_queue().get_nowait()


async def test_get_waits_for_an_add() -> None:
    """A blocked get returns the key added after it started waiting."""
    queue = make_queue()
    async with asyncio.timeout(1), asyncio.TaskGroup() as tg:
        task = tg.create_task(queue.get())
        await asyncio.sleep(0)  # let the getter start and block
        assert not task.done()
        queue.add("a")
    assert task.result() == "a"


async def test_each_waiting_getter_receives_a_different_key() -> None:
    """Two blocked getters and two adds: each getter gets one key."""
    queue = make_queue()
    async with asyncio.timeout(1), asyncio.TaskGroup() as tg:
        first = tg.create_task(queue.get())
        second = tg.create_task(queue.get())
        await asyncio.sleep(0)  # let both getters block
        queue.add("a")
        queue.add("b")
    assert {first.result(), second.result()} == {"a", "b"}


async def test_cancelled_getter_passes_its_wake_up_on() -> None:
    """A getter cancelled after being woken does not swallow the key."""
    queue = make_queue()
    async with asyncio.timeout(1):
        first = asyncio.create_task(queue.get())
        await asyncio.sleep(0)
        second = asyncio.create_task(queue.get())
        await asyncio.sleep(0)
        queue.add("a")  # wakes the first getter...
        first.cancel()  # ...which is cancelled before it runs
        assert await second == "a"
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_cancelled_waiting_getter_leaves_the_queue_usable() -> None:
    """Cancelling a blocked get does not stop later gets from working."""
    queue = make_queue()
    waiting = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    queue.add("a")
    async with asyncio.timeout(1):
        assert await queue.get() == "a"


async def test_concurrent_workers_never_hold_the_same_key() -> None:
    """Workers racing on re-added keys never process one key twice at once."""
    queue = make_queue()
    active: set[str] = set()
    processed: list[str] = []
    idle = asyncio.Event()

    async def worker() -> None:
        while True:
            try:
                key = await queue.get()
            except ShutDownError:
                return
            assert key not in active
            active.add(key)
            await asyncio.sleep(0)  # let other workers and the producer run meanwhile
            processed.append(key)
            active.discard(key)
            queue.done(key)
            idle.set()

    async with asyncio.timeout(5), asyncio.TaskGroup() as tg:
        for _ in range(4):
            tg.create_task(worker())
        for i in range(300):
            queue.add(f"k{i % 7}")
            if i % 3 == 0:
                await asyncio.sleep(0)
        while len(queue) or queue.statistics().processing or queue.statistics().blocked:
            idle.clear()
            await idle.wait()
        queue.shut_down()
    assert set(processed) == {f"k{i}" for i in range(7)}


# -- priorities --------------------------------------------------------------------------


def test_same_priority_is_first_in_first_out() -> None:
    """Keys of one priority come out in the order they were added."""
    queue = make_queue()
    for key in "cab":
        queue.add(key)
    assert drain(queue) == ["c", "a", "b"]


def test_higher_priority_goes_first() -> None:
    """A key of higher priority is handed out before earlier lower ones."""
    queue = make_queue()
    queue.add("low", priority=LOW_PRIORITY)
    queue.add("normal")
    queue.add("high", priority=10)
    assert drain(queue) == ["high", "normal", "low"]


def test_readd_with_higher_priority_promotes() -> None:
    """Re-adding a queued key with a higher priority moves it ahead."""
    queue = make_queue()
    queue.add("a", priority=LOW_PRIORITY)
    queue.add("b")
    queue.add("a", priority=5)
    assert queue.get_with_priority_nowait() == ("a", 5)


def test_readd_with_lower_priority_never_demotes() -> None:
    """Re-adding a queued key with a lower priority keeps its priority."""
    queue = make_queue()
    queue.add("a", priority=5)
    queue.add("b", priority=1)
    queue.add("a", priority=LOW_PRIORITY)
    assert queue.get_with_priority_nowait() == ("a", 5)


def test_promotion_keeps_first_in_first_out_position() -> None:
    """A promoted key goes behind keys already waiting at the new priority that came first."""
    queue = make_queue()
    queue.add("a")
    queue.add("b", priority=LOW_PRIORITY)
    queue.add("b")
    assert drain(queue) == ["a", "b"]


def test_readd_while_processing_keeps_the_highest_priority() -> None:
    """A key re-added during processing comes back with the highest priority asked for."""
    queue = make_queue()
    queue.add("a")
    queue.get_nowait()
    queue.add("a", priority=LOW_PRIORITY)
    queue.add("a", priority=3)
    queue.add("b", priority=1)
    queue.done("a")
    assert queue.get_with_priority_nowait() == ("a", 3)


def test_requeued_key_goes_behind_keys_already_ready() -> None:
    """A key re-queued by done is handed out after keys of its priority added before."""
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add("a")
    queue.get_nowait()
    queue.add("a")
    clock.advance(1)
    queue.add("b")
    clock.advance(1)
    queue.done("a")
    assert drain(queue) == ["b", "a"]


def test_low_priority_is_minus_one_hundred() -> None:
    """LOW_PRIORITY is controller-runtime's handler.LowPriority."""
    assert LOW_PRIORITY == -100


def test_priority_must_be_an_int() -> None:
    """A priority that is not an int is refused with the value named."""
    queue = make_queue()
    with pytest.raises(TypeError, match="priority must be an int, got 'high'"):
        queue.add("a", priority="high")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="priority must be an int, got True"):
        queue.add("a", priority=True)


# -- starvation --------------------------------------------------------------------------


def _feed_high_priority_while_draining(queue: WorkQueue[str], clock: FakeClock) -> list[str]:
    """Hand out 20 keys, one per second, adding a fresh priority-0 key before each."""
    handed_out = []
    for i in range(20):
        queue.add(f"new{i}")
        clock.advance(1.0)
        key = queue.get_nowait()
        queue.done(key)
        handed_out.append(key)
    return handed_out


def test_without_starvation_timeout_low_priority_waits_behind_new_work() -> None:
    """With strict priorities, a steady stream of priority-0 keys starves LOW_PRIORITY."""
    clock = FakeClock()
    queue = make_queue(clock, starvation_timeout=None)
    queue.add("old", priority=LOW_PRIORITY)
    queue.add("new-backlog")
    assert "old" not in _feed_high_priority_while_draining(queue, clock)


def test_starving_key_gets_every_other_turn_after_the_timeout() -> None:
    """Once ready keys wait past starvation_timeout, they alternate with higher priorities."""
    clock = FakeClock()
    queue = make_queue(clock, starvation_timeout=5.0)
    for i in range(3):
        queue.add(f"old{i}", priority=LOW_PRIORITY)
    handed_out = _feed_high_priority_while_draining(queue, clock)
    assert handed_out[:9] == [
        "new0",
        "new1",
        "new2",
        "new3",
        "old0",  # the old keys have waited 5 s: they get every other turn
        "new4",
        "old1",
        "new5",
        "old2",
    ]


def test_starvation_guard_does_not_reorder_keys_that_are_not_overdue() -> None:
    """Before the timeout, priority order holds even with the guard on."""
    queue = make_queue(starvation_timeout=5.0)
    queue.add("low", priority=LOW_PRIORITY)
    queue.add("high")
    assert drain(queue) == ["high", "low"]


def test_starvation_timeout_must_be_non_negative() -> None:
    """A negative starvation_timeout is refused."""
    with pytest.raises(ValueError, match="starvation_timeout must be None or seconds >= 0"):
        WorkQueue[str](starvation_timeout=-1)


# -- delays ------------------------------------------------------------------------------


def test_add_after_is_not_ready_before_its_delay() -> None:
    """A delayed key is held until the delay has passed, then handed out."""
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add_after("a", 5.0)
    clock.advance(4.999)
    assert len(queue) == 0
    with pytest.raises(asyncio.QueueEmpty):
        queue.get_nowait()
    clock.advance(0.001)
    assert queue.get_nowait() == "a"


@pytest.mark.parametrize("delay", [0.0, -3.0])
def test_add_after_with_no_delay_adds_now(delay: float) -> None:
    """add_after with a delay <= 0 is an immediate add."""
    queue = make_queue()
    queue.add_after("a", delay)
    assert queue.get_nowait() == "a"


def test_add_after_accepts_a_timedelta() -> None:
    """A timedelta delay counts its total seconds."""
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add_after("a", timedelta(milliseconds=1500))
    clock.advance(1.4)
    assert len(queue) == 0
    clock.advance(0.1)
    assert len(queue) == 1


def test_repeated_add_after_keeps_the_earlier_time() -> None:
    """A later add_after does not push back an earlier one."""
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add_after("a", 2.0)
    queue.add_after("a", 10.0)
    clock.advance(2.0)
    assert queue.get_nowait() == "a"


def test_repeated_add_after_brings_the_time_forward() -> None:
    """An earlier add_after replaces a later one."""
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add_after("a", 10.0)
    queue.add_after("a", 2.0)
    clock.advance(2.0)
    assert queue.get_nowait() == "a"
    queue.done("a")
    clock.advance(10.0)
    assert len(queue) == 0


def test_add_makes_a_delayed_key_ready_now() -> None:
    """add on a delayed key hands it out without waiting."""
    queue = make_queue()
    queue.add_after("a", 10.0)
    queue.add("a")
    assert queue.get_nowait() == "a"


def test_add_after_does_not_delay_a_ready_key() -> None:
    """add_after on a ready key leaves it ready."""
    queue = make_queue()
    queue.add("a")
    queue.add_after("a", 10.0)
    assert queue.get_nowait() == "a"


def test_add_after_while_processing_waits_for_both_done_and_delay() -> None:
    """A key delayed during processing is ready once done and once its time has come."""
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add("a")
    queue.get_nowait()
    queue.add_after("a", 5.0)
    queue.done("a")
    assert len(queue) == 0
    clock.advance(5.0)
    assert queue.get_nowait() == "a"


def test_delayed_keys_are_ordered_by_due_time() -> None:
    """Among one priority, the key due first is handed out first."""
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add_after("late", 3.0)
    queue.add_after("early", 1.0)
    clock.advance(2.0)
    queue.add("now")
    clock.advance(2.0)
    assert drain(queue) == ["early", "now", "late"]


def test_higher_priority_delayed_key_goes_before_ready_lower_ones() -> None:
    """Once due, a delayed key of higher priority jumps ahead of lower-priority keys."""
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add("low", priority=LOW_PRIORITY)
    queue.add_after("high", 1.0, priority=5)
    clock.advance(1.0)
    assert drain(queue) == ["high", "low"]


def test_add_after_rejects_bad_delays() -> None:
    """NaN, infinite and non-numeric delays are refused."""
    queue = make_queue()
    with pytest.raises(ValueError, match="delay must be a finite number"):
        queue.add_after("a", math.nan)
    with pytest.raises(ValueError, match="delay must be a finite number"):
        queue.add_after("a", math.inf)
    with pytest.raises(TypeError, match="delay must be seconds"):
        queue.add_after("a", "5")  # type: ignore[arg-type]


async def test_waiting_getter_wakes_when_a_delayed_key_becomes_due() -> None:
    """A blocked get returns a delayed key when the clock reaches its time, via one timer."""
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add_after("a", 5.0)
    async with asyncio.timeout(1), asyncio.TaskGroup() as tg:
        task = tg.create_task(queue.get())
        await asyncio.sleep(0)  # let the getter block
        assert clock.pending_timers == 1
        assert clock.next_deadline == 5.0
        clock.advance(5.0)
    assert task.result() == "a"
    assert clock.pending_timers == 0


def test_one_timer_serves_many_delayed_keys() -> None:
    """Delayed keys share one clock timer, set at the earliest due time."""
    clock = FakeClock()
    queue = make_queue(clock)
    for i in range(10):
        queue.add_after(f"k{i}", 10.0 - i)
    assert clock.pending_timers == 1
    assert clock.next_deadline == 1.0
    clock.advance(1.0)
    assert len(queue) == 1
    assert clock.next_deadline == 2.0


# -- rate limiting -----------------------------------------------------------------------


def test_add_rate_limited_delays_by_exponential_backoff() -> None:
    """Each rate-limited add waits base * 2**failures."""
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(
        clock=clock, rate_limiter=ItemExponentialFailureRateLimiter(base=1.0, max=100.0)
    )
    for expected in (1.0, 2.0, 4.0):
        queue.add_rate_limited("a")
        clock.advance(expected - 0.5)
        assert len(queue) == 0
        clock.advance(0.5)
        queue.done(queue.get_nowait())
    assert queue.num_requeues("a") == 3


def test_forget_resets_the_backoff() -> None:
    """After forget, the next rate-limited add waits the base delay again."""
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(
        clock=clock, rate_limiter=ItemExponentialFailureRateLimiter(base=1.0, max=100.0)
    )
    queue.add_rate_limited("a")
    queue.add_rate_limited("a")
    queue.forget("a")
    assert queue.num_requeues("a") == 0
    clock.advance(1.0)
    queue.done(queue.get_nowait())
    queue.add_rate_limited("a")
    clock.advance(1.0)
    assert queue.get_nowait() == "a"


def test_default_rate_limiter_starts_at_five_milliseconds() -> None:
    """The default queue backs off 5 ms, then 10 ms."""
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add_rate_limited("a")
    clock.advance(0.004)
    assert len(queue) == 0
    clock.advance(0.001)
    queue.done(queue.get_nowait())
    queue.add_rate_limited("a")
    clock.advance(0.0099)
    assert len(queue) == 0
    clock.advance(0.0001)
    assert len(queue) == 1


# -- shutdown ----------------------------------------------------------------------------


async def test_shut_down_wakes_waiting_getters_with_shut_down_error() -> None:
    """Blocked getters raise ShutDownError when the queue shuts down."""
    queue = make_queue()
    getters = [asyncio.create_task(queue.get()) for _ in range(3)]
    await asyncio.sleep(0)  # let the getters block
    queue.shut_down()
    async with asyncio.timeout(1):
        results = await asyncio.gather(*getters, return_exceptions=True)
    assert all(isinstance(r, ShutDownError) for r in results)


def test_shut_down_drops_queued_keys() -> None:
    """After shut_down, get raises even though keys were queued, and the depth is 0."""
    queue = make_queue()
    queue.add("a")
    queue.add_after("b", 1.0)
    queue.shut_down()
    assert len(queue) == 0
    with pytest.raises(ShutDownError, match="is shut down"):
        queue.get_nowait()


def test_adds_after_shut_down_are_ignored() -> None:
    """add, add_after and add_rate_limited do nothing once shut down."""
    queue = make_queue()
    queue.shut_down()
    queue.add("a")
    queue.add_after("b", 1.0)
    queue.add_rate_limited("c")
    stats = queue.statistics()
    assert (stats.adds, stats.retries, stats.depth, stats.delayed) == (0, 0, 0, 0)
    assert queue.num_requeues("c") == 0


def test_shutting_down_reports_shutdown() -> None:
    """shutting_down turns true with shut_down."""
    queue = make_queue()
    assert not queue.shutting_down
    queue.shut_down()
    assert queue.shutting_down


def test_shut_down_cancels_the_delay_timer() -> None:
    """No clock timer outlives a shut-down queue."""
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add_after("a", 5.0)
    queue.shut_down()
    assert clock.pending_timers == 0


def test_shut_down_error_has_the_short_alias() -> None:
    """ShutDown is the same class as ShutDownError."""
    assert ShutDown is ShutDownError


def test_done_is_accepted_after_shut_down() -> None:
    """Workers may still mark their keys done after shut_down."""
    queue = make_queue()
    queue.add("a")
    queue.get_nowait()
    queue.add("a")
    queue.shut_down()
    queue.done("a")
    assert queue.statistics().processing == 0


async def test_shut_down_with_drain_waits_for_keys_being_processed() -> None:
    """shut_down_with_drain returns only after every handed-out key is done."""
    queue = make_queue()
    queue.add("a")
    queue.add("b")
    queue.get_nowait()
    queue.get_nowait()
    drainer = asyncio.create_task(queue.shut_down_with_drain())
    await asyncio.sleep(0)  # let the drain start waiting
    assert queue.shutting_down
    queue.done("a")
    await asyncio.sleep(0)
    assert not drainer.done()
    queue.done("b")
    async with asyncio.timeout(1):
        await drainer


async def test_shut_down_with_drain_returns_at_once_when_idle() -> None:
    """With nothing being processed, a drain does not wait."""
    queue = make_queue()
    queue.add("a")
    async with asyncio.timeout(1):
        await queue.shut_down_with_drain()
    assert queue.shutting_down


async def test_shut_down_ends_a_pending_drain() -> None:
    """shut_down stops a drain from waiting for unfinished keys."""
    queue = make_queue()
    queue.add("a")
    queue.get_nowait()
    drainer = asyncio.create_task(queue.shut_down_with_drain())
    await asyncio.sleep(0)
    queue.shut_down()
    async with asyncio.timeout(1):
        await drainer
    assert queue.is_processing("a")


async def test_getters_raise_during_a_drain() -> None:
    """While draining, get raises ShutDownError: no new work is handed out."""
    queue = make_queue()
    queue.add("a")
    queue.add("b")
    queue.get_nowait()
    drainer = asyncio.create_task(queue.shut_down_with_drain())
    await asyncio.sleep(0)
    with pytest.raises(ShutDownError):
        await queue.get()
    queue.done("a")
    async with asyncio.timeout(1):
        await drainer


# -- statistics --------------------------------------------------------------------------


def test_statistics_count_adds_and_retries() -> None:
    """adds counts keys newly queued, retries counts delayed adds."""
    queue = make_queue()
    queue.add("a")
    queue.add("a")
    queue.add_after("b", 1.0)
    queue.add_rate_limited("c")
    stats = queue.statistics()
    assert stats.adds == 3
    assert stats.retries == 2


def test_statistics_split_the_queue_by_state() -> None:
    """depth, delayed, blocked and processing each count their keys."""
    queue = make_queue()
    queue.add("ready", priority=LOW_PRIORITY)
    queue.add("ready2")
    queue.add("busy", priority=10)
    queue.add_after("later", 5.0)
    assert queue.get_nowait() == "busy"
    queue.add("busy")
    stats = queue.statistics()
    assert (stats.depth, stats.delayed, stats.blocked, stats.processing) == (2, 1, 1, 1)
    assert dict(stats.depth_by_priority) == {LOW_PRIORITY: 1, 0: 1}
    assert len(queue) == 2


def test_statistics_measure_work_in_progress() -> None:
    """Longest-running and unfinished seconds come from the clock."""
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add("a")
    queue.add("b")
    queue.get_nowait()
    clock.advance(3.0)
    queue.get_nowait()
    clock.advance(1.0)
    stats = queue.statistics()
    assert stats.longest_running_processor_seconds == 4.0
    assert stats.unfinished_work_seconds == 5.0


def test_statistics_are_immutable() -> None:
    """A statistics snapshot cannot be modified."""
    stats = make_queue().statistics()
    with pytest.raises(AttributeError):
        stats.depth = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        stats.depth_by_priority[0] = 1  # type: ignore[index]


def test_repr_names_the_queue_and_its_counts() -> None:
    """repr shows the name, depth, delayed and processing counts."""
    queue: WorkQueue[str] = WorkQueue(name="pods", clock=FakeClock())
    queue.add("a")
    assert repr(queue) == "<WorkQueue 'pods' depth=1 delayed=0 processing=0>"
