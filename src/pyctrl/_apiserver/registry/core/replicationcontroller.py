"""ReplicationControllers (kube-apiserver's pkg/registry/core/replicationcontroller).

The selector and labels default from the pod template (``SetDefaults_ReplicationController``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.registry import defaults as _defaults
from pyctrl._apiserver.registry.rest import Strategy

if TYPE_CHECKING:
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["ReplicationControllerStrategy"]


class ReplicationControllerStrategy(Strategy):
    """The rules of ReplicationControllers."""

    has_generation = True
    default_gc_policy = "Orphan"
    initial_status = {"replicas": 0}  # noqa: RUF012 - read only, copied on use

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_ReplicationController``."""
        _defaults.replicationcontroller(obj)
