"""What every handler shares: k8s.io/apiserver's ``endpoints/handlers/rest.go``.

`Scope` is what the handlers need from the API server (its ``RequestScope``); the helpers
read request bodies (with the request size limit), parse write options (``dryRun``,
``fieldManager``, ``fieldValidation``), selectors and integer parameters, and render one
object as negotiated. Decoding bodies into objects is `decode`'s.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Protocol

from pyctrl._apimachinery.field import field_invalid, field_not_supported
from pyctrl._apiserver.apimachinery.errors import StatusError, bad_request, invalid
from pyctrl._apiserver.apimachinery.fields import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)
from pyctrl._apiserver.endpoints.request import USER
from pyctrl._apiserver.endpoints.table import partial_metadata, to_table
from pyctrl._apiserver.registry.generic import RequestContext, meta_of
from pyctrl._apiserver.registry.listing import check_field_selector
from pyctrl._apiserver.user import ADMIN
from pyctrl.sharding import ShardSelector, ShardSelectorError
from pyctrl.sharding import parse as parse_shard_selector

if TYPE_CHECKING:
    from aiohttp import web

    from pyctrl._apiserver.authentication import Authenticator
    from pyctrl._apiserver.authorization import Authorizer
    from pyctrl._apiserver.endpoints.negotiation import Negotiated
    from pyctrl._apiserver.endpoints.request import Router
    from pyctrl._apiserver.faults import Faults
    from pyctrl._apiserver.registry.generic import Stores
    from pyctrl._apiserver.scheme.resources import Registry, ResourceType
    from pyctrl._apiserver.storage.store import Store
    from pyctrl._apiserver.storage.watch import WatchHub
    from pyctrl.clock import Clock

__all__ = [
    "INCLUDE_VALUES",
    "MAX_BODY",
    "Scope",
    "dry_run",
    "include_object",
    "int_param",
    "manager_from_user_agent",
    "read_body",
    "render_one",
    "request_context",
    "selectors",
    "shard_selector",
]

MAX_BODY = 3 * 1024 * 1024
"""kube-apiserver's request body limit (``MaxRequestBodyBytes``): larger bodies get 413."""
INCLUDE_VALUES = ("", "None", "Metadata", "Object")
"""The accepted values of ``includeObject`` for Table answers."""


class Scope(Protocol):
    """What the handlers need from the API server (kube-apiserver's ``RequestScope``)."""

    stores: Stores
    store: Store
    registry: Registry
    router: Router
    hub: WatchHub
    faults: Faults
    authn: Authenticator
    authz: Authorizer
    clock: Clock
    bookmark_interval: float
    watch_queue_size: int
    sharded_list_and_watch: bool


async def read_body(request: web.Request) -> bytes:
    """The request body, or 413 RequestEntityTooLarge past `MAX_BODY`."""
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise StatusError(
            413, "RequestEntityTooLarge", "the request body is too large", details=False
        )
    return await request.read()


def dry_run(request: web.Request, kind: str) -> bool:
    """Whether ``dryRun=All`` was asked; any other value is 422 on the ``kind`` options."""
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


def request_context(
    request: web.Request, kind: str, *, patch_type: str = "", patch: Any = None
) -> RequestContext:
    """The context of a create, update or patch request (``kind``: its options' kind).

    Built once per request from its query: ``dryRun``, ``fieldManager`` (else the
    User-Agent's prefix), ``fieldValidation``; a PATCH's type and decoded patch; the
    user authentication found (`ADMIN` when the server authenticates no one).
    """
    is_dry_run = dry_run(request, kind)
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
        manager = manager_from_user_agent(request.headers.get("User-Agent", ""))
    validation = request.query.get("fieldValidation", "Warn") or "Warn"
    if validation not in ("Ignore", "Warn", "Strict"):
        raise bad_request(
            f"fieldValidation must be one of: Ignore, Warn, Strict; got {validation!r}"
        )
    raw: dict[str, Any] = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    if is_dry_run:
        raw["dryRun"] = ["All"]
    if request.query.get("fieldManager"):
        raw["fieldManager"] = request.query["fieldManager"]
    return RequestContext(
        dry_run=is_dry_run,
        field_manager=manager,
        field_validation=validation,
        raw=raw,
        patch_type=patch_type,
        patch=patch,
        user=request.get(USER, ADMIN),
    )


@functools.lru_cache(maxsize=256)
def manager_from_user_agent(user_agent: str) -> str:
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


def int_param(request: web.Request, name: str) -> int | None:
    """An integer query parameter, None when absent or empty, 400 when not a number."""
    value = request.query.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax') from None


def include_object(request: web.Request) -> str:
    """The ``includeObject`` parameter of a Table answer, as given (400 when unknown)."""
    include = request.query.get("includeObject", "Metadata")
    if include not in INCLUDE_VALUES:
        raise bad_request(f'unrecognized includeObject value: "{include}"')
    return include


def render_one(rt: ResourceType, obj: dict[str, Any], neg: Negotiated, request: web.Request) -> Any:
    """One object as negotiated: itself, a one-row Table or its PartialObjectMetadata."""
    if neg.kind == "table":
        return to_table(
            rt,
            [obj],
            include=include_object(request) or "Metadata",
            list_meta={"resourceVersion": meta_of(obj).get("resourceVersion", "")},
            api_version=f"meta.k8s.io/{neg.version}",
        )
    if neg.kind == "meta":
        out = partial_metadata(obj)
        out["apiVersion"] = f"meta.k8s.io/{neg.version}"
        return out
    return obj


def selectors(request: web.Request, rt: ResourceType) -> tuple[LabelSelector, FieldSelector]:
    """The request's label and field selectors, parsed and checked (400 when malformed)."""
    try:
        labels = parse_label_selector(request.query.get("labelSelector", ""))
    except SelectorError as exc:
        raise bad_request(str(exc)) from None
    try:
        fields = parse_field_selector(request.query.get("fieldSelector", ""))
    except SelectorError as exc:
        raise bad_request(str(exc)) from None
    check_field_selector(rt, fields)
    return labels, fields


def shard_selector(scope: Scope, request: web.Request) -> tuple[ShardSelector | None, str]:
    """The request's ``shardSelector`` (KEP-5866), parsed; None when absent or gated off."""
    text = request.query.get("shardSelector", "")
    if not text or not scope.sharded_list_and_watch:
        return None, ""
    try:
        return parse_shard_selector(text), text
    except ShardSelectorError as exc:
        raise bad_request(f"invalid shard selector: {exc}") from None
