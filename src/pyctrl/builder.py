"""Builders: wire a controller (or a type's webhooks) into a Manager in a few lines.

This is controller-runtime's ``pkg/builder``::

    controller_managed_by(manager)
        .for_(MySrv)                                  # reconcile MySrv objects
        .owns(V1Deployment)                           # ...and their owners when these change
        .owns(V1Service)                             # or .dependents(workflow)
        .watches(V1ConfigMap, EnqueueRequestsFromMapFunc(mysrvs_using_configmap))
        .with_event_filter(GenerationChanged())       # applies to every watch
        .with_options(Options(max_concurrent_reconciles=4))
        .complete(MySrvReconciler(manager.client))

``for_`` watches the type with `pyctrl.handler.EnqueueRequestForObject`; ``owns``
with `pyctrl.handler.EnqueueRequestForOwner` (controller owner only); ``watches`` with
the handler you give, for a type from the shared cache; ``watches_raw_source`` adds any
`pyctrl.source.Source` (a `pyctrl.source.Channel` of external events) as it is.
``every(30)`` also reconciles each object every 30 seconds (`pyctrl.timer.Timer`);
``daemon(fn)`` runs a coroutine per object while it lives (`pyctrl.daemon.Daemon`).
``multicluster()`` makes the watches apply to every cluster the manager engages
(`pyctrl.cluster`), instead of (or, with ``local=True``, besides) the local one.
The controller is named after the lowercase kind unless ``named``; names must be unique
in a manager.

On a sharded manager (``Options(sharding=...)``) the built controller runs on every replica
and reconciles only the ``for_`` objects in this replica's slots: the type's informer is
sharded, each key is admitted by the slot elector, and ``owns`` watches pass only events
whose controller owner is in a held slot.

A reconciler is either a `pyctrl.reconcile.Reconciler` (``reconcile(request)``) or a
`pyctrl.reconcile.ObjectReconciler`, which kube-rs users will recognise:
``reconcile_object(obj)`` is handed the cached object of the ``for_`` type (a fresh
copy); requests for objects that are gone are skipped, so there is no
get-then-NotFound dance. The builder is generic in its ``for_`` type, so
``controller_managed_by(manager).for_(MySrv).complete(r)`` type-checks that ``r``
reconciles MySrv objects.

`webhook_managed_by(manager).for_(MySrv).with_defaulter(...).with_validator(...)
.with_conversion(...).complete()` registers a type's webhooks on the manager's webhook
server, under controller-runtime's paths.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar, cast

from pyctrl import _executor
from pyctrl.cache import cached_in_slots, keys_in_slots
from pyctrl.cluster import cluster_queue
from pyctrl.controller import Controller, Notify, Options
from pyctrl.errors import NotFoundError
from pyctrl.handler import (
    EnqueueRequestForObject,
    EnqueueRequestForOwner,
    EnqueueRequestsForAll,
    EventHandler,
)
from pyctrl.log import get_logger
from pyctrl.pause import PAUSED_ANNOTATION, NotPaused, SkipPaused
from pyctrl.reconcile import (
    ObjectReconciler,
    Reconciler,
    SyncObjectReconciler,
    SyncReconciler,
    as_reconciler,
)
from pyctrl.resource import Unstructured
from pyctrl.source import Kind, Source
from pyctrl.workqueue import by_cluster

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from pyctrl.cache import Cache, Informer
    from pyctrl.clock import Clock
    from pyctrl.cluster import Cluster
    from pyctrl.daemon import Daemon, DaemonFunc
    from pyctrl.dependent import Workflow
    from pyctrl.manager import Manager
    from pyctrl.meta import GroupVersionKind
    from pyctrl.predicate import Predicate
    from pyctrl.reconcile import Request, Result
    from pyctrl.resource import CustomResource
    from pyctrl.shardelection import SlotElector
    from pyctrl.webhook import (
        Defaulter,
        SyncDefaulter,
        SyncValidator,
        Validator,
        WebhookOptions,
    )

__all__ = [
    "Builder",
    "ObjectReconciler",
    "WebhookBuilder",
    "controller_managed_by",
    "webhook_managed_by",
]

_log = get_logger("pyctrl.builder")


class _AfterOwnWrites:
    """Waits, before each reconcile, until the cache shows the client's writes of its key.

    So that a reconcile never acts on a state older than the last one it wrote itself
    (`pyctrl.cache.CacheOptions.read_your_own_writes`). The wait is bounded; it never
    holds up the watch, only this key's worker. Only for a `Reconciler`: an
    `ObjectReconciler`'s object is read with `pyctrl.cache.Cache.get`, which waits the
    same way, so each reconcile waits once.
    """

    def __init__(self, manager: Manager, type_: type[Any], reconciler: Reconciler) -> None:
        self._manager, self._type, self._reconciler = manager, type_, reconciler

    async def reconcile(self, request: Request) -> Result | None:
        await self._manager.get_cluster(request.cluster).cache.wait_for_own_writes(
            self._type, request.name, request.namespace or None
        )
        return await self._reconciler.reconcile(request)


class _Untyped:
    """Reads one kind's objects from the cache as `Unstructured` (its JSON, no model built)."""

    def __init__(self, cache: Cache, gvk: GroupVersionKind) -> None:
        self._cache, self._gvk = cache, gvk

    async def get(self, type_: type[T], name: str, namespace: str | None = None) -> T:
        return await self._cache.get(type_, name, namespace, gvk=self._gvk)


