"""The EphemeralVolumeClaim custom resource: a PersistentVolumeClaim that lives and dies with it.

kopf's walkthrough builds this operator one handler at a time; here it is one type and
one reconciler (see the README for what changed and why). An EphemeralVolumeClaim asks
for a volume of a given size; the operator keeps a PersistentVolumeClaim of the same
name beside it, owned by it (so that Kubernetes' garbage collector deletes it with its
owner), as large as asked (it can grow, never shrink) and labelled like its owner.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from pyctrl.crd import Quantity  # noqa: TC001 - pydantic reads the annotation at runtime
from pyctrl.meta import Condition, KubeModel
from pyctrl.resource import CustomResource, PrinterColumn

__all__ = [
    "READY",
    "RESIZED",
    "EphemeralVolumeClaim",
    "EphemeralVolumeClaimSpec",
    "EphemeralVolumeClaimStatus",
]

READY = "Ready"
"""Condition type: True once the PersistentVolumeClaim exists as asked."""

RESIZED = "Resized"
"""Condition type: False while a smaller size than the claim's is asked (volumes never shrink)."""


class EphemeralVolumeClaimSpec(KubeModel):
    """EphemeralVolumeClaimSpec is the volume asked for.

    Attributes:
        size: The storage to request, a quantity such as "1G" or "500Mi".
        storage_class_name: The StorageClass of the claim; the cluster's default if unset.
        access_modes: How the volume may be mounted.
    """

    size: Quantity
    storage_class_name: Annotated[str, Field(max_length=253)] | None = None
    access_modes: list[str] = Field(default_factory=lambda: ["ReadWriteOnce"])


class EphemeralVolumeClaimStatus(KubeModel):
    """EphemeralVolumeClaimStatus reports the PersistentVolumeClaim kept for the object.

    Attributes:
        pvc_name: The name of the PersistentVolumeClaim.
        requested: The storage the PersistentVolumeClaim requests now.
        phase: The PersistentVolumeClaim's phase (Pending, Bound, Lost).
        observed_generation: The metadata.generation the status was computed from.
        conditions: Ready and Resized.
    """

    pvc_name: str = ""
    requested: str = ""
    phase: str = ""
    observed_generation: int = 0
    conditions: list[Condition] = Field(default_factory=list)


class EphemeralVolumeClaim(
    CustomResource,
    group="evc.example.com",
    version="v1",
    short_names=("evc", "evcs"),
    printer_columns=(
        PrinterColumn("Size", ".spec.size"),
        PrinterColumn("Requested", ".status.requested"),
        PrinterColumn("Phase", ".status.phase"),
        PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
    ),
):
    """EphemeralVolumeClaim asks for a PersistentVolumeClaim that lives and dies with it."""

    spec: EphemeralVolumeClaimSpec
    status: EphemeralVolumeClaimStatus = Field(default_factory=EphemeralVolumeClaimStatus)
