"""NetworkPolicies (kube-apiserver's pkg/registry/networking/networkpolicy).

``SetDefaults_NetworkPolicy``: policy types and port protocols.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.registry.rest import Strategy

if TYPE_CHECKING:
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["NetworkPolicyStrategy"]


def set_defaults(obj: dict[str, Any]) -> None:
    """``SetDefaults_NetworkPolicy``: policyTypes and port protocols."""
    spec = obj.setdefault("spec", {})
    if not spec.get("policyTypes"):
        types = ["Ingress"]
        if spec.get("egress"):
            types.append("Egress")
        spec["policyTypes"] = types
    for direction in ("ingress", "egress"):
        for rule in spec.get(direction) or []:
            for port in (rule or {}).get("ports") or []:
                if isinstance(port, dict):
                    port.setdefault("protocol", "TCP")


class NetworkPolicyStrategy(Strategy):
    """The rules of NetworkPolicies."""

    has_generation = True

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_NetworkPolicy``."""
        set_defaults(obj)
