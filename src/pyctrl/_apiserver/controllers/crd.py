"""CustomResourceDefinitions: from a stored CRD to served resource types.

kube-apiserver's apiextensions-apiserver watches CRDs and, for each, accepts its names
(``NamesAccepted``), starts serving its versions (``Established``), records every storage
version in ``status.storedVersions``, and, when the CRD is deleted, deletes all its custom
resources before letting the CRD go (the ``customresourcecleanup.apiextensions.k8s.io``
finalizer). :class:`CRDController` does the same inside the embedded server: it serves a
CRD's types synchronously after each CRD write (the CRD strategy tells it), so that a client
that created a CRD can use its resources as soon as it reads the CRD as Established; the
cleanup of a deleted CRD is work on its queue (`CRDCleanup`), as in ``pkg/controller/finalizer``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyctrl._apiextensions.pruning import apply_defaults
from pyctrl._apimachinery.meta import ro_meta
from pyctrl._apiserver.controllers.queue import WorkQueue
from pyctrl._apiserver.registry.generic import CRDS, deep_copy, meta_of, set_condition
from pyctrl._apiserver.scheme.resources import (
    AGE_COLUMN,
    PrinterColumn,
    ResourceType,
    version_priority_key,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pyctrl._apiserver.registry.generic import Stores
    from pyctrl._apiserver.storage.store import StorageKey, StoreEvent
    from pyctrl._apiserver.storage.watch import WatchHub

__all__ = [
    "CLEANUP_FINALIZER",
    "CRDCleanup",
    "CRDController",
    "accepted_names",
    "storage_version",
    "types_for",
]

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


@dataclass(frozen=True, slots=True)
class CRDCleanup:
    """A terminating CRD whose custom resources are to be deleted, then its finalizer."""

    name: str


def _spec(crd: dict[str, Any]) -> dict[str, Any]:
    spec = crd.get("spec")
    return spec if isinstance(spec, dict) else {}


def storage_version(crd: dict[str, Any]) -> str:
    """The name of the version marked ``storage: true`` ('' when none is)."""
    for version in _spec(crd).get("versions") or []:
        if isinstance(version, dict) and version.get("storage"):
            return str(version.get("name", ""))
    return ""


def accepted_names(crd: dict[str, Any]) -> dict[str, Any]:
    """``status.acceptedNames`` for a CRD whose names are accepted."""
    names = dict(_spec(crd).get("names") or {})
    kind = names.get("kind", "")
    out: dict[str, Any] = {
        "plural": names.get("plural", ""),
        "singular": names.get("singular") or str(kind).lower(),
    }
    if names.get("shortNames"):
        out["shortNames"] = list(names["shortNames"])
    out["kind"] = kind
    out["listKind"] = names.get("listKind") or f"{kind}List"
    if names.get("categories"):
        out["categories"] = list(names["categories"])
    return out


def _columns(version: dict[str, Any]) -> tuple[PrinterColumn, ...]:
    raw = version.get("additionalPrinterColumns") or []
    if not raw:
        return (AGE_COLUMN,)
    return tuple(
        PrinterColumn(
            name=str(c.get("name", "")),
            type=str(c.get("type", "string")),
            json_path=str(c.get("jsonPath", "")),
            description=str(c.get("description", "")),
            priority=int(c.get("priority") or 0),
            format=str(c.get("format", "")),
        )
        for c in raw
        if isinstance(c, dict)
    )


def _deprecation_warning(spec: dict[str, Any], version: dict[str, Any]) -> str:
    """kube-apiserver's warning for a deprecated version (defaultDeprecationWarning)."""
    if version.get("deprecated") is not True:
        return ""
    warning = version.get("deprecationWarning")
    if isinstance(warning, str):
        return warning
    group = spec.get("group", "")
    kind = (spec.get("names") or {}).get("kind", "")
    name = str(version.get("name", ""))
    message = f"{group}/{name} {kind} is deprecated"
    newer = [
        str(v.get("name", ""))
        for v in spec.get("versions") or ()
        if isinstance(v, dict)
        and v.get("served")
        and not v.get("deprecated")
        and version_priority_key(name) > version_priority_key(str(v.get("name", "")))
    ]
    if newer:
        best = min(newer, key=version_priority_key)
        message += f"; use {group}/{best} {kind}"
    return message


