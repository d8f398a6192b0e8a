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


class PodTemplateStrategy(Strategy):
    """The rules of PodTemplates."""

    return_deleted_object = True

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_PodTemplate``."""
        _defaults.pod_template(obj)
