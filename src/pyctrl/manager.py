"""The Manager: runs controllers, webhooks, caches and servers as one process.

A `Manager` holds what an operator's parts share (the `pyctrl.scheme.Scheme`, the
`pyctrl.config.Config`, the `pyctrl.client.Client`, the `pyctrl.cache.Cache` and the
`pyctrl.client.RESTMapper`) and runs every *runnable* (anything with an
``async def start()`` that blocks until cancelled) in controller-runtime's order:

1. HTTP servers: metrics (``:8080/metrics`` by default, ``"0"`` disables) and the
   health probes (``/healthz``, ``/readyz``; off unless an address is given), and the
   `pyctrl.config.CredentialRefresher` that renews exec-plugin, OIDC and GCP tokens
   before they expire and re-reads a rotated service-account token;
2. the webhook server, if any webhook was registered;
3. the cache, then a wait (``cache_sync_timeout``, 2 min) for every informer asked for so far;
4. runnables that do not need leader election;
5. with leader election on, once the Lease is won: controllers and other runnables that
   need it (without leader election they start right away).

With ``Options(cluster_provider=...)`` the manager also engages the clusters a
`pyctrl.cluster.Provider` finds (``manager.fleet``; see `pyctrl.cluster` and
docs/multicluster.md); it starts the provider once the local cache has synced.
``manager.get_cluster(name)`` is an engaged cluster ("" the local one).

With ``Options(sharding=ShardingOptions(...))`` every replica is active: a
`pyctrl.shardelection.SlotElector` (``manager.shards``) holds this replica's share of the
ring's slots, the controllers built for it reconcile only objects in those slots, and
``/readyz`` fails while it holds none.

Before all that, `Manager.start` makes two discovery requests
(`pyctrl.client.RESTClient.check_connection`): a wrong CA, wrong credentials or an
unreachable address stop it at once with `pyctrl.errors.ConnectionCheckError`, whose one
line names the cause; later outages are retried as usual.

It stops in reverse order. Each phase is a TaskGroup nested in the previous one's, so
every task has an owner and one runnable failing stops the manager with its error.
Controllers finish their in-flight reconciles within ``graceful_shutdown_timeout``
(30 s); losing the Lease skips that wait and stops the manager with
`pyctrl.leaderelection.LeaderElectionLostError`, so two managers never reconcile at
once.

`Manager.start` runs inside an application's own event loop and stops when cancelled
(draining; `Manager.force_stop` cuts the drain short); `Manager.run` is the entry point
of an operator process: it handles SIGTERM and SIGINT (the first drains, a second one
forces).
"""

from __future__ import annotations

import asyncio
import contextvars
import signal
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pyctrl._kubernetes import Configuration
from pyctrl.cache import Cache, CacheOptions
from pyctrl.client import Client, Reader, RESTClient, RESTMapper
from pyctrl.cluster import Cluster, Fleet
from pyctrl.config import Config, CredentialRefresher
from pyctrl.controller import Controller
from pyctrl.errors import leaf_errors
from pyctrl.healthz import Checker, ProbeServer, ping
from pyctrl.leaderelection import (
    LeaderElectionConfig,
    LeaderElector,
    LeaseFence,
    RESTLeaseStore,
    in_cluster_namespace,
)
from pyctrl.log import get_logger
from pyctrl.metricsserver import Options as MetricsServerOptions
from pyctrl.metricsserver import check_debug_exposure, parse_address
from pyctrl.recorder import EventRecorder
from pyctrl.scheme import Scheme, default_scheme
from pyctrl.shardelection import RingLeaseStore, ShardingOptions, SlotElector
from pyctrl.watchdog import Watchdog, WatchdogOptions

if TYPE_CHECKING:
    from collections.abc import Collection

    from pyctrl.cluster import Provider
    from pyctrl.metricsserver import Server as MetricsServer
    from pyctrl.webhook import Server as WebhookServer

__all__ = ["Manager", "Options", "Runnable", "parse_address"]

_log = get_logger("pyctrl.manager")


