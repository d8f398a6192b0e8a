"""Events (kube-apiserver's pkg/registry/core/event/strategy.go).

core/v1 and events.k8s.io/v1 Events share one storage; the events.k8s.io view is
validated strictly (``ValidateEventCreate`` for the v1 API), the core one leniently.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apimachinery.meta import ro_meta
from pyctrl._apiserver.registry.printing import (
    INTEGER,
    STRING,
    Cells,
    Printer,
    age,
)
from pyctrl._apiserver.registry.rest import Strategy
from pyctrl._apiserver.registry.validation import events as _events

if TYPE_CHECKING:
    from datetime import datetime

    from pyctrl._apimachinery.field import Cause
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["EventStrategy"]


def _event(obj: dict[str, Any], now: datetime) -> Cells:
    involved = obj.get("involvedObject") or obj.get("regarding") or {}
    last = obj.get("lastTimestamp") or obj.get("eventTime") or ro_meta(obj).get("creationTimestamp")
    first = obj.get("firstTimestamp") or obj.get("eventTime") or last
    source = obj.get("source") or {}
    source_text = source.get("component") or obj.get("reportingComponent") or ""
    if source.get("host"):
        source_text = f"{source_text}, {source['host']}"
    return [
        age(last, now),
        obj.get("type", ""),
        obj.get("reason", ""),
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        involved.get("fieldPath", ""),
        source_text,
        (obj.get("message") or obj.get("note") or "").strip(),
        age(first, now),
        int(obj.get("count") or 1),
        ro_meta(obj).get("name", ""),
    ]


class EventStrategy(Strategy):
    """The rules of Events."""

    allow_create_on_update = True

    printer = Printer(
        (
            ("Last Seen", STRING, 0),
            ("Type", STRING, 0),
            ("Reason", STRING, 0),
            ("Object", STRING, 0),
            ("Subobject", STRING, 1),
            ("Source", STRING, 1),
            ("Message", STRING, 0),
            ("First Seen", STRING, 1),
            ("Count", INTEGER, 1),
            ("Name", STRING, 1),
        ),
        _event,
    )

    def validate_create(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        """``Validate``."""
        return _events.validate_event(obj, strict=rt.group == "events.k8s.io")

    def validate_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any]
    ) -> list[Cause]:
        """``ValidateUpdate``."""
        return _events.validate_event_update(obj, old, strict=rt.group == "events.k8s.io")
