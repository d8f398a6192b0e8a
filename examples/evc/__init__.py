"""The EphemeralVolumeClaim operator, ported from kopf's walkthrough.

An `EphemeralVolumeClaim` gets a PersistentVolumeClaim of the same name, owned by it,
sized and labelled as it says; deleting it deletes the claim. The README tells what
changed from kopf's version and why.
"""

from __future__ import annotations

from examples.evc.api import (
    EphemeralVolumeClaim,
    EphemeralVolumeClaimSpec,
    EphemeralVolumeClaimStatus,
)
from examples.evc.controller import EphemeralVolumeClaimReconciler, operator, setup, storage_bytes

__all__ = [
    "EphemeralVolumeClaim",
    "EphemeralVolumeClaimReconciler",
    "EphemeralVolumeClaimSpec",
    "EphemeralVolumeClaimStatus",
    "operator",
    "setup",
    "storage_bytes",
]
