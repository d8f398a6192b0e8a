"""The storage keys of the types that parts below the registry single out.

`pyctrl._apiserver.registry.meta` re-exports them for the registry's own modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyctrl._apiserver.storage.store import StorageKey

__all__ = ["CRDS", "NAMESPACES"]

NAMESPACES: StorageKey = ("", "namespaces")
"""The storage key of Namespaces."""
CRDS: StorageKey = ("apiextensions.k8s.io", "customresourcedefinitions")
"""The storage key of CustomResourceDefinitions."""
