"""Deployments (kube-apiserver's pkg/registry/apps/deployment/strategy.go).

``SetDefaults_Deployment``, and the workloads' validation (`workload`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.registry import defaults as _defaults
from pyctrl._apiserver.registry.apps.workload import WorkloadStrategy

if TYPE_CHECKING:
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["DeploymentStrategy"]


class DeploymentStrategy(WorkloadStrategy):
    """The rules of Deployments."""

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_Deployment``."""
        _defaults.deployment(obj)
