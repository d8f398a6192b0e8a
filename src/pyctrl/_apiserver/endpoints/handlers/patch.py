"""Patch: k8s.io/apiserver's ``endpoints/handlers/patch.go``.

`patch_resource` applies a JSON patch, a JSON merge patch, a strategic merge patch
(built-in types only) or a server-side apply configuration to an object or subresource.
The Content-Type names the format; a format the resource does not take is 415 with the
list of those it does, as patch.go says (for a built-in type, go-restful's router refuses
it first: `pyctrl._apiserver.endpoints.installer.go_restful_route`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import yaml

from pyctrl._apimachinery.field import field_forbidden, field_required
from pyctrl._apiserver.apimachinery.errors import bad_request, invalid, unsupported_media_type
from pyctrl._apiserver.endpoints import yamlcodec as _yaml
from pyctrl._apiserver.endpoints.handlers.rest import read_body, render_one, request_context
from pyctrl._apiserver.endpoints.negotiation import PATCH_TYPES, negotiate_request
from pyctrl._apiserver.endpoints.request import truthy
from pyctrl._apiserver.endpoints.responsewriters import respond
from pyctrl._apiserver.storage.store import check_nesting

if TYPE_CHECKING:
    from aiohttp import web

    from pyctrl._apiserver.endpoints.handlers.rest import Scope
    from pyctrl._apiserver.endpoints.request import Target
    from pyctrl._apiserver.registry.options import RequestContext
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["decode_patch", "patch_resource"]

_CUSTOM_PATCH_TYPES = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
]
_BUILTIN_PATCH_TYPES = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
]


def _patch_type(request: web.Request, rt: ResourceType) -> str:
    """The patch format of the request's Content-Type, or 415 naming those accepted.

    (A built-in type's PATCH route refuses other types before: go-restful's 415.)
    """
    patch_type = PATCH_TYPES.get((request.content_type or "").lower())
    accepted = _CUSTOM_PATCH_TYPES if rt.crd_name else _BUILTIN_PATCH_TYPES
    if patch_type is None or patch_type == "apply-cbor":
        raise unsupported_media_type(accepted)
    if patch_type == "strategic" and rt.crd_name:
        raise unsupported_media_type(accepted)
    return patch_type


def _patch_context(request: web.Request, patch_type: str) -> RequestContext:
    ctx = request_context(request, "PatchOptions", patch_type=patch_type)
    force_raw = request.query.get("force")
    if patch_type == "apply":
        if not request.query.get("fieldManager"):
            raise invalid(
                "meta.k8s.io",
                "PatchOptions",
                "",
                [field_required("fieldManager", "is required for apply patch")],
            )
        ctx.force = truthy(force_raw)
    elif force_raw is not None:
        raise invalid(
            "meta.k8s.io",
            "PatchOptions",
            "",
            [field_forbidden("force", "may not be specified for non-apply patch")],
        )
    return ctx


async def patch_resource(scope: Scope, request: web.Request, target: Target) -> web.Response:
    """PATCH of an object or subresource: 200 with the result, 201 when apply created it."""
    rt = target.rt
    assert target.name is not None
    patch_type = _patch_type(request, rt)
    neg = negotiate_request(request, allow_transform=not target.subresource)
    ctx = _patch_context(request, patch_type)
    ctx.patch = decode_patch(await read_body(request), patch_type)
    namespace = target.namespace or ""
    store = scope.stores.for_type(rt)
    if target.subresource == "scale":
        scale = await store.update_scale(ctx, namespace, target.name, scale_body=None)
        return respond(request, scale, neg=neg, warnings=ctx.warnings)
    obj, created = await store.patch(ctx, namespace, target.name, subresource=target.subresource)
    return respond(
        request,
        render_one(rt, obj, neg, request),
        201 if created else 200,
        neg,
        ctx.warnings,
    )


def decode_patch(raw: bytes, patch_type: str) -> Any:
    """Decode a patch body: YAML for apply, JSON for the others (400 when malformed)."""
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
