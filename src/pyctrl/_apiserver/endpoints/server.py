"""The embedded Kubernetes API server: kube-apiserver's REST API over aiohttp.

:class:`APIServer` serves ``/api/v1/...`` and ``/apis/{group}/{version}/...`` for the built-in
resource types and for every CustomResourceDefinition created through it, with the verbs,
status codes, ``Status`` bodies, headers, watch stream format and content negotiation
(JSON, YAML, ``Table``, ``PartialObjectMetadata``) of kube-apiserver, so that kubectl,
client-go-style clients and kubernetes_asyncio talk to it as to a real cluster. Requests need
``Authorization: Bearer <token>`` with one of the configured tokens (``/healthz``,
``/livez``, ``/readyz`` and ``/version`` are open, as kube-apiserver allows them for
``system:anonymous``).

This module holds the server itself: construction, the bootstrap objects, the listener
(TLS), its lifecycle and the controllers it runs. The request path is cut as
k8s.io/apiserver's ``pkg/endpoints`` is: `pyctrl._apiserver.endpoints.filters`
(authentication, authorization, error recovery), `pyctrl._apiserver.endpoints.installer`
(routing to a resource and verb), `pyctrl._apiserver.endpoints.handlers` (one module per verb
family), `pyctrl._apiserver.endpoints.negotiation` and
`pyctrl._apiserver.endpoints.responsewriters`. Discovery and OpenAPI documents come from
`pyctrl._apiserver.discovery` and `pyctrl._apiserver.openapi`; the semantics of each verb from
the registry (`pyctrl._apiserver.registry.generic`); watches from `pyctrl._apiserver.storage`.

Objects live in memory (`pyctrl._apiserver.storage.store`); ``restart()`` (also
``faults.restart()``) drops every connection and serves again on the same port with the
same data, and ``faults`` injects failures. See docs/envtest-server.md for what is
implemented and where it differs from kube-apiserver.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
from typing import TYPE_CHECKING

from aiohttp import web

from pyctrl._apiserver import discovery as _discovery
from pyctrl._apiserver.admission.plugin.policy.plugin import PolicyPlugin
from pyctrl._apiserver.authentication import Authenticator
from pyctrl._apiserver.authorization import BOOTSTRAP_POLICY, Authorizer, cel_authorize
from pyctrl._apiserver.controllers.manager import ControllerManager
from pyctrl._apiserver.endpoints.filters import API_ROUTE, handler_chain, recovered
from pyctrl._apiserver.endpoints.handlers.rest import MAX_BODY
from pyctrl._apiserver.endpoints.installer import dispatch
from pyctrl._apiserver.endpoints.request import Router
from pyctrl._apiserver.faults import Faults
from pyctrl._apiserver.openapi import builder as _openapi
from pyctrl._apiserver.registry.generic import NAMESPACES, RequestContext, Stores, meta_of
from pyctrl._apiserver.scheme.resources import Registry, ResourceType, builtin_types
from pyctrl._apiserver.storage.store import Store
from pyctrl._apiserver.storage.watch import WatchHub
from pyctrl.clock import Clock, RealClock
from pyctrl.log import get_logger

if TYPE_CHECKING:
    import ssl
    from collections.abc import Iterable
    from types import TracebackType

    from pyctrl._apiserver.admission.interfaces import AdmissionHook, ConversionHook

__all__ = ["APIServer"]

_log = get_logger("pyctrl.envtest")


class APIServer:
    """An in-process Kubernetes API server (see the module docstring)."""

    def __init__(
        self,
        *,
        tokens: Iterable[str],
        ssl_context: ssl.SSLContext | None,
        host: str = "127.0.0.1",
        port: int = 0,
        history_size: int = 10_000,
        garbage_collector: bool = True,
        bookmark_interval: float = 60.0,
        watch_queue_size: int = 10_000,
        clock: Clock | None = None,
    ) -> None:
        if bookmark_interval <= 0:
            raise ValueError(f"bookmark_interval must be positive, got {bookmark_interval}")
        if watch_queue_size < 1:
            raise ValueError(f"watch_queue_size must be at least 1, got {watch_queue_size}")
        self.authn = Authenticator(tokens, service_account_uid=self._service_account_uid)
        """Bearer tokens to users (`pyctrl._apiserver.authentication`); `add_user` adds some."""
        self._ssl = ssl_context
        self.host = host
        self.port = port
        self.clock: Clock = clock or RealClock()
        """The server's time: watch timeouts, bookmarks, injected latency and watch delays."""
        self.bookmark_interval = bookmark_interval
        self.watch_queue_size = watch_queue_size
        self.sharded_list_and_watch = True
        """The ``ShardedListAndWatch`` feature gate (KEP-5866): on, lists and watches honour
        ``shardSelector`` and lists echo it in ``metadata.shardInfo``; off, the parameter is
        ignored, as a server before Kubernetes 1.36 (or with the gate off) does."""
        self.registry = Registry(builtin_types())
        self.router = Router(self.registry)
        """Request paths to served resources (`endpoints.request.Router`)."""
        self.store = Store(history_size)
        self.hub = WatchHub()
        self.store.add_listener(self.hub.dispatch)
        self.authz = Authorizer(self.store)
        """RBAC over the stored roles and bindings (`pyctrl._apiserver.authorization`)."""
        self.policies = PolicyPlugin(self, authorize=cel_authorize(self.authz))
        """The admission policies' plugin, first in `admission` (its ``audit`` sink)."""
        self.admission: list[AdmissionHook] = [self.policies]
        self.conversion: ConversionHook | None = None
        self.stores = Stores(
            self.store, self.registry, admission=self.admission, conversion=lambda: self.conversion
        )
        """The store of each served resource (`registry.generic.ResourceStore`)."""
        self.converter = self.stores.converter
        """Conversion between the served types' versions (for admission plugins)."""
        self.controllers = ControllerManager(
            self.stores, self.hub, garbage_collector=garbage_collector
        )
        """The garbage collector, namespace and CRD controllers (`_apiserver.controllers`)."""
        self.faults = Faults(
            drop_watches=self._drop_watches,
            compact=self._compact,
            restart=self.restart,
            clock=self.clock,
        )
        self.url = ""
        self._dispatch = functools.partial(dispatch, self)
        self._runner: web.AppRunner | None = None
        self._controllers_task: asyncio.Task[None] | None = None
        self._bootstrapped = False

    # --- lifecycle ------------------------------------------------------------------------

    async def __aenter__(self) -> APIServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Bind and serve; returns once requests are accepted."""
        if self._runner is not None:
            raise RuntimeError("APIServer is already started")
        if self._controllers_task is None:
            # The server is started and stopped by its caller rather than run as one
            # coroutine, so it owns this task directly: a failure is logged at once, makes
            # /livez and /readyz fail and wait_idle raise, and is raised again by aclose.
            self._controllers_task = asyncio.create_task(
                self.controllers.run(), name="envtest-controllers"
            )
            self._controllers_task.add_done_callback(self._controllers_stopped)
        await self._start_http(self.port)
        if not self._bootstrapped:
            await self._bootstrap()
            self._bootstrapped = True
            # The built-in types' watch caches start with the server.
            for key in self.registry.storage_keys():
                self.registry.cache_start.setdefault(key, self.store.rv)

    async def _start_http(self, port: int) -> None:
        app = web.Application(
            client_max_size=MAX_BODY + 1024,
            middlewares=[handler_chain(self.authn, self.authz, self.faults)],
        )
        _discovery.add_routes(app, self)
        _openapi.add_routes(app, self)
        for path in ("/healthz", "/livez", "/readyz"):
            app.router.add_get(path, self._health)
            app.router.add_get(path + "/{check:.*}", self._health)
        app.router.add_route("*", "/{tail:.*}", self._handle, name=API_ROUTE)
        # A client closing its connection cancels its request, as the request's context
        # is cancelled in kube-apiserver: a watch ends at once, not at its next event.
        runner = web.AppRunner(
            app,
            handle_signals=False,
            access_log=None,
            shutdown_timeout=2.0,
            handler_cancellation=True,
        )
        await runner.setup()
        site = web.TCPSite(runner, self.host, port, ssl_context=self._ssl, reuse_address=True)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        addresses = runner.addresses  # the bound sockets' names: the port when 0 was asked
        if addresses:
            self.port = int(addresses[0][1])
        scheme = "https" if self._ssl is not None else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.url = f"{scheme}://{host}:{self.port}"

    async def _stop_http(self) -> None:
        self.hub.close_all("server stopping")
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def aclose(self) -> None:
        """Close every watch and the listener, and stop the controllers (bounded)."""
        await self._stop_http()
        task, self._controllers_task = self._controllers_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def restart(self) -> None:
        """Drop every connection, then serve again on the same port with the same data."""
        if self._runner is None:
            raise RuntimeError("APIServer is not started")
        port = self.port
        await self._stop_http()
        await self._start_http(port)

    def _controllers_stopped(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and (error := task.exception()) is not None:
            _log.error("the embedded API server's controllers failed", exc_info=error)

    def _controllers_failure(self) -> BaseException | None:
        task = self._controllers_task
        if task is None or not task.done() or task.cancelled():
            return None
        return task.exception()

    async def wait_idle(self) -> None:
        """Wait until the built-in controllers have processed every pending change.

        Raises:
            RuntimeError: the controllers failed (garbage collector, namespace or CRD
                controller); the cause is chained.
        """
        task = self._controllers_task
        if task is None:
            await self.controllers.wait_idle()
            return
        async with asyncio.TaskGroup() as tg:
            idle = tg.create_task(self.controllers.wait_idle())
            await asyncio.wait({idle, task}, return_when=asyncio.FIRST_COMPLETED)
            idle.cancel()
        if (error := self._controllers_failure()) is not None:
            raise RuntimeError("the embedded API server's controllers failed") from error

    async def _bootstrap(self) -> None:
        ctx = RequestContext(field_manager="kube-apiserver")
        ns_rt = self._rt("", "v1", "namespaces")
        for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
            if self.store.get(NAMESPACES, "", name) is None:
                await self.stores.for_type(ns_rt).create(
                    ctx,
                    "",
                    {"metadata": {"name": name}},
                )
        svc_rt = self._rt("", "v1", "services")
        if self.store.get(("", "services"), "default", "kubernetes") is None:
            await self.stores.for_type(svc_rt).create(
                ctx,
                "default",
                {
                    "metadata": {
                        "name": "kubernetes",
                        "labels": {"component": "apiserver", "provider": "kubernetes"},
                    },
                    "spec": {
                        "clusterIP": "10.0.0.1",
                        "ports": [
                            {
                                "name": "https",
                                "port": 443,
                                "protocol": "TCP",
                                "targetPort": self.port,
                            }
                        ],
                    },
                },
            )
        pc_rt = self._rt("scheduling.k8s.io", "v1", "priorityclasses")
        for name, value in (
            ("system-cluster-critical", 2000000000),
            ("system-node-critical", 2000001000),
        ):
            if self.store.get(pc_rt.storage_key, "", name) is None:
                await self.stores.for_type(pc_rt).create(
                    ctx,
                    "",
                    {
                        "metadata": {"name": name},
                        "value": value,
                        "description": "Used for system critical pods that must run in the "
                        "cluster, but can be moved to another node if necessary."
                        if name == "system-cluster-critical"
                        else "Used for system critical pods that must not be moved from their "
                        "current node.",
                        "preemptionPolicy": "PreemptLowerPriority",
                    },
                )
        for plural, obj in BOOTSTRAP_POLICY:
            rt = self._rt("rbac.authorization.k8s.io", "v1", plural)
            if self.store.get(rt.storage_key, "", obj["metadata"]["name"]) is None:
                await self.stores.for_type(rt).create(ctx, "", copy.deepcopy(obj))

    def _rt(self, group: str, version: str, plural: str) -> ResourceType:
        rt = self.registry.lookup(group, version, plural)
        if rt is None:
            raise RuntimeError(f"built-in resource {plural}.{group}/{version} is missing")
        return rt

    # --- faults ---------------------------------------------------------------------------

    def _drop_watches(self) -> int:
        return self.hub.close_all("dropped by fault injection")

    def _compact(self) -> None:
        self.store.compact()
        self.stores.drop_snapshots()

    # --- HTTP plumbing --------------------------------------------------------------------

    def add_user(self, name: str, groups: Iterable[str] = ()) -> str:
        """Add a user that authenticates with the returned bearer token.

        Its requests are authorized by RBAC (unless ``groups`` has ``system:masters``);
        it is in ``system:authenticated``, which may read discovery as on a cluster.
        """
        return self.authn.add_user(name, groups)

    def _service_account_uid(self, namespace: str, name: str) -> str | None:
        stored = self.store.get(("", "serviceaccounts"), namespace, name)
        return str(meta_of(stored).get("uid", "")) if stored is not None else None

    async def _health(self, request: web.Request) -> web.Response:
        del request
        if self._controllers_failure() is not None:
            return web.Response(status=500, text="controllers failed", content_type="text/plain")
        return web.Response(text="ok", content_type="text/plain")

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        return await recovered(request, self._dispatch)
