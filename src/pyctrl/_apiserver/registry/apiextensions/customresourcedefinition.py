"""CustomResourceDefinitions (apiextensions-apiserver's pkg/registry/customresourcedefinition).

A created CRD starts with empty accepted names and its storage version as the stored
one; it is validated as apiextensions-apiserver does (`validate_crd`). Deleting one marks
it ``Terminating`` with the ``customresourcecleanup`` finalizer (the CRD controller deletes
its custom resources, then the finalizer) instead of removing it. The CRD controller
(`controllers.crd`) hears of every stored change to serve the types it defines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from pyctrl._apiextensions.crd_validation import validate_crd
from pyctrl._apiserver.registry.deletion import write_deleting
from pyctrl._apiserver.registry.meta import deep_copy, meta_of, now_rfc3339, ro_meta, set_condition
from pyctrl._apiserver.registry.rest import Strategy

if TYPE_CHECKING:
    from pyctrl._apimachinery.field import Cause
    from pyctrl._apiserver.registry.options import DeleteOptions
    from pyctrl._apiserver.scheme.resources import ResourceType
    from pyctrl._apiserver.storage.store import Store

__all__ = ["CLEANUP_FINALIZER", "CRDReconciler", "CustomResourceDefinitionStrategy"]

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
"""The finalizer a deleted CRD keeps until its custom resources are gone."""


def set_defaults(obj: dict[str, Any]) -> None:
    """``SetDefaults_CustomResourceDefinition``."""
    spec = obj.setdefault("spec", {})
    names = spec.setdefault("names", {})
    kind = names.get("kind")
    if kind:
        names.setdefault("singular", str(kind).lower())
        names.setdefault("listKind", f"{kind}List")
    conversion = spec.setdefault("conversion", {})
    conversion.setdefault("strategy", "None")
    webhook = conversion.get("webhook")
    if isinstance(webhook, dict):
        svc = (webhook.get("clientConfig") or {}).get("service")
        if isinstance(svc, dict):
            svc.setdefault("port", 443)


class CRDReconciler(Protocol):
    """What the registry tells about a written CRD: the CRD controller (`controllers.crd`)."""

    def reconcile(self, name: str) -> None:
        """Bring the served types of the CRD ``name`` in line with what is stored."""


class CustomResourceDefinitionStrategy(Strategy):
    """The rules of CustomResourceDefinitions."""

    has_generation = True
    allow_unconditional_update = False

    def __init__(self) -> None:
        self.reconciler: CRDReconciler | None = None
        """Told of every created or updated CRD (set by the CRD controller)."""

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_CustomResourceDefinition``: conversion, scope, versions' defaults."""
        set_defaults(obj)

    def reset_status_on_create(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """No accepted names yet; the storage version as the only stored one."""
        obj["status"] = {
            "acceptedNames": {"plural": "", "kind": ""},
            "storedVersions": [
                v.get("name")
                for v in (obj.get("spec") or {}).get("versions") or []
                if v.get("storage")
            ],
        }

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        """apiextensions-apiserver's validation of a CRD (and of its update)."""
        return validate_crd(obj, old)

    def after_create(self, rt: ResourceType, name: str) -> None:
        """Serve the new CRD's types."""
        if self.reconciler is not None:
            self.reconciler.reconcile(name)

    def after_update(self, rt: ResourceType, name: str) -> None:
        """Serve the updated CRD's types as it now defines them."""
        if self.reconciler is not None:
            self.reconciler.reconcile(name)

    def delete(
        self, store: Store, rt: ResourceType, stored: dict[str, Any], opts: DeleteOptions
    ) -> tuple[dict[str, Any], bool] | None:
        """Mark a CRD ``Terminating`` (a terminating one is deleted as any object is)."""
        if ro_meta(stored).get("deletionTimestamp"):
            return None
        new = deep_copy(stored)
        meta = meta_of(new)
        meta["deletionTimestamp"] = now_rfc3339()
        fins = list(meta.get("finalizers") or [])
        if CLEANUP_FINALIZER not in fins:
            fins.append(CLEANUP_FINALIZER)
        meta["finalizers"] = fins
        set_condition(
            new,
            "Terminating",
            "True",
            "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        )
        if int(meta.get("generation") or 0) > 0:
            meta["generation"] = int(meta["generation"]) + 1
        return write_deleting(store, rt, stored, new, opts.dry_run), False
