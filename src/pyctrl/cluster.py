"""Clusters: one API server's client, cache, REST mapper and recorders; a fleet of them.

A `Cluster` is controller-runtime's ``cluster.Cluster``: what a manager holds for the
cluster it runs against (its *local* cluster), bundled so that an operator can hold the
same for other clusters. A `Manager <pyctrl.manager.Manager>` has its local cluster
(``manager.get_cluster("")``) and may *engage* more, named, as multicluster-runtime's
manager does: a `Provider` (`pyctrl.providers`) discovers clusters and tells the
manager's `Fleet` to engage or disengage them.

- Engaging a cluster starts its cache, and the sources that multi-cluster controllers
  (``controller_managed_by(manager).for_(T).multicluster()``) watch it with, in a task of
  its own: their events enqueue `pyctrl.reconcile.Request` keys whose ``cluster`` is the
  cluster's name, into the controller's one queue (fair across clusters: see
  `pyctrl.workqueue.by_cluster`).
- Disengaging it (its kubeconfig Secret deleted, say) cancels that task alone, within
  ``stop_timeout``: its informers and sources stop, other clusters and the manager run on.
- A cluster that fails (its cache cannot start) is logged, counted
  (``pyctrl_cluster_engagements_total{event="failed"}``) and dropped; the manager and the
  other clusters run on, and the provider may engage it again.
- Engaging a name already engaged with another `Cluster` replaces it (a changed
  kubeconfig): the old one is disengaged first.

Reconcilers reach a request's cluster with ``client.for_cluster(request.cluster)`` or
``manager.get_cluster(request.cluster)``; "" is the local cluster. Leader election and
sharding stay with the local cluster.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

import yaml

from pyctrl import metrics
from pyctrl._kubernetes import Configuration
from pyctrl.cache import Cache, CacheOptions
from pyctrl.client import Client, Reader, RESTClient, RESTMapper
from pyctrl.config import Config, load_kubeconfig
from pyctrl.errors import ClusterNotFoundError
from pyctrl.log import get_logger
from pyctrl.recorder import EventRecorder
from pyctrl.scheme import Scheme, default_scheme
from pyctrl.workqueue import Trigger, event_trigger

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Mapping, Sequence
    from datetime import timedelta

    from pyctrl.handler import RateLimitingQueue
    from pyctrl.reconcile import Request

__all__ = [
    "Aware",
    "Cluster",
    "ClusterNotFoundError",
    "Fleet",
    "Provider",
    "cluster_queue",
    "config_from_kubeconfig",
]

_log = get_logger("pyctrl.cluster")

Watcher: TypeAlias = "Callable[[str, Cluster], Sequence[Callable[[], Coroutine[Any, Any, None]]]]"
"""``watcher(name, cluster)``: the coroutine functions to run while ``cluster`` is engaged."""


class Cluster:
    """The client, cache, REST mapper and event recorders of one API server.

    Args:
        config: Where the API server is and how to authenticate (a `pyctrl.config.Config`
            or a kubernetes-asyncio ``Configuration``).
        name: The cluster's name in a fleet ("" for a manager's local cluster).
        scheme: The type registry (default: `pyctrl.scheme.default_scheme`).
        cache_options: What the cache holds (default: everything, every namespace).
        field_owner: The field manager of the client's writes.
        user_agent: HTTP User-Agent.

    `start` runs the cache (and the recorders) until cancelled, then closes the HTTP
    session. Build it inside a running event loop.
    """

    def __init__(
        self,
        config: Config | Configuration,
        *,
        name: str = "",
        scheme: Scheme | None = None,
        cache_options: CacheOptions | None = None,
        field_owner: str = "pyctrl",
        user_agent: str | None = None,
    ) -> None:
        if isinstance(config, Configuration):
            config = Config.from_configuration(config)
        self.name = name
        self.config = config
        self.scheme = scheme or default_scheme()
        self.rest = RESTClient(config, user_agent=user_agent)
        self.mapper = RESTMapper(self.rest)
        self.cache = Cache(self.rest, mapper=self.mapper, scheme=self.scheme, options=cache_options)
        self.client = Client(
            self.rest,
            scheme=self.scheme,
            mapper=self.mapper,
            cache=self.cache,
            field_owner=field_owner,
        )
        self._recorders: dict[str, EventRecorder] = {}
        self._group: asyncio.TaskGroup | None = None
        self._recorder_for: Callable[[str], EventRecorder] | None = None

    @classmethod
    def of_parts(
        cls,
        *,
        config: Config,
        rest: RESTClient,
        mapper: RESTMapper,
        cache: Cache,
        client: Client,
        scheme: Scheme,
        recorder_for: Callable[[str], EventRecorder],
        name: str = "",
    ) -> Cluster:
        """A view of parts owned elsewhere (a manager's local cluster); `start` is refused."""
        cluster = cls.__new__(cls)
        cluster.name, cluster.config, cluster.scheme = name, config, scheme
        cluster.rest, cluster.mapper, cluster.cache, cluster.client = rest, mapper, cache, client
        cluster._recorders, cluster._group = {}, None
        cluster._recorder_for = recorder_for
        return cluster

    @property
    def api_reader(self) -> Reader:
        """A reader that always reads from this cluster's API server, never the cache."""
        return self.client.api_reader

    def get_event_recorder_for(self, controller: str) -> EventRecorder:
        """An event recorder writing this cluster's Events as ``controller`` (one per name)."""
        if self._recorder_for is not None:  # a manager's parts: the manager runs them
            return self._recorder_for(controller)
        recorder = self._recorders.get(controller)
        if recorder is None:
            recorder = self._recorders[controller] = EventRecorder(
                self.client, controller, scheme=self.scheme
            )
            if self._group is not None:
                self._group.create_task(recorder.start(), context=contextvars.Context())
        return recorder

    async def start(self) -> None:
        """Run the cache and recorders until cancelled; then close the HTTP session.

        Raises:
            RuntimeError: The cluster is a view of a manager's parts (the manager runs them).
        """
        if self._recorder_for is not None:
            raise RuntimeError(f"cluster {self.name!r} is run by its manager, not by start()")
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                group.create_task(self.cache.start(), name=f"cluster-{self.name}-cache")
                for recorder in self._recorders.values():
                    group.create_task(recorder.start(), context=contextvars.Context())
                await asyncio.Event().wait()
        finally:
            self._group = None
            await self.rest.aclose()

    async def wait_for_cache_sync(self, timeout: float | None = 120.0) -> None:  # noqa: ASYNC109
        """Wait until this cluster's cache runs and every informer listed once."""
        await self.cache.wait_for_cache_sync(timeout=timeout)

    def __repr__(self) -> str:
        return f"<Cluster {self.name or '(local)'!r} {self.config.host}>"


async def config_from_kubeconfig(
    kubeconfig: bytes | str | Mapping[str, Any], *, context: str | None = None
) -> Config:
    """A `pyctrl.config.Config` from a kubeconfig's content (YAML text or a dict).

    As kubeconfig Secrets hold them. Paths inside it are resolved from the working
    directory; data fields (``certificate-authority-data``...) need none.

    Raises:
        ConfigError: The content is not a valid kubeconfig (the message says why).
    """
    if isinstance(kubeconfig, bytes):
        kubeconfig = kubeconfig.decode()
    text = kubeconfig if isinstance(kubeconfig, str) else yaml.safe_dump(dict(kubeconfig))
    with tempfile.TemporaryDirectory(prefix="pyctrl-kubeconfig-") as tmp:
        path = Path(tmp) / "kubeconfig"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as file:
            file.write(text)
        return await load_kubeconfig(path, context=context)


@runtime_checkable
class Aware(Protocol):
    """What a `Provider` tells about clusters (multicluster-runtime's ``multicluster.Aware``)."""

    async def engage(self, name: str, cluster: Cluster) -> None:
        """Start using ``cluster`` under ``name`` (replacing another of that name)."""
        ...

    async def disengage(self, name: str) -> None:
        """Stop using the cluster ``name``; nothing if none is engaged."""
        ...


@runtime_checkable
class Provider(Protocol):
    """Discovers clusters and engages them (see `pyctrl.providers`).

    ``start`` runs until cancelled, calling ``aware.engage`` for each cluster that appears
    (again when its access changes) and ``aware.disengage`` for each that goes. ``local``
    is the manager's own cluster, whose cache it may watch (kubeconfig Secrets,
    ClusterProfiles); it has synced when ``start`` is called.
    """

    async def start(self, aware: Aware, local: Cluster) -> None:
        """Engage and disengage clusters until cancelled."""
        ...


class _ClusterQueue:
    """A controller's queue as the sources of one engaged cluster see it.

    Every key added is the request in that cluster; every trigger names it
    (``ConfigMap@b``).
    """

    __slots__ = ("_cluster", "_queue", "records_triggers")

    def __init__(self, queue: RateLimitingQueue, cluster: str) -> None:
        self._queue, self._cluster = queue, cluster
        self.records_triggers: bool = getattr(queue, "records_triggers", False)

    def _trigger(self, trigger: Trigger | None) -> Trigger | None:
        if trigger is None and self.records_triggers:
            trigger = event_trigger.get()  # what the underlying queue would record
        if trigger is None:
            return None
        return Trigger(
            trigger.kind,
            f"{trigger.source}@{self._cluster}",
            trigger.object,
            trigger.resource_version,
            trigger.span_context,
        )

    def add(self, item: Request, *, priority: int = 0, trigger: Trigger | None = None) -> None:
        self._queue.add(
            item.in_cluster(self._cluster), priority=priority, trigger=self._trigger(trigger)
        )

    def add_after(
        self,
        item: Request,
        delay: float | timedelta,
        *,
        priority: int = 0,
        trigger: Trigger | None = None,
    ) -> None:
        self._queue.add_after(
            item.in_cluster(self._cluster), delay, priority=priority, trigger=self._trigger(trigger)
        )

    def add_rate_limited(
        self, item: Request, *, priority: int = 0, trigger: Trigger | None = None
    ) -> None:
        self._queue.add_rate_limited(
            item.in_cluster(self._cluster), priority=priority, trigger=self._trigger(trigger)
        )


def cluster_queue(queue: RateLimitingQueue, cluster: str) -> RateLimitingQueue:
    """``queue`` as seen from ``cluster``: each request added gets that ``cluster``."""
    return _ClusterQueue(queue, cluster)


class Fleet:
    """The clusters a manager has engaged, each run in a task of its own.

    The manager owns it (``manager.fleet``) and runs it; it is the `Aware` its providers
    talk to. Multi-cluster controllers add a *watcher*: a function of a cluster's name
    and `Cluster` returning the coroutine functions (their sources) to run while that
    cluster is engaged.

    Args:
        sync_timeout: Seconds an engaged cluster's cache gets to sync before it counts
            as failed.
        stop_timeout: Seconds a disengaged cluster gets to stop before its task is left
            behind (logged).
    """

    def __init__(self, *, sync_timeout: float = 120.0, stop_timeout: float = 10.0) -> None:
        self._sync_timeout = sync_timeout
        self._stop_timeout = stop_timeout
        self._clusters: dict[str, Cluster] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._groups: dict[str, asyncio.TaskGroup] = {}
        self._synced: dict[str, asyncio.Event] = {}
        self._watchers: list[
            Callable[[str, Cluster], Sequence[Callable[[], Coroutine[Any, Any, None]]]]
        ] = []
        self._group: asyncio.TaskGroup | None = None
        self._changed = asyncio.Condition()

    @property
    def names(self) -> tuple[str, ...]:
        """The names of the engaged clusters, sorted."""
        return tuple(sorted(self._clusters))

    def __contains__(self, name: object) -> bool:
        return name in self._clusters

    def get(self, name: str) -> Cluster:
        """The engaged cluster ``name``.

        Raises:
            ClusterNotFoundError: None of that name is engaged.
        """
        try:
            return self._clusters[name]
        except KeyError:
            engaged = ", ".join(self.names) or "none"
            raise ClusterNotFoundError(
                f"cluster {name!r} is not engaged (engaged: {engaged})"
            ) from None

    def add_watcher(self, watcher: Watcher) -> None:
        """Run ``watcher``'s coroutines for every cluster engaged, now and later."""
        self._watchers.append(watcher)
        for name, group in self._groups.items():
            for run in watcher(name, self._clusters[name]):
                group.create_task(run(), context=contextvars.Context())

    async def engage(self, name: str, cluster: Cluster) -> None:
        """Engage ``cluster`` as ``name`` (see the module documentation)."""
        if not name:
            raise ValueError("an engaged cluster needs a name ('' is the local cluster)")
        if self._clusters.get(name) is cluster:
            return
        if name in self._clusters:
            await self.disengage(name)
        cluster.name = name
        self._clusters[name] = cluster
        self._synced[name] = asyncio.Event()
        metrics.engaged_clusters.set(len(self._clusters))
        if self._group is not None:
            self._launch(self._group, name, cluster)
        await self._notify()

    def _launch(self, group: asyncio.TaskGroup, name: str, cluster: Cluster) -> None:
        self._tasks[name] = group.create_task(
            self._run(name, cluster), name=f"cluster-{name}", context=contextvars.Context()
        )

    async def disengage(self, name: str) -> None:
        """Stop the cluster ``name`` (its cache and sources) and forget it."""
        cluster = self._clusters.pop(name, None)
        if cluster is None:
            return
        self._synced.pop(name, None)
        metrics.engaged_clusters.set(len(self._clusters))
        metrics.cluster_engagements_total.labels(name, "disengaged").inc()
        task = self._tasks.pop(name, None)
        if task is not None and not task.done():
            task.cancel()
            _, pending = await asyncio.wait({task}, timeout=self._stop_timeout)
            if pending:
                _log.warning("cluster did not stop in time", cluster=name)
        _log.info("cluster disengaged", cluster=name)
        await self._notify()

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def wait_engaged(
        self,
        name: str,
        *,
        engaged: bool = True,
        synced: bool = True,
        timeout: float = 30.0,  # noqa: ASYNC109
    ) -> None:
        """Wait until ``name`` is engaged (and its cache synced), or with ``engaged=False`` gone.

        Raises:
            TimeoutError: Not so within ``timeout`` seconds (the message says which).
            ClusterNotFoundError: It was disengaged again while its cache synced.
        """
        state = "engaged and synced" if engaged and synced else "engaged" if engaged else "gone"
        try:
            async with asyncio.timeout(timeout):
                async with self._changed:
                    await self._changed.wait_for(lambda: (name in self._clusters) == engaged)
                event = self._synced.get(name)
                if engaged and synced:
                    if event is None:  # disengaged again meanwhile
                        raise ClusterNotFoundError(
                            f"cluster {name!r} was disengaged while waited for"
                        )
                    await event.wait()
        except TimeoutError:
            raise TimeoutError(f"cluster {name!r} was not {state} within {timeout:g}s") from None

    async def start(self) -> None:
        """Run the engaged clusters until cancelled; clusters engaged later start at once."""
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                for name, cluster in self._clusters.items():
                    self._launch(group, name, cluster)
                await asyncio.Event().wait()
        finally:
            self._group = None

    async def _run(self, name: str, cluster: Cluster) -> None:
        try:
            async with asyncio.TaskGroup() as group:
                self._groups[name] = group
                runs = [run for watcher in self._watchers for run in watcher(name, cluster)]
                group.create_task(cluster.start(), name=f"cluster-{name}")
                for run in runs:
                    group.create_task(run(), name=f"cluster-{name}-source")
                await cluster.wait_for_cache_sync(timeout=self._sync_timeout)
                metrics.cluster_engagements_total.labels(name, "engaged").inc()
                _log.info("cluster engaged", cluster=name, host=cluster.config.host)
                synced = self._synced.get(name)
                if synced is not None:
                    synced.set()
                await asyncio.Event().wait()
        except Exception as exc:  # one cluster failing must not stop the others
            _log.error("cluster failed; disengaging it", cluster=name, error=repr(exc))
            metrics.cluster_engagements_total.labels(name, "failed").inc()
            if self._clusters.get(name) is cluster:
                self._tasks.pop(name, None)
                await self.disengage(name)
        finally:
            self._groups.pop(name, None)
