"""An informer's event handlers: client-go's ``sharedProcessor`` and ``processorListener``.

`Processor` holds the handlers registered on one `pyctrl.cache._informer.SharedInformer`
and fans each store notification out to them. Each handler has a `Listener`: its own
queue and its own task, so a slow handler delays only itself, and a failing one is logged
and counted without stopping anything.

A `ResourceEventHandler` is given typed objects, each decoded for it; a
`CachedEventHandler` (a controller's source) is given `CachedObject` s, decoded only if
it asks.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from pyctrl.cache._cached import CachedObject
from pyctrl.log import get_logger

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

    from pyctrl.cache._store import Entry, Key

__all__ = [
    "ADD",
    "DELETE",
    "SYNCED",
    "UPDATE",
    "CachedEventHandler",
    "Listener",
    "Note",
    "Processor",
    "ResourceEventHandler",
    "ResourceEventHandlerFuncs",
    "handler_name",
]

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)

_log = get_logger("pyctrl.cache")

ADD, UPDATE, DELETE, SYNCED = 0, 1, 2, 3
_SLOW_HANDLER = 1.0
_YIELD_EVERY = 64

Note = tuple[int, "Key | None", "Entry | None", "Entry | None", bool]
"""A notification: its kind (ADD, UPDATE, DELETE, SYNCED), key, old and new entries, a flag."""


class ResourceEventHandler(Protocol[T_contra]):
    """Receives an informer's notifications (an extension point).

    Methods may be plain functions or coroutines. They are called in order, one at a
    time, for each handler; objects are fresh copies the handler may keep or modify.
    `ResourceEventHandlerFuncs` adapts plain functions.
    """

    def add(self, obj: T_contra, is_in_initial_list: bool) -> Awaitable[None] | None:
        """An object appeared; ``is_in_initial_list`` when it was there before the handler."""
        ...

    def update(self, old: T_contra, new: T_contra) -> Awaitable[None] | None:
        """An object changed. A periodic resync calls it with equal resourceVersions."""
        ...

    def delete(self, obj: T_contra, delete_state_unknown: bool) -> Awaitable[None] | None:
        """An object is gone.

        ``delete_state_unknown`` is True when the delete itself was missed and found by a
        re-list: ``obj`` is then the last state the cache knew.
        """
        ...


@dataclass(frozen=True)
class ResourceEventHandlerFuncs(Generic[T]):
    """A `ResourceEventHandler` made of optional functions (client-go's ``...Funcs``)."""

    add_func: Callable[[T, bool], Awaitable[None] | None] | None = None
    update_func: Callable[[T, T], Awaitable[None] | None] | None = None
    delete_func: Callable[[T, bool], Awaitable[None] | None] | None = None

    def add(self, obj: T, is_in_initial_list: bool) -> Awaitable[None] | None:
        """Call ``add_func`` if set."""
        return self.add_func(obj, is_in_initial_list) if self.add_func else None

    def update(self, old: T, new: T) -> Awaitable[None] | None:
        """Call ``update_func`` if set."""
        return self.update_func(old, new) if self.update_func else None

    def delete(self, obj: T, delete_state_unknown: bool) -> Awaitable[None] | None:
        """Call ``delete_func`` if set."""
        return self.delete_func(obj, delete_state_unknown) if self.delete_func else None


class CachedEventHandler(Protocol[T_contra]):
    """Receives an informer's notifications as `CachedObject` s (an extension point).

    As `ResourceEventHandler`, but nothing is decoded for it: each `CachedObject` builds
    its typed object when first asked for (``.object``), so a handler that only reads
    metadata never pays for it. What a controller's `pyctrl.source.Kind` registers
    (`pyctrl.cache.Informer.add_cached_event_handler`).
    """

    def add(self, obj: CachedObject[T_contra], is_in_initial_list: bool) -> Awaitable[None] | None:
        """An object appeared; ``is_in_initial_list`` when it was there before the handler."""
        ...

    def update(
        self, old: CachedObject[T_contra], new: CachedObject[T_contra]
    ) -> Awaitable[None] | None:
        """An object changed. A periodic resync calls it with equal resourceVersions."""
        ...

    def delete(
        self, obj: CachedObject[T_contra], delete_state_unknown: bool
    ) -> Awaitable[None] | None:
        """An object is gone (``delete_state_unknown``: the delete itself was missed)."""
        ...


class Listener:
    """Delivers notifications to one handler, in order, from its own task.

    ``cached``: the handler is a `CachedEventHandler` (given `CachedObject` s), not a
    `ResourceEventHandler` (given typed objects).
    """

    def __init__(
        self,
        processor: Processor,
        handler: ResourceEventHandler[Any] | CachedEventHandler[Any],
        type_: type[Any],
        *,
        cached: bool = False,
    ) -> None:
        self._processor = processor
        self.handler = handler
        self.type_ = type_
        self._to = self._cached if cached else self._decoded
        self._queue: deque[Note] = deque()
        self._wake = asyncio.Event()
        self.synced = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.errors = 0

    def push(self, note: Note) -> None:
        """Queue a notification for the handler."""
        self._queue.append(note)
        self._wake.set()

    @property
    def backlog(self) -> int:
        """Notifications waiting for the handler."""
        return len(self._queue)

    async def run(self) -> None:
        """Deliver notifications until cancelled."""
        delivered = 0
        while True:
            while not self._queue:
                self._wake.clear()
                await self._wake.wait()
            kind, key, old, new, flag = self._queue.popleft()
            if kind == SYNCED:
                self.synced.set()
                continue
            started = time.perf_counter()
            try:
                result = self._call(kind, key, old, new, flag)
                if result is not None and inspect.isawaitable(result):
                    await result
                else:
                    delivered += 1
                    if delivered % _YIELD_EVERY == 0:
                        await asyncio.sleep(0)  # a long initial list must not starve the loop
            except Exception:
                self.errors += 1
                self._processor.failed(self)
            elapsed = time.perf_counter() - started
            if elapsed > _SLOW_HANDLER:
                _log.warning(
                    "event handler is slow",
                    type=self._processor.description,
                    handler=handler_name(self.handler),
                    seconds=round(elapsed, 3),
                    backlog=len(self._queue),
                )

    def _decoded(self, key: Key, entry: Entry) -> Any:
        return self._processor.decode_as(entry, self.type_)

    def _cached(self, key: Key, entry: Entry) -> CachedObject[Any]:
        return CachedObject(key, entry, self.type_, self._processor.decode_as)

    def _call(
        self, kind: int, key: Key | None, old: Entry | None, new: Entry | None, flag: bool
    ) -> Any:
        assert key is not None
        assert new is not None
        to = self._to
        if kind == ADD:
            return self.handler.add(to(key, new), flag)
        if kind == UPDATE:
            assert old is not None
            return self.handler.update(to(key, old), to(key, new))
        return self.handler.delete(to(key, new), flag)


def handler_name(handler: object) -> str:
    """How logs and task names call a handler."""
    return getattr(handler, "__qualname__", None) or type(handler).__qualname__


class Processor:
    """The handlers of one informer, each fed by its own `Listener` (client-go's sharedProcessor).

    Args:
        description: Names the informer in logs and task names.
        decode_as: Decodes a stored entry into a handler's type.
        log: The informer's logger.
    """

    def __init__(
        self,
        description: str,
        decode_as: Callable[[Entry, type[Any]], Any],
        log: Any,
    ) -> None:
        self.description = description
        self.decode_as = decode_as
        self._log = log
        self.listeners: list[Listener] = []
        self.errors = 0
        """Exceptions raised by handlers."""

    def notify(self, note: Note) -> None:
        """Queue a notification for every handler."""
        for listener in self.listeners:
            listener.push(note)

    def add(
        self,
        handler: ResourceEventHandler[Any] | CachedEventHandler[Any],
        type_: type[Any],
        entries: Iterable[tuple[Key, Entry]],
        synced: bool,
        *,
        cached: bool = False,
    ) -> Listener:
        """Register a handler, first given ``entries`` (and a sync mark when ``synced``).

        ``cached``: the handler is a `CachedEventHandler`.
        """
        listener = Listener(self, handler, type_, cached=cached)
        for key, entry in entries:
            listener.push((ADD, key, None, entry, True))
        if synced:
            listener.push((SYNCED, None, None, None, False))
        self.listeners.append(listener)
        return listener

    def start(self, tg: asyncio.TaskGroup, listener: Listener) -> None:
        """Run a handler's listener in ``tg``."""
        listener.task = tg.create_task(
            listener.run(), name=f"handler {handler_name(listener.handler)} of {self.description}"
        )

    def remove(self, listener: Listener) -> None:
        """Unregister a handler and stop its task."""
        if listener in self.listeners:
            self.listeners.remove(listener)
        if listener.task is not None:
            listener.task.cancel()

    def failed(self, listener: Listener) -> None:
        """Log and count an exception raised by a handler (called from its except block)."""
        self.errors += 1
        self._log.exception("event handler raised", handler=handler_name(listener.handler))
