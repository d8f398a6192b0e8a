"""Embedded resources: TypeMeta and ObjectMeta checks of apiextensions' ``schema/objectmeta``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from pyctrl._apiextensions.formats import is_datetime
from pyctrl._apiextensions.names import (
    DNS1123_LABEL_FMT,
    DNS1123_LABEL_RE,
    is_dns1035_label,
    is_label_value,
    is_qualified_name,
    regex_error,
)
from pyctrl._apimachinery.field import (
    Cause,
    Path,
    cause,
    child,
    field_invalid,
    field_required,
    index,
    json_kind,
    key_path,
)
from pyctrl._apimachinery.gofmt import OMIT, go_quote

if TYPE_CHECKING:
    from pyctrl._apiextensions.nodes import Node

_OBJECT_META_STRINGS: Final = (
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
)
_OBJECT_META_INTS: Final = ("generation", "deletionGracePeriodSeconds")
_OBJECT_META_TIMES: Final = ("creationTimestamp", "deletionTimestamp")
_OBJECT_META_STRING_MAPS: Final = ("labels", "annotations")
_OBJECT_META_LISTS: Final = ("ownerReferences", "finalizers", "managedFields")
OBJECT_META_FIELDS: Final = frozenset(
    _OBJECT_META_STRINGS
    + _OBJECT_META_INTS
    + _OBJECT_META_TIMES
    + _OBJECT_META_STRING_MAPS
    + _OBJECT_META_LISTS
)


def _json_type_name(value: Any) -> str:
    kind = json_kind(value)
    return {"integer": "number", "boolean": "bool"}.get(kind, kind)


def object_meta_field_error(key: str, value: Any) -> str | None:  # noqa: PLR0911 - one return per ObjectMeta field type, as schema/objectmeta's coercion
    """Why ``value`` cannot decode into ObjectMeta's ``key`` field, or None."""
    go_field = key[0].upper() + key[1:]

    def wrong(go_type: str) -> str:
        return (
            f"json: cannot unmarshal {_json_type_name(value)} into Go struct field "
            f"ObjectMeta.{key} of type {go_type}"
        )

    del go_field
    if value is None:
        return None
    if key in _OBJECT_META_STRINGS:
        return None if isinstance(value, str) else wrong("string")
    if key in _OBJECT_META_INTS:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return None if ok else wrong("int64")
    if key in _OBJECT_META_TIMES:
        if not isinstance(value, str):
            return wrong("v1.Time")
        return None if is_datetime(value) else f"parsing time {go_quote(value)} as RFC3339"
    if key in _OBJECT_META_STRING_MAPS:
        if not isinstance(value, dict):
            return wrong("map[string]string")
        for v in value.values():
            if not isinstance(v, str):
                return wrong("string")
        return None
    if key in _OBJECT_META_LISTS:
        if not isinstance(value, list):
            return wrong(
                "[]" + {"finalizers": "string"}.get(key, "v1." + key[0].upper() + key[1:-1])
            )
        if key == "finalizers" and not all(isinstance(v, str) for v in value):
            return wrong("string")
        return None
    return None


def _object_meta_decode_error(meta: Any) -> str | None:
    if not isinstance(meta, dict):
        return f"json: cannot unmarshal {_json_type_name(meta)} into Go value of type v1.ObjectMeta"
    for key, value in meta.items():
        if key in OBJECT_META_FIELDS:
            err = object_meta_field_error(key, value)
            if err is not None:
                return err
    return None


