"""Compiled schema nodes: a JSONSchemaProps compiled once, cached by identity.

Also the raw-schema accessors that several validators share.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Final

from pyctrl._apiextensions.formats import effective_format

if TYPE_CHECKING:
    from pyctrl._apiextensions.cel.program import CompiledRule

# ---------------------------------------------------------------------------------------
# Compiled schema nodes.
# ---------------------------------------------------------------------------------------


def _num(value: Any) -> int | float | None:
    if value is None or value is True or value is False:
        return None
    if isinstance(value, int | float):
        return value
    return None


def _int(value: Any) -> int | None:
    if value is None or value is True or value is False:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


class Node:
    """A schema node prepared for fast repeated validation, defaulting and pruning."""

    __slots__ = (
        "additional",
        "additional_allows",
        "all_of",
        "any_of",
        "default",
        "embedded",
        "enum",
        "excl_max",
        "excl_min",
        "format",
        "has_cel",
        "has_default",
        "has_defaults",
        "has_embedded",
        "has_junctors",
        "has_list_types",
        "int_or_string",
        "items",
        "list_map_keys",
        "list_type",
        "map_type",
        "max_items",
        "max_length",
        "max_properties",
        "maximum",
        "min_items",
        "min_length",
        "min_properties",
        "minimum",
        "multiple_of",
        "not_",
        "nullable",
        "number_checks",
        "one_of",
        "pattern",
        "preserve_unknown",
        "properties",
        "raw",
        "reapply_noop",
        "required",
        "rules",
        "string_checks",
        "type",
        "types",
        "unique_items",
        "validations",
    )

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        typ = raw.get("type")
        self.type: str = typ if isinstance(typ, str) else ""
        self.int_or_string: bool = raw.get("x-kubernetes-int-or-string") is True
        self.types: tuple[str, ...] = (
            ("integer", "string") if self.int_or_string else ((self.type,) if self.type else ())
        )
        self.nullable: bool = raw.get("nullable") is True
        self.format: str = effective_format(raw)
        self.preserve_unknown: bool = raw.get("x-kubernetes-preserve-unknown-fields") is True
        self.embedded: bool = raw.get("x-kubernetes-embedded-resource") is True
        self._read_structure(raw)
        self._read_value_checks(raw)
        self._read_extensions(raw)
        self.rules: list[CompiledRule] | None = None
        self.reapply_noop: bool | None = None
        self._summarize()

    def _read_structure(self, raw: dict[str, Any]) -> None:
        """Properties, additionalProperties, items and the junctors, compiled in turn."""
        props = raw.get("properties")
        self.properties: dict[str, Node] | None = (
            {k: Node(v) for k, v in props.items() if isinstance(v, dict)}
            if isinstance(props, dict) and props
            else None
        )
        addl = raw.get("additionalProperties")
        self.additional: Node | None = Node(addl) if isinstance(addl, dict) else None
        self.additional_allows: bool | None = (
            True if isinstance(addl, dict) else (addl if isinstance(addl, bool) else None)
        )
        items = raw.get("items")
        self.items: Node | None = Node(items) if isinstance(items, dict) else None
        self.all_of = _node_list(raw.get("allOf"))
        self.any_of = _node_list(raw.get("anyOf"))
        self.one_of = _node_list(raw.get("oneOf"))
        not_ = raw.get("not")
        self.not_: Node | None = Node(not_) if isinstance(not_, dict) else None

    def _read_value_checks(self, raw: dict[str, Any]) -> None:
        """required, enum and the numeric, string, array and object bounds."""
        req = raw.get("required")
        self.required: tuple[str, ...] = (
            tuple(r for r in req if isinstance(r, str)) if isinstance(req, list) else ()
        )
        enum = raw.get("enum")
        self.enum: list[Any] | None = enum if isinstance(enum, list) and enum else None
        self.maximum = _num(raw.get("maximum"))
        self.minimum = _num(raw.get("minimum"))
        self.excl_max: bool = raw.get("exclusiveMaximum") is True
        self.excl_min: bool = raw.get("exclusiveMinimum") is True
        self.multiple_of = _num(raw.get("multipleOf"))
        self.max_length = _int(raw.get("maxLength"))
        self.min_length = _int(raw.get("minLength"))
        pattern = raw.get("pattern")
        self.pattern: str = pattern if isinstance(pattern, str) else ""
        self.max_items = _int(raw.get("maxItems"))
        self.min_items = _int(raw.get("minItems"))
        self.unique_items: bool = raw.get("uniqueItems") is True
        self.max_properties = _int(raw.get("maxProperties"))
        self.min_properties = _int(raw.get("minProperties"))

    def _read_extensions(self, raw: dict[str, Any]) -> None:
        """The default and the x-kubernetes-* list, map and validation extensions."""
        # `default: null` decodes to no default in apiextensions.
        self.has_default: bool = raw.get("default") is not None
        self.default: Any = raw.get("default")
        lt = raw.get("x-kubernetes-list-type")
        self.list_type: str = lt if isinstance(lt, str) else ""
        keys = raw.get("x-kubernetes-list-map-keys")
        self.list_map_keys: tuple[str, ...] = (
            tuple(k for k in keys if isinstance(k, str)) if isinstance(keys, list) else ()
        )
        mt = raw.get("x-kubernetes-map-type")
        self.map_type: str = mt if isinstance(mt, str) else ""
        vals = raw.get("x-kubernetes-validations")
        self.validations: list[dict[str, Any]] = (
            [v for v in vals if isinstance(v, dict)] if isinstance(vals, list) else []
        )

    def _summarize(self) -> None:
        """What this subtree holds, so that validation can skip what it lacks."""
        children = self._children()
        self.has_cel: bool = bool(self.validations) or any(c.has_cel for c in children)
        self.has_embedded: bool = self.embedded or any(c.has_embedded for c in children)
        self.has_defaults: bool = any(c.has_default or c.has_defaults for c in children)
        self.has_list_types: bool = self.list_type in ("set", "map") or any(
            c.has_list_types for c in children
        )
        self.has_junctors: bool = bool(
            self.all_of or self.any_of or self.one_of or self.not_ is not None
        )
        self.string_checks: bool = (
            self.max_length is not None or self.min_length is not None or bool(self.pattern)
        )
        self.number_checks: bool = (
            self.multiple_of is not None or self.minimum is not None or self.maximum is not None
        )

    def _children(self) -> list[Node]:
        out: list[Node] = []
        if self.properties:
            out.extend(self.properties.values())
        if self.additional is not None:
            out.append(self.additional)
        if self.items is not None:
            out.append(self.items)
        return out


def _node_list(value: Any) -> tuple[Node, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(Node(v) for v in value if isinstance(v, dict))


_NODE_CACHE: OrderedDict[int, tuple[dict[str, Any], Node]] = OrderedDict()
_NODE_CACHE_SIZE: Final = 512


def compile_schema(schema: dict[str, Any]) -> Node:
    key = id(schema)
    hit = _NODE_CACHE.get(key)
    if hit is not None and hit[0] is schema:
        _NODE_CACHE.move_to_end(key)
        return hit[1]
    node = Node(schema)
    # Holding the schema keeps its id from being reused while the entry lives.
    _NODE_CACHE[key] = (schema, node)
    if len(_NODE_CACHE) > _NODE_CACHE_SIZE:
        _NODE_CACHE.popitem(last=False)
    return node


META_FIELDS: Final = frozenset(("metadata", "kind", "apiVersion"))


def str_field(raw: dict[str, Any], key: str) -> str:
    value = raw.get(key)
    return value if isinstance(value, str) else ""


def dict_field(raw: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = raw.get(key)
    return value if isinstance(value, dict) else None


def dict_list(raw: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = raw.get(key)
    if not isinstance(value, list):
        return []
    return [v if isinstance(v, dict) else {} for v in value]


def properties_of(raw: dict[str, Any]) -> dict[str, dict[str, Any]]:
    value = raw.get("properties")
    if not isinstance(value, dict):
        return {}
    return {k: (v if isinstance(v, dict) else {}) for k, v in value.items()}


def map_is_correlatable(map_type: Any) -> bool:
    return map_type is None or map_type == "granular"
