"""The workqueue: dirty and processing sets, shutdown (ready keys: _priority; delays: _delaying)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass, field
from datetime import timedelta
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, Generic, TypeVar

from pyctrl.clock import RealClock
from pyctrl.errors import PyctrlError
from pyctrl.workqueue._delaying import DelayedKeys
from pyctrl.workqueue._metrics import NoopQueueMetrics
from pyctrl.workqueue._priority import BLOCKED, DELAYED, GONE, READY, Entry, ReadyKeys
from pyctrl.workqueue._ratelimit import default_controller_rate_limiter
from pyctrl.workqueue._triggers import EMPTY, Log, Trigger, Triggers, event_trigger

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from pyctrl.clock import Clock, TimerHandle
    from pyctrl.workqueue._metrics import QueueMetrics
    from pyctrl.workqueue._ratelimit import RateLimiter

__all__ = [
    "DEFAULT_STARVATION_TIMEOUT",
    "LOW_PRIORITY",
    "QueueStatistics",
    "ShutDown",
    "ShutDownError",
    "WorkQueue",
]

K = TypeVar("K", bound=Hashable)

LOW_PRIORITY: Final = -100
"""Priority of initial-list and resync adds, so that fresh events go first."""

DEFAULT_STARVATION_TIMEOUT: Final = 300.0
"""Seconds a ready key may wait before it gets every other turn regardless of priority."""

_PROGRESS_PERIOD: Final = 0.5  # client-go's unfinished-work update period


class ShutDownError(PyctrlError):
    """The queue was shut down: `WorkQueue.get` has nothing more to hand out."""


ShutDown = ShutDownError
"""Alias of `ShutDownError`."""


@dataclass(frozen=True, slots=True)
class QueueStatistics:
    """A snapshot of a `WorkQueue`, from `WorkQueue.statistics`.

    Attributes:
        depth: Keys ready to hand out now (``len(queue)``).
        delayed: Keys waiting for their `WorkQueue.add_after` time.
        blocked: Keys added again while being processed, queued when `WorkQueue.done`
            is called for them.
        processing: Keys handed out and not yet done.
        adds: Total adds that queued a key (re-adds that collapsed do not count).
        retries: Total delayed adds (`WorkQueue.add_after`, `WorkQueue.add_rate_limited`).
        longest_running_processor_seconds: Age of the oldest key being processed.
        unfinished_work_seconds: Summed age of all keys being processed.
        depth_by_priority: ``depth`` split by priority.
    """

    depth: int
    delayed: int
    blocked: int
    processing: int
    adds: int
    retries: int
    longest_running_processor_seconds: float
    unfinished_work_seconds: float
    depth_by_priority: Mapping[int, int] = field(default_factory=lambda: MappingProxyType({}))


def _check_priority(priority: int) -> int:
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise TypeError(f"priority must be an int, got {priority!r}")
    return priority


def check_delay(delay: float | timedelta) -> float:
    """``delay`` in seconds, or TypeError/ValueError naming what is wrong with it."""
    if isinstance(delay, timedelta):
        return delay.total_seconds()
    if not isinstance(delay, int | float) or isinstance(delay, bool):
        raise TypeError(f"delay must be seconds (a number or a timedelta), got {delay!r}")
    if not math.isfinite(delay):
        raise ValueError(f"delay must be a finite number of seconds, got {delay!r}")
    return float(delay)


class WorkQueue(Generic[K]):
    """A deduplicating, delaying, rate-limiting priority queue of keys for controllers.

    See the `pyctrl.workqueue` module documentation for the rules. All methods must be
    called from the event loop's thread.

    Args:
        name: A name for logs and ``repr``.
        clock: The time source; defaults to `RealClock`. Tests pass a `FakeClock`.
        rate_limiter: Used by `add_rate_limited`, `forget` and `num_requeues`; defaults
            to `default_controller_rate_limiter` (per-key backoff, 5 ms to 1000 s).
        metrics: Receives the queue's measurements; defaults to recording nothing.
        starvation_timeout: Once the oldest ready key has waited this many seconds,
            every other hand-out takes the oldest ready key whatever its priority, so low
            priorities cannot starve; ``None`` for strict priority order (as
            controller-runtime's queue).
        record_triggers: Keep the `Trigger` records given to the adds, per key, for
            `triggers`; when False they are ignored (and event sources build none).
        fairness_key: Makes the queue fair: a function of a key giving its fairness
            group (a tenant: `by_namespace`, `by_cluster`, or any hashable). Within a
            priority, groups with ready keys are served in turn, so one group's
            thousands of keys cannot starve another's one. ``None`` (the default): first
            come, first served within a priority.
    """

    def __init__(
        self,
        *,
        name: str = "",
        clock: Clock | None = None,
        rate_limiter: RateLimiter[K] | None = None,
        metrics: QueueMetrics | None = None,
        starvation_timeout: float | None = DEFAULT_STARVATION_TIMEOUT,
        record_triggers: bool = False,
        fairness_key: Callable[[K], Hashable] | None = None,
    ) -> None:
        if fairness_key is not None and not callable(fairness_key):
            raise TypeError(
                f"fairness_key must be a function of a key (or None), got {fairness_key!r}"
            )
        if starvation_timeout is not None and (
            not isinstance(starvation_timeout, int | float)
            or isinstance(starvation_timeout, bool)
            or math.isnan(starvation_timeout)
            or starvation_timeout < 0
        ):
            raise ValueError(
                f"starvation_timeout must be None or seconds >= 0, got {starvation_timeout!r}"
            )
        self.name = name
        self._clock: Clock = clock if clock is not None else RealClock()
        self._rate_limiter: RateLimiter[K] = (
            rate_limiter if rate_limiter is not None else default_controller_rate_limiter()
        )
        self._metrics: QueueMetrics = metrics if metrics is not None else NoopQueueMetrics()
        self._reports_progress = not isinstance(self._metrics, NoopQueueMetrics)

        self._entries: dict[K, Entry[K]] = {}
        self._processing: dict[K, float] = {}
        self._fairness_key = fairness_key
        self._ready: ReadyKeys[K] = ReadyKeys(starvation_timeout, fair=fairness_key is not None)
        self._ready_count = 0
        self._seq = itertools.count()
        self._delayed: DelayedKeys[K] = DelayedKeys(
            self._clock, self._seq, self._make_ready, lambda: self._shutting_down
        )

        self._getters: deque[asyncio.Future[None]] = deque()
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._progress_timer: TimerHandle | None = None
        self._shutting_down = False

        self._adds = 0
        self._retries = 0
        self.records_triggers = record_triggers
        """Whether adds' triggers are kept (sources check it before building any)."""
        self._taken_triggers: dict[K, Log] = {}

    # -- adding -----------------------------------------------------------------------

    def add(self, key: K, *, priority: int = 0, trigger: Trigger | None = None) -> None:
        """Queue ``key`` now, unless it is already queued.

        A queued key stays queued once: adding it again only raises its priority (never
        lowers it) and brings a delayed key forward to now. A key being processed is
        queued again when `done` is called for it. Ignored once the queue is shut down.

        Args:
            key: Any hashable value; controllers use `pyctrl.reconcile.Request`.
            priority: Higher goes first; see `LOW_PRIORITY`.
            trigger: Why the key is queued; kept for `triggers` if the queue records them.
                None: the trigger of the event being handled, when an event handler adds
                (`pyctrl.source.dispatch`), else none.
        """
        if priority.__class__ is not int:
            _check_priority(priority)
        self._add(key, 0.0, priority, trigger)

    def add_after(
        self,
        key: K,
        delay: float | timedelta,
        *,
        priority: int = 0,
        trigger: Trigger | None = None,
    ) -> None:
        """Queue ``key`` once ``delay`` seconds have passed (at once if ``delay <= 0``).

        If ``key`` is already queued, the earlier of its due time and ``now + delay``
        wins, and the higher priority. Counts as a retry. The ``trigger`` (as for `add`)
        names what asked for it: a requeue, a timer (`TriggerKind.TIMER`)...

        Raises:
            TypeError: ``delay`` is neither a number nor a `datetime.timedelta`.
            ValueError: ``delay`` is not finite.
        """
        seconds = check_delay(delay)
        priority = _check_priority(priority)
        if self._shutting_down:
            return
        self._count_retry()
        self._add(key, seconds, priority, trigger)

    def add_rate_limited(
        self, key: K, *, priority: int = 0, trigger: Trigger | None = None
    ) -> None:
        """Queue ``key`` after the delay the rate limiter gives it (one more failure).

        Counts as a retry; ``trigger`` as for `add`.
        """
        priority = _check_priority(priority)
        if self._shutting_down:
            return
        delay = self._rate_limiter.when(key)
        self._count_retry()
        self._add(key, delay, priority, trigger)

    def forget(self, key: K) -> None:
        """Reset ``key``'s rate-limiter backoff (after it was processed successfully)."""
        self._rate_limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        """How many rate-limited retries of ``key`` the rate limiter is counting."""
        return self._rate_limiter.num_requeues(key)

    def _count_retry(self) -> None:
        self._retries += 1
        self._metrics.retried()

    def _add(self, key: K, delay: float, priority: int, trigger: Trigger | None = None) -> None:  # noqa: PLR0912 - client-go's add: dirty, processing, delay
        if self._shutting_down:
            return
        now = self._clock.now()
        due = now + delay if delay > 0 else now
        try:
            entry = self._entries.get(key)
        except TypeError:
            raise TypeError(
                f"workqueue keys must be hashable, got {type(key).__name__}: {key!r}"
            ) from None
        if trigger is None and self.records_triggers:
            trigger = event_trigger.get()
        if entry is None:
            entry = self._add_new(key, due, priority, now)
            if trigger is not None and self.records_triggers:
                entry.triggers = Log(trigger)
            return
        if trigger is not None and self.records_triggers:
            if entry.triggers is None:
                entry.triggers = Log(trigger)
            else:
                entry.triggers.record(trigger)
        if entry.state == READY:
            if priority > entry.priority:
                self._ready.reprioritize(entry, priority)
        elif entry.state == DELAYED:
            entry.priority = max(entry.priority, priority)
            if due < entry.due:
                entry.due = due
                if due <= now:
                    self._delayed.count -= 1
                    self._make_ready(entry)
                else:
                    self._delayed.push(entry)
        else:
            entry.priority = max(entry.priority, priority)
            entry.due = min(entry.due, due)

    def _add_new(self, key: K, due: float, priority: int, now: float) -> Entry[K]:
        entry = Entry(key, priority, due, next(self._seq))
        if self._fairness_key is not None:
            entry.group = self._group_of(key)
        self._entries[key] = entry
        self._adds += 1
        self._metrics.added()
        if key in self._processing:
            entry.state = BLOCKED
        elif due <= now:
            self._make_ready(entry)
        else:
            self._delayed.count += 1
            self._delayed.push(entry)
        return entry

    def _group_of(self, key: K) -> Hashable:
        assert self._fairness_key is not None
        group = self._fairness_key(key)
        try:
            hash(group)
        except TypeError:
            raise TypeError(
                f"workqueue {self.name!r}: fairness_key({key!r}) returned "
                f"{type(group).__name__} {group!r}, which is not hashable"
            ) from None
        return group

    @property
    def fair(self) -> bool:
        """Whether the queue serves fairness groups in turn (it has a ``fairness_key``)."""
        return self._fairness_key is not None

    def _make_ready(self, entry: Entry[K]) -> None:
        entry.state = READY
        self._ready.push(entry)
        self._ready_count += 1
        self._metrics.depth(self._ready_count)
        if self._getters:
            self._wake_getter()

    # -- handing out ------------------------------------------------------------------

    async def get(self) -> K:
        """Wait for a key to process and hand it out; call `done` with it afterwards.

        Until `done`, the key is not handed out again, even if it is added again.

        Raises:
            ShutDownError: The queue was shut down: the worker should stop.
        """
        entry = self._next_ready()
        if entry is None:
            entry = await self._wait_for_entry()
        return entry.key

    async def get_with_priority(self) -> tuple[K, int]:
        """Like `get`, and also return the priority the key was queued with."""
        entry = self._next_ready()
        if entry is None:
            entry = await self._wait_for_entry()
        return entry.key, entry.priority

    async def _wait_for_entry(self) -> Entry[K]:
        while True:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._getters.append(waiter)
            try:
                await waiter
            except BaseException:
                if waiter.done() and not waiter.cancelled():
                    # Woken for a key this getter will not take: pass the wake-up on.
                    self._wake_getter()
                else:
                    waiter.cancel()
                    with contextlib.suppress(ValueError):
                        self._getters.remove(waiter)
                raise
            entry = self._next_ready()
            if entry is not None:
                return entry

    def get_nowait(self) -> K:
        """Hand out a ready key without waiting.

        Raises:
            asyncio.QueueEmpty: No key is ready.
            ShutDownError: The queue was shut down.
        """
        key, _ = self.get_with_priority_nowait()
        return key

    def get_with_priority_nowait(self) -> tuple[K, int]:
        """Like `get_nowait`, and also return the key's priority."""
        entry = self._next_ready()
        if entry is None:
            raise asyncio.QueueEmpty
        return entry.key, entry.priority

    def _next_ready(self) -> Entry[K] | None:
        if self._shutting_down:
            raise ShutDownError(f"workqueue {self.name!r} is shut down")
        if self._delayed.heap:
            self._delayed.promote_due()
        if not self._ready_count:
            return None
        now = self._clock.now()
        entry = self._ready.pop(now)
        self._take(entry, now)
        return entry

    def _take(self, entry: Entry[K], now: float) -> None:
        entry.state = GONE
        key = entry.key
        del self._entries[key]
        self._ready_count -= 1
        self._processing[key] = now
        if entry.triggers is not None:
            self._taken_triggers[key] = entry.triggers
        self._metrics.depth(self._ready_count)
        self._metrics.queued_for(max(0.0, now - entry.due))
        if self._reports_progress and self._progress_timer is None:
            self._progress_timer = self._clock.call_at(now + _PROGRESS_PERIOD, self._on_progress)

    def _wake_getter(self) -> None:
        getters = self._getters
        while getters:
            getter = getters.popleft()
            if not getter.done():
                getter.set_result(None)
                return

    def done(self, key: K) -> None:
        """Mark ``key`` as processed; if it was added meanwhile, queue it again.

        Raises:
            ValueError: ``key`` is not being processed (never handed out, or already
                done).
        """
        try:
            started = self._processing.pop(key)
        except KeyError:
            raise ValueError(
                f"workqueue {self.name!r}: done({key!r}) for a key that is not being "
                "processed (not handed out by get, or done already)"
            ) from None
        now = self._clock.now()
        self._metrics.worked_for(max(0.0, now - started))
        if self._taken_triggers:
            self._taken_triggers.pop(key, None)
        entry = self._entries.get(key)
        if entry is not None:
            # Re-queued keys go behind keys that were ready before this done().
            entry.due = max(entry.due, now)
            if entry.due <= now:
                self._make_ready(entry)
            else:
                self._delayed.count += 1
                self._delayed.push(entry)
        if not self._processing and (self._progress_timer is not None or self._drain_waiters):
            self._idle()

    def _idle(self) -> None:
        if self._progress_timer is not None:
            self._progress_timer.cancel()
            self._progress_timer = None
            self._metrics.in_progress(0.0, 0.0)
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._drain_waiters.clear()

    def _on_progress(self) -> None:
        self._progress_timer = None
        if not self._processing:
            return
        now = self._clock.now()
        unfinished, longest = self._work_in_progress(now)
        self._metrics.in_progress(unfinished, longest)
        self._progress_timer = self._clock.call_at(now + _PROGRESS_PERIOD, self._on_progress)

    def _work_in_progress(self, now: float) -> tuple[float, float]:
        ages = [max(0.0, now - started) for started in self._processing.values()]
        return sum(ages), max(ages, default=0.0)

    # -- shutdown ---------------------------------------------------------------------

    def shut_down(self) -> None:
        """Stop at once: drop queued keys, ignore new adds, make every `get` raise.

        Keys being processed may still be marked `done`. Also ends a pending
        `shut_down_with_drain` without waiting for them.
        """
        self._stop()
        if self._progress_timer is not None:
            self._progress_timer.cancel()
            self._progress_timer = None
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._drain_waiters.clear()

    async def shut_down_with_drain(self) -> None:
        """Shut down as `shut_down` does, then wait until every key handed out is done.

        Workers must call `done` for their keys, or this waits forever: bound it with a
        timeout, and call `shut_down` to stop waiting.
        """
        self._stop()
        if not self._processing:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._drain_waiters.append(waiter)
        try:
            await waiter
        finally:
            waiter.cancel()

    def _stop(self) -> None:
        if self._shutting_down:
            return
        self._shutting_down = True
        self._delayed.cancel_timer()
        for entry in self._entries.values():
            entry.state = GONE
        self._entries.clear()
        self._ready.clear()
        self._delayed.heap.clear()
        had_ready = self._ready_count
        self._ready_count = 0
        self._delayed.count = 0
        if had_ready:
            self._metrics.depth(0)
        getters, self._getters = self._getters, deque()
        for getter in getters:
            if not getter.done():
                getter.set_result(None)

    @property
    def shutting_down(self) -> bool:
        """Whether `shut_down` or `shut_down_with_drain` was called."""
        return self._shutting_down

    # -- inspection -------------------------------------------------------------------

    def __len__(self) -> int:
        """The depth: keys ready to hand out now."""
        self._delayed.promote_due()
        return self._ready_count

    def triggers(self, key: K) -> Triggers:
        """The triggers that collapsed into the hand-out of ``key`` now being processed.

        Recorded only with ``record_triggers=True``; kept until `done` (adds made while
        the key is processed belong to its next hand-out). Empty for a key handed out
        without triggers, or not being processed.
        """
        log = self._taken_triggers.get(key)
        return EMPTY if log is None else Triggers(log)

    def is_processing(self, key: K) -> bool:
        """Whether ``key`` was handed out and is not done yet."""
        return key in self._processing

    def statistics(self) -> QueueStatistics:
        """A snapshot of the queue's depth, counters and work in progress."""
        self._delayed.promote_due()
        unfinished, longest = self._work_in_progress(self._clock.now())
        return QueueStatistics(
            depth=self._ready_count,
            delayed=self._delayed.count,
            blocked=len(self._entries) - self._ready_count - self._delayed.count,
            processing=len(self._processing),
            adds=self._adds,
            retries=self._retries,
            longest_running_processor_seconds=longest,
            unfinished_work_seconds=unfinished,
            depth_by_priority=MappingProxyType(
                {priority: level.count for priority, level in self._ready.levels.items()}
            ),
        )

    def __repr__(self) -> str:
        state = " shut down" if self._shutting_down else ""
        return (
            f"<WorkQueue {self.name!r} depth={self._ready_count} "
            f"delayed={self._delayed.count} processing={len(self._processing)}{state}>"
        )
