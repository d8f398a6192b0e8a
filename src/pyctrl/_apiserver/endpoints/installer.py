"""Routing requests to handlers: k8s.io/apiserver's ``endpoints/installer.go`` and mux.

kube-apiserver installs a route per resource, verb and subresource; a path no API serves
falls through to the mux's plain-text ``404 page not found``. The server's
`pyctrl._apiserver.endpoints.request.Router` resolves a path to its ``Target`` (built-in
types and every established CRD version), `verb` names the request's verb (get, list, watch,
create, update, patch, delete, deletecollection), and `dispatch` calls the handler of
`pyctrl._apiserver.endpoints.handlers` that serves it, or answers 405 MethodNotAllowed.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from pyctrl._apiserver.apimachinery.errors import StatusError, method_not_allowed, unknown_resource
from pyctrl._apiserver.endpoints.filters import inject_faults, resource_names
from pyctrl._apiserver.endpoints.handlers.create import (
    create_eviction,
    create_resource,
    create_review,
    create_token_request,
)
from pyctrl._apiserver.endpoints.handlers.delete import delete_collection, delete_resource
from pyctrl._apiserver.endpoints.handlers.get import get_resource, list_resource
from pyctrl._apiserver.endpoints.handlers.patch import patch_resource
from pyctrl._apiserver.endpoints.handlers.update import update_resource
from pyctrl._apiserver.endpoints.handlers.watch import serve_watch
from pyctrl._apiserver.endpoints.negotiation import JSON, PATCH_TYPES, PROTOBUF, YAML
from pyctrl._apiserver.endpoints.request import DEPRECATION, Target, truthy
from pyctrl._apiserver.endpoints.responsewriters import page_not_found

if TYPE_CHECKING:
    from aiohttp import web

    from pyctrl._apiserver.endpoints.handlers.rest import Scope
    from pyctrl._apiserver.scheme.resources import Registry

__all__ = ["builtin_group", "claimed", "dispatch", "go_restful_route", "verb"]

_REVIEWS = {
    "/apis/authentication.k8s.io/v1/tokenreviews": (
        "TokenReview",
        ("tokenreviews", "tokenreviews.authentication.k8s.io"),
    ),
    "/apis/authorization.k8s.io/v1/subjectaccessreviews": (
        "SubjectAccessReview",
        ("subjectaccessreviews", "subjectaccessreviews.authorization.k8s.io"),
    ),
    "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews": (
        "SelfSubjectAccessReview",
        ("selfsubjectaccessreviews", "selfsubjectaccessreviews.authorization.k8s.io"),
    ),
}
"""The review kinds, answered and never stored, and the names faults match them by."""
_MEDIA_TYPES = (JSON, YAML, PROTOBUF)
_STREAM_MEDIA_TYPES = (f"{JSON};stream=watch", f"{PROTOBUF};stream=watch")
_REVIEW_GROUPS = frozenset({"authentication.k8s.io", "authorization.k8s.io"})
_SPECIAL_SUBRESOURCES = frozenset({"eviction", "token"})
"""Subresources with REST storage of their own (`_special`)."""
_SUBRESOURCE_VERBS = {
    "status": ("get", "update", "patch"),
    "scale": ("get", "update", "patch"),
    "finalize": ("update",),
}


def builtin_group(registry: Registry, group: str) -> bool:
    """Whether kube-apiserver itself (not a CRD) serves ``group`` ("" is the core group)."""
    return any(rt.group == group and not rt.crd_name for rt in registry.all())


def claimed(registry: Registry, path: str) -> bool:
    """Whether a go-restful web service claims ``path`` (the ``director`` of handler.go).

    Every built-in group version is a go-restful web service, and so are ``/api`` and
    each built-in ``/apis/<group>``: a path under one that no route serves gets go-restful's
    404, answered as a ``Status`` (``serviceErrorHandler``). Other paths fall through to
    the CRD handler and then the mux's plain-text ``404 page not found``.
    """
    parts = [p for p in path.split("/") if p != ""]
    if not parts:
        return False
    if parts[0] == "api":
        return True
    if parts[0] != "apis" or len(parts) < 2:
        return False
    return parts[1] in _REVIEW_GROUPS or builtin_group(registry, parts[1])


def verb(request: web.Request, target: Target) -> str:  # noqa: PLR0911 - RequestInfo's verb, one return per HTTP method and target
    """The Kubernetes verb of a request, empty when its method has none on the path."""
    method = request.method
    watch = target.legacy_watch or truthy(request.query.get("watch"))
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


def go_restful_route(request: web.Request, verb_name: str) -> None:
    """What go-restful's router refuses before a built-in type's handler runs.

    Its routes serve only their methods (no HEAD: 405), a PATCH route consumes only the
    patch types (415), and each route produces the serializers' media types, list and
    watch routes their stream types too (406). Each refusal is answered with go-restful's
    own text through ``serviceErrorHandler`` (``apierrors.NewGenericServerResponse``).
    """
    if request.method == "HEAD":
        raise method_not_allowed()
    if verb_name == "patch":
        patch_type = PATCH_TYPES.get((request.content_type or "").lower())
        if patch_type is None or patch_type == "apply-cbor":
            raise StatusError(415, "UnsupportedMediaType", "415: Unsupported Media Type")
    produces = _MEDIA_TYPES + (_STREAM_MEDIA_TYPES if verb_name in ("list", "watch") else ())
    if not _acceptable(request.headers.get("Accept") or "*/*", produces):
        raise StatusError(
            406,
            "NotAcceptable",
            "406: Not Acceptable\n\nAvailable representations: " + ", ".join(produces),
        )


@functools.lru_cache(maxsize=256)
def _acceptable(accept: str, produces: tuple[str, ...]) -> bool:
    """Whether a route producing the media types ``produces`` serves ``accept``."""
    for item in accept.split(","):
        media = item.split(";", 1)[0].strip()
        if media == "*/*" or media in produces:
            return True
    return False


async def _special(scope: Scope, request: web.Request, target: Target) -> web.Response | None:
    """Subresources served by their own REST storage (eviction, token), else None."""
    rt = target.rt
    if target.subresource == "eviction" and rt.storage_key == ("", "pods"):
        if request.method != "POST":
            raise method_not_allowed()
        await inject_faults(scope.faults, "create", resource_names(target))
        return await create_eviction(scope, request, target)
    if target.subresource == "token" and rt.plural == "serviceaccounts":
        if request.method != "POST":
            raise method_not_allowed()
        assert target.name is not None
        await inject_faults(scope.faults, "create", resource_names(target))
        return await create_token_request(scope, request, target.namespace or "", target.name)
    return None


async def dispatch(scope: Scope, request: web.Request) -> web.StreamResponse:
    """Serve an API request: route it, check its verb, and call its handler."""
    review = _REVIEWS.get(request.path)
    if review is not None:
        if request.method != "POST":
            raise method_not_allowed()
        kind, names = review
        await inject_faults(scope.faults, "create", names)
        return await create_review(scope, request, kind)
    target = scope.router.route(request.path)
    if target is None:
        if claimed(scope.registry, request.path):
            raise unknown_resource()
        return page_not_found()
    rt = target.rt
    # Set for every routed request (empty for most): `recovered` reads it without a miss.
    request[DEPRECATION] = rt.deprecation_warning
    if target.subresource in _SPECIAL_SUBRESOURCES:
        special = await _special(scope, request, target)
        if special is not None:
            return special
    name = verb(request, target)
    if not name or name not in rt.verbs:
        raise method_not_allowed()
    if target.subresource and name not in _SUBRESOURCE_VERBS.get(target.subresource, ()):
        raise method_not_allowed()
    if not rt.crd_name:
        go_restful_route(request, name)
    if scope.faults.active:
        await inject_faults(scope.faults, name, resource_names(target))
    return await _serve(scope, request, target, name)


async def _serve(  # noqa: PLR0911 - one handler per verb, as the installer's routes
    scope: Scope, request: web.Request, target: Target, name: str
) -> web.StreamResponse:
    rt = target.rt
    namespace = target.namespace or ""
    if name == "get":
        return await get_resource(scope, request, target)
    if name == "list":
        return await list_resource(scope, request, rt, target.namespace)
    if name == "watch":
        return await serve_watch(scope, request, rt, target.namespace, target.name)
    if name == "create":
        return await create_resource(scope, request, rt, namespace)
    if name == "update":
        return await update_resource(scope, request, target)
    if name == "patch":
        return await patch_resource(scope, request, target)
    if name == "delete":
        assert target.name is not None
        return await delete_resource(scope, request, rt, namespace, target.name)
    return await delete_collection(scope, request, rt, target.namespace)
