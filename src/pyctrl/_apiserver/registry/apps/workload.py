"""The rules the apps workloads share (``ValidateDeployment`` and its siblings).

Deployments, ReplicaSets, StatefulSets and DaemonSets check their selector, template and
replicas alike (`pyctrl._apiserver.registry.validation.apps.validate_workload`); each
kind's module adds its own defaults.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.registry.rest import Strategy
from pyctrl._apiserver.registry.validation import apps as _apps

if TYPE_CHECKING:
    from pyctrl._apimachinery.field import Cause
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["WorkloadStrategy"]


class WorkloadStrategy(Strategy):
    """The validation of an apps workload: selector, template, replicas, update strategy."""

    has_generation = True

    def validate_create(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        """``Validate``."""
        return _apps.validate_workload(obj, None)

    def validate_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any]
    ) -> list[Cause]:
        """``ValidateUpdate``: the selector stays."""
        return _apps.validate_workload(obj, old)
