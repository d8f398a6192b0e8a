"""The Service strategy's update preparation (pkg/registry/core/service/strategy.go).

When an update changes a Service's type, kube-apiserver drops the fields the new type no
longer uses, provided the request left them as they were (``dropTypeDependentFields``):
cluster IPs and IP families when leaving the types with a cluster IP, node ports when
leaving NodePort and LoadBalancer, the health-check node port, load-balancer settings, the
external traffic policy, and the load-balancer status of a Service that is no longer one.
Validation then sees the Service the user meant.
"""

from __future__ import annotations

from typing import Any


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _needs_cluster_ip(spec: dict[str, Any]) -> bool:
    return bool(spec.get("type", "ClusterIP") != "ExternalName")


def _needs_node_port(spec: dict[str, Any]) -> bool:
    return spec.get("type") in ("NodePort", "LoadBalancer")


def _needs_health_check(spec: dict[str, Any]) -> bool:
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def _externally_accessible(spec: dict[str, Any]) -> bool:
    return _needs_node_port(spec) or (
        spec.get("type", "ClusterIP") == "ClusterIP" and bool(spec.get("externalIPs"))
    )


def _node_ports(spec: dict[str, Any]) -> list[Any]:
    return [p.get("nodePort") for p in spec.get("ports") or () if isinstance(p, dict)]


def drop_type_dependent_fields(new: dict[str, Any], old: dict[str, Any]) -> None:
    """``dropTypeDependentFields``: wipe, in ``new``, what its type no longer uses."""
    spec, old_spec = _spec(new), _spec(old)
    if _needs_cluster_ip(old_spec) and not _needs_cluster_ip(spec):
        for keys in (("clusterIP", "clusterIPs"), ("ipFamilies",), ("ipFamilyPolicy",)):
            if all(spec.get(k) == old_spec.get(k) for k in keys):
                for key in keys:
                    spec.pop(key, None)
    if (
        _needs_node_port(old_spec)
        and not _needs_node_port(spec)
        and _node_ports(spec) == _node_ports(old_spec)
    ):
        for port in spec.get("ports") or ():
            if isinstance(port, dict):
                port.pop("nodePort", None)
    if (
        _needs_health_check(old_spec)
        and not _needs_health_check(spec)
        and spec.get("healthCheckNodePort") == old_spec.get("healthCheckNodePort")
    ):
        spec.pop("healthCheckNodePort", None)
    if spec.get("type") != "LoadBalancer":
        spec.pop("allocateLoadBalancerNodePorts", None)
        if old_spec.get("type") == "LoadBalancer" and spec.get("loadBalancerClass") == old_spec.get(
            "loadBalancerClass"
        ):
            spec.pop("loadBalancerClass", None)
        status = new.get("status")
        if isinstance(status, dict) and "loadBalancer" in status:
            status["loadBalancer"] = {}
    if (
        _externally_accessible(old_spec)
        and not _externally_accessible(spec)
        and spec.get("externalTrafficPolicy") == old_spec.get("externalTrafficPolicy")
    ):
        spec.pop("externalTrafficPolicy", None)
