"""Metadata access of a JSON object, as ``k8s.io/apimachinery/pkg/api/meta``'s Accessor.

`pyctrl._apiserver.registry.meta` re-exports these for the registry's own modules.
"""

from __future__ import annotations

from typing import Any

__all__ = ["meta_of", "ro_meta"]


def meta_of(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj['metadata']`` (a dict; created when missing)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    return meta


def ro_meta(obj: dict[str, Any] | None) -> dict[str, Any]:
    """``obj['metadata']`` to read (an empty dict, not stored, when missing)."""
    if obj is None:
        return {}
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}
