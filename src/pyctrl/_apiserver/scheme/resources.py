"""The resource types the embedded API server serves.

A :class:`ResourceType` describes one REST resource at one API version: its group, version,
kind, plural and short names, whether it is namespaced, which subresources it has, which
field selectors it accepts and where it is stored; the kind's rules (does it track
``metadata.generation``, may a PUT create it, which names it accepts...) are its strategy's
(`pyctrl._apiserver.registry`). The :class:`Registry` holds the built-in types (core, apps, batch,
coordination, RBAC, admissionregistration, apiextensions...) and the types that
CustomResourceDefinitions add at run time; its ``generation`` counter bumps whenever the set
changes so discovery and OpenAPI caches know when to rebuild.

Several resource types may share one storage (``storage_key``): the versions of one CRD, or
``events`` in the core group and in ``events.k8s.io``. Objects are stored once, at the storage
version, and converted on the way out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyctrl._apiserver.scheme import builtin_types as _builtin_types
from pyctrl._apiserver.scheme.resourcetype import (
    ALL_VERBS,
    Converter,
    PrinterColumn,
    ResourceType,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from pyctrl._apiserver.storage.store import StorageKey

__all__ = [
    "AGE_COLUMN",
    "ALL_VERBS",
    "CREATED_AT_COLUMN",
    "NAME_COLUMN",
    "Converter",
    "PrinterColumn",
    "Registry",
    "ResourceType",
    "builtin_types",
    "version_priority_key",
]


class Registry:
    """Every resource type the server serves, built-in and CRD-defined."""

    def __init__(self, types: Iterable[ResourceType] = ()) -> None:
        self._by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        self._by_gvk: dict[tuple[str, str, str], ResourceType] = {}
        self._by_crd: dict[str, list[ResourceType]] = {}
        self.generation = 0
        # The resourceVersion each storage's watch cache starts at (kube-apiserver's
        # listResourceVersion): watches from an older version are Expired.
        self.cache_start: dict[StorageKey, int] = {}
        for rt in types:
            self._add(rt)

    def _add(self, rt: ResourceType) -> None:
        self._by_gvr[(rt.group, rt.version, rt.plural)] = rt
        self._by_gvk[(rt.group, rt.version, rt.kind)] = rt
        if rt.crd_name:
            self._by_crd.setdefault(rt.crd_name, []).append(rt)

    def all(self) -> list[ResourceType]:
        """Every served resource type, built-ins and CRD-defined."""
        return [rt for rt in self._by_gvr.values() if rt.served]

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The served type at (group, version, plural), or None."""
        rt = self._by_gvr.get((group, version, plural))
        return rt if rt is not None and rt.served else None

    def by_kind(self, group: str, version: str, kind: str) -> ResourceType | None:
        """The served type of (group, version, kind), or None."""
        rt = self._by_gvk.get((group, version, kind))
        return rt if rt is not None and rt.served else None

    def by_group_kind(self, group: str, kind: str) -> ResourceType | None:
        """Any served version of (group, kind), preferring the storage version."""
        found: ResourceType | None = None
        for rt in self._by_gvk.values():
            if rt.group == group and rt.kind == kind and rt.served:
                if not rt.storage_version or rt.storage_version == rt.version:
                    return rt
                found = found or rt
        return found

    def for_storage(self, key: StorageKey) -> list[ResourceType]:
        """Every type (served or not) that reads and writes the storage ``key``."""
        return [rt for rt in self._by_gvr.values() if rt.storage_key == key]

    def storage_type(self, key: StorageKey) -> ResourceType | None:
        """The type whose version is the storage version of ``key``."""
        candidates = self.for_storage(key)
        for rt in candidates:
            if rt.group == key[0] and (not rt.storage_version or rt.version == rt.storage_version):
                return rt
        return candidates[0] if candidates else None

    def storage_keys(self) -> list[StorageKey]:
        """Every storage key, each once."""
        seen: dict[StorageKey, None] = {}
        for rt in self._by_gvr.values():
            seen.setdefault(rt.storage_key, None)
        return list(seen)

    def crd_types(self, crd_name: str) -> list[ResourceType]:
        """The types a CRD currently defines."""
        return list(self._by_crd.get(crd_name, []))

    def set_crd_types(self, crd_name: str, types: list[ResourceType]) -> None:
        """Replace the types a CRD defines (empty list: the CRD is gone)."""
        old = self._by_crd.pop(crd_name, [])
        for rt in old:
            self._by_gvr.pop((rt.group, rt.version, rt.plural), None)
            self._by_gvk.pop((rt.group, rt.version, rt.kind), None)
        for rt in types:
            self._add(rt)
        if old != types:
            self.generation += 1

    def groups(self) -> list[tuple[str, list[str], str]]:
        """(group, served versions, preferred version) per group; the core group is ''."""
        versions: dict[str, list[str]] = {}
        for rt in self.all():
            vs = versions.setdefault(rt.group, [])
            if rt.version not in vs:
                vs.append(rt.version)
        out: list[tuple[str, list[str], str]] = []
        for group, vs in versions.items():
            ordered = sorted(vs, key=version_priority_key)
            out.append((group, ordered, ordered[0]))
        return out


def version_priority_key(version: str) -> tuple[int, int, int, str]:
    """Sort key of Kubernetes version priority: GA > beta > alpha, higher numbers first."""
    import re

    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if m is None:
        return (3, 0, 0, version)
    major = int(m.group(1))
    if m.group(2) is None:
        return (0, -major, 0, version)
    level = 1 if m.group(2) == "beta" else 2
    return (level, -major, -int(m.group(3)), version)


# --- built-in types ---------------------------------------------------------------------------

_NAME_DESC = (
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
_AGE_DESC = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)


def builtin_types() -> list[ResourceType]:
    """The built-in resource types, as a kube-apiserver of Kubernetes 1.32 serves them.

    The tables are in `pyctrl._apiserver.scheme.builtin_types`, one per API group.
    """
    return _builtin_types.builtin_types()


NAME_COLUMN = PrinterColumn("Name", "string", ".metadata.name", _NAME_DESC, 0, "name")
AGE_COLUMN = PrinterColumn("Age", "date", ".metadata.creationTimestamp", _AGE_DESC)
CREATED_AT_COLUMN = PrinterColumn("Created At", "date", ".metadata.creationTimestamp", _AGE_DESC)
