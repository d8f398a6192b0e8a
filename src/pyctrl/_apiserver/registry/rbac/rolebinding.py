"""RoleBindings (kube-apiserver's pkg/registry/rbac/rolebinding).

Subjects' ``apiGroup`` defaults by kind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apimachinery.meta import ro_meta
from pyctrl._apiserver.registry import defaults as _defaults
from pyctrl._apiserver.registry.printing import (
    AGE,
    NAME,
    STRING,
    Cells,
    Printer,
    age,
)
from pyctrl._apiserver.registry.rest import Strategy

if TYPE_CHECKING:
    from datetime import datetime

    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["RoleBindingStrategy"]


def _subjects(obj: dict[str, Any], kind: str) -> str:
    out: list[str] = []
    for s in obj.get("subjects") or []:
        if s.get("kind") == kind:
            if kind == "ServiceAccount":
                out.append(f"{s.get('namespace', '')}/{s.get('name', '')}")
            else:
                out.append(str(s.get("name", "")))
    return ", ".join(out)


def _binding(obj: dict[str, Any], now: datetime) -> Cells:
    ref = obj.get("roleRef") or {}
    return [
        ro_meta(obj).get("name", ""),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        age(ro_meta(obj).get("creationTimestamp"), now),
        _subjects(obj, "User"),
        _subjects(obj, "Group"),
        _subjects(obj, "ServiceAccount"),
    ]


class RoleBindingStrategy(Strategy):
    """The rules of RoleBindings."""

    name_rule = "path"
    allow_create_on_update = True

    printer = Printer(
        (
            NAME,
            ("Role", STRING, 0),
            AGE,
            ("Users", STRING, 1),
            ("Groups", STRING, 1),
            ("ServiceAccounts", STRING, 1),
        ),
        _binding,
    )

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_RoleBinding``."""
        _defaults.subjects(obj)
