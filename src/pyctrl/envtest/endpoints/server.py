"""The embedded Kubernetes API server: kube-apiserver's REST API over aiohttp.

:class:`APIServer` serves ``/api/v1/...`` and ``/apis/{group}/{version}/...`` for the built-in
resource types and for every CustomResourceDefinition created through it, with the verbs,
status codes, ``Status`` bodies, headers, watch stream format and content negotiation
(JSON, YAML, ``Table``, ``PartialObjectMetadata``) of kube-apiserver, so that kubectl,
client-go-style clients and kubernetes_asyncio talk to it as to a real cluster. Requests need
``Authorization: Bearer <token>`` with one of the configured tokens (``/healthz``,
``/livez``, ``/readyz`` and ``/version`` are open, as kube-apiserver allows them for
``system:anonymous``). Discovery and OpenAPI documents come from ``_discovery`` and
``_openapi``; the semantics of each verb from ``_api``; watches from ``_watch``.

Objects live in memory (``_store``); ``restart()`` (also ``faults.restart()``) drops every
connection and serves again on the same port with the same data, and ``faults`` injects
failures. See docs/envtest-server.md for what is implemented and where it differs from
kube-apiserver.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import logging
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
import yaml
from aiohttp import web

from pyctrl._ids import fast_uuid4
from pyctrl.envtest import discovery as _discovery
from pyctrl.envtest.admission.interfaces import REQUEST_USER, UserInfo
from pyctrl.envtest.apimachinery.errors import (
    StatusError,
    bad_request,
    field_forbidden,
    field_invalid,
    field_not_supported,
    field_required,
    invalid,
    method_not_allowed,
    not_acceptable,
    not_found,
    parse_resource_version,
    resource_version_problem,
    unauthorized,
    unsupported_media_type,
)
from pyctrl.envtest.apimachinery.fields import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)
from pyctrl.envtest.authentication import Authenticator, User, token_request, token_review
from pyctrl.envtest.authorization import (
    BOOTSTRAP_POLICY,
    Authorizer,
    forbidden_error,
    request_attributes,
    subject_access_review,
)
from pyctrl.envtest.controllers.crd import CRDController
from pyctrl.envtest.controllers.garbagecollector import Controllers
from pyctrl.envtest.endpoints import protobuf as _protobuf
from pyctrl.envtest.endpoints import yamlcodec as _yaml
from pyctrl.envtest.endpoints.table import partial_metadata, to_table
from pyctrl.envtest.faults import Faults
from pyctrl.envtest.openapi import builder as _openapi
from pyctrl.envtest.registry.eviction import evict
from pyctrl.envtest.registry.generic import (
    API,
    NAMESPACES,
    DeleteOptions,
    WriteOptions,
    meta_of,
)
from pyctrl.envtest.scheme.resources import Registry, ResourceType, builtin_types
from pyctrl.envtest.storage.store import Store, TooOld, check_nesting
from pyctrl.envtest.storage.watch import Watcher, WatchHub, encode_event
from pyctrl.log import get_logger
from pyctrl.sharding import ShardSelector, ShardSelectorError
from pyctrl.sharding import parse as parse_shard_selector

if TYPE_CHECKING:
    import ssl
    from collections.abc import Hashable, Iterable
    from types import TracebackType

    from pyctrl.envtest.admission.interfaces import AdmissionHook, ConversionHook

logger = logging.getLogger("pyctrl.envtest.server")

_log = get_logger("pyctrl.envtest")
_PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version"})
_USER = web.RequestKey("pyctrl_envtest_user", User)
"""Where the middleware leaves the authenticated `User` on the aiohttp request."""
_REVIEWS = {
    "/apis/authentication.k8s.io/v1/tokenreviews": "TokenReview",
    "/apis/authorization.k8s.io/v1/subjectaccessreviews": "SubjectAccessReview",
    "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews": "SelfSubjectAccessReview",
}
_JSON = "application/json"
_YAML = "application/yaml"
_PROTOBUF = "application/vnd.kubernetes.protobuf"
_PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
    "application/apply-patch+cbor": "apply-cbor",
}
_MAX_BODY = 3 * 1024 * 1024
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_INCLUDE_VALUES = ("", "None", "Metadata", "Object")


@dataclass(frozen=True)
class _Negotiated:
    """What representation the client asked for."""

    kind: str  # "json", "yaml", "table", "meta"
    version: str = "v1"


# Request key of the deprecation warning of a deprecated CRD version.
_DEPRECATION = web.RequestKey("pyctrl.envtest.deprecation", str)


def _page_not_found() -> web.Response:
    """The answer of kube-apiserver's mux for a path no API serves."""
    return web.Response(status=404, text="404 page not found\n", content_type="text/plain")


@dataclass(frozen=True)
class _Target:
    rt: ResourceType
    namespace: str | None
    name: str | None
    subresource: str
    legacy_watch: bool


def _truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1", "yes")


def _parse_media(header: str) -> list[tuple[str, dict[str, str]]]:
    out: list[tuple[str, float, int, dict[str, str]]] = []
    for index, part in enumerate(header.split(",")):
        pieces = [p.strip() for p in part.split(";")]
        if not pieces[0]:
            continue
        params: dict[str, str] = {}
        q = 1.0
        for piece in pieces[1:]:
            if "=" in piece:
                k, v = piece.split("=", 1)
                k, v = k.strip().lower(), v.strip().strip('"')
                if k == "q":
                    try:
                        q = float(v)
                    except ValueError:
                        q = 0.0
                else:
                    params[k] = v
        out.append((pieces[0].lower(), q, index, params))
    out.sort(key=lambda t: (-t[1], t[2]))
    return [(m, p) for m, q, _, p in out if q > 0]