def types_for(crd: dict[str, Any]) -> list[ResourceType]:
    """The resource types (one per served version) a CRD defines."""
    spec = _spec(crd)
    names = accepted_names(crd)
    group = str(spec.get("group", ""))
    storage = storage_version(crd)
    name = str(meta_of(crd).get("name", ""))
    out: list[ResourceType] = []
    for version in spec.get("versions") or []:
        if not isinstance(version, dict) or not version.get("served"):
            continue
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        subresources = version.get("subresources") or {}
        subs: set[str] = set()
        scale_paths: tuple[str, str, str | None] | None = None
        if isinstance(subresources, dict):
            if "status" in subresources:
                subs.add("status")
            scale = subresources.get("scale")
            if isinstance(scale, dict):
                subs.add("scale")
                scale_paths = (
                    str(scale.get("specReplicasPath", ".spec.replicas")),
                    str(scale.get("statusReplicasPath", ".status.replicas")),
                    scale.get("labelSelectorPath") or None,
                )
        selectable = tuple(
            (str(f.get("jsonPath", "")).lstrip("."), str(f.get("jsonPath", "")))
            for f in version.get("selectableFields") or []
            if isinstance(f, dict)
        )
        out.append(
            ResourceType(
                group=group,
                version=str(version.get("name", "")),
                kind=str(names["kind"]),
                plural=str(names["plural"]),
                singular=str(names["singular"]),
                namespaced=spec.get("scope") == "Namespaced",
                list_kind=str(names["listKind"]),
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                subresources=frozenset(subs),
                scale_paths=scale_paths,
                printer_columns=_columns(version),
                schema=schema if isinstance(schema, dict) else None,
                storage_version=storage,
                served=True,
                field_paths=selectable,
                crd_name=name,
                deprecation_warning=_deprecation_warning(spec, version),
            )
        )
    return out


