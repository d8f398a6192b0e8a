"""Update: k8s.io/apiserver's ``endpoints/handlers/update.go``.

`update_resource` replaces an object (or its ``status``, ``scale`` or a namespace's
``finalize`` subresource) with the request body; it creates the object when the type
allows create on update, answering 201.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyctrl._apiserver.endpoints.handlers.decode import check_body_kind, check_name, decode_object
from pyctrl._apiserver.endpoints.handlers.rest import render_one, request_context
from pyctrl._apiserver.endpoints.negotiation import negotiate_request
from pyctrl._apiserver.endpoints.responsewriters import respond
from pyctrl._apiserver.registry.decoding import check_type_meta

if TYPE_CHECKING:
    from aiohttp import web

    from pyctrl._apiserver.endpoints.handlers.rest import Scope
    from pyctrl._apiserver.endpoints.request import Target

__all__ = ["update_resource"]


async def update_resource(scope: Scope, request: web.Request, target: Target) -> web.Response:
    """PUT of an object or subresource: 200 with the result, 201 when it created one."""
    rt = target.rt
    assert target.name is not None
    neg = negotiate_request(request, allow_transform=not target.subresource)
    ctx = request_context(request, "UpdateOptions")
    scale_kind = target.subresource == "scale"
    into = "Scale" if scale_kind else rt.kind
    body = await decode_object(request, into, unstructured=bool(rt.crd_name) and not scale_kind)
    namespace = target.namespace or ""
    store = scope.stores.for_type(rt)
    if scale_kind:
        check_type_meta(rt, body, kind="Scale")
        scale = await store.update_scale(ctx, namespace, target.name, scale_body=body)
        return respond(request, scale, neg=neg, warnings=ctx.warnings)
    check_body_kind(scope.registry, rt, body)
    check_name(rt, target.name, body)
    if target.subresource == "finalize":
        obj, created = await store.finalize(ctx, target.name, body)
    else:
        obj, created = await store.update(
            ctx, namespace, target.name, body, subresource=target.subresource
        )
    return respond(
        request,
        render_one(rt, obj, neg, request),
        201 if created else 200,
        neg,
        ctx.warnings,
    )
