"""ClusterRoles (kube-apiserver's pkg/registry/rbac/clusterrole): as Roles, cluster-wide."""

from __future__ import annotations

from pyctrl._apiserver.registry.printing import name_created_at
from pyctrl._apiserver.registry.rest import Strategy

__all__ = ["ClusterRoleStrategy"]


class ClusterRoleStrategy(Strategy):
    """The rules of ClusterRoles."""

    name_rule = "path"
    allow_create_on_update = True
    printer = name_created_at