class _WhileEngaged:
    """Drops the requests of clusters no longer engaged, before the reconciler sees them."""

    def __init__(self, manager: Manager, reconciler: Reconciler) -> None:
        self._manager, self._reconciler = manager, reconciler

    async def reconcile(self, request: Request) -> Result | None:
        if request.cluster and request.cluster not in self._manager.fleet:
            _log.info("cluster not engaged; dropping its request", cluster=request.cluster)
            return None
        return await self._reconciler.reconcile(request)


class _InRequestsCluster:
    """An `ObjectReconciler` of a multi-cluster controller: reads from the request's cluster."""

    def __init__(
        self, manager: Manager, type_: type[Any], reconciler: ObjectReconciler[Any]
    ) -> None:
        self._manager, self._type, self._reconciler = manager, type_, reconciler

    async def reconcile(self, request: Request) -> Result | None:
        cache = self._manager.get_cluster(request.cluster).cache
        return await as_reconciler(cache, self._type, self._reconciler).reconcile(request)


def _notifier(manager: Manager, type_: type[Any], name: str) -> Notify:
    """Records a Warning event on a request's cached object (a key given up on, say)."""

    async def notify(request: Request, reason: str, message: str) -> None:
        try:
            obj = await manager.cache.get(type_, request.name, request.namespace or None)
        except NotFoundError:
            return
        manager.get_event_recorder_for(name).event(obj, "Warning", reason, message)

    return notify


def _mine_and(
    mine: Callable[[Any], bool], when: Callable[[Any], bool] | None
) -> Callable[[Any], bool]:
    """A daemon's ``when`` on a sharded manager: only objects in this replica's slots."""
    if when is None:
        return mine
    return lambda obj: mine(obj) and when(obj)


def _stop_slot(shards: SlotElector, informer: Informer[Any], daemon: Daemon, slot: int) -> None:
    for request in keys_in_slots(informer, shards.assignment, [slot]):
        daemon.stop_nowait(request)


def _restart_on_arrival(shards: SlotElector, informer: Informer[Any], daemon: Daemon) -> None:
    """Slots arriving (or back after a lapse) start the daemons of their cached objects."""
    held = [shards.assignment.held()]

    def changed() -> None:
        now = shards.assignment.held()
        arrived, held[0] = now - held[0], now
        if arrived:
            for obj in cached_in_slots(informer, shards.assignment, arrived):
                daemon.add(obj, False)

    shards.assignment.add_listener(changed)


@dataclass
class _Watch:
    type_: type[Any] | None
    source: Source | None
    handler: EventHandler
    predicates: tuple[Predicate, ...]
    metadata_only: bool | None = None
    optional: bool = False


T = TypeVar("T")
U = TypeVar("U")


