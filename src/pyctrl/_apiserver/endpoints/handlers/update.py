"""Update: k8s.io/apiserver's ``endpoints/handlers/update.go``.

`update_resource` replaces an object (or its ``status``, ``scale`` or a namespace's
``finalize`` subresource) with the request body; it creates the object when the type
allows create on update, answering 201.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyctrl._apiserver.endpoints.handlers.decode import check_body_kind, check_name, decode_object
from pyctrl._apiserver.endpoints.handlers.rest import render_one, write_options
from pyctrl._apiserver.endpoints.negotiation import negotiate_request
from pyctrl._apiserver.endpoints.responsewriters import respond

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
    opts = write_options(request, "UpdateOptions")
    scale_kind = target.subresource == "scale"
    into = "Scale" if scale_kind else rt.kind
    body = await decode_object(request, into, unstructured=bool(rt.crd_name) and not scale_kind)
    namespace = target.namespace or ""
    if scale_kind:
        scope.api.check_type_meta(rt, body, kind="Scale")
        scale = await scope.api.update_scale(
            rt, namespace, target.name, scale_body=body, patch_type="", patch=None, opts=opts
        )
        return respond(request, scale, neg=neg, warnings=opts.warnings)
    check_body_kind(scope.registry, rt, body)
    check_name(rt, target.name, body)
    if target.subresource == "finalize":
        obj, created = await scope.api.finalize_namespace(rt, target.name, body, opts)
    else:
        obj, created = await scope.api.update(
            rt, namespace, target.name, body, opts=opts, subresource=target.subresource
        )
    return respond(
        request,
        render_one(rt, obj, neg, request),
        201 if created else 200,
        neg,
        opts.warnings,
    )
