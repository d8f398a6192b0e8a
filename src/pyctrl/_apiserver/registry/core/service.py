"""Services: every rule of the kind, in one place.

kube-apiserver spreads them over ``pkg/registry/core/service`` (strategy.go,
storage/alloc.go), ``pkg/apis/core/v1/defaults.go`` (``SetDefaults_Service``),
``pkg/apis/core/validation`` (``ValidateService`` and its update and status forms) and
``pkg/printers`` (the table); `ServiceStrategy` holds them all. Only the merge metadata
(``spec.ports`` merged by ``port`` and ``protocol``) lives in the floor,
`pyctrl._apimachinery.merge_keys`, because the client's strategic diff reads it too.

A Service other than ``ExternalName`` gets a cluster IP from ``10.0.0.0/16`` (or keeps the
one it asks for, if free and in range), and ``NodePort``/``LoadBalancer`` ports a node port
from 30000-32767. An update keeps what was allocated when it leaves it out, and a change of
type drops what the new type no longer uses when the request left it as it was
(``dropTypeDependentFields``). The allocator follows the store: a deleted Service's IP and
ports are free again.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any, Self

from pyctrl._apiextensions.names import is_qualified_name
from pyctrl._apimachinery.field import (
    Cause,
    field_duplicate,
    field_forbidden,
    field_invalid,
    field_not_supported,
    field_required,
)
from pyctrl._apimachinery.gofmt import GoStruct
from pyctrl._apimachinery.meta import ro_meta
from pyctrl._apiserver.apimachinery.errors import internal, invalid
from pyctrl._apiserver.registry.meta import SERVICES, deep_copy, meta_of
from pyctrl._apiserver.registry.printing import (
    AGE,
    NAME,
    STRING,
    Cells,
    Printer,
    age,
    get,
    map_selector,
)
from pyctrl._apiserver.registry.rest import Strategy
from pyctrl._apiserver.registry.validation import meta as _meta
from pyctrl._apiserver.registry.validation import net as _net

if TYPE_CHECKING:
    from datetime import datetime

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


def _service_ports(spec: dict[str, Any]) -> str:
    parts: list[str] = []
    for p in spec.get("ports") or []:
        proto = p.get("protocol", "TCP")
        if p.get("nodePort"):
            parts.append(f"{p.get('port')}:{p['nodePort']}/{proto}")
        else:
            parts.append(f"{p.get('port')}/{proto}")
    return ",".join(parts) if parts else "<none>"


def _service_external_ip(obj: dict[str, Any]) -> str:
    spec = obj.get("spec") or {}
    svc_type = spec.get("type", "ClusterIP")
    external = list(spec.get("externalIPs") or [])
    if svc_type == "ExternalName":
        return str(spec.get("externalName", ""))
    if svc_type == "LoadBalancer":
        ingress = get(obj, "status", "loadBalancer", "ingress", default=[]) or []
        ips = [i.get("ip") or i.get("hostname") for i in ingress]
        ips = [str(i) for i in ips if i] + external
        return ",".join(ips) if ips else "<pending>"
    return ",".join(external) if external else "<none>"


def _service(obj: dict[str, Any], now: datetime) -> Cells:
    spec = obj.get("spec") or {}
    return [
        ro_meta(obj).get("name", ""),
        spec.get("type", "ClusterIP"),
        spec.get("clusterIP") or "<none>",
        _service_external_ip(obj),
        _service_ports(spec),
        age(ro_meta(obj).get("creationTimestamp"), now),
        map_selector(spec.get("selector")),
    ]


class ServiceStrategy(Strategy):
    """The rules of Services, with the allocator of their IPs and node ports."""

    name_rule = "label1035"
    allow_create_on_update = True
    return_deleted_object = True
    initial_status = {"loadBalancer": {}}  # noqa: RUF012 - read only, copied on use

    printer = Printer(
        (
            NAME,
            ("Type", STRING, 0),
            ("Cluster-IP", STRING, 0),
            ("External-IP", STRING, 0),
            ("Port(s)", STRING, 0),
            AGE,
            ("Selector", STRING, 1),
        ),
        _service,
    )

    @classmethod
    def for_store(cls, store: Store) -> Self:
        """The strategy of the server whose store is ``store``."""
        return cls(store)

    def __init__(self, store: Store) -> None:
        self.ips = IPAllocator()
        """What is allocated (follows every stored Service)."""
        store.add_listener(self._on_event, key=SERVICES)

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_Service``: type, session affinity, ports' protocols and targets."""
        set_defaults(obj)

    def validate_create(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        """``ValidateServiceCreate``."""
        return validate_service_create(obj)

    def validate_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any]
    ) -> list[Cause]:
        """``ValidateServiceUpdate``, with the cluster IPs the allocator kept."""
        return validate_service_update_allocating(obj, old)

    def validate_status_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any]
    ) -> list[Cause] | None:
        """``ValidateServiceStatusUpdate``: the load balancer's ingress."""
        return validate_service_status_update(obj, old)

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """Refuse an unallocatable address or port before validation, as kube-apiserver does.

        kube-apiserver allocates (``BeginCreate``) before it validates: once the cluster IP
        fields pass the allocator's own check, a requested cluster IP out of range or taken,
        or a requested node port out of range or taken, is the only error answered.
        """
        spec = obj.get("spec")
        if not isinstance(spec, dict) or spec.get("type", "ClusterIP") == "ExternalName":
            return
        if cluster_ips_related(normalize_cluster_ips(spec, None)):
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


