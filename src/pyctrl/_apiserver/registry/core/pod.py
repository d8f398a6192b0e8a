"""Pods (kube-apiserver's pkg/registry/core/pod/strategy.go).

A created Pod starts ``Pending`` with its QoS class; deleting a Pod bound to a node is
graceful (``CheckGracefulDelete``): it is marked for deletion for its grace period (the
request's, else ``spec.terminationGracePeriodSeconds``), and removed at once when unbound
or finished.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.registry import defaults as _defaults
from pyctrl._apiserver.registry.rest import Strategy
from pyctrl._apiserver.registry.validation import core as _core

if TYPE_CHECKING:
    from pyctrl._apimachinery.field import Cause
    from pyctrl._apiserver.registry.options import DeleteOptions
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["PodStrategy"]


class PodStrategy(Strategy):
    """The rules of Pods."""

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_Pod`` and the pod spec's defaults."""
        _defaults.pod(obj)

    def validate_create(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        """``ValidatePodCreate``: metadata, containers, restart policy."""
        return _core.validate_pod(obj)

    def reset_status_on_create(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``Pending``, with the QoS class the spec gives."""
        obj["status"] = _defaults.pod_initial_status(obj)

    def check_graceful_delete(
        self, rt: ResourceType, stored: dict[str, Any], opts: DeleteOptions
    ) -> int | None:
        """The grace period of a Pod's deletion (0 for an unbound or finished Pod)."""
        if not rt.graceful_delete:
            return None
        spec = stored.get("spec") or {}
        if opts.grace_period is not None:
            period = max(opts.grace_period, 0) if opts.grace_period >= 0 else 1
        else:
            period = int(spec.get("terminationGracePeriodSeconds") or 0)
        if not spec.get("nodeName"):
            period = 0
        if (stored.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            period = 0
        return period
