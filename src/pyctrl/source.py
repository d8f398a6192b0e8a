"""Sources: where a controller's events come from.

A `Source` feeds events, through predicates and an event handler, into a controller's
queue. Its ``start(queue)`` runs until cancelled; the controller owns that task. A
source that reads a cache is also a `SyncingSource`: the controller waits for
``wait_for_sync`` before starting its workers, as controller-runtime's
``WaitForCacheSync`` does.

The ready-made sources:

- `Kind`: objects of one type from the shared informer cache (what ``For``,
  ``Owns`` and ``Watches`` use). If the type's CRD is not installed yet, the informer
  keeps retrying and logs why; the source syncs once it appears.
- `Informer`: an informer you already hold.
- `Channel`: events from outside the cluster. Code elsewhere calls `Channel.send`
  (or `Channel.send_nowait`) with objects; each becomes a `GenericEvent`. The buffer
  holds 1024 objects by default; `send` waits while it is full.
- `Func`: a coroutine function given the queue, for anything else.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pyctrl.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent
from pyctrl.handler import EnqueueRequestForObject, EventHandler, Queue
from pyctrl.log import get_logger

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from pyctrl.cache import Cache, HandlerRegistration
    from pyctrl.cache import Informer as CacheInformer
    from pyctrl.meta import GroupVersionKind
    from pyctrl.predicate import Predicate

__all__ = ["Channel", "Func", "Informer", "Kind", "Source", "SyncingSource", "dispatch"]

_log = get_logger("pyctrl.source")


@runtime_checkable
class Source(Protocol):
    """Feeds events into a controller's queue; ``start`` runs until cancelled."""

    async def start(self, queue: Queue) -> None:
        """Deliver events to ``queue`` until cancelled."""
        ...


@runtime_checkable
class SyncingSource(Source, Protocol):
    """A Source backed by a cache, which must sync before workers start."""

    async def wait_for_sync(self) -> None:
        """Return once the backing cache has listed everything."""
        ...


async def dispatch(
    event: CreateEvent[Any] | UpdateEvent[Any] | DeleteEvent[Any] | GenericEvent[Any],
    handler: EventHandler,
    predicates: tuple[Predicate, ...],
    queue: Queue,
) -> None:
    """Run ``event`` through the predicates and, if all pass, the handler."""
    match event:
        case CreateEvent():
            if all(p.create(event) for p in predicates):
                await handler.create(event, queue)
        case UpdateEvent():
            if all(p.update(event) for p in predicates):
                await handler.update(event, queue)
        case DeleteEvent():
            if all(p.delete(event) for p in predicates):
                await handler.delete(event, queue)
        case GenericEvent():
            if all(p.generic(event) for p in predicates):
                await handler.generic(event, queue)


class Channel:
    """A source of generic events sent from outside the cluster's watches.

    Args:
        handler: Maps each object to requests; defaults to its own namespace/name.
        *predicates: Filters applied to every event.
        buffer_size: How many objects may wait; `send` blocks while the buffer is full.
    """

    def __init__(
        self,
        handler: EventHandler | None = None,
        *predicates: Predicate,
        buffer_size: int = 1024,
    ) -> None:
        if buffer_size < 1:
            raise ValueError(f"buffer_size must be at least 1, got {buffer_size}")
        self._handler = handler or EnqueueRequestForObject()
        self._predicates = predicates
        self._buffer: asyncio.Queue[Any] = asyncio.Queue(maxsize=buffer_size)

    async def send(self, obj: Any) -> None:
        """Queue ``obj`` as a GenericEvent, waiting while the buffer is full."""
        await self._buffer.put(obj)

    def send_nowait(self, obj: Any) -> None:
        """Queue ``obj`` now; raises `asyncio.QueueFull` when the buffer is full."""
        self._buffer.put_nowait(obj)

    async def start(self, queue: Queue) -> None:
        """Deliver sent objects until cancelled."""
        while True:
            obj = await self._buffer.get()
            try:
                await dispatch(GenericEvent(obj), self._handler, self._predicates, queue)
            except Exception:
                _log.exception("channel source handler failed")


class Func:
    """A source from a coroutine function that is given the queue and runs until cancelled."""

    def __init__(self, fn: Callable[[Queue], Awaitable[None]]) -> None:
        self._fn = fn

    async def start(self, queue: Queue) -> None:
        """Run the function."""
        await self._fn(queue)


class _Forward:
    """Turns informer callbacks into events through predicates and a handler."""

    __slots__ = ("_handler", "_predicates", "_queue")

    def __init__(
        self, handler: EventHandler, predicates: tuple[Predicate, ...], queue: Queue
    ) -> None:
        self._handler, self._predicates, self._queue = handler, predicates, queue

    async def add(self, obj: Any, is_in_initial_list: bool) -> None:
        await dispatch(
            CreateEvent(obj, is_in_initial_list), self._handler, self._predicates, self._queue
        )

    async def update(self, old: Any, new: Any) -> None:
        await dispatch(UpdateEvent(old, new), self._handler, self._predicates, self._queue)

    async def delete(self, obj: Any, delete_state_unknown: bool) -> None:
        await dispatch(
            DeleteEvent(obj, delete_state_unknown), self._handler, self._predicates, self._queue
        )


class Informer:
    """A source from an informer you hold: its events, through predicates, to a handler."""

    def __init__(
        self,
        informer: CacheInformer[Any],
        handler: EventHandler | None = None,
        *predicates: Predicate,
    ) -> None:
        self._informer = informer
        self.handler: EventHandler = handler or EnqueueRequestForObject()
        self._predicates = predicates
        self._registration: HandlerRegistration | None = None
        self._registered = asyncio.Event()

    async def start(self, queue: Queue) -> None:
        """Register on the informer and stay registered until cancelled."""
        self._registration = self._informer.add_event_handler(
            _Forward(self.handler, self._predicates, queue)
        )
        self._registered.set()
        try:
            await asyncio.Event().wait()
        finally:
            self._registration.remove()

    async def wait_for_sync(self) -> None:
        """Return once the informer listed and this handler saw the initial objects."""
        await self._registered.wait()
        assert self._registration is not None
        await self._registration.wait_synced()


class Kind(Informer):
    """Objects of one type from the shared cache.

    Args:
        cache: The shared informer cache.
        type_: The type to watch (a CustomResource class, a kubernetes-asyncio model,
            or `Unstructured` / `PartialObjectMetadata` with ``gvk``).
        handler: Maps events to requests; defaults to the object's own key.
        *predicates: Filters applied before the handler.
        gvk: The kind, for untyped ``type_``.
        metadata_only: Watch metadata only (less memory; for owned types).
    """

    def __init__(
        self,
        cache: Cache,
        type_: type[Any],
        handler: EventHandler | None = None,
        *predicates: Predicate,
        gvk: GroupVersionKind | None = None,
        metadata_only: bool | None = None,
    ) -> None:
        super().__init__(
            cache.get_informer(type_, gvk=gvk, metadata_only=metadata_only), handler, *predicates
        )
        self.type = type_
