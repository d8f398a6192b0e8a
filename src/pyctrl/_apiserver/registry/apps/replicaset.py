"""ReplicaSets (kube-apiserver's pkg/registry/apps/replicaset/strategy.go).

``SetDefaults_ReplicaSet``, and the workloads' validation (`workload`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apimachinery.meta import ro_meta
from pyctrl._apiserver.registry import defaults as _defaults
from pyctrl._apiserver.registry.apps.workload import WorkloadStrategy
from pyctrl._apiserver.registry.printing import (
    AGE,
    CONTAINERS,
    INTEGER,
    NAME,
    STRING,
    Cells,
    Printer,
    workload_cells,
)

if TYPE_CHECKING:
    from datetime import datetime

    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["ReplicaSetStrategy"]


def _replicaset(obj: dict[str, Any], now: datetime) -> Cells:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    return [
        ro_meta(obj).get("name", ""),
        int(spec.get("replicas") or 0),
        int(status.get("replicas") or 0),
        int(status.get("readyReplicas") or 0),
        *workload_cells(obj, now),
    ]


def set_defaults(obj: dict[str, Any]) -> None:
    """``SetDefaults_ReplicaSet``."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    _defaults.template(obj)


class ReplicaSetStrategy(WorkloadStrategy):
    """The rules of ReplicaSets."""

    initial_status = {"replicas": 0}  # noqa: RUF012 - read only, copied on use

    printer = Printer(
        (
            NAME,
            ("Desired", INTEGER, 0),
            ("Current", INTEGER, 0),
            ("Ready", INTEGER, 0),
            AGE,
            *CONTAINERS,
            ("Selector", STRING, 1),
        ),
        _replicaset,
    )

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_ReplicaSet``."""
        set_defaults(obj)
