"""Two-way diffs: JSON merge patches and strategic merge patches between two objects.

A strategic merge patch merges lists by key where the built-in Go types say so
(``patchStrategy:"merge"``); kubernetes-asyncio's models do not carry that metadata, so
the diff reads it from `pyctrl._apimachinery.merge_keys`, the same description of the
built-in types the embedded server's strategic merge patch and apply use. A list not
described there is diffed as a whole (the changed list is sent complete), which is exact
for lists the server replaces, and never loses an element the server merges.
"""

from __future__ import annotations

from typing import Any

from pyctrl._apimachinery.jsonvalue import json_equal
from pyctrl._apimachinery.merge_keys import BUILTIN_ANY, Node, builtin_root

__all__ = ["merge_diff", "strategic_diff"]

_PRIMITIVE = "<primitive>"


def _child(node: Node, key: str) -> Node:
    return node.child(key) if node.kind in ("struct", "map") else BUILTIN_ANY


def _list_strategy(node: Node) -> str | None:
    """The merge key of the list typed ``node``, `_PRIMITIVE` for a set, or None if atomic."""
    if "merge" not in node.strategy.split(","):
        return None
    return node.merge_key or _PRIMITIVE


def merge_diff(original: dict[str, Any], modified: dict[str, Any]) -> dict[str, Any]:
    """The RFC 7386 JSON merge patch that turns ``original`` into ``modified``.

    Removed keys become ``null``; changed lists are sent whole.
    """
    patch: dict[str, Any] = {}
    for key, new in modified.items():
        if key not in original:
            patch[key] = new
            continue
        old = original[key]
        if isinstance(old, dict) and isinstance(new, dict):
            sub = merge_diff(old, new)
            if sub:
                patch[key] = sub
        elif not json_equal(old, new):
            patch[key] = new
    for key in original:
        if key not in modified:
            patch[key] = None
    return patch


def strategic_diff(
    original: dict[str, Any], modified: dict[str, Any], *, group: str, kind: str
) -> dict[str, Any]:
    """The two-way strategic merge patch from ``original`` to ``modified`` for a built-in kind."""
    return _diff_maps(original, modified, builtin_root(group, kind))


def _diff_maps(original: dict[str, Any], modified: dict[str, Any], node: Node) -> dict[str, Any]:
    patch: dict[str, Any] = {}
    for key, new in modified.items():
        if key not in original:
            patch[key] = new
            continue
        old = original[key]
        if isinstance(old, dict) and isinstance(new, dict):
            sub = _diff_maps(old, new, _child(node, key))
            if sub:
                patch[key] = sub
        elif isinstance(old, list) and isinstance(new, list):
            _diff_lists(patch, key, old, new, _child(node, key))
        elif not json_equal(old, new):
            patch[key] = new
    for key in original:
        if key not in modified:
            patch[key] = None
    return patch


def _keyed(items: list[Any], key: str) -> dict[Any, dict[str, Any]] | None:
    """Items by merge key, or None if some item has no key or keys repeat."""
    out: dict[Any, dict[str, Any]] = {}
    for item in items:
        if not isinstance(item, dict) or key not in item:
            return None
        value = item[key]
        if isinstance(value, dict | list) or value in out:
            return None
        out[value] = item
    return out


def _diff_lists(  # noqa: PLR0912 - apimachinery's list kinds
    patch: dict[str, Any], field: str, old: list[Any], new: list[Any], node: Node
) -> None:
    if json_equal(old, new):
        return
    merge_key = _list_strategy(node)
    if merge_key is None:
        patch[field] = new
        return
    if merge_key == _PRIMITIVE:
        if any(isinstance(v, dict | list) for v in (*old, *new)):
            patch[field] = new
            return
        added = [v for v in new if v not in old]
        deleted = [v for v in old if v not in new]
        if added:
            patch[field] = added
        if deleted:
            patch[f"$deleteFromPrimitiveList/{field}"] = deleted
        patch[f"$setElementOrder/{field}"] = new
        return
    old_by_key = _keyed(old, merge_key)
    new_by_key = _keyed(new, merge_key)
    if old_by_key is None or new_by_key is None:
        patch[field] = new
        return
    items: list[dict[str, Any]] = []
    for item_key, item in new_by_key.items():
        before = old_by_key.get(item_key)
        if before is None:
            items.append(item)
            continue
        sub = _diff_maps(before, item, node.elem)
        if sub:
            items.append({merge_key: item_key, **sub})
    for item_key in old_by_key:
        if item_key not in new_by_key:
            items.append({merge_key: item_key, "$patch": "delete"})
    if items:
        patch[field] = items
    patch[f"$setElementOrder/{field}"] = [{merge_key: k} for k in new_by_key]
