"""Get and list: k8s.io/apiserver's ``endpoints/handlers/get.go``.

`get` answers one object (or its ``scale``), `list` a collection with selectors, paging
and ``resourceVersion`` semantics; `list_option_errors` validates ``ListOptions`` as
``ValidateListOptions`` does, for lists and watches alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apimachinery.field import field_forbidden, field_not_supported
from pyctrl._apiserver.apimachinery.errors import invalid
from pyctrl._apiserver.endpoints.handlers.rest import (
    include_object,
    int_param,
    render_one,
    selectors,
    shard_selector,
)
from pyctrl._apiserver.endpoints.negotiation import negotiate_request
from pyctrl._apiserver.endpoints.request import truthy
from pyctrl._apiserver.endpoints.responsewriters import respond
from pyctrl._apiserver.endpoints.table import partial_metadata, to_table

if TYPE_CHECKING:
    from aiohttp import web

    from pyctrl._apimachinery.field import Cause
    from pyctrl._apiserver.endpoints.handlers.rest import Scope
    from pyctrl._apiserver.endpoints.negotiation import Negotiated
    from pyctrl._apiserver.endpoints.request import Target
    from pyctrl._apiserver.registry.generic import ListResult
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["get_resource", "list_option_errors", "list_resource"]


async def get_resource(scope: Scope, request: web.Request, target: Target) -> web.Response:
    """GET of one object, or of its ``scale`` subresource."""
    rt = target.rt
    neg = negotiate_request(request, allow_transform=not target.subresource)
    assert target.name is not None
    store = scope.stores.for_type(rt)
    obj = await store.external(store.get_stored(target.namespace or "", target.name))
    if target.subresource == "scale":
        return respond(request, store.scale_of(obj), neg=neg)
    return respond(request, render_one(rt, obj, neg, request), neg=neg)


def _match_errors(query: Any, *, watch: bool) -> list[Cause]:
    rv = query.get("resourceVersion", "")
    match = query.get("resourceVersionMatch", "")
    causes = []
    if match and match not in ("Exact", "NotOlderThan"):
        causes.append(
            field_not_supported("resourceVersionMatch", match, ["Exact", "NotOlderThan", ""])
        )
    if match and not rv and not (watch and truthy(query.get("sendInitialEvents"))):
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
    return causes


def _initial_events_errors(query: Any, *, watch: bool) -> list[Cause]:
    match = query.get("resourceVersionMatch", "")
    send_initial = query.get("sendInitialEvents")
    causes = []
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
                        "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                    )
                )
            if truthy(send_initial) and not truthy(query.get("allowWatchBookmarks")):
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
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            )
        )
    return causes


def list_option_errors(request: web.Request, *, watch: bool) -> None:
    """Raise 422 on the ``ListOptions`` of a list or watch that kube-apiserver refuses."""
    causes = _match_errors(request.query, watch=watch)
    causes += _initial_events_errors(request.query, watch=watch)
    if causes:
        raise invalid("meta.k8s.io", "ListOptions", "", causes)


async def list_resource(
    scope: Scope, request: web.Request, rt: ResourceType, namespace: str | None
) -> web.Response:
    """LIST of a collection, as JSON, YAML, a Table or PartialObjectMetadataList."""
    neg = negotiate_request(request, allow_transform=True)
    list_option_errors(request, watch=False)
    labels, fields = selectors(request, rt)
    shard, shard_text = shard_selector(scope, request)
    limit = int_param(request, "limit") or 0
    store = scope.stores.for_type(rt)
    result = store.list_stored(
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
    items = await store.external_many(result.items)
    return respond(request, _list_body(request, rt, neg, result, items), neg=neg)


def _list_body(
    request: web.Request,
    rt: ResourceType,
    neg: Negotiated,
    result: ListResult,
    items: list[dict[str, Any]],
) -> dict[str, Any]:
    if neg.kind == "table":
        return to_table(
            rt,
            items,
            include=include_object(request) or "Metadata",
            list_meta=result.meta,
            api_version=f"meta.k8s.io/{neg.version}",
        )
    if neg.kind == "meta":
        api_version = f"meta.k8s.io/{neg.version}"
        parts = []
        for o in items:
            p = partial_metadata(o)
            p["apiVersion"] = api_version
            parts.append(p)
        return {
            "kind": "PartialObjectMetadataList",
            "apiVersion": api_version,
            "metadata": result.meta,
            "items": parts,
        }
    if not rt.crd_name:
        items = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in items]
    return {
        "kind": rt.list_kind,
        "apiVersion": rt.api_version,
        "metadata": result.meta,
        "items": items,
    }