@runtime_checkable
class Runnable(Protocol):
    """Anything the manager runs: ``start()`` blocks until cancelled or failed."""

    async def start(self) -> None:
        """Run until cancelled; raise to stop the manager with an error."""
        ...


@dataclass
class Options:
    """Manager options, with controller-runtime's defaults.

    Attributes:
        scheme: The type registry (default: built-in kinds plus what you add).
        cache: Cache options (namespaces, selectors, transforms, metadata-only types).
        metrics_bind_address: ``host:port`` for ``/metrics``; ``"0"`` disables.
        metrics: How ``/metrics`` is served (controller-runtime's ``Options.Metrics``):
            ``secure_serving``, ``filter_provider`` (e.g.
            `pyctrl.filters.with_authentication_and_authorization`), certificates,
            extra handlers; see `pyctrl.metricsserver.Options`.
        debug_bind_address: ``host:port`` for the `pyctrl.debug` endpoints, served with
            the ``metrics`` options; "" (default) disables. Without a ``filter_provider``
            in those options it must be a loopback address (see
            `pyctrl.metricsserver.check_debug_exposure`).
        debug_allow_unauthenticated: Serve ``/debug`` without authentication on any
            address (logged as a warning).
        health_probe_bind_address: ``host:port`` for ``/healthz`` and ``/readyz``; "" disables.
        leader_election: Run leader-election runnables only while holding the Lease.
        leader_election_id: The Lease name (required with leader election).
        leader_election_namespace: The Lease namespace. Left empty, it is the namespace of
            the pod the manager runs in (its service account's ``namespace`` file), as in
            controller-runtime; outside a cluster it must be given.
        leader_election_release_on_cancel: Release the Lease on shutdown for fast hand-over.
        lease_duration: Seconds (15).
        renew_deadline: Seconds (10).
        retry_period: Seconds (2).
        graceful_shutdown_timeout: Seconds in-flight reconciles get on shutdown (30).
        cache_sync_timeout: Seconds to wait for caches to sync before failing (120).
        webhook_server: The webhook server; created on first use when None.
        field_owner: The field manager written by the client (default ``pyctrl``).
        uncached_types: Types the client reads straight from the API server, never
            through the cache (controller-runtime's ``client.CacheOptions.DisableFor``):
            no informer is started for them.
        cache_unstructured: Read `pyctrl.resource.Unstructured` objects through the
            cache too (controller-runtime's ``client.CacheOptions.Unstructured``); by
            default they are read from the API server.
        user_agent: HTTP User-Agent.
        identity: The leader-election identity (default host name plus a unique suffix).
        sharding: Shard the controllers over every replica (`pyctrl.shardelection`):
            each replica reconciles the objects in its slots. None (the default) keeps one
            active replica, as without it.
        cluster_provider: Finds the clusters to engage besides the local one
            (`pyctrl.providers`: static kubeconfigs, kubeconfig Secrets, ClusterProfiles);
            None engages none (clusters may still be engaged with `Manager.engage`).
        watchdog: The event-loop watchdog (`pyctrl.watchdog`): measures the loop's lag
            and logs the stack of code that blocks it; None turns it off.
    """

    scheme: Scheme | None = None
    cache: CacheOptions | None = None
    metrics_bind_address: str = ":8080"
    metrics: MetricsServerOptions | None = None
    debug_bind_address: str = ""
    debug_allow_unauthenticated: bool = False
    health_probe_bind_address: str = ""
    leader_election: bool = False
    leader_election_id: str = ""
    leader_election_namespace: str = ""
    leader_election_release_on_cancel: bool = False
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    graceful_shutdown_timeout: float = 30.0
    cache_sync_timeout: float = 120.0
    webhook_server: WebhookServer | None = None
    field_owner: str = "pyctrl"
    uncached_types: Collection[type[Any]] = ()
    cache_unstructured: bool = False
    user_agent: str | None = None
    identity: str = ""
    extra_healthz: dict[str, Checker] = field(default_factory=dict)
    sharding: ShardingOptions | None = None
    cluster_provider: Provider | None = None
    watchdog: WatchdogOptions | None = field(default_factory=WatchdogOptions)


