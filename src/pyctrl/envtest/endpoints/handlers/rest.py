"""What every handler shares: k8s.io/apiserver's ``endpoints/handlers/rest.go``.

`Scope` is what the handlers need from the API server (its ``RequestScope``); the helpers
read and decode request bodies (with the request size limit), parse write options
(``dryRun``, ``fieldManager``, ``fieldValidation``), selectors and integer parameters, and
render one object as negotiated.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Protocol

import orjson
import yaml

from pyctrl.envtest.apimachinery import gojson
from pyctrl.envtest.apimachinery.errors import (
    StatusError,
    bad_request,
    field_invalid,
    field_not_supported,
    invalid,
)
from pyctrl.envtest.apimachinery.fields import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)
from pyctrl.envtest.endpoints import protobuf as _protobuf
from pyctrl.envtest.endpoints import yamlcodec as _yaml
from pyctrl.envtest.endpoints.negotiation import JSON, PROTOBUF, YAML, input_media_type
from pyctrl.envtest.endpoints.table import partial_metadata, to_table
from pyctrl.envtest.registry.generic import WriteOptions, meta_of
from pyctrl.envtest.storage.store import check_nesting
from pyctrl.sharding import ShardSelector, ShardSelectorError
from pyctrl.sharding import parse as parse_shard_selector

if TYPE_CHECKING:
    from aiohttp import web

    from pyctrl.envtest.authentication import Authenticator
    from pyctrl.envtest.authorization import Authorizer
    from pyctrl.envtest.endpoints.negotiation import Negotiated
    from pyctrl.envtest.faults import Faults
    from pyctrl.envtest.registry.generic import API
    from pyctrl.envtest.scheme.resources import Registry, ResourceType
    from pyctrl.envtest.storage.store import Store
    from pyctrl.envtest.storage.watch import WatchHub

__all__ = [
    "INCLUDE_VALUES",
    "MAX_BODY",
    "Scope",
    "check_body_kind",
    "decode_object",
    "dry_run",
    "include_object",
    "int_param",
    "manager_from_user_agent",
    "read_body",
    "render_one",
    "selectors",
    "shard_selector",
    "write_options",
]

MAX_BODY = 3 * 1024 * 1024
"""kube-apiserver's request body limit (``MaxRequestBodyBytes``): larger bodies get 413."""
INCLUDE_VALUES = ("", "None", "Metadata", "Object")
"""The accepted values of ``includeObject`` for Table answers."""


class Scope(Protocol):
    """What the handlers need from the API server (kube-apiserver's ``RequestScope``)."""

    api: API
    store: Store
    registry: Registry
    hub: WatchHub
    faults: Faults
    authn: Authenticator
    authz: Authorizer
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


def _summary(data: bytes, limit: int = 30) -> str:
    """``summarizeData``: the start of a body that did not decode, as text or hex."""
    if not data:
        return "<empty>"
    if data[0] == 0x7B:  # {
        text = data[:limit].decode(errors="replace")
        return text + " ..." if len(data) > limit else text
    return data[:limit].hex() + " ..." if len(data) > limit else data.hex()


def _unrecognized(kind: str, problem: str, raw: bytes) -> StatusError:
    """``transformDecodeError`` of a body whose kind could not be read."""
    return bad_request(
        f"the object provided is unrecognized (must be of type {kind}): "
        f"couldn't get version/kind; json parse error: {problem} ({_summary(raw)})"
    )


def _decode_json(raw: bytes, kind: str) -> Any:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        problem = gojson.syntax_error(raw)
        if problem is None:
            # JSON that Go reads and orjson does not (lone surrogates, invalid UTF-8).
            raise bad_request(f"couldn't get version/kind; json parse error: {exc}") from None
        raise _unrecognized(kind, problem, raw) from None
    return value


async def decode_object(request: web.Request, kind: str) -> dict[str, Any]:
    """Decode the request body (JSON, YAML or protobuf) into an object, or raise 4xx.

    Args:
        request: The request whose body is an object.
        kind: The kind the endpoint decodes into, which decoding errors name.
    """
    media = input_media_type(request)
    raw = await read_body(request)
    if media == JSON:
        value = _decode_json(raw, kind)
    elif media == PROTOBUF:
        try:
            value = _protobuf.decode_object(raw)
        except _protobuf.ProtobufError as exc:
            raise StatusError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format - accepted media types "
                f"include: {JSON}, {YAML} ({exc})",
                details=False,
            ) from None
    else:
        try:
            value = _yaml.load(raw) if raw else None
        except yaml.YAMLError as exc:
            raise bad_request(f"error converting YAML to JSON: {exc}") from None
    problem = gojson.kind_type_error(value)
    if problem is not None:
        raise _unrecognized(kind, problem, raw)
    if not isinstance(value, dict):
        raise bad_request(
            "Object 'Kind' is missing in '" + raw.decode(errors="replace")[:200] + "'"
        )
    check_nesting(value)
    return value