def _object_meta_errors(meta: dict[str, Any], path: str) -> list[Cause]:  # noqa: PLR0912 - one cause per ObjectMeta rule, in ValidateObjectMeta's order
    """apimachinery's ValidateObjectMeta with ValidatePathSegmentName, as for embedded objects."""
    errs: list[Cause] = []

    def segment_errors(name: str, prefix: bool) -> list[str]:
        if not prefix and name in (".", ".."):
            return [f"may not be '{name}'"]
        return [f"may not contain '{c}'" for c in ("/", "%") if c in name]

    generate_name = meta.get("generateName") or ""
    if generate_name:
        for msg in segment_errors(generate_name, True):
            errs.append(field_invalid(f"{path}.generateName", generate_name, msg))
    name = meta.get("name") or "fakename"
    for msg in segment_errors(name, False):
        errs.append(field_invalid(f"{path}.name", name, msg))
    namespace = meta.get("namespace") or ""
    if namespace:
        ns_errs: list[str] = []
        if len(namespace) > 63:
            ns_errs.append("must be no more than 63 characters")
        if not DNS1123_LABEL_RE.match(namespace):
            ns_errs.append(
                regex_error(
                    "a lowercase RFC 1123 label must consist of lower case alphanumeric "
                    "characters or "
                    "'-', and must start and end with an alphanumeric character",
                    DNS1123_LABEL_FMT,
                    "my-name",
                    "123-abc",
                )
            )
        for msg in ns_errs:
            errs.append(field_invalid(f"{path}.namespace", namespace, msg))
    generation = meta.get("generation")
    if isinstance(generation, int) and generation < 0:
        errs.append(
            field_invalid(f"{path}.generation", generation, "must be greater than or equal to 0")
        )
    labels = meta.get("labels")
    if isinstance(labels, dict):
        for k, v in labels.items():
            for msg in is_qualified_name(k):
                errs.append(field_invalid(f"{path}.labels", k, msg))
            for msg in is_label_value(v):
                errs.append(field_invalid(f"{path}.labels", v, msg))
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        total = 0
        for k, v in annotations.items():
            for msg in is_qualified_name(k.lower()):
                errs.append(field_invalid(f"{path}.annotations", k, msg))
            total += len(k) + len(v)
        if total > 256 * 1024:
            errs.append(
                cause(
                    "FieldValueTooLong",
                    "Too long",
                    f"{path}.annotations",
                    OMIT,
                    "must have at most 262144 bytes",
                )
            )
    return errs


def _parse_group_version_error(api_version: str) -> str | None:
    if not api_version or api_version == "/":
        return None
    if api_version.count("/") > 1:
        return f"unexpected GroupVersion string: {api_version}"
    return None


def _embedded_resource_errors(path: Path, x: dict[str, Any]) -> list[Cause]:  # noqa: PLR0912 - validateEmbeddedResource's checks of apiVersion, kind and metadata
    errs: list[Cause] = []
    if "apiVersion" not in x:
        errs.append(field_required(child(path, "apiVersion")))
    if "kind" not in x:
        errs.append(field_required(child(path, "kind")))
    for k, v in x.items():
        if k == "apiVersion":
            if not isinstance(v, str):
                errs.append(field_invalid(child(path, "apiVersion"), v, "must be a string"))
            elif not v:
                errs.append(field_required(child(path, "apiVersion")))
            elif (gv_err := _parse_group_version_error(v)) is not None:
                errs.append(field_invalid(child(path, "apiVersion"), v, gv_err))
        elif k == "kind":
            if not isinstance(v, str):
                errs.append(field_invalid(child(path, "kind"), v, "must be a string"))
            elif not v:
                errs.append(field_required(child(path, "kind")))
            elif dns_errs := is_dns1035_label(v.lower()):
                errs.append(
                    field_invalid(
                        child(path, "kind"),
                        v,
                        "may have mixed case, but should otherwise match: " + ",".join(dns_errs),
                    )
                )
        elif k == "metadata":
            decode_err = _object_meta_decode_error(v)
            if decode_err is not None:
                errs.append(field_invalid(child(path, "metadata"), v, decode_err))
            else:
                assert isinstance(v, dict)
                errs += _object_meta_errors(v, child(path, "metadata"))
    return errs


def embedded_meta_errors(
    x: Any, node: Node | None, path: Path, is_resource_root: bool
) -> list[Cause]:
    """objectmeta.Validate: TypeMeta and ObjectMeta of embedded resources."""
    if node is None or not (node.has_embedded or is_resource_root):
        return []
    errs: list[Cause] = []
    if isinstance(x, dict):
        if node.embedded or is_resource_root:
            errs += _embedded_resource_errors(path, x)
        props = node.properties
        for k, v in x.items():
            sub = props.get(k) if props else None
            if sub is not None:
                errs += embedded_meta_errors(v, sub, child(path, k), False)
            elif node.additional is not None:
                errs += embedded_meta_errors(v, node.additional, key_path(path, k), False)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            errs += embedded_meta_errors(v, node.items, index(path, i), False)
    return errs
