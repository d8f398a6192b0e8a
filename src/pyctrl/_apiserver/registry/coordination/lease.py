"""Leases (kube-apiserver's pkg/registry/coordination/lease).

``ValidateLease``: the holder identity and durations leader election writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apimachinery.field import Cause, field_invalid
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
from pyctrl._apiserver.registry.validation import meta as _meta

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


def validate_lease(obj: dict[str, Any]) -> list[Cause]:
    """``ValidateLease``: metadata and a positive ``leaseDurationSeconds``."""
    causes = _meta.object_meta(obj, "subdomain", namespaced=True, kube=True)
    duration = (obj.get("spec") or {}).get("leaseDurationSeconds")
    if isinstance(duration, int) and duration <= 0:
        causes.append(
            field_invalid("spec.leaseDurationSeconds", duration, "must be greater than 0")
        )
    return causes


class LeaseStrategy(Strategy):
    """The rules of Leases."""

    allow_create_on_update = True

    printer = Printer(
        (NAME, ("Holder", STRING, 0), AGE),
        _lease,
    )

    def validate_create(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        """``Validate``."""
        return validate_lease(obj)
