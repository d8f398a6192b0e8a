"""PodTemplates (kube-apiserver's pkg/registry/core/podtemplate).

The template's pod spec gets the pod defaults.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.registry import defaults as _defaults
from pyctrl._apiserver.registry.rest import Strategy

if TYPE_CHECKING:
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["PodTemplateStrategy"]


def set_defaults(obj: dict[str, Any]) -> None:
    """Defaults of a PodTemplate's pod spec."""
    template = obj.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        _defaults.pod_spec(template["spec"])


class PodTemplateStrategy(Strategy):
    """The rules of PodTemplates."""

    return_deleted_object = True

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_PodTemplate``."""
        set_defaults(obj)