@dataclass
class Builder(Generic[T]):
    """Collects what a controller watches, then builds it (see the module docs).

    Generic in the ``for_`` type: `complete` accepts an `ObjectReconciler` of that type.
    """

    manager: Manager
    _for: _Watch | None = None
    _watches: list[_Watch] = field(default_factory=list)
    _filters: list[Predicate] = field(default_factory=list)
    _options: Options | None = None
    _name: str = ""
    _clusters: tuple[bool, bool] = (True, False)  # (local, engaged)
    _paused: str | None = PAUSED_ANNOTATION

    def for_(self, type_: type[U], *predicates: Predicate, optional: bool = False) -> Builder[U]:
        """Reconcile objects of ``type_``: each event enqueues the object's own key.

        ``optional=True``: the kind's CRD may be absent; see `owns`.
        """
        if self._for is not None:
            raise ValueError("for_() may be called once per controller")
        self._for = _Watch(type_, None, EnqueueRequestForObject(), predicates, optional=optional)
        if self.manager.shards is not None:
            # Before anything (a daemon) asks the cache for the type's informer.
            self.manager.cache.shard(type_, self.manager.shards.assignment)
        return cast("Builder[U]", self)

    def owns(
        self,
        type_: type[Any],
        *predicates: Predicate,
        metadata_only: bool | None = None,
        optional: bool = False,
    ) -> Self:
        """Watch ``type_`` and enqueue the controller owner of each object (the ``for_`` type).

        ``optional=True``: ``type_``'s CRD may not be installed (a ServiceMonitor without
        prometheus-operator). The watch waits, inactive, until the CRD is Established,
        then its events flow; it stops when the CRD goes. The controller and the manager
        do not wait for it; reconcilers ask `pyctrl.cache.Cache.is_served`.
        """
        if self._for is None or self._for.type_ is None:
            raise ValueError("call for_() before owns()")
        handler = EnqueueRequestForOwner(self._for.type_, only_controller=True)
        self._watches.append(_Watch(type_, None, handler, predicates, metadata_only, optional))
        return self

    def dependents(self, workflow: Workflow) -> Self:
        """Own every type the workflow's dependents create (`pyctrl.dependent.Workflow`)."""
        for type_ in workflow.owned_types():
            self.owns(type_)
        return self

    def watches(
        self,
        type_: type[Any],
        handler: EventHandler,
        *predicates: Predicate,
        optional: bool = False,
    ) -> Self:
        """Watch objects of ``type_`` (from the shared cache), mapping events with ``handler``.

        ``optional=True``: ``type_``'s CRD may be absent; see `owns`.
        """
        if not isinstance(type_, type):
            raise TypeError(
                f"watches() takes a type, not {type(type_).__name__}: give a Source, which "
                "carries its own handler and predicates, to watches_raw_source()"
            )
        self._watches.append(_Watch(type_, None, handler, predicates, optional=optional))
        return self

    def watches_raw_source(self, source: Source) -> Self:
        """Add a Source as it is, e.g. a `pyctrl.source.Channel` (``WatchesRawSource``).

        The source carries its own handler and predicates; `with_event_filter` does not
        apply to it.
        """
        self._watches.append(_Watch(None, source, EnqueueRequestForObject(), ()))
        return self

    def every(
        self,
        interval: float | None,
        *,
        initial_delay: float | None = None,
        idle: float | None = None,
        jitter: float = 0.1,
        when: Callable[[T], bool] | None = None,
        clock: Clock | None = None,
    ) -> Self:
        """Also reconcile each ``for_`` object every ``interval`` seconds (`pyctrl.timer.Timer`)."""
        from pyctrl.timer import Timer

        return self.watches_raw_source(
            Timer(
                self.manager.cache,
                self._for_type("every()"),
                interval,
                initial_delay=initial_delay,
                idle=idle,
                jitter=jitter,
                when=when,
                clock=clock,
            )
        )

    def daemon(
        self, daemon: Daemon | DaemonFunc, *, when: Callable[[T], bool] | None = None
    ) -> Self:
        """Run a daemon per ``for_`` object (a `pyctrl.daemon.Daemon`, or its function)."""
        from pyctrl.daemon import Daemon

        shards = self.manager.shards
        if not isinstance(daemon, Daemon):
            if shards is not None:
                when = _mine_and(shards.is_mine, when)
            daemon = Daemon(self.manager.cache, self._for_type("daemon()"), daemon, when=when)
        if shards is not None:
            # A slot leaving this replica stops the daemons of its objects at once.
            informer = self.manager.cache.get_informer(self._for_type("daemon()"))
            shards.on_slot_lost(functools.partial(_stop_slot, shards, informer, daemon))
            _restart_on_arrival(shards, informer, daemon)
        return self.watches_raw_source(daemon)

    def _for_type(self, caller: str) -> type[Any]:
        if self._for is None or self._for.type_ is None:
            raise ValueError(f"call for_() before {caller}")
        return self._for.type_

    def multicluster(self, *, local: bool = False) -> Self:
        """Watch every engaged cluster (`pyctrl.cluster`), and the local one if ``local``.

        ``for_``, ``owns`` and ``watches`` then apply to each cluster the manager engages,
        for as long as it is engaged; requests carry the cluster's name
        (`pyctrl.reconcile.Request.cluster`, "" for the local cluster), and the queue is
        fair across clusters unless the options name another ``fairness_key``. Raw
        sources (``watches_raw_source``, ``every``, ``daemon``) stay local.
        """
        self._clusters = (local, True)
        return self

    def with_event_filter(self, predicate: Predicate) -> Self:
        """Apply ``predicate`` to every watch of the controller."""
        self._filters.append(predicate)
        return self

    def with_options(self, options: Options) -> Self:
        """Set the controller's options."""
        self._options = options
        return self

    def paused_annotation(self, annotation: str | None) -> Self:
        """The annotation that pauses an object (`pyctrl.pause`); None never pauses.

        Default ``pyctrl.dev/paused``: an object annotated ``"true"`` is not reconciled.
        """
        self._paused = annotation
        return self

    def reconcile_all_on(self, type_: type[Any], *predicates: Predicate) -> Self:
        """Reconcile every cached ``for_`` object when an object of ``type_`` changes.

        kube-rs' ``reconcile_all_on``: for a configuration every object depends on, such
        as ``reconcile_all_on(V1Secret, FieldEquals("metadata.name", "config"))``. Each
        event of ``type_`` that passes ``predicates`` queues every object of the ``for_``
        type in the cache (keys already queued collapse, as always).
        """
        handler = EnqueueRequestsForAll(self.manager.cache, self._for_type("reconcile_all_on()"))
        return self.watches(type_, handler, *predicates)

    def named(self, name: str) -> Self:
        """Name the controller (default: the lowercase kind of the ``for_`` type)."""
        self._name = name
        return self

    def _shard(self) -> Informer[Any] | None:
        """With a sharded manager: shard the ``for_`` type, filter owned objects by owner.

        Returns the sharded informer, or None without sharding.
        """
        shards = self.manager.shards
        if shards is None or self._for is None or self._for.type_ is None:
            return None
        self.manager.cache.shard(self._for.type_, shards.assignment)
        owner_filter = shards.owner_filter()
        for watch in self._watches:
            if isinstance(watch.handler, EnqueueRequestForOwner):
                watch.predicates = (*watch.predicates, owner_filter)
        return self.manager.cache.get_informer(self._for.type_)

    def _pausable(
        self,
        watch: _Watch,
        name: str,
        reconciler: Reconciler | ObjectReconciler[Any],
        *,
        hand_object: bool = False,
    ) -> Reconciler:
        """Skip paused objects: drop their events, and check before each reconcile.

        An `ObjectReconciler` is handed the object the check read: one read per reconcile.
        """
        assert watch.type_ is not None
        assert self._paused is not None
        watch.predicates = (*watch.predicates, NotPaused(self._paused))

        def record(obj: Any, reason: str, message: str) -> None:
            self.manager.get_event_recorder_for(name).event(obj, "Normal", reason, message)

        if hand_object:
            return SkipPaused(
                self.manager.cache, watch.type_, reconciler, record, self._paused, hand_object=True
            )
        # A Reconciler reads its object itself: the check reads only the JSON, untyped.
        untyped = _Untyped(self.manager.cache, self.manager.scheme.gvk_for(watch.type_))
        return SkipPaused(untyped, Unstructured, reconciler, record, self._paused)

    def _source(self, watch: _Watch) -> Source:
        if watch.source is not None:
            return watch.source
        assert watch.type_ is not None
        return Kind(
            self.manager.cache,
            watch.type_,
            watch.handler,
            *self._filters,
            *watch.predicates,
            metadata_only=watch.metadata_only,
            optional=watch.optional,
        )

    def _adapt(
        self,
        reconciler: Reconciler | SyncReconciler | ObjectReconciler[T] | SyncObjectReconciler[T],
        *,
        name: str,
        engaged: bool,
    ) -> Reconciler:
        """The `Reconciler` the controller calls.

        Object reconcilers read their object first (from the request's cluster when
        ``engaged``); blocking code is offloaded; paused objects are skipped. Each
        reconcile reads its object (and waits for the client's own writes of it) once.
        """
        for_type = self._for.type_ if self._for is not None else None
        # Pausing reads the local cache: a multi-cluster controller's objects are elsewhere.
        pausable = self._for is not None and for_type is not None and bool(self._paused)
        pausable = pausable and not engaged
        adapted: Reconciler
        if isinstance(reconciler, ObjectReconciler) and not isinstance(reconciler, Reconciler):
            if self._for is None or for_type is None:
                raise ValueError("an ObjectReconciler needs for_() to know which object to read")
            handed: Any = reconciler
            if not _executor.is_async(handed.reconcile_object):
                handed = _executor.Offloaded(handed)
            if engaged:
                adapted = _InRequestsCluster(self.manager, for_type, handed)
            elif pausable:
                adapted = self._pausable(self._for, name, handed, hand_object=True)
            else:
                adapted = as_reconciler(self.manager.cache, for_type, handed)
            # Its read of the object waits for the client's own writes already.
        else:
            if not isinstance(reconciler, Reconciler):
                raise TypeError(
                    f"{type(reconciler).__name__} has neither reconcile(request) "
                    "nor reconcile_object(obj)"
                )
            adapted = reconciler
            if not _executor.is_async(reconciler.reconcile):
                adapted = cast("Reconciler", _executor.Offloaded(reconciler))
            if pausable:
                assert self._for is not None
                adapted = self._pausable(self._for, name, adapted)  # its read waits
            elif for_type is not None and self.manager.cache.options.read_your_own_writes:
                adapted = _AfterOwnWrites(self.manager, for_type, adapted)
        if engaged:
            adapted = _WhileEngaged(self.manager, adapted)
        return adapted

    def complete(
        self,
        reconciler: Reconciler | SyncReconciler | ObjectReconciler[T] | SyncObjectReconciler[T],
    ) -> Controller:
        """Build the controller, add it to the manager and return it.

        A plain ``def reconcile`` or ``def reconcile_object`` runs in a thread of the
        controller's pool (`pyctrl.blocking`).
        """
        if self._for is None and not self._name:
            raise ValueError("a controller needs for_() or named()")
        kind = ""
        if self._for is not None and self._for.type_ is not None:
            kind = self.manager.scheme.gvk_for(self._for.type_).kind
        name = self._name or kind.lower()
        local, engaged = self._clusters
        if engaged and self.manager.shards is not None:
            raise ValueError(
                f"controller {name!r}: multicluster() controllers cannot be sharded yet; "
                "sharding splits the local cluster's objects only"
            )
        adapted = self._adapt(reconciler, name=name, engaged=engaged)
        informer = self._shard()
        options = self._options
        if engaged and (options is None or options.fairness_key is None):
            options = replace(options or Options(), fairness_key=by_cluster)
        if informer is not None:
            # Sharded controllers are active on every replica, not only on a leader.
            options = replace(options or Options(), need_leader_election=False)
        leader_only = (options or Options()).need_leader_election
        controller = Controller(
            name,
            adapted,
            options=options,
            kind=kind,
            gate=(
                self.manager.shards.gate_for(informer)
                if informer is not None and self.manager.shards is not None
                else None
            ),
            fence=self.manager.fence if leader_only else None,
            notify=(
                _notifier(self.manager, self._for.type_, name)
                if self._for is not None and self._for.type_ is not None
                else None
            ),
        )
        watches = [*([self._for] if self._for else []), *self._watches]
        for watch in watches:
            if local or watch.source is not None:
                controller.watch(self._source(watch))
        if engaged:
            self.manager.fleet.add_watcher(
                functools.partial(self._cluster_sources, controller, watches)
            )
        self.manager.add(controller)
        return controller

    def _cluster_sources(
        self, controller: Controller, watches: list[_Watch], name: str, cluster: Cluster
    ) -> list[Callable[[], Coroutine[Any, Any, None]]]:
        """The sources of an engaged cluster: each typed watch, on that cluster's cache."""
        queue = cluster_queue(controller.intake, name)
        sources = [
            Kind(
                cluster.cache,
                watch.type_,
                watch.handler,
                *self._filters,
                *watch.predicates,
                metadata_only=watch.metadata_only,
                optional=watch.optional,
            )
            for watch in watches
            if watch.type_ is not None and watch.source is None
        ]
        return [functools.partial(source.start, queue) for source in sources]


