"""Deployments (kube-apiserver's pkg/registry/apps/deployment/strategy.go).

``SetDefaults_Deployment``, and the workloads' validation (`workload`).
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

__all__ = ["DeploymentStrategy"]


def _deployment(obj: dict[str, Any], now: datetime) -> Cells:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    return [
        ro_meta(obj).get("name", ""),
        f"{int(status.get('readyReplicas') or 0)}/{int(spec.get('replicas') or 0)}",
        int(status.get("updatedReplicas") or 0),
        int(status.get("availableReplicas") or 0),
        *workload_cells(obj, now),
    ]


def set_defaults(obj: dict[str, Any]) -> None:
    """``SetDefaults_Deployment`` (apps/v1)."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    strategy = spec.setdefault("strategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        ru = strategy.setdefault("rollingUpdate", {})
        ru.setdefault("maxUnavailable", "25%")
        ru.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    _defaults.template(obj)


class DeploymentStrategy(WorkloadStrategy):
    """The rules of Deployments."""

    initial_status = {}  # noqa: RUF012 - read only, copied on use

    printer = Printer(
        (
            NAME,
            ("Ready", STRING, 0),
            ("Up-to-date", INTEGER, 0),
            ("Available", INTEGER, 0),
            AGE,
            *CONTAINERS,
            ("Selector", STRING, 1),
        ),
        _deployment,
    )

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_Deployment``."""
        set_defaults(obj)
