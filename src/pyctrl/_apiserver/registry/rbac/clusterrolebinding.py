"""ClusterRoleBindings (kube-apiserver's pkg/registry/rbac/clusterrolebinding).

Subjects' ``apiGroup`` defaults by kind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.registry import defaults as _defaults
from pyctrl._apiserver.registry.rbac.rolebinding import RoleBindingStrategy
from pyctrl._apiserver.registry.rest import Strategy

if TYPE_CHECKING:
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["ClusterRoleBindingStrategy"]


class ClusterRoleBindingStrategy(Strategy):
    """The rules of ClusterRoleBindings."""

    name_rule = "path"
    allow_create_on_update = True
    printer = RoleBindingStrategy.printer

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_ClusterRoleBinding``."""
        _defaults.subjects(obj)
