"""Leases (kube-apiserver's pkg/registry/coordination/lease).

``ValidateLease``: the holder identity and durations leader election writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apimachinery.meta import ro_meta
from pyctrl._apiserver.registry.printing import (
    AGE,
    NAME,
    STRING,
    Cells,
    Printer,
    age,
    get,
)
from pyctrl._apiserver.registry.rest import Strategy
from pyctrl._apiserver.registry.validation import apps as _apps

if TYPE_CHECKING:
    from datetime import datetime

    from pyctrl._apimachinery.field import Cause
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["LeaseStrategy"]


def _lease(obj: dict[str, Any], now: datetime) -> Cells:
    return [
        ro_meta(obj).get("name", ""),
        get(obj, "spec", "holderIdentity", default="") or "",
        age(ro_meta(obj).get("creationTimestamp"), now),
    ]


class LeaseStrategy(Strategy):
    """The rules of Leases."""

    allow_create_on_update = True

    printer = Printer(
        (NAME, ("Holder", STRING, 0), AGE),
        _lease,
    )

    def validate_create(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        """``Validate``."""
        return _apps.validate_lease(obj)