class _DebugView:
    """What `pyctrl.debug` reads of a Manager: its controllers' queues and informers."""

    def __init__(self, manager: Manager) -> None:
        self._manager = manager

    def queues(self) -> dict[str, Any]:
        runnables = (*self._manager._leader, *self._manager._others)
        return {r.name: r.queue.statistics() for r in runnables if isinstance(r, Controller)}

    def informers(self) -> list[Any]:
        return list(self._manager.cache.status())


class Manager:
    """Owns the shared client, cache and servers, and runs every runnable.

    Args:
        config: Where the API server is and how to authenticate (`pyctrl.config.get_config`,
            or a kubernetes-asyncio ``Configuration`` such as ``Environment.config``).
        options: See `Options`.

    Build it inside a running event loop (the HTTP session is created on first use).

    Raises:
        ValueError: Leader election without ``leader_election_id``.
        ConfigError: Leader election outside a cluster without ``leader_election_namespace``;
            ``/debug`` unauthenticated beyond loopback, not allowed.
    """

    def __init__(self, config: Config | Configuration, options: Options | None = None) -> None:  # noqa: PLR0915 - one assignment per part the manager owns, in start order
        if isinstance(config, Configuration):
            config = Config.from_configuration(config)
        self.config = config
        self.options = options or Options()
        check_debug_exposure(
            self.options.debug_bind_address,
            self.options.metrics,
            allow_unauthenticated=self.options.debug_allow_unauthenticated,
        )
        if self.options.leader_election:
            if not self.options.leader_election_id:
                raise ValueError("leader_election_id is required when leader election is on")
            if not self.options.leader_election_namespace:
                self.options = replace(
                    self.options, leader_election_namespace=in_cluster_namespace()
                )
        self.scheme = self.options.scheme or default_scheme()
        # The RESTClient counts rest_client_requests_total itself.
        self.rest = RESTClient(config, user_agent=self.options.user_agent)
        self.fence: LeaseFence | None = None
        """With leader election: ends this manager's term by the local clock; fences the
        client's writes and the controllers' reconciles."""
        if self.options.leader_election:
            self.fence = LeaseFence(
                self.options.renew_deadline,
                name=f"{self.options.leader_election_namespace}/{self.options.leader_election_id}",
            )
        self.mapper = RESTMapper(self.rest)
        self.cache = Cache(
            self.rest, mapper=self.mapper, scheme=self.scheme, options=self.options.cache
        )
        self.client = Client(
            self.rest,
            scheme=self.scheme,
            mapper=self.mapper,
            cache=self.cache,
            field_owner=self.options.field_owner,
            uncached_types=self.options.uncached_types,
            cache_unstructured=self.options.cache_unstructured,
            fence=self.fence,
        )
        self.fleet = Fleet(sync_timeout=self.options.cache_sync_timeout)
        """The clusters engaged besides the local one (`pyctrl.cluster.Fleet`)."""
        self.client.cluster_resolver = lambda name: self.get_cluster(name).client
        self.local_cluster = Cluster.of_parts(
            config=config,
            rest=self.rest,
            mapper=self.mapper,
            cache=self.cache,
            client=self.client,
            scheme=self.scheme,
            recorder_for=self.get_event_recorder_for,
        )
        """The manager's own cluster as a `pyctrl.cluster.Cluster` (its client, cache...)."""
        self.credential_refresher: CredentialRefresher = config.refresher()
        """Renews the config's credentials ahead of expiry; runs with the HTTP servers."""
        self._webhook_server = self.options.webhook_server
        self._healthz: dict[str, Checker] = {"ping": ping, **self.options.extra_healthz}
        self._readyz: dict[str, Checker] = {"ping": ping, "informers": self.cache.check_ready}
        self._leader: list[Runnable] = []
        self._others: list[Runnable] = []
        self._controller_names: set[str] = set()
        self._recorders: dict[str, EventRecorder] = {}
        self._recorder_group: asyncio.TaskGroup | None = None
        self._elected = asyncio.Event()
        self._started = asyncio.Event()
        self._running = False
        self.elector: LeaderElector | None = None
        self.shards: SlotElector | None = None
        """This replica's slots, when `Options.sharding` is set."""
        if self.options.sharding is not None:
            self._shard(self.options.sharding)
        self.metrics_server: MetricsServer | None = None
        self.debug_server: MetricsServer | None = None
        self.probe_server: ProbeServer | None = None
        self.watchdog: Watchdog | None = None
        """The event-loop watchdog (`pyctrl.watchdog`), unless `Options.watchdog` is None."""
        if self.options.watchdog is not None:
            self.watchdog = Watchdog(self.options.watchdog)
            if self.options.watchdog.fail_healthz_after is not None:
                self._healthz["event-loop"] = self.watchdog.check

    def _shard(self, sharding: ShardingOptions) -> None:
        if not sharding.namespace:
            sharding = replace(
                sharding,
                namespace=self.options.leader_election_namespace or in_cluster_namespace(),
            )
        self.shards = SlotElector(RingLeaseStore(self.rest), sharding)
        self._others.append(self.shards)
        self._readyz["shards"] = self.shards.check_ready

    def get_cluster(self, name: str) -> Cluster:
        """The engaged cluster ``name``; the local cluster for "".

        Raises:
            ClusterNotFoundError: No cluster of that name is engaged.
        """
        return self.local_cluster if not name else self.fleet.get(name)

    async def engage(self, name: str, cluster: Cluster) -> None:
        """Engage ``cluster`` as ``name`` (`pyctrl.cluster.Fleet.engage`)."""
        await self.fleet.engage(name, cluster)

    async def disengage(self, name: str) -> None:
        """Disengage the cluster ``name`` (`pyctrl.cluster.Fleet.disengage`)."""
        await self.fleet.disengage(name)

    @property
    def metrics_address(self) -> str | None:
        """``host:port`` the metrics server listens on once started; None before or when off.

        With ``metrics_bind_address="127.0.0.1:0"`` (a free port, as tests want) this is
        where to scrape: ``f"http://{manager.metrics_address}/metrics"``. Set from the
        time `wait_started` returns (the servers listen before the caches start).
        """
        return self.metrics_server.address if self.metrics_server is not None else None

    @property
    def health_probe_address(self) -> str | None:
        """``host:port`` of the ``/healthz`` and ``/readyz`` server once started; else None."""
        return self.probe_server.address if self.probe_server is not None else None

    @property
    def debug_address(self) -> str | None:
        """``host:port`` of the ``/debug`` server once started; else None."""
        return self.debug_server.address if self.debug_server is not None else None

    @property
    def webhook_address(self) -> str | None:
        """``host:port`` of the webhook server once started (webhooks registered); else None."""
        return self._webhook_server.address if self._webhook_server is not None else None

    @property
    def api_reader(self) -> Reader:
        """A reader that always reads from the API server, never the cache."""
        return self.client.api_reader

    @property
    def webhook_server(self) -> WebhookServer:
        """The webhook server (created with controller-runtime's defaults on first use)."""
        if self._webhook_server is None:
            from pyctrl.webhook import Server as WebhookServer

            self._webhook_server = WebhookServer()
        return self._webhook_server

    def add(self, runnable: Runnable) -> None:
        """Add a runnable (before start).

        Runnables whose ``need_leader_election`` is True (controllers, by default) run only
        while this manager leads.

        Raises:
            ValueError: a controller of the same name was added already, or, under leader
                election, a leader-only controller was built without ``fence=manager.fence``.
        """
        if self._running:
            raise RuntimeError("runnables must be added before the manager starts")
        if isinstance(runnable, Controller):
            if runnable.name in self._controller_names:
                raise ValueError(
                    f"a controller named {runnable.name!r} already exists: "
                    "give each controller a unique name"
                )
            if (
                runnable.need_leader_election
                and self.fence is not None
                and runnable.fence is not self.fence
            ):
                raise ValueError(
                    f"controller {runnable.name!r} runs while this manager leads but was "
                    "built without its fence: pass Controller(..., fence=manager.fence), "
                    "so that its reconciles stop when the Lease's term ends"
                )
            self._controller_names.add(runnable.name)
        if getattr(runnable, "need_leader_election", False):
            self._leader.append(runnable)
        else:
            self._others.append(runnable)

    @property
    def runnables(self) -> tuple[Runnable, ...]:
        """Every runnable added, those that need leader election first (a read-only view)."""
        return (*self._leader, *self._others)

    def add_healthz_check(self, name: str, check: Checker) -> None:
        """Add a liveness check served under ``/healthz``."""
        self._healthz[name] = check

    def add_readyz_check(self, name: str, check: Checker) -> None:
        """Add a readiness check served under ``/readyz``."""
        self._readyz[name] = check

    def get_event_recorder_for(self, name: str) -> EventRecorder:
        """An event recorder reporting as controller ``name`` (one per name, run by the manager).

        One asked for while the manager runs (from a reconciler, say) starts at once.
        """
        recorder = self._recorders.get(name)
        if recorder is None:
            recorder = EventRecorder(self.client, name, scheme=self.scheme)
            self._recorders[name] = recorder
            if self._recorder_group is not None:
                self._start_recorder(self._recorder_group, recorder)
        return recorder

    @staticmethod
    def _start_recorder(group: asyncio.TaskGroup, recorder: EventRecorder) -> None:
        # A fresh context: a recorder asked for inside a reconcile must not log as it.
        group.create_task(
            recorder.start(), name=f"recorder-{recorder.controller}", context=contextvars.Context()
        )

    async def elected(self) -> None:
        """Wait until this manager leads (at once without leader election)."""
        await self._elected.wait()

    async def wait_started(self) -> None:
        """Wait until every runnable that can start has started (caches synced)."""
        await self._started.wait()

    async def start(self) -> None:
        """Run everything until cancelled; a failing runnable stops it with that error."""
        if self._running:
            raise RuntimeError("the manager was already started")
        self._running = True
        try:
            # A wrong CA, token or address fails here, in one line, before anything starts.
            await self.rest.check_connection(group_version=self._first_watched())
            await self._run_servers()
        except BaseExceptionGroup as group:
            raise _unwrap(group) from None
        finally:
            self._elected.clear()
            await self.rest.aclose()

    def _first_watched(self) -> tuple[str, str] | None:
        """The group and version of the first kind the cache watches, for the start check."""
        for informer in self.cache.status():
            return informer.gvk.group, informer.gvk.version
        return None

    async def _run_servers(self) -> None:
        # The servers' modules (aiohttp's web server, the debug handlers) load here, at
        # start, so that importing the manager stays light.
        from pyctrl.metricsserver import Server as MetricsServer

        async with asyncio.TaskGroup() as servers:
            servers.create_task(self.credential_refresher.start(), name="credential-refresher")
            if self.watchdog is not None:
                servers.create_task(self.watchdog.start(), name="event-loop-watchdog")
            served = self.options.metrics or MetricsServerOptions()
            metrics_address = parse_address(
                self.options.metrics_bind_address
                if served.bind_address is None
                else served.bind_address
            )
            if metrics_address is not None:
                self.metrics_server = MetricsServer(*metrics_address, served, rest=self.rest)
                servers.create_task(self.metrics_server.start(), name="metrics-server")
            debug_address = parse_address(self.options.debug_bind_address)
            if debug_address is not None:
                from pyctrl.debug import handlers as debug_handlers

                self.debug_server = MetricsServer(
                    *debug_address,
                    replace(served, extra_handlers={}),
                    rest=self.rest,
                    handlers=debug_handlers(_DebugView(self)),
                    name="debug",
                )
                servers.create_task(self.debug_server.start(), name="debug-server")
            probe_address = parse_address(self.options.health_probe_bind_address)
            if probe_address is not None:
                self.probe_server = ProbeServer(
                    *probe_address, healthz=self._healthz, readyz=self._readyz
                )
                servers.create_task(self.probe_server.start(), name="probe-server")
            if self._webhook_server is not None and self._webhook_server.paths:
                self._readyz.setdefault("webhook", self._webhook_server.check_started)
                servers.create_task(self._webhook_server.start(), name="webhook-server")
                await self._webhook_server.wait_started()
            # Listening before anything else starts: the addresses are readable then.
            for server in (self.metrics_server, self.debug_server):
                if server is not None:
                    await server.started.wait()
            if self.probe_server is not None:
                await self.probe_server.wait_started()
            await self._run_caches()

    async def _run_caches(self) -> None:
        async with asyncio.TaskGroup() as caches:
            caches.create_task(self.cache.start(), name="cache")
            await self.cache.wait_for_cache_sync(timeout=self.options.cache_sync_timeout)
            await self._run_others()

    async def _run_others(self) -> None:
        async with asyncio.TaskGroup() as others:
            self._recorder_group = others
            try:
                await self._run_others_in(others)
            finally:
                self._recorder_group = None

    async def _run_others_in(self, others: asyncio.TaskGroup) -> None:
        for recorder in self._recorders.values():
            self._start_recorder(others, recorder)
        for runnable in self._others:
            others.create_task(runnable.start(), name=_name(runnable))
        others.create_task(self.fleet.start(), name="fleet")
        if self.options.cluster_provider is not None:
            others.create_task(
                self.options.cluster_provider.start(self.fleet, self.local_cluster),
                name="cluster-provider",
            )
        if self.options.leader_election:
            self.elector = LeaderElector(
                RESTLeaseStore(self.rest),
                LeaderElectionConfig(
                    name=self.options.leader_election_id,
                    namespace=self.options.leader_election_namespace,
                    identity=self.options.identity,
                    lease_duration=self.options.lease_duration,
                    renew_deadline=self.options.renew_deadline,
                    retry_period=self.options.retry_period,
                    release_on_cancel=self.options.leader_election_release_on_cancel,
                ),
                fence=self.fence,
            )
            self._started.set()
            await self.elector.acquire()
            others.create_task(self._hold(self.elector), name="leader-election")
        await self._run_leaders()

    async def _hold(self, elector: LeaderElector) -> None:
        try:
            await elector.hold()
        except BaseException as exc:
            if not isinstance(exc, asyncio.CancelledError):
                # Lost the Lease: stop reconciling now, without the graceful wait.
                self.force_stop()
            raise

    def force_stop(self) -> None:
        """Cut shutdown short: in-flight reconciles are cancelled instead of waited for.

        `run` calls it on the second signal, and losing the Lease does too; an
        application embedding the manager calls it after cancelling `start`.
        """
        for runnable in (*self._leader, *self._others):
            if isinstance(runnable, Controller):
                runnable.force_stop()

    async def _run_leaders(self) -> None:
        async with asyncio.TaskGroup() as leaders:
            for runnable in self._leader:
                if isinstance(runnable, Controller):
                    runnable.graceful_shutdown_timeout = min(
                        runnable.graceful_shutdown_timeout, self.options.graceful_shutdown_timeout
                    )
                leaders.create_task(runnable.start(), name=_name(runnable))
            self._elected.set()
            self._started.set()
            _log.info("manager started", leader_runnables=len(self._leader))
            await asyncio.Event().wait()

    async def run(self) -> None:
        """Run as an operator process: until SIGTERM/SIGINT (a second signal forces)."""
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        signals = 0

        def on_signal(sig: signal.Signals) -> None:
            nonlocal signals
            signals += 1
            if signals == 1:
                _log.info("shutting down gracefully", signal=sig.name)
                task.cancel()
            else:
                # Cancelling again would not reach the controllers: their TaskGroups are
                # already shutting down and ignore it. Force them directly.
                _log.warning("second signal: forcing shutdown", signal=sig.name)
                self.force_stop()

        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, on_signal, sig)
        try:
            await self.start()
        except asyncio.CancelledError:
            if signals == 0:
                raise
            task.uncancel()
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)


def _name(runnable: object) -> str:
    return str(getattr(runnable, "name", type(runnable).__name__))


def _unwrap(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one underlying error, if the group holds a single one (through nesting)."""
    leaves = leaf_errors(group)
    return leaves[0] if len(leaves) == 1 else group
