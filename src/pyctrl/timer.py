"""Timers: reconcile each object of a type every so often, while it exists.

A `Timer` is a `pyctrl.source.Source` (kopf's ``@kopf.timer``, the level-triggered way):
it watches a type through the shared cache and, for each object, adds the object's key
to the controller's queue every ``interval`` seconds until the object is gone. A tick is
an ordinary queue add, like a ``requeue_after``: it collapses with pending events, never
runs beside a reconcile of the same key (a tick during one queues one more after it),
goes in at `pyctrl.workqueue.LOW_PRIORITY` so fresh events go first, and is recorded as
the trigger kind ``"timer"`` (`TRIGGER`). The reconciler is not told it was a tick: it
reconciles, as for any other reason.

Declare one on the builder::

    controller_managed_by(manager).for_(MySrv).every(30, idle=60).complete(reconciler)

or build it, add it with ``watches_raw_source(timer)``, and set intervals per object
from the reconciler with `Timer.set_interval`.

Scheduling:

- the first tick comes ``initial_delay`` seconds after the object is first seen (or the
  operator started), by default one interval: the object's appearance reconciles it
  anyway;
- then one every ``interval`` seconds, measured tick to tick (kopf's ``sharp=True``);
- with ``idle``, only once the object has gone ``idle`` seconds without a change (a new
  resourceVersion, which includes the reconciler's own status writes); each change
  postpones the next tick to ``idle`` seconds after it. With ``idle`` and no interval a
  timer ticks once per quiet period;
- every delay is stretched by a random factor in ``[1, 1 + jitter)`` (default 0.1), so
  that the objects of one operator do not tick in lockstep;
- ``when`` (a function of the object) limits ticking to the objects it accepts, checked
  on every change.

Ticks stop when the object is deleted, when ``when`` stops accepting it, and when the
controller stops. Time is read from a `pyctrl.clock.Clock`, so tests drive timers with a
`pyctrl.clock.FakeClock`.
"""

from __future__ import annotations

import asyncio
import math
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from pyctrl.clock import RealClock
from pyctrl.reconcile import Request
from pyctrl.workqueue import LOW_PRIORITY, Trigger

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyctrl.cache import Cache, CachedObject, HandlerRegistration
    from pyctrl.cache import Informer as CacheInformer
    from pyctrl.clock import Clock, TimerHandle
    from pyctrl.handler import Queue

__all__ = ["TRIGGER", "Timer"]

TRIGGER: Final = "timer"
"""The trigger kind a timer's adds are recorded under in the queue's provenance."""


def _check_seconds(name: str, value: float | None, *, positive: bool = False) -> float | None:
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number of seconds, got {value!r}")
    if math.isnan(value) or value < 0 or (positive and value == 0):
        raise ValueError(f"{name} must be {'> 0' if positive else '>= 0'} seconds, got {value!r}")
    return float(value)


def _enqueue(queue: Queue, request: Request, kind: str) -> None:
    """Add ``request`` as a timer tick: low priority, trigger kind ``"timer"``.

    A queue that records provenance (the controller's, unless ``record_triggers=False``)
    gets the trigger with the tick; ``kind`` names the object in it.
    """
    if not getattr(queue, "records_triggers", False):
        queue.add(request, priority=LOW_PRIORITY)
        return
    described = f"{kind} {request}"
    trigger = Trigger(TRIGGER, "timer", described)
    queue.add(request, priority=LOW_PRIORITY, trigger=trigger)


@dataclass(slots=True)
class _Slot:
    """One tracked object: when it last changed and its pending tick."""

    resource_version: str
    changed_at: float
    handle: TimerHandle | None = None
    due: float | None = None


