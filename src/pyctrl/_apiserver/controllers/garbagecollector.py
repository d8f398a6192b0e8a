"""The garbage collector the embedded server runs (kube-controller-manager's).

As ``k8s.io/kubernetes/pkg/controller/garbagecollector``: deletes objects whose owners (by
uid) are gone, removes dangling owner references from objects that still have a live owner,
carries out foreground deletion (dependents first; the owner waits for the ones with
``blockOwnerDeletion``) and orphaning (strips the owner's references from its dependents).

Store events become two kinds of work, as the Go collector's two queues:
`AttemptToDelete` (a dependent whose owners may be gone, ``attemptToDelete``) and
`ProcessOwner` (an owner being deleted in the foreground or orphaning, ``attemptToOrphan``
and the foreground wait). The server can run without it (``garbage_collector=False``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyctrl._apimachinery.meta import meta_of, ro_meta
from pyctrl._apiserver.controllers.finalizers import remove_finalizer
from pyctrl._apiserver.controllers.queue import WorkQueue

if TYPE_CHECKING:
    from pyctrl._apiserver.registry.generic import Stores
    from pyctrl._apiserver.storage.store import StorageKey, StoreEvent

__all__ = ["AttemptToDelete", "GarbageCollector", "ProcessOwner"]


@dataclass(frozen=True, slots=True)
class AttemptToDelete:
    """A dependent whose owners may be gone (or whose references changed)."""

    key: StorageKey
    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class ProcessOwner:
    """An owner being deleted in the foreground or with its dependents orphaned."""

    key: StorageKey
    namespace: str
    name: str


def _split_api_version(api_version: str) -> tuple[str, str]:
    if "/" in api_version:
        group, version = api_version.split("/", 1)
        return group, version
    return "", api_version


class GarbageCollector:
    """Deletes dependents of deleted owners; foreground deletion and orphaning."""

    def __init__(self, stores: Stores) -> None:
        self.stores = stores
        self.queue: WorkQueue[AttemptToDelete | ProcessOwner] = WorkQueue()
        stores.storage.add_listener(self._on_event)

    def _on_event(self, event: StoreEvent) -> None:
        meta = ro_meta(event.obj)
        if event.type != "DELETED" and meta.get("ownerReferences"):
            self.queue.add(AttemptToDelete(event.key, event.namespace, event.name))
        if event.type != "DELETED" and meta.get("deletionTimestamp"):
            fins = meta.get("finalizers") or []
            if "foregroundDeletion" in fins or "orphan" in fins:
                self.queue.add(ProcessOwner(event.key, event.namespace, event.name))
        if event.type == "DELETED":
            uid = meta.get("uid")
            if uid:
                for dkey, dns, dname in self.stores.storage.dependents(uid):
                    self.queue.add(AttemptToDelete(dkey, dns, dname))
        if event.prev is not None:
            self._owners_changed(event, meta)

    def _owners_changed(self, event: StoreEvent, meta: dict[str, Any]) -> None:
        """The owners a dependent left (or that it no longer blocks) are looked at again."""
        prev_meta = ro_meta(event.prev)
        prev_owners = {r.get("uid") for r in prev_meta.get("ownerReferences") or []}
        new_owners = (
            set()
            if event.type == "DELETED"
            else {r.get("uid") for r in meta.get("ownerReferences") or []}
        )
        changed = prev_owners != new_owners or (
            prev_meta.get("ownerReferences") != meta.get("ownerReferences")
        )
        if event.type == "DELETED" or changed:
            for uid in prev_owners:
                where = self.stores.storage.by_uid(uid) if uid else None
                if where is not None:
                    self.queue.add(ProcessOwner(*where))

    async def run(self) -> None:
        """Process the queue until cancelled."""
        await self.queue.run(self._process)

    def _process(self, item: AttemptToDelete | ProcessOwner) -> None:
        if isinstance(item, AttemptToDelete):
            self._attempt_to_delete(item.key, item.namespace, item.name)
        else:
            self._owner(item.key, item.namespace, item.name)

    def _owner_state(self, ref: dict[str, Any], dependent_ns: str) -> str:  # noqa: PLR0911 - the garbage collector's owner lookup, one return per owner state
        """'solid', 'dangling', 'waiting' (foreground-deleting) or 'unknown'."""
        uid = ref.get("uid") or ""
        group, version = _split_api_version(str(ref.get("apiVersion") or ""))
        kind = str(ref.get("kind") or "")
        registry = self.stores.registry
        rt = registry.by_kind(group, version, kind) or registry.by_group_kind(group, kind)
        if rt is None:
            return "unknown"
        where = self.stores.storage.by_uid(uid)
        if where is None:
            return "dangling"
        key, ns, name = where
        if key != rt.storage_key:
            return "dangling"
        if ns and ns != dependent_ns:
            return "dangling"
        owner = self.stores.storage.get(key, ns, name)
        if owner is None:
            return "dangling"
        om = ro_meta(owner)
        if om.get("deletionTimestamp") and "foregroundDeletion" in (om.get("finalizers") or []):
            return "waiting"
        return "solid"

    def _attempt_to_delete(self, key: StorageKey, ns: str, name: str) -> None:  # noqa: PLR0911 - attemptToDeleteItem's decisions, one return per outcome
        obj = self.stores.storage.get(key, ns, name)
        if obj is None:
            return
        meta = ro_meta(obj)
        refs = meta.get("ownerReferences") or []
        if not refs:
            return
        if meta.get("deletionTimestamp"):
            if "foregroundDeletion" in (meta.get("finalizers") or []):
                self._owner(key, ns, name)
            return
        states = [(ref, self._owner_state(ref, ns)) for ref in refs]
        if any(state == "unknown" for _, state in states):
            return
        solid = [r for r, s in states if s == "solid"]
        dangling = [r for r, s in states if s == "dangling"]
        waiting = [r for r, s in states if s == "waiting"]
        uid = meta.get("uid")
        if solid:
            if not dangling and not waiting:
                return
            drop = {r.get("uid") for r in dangling + waiting}

            def strip(o: dict[str, Any]) -> bool:
                m = meta_of(o)
                kept = [r for r in m.get("ownerReferences") or [] if r.get("uid") not in drop]
                if kept == m.get("ownerReferences"):
                    return False
                if kept:
                    m["ownerReferences"] = kept
                else:
                    m.pop("ownerReferences", None)
                return True

            self.stores.update_internal(key, ns, name, strip)
            return
        if waiting and self.stores.storage.dependents(uid or ""):
            self.stores.delete_internal(key, ns, name, propagation="Foreground", uid=uid)
            return
        fins = meta.get("finalizers") or []
        policy = (
            "Orphan"
            if "orphan" in fins
            else "Foreground"
            if "foregroundDeletion" in fins
            else "Background"
        )
        self.stores.delete_internal(key, ns, name, propagation=policy, uid=uid)

    def _owner(self, key: StorageKey, ns: str, name: str) -> None:
        owner = self.stores.storage.get(key, ns, name)
        if owner is None:
            return
        meta = ro_meta(owner)
        if not meta.get("deletionTimestamp"):
            return
        fins = meta.get("finalizers") or []
        uid = meta.get("uid") or ""
        if "orphan" in fins:
            self._orphan_dependents(uid)
            remove_finalizer(self.stores, key, ns, name, "orphan")
            return
        if "foregroundDeletion" not in fins:
            return
        blocking = 0
        for dkey, dns, dname in self.stores.storage.dependents(uid):
            dep = self.stores.storage.get(dkey, dns, dname)
            if dep is None:
                continue
            dmeta = ro_meta(dep)
            refs = [r for r in dmeta.get("ownerReferences") or [] if r.get("uid") == uid]
            if any(r.get("blockOwnerDeletion") for r in refs):
                blocking += 1
            if not dmeta.get("deletionTimestamp"):
                self.queue.add(AttemptToDelete(dkey, dns, dname))
        if blocking == 0:
            remove_finalizer(self.stores, key, ns, name, "foregroundDeletion")

    def _orphan_dependents(self, owner_uid: str) -> None:
        for dkey, dns, dname in self.stores.storage.dependents(owner_uid):

            def strip(o: dict[str, Any]) -> bool:
                m = meta_of(o)
                refs = m.get("ownerReferences") or []
                kept = [r for r in refs if r.get("uid") != owner_uid]
                if len(kept) == len(refs):
                    return False
                if kept:
                    m["ownerReferences"] = kept
                else:
                    m.pop("ownerReferences", None)
                return True

            self.stores.update_internal(dkey, dns, dname, strip)
