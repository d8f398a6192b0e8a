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

Every event goes through `dispatch`: predicates first (a dropped event is logged at
debug level, naming the predicate that dropped it), then the handler. When the queue
records triggers (see `pyctrl.workqueue.Trigger`), the handler's adds carry one that
describes the event: its kind (create, update, delete, generic, initial list, resync,
channel), the watch, the object the event was about (the child, for owner and map
handlers) and its resourceVersion. (`dispatch` sets it as the task's
`pyctrl.workqueue.event_trigger` while the handler runs; an add that names its own
trigger keeps it.) While tracing (`pyctrl.tracing`), each event that passes is a span the
reconcile links to.

`Kind` and `Informer` register on the informer as a `pyctrl.cache.CachedEventHandler`:
their events hold the cached entries and decode them only when a predicate or handler
reads ``.object``. The ready-made handlers and predicates read ``.meta``, so with them an
event is never decoded: the reconcile reads its own fresh copy anyway.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pyctrl import tracing
from pyctrl.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent
from pyctrl.handler import EnqueueRequestForObject, EventHandler, Queue
from pyctrl.log import debug_enabled, get_logger
from pyctrl.workqueue import Trigger, TriggerKind, event_trigger

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from pyctrl.cache import Cache, CachedObject, HandlerRegistration
    from pyctrl.cache import Informer as CacheInformer
    from pyctrl.meta import GroupVersionKind
    from pyctrl.predicate import Predicate
    from pyctrl.resource import ObjectAccessor

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


Event = CreateEvent[Any] | UpdateEvent[Any] | DeleteEvent[Any] | GenericEvent[Any]


async def dispatch(  # noqa: PLR0912 - one branch per event type
    event: Event,
    handler: EventHandler,
    predicates: tuple[Predicate, ...],
    queue: Queue,
    *,
    source: str = "",
    kind: str = "",
) -> None:
    """Run ``event`` through the predicates and, if all pass, the handler.

    Args:
        event: The event.
        handler: Maps it to requests.
        predicates: Filters; the first that returns False drops the event (logged at
            debug level with its name).
        queue: Where the handler adds requests.
        source: Names the watch in triggers and logs (``Deployment.apps``, ``channel``).
        kind: The kind of the event's object, for triggers.
    """
    method: Any
    match event:
        case CreateEvent():
            for predicate in predicates:
                if not predicate.create(event):
                    _dropped(predicate, event, source)
                    return
            method = handler.create
        case UpdateEvent():
            for predicate in predicates:
                if not predicate.update(event):
                    _dropped(predicate, event, source)
                    return
            method = handler.update
        case DeleteEvent():
            for predicate in predicates:
                if not predicate.delete(event):
                    _dropped(predicate, event, source)
                    return
            method = handler.delete
        case GenericEvent():
            for predicate in predicates:
                if not predicate.generic(event):
                    _dropped(predicate, event, source)
                    return
            method = handler.generic
    tracer = tracing.tracer()
    records = getattr(queue, "records_triggers", False)
    if tracer is None and not records:
        await method(event, queue)
        return
    trigger_kind, meta, old = _what(event, source)
    described, namespace, name, version = _describe(meta, event, kind)
    if old is not None and version and old.resource_version == version:
        trigger_kind = TriggerKind.RESYNC
    if tracer is None:
        await _handle(method, event, queue, Trigger(trigger_kind, source, described, version))
        return
    with tracing.event_span(
        tracer,
        trigger_kind,
        kind=kind or _kind_of(event),
        namespace=namespace,
        name=name,
        resource_version=version,
        annotations=meta.annotations if meta is not None else None,
        old_annotations=old.annotations if old is not None else None,
    ) as context:
        trigger = Trigger(trigger_kind, source, described, version, context)
        if records:
            await _handle(method, event, queue, trigger)
        else:
            await method(event, queue)


async def _handle(method: Any, event: Event, queue: Queue, trigger: Trigger) -> None:
    """Call the handler with ``trigger`` as the task's event trigger (its adds record it)."""
    token = event_trigger.set(trigger)
    try:
        await method(event, queue)
    finally:
        event_trigger.reset(token)


def _what(event: Event, source: str) -> tuple[str, ObjectAccessor | None, ObjectAccessor | None]:
    """The trigger kind of ``event``, its object's metadata and (for an update) the old's.

    The metadata is None for an object that is not a Kubernetes object: what a `Channel`
    or `Func` may carry, the sources being generic in their object type as
    controller-runtime's are.
    """
    match event:
        case CreateEvent():
            kind = TriggerKind.INITIAL_LIST if event.is_in_initial_list else TriggerKind.CREATE
            return kind, _meta(event), None
        case UpdateEvent():
            return TriggerKind.UPDATE, _meta(event), _meta(event, old=True)
        case DeleteEvent():
            return TriggerKind.DELETE, _meta(event), None
        case GenericEvent():
            kind = TriggerKind.CHANNEL if source == "channel" else TriggerKind.GENERIC
            return kind, _meta(event), None


