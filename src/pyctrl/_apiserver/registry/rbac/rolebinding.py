"""RoleBindings (kube-apiserver's pkg/registry/rbac/rolebinding).

Subjects' ``apiGroup`` defaults by kind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.registry import defaults as _defaults
from pyctrl._apiserver.registry.rest import Strategy

if TYPE_CHECKING:
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["RoleBindingStrategy"]


class RoleBindingStrategy(Strategy):
    """The rules of RoleBindings."""

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_RoleBinding``."""
        _defaults.subjects(obj)
