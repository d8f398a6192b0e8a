"""Removing one finalizer from a stored object (garbage collector, namespace controller)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apimachinery.meta import meta_of

if TYPE_CHECKING:
    from pyctrl._apiserver.registry.generic import Stores
    from pyctrl._apiserver.storage.store import StorageKey

__all__ = ["remove_finalizer"]


def remove_finalizer(stores: Stores, key: StorageKey, ns: str, name: str, finalizer: str) -> None:
    """Drop ``finalizer`` from ``metadata.finalizers`` of the stored object (if it is there)."""

    def drop(o: dict[str, Any]) -> bool:
        m = meta_of(o)
        fins = m.get("finalizers") or []
        if finalizer not in fins:
            return False
        kept = [f for f in fins if f != finalizer]
        if kept:
            m["finalizers"] = kept
        else:
            m.pop("finalizers", None)
        return True

    stores.update_internal(key, ns, name, drop)
