"""Jobs (kube-apiserver's pkg/registry/batch/job/strategy.go).

A created Job without ``manualSelector`` gets the ``controller-uid`` selector and
template labels from its uid; an update keeps the selector.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.registry import defaults as _defaults
from pyctrl._apiserver.registry.meta import deep_copy, meta_of
from pyctrl._apiserver.registry.rest import Strategy
from pyctrl._apiserver.registry.validation import apps as _apps

if TYPE_CHECKING:
    from pyctrl._apimachinery.field import Cause
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["JobStrategy"]


class JobStrategy(Strategy):
    """The rules of Jobs."""

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_Job``."""
        _defaults.job(obj)

    def validate_create(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        """``ValidateJob``."""
        return _apps.validate_job(obj)

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """The selector (and template labels) generated from the new uid."""
        _defaults.job_selector(obj, meta_of(obj)["uid"])

    def prepare_for_update(
        self, rt: ResourceType, new: dict[str, Any], existing: dict[str, Any], subresource: str
    ) -> None:
        """Keep the selector an update leaves out."""
        spec = new.setdefault("spec", {})
        old_spec = existing.get("spec") or {}
        if "selector" not in spec and "selector" in old_spec:
            spec["selector"] = deep_copy(old_spec["selector"])
