"""StatefulSets (kube-apiserver's pkg/registry/apps/statefulset/strategy.go).

``SetDefaults_StatefulSet``, and the workloads' validation (`workload`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apimachinery.meta import ro_meta
from pyctrl._apiserver.registry import defaults as _defaults
from pyctrl._apiserver.registry.apps.workload import WorkloadStrategy
from pyctrl._apiserver.registry.printing import (
    AGE,
    CONTAINERS,
    NAME,
    STRING,
    Cells,
    Printer,
    workload_cells,
)

if TYPE_CHECKING:
    from datetime import datetime

    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["StatefulSetStrategy"]


def _statefulset(obj: dict[str, Any], now: datetime) -> Cells:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    return [
        ro_meta(obj).get("name", ""),
        f"{int(status.get('readyReplicas') or 0)}/{int(spec.get('replicas') or 0)}",
        *workload_cells(obj, now)[:3],
    ]


def set_defaults(obj: dict[str, Any]) -> None:
    """``SetDefaults_StatefulSet``."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    strategy = spec.setdefault("updateStrategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        strategy.setdefault("rollingUpdate", {}).setdefault("partition", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault(
        "persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"}
    )
    for claim in spec.get("volumeClaimTemplates") or []:
        if isinstance(claim, dict):
            claim.setdefault("apiVersion", "v1")
            claim.setdefault("kind", "PersistentVolumeClaim")
            claim.setdefault("spec", {}).setdefault("volumeMode", "Filesystem")
            claim.setdefault("status", {"phase": "Pending"})
    _defaults.template(obj)


class StatefulSetStrategy(WorkloadStrategy):
    """The rules of StatefulSets."""

    initial_status = {"replicas": 0, "availableReplicas": 0}  # noqa: RUF012 - read only, copied on use

    printer = Printer(
        (NAME, ("Ready", STRING, 0), AGE, *CONTAINERS),
        _statefulset,
    )

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_StatefulSet``."""
        set_defaults(obj)
