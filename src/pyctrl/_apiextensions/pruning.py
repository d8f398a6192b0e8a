"""Pruning of unknown fields, and defaulting.

As apiextensions' ``schema/pruning`` and ``schema/defaulting``.
"""

from __future__ import annotations

from typing import Any

from pyctrl._apiextensions.nodes import META_FIELDS, Node, compile_schema
from pyctrl._apiextensions.objectmeta import OBJECT_META_FIELDS, object_meta_field_error
from pyctrl._apimachinery.jsonvalue import deep_equal

# ---------------------------------------------------------------------------------------
# Pruning and defaulting.
# ---------------------------------------------------------------------------------------


def prune_value(  # noqa: PLR0912 - schema/pruning's walk: one branch per node kind and extension
    x: Any, node: Node | None, embedded: bool, dropped: list[str] | None, path: str
) -> None:
    """pruning.Prune: drop fields the schema does not specify.

    With ``dropped``, the path of every dropped field is appended to it, in the order
    of a depth-first walk of the object (``a.b``, ``a.list[0].c``); ``path`` is where
    ``x`` sits.
    """
    if node is not None and node.preserve_unknown:
        _skip_prune(x, node, embedded, dropped, path)
        return
    if isinstance(x, dict):
        if node is None:
            if dropped is not None:
                dropped.extend(_join(path, k) for k in x)
            x.clear()
            return
        keep_meta = embedded or node.embedded
        props = node.properties
        for k in list(x):
            if keep_meta and k in META_FIELDS:
                continue
            sub = props.get(k) if props else None
            if sub is None and node.additional_allows is not None:
                sub = node.additional
            elif sub is None:
                if dropped is not None:
                    dropped.append(_join(path, k))
                del x[k]
                continue
            v = x[k]
            if isinstance(v, dict | list):
                prune_value(v, sub, False, dropped, _join(path, k) if dropped is not None else "")
    elif isinstance(x, list):
        items = node.items if node is not None else None
        for i, v in enumerate(x):
            if isinstance(v, dict | list):
                prune_value(v, items, False, dropped, f"{path}[{i}]" if dropped is not None else "")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _skip_prune(
    x: Any, node: Node | None, embedded: bool, dropped: list[str] | None, path: str
) -> None:
    if node is None:
        return
    if isinstance(x, dict):
        keep_meta = embedded or node.embedded
        props = node.properties
        for k, v in x.items():
            if keep_meta and k in META_FIELDS:
                continue
            sub = props.get(k) if props else None
            if sub is None and node.additional_allows is not None:
                sub = node.additional
            elif sub is None:
                continue
            if isinstance(v, dict | list):
                prune_value(v, sub, False, dropped, _join(path, k) if dropped is not None else "")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            where = f"{path}[{i}]" if dropped is not None else ""
            _skip_prune(v, node.items, False, dropped, where)


def _coerce_embedded(x: Any, node: Node | None) -> None:
    """objectmeta.Coerce with dropInvalidFields: embedded TypeMeta/ObjectMeta made well-formed."""
    if node is None or not node.has_embedded:
        return
    if isinstance(x, dict):
        if node.embedded:
            for k in ("apiVersion", "kind"):
                if k in x and not isinstance(x[k], str):
                    del x[k]
            if "metadata" in x:
                meta = x["metadata"]
                if isinstance(meta, dict):
                    x["metadata"] = _coerced_object_meta(meta)
        props = node.properties
        for k, v in x.items():
            sub = props.get(k) if props else None
            if sub is not None:
                _coerce_embedded(v, sub)
            elif node.additional is not None:
                _coerce_embedded(v, node.additional)
    elif isinstance(x, list):
        for v in x:
            _coerce_embedded(v, node.items)


def _coerced_object_meta(meta: dict[str, Any]) -> dict[str, Any]:
    # A round trip through ObjectMeta: unknown and malformed fields go, empty ones too.
    out: dict[str, Any] = {}
    for k, v in meta.items():
        if k not in OBJECT_META_FIELDS or object_meta_field_error(k, v) is not None:
            continue
        empty = v is None or v == "" or (isinstance(v, dict | list) and not v)
        if empty or (v == 0 and k != "deletionGracePeriodSeconds"):
            continue
        out[k] = v
    return out