@functools.lru_cache(maxsize=256)
def negotiate(accept: str, *, allow_transform: bool) -> _Negotiated:
    """Pick the response representation from an Accept header, or raise 406."""
    if not accept.strip():
        return _Negotiated("json")
    for media, params in _parse_media(accept):
        as_ = params.get("as")
        if media in (_JSON, "application/*", "*/*", "application/json;stream=watch"):
            if not as_:
                return _Negotiated("json")
            if params.get("g") != "meta.k8s.io" or params.get("v") not in ("v1", "v1beta1"):
                continue
            if not allow_transform:
                continue
            if as_ == "Table":
                return _Negotiated("table", params["v"])
            if as_ in ("PartialObjectMetadata", "PartialObjectMetadataList"):
                return _Negotiated("meta", params["v"])
        elif media in (_YAML, "application/*+yaml") and not as_:
            return _Negotiated("yaml")
    raise not_acceptable([_JSON, _YAML])


class _JSONView:
    """Full objects at one resource type's version."""

    def __init__(self, api: API, rt: ResourceType) -> None:
        self.api = api
        self.rt = rt
        self.cache_key: Hashable = ("json", rt.group, rt.version, rt.plural)

    def render(self, obj: dict[str, Any]) -> Any:
        return self.api.to_external(self.rt, obj)

    def bookmark(self, meta: dict[str, Any]) -> dict[str, Any]:
        if not self.rt.crd_name:
            meta = dict(meta, creationTimestamp=None)
        return {"kind": self.rt.kind, "apiVersion": self.rt.api_version, "metadata": meta}


class _ConvertingView(_JSONView):
    """Full objects at a version only a conversion webhook produces.

    Events are queued in their stored form (under their own cache key, so no other
    watcher shares these bytes) and converted a batch at a time, through the webhook,
    as the stream sends them.
    """

    def __init__(self, api: API, rt: ResourceType) -> None:
        super().__init__(api, rt)
        self.cache_key = ("converting", rt.group, rt.version, rt.plural)

    def render(self, obj: dict[str, Any]) -> Any:
        return obj

    async def convert(self, chunks: list[bytes]) -> bytes:
        """Convert the objects of encoded watch events; other events pass unchanged."""
        events = [orjson.loads(chunk) for chunk in chunks]
        carrying = [e for e in events if e.get("type") in ("ADDED", "MODIFIED", "DELETED")]
        converted = await self.api.external_many(self.rt, [e["object"] for e in carrying])
        for event, obj in zip(carrying, converted, strict=True):
            event["object"] = obj
        return b"".join(encode_event(e["type"], e["object"]) for e in events)


