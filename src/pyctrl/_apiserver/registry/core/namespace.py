"""Namespaces (kube-apiserver's pkg/registry/core/namespace: strategy.go, storage/storage.go).

A Namespace starts ``Active`` with the ``kubernetes`` finalizer in its spec and the
``kubernetes.io/metadata.name`` label; an update keeps that label and the spec's
finalizers (only ``/finalize`` changes them, through `NamespaceStrategy.finalize`).
Deleting one marks it ``Terminating`` (the namespace controller empties it, then removes
the finalizers) instead of removing it; ``default``, ``kube-system`` and ``kube-public``
may not be deleted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apimachinery.field import (
    Cause,
    field_invalid,
)
from pyctrl._apiserver.apimachinery.errors import forbidden, not_found
from pyctrl._apiserver.registry.deletion import write_deleting
from pyctrl._apiserver.registry.meta import deep_copy, meta_of, now_rfc3339, ro_meta
from pyctrl._apiserver.registry.printing import (
    AGE,
    NAME,
    STRING,
    Cells,
    Printer,
    age,
    get,
)
from pyctrl._apiserver.registry.rest import Strategy
from pyctrl._apiserver.registry.validation import meta as _meta
from pyctrl._apiserver.registry.validation.meta import meta_update

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

    from pyctrl._apimachinery.field import Cause
    from pyctrl._apiserver.registry.options import DeleteOptions
    from pyctrl._apiserver.scheme.resources import ResourceType
    from pyctrl._apiserver.storage.store import Store

__all__ = ["IMMORTAL_NAMESPACES", "NamespaceStrategy"]

Obj = dict[str, Any]

IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
"""Namespaces that may not be deleted (the NamespaceLifecycle admission plugin's)."""


def _namespace(obj: dict[str, Any], now: datetime) -> Cells:
    return [
        ro_meta(obj).get("name", ""),
        get(obj, "status", "phase", default=""),
        age(ro_meta(obj).get("creationTimestamp"), now),
    ]


def set_defaults(obj: dict[str, Any]) -> None:
    """Namespaces get the ``kubernetes`` finalizer and their ``metadata.name`` label."""
    spec = obj.setdefault("spec", {})
    finalizers = spec.get("finalizers") if isinstance(spec.get("finalizers"), list) else []
    if "kubernetes" not in finalizers:
        # The strategy's PrepareForCreate: the kubernetes finalizer is always there at first.
        spec["finalizers"] = [*finalizers, "kubernetes"]
    meta = obj.setdefault("metadata", {})
    name = meta.get("name")
    if name:
        labels = meta.get("labels")
        if not isinstance(labels, dict):
            labels = {}
            meta["labels"] = labels
        labels["kubernetes.io/metadata.name"] = name


def validate_namespace(obj: dict[str, Any]) -> list[Cause]:
    """``ValidateNamespace``: metadata (DNS-1123 label names) and ``spec.finalizers``."""
    causes = _meta.object_meta(obj, "label", namespaced=False, kube=True)
    spec = obj.get("spec")
    for fin in (spec.get("finalizers") if isinstance(spec, dict) else None) or ():
        causes.extend(_meta.finalizers([fin], "spec.finalizers"))
        text = str(fin)
        if "/" not in text and text not in _meta.STANDARD_FINALIZERS:
            causes.append(
                field_invalid(
                    "spec.finalizers",
                    text,
                    "name is neither a standard finalizer name nor is it fully qualified",
                )
            )
    return causes


def validate_namespace_status_update(obj: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """``ValidateNamespaceStatusUpdate``: the phase follows ``deletionTimestamp``."""
    causes = _meta.meta_update(obj, old, kube=True)
    status = obj.get("status")
    phase = (status.get("phase") if isinstance(status, dict) else None) or ""
    if not ro_meta(obj).get("deletionTimestamp"):
        if phase != "Active":
            causes.append(
                field_invalid(
                    "status.Phase", phase, "may only be 'Active' if `deletionTimestamp` is empty"
                )
            )
    elif phase != "Terminating":
        causes.append(
            field_invalid(
                "status.Phase",
                phase,
                "may only be 'Terminating' if `deletionTimestamp` is not empty",
            )
        )
    return causes


class NamespaceStrategy(Strategy):
    """The rules of Namespaces."""

    name_rule = "label"
    return_deleted_object = True
    initial_status = {"phase": "Active"}  # noqa: RUF012 - read only, copied on use

    printer = Printer(
        (NAME, ("Status", STRING, 0), AGE),
        _namespace,
    )

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_Namespace``: the phase, the finalizer and the name label."""
        set_defaults(obj)

    def validate_create(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        """``ValidateNamespace``."""
        return validate_namespace(obj)

    def validate_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any]
    ) -> list[Cause]:
        """``ValidateNamespaceUpdate``: the metadata update."""
        return meta_update(obj, old, kube=True)

    def validate_status_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any]
    ) -> list[Cause] | None:
        """``ValidateNamespaceStatusUpdate``."""
        return validate_namespace_status_update(obj, old)

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """The ``kubernetes`` finalizer, the name label and the ``Active`` phase."""
        set_defaults(obj)

    def prepare_for_update(
        self, rt: ResourceType, new: dict[str, Any], existing: dict[str, Any], subresource: str
    ) -> None:
        """Keep the name label, and the spec's finalizers unless through ``/finalize``."""
        new_meta = meta_of(new)
        labels = new_meta.get("labels")
        if not isinstance(labels, dict):
            labels = {}
            new_meta["labels"] = labels
        labels["kubernetes.io/metadata.name"] = new_meta.get("name", "")
        spec = new.setdefault("spec", {})
        if subresource != "finalize":
            old_fins = (existing.get("spec") or {}).get("finalizers")
            if old_fins:
                spec["finalizers"] = deep_copy(old_fins)
            else:
                spec.pop("finalizers", None)

    def finalize(self, name: str, body: dict[str, Any]) -> Callable[[Obj | None], Obj]:
        """The update loop's step of ``namespaces/<name>/finalize`` (``FinalizeREST``).

        Only ``spec.finalizers`` is taken from ``body`` (and its ``resourceVersion`` as a
        precondition); 404 when the Namespace is gone.
        """
        finalizers = list((body.get("spec") or {}).get("finalizers") or [])
        rv = ro_meta(body).get("resourceVersion")

        def mutate(existing: Obj | None) -> Obj:
            if existing is None:
                raise not_found("", "namespaces", name)
            existing.setdefault("spec", {})["finalizers"] = list(finalizers)
            if rv:
                meta_of(existing)["resourceVersion"] = rv
            return existing

        return mutate

    def should_delete_during_update(self, new: dict[str, Any], existing: dict[str, Any]) -> bool:
        """A terminating Namespace goes once its spec's finalizers are gone too."""
        if (new.get("spec") or {}).get("finalizers"):
            return False
        return super().should_delete_during_update(new, existing)

    def before_delete(self, rt: ResourceType, name: str) -> None:
        """403 for the namespaces the cluster cannot live without."""
        if name in IMMORTAL_NAMESPACES:
            raise forbidden("", "namespaces", name, "this namespace may not be deleted")

    def delete(
        self, store: Store, rt: ResourceType, stored: dict[str, Any], opts: DeleteOptions
    ) -> tuple[dict[str, Any], bool] | None:
        """Mark the Namespace ``Terminating``; remove it once every finalizer is gone."""
        meta = ro_meta(stored)
        if not meta.get("deletionTimestamp"):
            new = deep_copy(stored)
            new_meta = meta_of(new)
            new_meta["deletionTimestamp"] = now_rfc3339()
            new.setdefault("status", {})["phase"] = "Terminating"
            fins = list(new_meta.get("finalizers") or [])
            orphan = opts.orphan_dependents is True or opts.propagation == "Orphan"
            foreground = opts.propagation == "Foreground"
            if orphan and "orphan" not in fins:
                fins.append("orphan")
            if foreground and "foregroundDeletion" not in fins:
                fins.append("foregroundDeletion")
            if fins:
                new_meta["finalizers"] = fins
            return write_deleting(store, rt, stored, new, opts.dry_run), False
        if (stored.get("spec") or {}).get("finalizers"):
            return stored, False
        if meta.get("finalizers"):
            return stored, False
        if opts.dry_run:
            return stored, True
        event = store.delete(rt.storage_key, "", meta["name"])
        return event.obj, True
