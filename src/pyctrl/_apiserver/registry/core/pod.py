"""Pods (kube-apiserver's pkg/registry/core/pod/strategy.go).

A created Pod starts ``Pending`` with its QoS class; deleting a Pod bound to a node is
graceful (``CheckGracefulDelete``): it is marked for deletion for its grace period (the
request's, else ``spec.terminationGracePeriodSeconds``), and removed at once when unbound
or finished.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apimachinery.field import (
    Cause,
    field_required,
)
from pyctrl._apiserver.registry import defaults as _defaults
from pyctrl._apiserver.registry.meta import ro_meta
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
from pyctrl._apiserver.registry.validation import core as _core
from pyctrl._apiserver.registry.validation import meta as _meta

if TYPE_CHECKING:
    from datetime import datetime

    from pyctrl._apimachinery.field import Cause
    from pyctrl._apiserver.registry.options import DeleteOptions
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["PodStrategy"]


def _pod(obj: dict[str, Any], now: datetime) -> Cells:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    statuses = status.get("containerStatuses") or []
    total = len(spec.get("containers") or [])
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    reason = status.get("reason") or status.get("phase") or ""
    for c in statuses:
        waiting = get(c, "state", "waiting", "reason")
        terminated = get(c, "state", "terminated", "reason")
        if waiting:
            reason = waiting
        elif terminated:
            reason = terminated
    if ro_meta(obj).get("deletionTimestamp"):
        reason = "Terminating"
    gates = spec.get("readinessGates") or []
    return [
        ro_meta(obj).get("name", ""),
        f"{ready}/{total}",
        reason,
        str(restarts),
        age(ro_meta(obj).get("creationTimestamp"), now),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        f"0/{len(gates)}" if gates else "<none>",
    ]


def set_defaults(obj: dict[str, Any]) -> None:
    """``SetDefaults_Pod``."""
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict):
        _defaults.pod_spec(spec)
        spec.setdefault("enableServiceLinks", True)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        spec.setdefault("priority", 0)
        spec.setdefault(
            "tolerations",
            [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
        )
        for c in spec.get("containers") or []:
            res = c.get("resources")
            if isinstance(res, dict) and res.get("limits") and not res.get("requests"):
                res["requests"] = dict(res["limits"])


def _initial_status(obj: dict[str, Any]) -> dict[str, Any]:
    """The status a new pod gets (``Pending`` with its QoS class)."""
    return {"phase": "Pending", "qosClass": _pod_qos(obj.get("spec") or {})}


def _pod_qos(spec: dict[str, Any]) -> str:
    requests_seen = limits_seen = False
    guaranteed = True
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        if req or lim:
            requests_seen = requests_seen or bool(req)
            limits_seen = limits_seen or bool(lim)
        for r in ("cpu", "memory"):
            if r not in lim or (r in req and req[r] != lim[r]):
                guaranteed = False
    if not requests_seen and not limits_seen:
        return "BestEffort"
    return "Guaranteed" if guaranteed and limits_seen else "Burstable"


def validate_pod(obj: dict[str, Any]) -> list[Cause]:
    """A subset of ``ValidatePodCreate``: metadata and the containers."""
    causes = _meta.object_meta(obj, "subdomain", namespaced=True, kube=True)
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [*causes, field_required("spec")]
    return causes + _core.containers(spec, "spec")


class PodStrategy(Strategy):
    """The rules of Pods."""

    return_deleted_object = True
    initial_status = {"phase": "Pending"}  # noqa: RUF012 - read only, copied on use

    printer = Printer(
        (
            NAME,
            ("Ready", STRING, 0),
            ("Status", STRING, 0),
            ("Restarts", STRING, 0),
            AGE,
            ("IP", STRING, 1),
            ("Node", STRING, 1),
            ("Nominated Node", STRING, 1),
            ("Readiness Gates", STRING, 1),
        ),
        _pod,
    )

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_Pod`` and the pod spec's defaults."""
        set_defaults(obj)

    def validate_create(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        """``ValidatePodCreate``: metadata, containers, restart policy."""
        return validate_pod(obj)

    def reset_status_on_create(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``Pending``, with the QoS class the spec gives."""
        obj["status"] = _initial_status(obj)

    def check_graceful_delete(
        self, rt: ResourceType, stored: dict[str, Any], opts: DeleteOptions
    ) -> int | None:
        """The grace period of a Pod's deletion (0 for an unbound or finished Pod)."""
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