class Timer:
    """Adds each object's key to the queue every ``interval`` seconds while it exists.

    Args:
        cache: The shared informer cache.
        type_: The type whose objects tick (the controller's ``for_`` type).
        interval: Seconds between ticks; None for no default (per-object intervals set
            with `set_interval`, or ``idle`` alone).
        initial_delay: Seconds from an object's first sighting to its first tick
            (default: one interval).
        idle: Tick only once the object has gone this many seconds without a change.
        jitter: Each delay is multiplied by a random factor in ``[1, 1 + jitter)``.
        when: Tick only objects for which this returns True (checked on every change).
        clock: Time source (default `pyctrl.clock.RealClock`; tests pass a FakeClock).

    A timer with neither ``interval`` nor ``idle`` ticks only the objects given an
    interval with `set_interval`.

    Raises:
        TypeError: a time that is not a number.
        ValueError: a negative or NaN time, or a zero ``interval`` or ``idle``.
    """

    def __init__(
        self,
        cache: Cache,
        type_: type[Any],
        interval: float | None = None,
        *,
        initial_delay: float | None = None,
        idle: float | None = None,
        jitter: float = 0.1,
        when: Callable[[Any], bool] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.interval = _check_seconds("interval", interval, positive=True)
        self.initial_delay = _check_seconds("initial_delay", initial_delay)
        self.idle = _check_seconds("idle", idle, positive=True)
        checked_jitter = _check_seconds("jitter", jitter)
        assert checked_jitter is not None
        self.jitter = checked_jitter
        self.when = when
        self.type = type_
        self._clock: Clock = clock or RealClock()
        self._informer: CacheInformer[Any] = cache.get_informer(type_)
        self._registration: HandlerRegistration | None = None
        self._registered = asyncio.Event()
        self._queue: Queue | None = None
        self._slots: dict[Request, _Slot] = {}
        self._intervals: dict[Request, float] = {}
        self._random = random.Random()

    # -- the Source protocol ----------------------------------------------------------

    async def start(self, queue: Queue) -> None:
        """Tick until cancelled; on cancel every pending tick is dropped."""
        if self._queue is not None:
            raise RuntimeError("a Timer feeds one controller: it was already started")
        self._queue = queue
        self._registration = self._informer.add_cached_event_handler(self)
        self._registered.set()
        try:
            await asyncio.Event().wait()
        finally:
            self._registration.remove()
            for slot in self._slots.values():
                if slot.handle is not None:
                    slot.handle.cancel()
            self._slots.clear()

    async def wait_for_sync(self) -> None:
        """Return once every existing object has been seen (and scheduled)."""
        await self._registered.wait()
        assert self._registration is not None
        await self._registration.wait_synced()

    # -- per object -------------------------------------------------------------------

    def set_interval(self, request: Request, interval: float | None) -> None:
        """Tick ``request``'s object every ``interval`` seconds (None: the default again).

        Meant to be called from the reconciler. The next tick is rescheduled from now.
        The setting lasts until the object is deleted.
        """
        checked = _check_seconds("interval", interval, positive=True)
        if checked is None:
            self._intervals.pop(request, None)
        else:
            self._intervals[request] = checked
        slot = self._slots.get(request)
        if slot is not None:
            self._schedule(request, slot, self._next_delay(request))

    def next_tick(self, request: Request) -> float | None:
        """The clock time of ``request``'s next tick, or None if none is scheduled."""
        slot = self._slots.get(request)
        return None if slot is None else slot.due

    # -- informer notifications -------------------------------------------------------

    # A `pyctrl.cache.CachedEventHandler`: only ``when`` needs the decoded object.

    def add(self, obj: CachedObject[Any], is_in_initial_list: bool) -> None:
        """An object appeared: start ticking it."""
        self._seen(obj)

    def update(self, old: CachedObject[Any], new: CachedObject[Any]) -> None:
        """An object changed: start, postpone (``idle``) or stop its ticks."""
        self._seen(new)

    def delete(self, obj: CachedObject[Any], delete_state_unknown: bool) -> None:
        """An object is gone: its ticks stop."""
        request = Request(obj.namespace, obj.name)
        self._drop(request)
        self._intervals.pop(request, None)

    # -- scheduling -------------------------------------------------------------------

    def _seen(self, obj: CachedObject[Any]) -> None:
        request = Request(obj.namespace, obj.name)
        if self.when is not None and not self.when(obj.object):
            self._drop(request)
            return
        now = self._clock.now()
        version = obj.resource_version
        slot = self._slots.get(request)
        if slot is None:
            slot = self._slots[request] = _Slot(version, now)
            first = self.initial_delay
            if first is None:
                first = self._interval(request)
            if self.idle is not None:
                first = max(first or 0.0, self.idle)
            self._schedule(request, slot, first)
        elif slot.resource_version != version:
            slot.resource_version, slot.changed_at = version, now
            if self.idle is not None:
                self._schedule(request, slot, self.idle)

    def _interval(self, request: Request) -> float | None:
        return self._intervals.get(request, self.interval)

    def _next_delay(self, request: Request) -> float | None:
        """The delay after a tick: the interval, but never inside the idle period."""
        interval = self._interval(request)
        slot = self._slots[request]
        if self.idle is not None:
            quiet_until = slot.changed_at + self.idle - self._clock.now()
            if interval is None:
                return None if quiet_until <= 0 else quiet_until
            return max(interval, quiet_until)
        return interval

    def _schedule(self, request: Request, slot: _Slot, delay: float | None) -> None:
        if slot.handle is not None:
            slot.handle.cancel()
            slot.handle, slot.due = None, None
        if delay is None:
            return
        delay *= 1.0 + self.jitter * self._random.random()
        slot.due = self._clock.now() + delay
        slot.handle = self._clock.call_at(slot.due, lambda: self._tick(request, slot))

    def _tick(self, request: Request, slot: _Slot) -> None:
        if self._slots.get(request) is not slot or self._queue is None:
            return  # dropped after the timer fired but before this callback ran
        slot.handle, slot.due = None, None
        _enqueue(self._queue, request, self.type.__name__)
        self._schedule(request, slot, self._next_delay(request))

    def _drop(self, request: Request) -> None:
        slot = self._slots.pop(request, None)
        if slot is not None and slot.handle is not None:
            slot.handle.cancel()

    def __repr__(self) -> str:
        return (
            f"Timer({getattr(self.type, '__name__', self.type)}, interval={self.interval}, "
            f"idle={self.idle}, tracked={len(self._slots)})"
        )
