"""Roles (kube-apiserver's pkg/registry/rbac/role).

Any path segment names a Role, an update may create one, and ``kubectl get`` shows its
creation time as written.
"""

from __future__ import annotations

from pyctrl._apiserver.registry.printing import name_created_at
from pyctrl._apiserver.registry.rest import Strategy

__all__ = ["RoleStrategy"]


class RoleStrategy(Strategy):
    """The rules of Roles."""

    name_rule = "path"
    allow_create_on_update = True
    printer = name_created_at
