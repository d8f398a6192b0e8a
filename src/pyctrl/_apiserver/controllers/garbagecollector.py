"""The controllers the embedded server runs: garbage collector, namespace and CRD cleanup.

Like envtest, the embedded server runs no workload controllers (a Deployment creates no
ReplicaSet). It does run the three pieces of kube-controller-manager and apiextensions that
make deletion behave as operators expect:

* the garbage collector (k8s.io/kubernetes/pkg/controller/garbagecollector): deletes objects
  whose owners (by uid) are gone, removes dangling owner references from objects that still
  have a live owner, carries out foreground deletion (dependents first; the owner waits for
  the ones with ``blockOwnerDeletion``) and orphaning (strips the owner's references from its
  dependents); it can be switched off;
* the namespace controller: a deleted namespace is ``Terminating`` until everything in it is
  deleted, then its ``kubernetes`` finalizer is removed and it goes;
* the CRD finalizer: a deleted CRD's custom resources are deleted before the CRD goes.

All three react to store events through one deduplicating work queue processed by one task.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.controllers.crd import CLEANUP_FINALIZER
from pyctrl._apiserver.registry.generic import CRDS, NAMESPACES, deep_copy, meta_of, set_condition

if TYPE_CHECKING:
    from pyctrl._apiserver.controllers.crd import CRDController
    from pyctrl._apiserver.registry.generic import API
    from pyctrl._apiserver.storage.store import StorageKey, StoreEvent

Item = tuple[Any, ...]


def _meta(obj: dict[str, Any] | None) -> dict[str, Any]:
    if obj is None:
        return {}
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _split_api_version(api_version: str) -> tuple[str, str]:
    if "/" in api_version:
        group, version = api_version.split("/", 1)
        return group, version
    return "", api_version


class Controllers:
    """Garbage collector, namespace lifecycle and CRD cleanup, fed by store events."""

    def __init__(self, api: API, crds: CRDController, *, garbage_collector: bool) -> None:
        self.api = api
        self.crds = crds
        self.gc_enabled = garbage_collector
        self._queue: OrderedDict[Item, None] = OrderedDict()
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        api.store.add_listener(self._on_event)

    # --- event routing --------------------------------------------------------------------

    def _enqueue(self, item: Item) -> None:
        self._queue[item] = None
        self._idle.clear()
        self._wake.set()

    def _on_event(self, event: StoreEvent) -> None:  # noqa: PLR0912 - the controllers' event intake: one branch per kind of stored change
        obj, prev = event.obj, event.prev
        meta = _meta(obj)
        if event.key == NAMESPACES and meta.get("deletionTimestamp") and event.type != "DELETED":
            self._enqueue(("namespace", event.name))
        if event.key == CRDS and meta.get("deletionTimestamp") and event.type != "DELETED":
            self._enqueue(("crd", event.name))
        if event.namespace and event.type != "ADDED":
            ns = self.api.store.get(NAMESPACES, "", event.namespace)
            if ns is not None and _meta(ns).get("deletionTimestamp"):
                self._enqueue(("namespace", event.namespace))
        if event.type == "DELETED" and self.api.registry.for_storage(event.key):
            for rt in self.api.registry.for_storage(event.key):
                if rt.crd_name:
                    crd = self.api.store.get(CRDS, "", rt.crd_name)
                    if crd is not None and _meta(crd).get("deletionTimestamp"):
                        self._enqueue(("crd", rt.crd_name))
                    break
        if not self.gc_enabled:
            return
        if event.type != "DELETED" and meta.get("ownerReferences"):
            self._enqueue(("dependent", event.key, event.namespace, event.name))
        if event.type != "DELETED" and meta.get("deletionTimestamp"):
            fins = meta.get("finalizers") or []
            if "foregroundDeletion" in fins or "orphan" in fins:
                self._enqueue(("owner", event.key, event.namespace, event.name))
        if event.type == "DELETED":
            uid = meta.get("uid")
            if uid:
                for dkey, dns, dname in self.api.store.dependents(uid):
                    self._enqueue(("dependent", dkey, dns, dname))
        if prev is not None:
            prev_owners = {r.get("uid") for r in _meta(prev).get("ownerReferences") or []}
            new_owners = (
                set()
                if event.type == "DELETED"
                else {r.get("uid") for r in meta.get("ownerReferences") or []}
            )
            changed = prev_owners != new_owners or (
                _meta(prev).get("ownerReferences") != meta.get("ownerReferences")
            )
            if event.type == "DELETED" or changed:
                for uid in prev_owners:
                    where = self.api.store.by_uid(uid) if uid else None
                    if where is not None:
                        self._enqueue(("owner", *where))

    # --- the worker -----------------------------------------------------------------------

    async def run(self) -> None:
        """Process work items until cancelled."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            processed = 0
            while self._queue:
                item, _ = self._queue.popitem(last=False)
                self._process(item)
                processed += 1
                if processed % 64 == 0:
                    # Let request handlers run between batches of collector work.
                    await asyncio.sleep(0)
            self._idle.set()

    async def wait_idle(self) -> None:
        """Return once the work queue is empty (for tests and orderly shutdown)."""
        while self._queue or not self._idle.is_set():
            await self._idle.wait()
            await asyncio.sleep(0)

    def _process(self, item: Item) -> None:
        kind = item[0]
        if kind == "namespace":
            self._namespace(item[1])
        elif kind == "crd":
            self.crds.cleanup(item[1])
        elif kind == "dependent":
            self._attempt_to_delete(item[1], item[2], item[3])
        elif kind == "owner":
            self._owner(item[1], item[2], item[3])

    # --- garbage collector ----------------------------------------------------------------

    def _owner_state(self, ref: dict[str, Any], dependent_ns: str) -> str:  # noqa: PLR0911 - the garbage collector's owner lookup, one return per owner state
        """'solid', 'dangling', 'waiting' (foreground-deleting) or 'unknown'."""
        uid = ref.get("uid") or ""
        group, version = _split_api_version(str(ref.get("apiVersion") or ""))
        kind = str(ref.get("kind") or "")
        rt = self.api.registry.by_kind(group, version, kind) or self.api.registry.by_group_kind(
            group, kind
        )
        if rt is None:
            return "unknown"
        where = self.api.store.by_uid(uid)
        if where is None:
            return "dangling"
        key, ns, name = where
        if key != rt.storage_key:
            return "dangling"
        if ns and ns != dependent_ns:
            return "dangling"
        owner = self.api.store.get(key, ns, name)
        if owner is None:
            return "dangling"
        om = _meta(owner)
        if om.get("deletionTimestamp") and "foregroundDeletion" in (om.get("finalizers") or []):
            return "waiting"
        return "solid"

    def _attempt_to_delete(self, key: StorageKey, ns: str, name: str) -> None:  # noqa: PLR0911 - attemptToDeleteItem's decisions, one return per outcome
        obj = self.api.store.get(key, ns, name)
        if obj is None:
            return
        meta = _meta(obj)
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

            self.api.update_internal(key, ns, name, strip)
            return
        if waiting and self.api.store.dependents(uid or ""):
            self.api.delete_internal(key, ns, name, propagation="Foreground", uid=uid)
            return
        fins = meta.get("finalizers") or []
        policy = (
            "Orphan"
            if "orphan" in fins
            else "Foreground"
            if "foregroundDeletion" in fins
            else "Background"
        )
        self.api.delete_internal(key, ns, name, propagation=policy, uid=uid)

    def _owner(self, key: StorageKey, ns: str, name: str) -> None:
        owner = self.api.store.get(key, ns, name)
        if owner is None:
            return
        meta = _meta(owner)
        if not meta.get("deletionTimestamp"):
            return
        fins = meta.get("finalizers") or []
        uid = meta.get("uid") or ""
        if "orphan" in fins:
            self._orphan_dependents(uid)
            self._remove_finalizer(key, ns, name, "orphan")
            return
        if "foregroundDeletion" not in fins:
            return
        blocking = 0
        for dkey, dns, dname in self.api.store.dependents(uid):
            dep = self.api.store.get(dkey, dns, dname)
            if dep is None:
                continue
            dmeta = _meta(dep)
            refs = [r for r in dmeta.get("ownerReferences") or [] if r.get("uid") == uid]
            if any(r.get("blockOwnerDeletion") for r in refs):
                blocking += 1
            if not dmeta.get("deletionTimestamp"):
                self._enqueue(("dependent", dkey, dns, dname))
        if blocking == 0:
            self._remove_finalizer(key, ns, name, "foregroundDeletion")

    def _orphan_dependents(self, owner_uid: str) -> None:
        for dkey, dns, dname in self.api.store.dependents(owner_uid):

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

            self.api.update_internal(dkey, dns, dname, strip)

    def _remove_finalizer(self, key: StorageKey, ns: str, name: str, finalizer: str) -> None:
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

        self.api.update_internal(key, ns, name, drop)

    # --- namespace controller -------------------------------------------------------------

    def _namespace(self, name: str) -> None:
        ns = self.api.store.get(NAMESPACES, "", name)
        if ns is None or not _meta(ns).get("deletionTimestamp"):
            return
        for key, obj in list(self.api.store.in_namespace(name)):
            meta = _meta(obj)
            if not meta.get("deletionTimestamp"):
                self.api.delete_internal(key, name, meta["name"], propagation="Background")
        remaining: dict[str, int] = {}
        finalizers: dict[str, int] = {}
        for key, obj in self.api.store.in_namespace(name):
            label = f"{key[1]}.{key[0]}"
            remaining[label] = remaining.get(label, 0) + 1
            for fin in _meta(obj).get("finalizers") or []:
                finalizers[fin] = finalizers.get(fin, 0) + 1
        self.api.update_internal(
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

        self.api.update_internal(NAMESPACES, "", name, finalize, subresource="finalize")
        ns = self.api.store.get(NAMESPACES, "", name)
        if (
            ns is not None
            and not (ns.get("spec") or {}).get("finalizers")
            and not _meta(ns).get("finalizers")
        ):
            self.api.delete_internal(NAMESPACES, "", name)
        elif ns is not None and self.gc_enabled:
            fins = _meta(ns).get("finalizers") or []
            if "orphan" in fins or "foregroundDeletion" in fins:
                self._remove_finalizer(NAMESPACES, "", name, "orphan")
                self._remove_finalizer(NAMESPACES, "", name, "foregroundDeletion")
                ns = self.api.store.get(NAMESPACES, "", name)
                if ns is not None and not _meta(ns).get("finalizers"):
                    self.api.delete_internal(NAMESPACES, "", name)

    def crd_finalizer_pending(self, name: str) -> bool:
        """Whether a CRD still waits for its cleanup finalizer (for tests)."""
        crd = self.api.store.get(CRDS, "", name)
        return crd is not None and CLEANUP_FINALIZER in (_meta(crd).get("finalizers") or [])


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