def _meta(event: Event, *, old: bool = False) -> ObjectAccessor | None:
    try:
        if isinstance(event, UpdateEvent):
            return event.meta_old if old else event.meta_new
        return event.meta
    except TypeError:
        return None


def _event_object(event: Event) -> Any:
    return event.object_new if isinstance(event, UpdateEvent) else event.object


def _kind_of(event: Event) -> str:
    obj = _event_object(event)
    return str(getattr(obj, "kind", None) or type(obj).__name__)


_REPR_LIMIT = 120


def _describe(
    meta: ObjectAccessor | None, event: Event, kind: str = ""
) -> tuple[str, str, str, str]:
    """How a trigger names the event's object: (description, namespace, name, resourceVersion).

    A Kubernetes object is ``Kind namespace/name``; any other object (a `Channel`'s
    reading, say) is its ``repr``, cut to 120 characters. ``kind`` is the watch's; an
    event of a source without one (a `Channel`) is described by its object's.
    """
    if meta is None:
        text = repr(_event_object(event))
        if len(text) > _REPR_LIMIT:
            text = text[: _REPR_LIMIT - 3] + "..."
        return text, "", "", ""
    namespace, name, version = meta.namespace, meta.name, meta.resource_version
    kind = kind or _kind_of(event)
    described = f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
    return described, namespace, name, version


def _dropped(predicate: Predicate, event: Event, source: str) -> None:
    if debug_enabled():
        described, namespace, name, version = _describe(_meta(event), event)
        _log.debug(
            "event dropped by predicate",
            predicate=getattr(predicate, "__name__", None) or type(predicate).__name__,
            event_type=type(event).__name__,
            source=source,
            object=described,
            namespace=namespace,
            name=name,
            resource_version=version,
        )


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
                await dispatch(
                    GenericEvent(obj), self._handler, self._predicates, queue, source="channel"
                )
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
    """Turns an informer's notifications into events through predicates and a handler.

    A `pyctrl.cache.CachedEventHandler`: the events hold the cached objects, decoded only
    if a predicate or the handler reads ``.object``.
    """

    __slots__ = ("_handler", "_kind", "_predicates", "_queue", "_source")

    def __init__(
        self,
        handler: EventHandler,
        predicates: tuple[Predicate, ...],
        queue: Queue,
        gvk: GroupVersionKind | None = None,
    ) -> None:
        self._handler, self._predicates, self._queue = handler, predicates, queue
        self._kind = gvk.kind if gvk is not None else ""
        self._source = f"{gvk.kind}.{gvk.group}" if gvk is not None and gvk.group else self._kind

    async def add(self, obj: CachedObject[Any], is_in_initial_list: bool) -> None:
        await dispatch(
            CreateEvent.cached(obj, is_in_initial_list),
            self._handler,
            self._predicates,
            self._queue,
            source=self._source,
            kind=self._kind,
        )

    async def update(self, old: CachedObject[Any], new: CachedObject[Any]) -> None:
        await dispatch(
            UpdateEvent.cached(old, new),
            self._handler,
            self._predicates,
            self._queue,
            source=self._source,
            kind=self._kind,
        )

    async def delete(self, obj: CachedObject[Any], delete_state_unknown: bool) -> None:
        await dispatch(
            DeleteEvent.cached(obj, delete_state_unknown),
            self._handler,
            self._predicates,
            self._queue,
            source=self._source,
            kind=self._kind,
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
        self._registration = self._informer.add_cached_event_handler(
            _Forward(self.handler, self._predicates, queue, getattr(self._informer, "gvk", None))
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
        optional: The kind's CRD may be absent: the informer runs only while the kind is
            served, and the controller does not wait for it (`pyctrl.cache.Cache.get_informer`).
    """

    def __init__(
        self,
        cache: Cache,
        type_: type[Any],
        handler: EventHandler | None = None,
        *predicates: Predicate,
        gvk: GroupVersionKind | None = None,
        metadata_only: bool | None = None,
        optional: bool = False,
    ) -> None:
        super().__init__(
            cache.get_informer(type_, gvk=gvk, metadata_only=metadata_only, optional=optional),
            handler,
            *predicates,
        )
        self.type = type_
        self.optional = optional

    async def wait_for_sync(self) -> None:
        """As `Informer.wait_for_sync`; at once for an optional kind not served now."""
        if self.optional and not self._informer.served:
            await self._registered.wait()
            return
        await super().wait_for_sync()
