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


def set_defaults(obj: dict[str, Any]) -> None:
    """``SetDefaults_ReplicationController``: selector and labels from the template."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    labels = (spec.get("template") or {}).get("metadata", {}).get("labels") or {}
    if labels:
        spec.setdefault("selector", dict(labels))
        obj.setdefault("metadata", {}).setdefault("labels", dict(labels))
    _defaults.template(obj)


class ReplicationControllerStrategy(Strategy):
    """The rules of ReplicationControllers."""

    has_generation = True
    default_gc_policy = "Orphan"
    initial_status = {"replicas": 0}  # noqa: RUF012 - read only, copied on use

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_ReplicationController``."""
        set_defaults(obj)
