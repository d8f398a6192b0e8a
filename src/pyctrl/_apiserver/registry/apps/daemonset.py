"""DaemonSets (kube-apiserver's pkg/registry/apps/daemonset/strategy.go).

``SetDefaults_DaemonSet``, and the workloads' validation (`workload`).
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
    get,
    map_selector,
    workload_cells,
)

if TYPE_CHECKING:
    from datetime import datetime

    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["DaemonSetStrategy"]


def _daemonset(obj: dict[str, Any], now: datetime) -> Cells:
    status = obj.get("status") or {}
    node_selector = get(obj, "spec", "template", "spec", "nodeSelector")
    return [
        ro_meta(obj).get("name", ""),
        int(status.get("desiredNumberScheduled") or 0),
        int(status.get("currentNumberScheduled") or 0),
        int(status.get("numberReady") or 0),
        int(status.get("updatedNumberScheduled") or 0),
        int(status.get("numberAvailable") or 0),
        map_selector(node_selector),
        *workload_cells(obj, now),
    ]


def set_defaults(obj: dict[str, Any]) -> None:
    """``SetDefaults_DaemonSet``."""
    spec = obj.setdefault("spec", {})
    strategy = spec.setdefault("updateStrategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        ru = strategy.setdefault("rollingUpdate", {})
        ru.setdefault("maxUnavailable", 1)
        ru.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    _defaults.template(obj)


class DaemonSetStrategy(WorkloadStrategy):
    """The rules of DaemonSets."""

    initial_status = {  # noqa: RUF012 - read only, copied on use
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    }

    printer = Printer(
        (
            NAME,
            ("Desired", INTEGER, 0),
            ("Current", INTEGER, 0),
            ("Ready", INTEGER, 0),
            ("Up-to-date", INTEGER, 0),
            ("Available", INTEGER, 0),
            ("Node Selector", STRING, 0),
            AGE,
            *CONTAINERS,
            ("Selector", STRING, 1),
        ),
        _daemonset,
    )

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_DaemonSet``."""
        set_defaults(obj)