def prune(obj: dict[str, Any], schema: dict[str, Any], *, unknown: list[str] | None = None) -> None:
    """Drop, in place, every field of a custom resource its schema does not specify.

    As kube-apiserver: fields under ``x-kubernetes-preserve-unknown-fields`` are kept
    (their specified properties still pruned), as are ``apiVersion``, ``kind`` and
    ``metadata`` at the object root and in embedded resources
    (``x-kubernetes-embedded-resource``). The metadata of embedded resources is then
    coerced to ObjectMeta: unknown, malformed and empty fields are dropped.

    Args:
        obj: The custom resource, modified in place.
        schema: The version's ``openAPIV3Schema``.
        unknown: When given, the path of every dropped field (``spec.foo``,
            ``spec.items[0].bar``) is appended to it, in the order of a depth-first
            walk: what kube-apiserver reports as unknown fields.
    """
    node = compile_schema(schema)
    if unknown is not None and node.has_embedded:
        # Coercing embedded metadata drops fields too: find them all by comparison.
        before = _copy_json(obj)
        prune_value(obj, node, True, None, "")
        _coerce_embedded(obj, node)
        unknown.extend(_dropped_paths(before, obj, ""))
        return
    prune_value(obj, node, True, unknown, "")
    if node.has_embedded:
        _coerce_embedded(obj, node)


def _dropped_paths(before: Any, after: Any, prefix: str) -> list[str]:
    """Paths of ``before`` that ``after`` (``before`` with fields dropped) lacks."""
    out: list[str] = []
    if isinstance(before, dict) and isinstance(after, dict):
        for key, value in before.items():
            path = _join(prefix, key)
            if key not in after:
                out.append(path)
            else:
                out.extend(_dropped_paths(value, after[key], path))
    elif isinstance(before, list) and isinstance(after, list):
        for i, (b, a) in enumerate(zip(before, after, strict=False)):
            out.extend(_dropped_paths(b, a, f"{prefix}[{i}]"))
    return out


def reapply_is_noop(schema: dict[str, Any]) -> bool:
    """Whether pruning and defaulting again leaves a pruned and defaulted object unchanged.

    True unless the schema has embedded resources (whose metadata is coerced) or a
    default that pruning or null-removal would change (defaults must be pruned in
    ``apiextensions.k8s.io/v1``, but older CRDs may keep unpruned ones): then a second
    `prune` and `apply_defaults` can still change an object, and must be run.
    """
    node = compile_schema(schema)
    if node.reapply_noop is None:
        node.reapply_noop = not node.has_embedded and _defaults_stable(node)
    return node.reapply_noop


def _defaults_stable(node: Node) -> bool:
    if node.has_default:
        pruned = _copy_json(node.default)
        prune_value(pruned, node, False, None, "")
        _prune_nulls(pruned, node)
        if not deep_equal(pruned, node.default):
            return False
    return all(_defaults_stable(child) for child in node._children())


def _prune_nulls(x: Any, node: Node | None) -> None:
    """defaulting.PruneNonNullableNullsWithoutDefaults."""
    if node is None:
        # Only a field with a schema can be a non-nullable null: nothing below to do.
        return
    if isinstance(x, dict):
        props = node.properties
        if props is None and node.additional is None:
            return
        for k in list(x):
            v = x[k]
            sub = props.get(k) if props else None
            if sub is None:
                sub = node.additional
            if v is None and sub is not None and not sub.nullable and not sub.has_default:
                del x[k]
            elif isinstance(v, dict | list):
                _prune_nulls(v, sub)
    elif isinstance(x, list):
        items = node.items
        if items is None:
            return
        for v in x:
            if isinstance(v, dict | list):
                _prune_nulls(v, items)


def _copy_json(value: Any) -> Any:
    if type(value) is dict:
        return {k: _copy_json(v) for k, v in value.items()}
    if type(value) is list:
        return [_copy_json(v) for v in value]
    return value


def _default(x: Any, node: Node | None) -> None:  # noqa: PLR0912 - schema/defaulting's walk: one branch per node kind
    """defaulting.Default."""
    if node is None or not node.has_defaults:
        return
    if isinstance(x, dict):
        props = node.properties
        if props:
            for k, sub in props.items():
                if sub.has_default and (k not in x or (x[k] is None and not sub.nullable)):
                    x[k] = _copy_json(sub.default)
        addl = node.additional
        for k in list(x):
            prop = props.get(k) if props else None
            if prop is not None:
                _default(x[k], prop)
            elif addl is not None:
                if x[k] is None and not addl.nullable:
                    x[k] = _copy_json(addl.default)
                _default(x[k], addl)
    elif isinstance(x, list):
        items = node.items
        if items is None:
            return
        for i, v in enumerate(x):
            if v is None and not items.nullable:
                x[i] = _copy_json(items.default)
            _default(x[i], items)


def apply_defaults(obj: dict[str, Any], schema: dict[str, Any]) -> None:
    """Apply a schema's ``default`` values to a custom resource, in place.

    As kube-apiserver: first nulls are removed where the schema is not ``nullable`` and
    has no default; then, recursively (into array items and ``additionalProperties``
    values too), every missing field with a default, and every null non-nullable field
    with a default, is set to a deep copy of the default. Defaults apply bottom-up on
    the values now present, so a defaulted object gets its own fields defaulted.

    Args:
        obj: The custom resource, modified in place.
        schema: The version's ``openAPIV3Schema``.
    """
    node = compile_schema(schema)
    _prune_nulls(obj, node)
    _default(obj, node)
