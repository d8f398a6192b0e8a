"""Deployments (kube-apiserver's pkg/registry/apps/deployment/strategy.go).

``SetDefaults_Deployment``; the selector, template and replicas rules of the apps workloads
(``ValidateDeployment`` and its siblings).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.registry import defaults as _defaults
from pyctrl._apiserver.registry.rest import Strategy
from pyctrl._apiserver.registry.validation import apps as _apps

if TYPE_CHECKING:
    from pyctrl._apiserver.apimachinery.errors import Cause
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["DeploymentStrategy"]


class DeploymentStrategy(Strategy):
    """The rules of Deployments."""

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_Deployment``."""
        _defaults.deployment(obj)

    def validate_create(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        """``Validate``."""
        return _apps.validate_workload(obj, None)

    def validate_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any]
    ) -> list[Cause]:
        """``ValidateUpdate``."""
        return _apps.validate_workload(obj, old)
