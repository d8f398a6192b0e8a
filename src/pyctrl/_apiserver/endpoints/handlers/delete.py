"""Delete: k8s.io/apiserver's ``endpoints/handlers/delete.go``.

`delete_resource` deletes one object (gracefully, with preconditions, propagation and
dry run as the ``DeleteOptions`` say, from the query or the body); `delete_collection`
deletes every object a selector matches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import yaml

from pyctrl._apiserver.apimachinery.errors import bad_request
from pyctrl._apiserver.endpoints import yamlcodec as _yaml
from pyctrl._apiserver.endpoints.handlers.rest import (
    dry_run,
    int_param,
    read_body,
    render_one,
    selectors,
)
from pyctrl._apiserver.endpoints.negotiation import negotiate_request
from pyctrl._apiserver.endpoints.request import USER, truthy
from pyctrl._apiserver.endpoints.responsewriters import respond
from pyctrl._apiserver.registry.generic import DeleteOptions
from pyctrl._apiserver.storage.store import check_nesting
from pyctrl._apiserver.user import ADMIN

if TYPE_CHECKING:
    from aiohttp import web

    from pyctrl._apiserver.endpoints.handlers.rest import Scope
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["delete_collection", "delete_options", "delete_resource"]


async def _options_body(request: web.Request) -> dict[str, Any]:
    raw = await read_body(request)
    if not raw.strip():
        return {}
    try:
        decoded = orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:
            decoded = _yaml.load(raw)
        except yaml.YAMLError as exc:
            raise bad_request(f"error decoding DeleteOptions: {exc}") from None
    if decoded is None:
        return {}
    if not isinstance(decoded, dict):
        raise bad_request("DeleteOptions must be an object")
    check_nesting(decoded)
    return decoded


async def delete_options(request: web.Request) -> DeleteOptions:
    """The ``DeleteOptions`` of a request: its body, overridden by the query parameters."""
    body = await _options_body(request)
    query = request.query
    propagation = query.get("propagationPolicy") or body.get("propagationPolicy")
    orphan: bool | None = None
    if "orphanDependents" in query:
        orphan = truthy(query["orphanDependents"])
    elif body.get("orphanDependents") is not None:
        orphan = bool(body["orphanDependents"])
    grace = int_param(request, "gracePeriodSeconds")
    if grace is None and body.get("gracePeriodSeconds") is not None:
        grace = int(body["gracePeriodSeconds"])
    is_dry_run = dry_run(request, "DeleteOptions") or body.get("dryRun") == ["All"]
    pre = body.get("preconditions") or {}
    return DeleteOptions(
        propagation=propagation,
        orphan_dependents=orphan,
        grace_period=grace,
        uid=pre.get("uid"),
        resource_version=pre.get("resourceVersion"),
        dry_run=is_dry_run,
        raw={"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", **body},
        user=request.get(USER, ADMIN),
    )


async def delete_resource(
    scope: Scope, request: web.Request, rt: ResourceType, namespace: str, name: str
) -> web.Response:
    """DELETE of one object: the object while finalizers hold it, else a Success Status."""
    neg = negotiate_request(request, allow_transform=True)
    opts = await delete_options(request)
    result, code = await scope.stores.for_type(rt).delete(namespace, name, opts)
    if result.get("kind") == "Status":
        return respond(request, result, code, warnings=opts.warnings)
    return respond(request, render_one(rt, result, neg, request), code, neg, opts.warnings)


async def delete_collection(
    scope: Scope, request: web.Request, rt: ResourceType, namespace: str | None
) -> web.Response:
    """DELETE of a collection: every object the selectors match, answered as a list."""
    opts = await delete_options(request)
    labels, fields = selectors(request, rt)
    store = scope.stores.for_type(rt)
    items = await store.delete_collection(namespace, labels, fields, opts)
    ext = await store.external_many(items)
    if not rt.crd_name:
        ext = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in ext]
    body = {
        "kind": rt.list_kind,
        "apiVersion": rt.api_version,
        "metadata": {"resourceVersion": str(scope.store.rv)},
        "items": ext,
    }
    return respond(request, body)
