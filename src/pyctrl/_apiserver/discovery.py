"""API discovery endpoints of the embedded API server.

Discovery is how clients learn which resources a server offers: ``/api`` and
``/apis`` list the API groups and their versions, ``/api/v1`` and
``/apis/{group}/{version}`` list each version's resources with their kind, scope,
verbs, short names, categories and subresources, and ``/version`` says which
Kubernetes the server claims to be. kubectl and client-go's REST mapper read these
before anything else.

Two formats are served, as kube-apiserver 1.32 does: the classic per-group
documents, and the aggregated documents (``apidiscovery.k8s.io/v2`` and
``v2beta1`` ``APIGroupDiscoveryList``) that answer ``/api`` and ``/apis`` in one
request each when the client's ``Accept`` header asks for them. The response's
``Content-Type`` tells the client which one it got.

Every document is built from ``server.registry`` and cached by the registry's
generation, so a CustomResourceDefinition shows up in discovery as soon as the
registry lists it (when it becomes Established) and disappears when it is
deleted, and the aggregated documents carry an ``ETag`` that changes exactly then.
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import TYPE_CHECKING, Any, Protocol

import orjson
from aiohttp import web

from pyctrl._apiserver.apimachinery import errors as _errors

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from pyctrl._apiserver.scheme.resources import Registry, ResourceType

__all__ = [
    "KUBERNETES_VERSION",
    "add_routes",
    "error_response",
    "negotiate_discovery",
    "sort_versions",
    "storage_version_hash",
    "version_info",
]

KUBERNETES_VERSION = (1, 32, 0)
"""The Kubernetes release the embedded server reports (and mimics)."""

_JSON = "application/json"
_DISCOVERY_GROUP = "apidiscovery.k8s.io"
_AGGREGATED_KIND = "APIGroupDiscoveryList"
_AGGREGATED_VERSIONS = ("v2", "v2beta1")

# Subresources with the response kind and verbs kube-apiserver advertises for them:
# (group, version, kind, verbs). A None kind means "the parent's kind"; a None group
# and version mean "the parent's group version".
_SUBRESOURCES: dict[str, tuple[str | None, str | None, str | None, tuple[str, ...]]] = {
    "status": (None, None, None, ("get", "patch", "update")),
    "scale": ("autoscaling", "v1", "Scale", ("get", "patch", "update")),
    "finalize": (None, None, None, ("update",)),
    "approval": (None, None, None, ("get", "patch", "update")),
    "ephemeralcontainers": (None, None, None, ("get", "patch", "update")),
    "resize": (None, None, None, ("get", "patch", "update")),
    "binding": (None, None, "Binding", ("create",)),
    "eviction": ("policy", "v1", "Eviction", ("create",)),
    "log": (None, None, "Pod", ("get",)),
    "token": ("authentication.k8s.io", "v1", "TokenRequest", ("create",)),
}


class _Server(Protocol):
    """What discovery needs from the API server: its resource registry."""

    @property
    def registry(self) -> Registry: ...


def version_info() -> dict[str, str]:
    """Return the ``version.Info`` document served at ``/version``."""
    major, minor, patch = KUBERNETES_VERSION
    return {
        "major": str(major),
        "minor": str(minor),
        "gitVersion": f"v{major}.{minor}.{patch}+pyctrl",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2024-12-11T00:00:00Z",
        "goVersion": "go1.23.3",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """Return kube-apiserver's ``storageVersionHash`` for a storage group/version/kind.

    Clients compare it between discovery reads to notice a storage version change.
    """
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode("ascii")


_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def _version_priority(version: str) -> tuple[int, int, int, str]:
    match = _VERSION_RE.match(version)
    if match is None:
        # Non-Kubernetes-style versions sort after all others, alphabetically.
        return (3, 0, 0, version)
    major = int(match.group(1))
    stage = {"": 0, "beta": 1, "alpha": 2}[match.group(2) or ""]
    minor = int(match.group(3) or 0)
    return (stage, -major, -minor, "")


def sort_versions(versions: Iterable[str]) -> list[str]:
    """Sort versions the way Kubernetes prefers them: v2, v1, v1beta2, v1beta1, v1alpha1, foo.

    Args:
        versions: Version names.

    Returns:
        The versions, most preferred first.
    """
    return sorted(versions, key=_version_priority)


def _group_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


def _ordered_versions(versions: list[str], preferred: str) -> list[str]:
    ordered = sort_versions(versions)
    if preferred in ordered:
        ordered.remove(preferred)
        ordered.insert(0, preferred)
    return ordered


def _is_custom(resource: ResourceType) -> bool:
    return bool(resource.crd_name) or resource.schema is not None


def _storage_hash(resource: ResourceType) -> str:
    return storage_version_hash(
        resource.group, resource.storage_version or resource.version, resource.kind
    )


def _legacy_resources(resources: list[ResourceType]) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for rt in sorted(resources, key=lambda r: r.plural):
        entry: dict[str, Any] = {
            "name": rt.plural,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": list(rt.verbs),
        }
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.categories:
            entry["categories"] = list(rt.categories)
        entry["storageVersionHash"] = _storage_hash(rt)
        entries.append(entry)
        for sub in sorted(rt.subresources):
            entries.append(_legacy_subresource(rt, sub))
    return entries


def _legacy_subresource(rt: ResourceType, sub: str) -> dict[str, Any]:
    group, version, kind, verbs = _SUBRESOURCES.get(sub, (None, None, None, ("get",)))
    entry: dict[str, Any] = {
        "name": f"{rt.plural}/{sub}",
        "singularName": "",
        "namespaced": rt.namespaced,
    }
    if group is not None:
        entry["group"] = group
    if version is not None:
        entry["version"] = version
    entry["kind"] = kind or rt.kind
    entry["verbs"] = list(verbs)
    return entry


def _aggregated_resource(rt: ResourceType) -> dict[str, Any]:
    # kube-apiserver leaves group and version empty in built-in responseKinds
    # ("same as the group version"); apiextensions fills them in for CRDs.
    custom = _is_custom(rt)
    entry: dict[str, Any] = {
        "resource": rt.plural,
        "responseKind": {
            "group": rt.group if custom else "",
            "version": rt.version if custom else "",
            "kind": rt.kind,
        },
        "scope": "Namespaced" if rt.namespaced else "Cluster",
        "singularResource": rt.singular,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    subresources: list[dict[str, Any]] = []
    for sub in sorted(rt.subresources):
        group, version, kind, verbs = _SUBRESOURCES.get(sub, (None, None, None, ("get",)))
        if kind is None:
            response = dict(entry["responseKind"])
        else:
            response = {"group": group or "", "version": version or "", "kind": kind}
        subresources.append({"subresource": sub, "responseKind": response, "verbs": list(verbs)})
    if subresources:
        entry["subresources"] = subresources
    return entry


class _Documents:
    """Builds discovery documents from a registry and caches them per generation."""

    def __init__(self, server: _Server) -> None:
        self._server = server
        self._generation: int | None = None
        self._cache: dict[tuple[str, ...], bytes | None] = {}

    def get(self, key: tuple[str, ...], build: Callable[[Registry], Any]) -> bytes | None:
        registry = self._server.registry
        if registry.generation != self._generation:
            self._cache.clear()
            self._generation = registry.generation
        if key not in self._cache:
            document = build(registry)
            self._cache[key] = None if document is None else orjson.dumps(document)
        return self._cache[key]


def _resources_by_group_version(
    registry: Registry,
) -> dict[tuple[str, str], list[ResourceType]]:
    result: dict[tuple[str, str], list[ResourceType]] = {}
    for rt in registry.all():
        if rt.served:
            result.setdefault((rt.group, rt.version), []).append(rt)
    return result


def _core_versions(registry: Registry) -> list[str]:
    for group, versions, preferred in registry.groups():
        if group == "":
            return _ordered_versions(list(versions), preferred)
    return []


def _api_group(group: str, versions: list[str], preferred: str) -> dict[str, Any]:
    ordered = _ordered_versions(versions, preferred)
    return {
        "name": group,
        "versions": [{"groupVersion": _group_version(group, v), "version": v} for v in ordered],
        "preferredVersion": {
            "groupVersion": _group_version(group, ordered[0]),
            "version": ordered[0],
        },
    }


def _build_api_versions(registry: Registry, address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": _core_versions(registry),
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    }


def _build_group_list(registry: Registry) -> dict[str, Any]:
    groups = [
        _api_group(group, list(versions), preferred)
        for group, versions, preferred in registry.groups()
        if group and versions
    ]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def _build_group(registry: Registry, name: str) -> dict[str, Any] | None:
    for group, versions, preferred in registry.groups():
        if group == name and versions:
            return {
                "kind": "APIGroup",
                "apiVersion": "v1",
                **_api_group(group, list(versions), preferred),
            }
    return None


def _build_resource_list(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    resources = _resources_by_group_version(registry).get((group, version))
    if not resources:
        return None
    document: dict[str, Any] = {"kind": "APIResourceList"}
    if group:
        document["apiVersion"] = "v1"
    document["groupVersion"] = _group_version(group, version)
    document["resources"] = _legacy_resources(resources)
    return document


def _build_aggregated(registry: Registry, *, core: bool, discovery_version: str) -> dict[str, Any]:
    by_gv = _resources_by_group_version(registry)
    items: list[dict[str, Any]] = []
    for group, versions, preferred in registry.groups():
        if (group == "") != core or not versions:
            continue
        version_entries = [
            {
                "version": version,
                "resources": [
                    _aggregated_resource(rt)
                    for rt in sorted(by_gv.get((group, version), []), key=lambda r: r.plural)
                ],
                "freshness": "Current",
            }
            for version in _ordered_versions(list(versions), preferred)
        ]
        metadata: dict[str, Any] = {"name": group} if group else {}
        metadata["creationTimestamp"] = None
        items.append({"metadata": metadata, "versions": version_entries})
    return {
        "kind": _AGGREGATED_KIND,
        "apiVersion": f"{_DISCOVERY_GROUP}/{discovery_version}",
        "metadata": {},
        "items": items,
    }


def _parse_accept(header: str) -> list[tuple[str, dict[str, str]]]:
    ranges: list[tuple[str, dict[str, str]]] = []
    for part in header.split(","):
        pieces = [p.strip() for p in part.split(";")]
        if not pieces[0]:
            continue
        params: dict[str, str] = {}
        for piece in pieces[1:]:
            key, sep, value = piece.partition("=")
            if sep:
                params[key.strip().lower()] = value.strip().strip('"')
        ranges.append((pieces[0].lower(), params))
    return ranges


def negotiate_discovery(accept: str | None) -> str | None:
    """Pick the discovery format for an ``Accept`` header on ``/api`` or ``/apis``.

    Returns:
        ``"v2"`` or ``"v2beta1"`` for the aggregated document, ``""`` for the classic
        one, None if the client accepts nothing the server can produce.
    """
    if not accept:
        return ""
    for media_type, params in _parse_accept(accept):
        if params.get("q") == "0":
            continue
        if "as" in params or "g" in params:
            if (
                media_type == _JSON
                and params.get("g") == _DISCOVERY_GROUP
                and params.get("as") == _AGGREGATED_KIND
                and params.get("v") in _AGGREGATED_VERSIONS
            ):
                return params["v"]
            continue
        if media_type in (_JSON, "application/*", "*/*"):
            return ""
    return None


def error_response(error: _errors.StatusError) -> web.Response:
    """Answer with the ``Status`` body of ``error``."""
    return web.Response(status=error.code, body=orjson.dumps(error.to_status()), content_type=_JSON)


def _not_found() -> web.Response:
    # No handler serves an unknown group or version: kube-apiserver's mux answers.
    return web.Response(status=404, text="404 page not found\n", content_type="text/plain")


def _json(body: bytes) -> web.Response:
    return web.Response(body=body, content_type=_JSON)


class _Handlers:
    def __init__(self, server: _Server) -> None:
        self._server = server
        self._docs = _Documents(server)
        self._version = orjson.dumps(version_info())

    async def version(self, _request: web.Request) -> web.Response:
        return _json(self._version)

    def _aggregated(self, request: web.Request, *, core: bool, version: str) -> web.Response:
        body = self._docs.get(
            ("aggregated", "core" if core else "apis", version),
            lambda registry: _build_aggregated(registry, core=core, discovery_version=version),
        )
        assert body is not None
        etag = '"' + hashlib.sha256(body).hexdigest()[:32].upper() + '"'
        content_type = f"{_JSON};g={_DISCOVERY_GROUP};v={version};as={_AGGREGATED_KIND}"
        headers = {"ETag": etag, "Vary": "Accept", "Cache-Control": "public"}
        if etag in request.headers.get("If-None-Match", ""):
            return web.Response(status=304, headers=headers)
        headers["Content-Type"] = content_type
        return web.Response(body=body, headers=headers)

    async def api(self, request: web.Request) -> web.Response:
        chosen = negotiate_discovery(request.headers.get("Accept"))
        if chosen is None:
            return _not_acceptable()
        if chosen:
            return self._aggregated(request, core=True, version=chosen)
        address = request.host
        body = self._docs.get(("api", address), lambda r: _build_api_versions(r, address))
        assert body is not None
        return _json(body)

    async def apis(self, request: web.Request) -> web.Response:
        chosen = negotiate_discovery(request.headers.get("Accept"))
        if chosen is None:
            return _not_acceptable()
        if chosen:
            return self._aggregated(request, core=False, version=chosen)
        body = self._docs.get(("apis",), _build_group_list)
        assert body is not None
        return _json(body)

    async def core_version(self, request: web.Request) -> web.Response:
        version = request.match_info["version"]
        body = self._docs.get(("rl", "", version), lambda r: _build_resource_list(r, "", version))
        # go-restful's /api web service claims the path: its 404 is a Status.
        return error_response(_errors.unknown_resource()) if body is None else _json(body)

    async def group(self, request: web.Request) -> web.Response:
        group = request.match_info["group"]
        body = self._docs.get(("group", group), lambda r: _build_group(r, group))
        return _not_found() if body is None else _json(body)

    async def group_version(self, request: web.Request) -> web.Response:
        group = request.match_info["group"]
        version = request.match_info["version"]
        body = self._docs.get(
            ("rl", group, version), lambda r: _build_resource_list(r, group, version)
        )
        if body is not None:
            return _json(body)
        registry = self._server.registry
        if any(rt.group == group and not rt.crd_name for rt in registry.all()):
            # A built-in group's /apis/<group> web service claims the path (go-restful).
            return error_response(_errors.unknown_resource())
        return _not_found()


def _not_acceptable() -> web.Response:
    return error_response(
        _errors.not_acceptable(
            [
                _JSON,
                *(
                    f"{_JSON};g={_DISCOVERY_GROUP};v={v};as={_AGGREGATED_KIND}"
                    for v in _AGGREGATED_VERSIONS
                ),
            ]
        )
    )


def add_routes(app: web.Application, server: _Server) -> None:
    """Register the discovery routes on the API server's application.

    Routes: ``/version``, ``/api``, ``/api/{version}``, ``/apis``, ``/apis/{group}``
    and ``/apis/{group}/{version}`` (GET). Authentication is the server's business:
    these handlers assume the request was already let through.

    Args:
        app: The server's aiohttp application (not yet frozen).
        server: The API server; its ``registry`` is read on every request.
    """
    handlers = _Handlers(server)
    app.router.add_get("/version", handlers.version, allow_head=False)
    app.router.add_get("/api", handlers.api, allow_head=False)
    app.router.add_get("/api/{version}", handlers.core_version, allow_head=False)
    app.router.add_get("/apis", handlers.apis, allow_head=False)
    app.router.add_get("/apis/{group}", handlers.group, allow_head=False)
    app.router.add_get("/apis/{group}/{version}", handlers.group_version, allow_head=False)