def controller_managed_by(manager: Manager) -> Builder[Any]:
    """Start building a controller managed by ``manager``."""
    return Builder(manager)


@dataclass
class WebhookBuilder:
    """Registers a type's admission and conversion webhooks on the manager's server.

    The type is a custom resource class, a built-in kind's kubernetes-asyncio model
    (``V1Pod``) or `pyctrl.resource.Unstructured` with its GroupVersionKind.
    """

    manager: Manager
    _type: type[Any] | None = None
    _gvk: GroupVersionKind | None = None
    _defaulter: Defaulter[Any] | SyncDefaulter[Any] | None = None
    _validator: Validator[Any] | SyncValidator[Any] | None = None
    _defaulter_options: WebhookOptions | None = None
    _validator_options: WebhookOptions | None = None
    _defaulter_path: str | None = None
    _validator_path: str | None = None
    _spokes: list[type[CustomResource]] | None = None

    def for_(self, type_: type[Any], gvk: GroupVersionKind | None = None) -> Self:
        """The type (for conversion: the hub version); ``gvk`` for `Unstructured`."""
        self._type, self._gvk = type_, gvk
        return self

    def with_defaulter(
        self,
        defaulter: Defaulter[Any] | SyncDefaulter[Any],
        options: WebhookOptions | None = None,
    ) -> Self:
        """Serve a defaulting (mutating) webhook, configured by ``options``."""
        self._defaulter, self._defaulter_options = defaulter, options
        return self

    def with_validator(
        self,
        validator: Validator[Any] | SyncValidator[Any],
        options: WebhookOptions | None = None,
    ) -> Self:
        """Serve a validating webhook, configured by ``options``."""
        self._validator, self._validator_options = validator, options
        return self

    def with_defaulter_custom_path(self, path: str) -> Self:
        """Serve the defaulting webhook at ``path`` instead of ``/mutate-...``."""
        self._defaulter_path = path
        return self

    def with_validator_custom_path(self, path: str) -> Self:
        """Serve the validating webhook at ``path`` instead of ``/validate-...``."""
        self._validator_path = path
        return self

    def with_conversion(self, *spokes: type[CustomResource]) -> Self:
        """Serve conversion between the ``for_`` type (the hub) and ``spokes``."""
        self._spokes = list(spokes)
        return self

    def complete(self) -> list[str]:
        """Register everything; return the webhook paths."""
        # The webhook package (and aiohttp's server) loads only for operators that use it.
        from pyctrl.webhook import register_conversion, register_defaulter, register_validator

        if self._type is None:
            raise ValueError("call for_() first")
        server = self.manager.webhook_server
        paths = []
        if self._defaulter is not None:
            paths.append(
                register_defaulter(
                    server,
                    self._type,
                    self._defaulter,
                    gvk=self._gvk,
                    path=self._defaulter_path,
                    options=self._defaulter_options,
                )
            )
        if self._validator is not None:
            paths.append(
                register_validator(
                    server,
                    self._type,
                    self._validator,
                    gvk=self._gvk,
                    path=self._validator_path,
                    options=self._validator_options,
                )
            )
        if self._spokes is not None:
            paths.append(register_conversion(server, self._type, self._spokes))
        if not paths:
            raise ValueError("nothing to register: add a defaulter, validator or conversion")
        return paths


def webhook_managed_by(manager: Manager) -> WebhookBuilder:
    """Start registering webhooks on ``manager``'s webhook server."""
    return WebhookBuilder(manager)
