"""Leases (kube-apiserver's pkg/registry/coordination/lease).

``ValidateLease``: the holder identity and durations leader election writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.registry.rest import Strategy
from pyctrl._apiserver.registry.validation import apps as _apps

if TYPE_CHECKING:
    from pyctrl._apimachinery.field import Cause
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["LeaseStrategy"]


class LeaseStrategy(Strategy):
    """The rules of Leases."""

    def validate_create(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        """``Validate``."""
        return _apps.validate_lease(obj)
