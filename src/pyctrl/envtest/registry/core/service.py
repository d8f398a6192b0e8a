"""Services (kube-apiserver's pkg/registry/core/service: strategy.go, storage/alloc.go).

A Service other than ``ExternalName`` gets a cluster IP from ``10.0.0.0/16`` (or keeps the
one it asks for, if free and in range), and ``NodePort``/``LoadBalancer`` ports a node port
from 30000-32767. An update keeps what was allocated when it leaves it out. The allocator
follows the store: a deleted Service's IP and ports are free again.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any

from pyctrl.envtest.apimachinery.errors import field_invalid, internal, invalid
from pyctrl.envtest.registry.meta import SERVICES, deep_copy, meta_of
from pyctrl.envtest.registry.rest import Strategy

if TYPE_CHECKING:
    from pyctrl.envtest.apimachinery.errors import StatusError
    from pyctrl.envtest.scheme.resources import ResourceType
    from pyctrl.envtest.storage.store import Store, StoreEvent

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
    return ips, ports


def _ip_error(name: str, ip: str, message: str) -> StatusError:
    return invalid("", "Service", name, [field_invalid("spec.clusterIPs", [ip], message)])


class ServiceStrategy(Strategy):
    """The rules of Services, with the allocator of their IPs and node ports."""

    def __init__(self, store: Store) -> None:
        self.ips = IPAllocator()
        """What is allocated (follows every stored Service)."""
        store.add_listener(self._on_event)

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
        elif not ip:
            ip = self.ips.take_ip()
        spec["clusterIP"] = ip
        spec["clusterIPs"] = [ip]
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        if svc_type in ("NodePort", "LoadBalancer"):
            self._allocate_ports(spec, name)
        if not dry_run:
            ips, ports = _service_ips(obj)
            self.ips.ips.update(ips)
            self.ips.ports.update(ports)

    def _allocate_ports(self, spec: dict[str, Any], name: str) -> None:
        for port in spec.get("ports") or []:
            if not port.get("nodePort"):
                port["nodePort"] = self.ips.take_port()
            elif int(port["nodePort"]) in self.ips.ports:
                raise invalid(
                    "",
                    "Service",
                    name,
                    [
                        field_invalid(
                            "spec.ports[0].nodePort",
                            port["nodePort"],
                            "provided port is already allocated",
                        )
                    ],
                )

    def prepare_for_update(
        self, rt: ResourceType, new: dict[str, Any], existing: dict[str, Any], subresource: str
    ) -> None:
        """Keep the allocated IPs and node ports an update leaves out."""
        spec = new.setdefault("spec", {})
        old_spec = existing.get("spec") or {}
        if spec.get("type", "ClusterIP") == "ExternalName":
            return
        for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
            if not spec.get(key) and old_spec.get(key):
                spec[key] = deep_copy(old_spec[key])
        old_ports = {
            (p.get("port"), p.get("protocol", "TCP")): p for p in old_spec.get("ports") or []
        }
        if spec.get("type") in ("NodePort", "LoadBalancer"):
            for port in spec.get("ports") or []:
                old = old_ports.get((port.get("port"), port.get("protocol", "TCP")))
                if not port.get("nodePort") and old is not None and old.get("nodePort"):
                    port["nodePort"] = old["nodePort"]

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
