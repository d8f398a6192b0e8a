"""Services (kube-apiserver's pkg/registry/core/service: strategy.go, storage/alloc.go).

A Service other than ``ExternalName`` gets a cluster IP from ``10.0.0.0/16`` (or keeps the
one it asks for, if free and in range), and ``NodePort``/``LoadBalancer`` ports a node port
from 30000-32767. An update keeps what was allocated when it leaves it out, and a change of
type drops what the new type no longer uses when the request left it as it was
(``dropTypeDependentFields``). The allocator follows the store: a deleted Service's IP and
ports are free again.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any

from pyctrl._apimachinery.field import field_invalid
from pyctrl._apiserver.apimachinery.errors import internal, invalid
from pyctrl._apiserver.registry import defaults as _defaults
from pyctrl._apiserver.registry.meta import SERVICES, deep_copy, meta_of
from pyctrl._apiserver.registry.rest import Strategy
from pyctrl._apiserver.registry.validation import service as _service_validation

if TYPE_CHECKING:
    from pyctrl._apimachinery.field import Cause
    from pyctrl._apiserver.apimachinery.errors import StatusError
    from pyctrl._apiserver.scheme.resources import ResourceType
    from pyctrl._apiserver.storage.store import Store, StoreEvent

__all__ = ["IPAllocator", "ServiceStrategy"]


class IPAllocator:
    """Cluster IPs and node ports for Services."""

    def __init__(self) -> None:
        self.network = ipaddress.ip_network("10.0.0.0/16")
        self.ips: set[str] = set()
        self.ports: set[int] = set()
        self._next_ip = 10
        self._next_port = 30000

    def take_ip(self) -> str:
        """A free cluster IP (not yet marked taken).

        Raises:
            StatusError: 500 when the range is full.
        """
        size = self.network.num_addresses - 2
        for _ in range(size):
            candidate = str(self.network.network_address + self._next_ip)
            self._next_ip = self._next_ip + 1 if self._next_ip < size else 2
            if candidate not in self.ips:
                return candidate
        raise internal("failed to allocate a serviceIP: range is full")

    def take_port(self) -> int:
        """A free node port (not yet marked taken).

        Raises:
            StatusError: 500 when the range is full.
        """
        for _ in range(2768):
            candidate = self._next_port
            self._next_port = self._next_port + 1 if self._next_port < 32767 else 30000
            if candidate not in self.ports:
                return candidate
        raise internal("failed to allocate a nodePort: range is full")

    def in_range(self, ip: str) -> bool:
        """Whether ``ip`` is in the service network."""
        try:
            return ipaddress.ip_address(ip) in self.network
        except ValueError:
            return False


def _service_ips(obj: dict[str, Any]) -> tuple[list[str], list[int]]:
    spec = obj.get("spec") or {}
    ips = [ip for ip in spec.get("clusterIPs") or [spec.get("clusterIP")] if ip and ip != "None"]
    ports = [int(p["nodePort"]) for p in spec.get("ports") or [] if p.get("nodePort")]
    if spec.get("healthCheckNodePort"):
        ports.append(int(spec["healthCheckNodePort"]))
    return ips, ports


def _ip_error(name: str, ip: str, message: str) -> StatusError:
    return invalid("", "Service", name, [field_invalid("spec.clusterIPs", [ip], message)])


class ServiceStrategy(Strategy):
    """The rules of Services, with the allocator of their IPs and node ports."""

    def __init__(self, store: Store) -> None:
        self.ips = IPAllocator()
        """What is allocated (follows every stored Service)."""
        store.add_listener(self._on_event)

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_Service``: type, session affinity, ports' protocols and targets."""
        _defaults.service(obj)

    def validate_create(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        """``ValidateServiceCreate``."""
        return _service_validation.validate_service_create(obj)

    def validate_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any]
    ) -> list[Cause]:
        """``ValidateServiceUpdate``, with the cluster IPs the allocator kept."""
        return _service_validation.validate_service_update_allocating(obj, old)

    def validate_status_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any]
    ) -> list[Cause] | None:
        """``ValidateServiceStatusUpdate``: the load balancer's ingress."""
        return _service_validation.validate_service_status_update(obj, old)

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """Refuse an unallocatable address or port before validation, as kube-apiserver does.

        kube-apiserver allocates (``BeginCreate``) before it validates: once the cluster IP
        fields pass the allocator's own check, a requested cluster IP out of range or taken,
        or a requested node port out of range or taken, is the only error answered.
        """
        spec = obj.get("spec")
        if not isinstance(spec, dict) or spec.get("type", "ClusterIP") == "ExternalName":
            return
        if _service_validation.cluster_ips_related(
            _service_validation.normalize_cluster_ips(spec, None)
        ):
            return  # validation answers with those causes alone
        self._check_requested(spec, meta_of(obj).get("name", ""))

    def _check_requested(self, spec: dict[str, Any], name: str) -> None:
        ip = spec.get("clusterIP") or ((spec.get("clusterIPs") or [None])[0])
        if ip and ip != "None":
            self._check_cluster_ip(name, ip)
        if spec.get("type") not in ("NodePort", "LoadBalancer"):
            return
        for i, port in enumerate(spec.get("ports") or []):
            requested = port.get("nodePort") if isinstance(port, dict) else None
            problem = (
                _node_port_problem(requested, self.ips.ports)
                if isinstance(requested, int) and requested
                else ""
            )
            if problem:
                raise invalid(
                    "",
                    "Service",
                    name,
                    [field_invalid(f"spec.ports[{i}].nodePort", requested, problem)],
                )

    def _check_cluster_ip(self, name: str, ip: str) -> None:
        """Refuse a requested cluster IP out of the range or already allocated."""
        if not self.ips.in_range(ip):
            raise _ip_error(
                name,
                ip,
                f"failed to allocate IP {ip}: the provided IP ({ip}) is not in the "
                f"valid range. The range of valid IPs is {self.ips.network}",
            )
        if ip in self.ips.ips:
            raise _ip_error(
                name, ip, f"failed to allocate IP {ip}: provided IP is already allocated"
            )

    def begin_create(self, rt: ResourceType, obj: dict[str, Any], *, dry_run: bool) -> None:
        """Allocate the cluster IP and node ports (taken for good unless ``dry_run``).

        Raises:
            StatusError: 422 for an IP out of range or taken, or a node port taken.
        """
        spec = obj.setdefault("spec", {})
        svc_type = spec.get("type", "ClusterIP")
        if svc_type == "ExternalName":
            return
        ip = spec.get("clusterIP") or ((spec.get("clusterIPs") or [None])[0])
        name = meta_of(obj).get("name", "")
        if ip and ip != "None":
            # Checked again here: another create may have taken it since prepare_for_create.
            self._check_cluster_ip(name, ip)
        elif not ip:
            ip = self.ips.take_ip()
        spec["clusterIP"] = ip
        spec["clusterIPs"] = [ip]
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        if svc_type in ("NodePort", "LoadBalancer"):
            self._allocate_ports(spec, name)
        if svc_type == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local":
            self._allocate_health_check_port(spec, name)
        if not dry_run:
            ips, ports = _service_ips(obj)
            self.ips.ips.update(ips)
            self.ips.ports.update(ports)

    def _allocate_health_check_port(self, spec: dict[str, Any], name: str) -> None:
        """``allocHealthCheckNodePort``: the one asked for if free, else the next free one."""
        port = spec.get("healthCheckNodePort")
        if not port:
            spec["healthCheckNodePort"] = self.ips.take_port()
        elif problem := _node_port_problem(int(port), self.ips.ports):
            message = f"failed to allocate requested HealthCheck NodePort {port}: {problem}"
            raise invalid(
                "", "Service", name, [field_invalid("spec.healthCheckNodePort", port, message)]
            )

    def _allocate_ports(self, spec: dict[str, Any], name: str) -> None:
        # A LoadBalancer with allocateLoadBalancerNodePorts false gets only those it asks for.
        automatic = not (
            spec.get("type") == "LoadBalancer"
            and spec.get("allocateLoadBalancerNodePorts") is False
        )
        for i, port in enumerate(spec.get("ports") or []):
            if not port.get("nodePort"):
                if automatic:
                    port["nodePort"] = self.ips.take_port()
            elif problem := _node_port_problem(int(port["nodePort"]), self.ips.ports):
                raise invalid(
                    "",
                    "Service",
                    name,
                    [field_invalid(f"spec.ports[{i}].nodePort", port["nodePort"], problem)],
                )

    def prepare_for_update(
        self, rt: ResourceType, new: dict[str, Any], existing: dict[str, Any], subresource: str
    ) -> None:
        """Keep what was allocated and an update leaves out; drop what a new type no longer uses.

        The drop (``dropTypeDependentFields``) applies to main-resource writes only.
        """
        _keep_allocated(new, existing)
        if subresource != "status":
            drop_type_dependent_fields(new, existing)

    def _on_event(self, event: StoreEvent) -> None:
        if event.key != SERVICES:
            return
        if event.prev is not None:
            ips, ports = _service_ips(event.prev)
            self.ips.ips.difference_update(ips)
            self.ips.ports.difference_update(ports)
        if event.type != "DELETED":
            ips, ports = _service_ips(event.obj)
            self.ips.ips.update(ips)
            self.ips.ports.update(ports)


def _keep_allocated(new: dict[str, Any], existing: dict[str, Any]) -> None:
    """Keep the allocated IPs and node ports an update leaves out."""
    spec = new.setdefault("spec", {})
    old_spec = existing.get("spec") or {}
    if spec.get("type", "ClusterIP") == "ExternalName":
        return
    for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
        if not spec.get(key) and old_spec.get(key):
            spec[key] = deep_copy(old_spec[key])
    old_ports = {(p.get("port"), p.get("protocol", "TCP")): p for p in old_spec.get("ports") or []}
    if spec.get("type") in ("NodePort", "LoadBalancer"):
        for port in spec.get("ports") or []:
            old = old_ports.get((port.get("port"), port.get("protocol", "TCP")))
            if not port.get("nodePort") and old is not None and old.get("nodePort"):
                port["nodePort"] = old["nodePort"]


def _node_port_problem(port: int, allocated: set[int]) -> str:
    """The port allocator's refusal of a requested node port ('' when it is free)."""
    if not 30000 <= port <= 32767:
        return "provided port is not in the valid range. The range of valid ports is 30000-32767"
    return "provided port is already allocated" if port in allocated else ""


# --- dropTypeDependentFields (strategy.go) ----------------------------------------------


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