def _needs_cluster_ip(spec: dict[str, Any]) -> bool:
    return bool(spec.get("type", "ClusterIP") != "ExternalName")


def _needs_node_port(spec: dict[str, Any]) -> bool:
    return spec.get("type") in ("NodePort", "LoadBalancer")


def _node_port_values(spec: dict[str, Any]) -> list[Any]:
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
        and _node_port_values(spec) == _node_port_values(old_spec)
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


# --- SetDefaults_Service (pkg/apis/core/v1/defaults.go) -----------------------------------


def set_defaults(obj: dict[str, Any]) -> None:
    """``SetDefaults_Service`` (cluster IP and node ports are allocated by the server)."""
    spec = obj.setdefault("spec", {})
    svc_type = spec.setdefault("type", "ClusterIP")
    if not spec.get("sessionAffinity"):
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    if spec["sessionAffinity"] == "ClientIP":
        config = spec.get("sessionAffinityConfig")
        client = config.get("clientIP") if isinstance(config, dict) else None
        if not isinstance(client, dict) or client.get("timeoutSeconds") is None:
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10800}}
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if "targetPort" not in port or port["targetPort"] in (0, ""):
                port["targetPort"] = port.get("port")
    accessible = svc_type in ("NodePort", "LoadBalancer") or (
        svc_type == "ClusterIP" and bool(spec.get("externalIPs"))
    )
    if accessible and not spec.get("externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if svc_type == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)
        status = obj.get("status")
        ingress = (
            ((status or {}).get("loadBalancer") or {}).get("ingress")
            if isinstance(status, dict)
            else None
        )
        for item in ingress or ():
            if isinstance(item, dict) and item.get("ip") and item.get("ipMode") is None:
                item["ipMode"] = "VIP"
    if svc_type != "ExternalName":
        spec.setdefault("internalTrafficPolicy", "Cluster")


# --- ValidateService, ValidateServiceUpdate, ValidateServiceStatusUpdate ----------------
# (pkg/apis/core/validation/validation.go, in its order)

SUPPORTED_TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
_PROTOCOLS = ["SCTP", "TCP", "UDP"]
_AFFINITIES = ["ClientIP", "None"]
_POLICIES = ["Cluster", "Local"]
_FAMILIES = ["IPv4", "IPv6"]
_FAMILY_POLICIES = ["PreferDualStack", "RequireDualStack", "SingleStack"]
_IP_MODES = ["Proxy", "VIP"]
_PORT_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")
_PORT_RANGE = "must be between 1 and 65535, inclusive"
_MAX_AFFINITY_SECONDS = 86400
_SOURCE_RANGES_ANNOTATION = "service.beta.kubernetes.io/load-balancer-source-ranges"
_TOPOLOGY_HINTS = "service.kubernetes.io/topology-aware-hints"
_TOPOLOGY_MODE = "service.kubernetes.io/topology-mode"
_LB_ONLY = "may only be used when `type` is 'LoadBalancer'"


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _headless(spec: dict[str, Any]) -> bool:
    ips = _list(spec.get("clusterIPs"))
    return len(ips) == 1 and ips[0] == "None"


def normalize_cluster_ips(spec: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
    """A copy of ``spec`` with ``NormalizeClusterIPs`` applied, as the strategy does first."""
    out = dict(spec)
    ip, ips = out.get("clusterIP") or "", _list(out.get("clusterIPs"))
    if old is None:
        if ip and not ips:
            out["clusterIPs"] = [ip]
        return out
    old_ip, old_ips = old.get("clusterIP") or "", _list(old.get("clusterIPs"))
    if old_ips and not ips and old_ip == ip:
        out["clusterIPs"] = ips = list(old_ips)
    if old_ip != ip and ips == old_ips:
        out["clusterIPs"] = [] if old_ip and not ip else [ip]
    return out


def port_name_problems(name: str) -> list[str]:
    """``IsValidPortName``."""
    problems = []
    if len(name) > 15:
        problems.append("must be no more than 15 characters")
    if not name or any(c not in _PORT_NAME_CHARS for c in name):
        problems.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not any("a" <= c <= "z" for c in name):
        problems.append("must contain at least one letter (a-z)")
    if "--" in name:
        problems.append("must not contain consecutive hyphens")
    if name and (name[0] == "-" or name[-1] == "-"):
        problems.append("must not begin or end with a hyphen")
    return problems


def _valid_port(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535


def _port(port: dict[str, Any], path: str, require_name: bool, names: set[str]) -> list[Cause]:
    """``validateServicePort``."""
    causes: list[Cause] = []
    name = port.get("name") or ""
    if require_name and not name:
        causes.append(field_required(f"{path}.name"))
    elif name:
        causes.extend(
            field_invalid(f"{path}.name", name, p) for p in _meta.name_problems(name, "label")
        )
        if name in names:
            causes.append(field_duplicate(f"{path}.name", name))
        else:
            names.add(name)
    number = port.get("port") or 0
    if not _valid_port(number):
        causes.append(field_invalid(f"{path}.port", number, _PORT_RANGE))
    protocol = port.get("protocol") or ""
    if not protocol:
        causes.append(field_required(f"{path}.protocol"))
    elif protocol not in _PROTOCOLS:
        causes.append(field_not_supported(f"{path}.protocol", protocol, _PROTOCOLS))
    target = port.get("targetPort")
    if isinstance(target, str):
        causes.extend(
            field_invalid(f"{path}.targetPort", target, p) for p in port_name_problems(target)
        )
    elif target is not None and not _valid_port(target):
        causes.append(field_invalid(f"{path}.targetPort", target, _PORT_RANGE))
    app_protocol = port.get("appProtocol")
    if app_protocol is not None:
        causes.extend(
            field_invalid(f"{path}.appProtocol", app_protocol, p)
            for p in is_qualified_name(str(app_protocol))
        )
    return causes


def _type_rules(spec: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    svc_type = spec.get("type") or ""
    if svc_type in ("LoadBalancer", "NodePort") and _headless(spec):
        causes.append(
            field_invalid(
                "spec.clusterIPs[0]", "None", f"may not be set to 'None' for {svc_type} services"
            )
        )
    elif svc_type == "ExternalName":
        for key in ("clusterIPs", "ipFamilies"):
            if _list(spec.get(key)):
                causes.append(
                    field_forbidden(f"spec.{key}", "may not be set for ExternalName services")
                )
        if spec.get("ipFamilyPolicy") is not None:
            causes.append(
                field_forbidden("spec.ipFamilyPolicy", "may not be set for ExternalName services")
            )
        cname = str(spec.get("externalName") or "").removesuffix(".")
        if cname:
            causes.extend(
                field_invalid("spec.externalName", cname, p)
                for p in _meta.name_problems(cname, "subdomain")
            )
        else:
            causes.append(field_required("spec.externalName"))
    return causes


def _affinity(spec: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    affinity = spec.get("sessionAffinity") or ""
    config = spec.get("sessionAffinityConfig")
    if not affinity:
        causes.append(field_required("spec.sessionAffinity"))
    elif affinity not in _AFFINITIES:
        causes.append(field_not_supported("spec.sessionAffinity", affinity, _AFFINITIES))
    path = "spec.sessionAffinityConfig"
    when = "when session affinity type is ClientIP"
    if affinity == "ClientIP":
        client = config.get("clientIP") if isinstance(config, dict) else None
        if not isinstance(config, dict):
            causes.append(field_required(path, when))
        elif not isinstance(client, dict):
            causes.append(field_required(f"{path}.clientIP", when))
        elif client.get("timeoutSeconds") is None:
            causes.append(field_required(f"{path}.clientIP.timeoutSeconds", when))
        else:
            timeout = client["timeoutSeconds"]
            if not isinstance(timeout, int) or not 0 < timeout <= _MAX_AFFINITY_SECONDS:
                causes.append(
                    field_invalid(
                        f"{path}.clientIP.timeoutSeconds",
                        timeout,
                        f"must be greater than 0 and less than {_MAX_AFFINITY_SECONDS}",
                    )
                )
    elif affinity == "None" and config is not None:
        causes.append(field_forbidden(path, "must not be set when session affinity is None"))
    return causes


def cluster_ips_related(spec: dict[str, Any]) -> list[Cause]:  # noqa: PLR0912 - ValidateService's cluster IP checks, one branch per rule
    """``ValidateServiceClusterIPsRelatedFields``."""
    if spec.get("type") == "ExternalName":
        return []
    causes: list[Cause] = []
    ip, ips = spec.get("clusterIP") or "", _list(spec.get("clusterIPs"))
    if ip:
        if not ips:
            causes.append(field_required("spec.clusterIPs"))
        elif ips[0] != ip:
            causes.append(
                field_invalid("spec.clusterIPs", ips, "first value must match `clusterIP`")
            )
    elif ips:
        causes.append(
            field_invalid("spec.clusterIPs", ips, "must be empty when `clusterIP` is not specified")
        )
    families = _list(spec.get("ipFamilies"))
    seen: set[str] = set()
    for i, family in enumerate(families):
        if family not in _FAMILIES:
            causes.append(field_not_supported(f"spec.ipFamilies[{i}]", family, _FAMILIES))
        if family in seen:
            causes.append(field_duplicate(f"spec.ipFamilies[{i}]", family))
        seen.add(family)
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in _FAMILY_POLICIES:
        causes.append(field_not_supported("spec.ipFamilyPolicy", policy, _FAMILY_POLICIES))
    invalid_ips = False
    for i, value in enumerate(ips):
        if i == 0 and value == "None":
            if len(ips) > 1:
                invalid_ips = True
                causes.append(
                    field_invalid("spec.clusterIPs", ips, "'None' must be the first and only value")
                )
            continue
        found = _net.is_valid_ip(f"spec.clusterIPs[{i}]", str(value))
        invalid_ips = invalid_ips or bool(found)
        causes.extend(found)
    if len(ips) > 2:
        causes.append(field_invalid("spec.clusterIPs", ips, "may only hold up to 2 values"))
    if invalid_ips:
        return causes
    if len(ips) > 1 and _net.is_ipv6(ips[0]) == _net.is_ipv6(ips[1]):
        causes.append(
            field_invalid(
                "spec.clusterIPs", ips, "may specify no more than one IP for each IP family"
            )
        )
    if not _headless(spec) and ips and families:
        for i, value in enumerate(ips[: len(families)]):
            if families[i] == "IPv4" and _net.is_ipv6(value):
                causes.append(
                    field_invalid(
                        f"spec.clusterIPs[{i}]",
                        value,
                        f"expected an IPv4 value as indicated by `ipFamilies[{i}]`",
                    )
                )
            if families[i] == "IPv6" and not _net.is_ipv6(value):
                causes.append(
                    field_invalid(
                        f"spec.clusterIPs[{i}]",
                        value,
                        f"expected an IPv6 value as indicated by `ipFamilies[{i}]`",
                    )
                )
    return causes


def _non_special_ip(path: str, value: str) -> list[Cause]:
    """``ValidateNonSpecialIP``."""
    ip = _net.parse_ip_sloppy(value)
    if ip is None:
        return [field_invalid(path, value, "must be a valid IP address")]
    causes = []
    if ip.is_unspecified:
        causes.append(field_invalid(path, value, f"may not be unspecified ({value})"))
    if ip.is_loopback:
        causes.append(
            field_invalid(path, value, "may not be in the loopback range (127.0.0.0/8, ::1/128)")
        )
    if ip.is_link_local:
        causes.append(
            field_invalid(
                path, value, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"
            )
        )
    if ip.is_multicast and (
        str(ip).startswith("224.0.0.") or (ip.version == 6 and str(ip).startswith("ff02:"))
    ):
        causes.append(
            field_invalid(
                path,
                value,
                "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
            )
        )
    return causes


def _node_port_causes(spec: dict[str, Any], ports: list[dict[str, Any]]) -> list[Cause]:
    causes: list[Cause] = []
    if spec.get("type") == "ClusterIP":
        for i, port in enumerate(ports):
            if port.get("nodePort"):
                causes.append(
                    field_forbidden(
                        f"spec.ports[{i}].nodePort", "may not be used when `type` is 'ClusterIP'"
                    )
                )
    seen_node: set[tuple[Any, Any]] = set()
    for i, port in enumerate(ports):
        node_port = port.get("nodePort")
        if not node_port:
            continue
        key = (port.get("protocol"), node_port)
        if key in seen_node:
            causes.append(field_duplicate(f"spec.ports[{i}].nodePort", node_port))
        seen_node.add(key)
    seen: set[tuple[Any, Any]] = set()
    for i, port in enumerate(ports):
        key = (port.get("protocol") or "", port.get("port") or 0)
        if key in seen:
            internal = GoStruct(
                Name="",
                Protocol=key[0],
                AppProtocol=None,
                Port=key[1],
                TargetPort=0,
                NodePort=0,
            )
            causes.append(field_duplicate(f"spec.ports[{i}]", internal))
        seen.add(key)
    return causes


def _source_ranges(obj: dict[str, Any], spec: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    is_lb = spec.get("type") == "LoadBalancer"
    ranges = _list(spec.get("loadBalancerSourceRanges"))
    annotations = ro_meta(obj).get("annotations") or {}
    if ranges:
        path = "spec.LoadBalancerSourceRanges"
        if not is_lb:
            causes.append(field_forbidden(path, _LB_ONLY))
        for i, value in enumerate(ranges):
            causes.extend(_net.is_valid_cidr(f"{path}[{i}]", str(value).strip()))
    elif isinstance(annotations, dict) and _SOURCE_RANGES_ANNOTATION in annotations:
        path = f"metadata.annotations[{_SOURCE_RANGES_ANNOTATION}]"
        if not is_lb:
            causes.append(field_forbidden(path, _LB_ONLY))
        text = str(annotations[_SOURCE_RANGES_ANNOTATION]).strip()
        if text:
            for value in text.split(","):
                causes.extend(_net.is_valid_cidr(path, value.strip()))
    return causes


def _load_balancer(spec: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    causes: list[Cause] = []
    is_lb = spec.get("type") == "LoadBalancer"
    allocate = spec.get("allocateLoadBalancerNodePorts")
    if allocate is not None and not is_lb:
        causes.append(field_forbidden("spec.allocateLoadBalancerNodePorts", _LB_ONLY))
    if is_lb and allocate is None:
        causes.append(field_required("allocateLoadBalancerNodePorts"))
    causes.extend(load_balancer_class(spec, old))
    return causes


def load_balancer_class(spec: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    """``validateLoadBalancerClassField``."""
    causes: list[Cause] = []
    is_lb = spec.get("type") == "LoadBalancer"
    lb_class = spec.get("loadBalancerClass")
    if (
        old is not None
        and old.get("type") == "LoadBalancer"
        and is_lb
        and old.get("loadBalancerClass") != lb_class
    ):
        causes.append(field_invalid("spec.loadBalancerClass", lb_class, "may not change once set"))
    if is_lb and lb_class is not None:
        causes.extend(
            field_invalid("spec.loadBalancerClass", lb_class, p)
            for p in is_qualified_name(str(lb_class))
        )
    elif not is_lb and lb_class is not None:
        causes.append(field_forbidden("spec.loadBalancerClass", _LB_ONLY))
    return causes


def _externally_accessible(spec: dict[str, Any]) -> bool:
    svc_type = spec.get("type")
    return svc_type in ("LoadBalancer", "NodePort") or (
        svc_type == "ClusterIP" and bool(_list(spec.get("externalIPs")))
    )


def _needs_health_check(spec: dict[str, Any]) -> bool:
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def _traffic_policies(spec: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    policy = spec.get("externalTrafficPolicy") or ""
    if not _externally_accessible(spec):
        if policy:
            causes.append(
                field_invalid(
                    "spec.externalTrafficPolicy",
                    policy,
                    "may only be set for externally-accessible services",
                )
            )
    elif not policy:
        causes.append(field_required("spec.externalTrafficPolicy"))
    elif policy not in _POLICIES:
        causes.append(field_not_supported("spec.externalTrafficPolicy", policy, _POLICIES))
    health = spec.get("healthCheckNodePort") or 0
    if not _needs_health_check(spec):
        if health:
            causes.append(
                field_invalid(
                    "spec.healthCheckNodePort",
                    health,
                    "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` "
                    "is 'Local'",
                )
            )
    elif health and not _valid_port(health):
        # A missing port is allocated by the server (kube-apiserver allocates before validating).
        causes.append(field_invalid("spec.healthCheckNodePort", health, _PORT_RANGE))
    internal = spec.get("internalTrafficPolicy")
    if internal is None and spec.get("type") in ("NodePort", "LoadBalancer", "ClusterIP"):
        causes.append(field_required("spec.internalTrafficPolicy"))
    if internal is not None and internal not in _POLICIES:
        causes.append(field_not_supported("spec.internalTrafficPolicy", internal, _POLICIES))
    return causes


def validate_service(obj: dict[str, Any], old_spec: dict[str, Any] | None = None) -> list[Cause]:
    """``ValidateService`` (cluster IPs normalized as the strategy does first)."""
    causes = _meta.object_meta(obj, "label1035", namespaced=True, kube=True)
    annotations = ro_meta(obj).get("annotations") or {}
    if isinstance(annotations, dict):
        hints, mode = annotations.get(_TOPOLOGY_HINTS), annotations.get(_TOPOLOGY_MODE)
        if hints is not None and mode is not None and hints != mode:
            causes.append(
                field_invalid(
                    f"metadata.annotations[{_TOPOLOGY_MODE}]",
                    mode,
                    f"must match annotations[{_TOPOLOGY_HINTS}] when both are specified",
                )
            )
    spec = normalize_cluster_ips(_spec(obj), old_spec)
    ports = [p for p in _list(spec.get("ports")) if isinstance(p, dict)]
    if not ports and not _headless(spec) and spec.get("type") != "ExternalName":
        causes.append(field_required("spec.ports"))
    causes.extend(_type_rules(spec))
    names: set[str] = set()
    for i, port in enumerate(ports):
        causes.extend(_port(port, f"spec.ports[{i}]", len(ports) > 1, names))
    if spec.get("selector") is not None:
        causes.extend(_meta.validate_labels(spec.get("selector"), "spec.selector"))
    causes.extend(_affinity(spec))
    causes.extend(cluster_ips_related(spec))
    for i, value in enumerate(_list(spec.get("externalIPs"))):
        found = _net.is_valid_ip(f"spec.externalIPs[{i}]", str(value))
        causes.extend(found or _non_special_ip(f"spec.externalIPs[{i}]", str(value)))
    svc_type = spec.get("type") or ""
    if not svc_type:
        causes.append(field_required("spec.type"))
    elif svc_type not in SUPPORTED_TYPES:
        causes.append(field_not_supported("spec.type", svc_type, SUPPORTED_TYPES))
    causes.extend(_node_port_causes(spec, ports))
    causes.extend(_source_ranges(obj, spec))
    causes.extend(_load_balancer(spec, None))
    causes.extend(_traffic_policies(spec))
    return causes


def _upgrade_downgrade(spec: dict[str, Any], old: dict[str, Any]) -> list[Cause]:  # noqa: PLR0912 - the IP family upgrade and downgrade rules of ValidateServiceUpdate
    """``validateUpgradeDowngradeClusterIPs`` and ``validateUpgradeDowngradeIPFamilies``."""
    causes: list[Cause] = []
    if "ExternalName" in (spec.get("type"), old.get("type")):
        return causes
    ips, old_ips = _list(spec.get("clusterIPs")), _list(old.get("clusterIPs"))
    policy = spec.get("ipFamilyPolicy")
    if not (_headless(spec) and _headless(old)):
        if len(ips) == len(old_ips):
            for i, value in enumerate(old_ips):
                if value != ips[i]:
                    causes.append(
                        field_invalid(f"spec.clusterIPs[{i}]", ips, "may not change once set")
                    )
        elif len(old_ips) > len(ips):
            if not ips:
                causes.append(
                    field_invalid("spec.clusterIPs[0]", ips, "primary clusterIP can not be unset")
                )
            elif old_ips[0] != ips[0]:
                causes.append(field_invalid("spec.clusterIPs[0]", ips, "may not change once set"))
            if len(ips) == 1 and policy != "SingleStack":
                causes.append(
                    field_invalid(
                        "spec.ipFamilyPolicy",
                        policy,
                        "must be set to 'SingleStack' when releasing the secondary clusterIP",
                    )
                )
        elif old_ips and ips[0] != old_ips[0]:
            causes.append(field_invalid("spec.clusterIPs[0]", ips, "may not change once set"))
    families, old_families = _list(spec.get("ipFamilies")), _list(old.get("ipFamilies"))
    if _headless(spec) != _headless(old) or _headless(spec):
        return causes
    if len(families) == len(old_families):
        for i, family in enumerate(old_families):
            if family != families[i]:
                causes.append(
                    field_invalid("spec.ipFamilies[0]", families, "may not change once set")
                )
    elif len(old_families) > len(families):
        if not ips:
            causes.append(
                field_invalid("spec.ipFamilies[0]", families, "primary ipFamily can not be unset")
            )
        if families and families[0] != old_families[0]:
            causes.append(field_invalid("spec.ipFamilies[0]", ips, "may not change once set"))
        if len(families) == 1 and policy != "SingleStack":
            causes.append(
                field_invalid(
                    "spec.ipFamilyPolicy",
                    policy,
                    "must be set to 'SingleStack' when releasing the secondary ipFamily",
                )
            )
    elif old_families and families and families[0] != old_families[0]:
        causes.append(field_invalid("spec.ipFamilies[0]", ips, "may not change once set"))
    return causes


def validate_service_update(obj: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """``ValidateServiceUpdate``."""
    causes = _meta.meta_update(obj, old, kube=True)
    old_spec = _spec(old)
    spec = normalize_cluster_ips(_spec(obj), old_spec)
    causes.extend(_upgrade_downgrade(spec, old_spec))
    causes.extend(load_balancer_class(spec, old_spec))
    if (
        _needs_health_check(old_spec)
        and _needs_health_check(spec)
        and spec.get("healthCheckNodePort") != old_spec.get("healthCheckNodePort")
    ):
        causes.append(field_forbidden("spec.healthCheckNodePort", "field is immutable"))
    causes.extend(validate_service(obj, old_spec))
    return causes


def load_balancer_status(obj: dict[str, Any]) -> list[Cause]:
    """``ValidateLoadBalancerStatus`` of ``status.loadBalancer``."""
    status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
    assert isinstance(status, dict)
    lb = status.get("loadBalancer") if isinstance(status.get("loadBalancer"), dict) else {}
    assert isinstance(lb, dict)
    ingress = [i for i in _list(lb.get("ingress")) if isinstance(i, dict)]
    path = "status.loadBalancer.ingress"
    if _spec(obj).get("type") != "LoadBalancer" and ingress:
        return [field_forbidden(path, "may only be used when `spec.type` is 'LoadBalancer'")]
    causes: list[Cause] = []
    for i, item in enumerate(ingress):
        ip, mode, host = item.get("ip") or "", item.get("ipMode"), item.get("hostname") or ""
        if ip:
            causes.extend(_net.is_valid_ip(f"{path}[{i}].ip", ip))
        if mode is None:
            if ip:
                causes.append(
                    field_required(f"{path}[{i}].ipMode", "must be specified when `ip` is set")
                )
        elif not ip:
            causes.append(
                field_forbidden(f"{path}[{i}].ipMode", "may not be specified when `ip` is not set")
            )
        elif mode not in _IP_MODES:
            causes.append(field_not_supported(f"{path}[{i}].ipMode", mode, _IP_MODES))
        if host:
            causes.extend(
                field_invalid(f"{path}[{i}].hostname", host, p)
                for p in _meta.name_problems(host, "subdomain")
            )
            if _net.parse_ip_sloppy(host) is not None:
                causes.append(
                    field_invalid(
                        f"{path}[{i}].hostname", host, "must be a DNS name, not an IP address"
                    )
                )
    return causes


def validate_service_status_update(obj: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """``ValidateServiceStatusUpdate``."""
    return _meta.meta_update(obj, old, kube=True) + load_balancer_status(obj)


def _allocator_prevalidation(obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    """The allocator's "loose pre-validation" (``initIPFamilyFields``), run before the rest.

    kube-apiserver allocates cluster IPs before it validates a Service (``BeginCreate`` and
    ``BeginUpdate`` precede the strategy); the allocator first checks the cluster IP fields
    and, when they are wrong, answers with those causes alone.
    """
    spec = normalize_cluster_ips(_spec(obj), None if old is None else _spec(old))
    if spec.get("type") == "ExternalName":
        return []
    return cluster_ips_related(spec)


def validate_service_create(obj: dict[str, Any]) -> list[Cause]:
    """The allocator's pre-validation, then ``ValidateService``."""
    return _allocator_prevalidation(obj, None) or validate_service(obj)


def validate_service_update_allocating(obj: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """The allocator's pre-validation, then ``ValidateServiceUpdate``."""
    return _allocator_prevalidation(obj, old) or validate_service_update(obj, old)
