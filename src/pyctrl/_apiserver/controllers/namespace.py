"""The namespace controller the embedded server runs (kube-controller-manager's).

As ``k8s.io/kubernetes/pkg/controller/namespace``: a deleted namespace is ``Terminating``
until everything in it is deleted (its conditions say what remains), then its ``kubernetes``
finalizer is removed and it goes. Every change of a terminating namespace or of an object in
one queues a `NamespaceDeleting` for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyctrl._apimachinery.meta import ro_meta
from pyctrl._apiserver.controllers.finalizers import remove_finalizer
from pyctrl._apiserver.controllers.queue import WorkQueue
from pyctrl._apiserver.registry.meta import NAMESPACES, deep_copy, set_condition

if TYPE_CHECKING:
    from pyctrl._apiserver.registry.generic import Stores
    from pyctrl._apiserver.storage.store import StoreEvent

__all__ = ["NamespaceController", "NamespaceDeleting"]


@dataclass(frozen=True, slots=True)
class NamespaceDeleting:
    """A terminating namespace whose content is to be deleted, then the namespace."""

    name: str


class NamespaceController:
    """Empties terminating namespaces, then lets them go.

    Args:
        stores: The stores of the server's resources.
        garbage_collector: Whether the garbage collector runs; without it, the
            ``orphan`` and ``foregroundDeletion`` finalizers of a namespace are left.
    """

    def __init__(self, stores: Stores, *, garbage_collector: bool) -> None:
        self.stores = stores
        self.garbage_collector = garbage_collector
        self.queue: WorkQueue[NamespaceDeleting] = WorkQueue()
        stores.storage.add_listener(self._on_event)

    def _on_event(self, event: StoreEvent) -> None:
        if (
            event.key == NAMESPACES
            and ro_meta(event.obj).get("deletionTimestamp")
            and event.type != "DELETED"
        ):
            self.queue.add(NamespaceDeleting(event.name))
        if event.namespace and event.type != "ADDED":
            ns = self.stores.storage.get(NAMESPACES, "", event.namespace)
            if ns is not None and ro_meta(ns).get("deletionTimestamp"):
                self.queue.add(NamespaceDeleting(event.namespace))

    async def run(self) -> None:
        """Process the queue until cancelled."""
        await self.queue.run(self._process)

    def _process(self, item: NamespaceDeleting) -> None:
        name = item.name
        ns = self.stores.storage.get(NAMESPACES, "", name)
        if ns is None or not ro_meta(ns).get("deletionTimestamp"):
            return
        for key, obj in list(self.stores.storage.in_namespace(name)):
            meta = ro_meta(obj)
            if not meta.get("deletionTimestamp"):
                self.stores.delete_internal(key, name, meta["name"], propagation="Background")
        remaining: dict[str, int] = {}
        finalizers: dict[str, int] = {}
        for key, obj in self.stores.storage.in_namespace(name):
            label = f"{key[1]}.{key[0]}"
            remaining[label] = remaining.get(label, 0) + 1
            for fin in ro_meta(obj).get("finalizers") or []:
                finalizers[fin] = finalizers.get(fin, 0) + 1
        self.stores.update_internal(
            NAMESPACES,
            "",
            name,
            lambda o: _namespace_conditions(o, remaining, finalizers),
            subresource="status",
        )
        if remaining:
            return

        def finalize(o: dict[str, Any]) -> bool:
            spec = o.setdefault("spec", {})
            fins = [f for f in spec.get("finalizers") or [] if f != "kubernetes"]
            if fins == (spec.get("finalizers") or []):
                return False
            spec["finalizers"] = fins
            return True

        self.stores.update_internal(NAMESPACES, "", name, finalize, subresource="finalize")
        ns = self.stores.storage.get(NAMESPACES, "", name)
        if (
            ns is not None
            and not (ns.get("spec") or {}).get("finalizers")
            and not ro_meta(ns).get("finalizers")
        ):
            self.stores.delete_internal(NAMESPACES, "", name)
        elif ns is not None and self.garbage_collector:
            fins = ro_meta(ns).get("finalizers") or []
            if "orphan" in fins or "foregroundDeletion" in fins:
                remove_finalizer(self.stores, NAMESPACES, "", name, "orphan")
                remove_finalizer(self.stores, NAMESPACES, "", name, "foregroundDeletion")
                ns = self.stores.storage.get(NAMESPACES, "", name)
                if ns is not None and not ro_meta(ns).get("finalizers"):
                    self.stores.delete_internal(NAMESPACES, "", name)


def _namespace_conditions(
    obj: dict[str, Any], remaining: dict[str, int], finalizers: dict[str, int]
) -> bool:
    before = deep_copy(obj.get("status") or {})
    set_condition(
        obj,
        "NamespaceDeletionDiscoveryFailure",
        "False",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    )
    set_condition(
        obj,
        "NamespaceDeletionGroupVersionParsingFailure",
        "False",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    )
    set_condition(
        obj,
        "NamespaceDeletionContentFailure",
        "False",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    )
    if remaining:
        text = ", ".join(f"{k} has {v} resource instances" for k, v in sorted(remaining.items()))
        set_condition(
            obj,
            "NamespaceContentRemaining",
            "True",
            "SomeResourcesRemain",
            f"Some resources are remaining: {text}",
        )
    else:
        set_condition(
            obj,
            "NamespaceContentRemaining",
            "False",
            "ContentRemoved",
            "All content successfully removed",
        )
    if finalizers:
        text = ", ".join(f"{k} in {v} resource instances" for k, v in sorted(finalizers.items()))
        set_condition(
            obj,
            "NamespaceFinalizersRemaining",
            "True",
            "SomeFinalizersRemain",
            f"Some content in the namespace has finalizers remaining: {text}",
        )
    else:
        set_condition(
            obj,
            "NamespaceFinalizersRemaining",
            "False",
            "ContentHasNoFinalizers",
            "All content-preserving finalizers finished",
        )
    return bool((obj.get("status") or {}) != before)
