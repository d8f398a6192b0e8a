"""``x-kubernetes-list-type`` set and map uniqueness (apiextensions' ``schema/listtype``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from pyctrl._apimachinery.field import (
    Cause,
    Path,
    child,
    field_duplicate,
    field_invalid,
    index,
    key_path,
)
from pyctrl._apimachinery.gofmt import go_json

if TYPE_CHECKING:
    from pyctrl._apiextensions.nodes import Node

# ---------------------------------------------------------------------------------------
# x-kubernetes-list-type set/map uniqueness (schema/listtype).
# ---------------------------------------------------------------------------------------


def _scalar_key(value: Any) -> Any:
    if isinstance(value, dict | list):
        return ("json", go_json(value))
    return (type(value).__name__, value)


def _list_set_duplicates(items: list[Any]) -> list[int]:
    if len(items) <= 1:
        return []
    seen: dict[Any, int] = {}
    out: list[int] = []
    for i, x in enumerate(items):
        key = _scalar_key(x)
        times = seen.get(key)
        if times is None:
            seen[key] = 1
        else:
            seen[key] = times + 1
            if times == 1:
                out.append(i)
    return out


def listtype_errors(node: Node | None, x: Any, path: Path) -> list[Cause]:  # noqa: PLR0912 - structural listtype's walk: one branch per list type and node kind
    if node is None or not node.has_list_types:
        return []
    if isinstance(x, dict):
        errs: list[Cause] = []
        addl = node.additional
        if addl is not None and addl.has_list_types:
            for k, v in x.items():
                errs += listtype_errors(addl, v, key_path(path, k))
        props = node.properties
        if props is not None:
            for k, v in x.items():
                sub = props.get(k)
                if sub is not None and sub.has_list_types:
                    errs += listtype_errors(sub, v, child(path, k))
        return errs
    if not isinstance(x, list):
        return []
    errs = []
    if node.list_type == "set":
        for i in _list_set_duplicates(x):
            errs.append(field_duplicate(index(path, i), x[i]))
    elif node.list_type == "map":
        errs += _list_map_errors(node, x, path)
    if node.items is not None:
        for i, item in enumerate(x):
            errs += listtype_errors(node.items, item, index(path, i))
    return errs


class _Unspecified:
    """A key field missing from a list-map item."""

    def __repr__(self) -> str:
        return "<unspecified>"


_UNSPECIFIED: Final = _Unspecified()


def _list_map_errors(node: Node, x: list[Any], path: Path) -> list[Cause]:
    for i, item in enumerate(x):
        if item is not None and not isinstance(item, dict):
            return [
                field_invalid(
                    index(path, i), item, "must be an object for an array of list-type map"
                )
            ]
    if len(x) <= 1:
        return []
    keys = node.list_map_keys
    errs: list[Cause] = []
    if len(keys) == 1:
        key_field = keys[0]
        values = [
            _UNSPECIFIED if item is None or key_field not in item else item[key_field] for item in x
        ]
        for i in _list_set_duplicates(values):
            value = values[i]
            errs.append(
                field_duplicate(index(path, i), {} if value is _UNSPECIFIED else {key_field: value})
            )
        return errs
    composite: list[dict[str, Any]] = []
    for item in x:
        composite.append({k: item[k] for k in keys if item is not None and k in item})
    for i in _list_set_duplicates(composite):
        errs.append(field_duplicate(index(path, i), composite[i]))
    return errs
