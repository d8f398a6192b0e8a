"""NetworkPolicies (kube-apiserver's pkg/registry/networking/networkpolicy).

``SetDefaults_NetworkPolicy``: policy types and port protocols.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.registry import defaults as _defaults
from pyctrl._apiserver.registry.rest import Strategy

if TYPE_CHECKING:
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["NetworkPolicyStrategy"]


class NetworkPolicyStrategy(Strategy):
    """The rules of NetworkPolicies."""

    has_generation = True

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_NetworkPolicy``."""
        _defaults.network_policy(obj)