class _MetaView:
    """``PartialObjectMetadata``."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.cache_key: Hashable = ("meta", version)

    def render(self, obj: dict[str, Any]) -> Any:
        out = partial_metadata(obj)
        out["apiVersion"] = f"meta.k8s.io/{self.version}"
        return out

    def bookmark(self, meta: dict[str, Any]) -> dict[str, Any]:
        return {
            "kind": "PartialObjectMetadata",
            "apiVersion": f"meta.k8s.io/{self.version}",
            "metadata": meta,
        }


class _TableView:
    """One-row ``Table`` per event."""

    def __init__(self, api: API, rt: ResourceType, version: str, include: str) -> None:
        self.api = api
        self.rt = rt
        self.version = version
        self.include = include
        self.cache_key: Hashable = ("table", rt.group, rt.version, rt.plural, version, include)

    def table(self, obj: dict[str, Any], headers: bool) -> dict[str, Any]:
        ext = self.api.to_external(self.rt, obj)
        return to_table(
            self.rt,
            [ext],
            include=self.include,
            list_meta={"resourceVersion": meta_of(ext).get("resourceVersion", "")},
            headers=headers,
            api_version=f"meta.k8s.io/{self.version}",
        )

    def render(self, obj: dict[str, Any]) -> Any:
        return self.table(obj, headers=False)

    def render_first(self, type_: str, obj: dict[str, Any]) -> bytes:
        return encode_event(type_, self.table(obj, headers=True))

    def bookmark(self, meta: dict[str, Any]) -> dict[str, Any]:
        return {
            "kind": "Table",
            "apiVersion": f"meta.k8s.io/{self.version}",
            "metadata": meta,
            "columnDefinitions": [],
            "rows": [],
        }


_View = _JSONView | _ConvertingView | _MetaView | _TableView


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
    ) -> None:
        if bookmark_interval <= 0:
            raise ValueError(f"bookmark_interval must be positive, got {bookmark_interval}")
        if watch_queue_size < 1:
            raise ValueError(f"watch_queue_size must be at least 1, got {watch_queue_size}")
        self.authn = Authenticator(tokens, service_account_uid=self._service_account_uid)
        """Bearer tokens to users (`pyctrl.envtest.authentication`); `add_user` adds some."""
        self._ssl = ssl_context
        self.host = host
        self.port = port
        self.bookmark_interval = bookmark_interval
        self.watch_queue_size = watch_queue_size
        self.sharded_list_and_watch = True
        """The ``ShardedListAndWatch`` feature gate (KEP-5866): on, lists and watches honour
        ``shardSelector`` and lists echo it in ``metadata.shardInfo``; off, the parameter is
        ignored, as a server before Kubernetes 1.36 (or with the gate off) does."""
        self.registry = Registry(builtin_types())
        self.store = Store(history_size)
        self.hub = WatchHub()
        self.store.add_listener(self.hub.dispatch)
        self.admission: list[AdmissionHook] = []
        self.conversion: ConversionHook | None = None
        self.api = API(
            self.store, self.registry, admission=self.admission, conversion=lambda: self.conversion
        )
        self.authz = Authorizer(self.store)
        """RBAC over the stored roles and bindings (`pyctrl.envtest.authorization`)."""
        self.crd_controller = CRDController(self.api, self.hub)
        self.controllers = Controllers(
            self.api, self.crd_controller, garbage_collector=garbage_collector
        )
        self.faults = Faults(
            drop_watches=self._drop_watches, compact=self._compact, restart=self.restart
        )
        self.url = ""
        self._runner: web.AppRunner | None = None
        self._controllers_task: asyncio.Task[None] | None = None
        self._bootstrapped = False
        self._watch_tasks: set[asyncio.Task[Any]] = set()

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
        app = web.Application(client_max_size=_MAX_BODY + 1024, middlewares=[self._middleware])
        _discovery.add_routes(app, self)
        _openapi.add_routes(app, self)
        for path in ("/healthz", "/livez", "/readyz"):
            app.router.add_get(path, self._health)
            app.router.add_get(path + "/{check:.*}", self._health)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=2.0)
        await runner.setup()
        site = web.TCPSite(runner, self.host, port, ssl_context=self._ssl, reuse_address=True)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        server = site._server  # aiohttp keeps the bound sockets here
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            self.port = int(sockets[0].getsockname()[1])
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
        opts = WriteOptions(field_manager="kube-apiserver")
        ns_rt = self._rt("", "v1", "namespaces")
        for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
            if self.store.get(NAMESPACES, "", name) is None:
                await self.api.create(
                    ns_rt,
                    "",
                    {"metadata": {"name": name}},
                    WriteOptions(field_manager="kube-apiserver"),
                )
        svc_rt = self._rt("", "v1", "services")
        if self.store.get(("", "services"), "default", "kubernetes") is None:
            await self.api.create(
                svc_rt,
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
                opts,
            )
        pc_rt = self._rt("scheduling.k8s.io", "v1", "priorityclasses")
        for name, value in (
            ("system-cluster-critical", 2000000000),
            ("system-node-critical", 2000001000),
        ):
            if self.store.get(pc_rt.storage_key, "", name) is None:
                await self.api.create(
                    pc_rt,
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
                    WriteOptions(field_manager="kube-apiserver"),
                )
        for plural, obj in BOOTSTRAP_POLICY:
            rt = self._rt("rbac.authorization.k8s.io", "v1", plural)
            if self.store.get(rt.storage_key, "", obj["metadata"]["name"]) is None:
                await self.api.create(rt, "", copy.deepcopy(obj), opts)

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
        self.api.drop_snapshots()

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

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        path = request.path
        public = path in _PUBLIC_PATHS or path.startswith(("/healthz/", "/livez/", "/readyz/"))
        if not public and self.authn.enabled:
            user = self.authn.authenticate_header(request.headers.get("Authorization", ""))
            if user is None:
                return self._status_response(unauthorized())
            request[_USER] = user
            # Each request runs in its own task: admission reads who sent it from here.
            REQUEST_USER.set(UserInfo(user.name, user.uid, list(user.groups)))
            if not user.privileged:
                watch = _truthy(request.query.get("watch"))
                attrs = request_attributes(request.method, path, watch, user)
                if not self.authz.authorize(attrs)[0]:
                    return self._status_response(forbidden_error(attrs))
        response: web.StreamResponse = await handler(request)
        return response

    async def _health(self, request: web.Request) -> web.Response:
        del request
        if self._controllers_failure() is not None:
            return web.Response(status=500, text="controllers failed", content_type="text/plain")
        return web.Response(text="ok", content_type="text/plain")

    @staticmethod
    def _headers(content_type: str = _JSON) -> dict[str, str]:
        return {
            "Content-Type": content_type,
            "Cache-Control": "no-cache, private",
            "Audit-Id": fast_uuid4(),
        }

    def _status_response(self, err: StatusError) -> web.Response:
        headers = self._headers()
        headers.update(err.headers)
        if err.retry_after is not None and "Retry-After" not in headers:
            headers["Retry-After"] = str(err.retry_after)
        return web.Response(status=err.code, body=orjson.dumps(err.to_status()), headers=headers)

    def _respond(
        self,
        request: web.Request,
        value: Any,
        code: int = 200,
        neg: _Negotiated | None = None,
        warnings: list[str] | None = None,
    ) -> web.Response:
        headers = self._headers()
        if warnings:
            headers["Warning"] = ", ".join(
                '299 - "' + w.replace("\\", "\\\\").replace('"', '\\"') + '"' for w in warnings
            )
        if neg is not None and neg.kind == "yaml":
            headers["Content-Type"] = _YAML
            body = yaml.safe_dump(value, default_flow_style=False, sort_keys=True).encode()
            return web.Response(status=code, body=body, headers=headers)
        if _truthy(request.query.get("pretty")):
            body = orjson.dumps(value, option=orjson.OPT_INDENT_2)
        else:
            body = orjson.dumps(value)
        return web.Response(status=code, body=body, headers=headers)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        try:
            response: web.StreamResponse = await self._dispatch(request)
        except StatusError as exc:
            response = self._status_response(exc)
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as exc:
            logger.exception("internal error serving %s %s", request.method, request.path)
            response = self._status_response(
                StatusError(500, "InternalError", f"Internal error occurred: {exc}", details=False)
            )
        warning = request.get(_DEPRECATION)
        if warning and not response.prepared:
            # The CRD handler warns on every request of a deprecated version, first.
            quoted = warning.replace("\\", "\\\\").replace('"', '\\"')
            previous = response.headers.getall("Warning", [])
            response.headers["Warning"] = f'299 - "{quoted}"'
            for value in previous:
                response.headers.add("Warning", value)
        return response

    # --- routing --------------------------------------------------------------------------

    def _route(self, path: str) -> _Target | web.Response:
        parts = [p for p in path.split("/") if p != ""]
        if not parts or parts[0] not in ("api", "apis"):
            return _page_not_found()
        if parts[0] == "api":
            if len(parts) < 2:
                return _page_not_found()
            group, version, rest = "", parts[1], parts[2:]
        else:
            if len(parts) < 3:
                return _page_not_found()
            group, version, rest = parts[1], parts[2], parts[3:]
        legacy_watch = False
        if rest and rest[0] == "watch":
            legacy_watch = True
            rest = rest[1:]
        if not rest:
            return _page_not_found()
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            namespace = rest[1]
            rest = rest[2:]
        if len(rest) > 3:
            return _page_not_found()
        rt = self.registry.lookup(group, version, rest[0])
        if rt is None:
            return _page_not_found()
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else ""
        if rt.namespaced and namespace is None and name is not None:
            return _page_not_found()
        if not rt.namespaced and namespace is not None:
            return _page_not_found()
        if sub and sub not in rt.subresources:
            return _page_not_found()
        return _Target(rt, namespace, name, sub, legacy_watch)

    @staticmethod
    def _verb(request: web.Request, target: _Target) -> str:
        method = request.method
        watch = target.legacy_watch or _truthy(request.query.get("watch"))
        if method in ("GET", "HEAD"):
            if watch:
                return "watch"
            return "list" if target.name is None else "get"
        if method == "POST":
            # The CRD handler creates on a POST to an object path too (the body names the
            # object); kube-apiserver's own routes only accept POST on collections.
            if target.name is None or (target.rt.crd_name and not target.subresource):
                return "create"
            return ""
        if method == "PUT":
            return "update" if target.name is not None else ""
        if method == "PATCH":
            return "patch" if target.name is not None else ""
        if method == "DELETE":
            return "delete" if target.name is not None else "deletecollection"
        return ""

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        review = _REVIEWS.get(request.path)
        if review is not None:
            if request.method != "POST":
                raise method_not_allowed()
            return await self._review(request, review)
        routed = self._route(request.path)
        if isinstance(routed, web.Response):
            return routed
        target = routed
        rt = target.rt
        if rt.deprecation_warning:
            request[_DEPRECATION] = rt.deprecation_warning
        if target.subresource == "eviction" and rt.storage_key == ("", "pods"):
            if request.method != "POST":
                raise method_not_allowed()
            assert target.name is not None
            body = await self._decode_object(request)
            opts = self._write_options(request, "CreateOptions")
            status = await evict(self.api, rt, target.namespace or "", target.name, body, opts=opts)
            return self._respond(request, status, 201, warnings=opts.warnings)
        if target.subresource == "token" and rt.plural == "serviceaccounts":
            if request.method != "POST":
                raise method_not_allowed()
            assert target.name is not None
            return await self._token_request(request, target.namespace or "", target.name)
        verb = self._verb(request, target)
        if not verb or verb not in rt.verbs:
            raise method_not_allowed()
        if target.subresource:
            allowed = {
                "status": ("get", "update", "patch"),
                "scale": ("get", "update", "patch"),
                "finalize": ("update",),
            }.get(target.subresource, ())
            if verb not in allowed:
                raise method_not_allowed()
        if self.faults.active:
            names: tuple[str, ...] = (rt.plural, rt.qualified)
            if target.subresource:
                names = (*names, f"{rt.plural}/{target.subresource}")
            delay = self.faults.latency_for(verb, names)
            if delay > 0:
                await asyncio.sleep(delay)
            failure = self.faults.failure_for(verb, names)
            if failure is not None:
                raise failure
        namespace = target.namespace or ""
        if verb == "get":
            return await self._get(request, target)
        if verb == "list":
            return await self._list(request, rt, target.namespace)
        if verb == "watch":
            return await self._watch(request, rt, target.namespace, target.name)
        if verb == "create":
            return await self._create(request, rt, namespace)
        if verb == "update":
            return await self._update(request, target)
        if verb == "patch":
            return await self._patch(request, target)
        if verb == "delete":
            assert target.name is not None
            return await self._delete(request, rt, namespace, target.name)
        return await self._delete_collection(request, rt, target.namespace)

    async def _review(self, request: web.Request, kind: str) -> web.Response:
        """TokenReview, SubjectAccessReview, SelfSubjectAccessReview: answered, not stored."""
        body = await self._decode_object(request)
        if kind == "TokenReview":
            answer = token_review(self.authn, body)
        else:
            caller = request.get(_USER) if kind == "SelfSubjectAccessReview" else None
            if kind == "SelfSubjectAccessReview" and caller is None:
                caller = User("system:anonymous", ("system:unauthenticated",))
            answer = subject_access_review(self.authz, body, caller)
        return self._respond(request, answer, 201)

    async def _token_request(self, request: web.Request, namespace: str, name: str) -> web.Response:
        """``serviceaccounts/<name>/token``: a TokenRequest answered with a bound token."""
        body = await self._decode_object(request)
        stored = self.store.get(("", "serviceaccounts"), namespace, name)
        if stored is None:
            raise not_found("", "serviceaccounts", name)
        answer = token_request(self.authn, stored, body)
        return self._respond(request, answer, 201)

    # --- request decoding -----------------------------------------------------------------

    async def _read_body(self, request: web.Request) -> bytes:
        if request.content_length is not None and request.content_length > _MAX_BODY:
            raise StatusError(
                413, "RequestEntityTooLarge", "the request body is too large", details=False
            )
        return await request.read()

    async def _decode_object(self, request: web.Request) -> dict[str, Any]:
        # Without a Content-Type the first supported type (JSON) decodes; aiohttp would
        # report application/octet-stream, which kube-apiserver refuses when sent.
        sent = "Content-Type" in request.headers
        content_type = (request.content_type if sent else _JSON).lower()
        raw = await self._read_body(request)
        if content_type in (_JSON, ""):
            try:
                value = orjson.loads(raw) if raw else None
            except orjson.JSONDecodeError as exc:
                raise bad_request(f"couldn't get version/kind; json parse error: {exc}") from None
        elif content_type == _PROTOBUF:
            try:
                value = _protobuf.decode_object(raw)
            except _protobuf.ProtobufError as exc:
                raise StatusError(
                    415,
                    "UnsupportedMediaType",
                    f"the body of the request was in an unknown format - accepted media types "
                    f"include: {_JSON}, {_YAML} ({exc})",
                    details=False,
                ) from None
        elif content_type in (_YAML, "application/x-yaml", "text/yaml"):
            try:
                value = _yaml.load(raw) if raw else None
            except yaml.YAMLError as exc:
                raise bad_request(f"error converting YAML to JSON: {exc}") from None
        else:
            raise unsupported_media_type([_JSON, _YAML, _PROTOBUF])
        if not isinstance(value, dict):
            raise bad_request(
                "Object 'Kind' is missing in '" + raw.decode(errors="replace")[:200] + "'"
            )
        check_nesting(value)
        return value

    @staticmethod
    def _dry_run(request: web.Request, kind: str) -> bool:
        values = request.query.getall("dryRun", [])
        if not values:
            return False
        for value in values:
            if value != "All":
                raise invalid(
                    "meta.k8s.io",
                    kind,
                    "",
                    [field_not_supported("dryRun", value, ["All"])],
                )
        return True

    def _write_options(self, request: web.Request, kind: str) -> WriteOptions:
        dry_run = self._dry_run(request, kind)
        manager = request.query.get("fieldManager", "")
        if len(manager) > 128:
            raise invalid(
                "meta.k8s.io",
                kind,
                "",
                [
                    field_invalid(
                        "fieldManager", manager, "must be less than or equal to 128 characters"
                    )
                ],
            )
        if not manager:
            manager = _manager_from_user_agent(request.headers.get("User-Agent", ""))
        validation = request.query.get("fieldValidation", "Warn") or "Warn"
        if validation not in ("Ignore", "Warn", "Strict"):
            raise bad_request(
                f"fieldValidation must be one of: Ignore, Warn, Strict; got {validation!r}"
            )
        raw: dict[str, Any] = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
        if dry_run:
            raw["dryRun"] = ["All"]
        if request.query.get("fieldManager"):
            raw["fieldManager"] = request.query["fieldManager"]
        return WriteOptions(
            dry_run=dry_run, field_manager=manager, field_validation=validation, raw=raw
        )

    # --- handlers: read -------------------------------------------------------------------

    def _render_one(
        self, rt: ResourceType, obj: dict[str, Any], neg: _Negotiated, request: web.Request
    ) -> Any:
        if neg.kind == "table":
            include = request.query.get("includeObject", "Metadata")
            if include not in _INCLUDE_VALUES:
                raise bad_request(f'unrecognized includeObject value: "{include}"')
            return to_table(
                rt,
                [obj],
                include=include or "Metadata",
                list_meta={"resourceVersion": meta_of(obj).get("resourceVersion", "")},
                api_version=f"meta.k8s.io/{neg.version}",
            )
        if neg.kind == "meta":
            out = partial_metadata(obj)
            out["apiVersion"] = f"meta.k8s.io/{neg.version}"
            return out
        return obj

    async def _get(self, request: web.Request, target: _Target) -> web.Response:
        rt = target.rt
        neg = negotiate(request.headers.get("Accept", ""), allow_transform=not target.subresource)
        assert target.name is not None
        stored = self.api.get_stored(rt, target.namespace or "", target.name)
        obj = await self.api.external(rt, stored)
        if target.subresource == "scale":
            return self._respond(request, self.api.scale_of(rt, obj), neg=neg)
        return self._respond(request, self._render_one(rt, obj, neg, request), neg=neg)

    def _selectors(
        self, request: web.Request, rt: ResourceType
    ) -> tuple[LabelSelector, FieldSelector]:
        try:
            labels = parse_label_selector(request.query.get("labelSelector", ""))
        except SelectorError as exc:
            raise bad_request(str(exc)) from None
        try:
            fields = parse_field_selector(request.query.get("fieldSelector", ""))
        except SelectorError as exc:
            raise bad_request(str(exc)) from None
        self.api.check_field_selector(rt, fields)
        return labels, fields

    def _shard_selector(self, request: web.Request) -> tuple[ShardSelector | None, str]:
        """The request's ``shardSelector`` (KEP-5866), parsed; None when absent or gated off."""
        text = request.query.get("shardSelector", "")
        if not text or not self.sharded_list_and_watch:
            return None, ""
        try:
            return parse_shard_selector(text), text
        except ShardSelectorError as exc:
            raise bad_request(f"invalid shard selector: {exc}") from None

    @staticmethod
    def _list_option_errors(request: web.Request, *, watch: bool) -> None:
        query = request.query
        rv = query.get("resourceVersion", "")
        match = query.get("resourceVersionMatch", "")
        causes = []
        if match and match not in ("Exact", "NotOlderThan"):
            causes.append(
                field_not_supported("resourceVersionMatch", match, ["Exact", "NotOlderThan", ""])
            )
        send_initial = query.get("sendInitialEvents")
        if match and not rv and not (watch and _truthy(send_initial)):
            causes.append(
                field_forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            )
        if match == "Exact" and rv == "0":
            causes.append(
                field_forbidden(
                    "resourceVersionMatch",
                    'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                )
            )
        if query.get("continue") and rv and rv != "0":
            causes.append(
                field_forbidden(
                    "resourceVersion",
                    "specifying resource version is not allowed when using continue",
                )
            )
        if send_initial is not None:
            if not watch:
                causes.append(
                    field_forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list")
                )
            else:
                if match != "NotOlderThan":
                    causes.append(
                        field_forbidden(
                            "resourceVersionMatch",
                            "sendInitialEvents requires setting resourceVersionMatch to "
                            "NotOlderThan",
                        )
                    )
                if _truthy(send_initial) and not _truthy(query.get("allowWatchBookmarks")):
                    causes.append(
                        field_forbidden(
                            "allowWatchBookmarks",
                            "sendInitialEvents requires setting allowWatchBookmarks to true",
                        )
                    )
        elif watch and match and match != "NotOlderThan":
            causes.append(
                field_forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                    "provided",
                )
            )
        if causes:
            raise invalid("meta.k8s.io", "ListOptions", "", causes)

    @staticmethod
    def _int_param(request: web.Request, name: str) -> int | None:
        value = request.query.get(name)
        if value is None or value == "":
            return None
        try:
            return int(value)
        except ValueError:
            raise bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax') from None

    async def _list(
        self, request: web.Request, rt: ResourceType, namespace: str | None
    ) -> web.Response:
        neg = negotiate(request.headers.get("Accept", ""), allow_transform=True)
        self._list_option_errors(request, watch=False)
        labels, fields = self._selectors(request, rt)
        shard, shard_text = self._shard_selector(request)
        limit = self._int_param(request, "limit") or 0
        result = self.api.list_stored(
            rt,
            namespace,
            labels=labels,
            fields=fields,
            limit=max(limit, 0),
            continue_token=request.query.get("continue", ""),
            resource_version=request.query.get("resourceVersion", ""),
            resource_version_match=request.query.get("resourceVersionMatch", ""),
        )
        if shard is not None:
            result.items = [o for o in result.items if shard.matches(o)]
            result.meta.pop("remainingItemCount", None)
            result.meta["shardInfo"] = {"selector": shard_text}
        items = await self.api.external_many(rt, result.items)
        if neg.kind == "table":
            include = request.query.get("includeObject", "Metadata")
            if include not in _INCLUDE_VALUES:
                raise bad_request(f'unrecognized includeObject value: "{include}"')
            body: Any = to_table(
                rt,
                items,
                include=include or "Metadata",
                list_meta=result.meta,
                api_version=f"meta.k8s.io/{neg.version}",
            )
        elif neg.kind == "meta":
            api_version = f"meta.k8s.io/{neg.version}"
            parts = []
            for o in items:
                p = partial_metadata(o)
                p["apiVersion"] = api_version
                parts.append(p)
            body = {
                "kind": "PartialObjectMetadataList",
                "apiVersion": api_version,
                "metadata": result.meta,
                "items": parts,
            }
        else:
            if not rt.crd_name:
                items = [
                    {k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in items
                ]
            body = {
                "kind": rt.list_kind,
                "apiVersion": rt.api_version,
                "metadata": result.meta,
                "items": items,
            }
        return self._respond(request, body, neg=neg)

    # --- handlers: watch ------------------------------------------------------------------

    def _view(self, request: web.Request, rt: ResourceType, neg: _Negotiated) -> _View:
        if neg.kind == "table":
            include = request.query.get("includeObject", "Metadata") or "Metadata"
            if include not in _INCLUDE_VALUES:
                raise bad_request(f'unrecognized includeObject value: "{include}"')
            return _TableView(self.api, rt, neg.version, include)
        if neg.kind == "meta":
            return _MetaView(neg.version)
        if self.api._hook_for(rt) is not None and rt.version != rt.storage_version:
            return _ConvertingView(self.api, rt)
        return _JSONView(self.api, rt)

    async def _watch(
        self, request: web.Request, rt: ResourceType, namespace: str | None, name: str | None
    ) -> web.StreamResponse:
        neg = negotiate(request.headers.get("Accept", ""), allow_transform=True)
        if neg.kind == "yaml":
            neg = _Negotiated("json")
        if self.faults.refuses_watch_list and request.query.get("resourceVersionMatch"):
            # kube-apiserver before 1.27 knows no sendInitialEvents, and so forbids this.
            raise invalid(
                "meta.k8s.io",
                "ListOptions",
                "",
                [
                    field_forbidden(
                        "resourceVersionMatch", "resourceVersionMatch is forbidden for watch"
                    )
                ],
            )
        self._list_option_errors(request, watch=True)
        labels, fields = self._selectors(request, rt)
        shard, shard_text = self._shard_selector(request)
        if name is not None:
            fields = FieldSelector(
                (*fields.requirements, *parse_field_selector(f"metadata.name={name}").requirements)
            )
        query = request.query
        rv_text = query.get("resourceVersion", "")
        send_initial_raw = query.get("sendInitialEvents")
        send_initial = _truthy(send_initial_raw) if send_initial_raw is not None else None
        bookmarks = _truthy(query.get("allowWatchBookmarks"))
        timeout = self._int_param(request, "timeoutSeconds")
        if timeout is None or timeout <= 0:
            timeout_s = random.uniform(1800.0, 3600.0)
        else:
            timeout_s = float(timeout)
        view = self._view(request, rt, neg)
        watcher = Watcher(
            key=rt.storage_key,
            namespace=namespace if rt.namespaced else None,
            labels=labels,
            fields=fields,
            fields_of=self.api.fields_of(rt),
            view=view,
            max_queue=self.watch_queue_size,
            render_first=view.render_first if isinstance(view, _TableView) else None,
            shard=shard.matches if shard is not None else None,
            event_delay=functools.partial(self.faults.watch_delay_for, (rt.plural, rt.qualified)),
        )
        # Registration and the initial events happen with no await in between, so no change
        # committed meanwhile can be missed or delivered twice.
        error: dict[str, Any] | None = None
        initial_end_rv: int | None = None
        if rv_text in ("", "0") or send_initial:
            if rv_text not in ("", "0"):
                wanted = self._parse_rv(rv_text)
                if wanted > self.store.rv:
                    raise self.api._too_large(wanted)
            self.hub.register(watcher)
            if send_initial is not False:
                for obj in self.store.items(rt.storage_key, namespace if rt.namespaced else None):
                    if watcher.matches_object(obj):
                        watcher.push_object("ADDED", obj)
                if send_initial:
                    initial_end_rv = self.store.rv
        else:
            wanted = self._parse_rv(rv_text)
            try:
                start = self.registry.cache_start.get(rt.storage_key, 0)
                if wanted < start:
                    raise TooOld(wanted, start)
                history = self.store.events_since(wanted, rt.storage_key)
            except TooOld as exc:
                error = StatusError(410, "Expired", str(exc), details=False).to_status()
                history = []
            if error is None:
                self.hub.register(watcher)
                for event in history:
                    watcher.offer(event)
        if initial_end_rv is not None:
            watcher.push_initial_end(
                encode_event(
                    "BOOKMARK",
                    view.bookmark(
                        {
                            "resourceVersion": str(initial_end_rv),
                            "annotations": {"k8s.io/initial-events-end": "true"},
                            **({"shardInfo": {"selector": shard_text}} if shard else {}),
                        }
                    ),
                )
            )
        response = web.StreamResponse(status=200, headers=self._headers())
        response.enable_chunked_encoding()
        try:
            await response.prepare(request)
            if error is not None:
                await response.write(encode_event("ERROR", error))
                await response.write_eof()
                return response
            await self._stream(
                request, response, watcher, view, timeout_s=timeout_s, bookmarks=bookmarks
            )
        except (ConnectionResetError, ConnectionError):
            pass
        finally:
            watcher.close()
        return response

    async def _stream(
        self,
        request: web.Request,
        response: web.StreamResponse,
        watcher: Watcher,
        view: _View,
        *,
        timeout_s: float,
        bookmarks: bool,
    ) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        next_bookmark = self._next_bookmark(loop.time(), deadline) if bookmarks else float("inf")
        while True:
            chunks = watcher.drain()
            if chunks:
                if isinstance(view, _ConvertingView):
                    try:
                        payload = await view.convert(chunks)
                    except StatusError as exc:
                        # As kube-apiserver: a failed conversion ends the watch.
                        logger.warning("ending watch: conversion failed: %s", exc)
                        break
                else:
                    payload = b"".join(chunks)
                await response.write(payload)
                continue
            if watcher.closed:
                break
            now = loop.time()
            if now >= deadline:
                break
            if now >= next_bookmark:
                rv = watcher.bookmark_rv(self.store.rv)
                await response.write(
                    encode_event("BOOKMARK", view.bookmark({"resourceVersion": str(rv)}))
                )
                next_bookmark = self._next_bookmark(now, deadline)
                continue
            transport = request.transport
            if transport is None or transport.is_closing():
                break
            await watcher.wait(min(deadline, next_bookmark, now + 5.0) - now)
            # One more turn of the loop lets writes in flight queue their events too, so
            # a busy server sends them to each watcher in one write instead of many.
            await asyncio.sleep(0)
        with contextlib.suppress(ConnectionError):
            await response.write_eof()

    def _next_bookmark(self, now: float, deadline: float) -> float:
        # kube-apiserver's cacheWatcher.nextBookmarkTime: a heartbeat every interval, and
        # one 2 s before the deadline so the client resumes from a recent version; none
        # once that moment has passed.
        moment = min(now + self.bookmark_interval, deadline - 2.0)
        return moment if moment >= now else float("inf")

    @staticmethod
    def _parse_rv(value: str) -> int:
        # The watch cache parses the version (storage.APIObjectVersioner) and answers its
        # error as an internal one: 500, without a reason.
        rv = parse_resource_version(value)
        if rv is None:
            raise StatusError(500, "", resource_version_problem(value), details=False)
        return rv

    # --- handlers: write ------------------------------------------------------------------

    async def _create(self, request: web.Request, rt: ResourceType, namespace: str) -> web.Response:
        neg = negotiate(request.headers.get("Accept", ""), allow_transform=True)
        opts = self._write_options(request, "CreateOptions")
        body = await self._decode_object(request)
        obj = await self.api.create(rt, namespace, body, opts)
        return self._respond(
            request, self._render_one(rt, obj, neg, request), 201, neg, opts.warnings
        )

    async def _update(self, request: web.Request, target: _Target) -> web.Response:
        rt = target.rt
        assert target.name is not None
        neg = negotiate(request.headers.get("Accept", ""), allow_transform=not target.subresource)
        opts = self._write_options(request, "UpdateOptions")
        body = await self._decode_object(request)
        namespace = target.namespace or ""
        if target.subresource == "scale":
            self.api.check_type_meta(rt, body, kind="Scale")
            scale = await self.api.update_scale(
                rt, namespace, target.name, scale_body=body, patch_type="", patch=None, opts=opts
            )
            return self._respond(request, scale, neg=neg, warnings=opts.warnings)
        if target.subresource == "finalize":
            obj, created = await self._finalize(rt, target.name, body, opts)
        else:
            obj, created = await self.api.update(
                rt, namespace, target.name, body, opts=opts, subresource=target.subresource
            )
        return self._respond(
            request,
            self._render_one(rt, obj, neg, request),
            201 if created else 200,
            neg,
            opts.warnings,
        )

    async def _finalize(
        self, rt: ResourceType, name: str, body: dict[str, Any], opts: WriteOptions
    ) -> tuple[dict[str, Any], bool]:
        finalizers = (body.get("spec") or {}).get("finalizers") or []
        rv = meta_of(body).get("resourceVersion")

        def mutate(existing: dict[str, Any] | None) -> dict[str, Any]:
            if existing is None:
                raise not_found("", "namespaces", name)
            existing.setdefault("spec", {})["finalizers"] = list(finalizers)
            if rv:
                meta_of(existing)["resourceVersion"] = rv
            return existing

        self.api.check_type_meta(rt, body)
        return await self.api._update_loop(
            rt, "", name, mutate, opts, subresource="finalize", create_allowed=False
        )

    async def _patch(self, request: web.Request, target: _Target) -> web.Response:
        rt = target.rt
        assert target.name is not None
        neg = negotiate(request.headers.get("Accept", ""), allow_transform=not target.subresource)
        content_type = (request.content_type or "").lower()
        patch_type = _PATCH_TYPES.get(content_type)
        if rt.crd_name:
            accepted = [
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/apply-patch+yaml",
            ]
        else:
            accepted = [
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/strategic-merge-patch+json",
                "application/apply-patch+yaml",
            ]
        if patch_type is None or patch_type == "apply-cbor":
            raise unsupported_media_type(accepted)
        if patch_type == "strategic" and rt.crd_name:
            raise unsupported_media_type(accepted)
        opts = self._write_options(request, "PatchOptions")
        force_raw = request.query.get("force")
        if patch_type == "apply":
            if not request.query.get("fieldManager"):
                raise invalid(
                    "meta.k8s.io",
                    "PatchOptions",
                    "",
                    [field_required("fieldManager", "is required for apply patch")],
                )
            opts.force = _truthy(force_raw)
        elif force_raw is not None:
            raise invalid(
                "meta.k8s.io",
                "PatchOptions",
                "",
                [field_forbidden("force", "may not be specified for non-apply patch")],
            )
        raw = await self._read_body(request)
        patch = _decode_patch(raw, patch_type)
        namespace = target.namespace or ""
        if target.subresource == "scale":
            scale = await self.api.update_scale(
                rt,
                namespace,
                target.name,
                scale_body=None,
                patch_type=patch_type,
                patch=patch,
                opts=opts,
            )
            return self._respond(request, scale, neg=neg, warnings=opts.warnings)
        obj, created = await self.api.patch(
            rt, namespace, target.name, patch_type, patch, opts=opts, subresource=target.subresource
        )
        return self._respond(
            request,
            self._render_one(rt, obj, neg, request),
            201 if created else 200,
            neg,
            opts.warnings,
        )

    async def _delete_options(self, request: web.Request) -> DeleteOptions:
        raw = await self._read_body(request)
        body: dict[str, Any] = {}
        if raw.strip():
            try:
                decoded = orjson.loads(raw)
            except orjson.JSONDecodeError:
                try:
                    decoded = _yaml.load(raw)
                except yaml.YAMLError as exc:
                    raise bad_request(f"error decoding DeleteOptions: {exc}") from None
            if decoded is not None:
                if not isinstance(decoded, dict):
                    raise bad_request("DeleteOptions must be an object")
                check_nesting(decoded)
                body = decoded
        query = request.query
        propagation = query.get("propagationPolicy") or body.get("propagationPolicy")
        orphan: bool | None = None
        if "orphanDependents" in query:
            orphan = _truthy(query["orphanDependents"])
        elif body.get("orphanDependents") is not None:
            orphan = bool(body["orphanDependents"])
        grace = self._int_param(request, "gracePeriodSeconds")
        if grace is None and body.get("gracePeriodSeconds") is not None:
            grace = int(body["gracePeriodSeconds"])
        dry_run = self._dry_run(request, "DeleteOptions") or body.get("dryRun") == ["All"]
        pre = body.get("preconditions") or {}
        return DeleteOptions(
            propagation=propagation,
            orphan_dependents=orphan,
            grace_period=grace,
            uid=pre.get("uid"),
            resource_version=pre.get("resourceVersion"),
            dry_run=dry_run,
            raw={"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", **body},
        )

    async def _delete(
        self, request: web.Request, rt: ResourceType, namespace: str, name: str
    ) -> web.Response:
        neg = negotiate(request.headers.get("Accept", ""), allow_transform=True)
        opts = await self._delete_options(request)
        result, code = await self.api.delete(rt, namespace, name, opts)
        if result.get("kind") == "Status":
            return self._respond(request, result, code, warnings=opts.warnings)
        return self._respond(
            request, self._render_one(rt, result, neg, request), code, neg, opts.warnings
        )

    async def _delete_collection(
        self, request: web.Request, rt: ResourceType, namespace: str | None
    ) -> web.Response:
        opts = await self._delete_options(request)
        labels, fields = self._selectors(request, rt)
        items = await self.api.delete_collection(rt, namespace, labels, fields, opts)
        ext = await self.api.external_many(rt, items)
        if not rt.crd_name:
            ext = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in ext]
        body = {
            "kind": rt.list_kind,
            "apiVersion": rt.api_version,
            "metadata": {"resourceVersion": str(self.store.rv)},
            "items": ext,
        }
        return self._respond(request, body)


def _decode_patch(raw: bytes, patch_type: str) -> Any:
    if patch_type == "apply":
        try:
            value = _yaml.load(raw) if raw.strip() else None
        except yaml.YAMLError as exc:
            raise bad_request(f"error decoding YAML: {exc}") from None
        if not isinstance(value, dict):
            raise bad_request("error decoding patch: the applied configuration must be an object")
        check_nesting(value)
        return value
    try:
        patch = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise bad_request(f"error decoding patch: {exc}") from None
    check_nesting(patch)
    return patch


@functools.lru_cache(maxsize=256)
def _manager_from_user_agent(user_agent: str) -> str:
    """kube-apiserver's ``prefixFromUserAgent``: the part before the first '/'."""
    prefix = user_agent.split("/", 1)[0]
    out: list[str] = []
    size = 0
    for ch in prefix:
        if not ch.isprintable():
            continue
        n = len(ch.encode())
        if size + n > 128:
            break
        out.append(ch)
        size += n
    return "".join(out)
