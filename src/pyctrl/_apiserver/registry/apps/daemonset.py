"""DaemonSets (kube-apiserver's pkg/registry/apps/daemonset/strategy.go).

``SetDefaults_DaemonSet``, and the workloads' validation (`workload`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.registry import defaults as _defaults
from pyctrl._apiserver.registry.apps.workload import WorkloadStrategy

if TYPE_CHECKING:
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["DaemonSetStrategy"]


class DaemonSetStrategy(WorkloadStrategy):
    """The rules of DaemonSets."""

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_DaemonSet``."""
        _defaults.daemonset(obj)
