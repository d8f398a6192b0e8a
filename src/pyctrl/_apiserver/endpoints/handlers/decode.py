"""Request bodies decoded as kube-apiserver's codecs decode them.

kube-apiserver reads a body's ``apiVersion`` and ``kind`` with Go's ``encoding/json``
(apimachinery's ``SimpleMetaFactory``), defaults them from the endpoint, creates the type
they name in the endpoint's scheme, decodes into it and converts the result to the
endpoint's internal type; ``transformDecodeError`` (``endpoints/handlers/rest.go``)
turns a failure into a 400. `decode_object` gives the same answers for bodies that are
not JSON objects, `check_body_kind` for bodies naming a kind the endpoint cannot take
(the scheme has no such kind: ``no kind "X" is registered``; another kind: ``unknown
conversion``), and `check_name` is update.go's ``checkName``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import yaml

from pyctrl._apiserver.apimachinery import gojson
from pyctrl._apiserver.apimachinery.errors import StatusError, bad_request
from pyctrl._apiserver.endpoints import protobuf as _protobuf
from pyctrl._apiserver.endpoints import yamlcodec as _yaml
from pyctrl._apiserver.endpoints.handlers.rest import read_body
from pyctrl._apiserver.endpoints.negotiation import JSON, PROTOBUF, YAML, input_media_type
from pyctrl._apiserver.storage.store import MAX_OBJECT_DEPTH, check_nesting

if TYPE_CHECKING:
    from aiohttp import web

    from pyctrl._apiserver.scheme.resources import Registry, ResourceType

__all__ = ["check_body_kind", "check_name", "decode_object"]

# Where each scheme is created, as its errors name it (runtime.NewScheme's call site).
_LEGACY_SCHEME = "pkg/api/legacyscheme/scheme.go:30"
_APIEXTENSIONS_SCHEME = "pkg/apiserver/apiserver.go:55"
_APIEXTENSIONS = "apiextensions.k8s.io"
# metav1's kinds: the options and WatchEvent in every registered group version, the
# unversioned ones in any (runtime.Scheme.New finds them by kind alone).
_META_OPTIONS = frozenset(
    {
        "WatchEvent", "ListOptions", "GetOptions", "DeleteOptions", "CreateOptions",
        "UpdateOptions", "PatchOptions",
    }
)  # fmt: skip
_UNVERSIONED = frozenset({"Status", "APIVersions", "APIGroupList", "APIGroup", "APIResourceList"})
# Kinds the legacy scheme registers without a served resource of that kind (subresource
# kinds, core's odd types): whether one is registered at a version is not decided here.
_UNSURE = frozenset(
    {
        "Scale", "Eviction", "TokenRequest", "Binding", "List", "RangeAllocation",
        "SerializedReference", "PodStatusResult", "PodLogOptions", "PodAttachOptions",
        "PodExecOptions", "PodPortForwardOptions", "PodProxyOptions", "NodeProxyOptions",
        "ServiceProxyOptions", "ComponentStatus", "ComponentStatusList",
    }
)  # fmt: skip


_SHALLOW_BYTES = 2 * MAX_OBJECT_DEPTH
"""A body this short cannot nest deeper than `MAX_OBJECT_DEPTH` (each level takes two bytes
in JSON, and more in YAML and protobuf), so its nesting goes unchecked."""


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
        f"the object provided is unrecognized (must be of type {kind}): {problem} ({_summary(raw)})"
    )


def _decode_json(raw: bytes, kind: str) -> Any:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        problem = gojson.syntax_error(raw)
        if problem is None:
            # JSON that Go reads and orjson does not (lone surrogates, invalid UTF-8).
            raise bad_request(f"couldn't get version/kind; json parse error: {exc}") from None
        raise _unrecognized(
            kind, f"couldn't get version/kind; json parse error: {problem}", raw
        ) from None
    return value


def _decode(raw: bytes, media: str, kind: str) -> Any:
    if media == JSON:
        return _decode_json(raw, kind)
    if media == PROTOBUF:
        try:
            return _protobuf.decode_object(raw)
        except _protobuf.ProtobufError as exc:
            raise StatusError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format - accepted media types "
                f"include: {JSON}, {YAML} ({exc})",
                details=False,
            ) from None
    try:
        return _yaml.load(raw) if raw else None
    except yaml.YAMLError as exc:
        raise bad_request(f"error converting YAML to JSON: {exc}") from None


async def decode_object(
    request: web.Request, kind: str, *, unstructured: bool = False
) -> dict[str, Any]:
    """Decode the request body (JSON, YAML or protobuf) into an object, or raise 4xx.

    Args:
        request: The request whose body is an object.
        kind: The kind the endpoint decodes into, which decoding errors name.
        unstructured: The endpoint decodes into an unstructured object (a custom
            resource's), for which ``null`` has no kind; a typed endpoint decodes it as
            an empty object.
    """
    media = input_media_type(request)
    raw = await read_body(request)
    value = _decode(raw, media, kind)
    if isinstance(value, dict):
        if len(raw) > _SHALLOW_BYTES:
            check_nesting(value)
        return value
    problem = gojson.kind_type_error(value)
    if problem is not None:
        raise _unrecognized(kind, f"couldn't get version/kind; json parse error: {problem}", raw)
    if value is None and media != PROTOBUF:
        if not unstructured:
            return {}
        missing = "Object 'Kind' is missing in '" + raw.decode(errors="replace") + "'"
        raise _unrecognized(kind, missing, raw)
    raise bad_request("Object 'Kind' is missing in '" + raw.decode(errors="replace")[:200] + "'")


def _maybe_registered(group: str) -> bool:
    """Whether the legacy scheme may hold versions of ``group`` that are not served."""
    return group != "" and ("." not in group or group.endswith(".k8s.io"))


def _registered_kinds(
    registry: Registry, rt: ResourceType, group: str, version: str
) -> frozenset[str] | None:
    """The kinds the endpoint's scheme registers at group/version; None when unknown."""
    if rt.group == _APIEXTENSIONS:
        if group == _APIEXTENSIONS and version in ("v1", "v1beta1"):
            return _META_OPTIONS | {"CustomResourceDefinition", "CustomResourceDefinitionList"}
        return _META_OPTIONS if (group, version) == ("", "v1") else frozenset()
    served = {
        name
        for t in registry.all()
        if not t.crd_name and (t.group, t.version) == (group, version)
        for name in (t.kind, t.list_kind)
    }
    if served:
        return _META_OPTIONS | served
    return None if _maybe_registered(group) else frozenset()


def _internal_package(group: str) -> str:
    """The Go package of a group's internal types (``pkg/apis/<name>``)."""
    if group in ("", "events.k8s.io"):
        return "core"
    if group == "internal.apiserver.k8s.io":
        return "apiserverinternal"
    return group.split(".", 1)[0]


def check_body_kind(registry: Registry, rt: ResourceType, body: dict[str, Any]) -> None:
    """Refuse a built-in body that its scheme decodes as another kind, or not at all (400).

    The same kind at another registered version converts, and the API version check
    after decoding answers it (in the registry); kinds whose registration is unknown here
    are left to it too.
    """
    if rt.crd_name or rt.group == "apiregistration.k8s.io":
        return
    api_version, kind = body.get("apiVersion") or "", body.get("kind") or ""
    if (not api_version or api_version == rt.api_version) and (not kind or kind == rt.kind):
        return
    if not isinstance(api_version, str) or not isinstance(kind, str) or api_version.count("/") > 1:
        return
    group, _, version = api_version.rpartition("/")
    kind = kind or rt.kind
    if not group and not version:
        group, version = rt.group, rt.version
    legacy = rt.group != _APIEXTENSIONS
    if (group, version, kind) == rt.gvk or (legacy and kind in _UNSURE):
        return
    internal = f"({_internal_package(rt.group)}.{rt.kind})"
    if kind in _UNVERSIONED:
        problem = f"converting (v1.{kind}) to {internal}: unknown conversion"
    else:
        kinds = _registered_kinds(registry, rt, group, version)
        if kinds is None or (kind in kinds and kind == rt.kind):
            return
        if kind in kinds:
            package = "v1" if kind in _META_OPTIONS else version
            problem = f"converting ({package}.{kind}) to {internal}: unknown conversion"
        else:
            gv = f"{group}/{version}" if group else version
            scheme = _LEGACY_SCHEME if legacy else _APIEXTENSIONS_SCHEME
            problem = f'no kind "{kind}" is registered for version "{gv}" in scheme "{scheme}"'
    raise bad_request(f'{kind} in version "{version}" cannot be handled as a {rt.kind}: {problem}')


def check_name(rt: ResourceType, name: str, body: dict[str, Any]) -> None:
    """update.go's ``checkName`` for a body without a name: 400 (before any other check).

    A body of another API version is left to the registry's API version check, which
    kube-apiserver makes first.
    """
    if body.get("apiVersion") not in (None, "", rt.api_version):
        return
    meta = body.get("metadata")
    if meta is None or (isinstance(meta, dict) and not meta.get("name")):
        raise bad_request(
            f"the name of the object ({name} based on URL) was undeterminable: "
            "name must be provided"
        )
