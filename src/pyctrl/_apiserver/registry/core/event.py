"""Events (kube-apiserver's pkg/registry/core/event/strategy.go).

core/v1 and events.k8s.io/v1 Events share one storage; the events.k8s.io view is
validated strictly (``ValidateEventCreate`` for the v1 API), the core one leniently.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.registry.rest import Strategy
from pyctrl._apiserver.registry.validation import events as _events

if TYPE_CHECKING:
    from pyctrl._apimachinery.field import Cause
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["EventStrategy"]


class EventStrategy(Strategy):
    """The rules of Events."""

    def validate_create(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        """``Validate``."""
        return _events.validate_event(obj, strict=rt.group == "events.k8s.io")

    def validate_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any]
    ) -> list[Cause]:
        """``ValidateUpdate``."""
        return _events.validate_event_update(obj, old, strict=rt.group == "events.k8s.io")
