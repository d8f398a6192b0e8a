"""The EphemeralVolumeClaim controller: one reconciler where kopf's walkthrough has four handlers.

kopf's tutorial reacts to events: ``on.create`` creates the PersistentVolumeClaim from
a YAML template and stores its name in status, ``on.update`` patches its size,
``on.field('metadata.labels')`` applies the label diff, and ``kopf.adopt`` sets the owner
reference so that deletion cascades. Here one level-triggered reconciler says what the
claim should look like whatever happened, and the API server does the rest:

- the claim is *applied* (server-side apply, field manager ``evc-operator``) with the
  size and labels asked for: creation and update are one code path, and a label removed
  from the EphemeralVolumeClaim is removed from the claim while labels that others put
  there stay (apply owns only the fields it set; kopf needed the diff for that);
- the claim is owned by its EphemeralVolumeClaim (a controller reference), so the
  garbage collector deletes it with its owner, and ``owns`` reconciles the owner when
  the claim changes (its phase, or someone editing it);
- a smaller size than the claim already has is refused in the ``Resized`` condition
  (volumes never shrink), instead of an error from the API server on every retry;
- the size is checked by the CRD's schema (a quantity, required), so a claim without
  one never reaches the operator (kopf's handler raised ``PermanentError``);
- only changes to ``spec`` and ``metadata.labels`` reconcile
  (`pyctrl.predicate.FieldChanged`, kopf's ``field=``), not the operator's own status
  writes.

`operator` is the process (``python -m examples.evc``) and the source of ``config/``.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import TYPE_CHECKING

from kubernetes_asyncio.client import (
    V1ObjectMeta,
    V1PersistentVolumeClaim,
    V1PersistentVolumeClaimSpec,
    V1VolumeResourceRequirements,
)

from examples.evc.api import READY, RESIZED, EphemeralVolumeClaim
from pyctrl.app import Operator
from pyctrl.builder import controller_managed_by
from pyctrl.client import MergeFrom
from pyctrl.controllerutil import set_controller_reference
from pyctrl.errors import NotFoundError
from pyctrl.meta import Condition, set_status_condition
from pyctrl.predicate import FieldChanged
from pyctrl.reconcile import Result

if TYPE_CHECKING:
    from pyctrl.client import Client
    from pyctrl.manager import Manager
    from pyctrl.recorder import EventRecorder

__all__ = ["FIELD_MANAGER", "EphemeralVolumeClaimReconciler", "operator", "setup", "storage_bytes"]

FIELD_MANAGER = "evc-operator"
"""The field manager of the claims the operator applies."""

_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([KMGTPE]i|[numkMGTPE]|)$")
_FACTORS = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    **{f"{s}i": Decimal(2) ** (10 * (i + 1)) for i, s in enumerate("KMGTPE")},
}


def storage_bytes(quantity: str | int) -> Decimal:
    """The number of bytes a storage quantity (``"1G"``, ``"500Mi"``, ``1024``) stands for.

    Raises:
        ValueError: not a quantity in the suffix forms storage sizes use.
    """
    match = _QUANTITY.match(str(quantity))
    if match is None:
        raise ValueError(f"{quantity!r} is not a storage quantity such as 1G or 500Mi")
    return Decimal(match.group(1)) * _FACTORS[match.group(2)]


class EphemeralVolumeClaimReconciler:
    """Keeps each EphemeralVolumeClaim's PersistentVolumeClaim as the object asks."""

    def __init__(self, client: Client, recorder: EventRecorder) -> None:
        self._client = client
        self._recorder = recorder

    async def reconcile_object(self, evc: EphemeralVolumeClaim) -> Result:
        """Apply the claim, then report it in status (a `pyctrl.builder.ObjectReconciler`)."""
        if evc.metadata.deletion_timestamp is not None:
            return Result()  # the garbage collector deletes the owned claim
        original = evc.model_copy(deep=True)
        name, namespace = evc.metadata.name or "", evc.metadata.namespace or ""
        asked = str(evc.spec.size)
        current = await self._requested(name, namespace)
        shrinking = current is not None and storage_bytes(asked) < storage_bytes(current)
        requested = current if shrinking and current is not None else asked
        claim = await self._client.apply(self._claim(evc, requested), force=True)
        if current is None:
            self._recorder.event(evc, "Normal", "Created", f"created PersistentVolumeClaim {name}")
        elif current != requested:
            self._recorder.event(evc, "Normal", "Resized", f"{name}: {current} -> {requested}")
        generation = evc.metadata.generation or 0
        status = evc.status
        set_status_condition(
            status.conditions,
            Condition(
                type=RESIZED,
                status="False" if shrinking else "True",
                reason="ShrinkRefused" if shrinking else "AsRequested",
                message=f"volumes cannot shrink from {current} to {asked}"
                if shrinking
                else f"the claim requests {requested}",
                observed_generation=generation,
            ),
        )
        set_status_condition(
            status.conditions,
            Condition(
                type=READY,
                status="True",
                reason="ClaimApplied",
                message=f"PersistentVolumeClaim {name} requests {requested}",
                observed_generation=generation,
            ),
        )
        status.pvc_name, status.requested = name, requested
        status.phase = (claim.status.phase if claim.status else None) or ""
        status.observed_generation = generation
        if status != original.status:
            await self._client.status().patch(evc, MergeFrom(original))
        return Result()

    async def _requested(self, name: str, namespace: str) -> str | None:
        """The storage the existing claim requests, or None when there is no claim yet."""
        try:
            claim = await self._client.get(V1PersistentVolumeClaim, name, namespace)
        except NotFoundError:
            return None
        requests = (
            claim.spec.resources.requests if claim.spec and claim.spec.resources else None
        ) or {}
        storage = requests.get("storage")
        return None if storage is None else str(storage)

    @staticmethod
    def _claim(evc: EphemeralVolumeClaim, storage: str) -> V1PersistentVolumeClaim:
        """The apply configuration: only the fields this operator manages."""
        claim = V1PersistentVolumeClaim(
            api_version="v1",
            kind="PersistentVolumeClaim",
            metadata=V1ObjectMeta(
                name=evc.metadata.name,
                namespace=evc.metadata.namespace,
                labels=dict(evc.metadata.labels or {}),
            ),
            spec=V1PersistentVolumeClaimSpec(
                access_modes=list(evc.spec.access_modes),
                resources=V1VolumeResourceRequirements(requests={"storage": storage}),
                storage_class_name=evc.spec.storage_class_name,
            ),
        )
        set_controller_reference(evc, claim)
        return claim


def setup(manager: Manager) -> None:
    """Register the EphemeralVolumeClaim controller on ``manager``."""
    reconciler = EphemeralVolumeClaimReconciler(
        manager.client, manager.get_event_recorder_for("evc")
    )
    (
        controller_managed_by(manager)
        .for_(EphemeralVolumeClaim, FieldChanged("spec", "metadata.labels"))
        .owns(V1PersistentVolumeClaim)
        .complete(reconciler)
    )


operator = Operator(name="evc", types=[EphemeralVolumeClaim], setup=setup)
"""The operator: ``operator.main()`` runs it, ``operator.write_manifests(dir)`` writes config/."""
