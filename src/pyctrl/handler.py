"""Event handlers: turn events about objects into requests on a controller's queue.

An `EventHandler` receives each event that passed the predicates and adds the
`pyctrl.reconcile.Request` keys it maps to onto the queue. The ready-made handlers
mirror controller-runtime's ``pkg/handler``:

- `EnqueueRequestForObject`: the object's own namespace/name (what ``For`` uses);
- `EnqueueRequestForOwner`: the owner named in the object's ownerReferences, by
  the owner's group and kind, only the controller owner by default (what ``Owns``
  uses); on update the owners of both the old and the new object are enqueued, so
  a change of owner reaches both;
- `EnqueueRequestsFromMapFunc`: whatever a function returns (sync or async), for
  "reconcile every MySrv that mounts this ConfigMap";
- `Funcs`: plain functions per event kind.

The ready-made handlers (but the map function's) read only the events' metadata
(``event.meta``), so an event from the cache is never decoded for them.

Each add may name its `pyctrl.workqueue.Trigger` (why the key is queued); an add that
names none records the trigger of the event being handled (`pyctrl.source.dispatch`), so
a handler of your own need not pass one.

Initial-list creates and resync updates (equal resourceVersions) are queued at
`LOW_PRIORITY`, so that a restart with thousands of existing objects does not starve
new work, as controller-runtime's priority queue does. The ready-made handlers take a
``priority`` for every other event (default 0; higher goes first), so one watch's
requests can overtake another's.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pyctrl import _executor
from pyctrl.meta import GroupVersionKind
from pyctrl.reconcile import Request
from pyctrl.resource import CustomResource, ObjectAccessor, accessor
from pyctrl.scheme import default_scheme
from pyctrl.workqueue import LOW_PRIORITY

if TYPE_CHECKING:
    from datetime import timedelta

    from pyctrl.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent
    from pyctrl.workqueue import Trigger

__all__ = [
    "LOW_PRIORITY",
    "EnqueueRequestForObject",
    "EnqueueRequestForOwner",
    "EnqueueRequestsForAll",
    "EnqueueRequestsFromMapFunc",
    "EventHandler",
    "Funcs",
    "MapFunc",
    "Queue",
    "RateLimitingQueue",
]


# Kinds of the built-in types that are cluster-scoped, for owner lookups of built-in owners.
_CLUSTER_SCOPED_KINDS = frozenset(
    {
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("storage.k8s.io", "StorageClass"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("scheduling.k8s.io", "PriorityClass"),
    }
)


class Queue(Protocol):
    """What a handler needs of a queue: adding a request at a priority, with its trigger."""

    def add(self, item: Request, *, priority: int = 0, trigger: Trigger | None = None) -> None:
        """Queue ``item`` (at most once) at ``priority``; higher runs first.

        ``trigger`` says why (kept if the queue records triggers); None: the trigger of
        the event being handled, if any (`pyctrl.workqueue.event_trigger`).
        """
        ...


class RateLimitingQueue(Queue, Protocol):
    """A `Queue` that also adds after a delay: what a controller hands its sources.

    controller-runtime's ``TypedRateLimitingInterface``: a controller's queue (or its
    debouncing front, or one cluster's view of it) is one, so a source may delay a
    request as a reconcile's requeue does.
    """

    def add_after(
        self,
        item: Request,
        delay: float | timedelta,
        *,
        priority: int = 0,
        trigger: Trigger | None = None,
    ) -> None:
        """Queue ``item`` once ``delay`` (seconds) has passed; as `add` otherwise."""
        ...

    def add_rate_limited(
        self, item: Request, *, priority: int = 0, trigger: Trigger | None = None
    ) -> None:
        """Queue ``item`` after the delay the queue's rate limiter gives it."""
        ...


@runtime_checkable
class EventHandler(Protocol):
    """Maps events to requests and adds them to the queue."""

    async def create(self, event: CreateEvent[Any], queue: Queue) -> None:
        """Handle a create event."""
        ...

    async def update(self, event: UpdateEvent[Any], queue: Queue) -> None:
        """Handle an update event."""
        ...

    async def delete(self, event: DeleteEvent[Any], queue: Queue) -> None:
        """Handle a delete event."""
        ...

    async def generic(self, event: GenericEvent[Any], queue: Queue) -> None:
        """Handle a generic event."""
        ...


def _request_for(meta: ObjectAccessor) -> Request:
    return Request(meta.namespace, meta.name)


def _create_priority(event: CreateEvent[Any], priority: int = 0) -> int:
    return LOW_PRIORITY if event.is_in_initial_list else priority


def _update_priority(event: UpdateEvent[Any], priority: int = 0) -> int:
    old, new = event.meta_old, event.meta_new
    return LOW_PRIORITY if old.resource_version == new.resource_version else priority


def _check_priority(priority: int) -> int:
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise TypeError(f"priority must be an int, got {priority!r}")
    return priority


class EnqueueRequestForObject:
    """Enqueues the namespace/name of the object the event is about.

    Args:
        priority: The queue priority of its requests (initial lists and resyncs
            excepted: those go at `LOW_PRIORITY`).
    """

    __slots__ = ("_priority",)

    def __init__(self, *, priority: int = 0) -> None:
        self._priority = _check_priority(priority)

    async def create(self, event: CreateEvent[Any], queue: Queue) -> None:
        """Enqueue the created object."""
        queue.add(_request_for(event.meta), priority=_create_priority(event, self._priority))

    async def update(self, event: UpdateEvent[Any], queue: Queue) -> None:
        """Enqueue the updated object."""
        queue.add(_request_for(event.meta_new), priority=_update_priority(event, self._priority))

    async def delete(self, event: DeleteEvent[Any], queue: Queue) -> None:
        """Enqueue the deleted object."""
        queue.add(_request_for(event.meta), priority=self._priority)

    async def generic(self, event: GenericEvent[Any], queue: Queue) -> None:
        """Enqueue the object."""
        queue.add(_request_for(event.meta), priority=self._priority)


class EnqueueRequestForOwner:
    """Enqueues the owners of the object, matched by the owner type's group and kind.

    Args:
        owner_type: The owner's type (a CustomResource class or a kubernetes-asyncio
            model class) or its GroupVersionKind.
        only_controller: Enqueue only the owner marked ``controller: true`` (default),
            as ``Owns`` does; False enqueues every owner of that kind.
        namespaced: Whether owners live in namespaces. Derived from the type when
            omitted; the request of a cluster-scoped owner has an empty namespace.
        priority: As for `EnqueueRequestForObject`.
    """

    __slots__ = ("_group", "_kind", "_namespaced", "_only_controller", "_priority")

    def __init__(
        self,
        owner_type: type[Any] | GroupVersionKind,
        *,
        only_controller: bool = True,
        namespaced: bool | None = None,
        priority: int = 0,
    ) -> None:
        self._priority = _check_priority(priority)
        if isinstance(owner_type, GroupVersionKind):
            gvk = owner_type
        else:
            gvk = default_scheme().gvk_for(owner_type)
        if namespaced is None:
            if isinstance(owner_type, type) and issubclass(owner_type, CustomResource):
                namespaced = owner_type.resource_info().namespaced
            else:
                namespaced = (gvk.group, gvk.kind) not in _CLUSTER_SCOPED_KINDS
        self._group, self._kind = gvk.group, gvk.kind
        self._only_controller = only_controller
        self._namespaced = namespaced

    def _owners(self, meta: ObjectAccessor) -> list[Request]:
        namespace = meta.namespace if self._namespaced else ""
        return [
            Request(namespace, ref.name)
            for ref in meta.owner_references
            if ref.kind == self._kind
            and ref.group == self._group
            and (ref.controller or not self._only_controller)
        ]

    async def create(self, event: CreateEvent[Any], queue: Queue) -> None:
        """Enqueue the owners of the created object."""
        for request in self._owners(event.meta):
            queue.add(request, priority=_create_priority(event, self._priority))

    async def update(self, event: UpdateEvent[Any], queue: Queue) -> None:
        """Enqueue the owners of both the old and the new object."""
        priority = _update_priority(event, self._priority)
        for request in dict.fromkeys(self._owners(event.meta_old) + self._owners(event.meta_new)):
            queue.add(request, priority=priority)

    async def delete(self, event: DeleteEvent[Any], queue: Queue) -> None:
        """Enqueue the owners of the deleted object."""
        for request in self._owners(event.meta):
            queue.add(request, priority=self._priority)

    async def generic(self, event: GenericEvent[Any], queue: Queue) -> None:
        """Enqueue the owners of the object."""
        for request in self._owners(event.meta):
            queue.add(request, priority=self._priority)


MapFunc = Callable[[Any], Iterable[Request] | Awaitable[Iterable[Request]]]
"""Maps an object to the requests to enqueue; may be a plain or a coroutine function."""


class EnqueueRequestsFromMapFunc:
    """Enqueues the requests a function maps each event's object to.

    The function gets the object (for updates, it is called with the old and with the
    new object, and the union is enqueued) and returns requests, synchronously or as
    a coroutine, so it can read the cache to find dependents. ``priority`` as for
    `EnqueueRequestForObject`.

    A plain ``def`` map function may block (it runs in a thread, `pyctrl.blocking`);
    ``inline=True`` runs a cheap, pure one on the event loop instead, saving the thread
    hop per event.
    """

    __slots__ = ("_fn", "_inline", "_priority")

    def __init__(self, fn: MapFunc, *, priority: int = 0, inline: bool = False) -> None:
        self._fn = fn
        self._priority = _check_priority(priority)
        self._inline = inline or _executor.is_async(fn)

    async def _map(self, obj: Any) -> list[Request]:
        result = self._fn(obj) if self._inline else await _executor.offload(self._fn, obj)
        if inspect.isawaitable(result):
            result = await result
        return list(result)

    async def create(self, event: CreateEvent[Any], queue: Queue) -> None:
        """Enqueue what the created object maps to."""
        for request in await self._map(event.object):
            queue.add(request, priority=_create_priority(event, self._priority))

    async def update(self, event: UpdateEvent[Any], queue: Queue) -> None:
        """Enqueue what the old and the new object map to."""
        priority = _update_priority(event, self._priority)
        requests = await self._map(event.object_old) + await self._map(event.object_new)
        for request in dict.fromkeys(requests):
            queue.add(request, priority=priority)

    async def delete(self, event: DeleteEvent[Any], queue: Queue) -> None:
        """Enqueue what the deleted object maps to."""
        for request in await self._map(event.object):
            queue.add(request, priority=self._priority)

    async def generic(self, event: GenericEvent[Any], queue: Queue) -> None:
        """Enqueue what the object maps to."""
        for request in await self._map(event.object):
            queue.add(request, priority=self._priority)


@dataclass(frozen=True, slots=True)
class Funcs:
    """An EventHandler from optional coroutine functions; a missing one ignores the event."""

    on_create: Callable[[CreateEvent[Any], Queue], Awaitable[None]] | None = None
    on_update: Callable[[UpdateEvent[Any], Queue], Awaitable[None]] | None = None
    on_delete: Callable[[DeleteEvent[Any], Queue], Awaitable[None]] | None = None
    on_generic: Callable[[GenericEvent[Any], Queue], Awaitable[None]] | None = None

    async def create(self, event: CreateEvent[Any], queue: Queue) -> None:
        """Call ``on_create`` if given."""
        if self.on_create is not None:
            await self.on_create(event, queue)

    async def update(self, event: UpdateEvent[Any], queue: Queue) -> None:
        """Call ``on_update`` if given."""
        if self.on_update is not None:
            await self.on_update(event, queue)

    async def delete(self, event: DeleteEvent[Any], queue: Queue) -> None:
        """Call ``on_delete`` if given."""
        if self.on_delete is not None:
            await self.on_delete(event, queue)

    async def generic(self, event: GenericEvent[Any], queue: Queue) -> None:
        """Call ``on_generic`` if given."""
        if self.on_generic is not None:
            await self.on_generic(event, queue)


class Lister(Protocol):
    """What `EnqueueRequestsForAll` lists objects with: the manager's cache."""

    async def list(self, type_: type[Any]) -> Any:
        """List the cached objects of ``type_`` (an object list with ``items``)."""
        ...


class EnqueueRequestsForAll:
    """Enqueues every cached object of ``type_`` on any event ("reconcile everything").

    kube-rs' ``reconcile_all_on``: give it to a watch of what every object depends on (a
    configuration Secret), usually through the builder's ``reconcile_all_on``. Keys
    already queued collapse; ``priority`` as for `EnqueueRequestForObject`.
    """

    __slots__ = ("_cache", "_priority", "_type")

    def __init__(self, cache: Lister, type_: type[Any], *, priority: int = 0) -> None:
        self._cache, self._type = cache, type_
        self._priority = _check_priority(priority)

    async def _all(self, queue: Queue) -> None:
        listed = await self._cache.list(self._type)
        for obj in listed.items:
            queue.add(_request_for(accessor(obj)), priority=self._priority)

    async def create(self, event: CreateEvent[Any], queue: Queue) -> None:
        """Enqueue every object."""
        await self._all(queue)

    async def update(self, event: UpdateEvent[Any], queue: Queue) -> None:
        """Enqueue every object."""
        await self._all(queue)

    async def delete(self, event: DeleteEvent[Any], queue: Queue) -> None:
        """Enqueue every object."""
        await self._all(queue)

    async def generic(self, event: GenericEvent[Any], queue: Queue) -> None:
        """Enqueue every object."""
        await self._all(queue)

    def __repr__(self) -> str:
        return f"EnqueueRequestsForAll({self._type.__name__})"