class CRDController:
    """Serves the resources of stored CRDs and cleans them up when a CRD is deleted."""

    def __init__(self, stores: Stores, hub: WatchHub) -> None:
        self.stores = stores
        self.hub = hub
        self.queue: WorkQueue[CRDCleanup] = WorkQueue()
        stores.strategies.crds.reconciler = self
        stores.storage.add_listener(self._on_event)

    def _on_event(self, event: StoreEvent) -> None:
        if event.key == CRDS and event.type == "DELETED":
            self._unregister(event.name, event.prev or event.obj)
        if (
            event.key == CRDS
            and ro_meta(event.obj).get("deletionTimestamp")
            and event.type != "DELETED"
        ):
            self.queue.add(CRDCleanup(event.name))
        if event.type == "DELETED":
            for rt in self.stores.registry.for_storage(event.key):
                if rt.crd_name:
                    crd = self.stores.storage.get(CRDS, "", rt.crd_name)
                    if crd is not None and ro_meta(crd).get("deletionTimestamp"):
                        self.queue.add(CRDCleanup(rt.crd_name))
                    break

    async def run(self) -> None:
        """Clean up deleted CRDs until cancelled."""
        await self.queue.run(self._process)

    def _process(self, item: CRDCleanup) -> None:
        self.cleanup(item.name)

    def crd_finalizer_pending(self, name: str) -> bool:
        """Whether a CRD still waits for its cleanup finalizer (for tests)."""
        crd = self.stores.storage.get(CRDS, "", name)
        return crd is not None and CLEANUP_FINALIZER in (ro_meta(crd).get("finalizers") or [])

    def _unregister(self, name: str, crd: dict[str, Any]) -> None:
        old = self.stores.registry.crd_types(name)
        self.stores.set_crd_types(name, [])
        keys = {rt.storage_key for rt in old}
        for key in keys:
            self.stores.registry.cache_start.pop(key, None)
        if not keys:
            spec = _spec(crd)
            plural = (spec.get("names") or {}).get("plural")
            if plural:
                keys.add((str(spec.get("group", "")), str(plural)))
        for key in keys:
            self.hub.close_key(key, "custom resource definition deleted")
            self.stores.storage.drop_key(key)

    def _names_conflict(self, crd: dict[str, Any]) -> tuple[str, str]:
        spec = _spec(crd)
        group = spec.get("group")
        names = spec.get("names") or {}
        name = meta_of(crd).get("name")
        for other in self.stores.storage.items(CRDS, None):
            if meta_of(other).get("name") == name:
                continue
            ospec = _spec(other)
            if ospec.get("group") != group:
                continue
            accepted = (other.get("status") or {}).get("acceptedNames") or {}
            if accepted.get("plural") and accepted.get("plural") == names.get("plural"):
                return "PluralConflict", f'"{names.get("plural")}" is already in use'
            if accepted.get("kind") and accepted.get("kind") == names.get("kind"):
                return "KindConflict", f'"{names.get("kind")}" is already in use'
        return "", ""

    def reconcile(self, name: str) -> None:
        """Bring a CRD's status and served types in line with its spec."""
        crd = self.stores.storage.get(CRDS, "", name)
        if crd is None:
            return
        reason, message = self._names_conflict(crd)
        accepted = not reason
        storage = storage_version(crd)

        def mutate(obj: dict[str, Any]) -> bool:
            changed = False
            status = obj.setdefault("status", {})
            if accepted:
                names = accepted_names(obj)
                if status.get("acceptedNames") != names:
                    status["acceptedNames"] = names
                    changed = True
                changed |= set_condition(
                    obj, "NamesAccepted", "True", "NoConflicts", "no conflicts found"
                )
                changed |= set_condition(
                    obj,
                    "Established",
                    "True",
                    "InitialNamesAccepted",
                    "the initial names have been accepted",
                )
            else:
                changed |= set_condition(obj, "NamesAccepted", "False", reason, message)
                changed |= set_condition(
                    obj, "Established", "False", "NotAccepted", "not all names are accepted"
                )
            stored = list(status.get("storedVersions") or [])
            if storage and storage not in stored:
                stored.append(storage)
                status["storedVersions"] = stored
                changed = True
            return changed

        self.stores.update_internal(
            CRDS, "", name, mutate, manager="kube-apiserver", subresource="status"
        )
        crd = self.stores.storage.get(CRDS, "", name)
        if crd is None:
            return
        old_types = self.stores.registry.crd_types(name)
        new_types = types_for(crd) if accepted else []
        if _served_shape(old_types) != _served_shape(new_types):
            self.stores.set_crd_types(name, new_types)
            for t in new_types:
                self.stores.registry.cache_start.setdefault(t.storage_key, self.stores.storage.rv)
            self._redefault(old_types, new_types)
            removed = {t.storage_key for t in old_types} - {t.storage_key for t in new_types}
            for key in removed:
                self.stores.registry.cache_start.pop(key, None)
            for key in removed:
                self.hub.close_key(key, "custom resource definition changed")

    def _redefault(self, old: list[ResourceType], new: list[ResourceType]) -> None:
        storage_new = next((t for t in new if t.version == t.storage_version), None)
        if storage_new is None or storage_new.schema is None:
            return
        storage_old = next((t for t in old if t.version == t.storage_version), None)
        if storage_old is not None and storage_old.schema == storage_new.schema:
            return
        key: StorageKey = storage_new.storage_key
        for obj in self.stores.storage.items(key, None):
            copy = deep_copy(obj)
            apply_defaults(copy, storage_new.schema)
            if copy != obj:
                self.stores.storage.replace_silently(key, copy)

    def cleanup(self, name: str) -> bool:
        """Delete a terminating CRD's custom resources; True when the CRD could go."""
        crd = self.stores.storage.get(CRDS, "", name)
        if crd is None or not meta_of(crd).get("deletionTimestamp"):
            return True
        types = self.stores.registry.crd_types(name)
        keys = {t.storage_key for t in types}
        remaining = 0
        for key in keys:
            for obj in list(self.stores.storage.items(key, None)):
                meta = meta_of(obj)
                if not meta.get("deletionTimestamp"):
                    self.stores.delete_internal(
                        key, meta.get("namespace") or "", meta["name"], propagation="Background"
                    )
            remaining += self.stores.storage.count(key)

        def progress(obj: dict[str, Any]) -> bool:
            if remaining:
                return set_condition(
                    obj,
                    "Terminating",
                    "True",
                    "InstanceDeletionInProgress",
                    "CustomResource deletion is in progress",
                )
            return set_condition(
                obj,
                "Terminating",
                "True",
                "InstanceDeletionCompleted",
                "removed all instances",
            )

        self.stores.update_internal(
            CRDS, "", name, progress, manager="kube-apiserver", subresource="status"
        )
        if remaining:
            return False

        def drop_finalizer(obj: dict[str, Any]) -> bool:
            meta = meta_of(obj)
            fins = [f for f in meta.get("finalizers") or [] if f != CLEANUP_FINALIZER]
            if fins == list(meta.get("finalizers") or []):
                return False
            if fins:
                meta["finalizers"] = fins
            else:
                meta.pop("finalizers", None)
            return True

        self.stores.update_internal(CRDS, "", name, drop_finalizer, manager="kube-apiserver")
        return True


def _served_shape(types: Sequence[ResourceType]) -> list[tuple[Any, ...]]:
    """What of a CRD's types the server serves by: a change means re-registering them."""
    return [
        (
            t.version,
            t.schema,
            t.printer_columns,
            t.subresources,
            t.scale_paths,
            t.field_paths,
            t.deprecation_warning,
            t.storage_key,
        )
        for t in types
    ]