# Groups whose built-in types another scheme decodes (apiextensions-apiserver's, the
# aggregator's): this check only knows kube-apiserver's legacy scheme.
_OTHER_SCHEMES = frozenset({"apiextensions.k8s.io", "apiregistration.k8s.io"})
# Where kube-apiserver's scheme is created, as its errors name it (runtime.NewScheme).
_LEGACY_SCHEME = "pkg/api/legacyscheme/scheme.go:30"
# Kinds the scheme knows in group versions without serving them as resources (options,
# subresource kinds, core's odd types): whether one decodes is not decided here.
_UNSERVED_KINDS = frozenset(
    {
        "WatchEvent", "ListOptions", "GetOptions", "DeleteOptions", "CreateOptions",
        "UpdateOptions", "PatchOptions", "Status", "APIVersions", "APIGroupList", "APIGroup",
        "APIResourceList", "Scale", "Eviction", "TokenRequest", "Binding", "List",
        "RangeAllocation", "SerializedReference", "PodStatusResult", "PodLogOptions",
        "PodAttachOptions", "PodExecOptions", "PodPortForwardOptions", "PodProxyOptions",
        "NodeProxyOptions", "ServiceProxyOptions", "ComponentStatus", "ComponentStatusList",
    }
)  # fmt: skip


def _internal_package(group: str) -> str:
    """The Go package of a group's internal types (``pkg/apis/<name>``)."""
    if group in ("", "events.k8s.io"):
        return "core"
    if group == "internal.apiserver.k8s.io":
        return "apiserverinternal"
    return group.split(".", 1)[0]


def _maybe_registered(group: str) -> bool:
    """Whether kube-apiserver's scheme may hold versions of ``group`` that are not served."""
    return group != "" and ("." not in group or group.endswith(".k8s.io"))


def check_body_kind(registry: Registry, rt: ResourceType, body: dict[str, Any]) -> None:
    """Refuse a built-in body the legacy scheme decodes as another kind (400).

    kube-apiserver decodes a body into the type its ``apiVersion`` and ``kind`` name
    (defaulted from the endpoint), then converts it to the endpoint's internal type: a
    kind the scheme does not know fails the decoding, another known kind the conversion,
    both answered by ``transformDecodeError``. The same kind at another version converts,
    and the API version check after decoding answers it (in the registry).
    """
    if rt.crd_name or rt.group in _OTHER_SCHEMES:
        return
    api_version, kind = body.get("apiVersion") or "", body.get("kind") or ""
    if not isinstance(api_version, str) or not isinstance(kind, str) or api_version.count("/") > 1:
        return
    group, _, version = api_version.rpartition("/")
    kind = kind or rt.kind
    if not group and not version:
        group, version = rt.group, rt.version
    if (group, version, kind) == rt.gvk or kind in _UNSERVED_KINDS:
        return
    served = {
        name
        for t in registry.all()
        if not t.crd_name and (t.group, t.version) == (group, version)
        for name in (t.kind, t.list_kind)
    }
    if kind in served:
        if kind == rt.kind:
            return
        problem = (
            f"converting ({version}.{kind}) to ({_internal_package(rt.group)}.{rt.kind}): "
            "unknown conversion"
        )
    elif served or not _maybe_registered(group):
        gv = f"{group}/{version}" if group else version
        problem = f'no kind "{kind}" is registered for version "{gv}" in scheme "{_LEGACY_SCHEME}"'
    else:
        return
    raise bad_request(f'{kind} in version "{version}" cannot be handled as a {rt.kind}: {problem}')


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


def write_options(request: web.Request, kind: str) -> WriteOptions:
    """The create, update or patch options (``kind``) of the request's query."""
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
    return WriteOptions(
        dry_run=is_dry_run, field_manager=manager, field_validation=validation, raw=raw
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


def selectors(
    scope: Scope, request: web.Request, rt: ResourceType
) -> tuple[LabelSelector, FieldSelector]:
    """The request's label and field selectors, parsed and checked (400 when malformed)."""
    try:
        labels = parse_label_selector(request.query.get("labelSelector", ""))
    except SelectorError as exc:
        raise bad_request(str(exc)) from None
    try:
        fields = parse_field_selector(request.query.get("fieldSelector", ""))
    except SelectorError as exc:
        raise bad_request(str(exc)) from None
    scope.api.check_field_selector(rt, fields)
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
