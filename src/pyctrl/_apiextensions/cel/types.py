"""CEL static types derived from schemas (apiextensions' ``model.SchemaDeclType``)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final

from pyctrl._apiextensions.cel.values import b64, date_to_timestamp, is_int, parse_duration

if TYPE_CHECKING:
    from collections.abc import Callable

# ---------------------------------------------------------------------------------------
# Static types derived from schemas (model.SchemaDeclType).
# ---------------------------------------------------------------------------------------


class T:
    """A static CEL type: a kind plus element type (lists, maps, optionals) or fields."""

    __slots__ = ("elem", "fields", "kind")

    def __init__(
        self, kind: str, elem: T | None = None, fields: dict[str, tuple[str, T]] | None = None
    ) -> None:
        self.kind = kind
        self.elem = elem
        self.fields = fields

    def __repr__(self) -> str:
        if self.kind == "list":
            return f"list({self.elem!r})"
        if self.kind == "map":
            return f"map(string, {self.elem!r})"
        if self.kind == "optional":
            return f"optional_type({self.elem!r})"
        return self.kind


DYN: Final = T("dyn")
BOOL: Final = T("bool")
INT: Final = T("int")
UINT: Final = T("uint")
DOUBLE: Final = T("double")
STRING: Final = T("string")
BYTES: Final = T("bytes")
NULL: Final = T("null_type")
TIMESTAMP: Final = T("google.protobuf.Timestamp")
DURATION: Final = T("google.protobuf.Duration")
TYPE: Final = T("type")
_PRIMITIVES: Final = {
    "bool": BOOL,
    "int": INT,
    "uint": UINT,
    "double": DOUBLE,
    "string": STRING,
    "bytes": BYTES,
    "null_type": NULL,
}

RESERVED: Final = frozenset(
    [
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ]
)


def escape_name(name: str) -> str | None:
    """apiserver's cel.Escape: the CEL identifier for a property name, or None.

    Args:
        name: The JSON property name.

    Returns:
        E.g. ``x__dash__y`` for ``x-y``, ``__namespace__`` for ``namespace``; None when
        the name cannot be expressed in CEL.
    """
    if not name or name[0].isdigit():
        return None
    if name in RESERVED:
        return f"__{name}__"
    out = re.sub(
        r"__|\.|-|/",
        lambda m: {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}[
            m.group(0)
        ],
        name,
    )
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", out):
        return None
    return out


def _with_type_and_object_meta(schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    assert isinstance(props, dict)
    meta = props.get("metadata") if isinstance(props.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    meta_props = meta.get("properties") if isinstance(meta.get("properties"), dict) else {}
    assert isinstance(meta_props, dict)

    def typ(d: Any) -> Any:
        return d.get("type") if isinstance(d, dict) else None

    if (
        typ(props.get("kind")) == "string"
        and typ(props.get("apiVersion")) == "string"
        and typ(meta) == "object"
        and typ(meta_props.get("name")) == "string"
        and typ(meta_props.get("generateName")) == "string"
    ):
        return schema
    string = {"type": "string"}
    new_props = dict(props)
    new_props["kind"] = string
    new_props["apiVersion"] = string
    new_props["metadata"] = {
        "type": "object",
        "properties": {"name": string, "generateName": string},
    }
    return {**schema, "properties": new_props}


def schema_type(schema: Any, is_resource_root: bool) -> T | None:  # noqa: PLR0911, PLR0912 - one case per OpenAPI type and extension, as apiserver/pkg/cel's SchemaDeclType
    """The CEL type of values of a schema node, or None when CEL cannot see them.

    Args:
        schema: The schema node.
        is_resource_root: Whether the node is the root of a resource (the object root or
            an ``x-kubernetes-embedded-resource``), which always exposes ``apiVersion``,
            ``kind``, ``metadata.name`` and ``metadata.generateName``.

    Returns:
        The type.
    """
    if not isinstance(schema, dict):
        return None
    if schema.get("x-kubernetes-int-or-string") is True:
        return DYN
    if is_resource_root:
        schema = _with_type_and_object_meta(schema)
    typ = schema.get("type")
    if typ == "array":
        items = schema.get("items")
        if isinstance(items, dict):
            elem = schema_type(items, items.get("x-kubernetes-embedded-resource") is True)
            return T("list", elem) if elem is not None else None
        return None
    if typ == "object":
        addl = schema.get("additionalProperties")
        if isinstance(addl, dict):
            elem = schema_type(addl, addl.get("x-kubernetes-embedded-resource") is True)
            return T("map", elem) if elem is not None else None
        fields: dict[str, tuple[str, T]] = {}
        props = schema.get("properties")
        for name, sub in props.items() if isinstance(props, dict) else []:
            sub_type = schema_type(
                sub, isinstance(sub, dict) and sub.get("x-kubernetes-embedded-resource") is True
            )
            escaped = escape_name(name)
            if sub_type is not None and escaped is not None:
                fields[escaped] = (name, sub_type)
        return T("object", fields=fields)
    if typ == "string":
        fmt = schema.get("format")
        if fmt == "byte":
            return BYTES
        if fmt == "duration":
            return DURATION
        if fmt in ("date", "date-time"):
            return TIMESTAMP
        return STRING
    if typ == "boolean":
        return BOOL
    if typ == "number":
        return DOUBLE
    if typ == "integer":
        return INT
    return None


def converter(t: T) -> Callable[[Any], Any] | None:
    """How a JSON value of static type ``t`` becomes a CEL value, or None if as-is."""
    if t is TIMESTAMP:
        return lambda v: date_to_timestamp(v) if type(v) is str else v
    if t is DURATION:
        return lambda v: parse_duration(v) if type(v) is str else v
    if t is BYTES:
        return lambda v: b64(v) if type(v) is str else v
    if t is DOUBLE:
        return lambda v: float(v) if is_int(v) else v
    return None


_KNOWN_KINDS: Final = frozenset(
    (
        "bool",
        "int",
        "uint",
        "double",
        "string",
        "bytes",
        "google.protobuf.Timestamp",
        "google.protobuf.Duration",
    )
)


def known(t: T) -> bool:
    """Whether ``t`` is a scalar type whose overloads are checked at compile time."""
    return t.kind in _KNOWN_KINDS
