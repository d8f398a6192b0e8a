"""Server-side ``Table`` rendering, what ``kubectl get`` prints.

When a request's Accept header asks for ``application/json;as=Table;v=v1;g=meta.k8s.io``,
kube-apiserver answers a ``meta.k8s.io/v1`` ``Table``: column definitions and one row of cells
per object, each row carrying the object as ``PartialObjectMetadata`` (``includeObject=Metadata``,
the default), in full (``Object``) or not at all (``None``). Built-in types get the columns
kubectl shows (NAME, READY, STATUS, AGE...); custom resources get their CRD's
``additionalPrinterColumns`` evaluated with JSONPath, or NAME and AGE when it declares none;
anything else gets NAME and CREATED AT, kube-apiserver's default table convertor.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pyctrl._apimachinery.meta import ro_meta
from pyctrl._apiserver.apimachinery import jsonpath as _jsonpath
from pyctrl._apiserver.scheme.resources import (
    CREATED_AT_COLUMN,
    NAME_COLUMN,
    PrinterColumn,
    ResourceType,
)

Cells = list[Any]
Printer = tuple[tuple[tuple[str, str, int], ...], Callable[[dict[str, Any], datetime], Cells]]


def human_duration(seconds: float) -> str:  # noqa: PLR0911 - duration.HumanDuration, one return per magnitude
    """Kubernetes' ``duration.HumanDuration``: ``5s``, ``3m20s``, ``4h``, ``2d3h``, ``1y``."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rem = s % 60
        return f"{minutes}m" if rem == 0 else f"{minutes}m{rem}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rem = minutes % 60
        return f"{hours}h" if rem == 0 else f"{hours}h{rem}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rem = hours % 24
        return f"{hours // 24}d" if rem == 0 else f"{hours // 24}d{rem}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        rem = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y" if rem == 0 else f"{years}y{rem}d"
    return f"{hours // 24 // 365}y"


def parse_time(value: str | None) -> datetime | None:
    """Parse an RFC 3339 timestamp as the API uses them."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _age(ts: str | None, now: datetime) -> str:
    when = parse_time(ts)
    if when is None:
        return "<unknown>"
    return human_duration((now - when).total_seconds())


def _get(obj: Any, *path: str, default: Any = None) -> Any:
    cur = obj
    for part in path:
        if not isinstance(cur, dict):
            return default
        cur = cur.get(part)
        if cur is None:
            return default
    return cur


def _selector_text(sel: dict[str, Any] | None) -> str:
    from pyctrl._apiserver.apimachinery.fields import SelectorError, selector_from_object

    if not sel:
        return "<none>"
    try:
        parsed = selector_from_object(sel)
    except SelectorError:
        return "<error>"
    text = str(parsed) if parsed is not None else ""
    return text or "<none>"


def _map_selector(sel: dict[str, str] | None) -> str:
    if not sel:
        return "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(sel.items()))


def _containers(template_spec: dict[str, Any] | None) -> tuple[str, str]:
    containers = (template_spec or {}).get("containers") or []
    names = ",".join(str(c.get("name", "")) for c in containers)
    images = ",".join(str(c.get("image", "")) for c in containers)
    return names, images


def _pod_template_spec(obj: dict[str, Any]) -> dict[str, Any]:
    return _get(obj, "spec", "template", "spec", default={}) or {}


def _namespace(obj: dict[str, Any], now: datetime) -> Cells:
    return [
        ro_meta(obj).get("name", ""),
        _get(obj, "status", "phase", default=""),
        _age(ro_meta(obj).get("creationTimestamp"), now),
    ]


def _configmap(obj: dict[str, Any], now: datetime) -> Cells:
    count = len(obj.get("data") or {}) + len(obj.get("binaryData") or {})
    return [ro_meta(obj).get("name", ""), count, _age(ro_meta(obj).get("creationTimestamp"), now)]


def _secret(obj: dict[str, Any], now: datetime) -> Cells:
    return [
        ro_meta(obj).get("name", ""),
        obj.get("type", ""),
        len(obj.get("data") or {}),
        _age(ro_meta(obj).get("creationTimestamp"), now),
    ]


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
        ingress = _get(obj, "status", "loadBalancer", "ingress", default=[]) or []
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
        _age(ro_meta(obj).get("creationTimestamp"), now),
        _map_selector(spec.get("selector")),
    ]


def _serviceaccount(obj: dict[str, Any], now: datetime) -> Cells:
    return [
        ro_meta(obj).get("name", ""),
        len(obj.get("secrets") or []),
        _age(ro_meta(obj).get("creationTimestamp"), now),
    ]


def _pod(obj: dict[str, Any], now: datetime) -> Cells:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    statuses = status.get("containerStatuses") or []
    total = len(spec.get("containers") or [])
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    reason = status.get("reason") or status.get("phase") or ""
    for c in statuses:
        waiting = _get(c, "state", "waiting", "reason")
        terminated = _get(c, "state", "terminated", "reason")
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
        _age(ro_meta(obj).get("creationTimestamp"), now),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        f"0/{len(gates)}" if gates else "<none>",
    ]


def _event(obj: dict[str, Any], now: datetime) -> Cells:
    involved = obj.get("involvedObject") or obj.get("regarding") or {}
    last = obj.get("lastTimestamp") or obj.get("eventTime") or ro_meta(obj).get("creationTimestamp")
    first = obj.get("firstTimestamp") or obj.get("eventTime") or last
    source = obj.get("source") or {}
    source_text = source.get("component") or obj.get("reportingComponent") or ""
    if source.get("host"):
        source_text = f"{source_text}, {source['host']}"
    return [
        _age(last, now),
        obj.get("type", ""),
        obj.get("reason", ""),
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        involved.get("fieldPath", ""),
        source_text,
        (obj.get("message") or obj.get("note") or "").strip(),
        _age(first, now),
        int(obj.get("count") or 1),
        ro_meta(obj).get("name", ""),
    ]


def _endpoints(obj: dict[str, Any], now: datetime) -> Cells:
    parts: list[str] = []
    for subset in obj.get("subsets") or []:
        ports = [p.get("port") for p in subset.get("ports") or []] or [None]
        for addr in subset.get("addresses") or []:
            for port in ports:
                ip = addr.get("ip", "")
                parts.append(f"{ip}:{port}" if port is not None else str(ip))
    return [
        ro_meta(obj).get("name", ""),
        ",".join(parts) if parts else "<none>",
        _age(ro_meta(obj).get("creationTimestamp"), now),
    ]


def _deployment(obj: dict[str, Any], now: datetime) -> Cells:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    names, images = _containers(_pod_template_spec(obj))
    return [
        ro_meta(obj).get("name", ""),
        f"{int(status.get('readyReplicas') or 0)}/{int(spec.get('replicas') or 0)}",
        int(status.get("updatedReplicas") or 0),
        int(status.get("availableReplicas") or 0),
        _age(ro_meta(obj).get("creationTimestamp"), now),
        names,
        images,
        _selector_text(spec.get("selector")),
    ]


def _replicaset(obj: dict[str, Any], now: datetime) -> Cells:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    names, images = _containers(_pod_template_spec(obj))
    return [
        ro_meta(obj).get("name", ""),
        int(spec.get("replicas") or 0),
        int(status.get("replicas") or 0),
        int(status.get("readyReplicas") or 0),
        _age(ro_meta(obj).get("creationTimestamp"), now),
        names,
        images,
        _selector_text(spec.get("selector")),
    ]


def _statefulset(obj: dict[str, Any], now: datetime) -> Cells:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    names, images = _containers(_pod_template_spec(obj))
    return [
        ro_meta(obj).get("name", ""),
        f"{int(status.get('readyReplicas') or 0)}/{int(spec.get('replicas') or 0)}",
        _age(ro_meta(obj).get("creationTimestamp"), now),
        names,
        images,
    ]


def _daemonset(obj: dict[str, Any], now: datetime) -> Cells:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    names, images = _containers(_pod_template_spec(obj))
    node_selector = _get(obj, "spec", "template", "spec", "nodeSelector")
    return [
        ro_meta(obj).get("name", ""),
        int(status.get("desiredNumberScheduled") or 0),
        int(status.get("currentNumberScheduled") or 0),
        int(status.get("numberReady") or 0),
        int(status.get("updatedNumberScheduled") or 0),
        int(status.get("numberAvailable") or 0),
        _map_selector(node_selector),
        _age(ro_meta(obj).get("creationTimestamp"), now),
        names,
        images,
        _selector_text(spec.get("selector")),
    ]


def _job_status(obj: dict[str, Any]) -> str:
    conditions = _get(obj, "status", "conditions", default=[]) or []
    for cond_type, text in (
        ("Failed", "Failed"),
        ("Complete", "Complete"),
        ("Suspended", "Suspended"),
        ("FailureTarget", "FailureTarget"),
        ("SuccessCriteriaMet", "SuccessCriteriaMet"),
    ):
        for cond in conditions:
            if cond.get("type") == cond_type and cond.get("status") == "True":
                return text
    if ro_meta(obj).get("deletionTimestamp"):
        return "Terminating"
    return "Running"


def _job(obj: dict[str, Any], now: datetime) -> Cells:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    names, images = _containers(_pod_template_spec(obj))
    completions = spec.get("completions")
    succeeded = int(status.get("succeeded") or 0)
    if completions is not None:
        done = f"{succeeded}/{completions}"
    else:
        parallelism = int(spec.get("parallelism") or 0)
        done = f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"
    start = parse_time(status.get("startTime"))
    end = parse_time(status.get("completionTime"))
    duration = "" if start is None else human_duration(((end or now) - start).total_seconds())
    return [
        ro_meta(obj).get("name", ""),
        _job_status(obj),
        done,
        duration,
        _age(ro_meta(obj).get("creationTimestamp"), now),
        names,
        images,
        _selector_text(spec.get("selector")),
    ]


def _cronjob(obj: dict[str, Any], now: datetime) -> Cells:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    tmpl = _get(obj, "spec", "jobTemplate", "spec", "template", "spec", default={}) or {}
    names, images = _containers(tmpl)
    last = status.get("lastScheduleTime")
    return [
        ro_meta(obj).get("name", ""),
        spec.get("schedule", ""),
        spec.get("timeZone") or "<none>",
        "True" if spec.get("suspend") else "False",
        len(status.get("active") or []),
        _age(last, now) if last else "<none>",
        _age(ro_meta(obj).get("creationTimestamp"), now),
        names,
        images,
        _selector_text(_get(obj, "spec", "jobTemplate", "spec", "selector")),
    ]


def _lease(obj: dict[str, Any], now: datetime) -> Cells:
    return [
        ro_meta(obj).get("name", ""),
        _get(obj, "spec", "holderIdentity", default="") or "",
        _age(ro_meta(obj).get("creationTimestamp"), now),
    ]


def _webhooks(obj: dict[str, Any], now: datetime) -> Cells:
    return [
        ro_meta(obj).get("name", ""),
        len(obj.get("webhooks") or []),
        _age(ro_meta(obj).get("creationTimestamp"), now),
    ]


def _role(obj: dict[str, Any], now: datetime) -> Cells:
    return [ro_meta(obj).get("name", ""), ro_meta(obj).get("creationTimestamp")]


def _subjects(obj: dict[str, Any], kind: str) -> str:
    out: list[str] = []
    for s in obj.get("subjects") or []:
        if s.get("kind") == kind:
            if kind == "ServiceAccount":
                out.append(f"{s.get('namespace', '')}/{s.get('name', '')}")
            else:
                out.append(str(s.get("name", "")))
    return ", ".join(out)


def _binding(obj: dict[str, Any], now: datetime) -> Cells:
    ref = obj.get("roleRef") or {}
    return [
        ro_meta(obj).get("name", ""),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        _age(ro_meta(obj).get("creationTimestamp"), now),
        _subjects(obj, "User"),
        _subjects(obj, "Group"),
        _subjects(obj, "ServiceAccount"),
    ]


def _default(obj: dict[str, Any], now: datetime) -> Cells:
    return [ro_meta(obj).get("name", ""), ro_meta(obj).get("creationTimestamp")]


_S, _I = "string", "integer"
_NAME = ("Name", _S, 0)
_AGE = ("Age", _S, 0)
_CONTAINERS = (("Containers", _S, 1), ("Images", _S, 1))

BUILTIN_PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "namespaces"): ((_NAME, ("Status", _S, 0), _AGE), _namespace),
    ("", "configmaps"): ((_NAME, ("Data", _I, 0), _AGE), _configmap),
    ("", "secrets"): ((_NAME, ("Type", _S, 0), ("Data", _I, 0), _AGE), _secret),
    ("", "services"): (
        (
            _NAME,
            ("Type", _S, 0),
            ("Cluster-IP", _S, 0),
            ("External-IP", _S, 0),
            ("Port(s)", _S, 0),
            _AGE,
            ("Selector", _S, 1),
        ),
        _service,
    ),
    ("", "serviceaccounts"): ((_NAME, ("Secrets", _I, 0), _AGE), _serviceaccount),
    ("", "pods"): (
        (
            _NAME,
            ("Ready", _S, 0),
            ("Status", _S, 0),
            ("Restarts", _S, 0),
            _AGE,
            ("IP", _S, 1),
            ("Node", _S, 1),
            ("Nominated Node", _S, 1),
            ("Readiness Gates", _S, 1),
        ),
        _pod,
    ),
    ("", "events"): (
        (
            ("Last Seen", _S, 0),
            ("Type", _S, 0),
            ("Reason", _S, 0),
            ("Object", _S, 0),
            ("Subobject", _S, 1),
            ("Source", _S, 1),
            ("Message", _S, 0),
            ("First Seen", _S, 1),
            ("Count", _I, 1),
            ("Name", _S, 1),
        ),
        _event,
    ),
    ("", "endpoints"): ((_NAME, ("Endpoints", _S, 0), _AGE), _endpoints),
    ("apps", "deployments"): (
        (
            _NAME,
            ("Ready", _S, 0),
            ("Up-to-date", _I, 0),
            ("Available", _I, 0),
            _AGE,
            *_CONTAINERS,
            ("Selector", _S, 1),
        ),
        _deployment,
    ),
    ("apps", "replicasets"): (
        (
            _NAME,
            ("Desired", _I, 0),
            ("Current", _I, 0),
            ("Ready", _I, 0),
            _AGE,
            *_CONTAINERS,
            ("Selector", _S, 1),
        ),
        _replicaset,
    ),
    ("apps", "statefulsets"): ((_NAME, ("Ready", _S, 0), _AGE, *_CONTAINERS), _statefulset),
    ("apps", "daemonsets"): (
        (
            _NAME,
            ("Desired", _I, 0),
            ("Current", _I, 0),
            ("Ready", _I, 0),
            ("Up-to-date", _I, 0),
            ("Available", _I, 0),
            ("Node Selector", _S, 0),
            _AGE,
            *_CONTAINERS,
            ("Selector", _S, 1),
        ),
        _daemonset,
    ),
    ("batch", "jobs"): (
        (
            _NAME,
            ("Status", _S, 0),
            ("Completions", _S, 0),
            ("Duration", _S, 0),
            _AGE,
            *_CONTAINERS,
            ("Selector", _S, 1),
        ),
        _job,
    ),
    ("batch", "cronjobs"): (
        (
            _NAME,
            ("Schedule", _S, 0),
            ("Timezone", _S, 0),
            ("Suspend", "boolean", 0),
            ("Active", _I, 0),
            ("Last Schedule", _S, 0),
            _AGE,
            *_CONTAINERS,
            ("Selector", _S, 1),
        ),
        _cronjob,
    ),
    ("coordination.k8s.io", "leases"): ((_NAME, ("Holder", _S, 0), _AGE), _lease),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): (
        (_NAME, ("Webhooks", _I, 0), _AGE),
        _webhooks,
    ),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): (
        (_NAME, ("Webhooks", _I, 0), _AGE),
        _webhooks,
    ),
    ("rbac.authorization.k8s.io", "roles"): ((_NAME, ("Created At", _S, 0)), _role),
    ("rbac.authorization.k8s.io", "clusterroles"): ((_NAME, ("Created At", _S, 0)), _role),
    ("rbac.authorization.k8s.io", "rolebindings"): (
        (
            _NAME,
            ("Role", _S, 0),
            _AGE,
            ("Users", _S, 1),
            ("Groups", _S, 1),
            ("ServiceAccounts", _S, 1),
        ),
        _binding,
    ),
    ("rbac.authorization.k8s.io", "clusterrolebindings"): (
        (
            _NAME,
            ("Role", _S, 0),
            _AGE,
            ("Users", _S, 1),
            ("Groups", _S, 1),
            ("ServiceAccounts", _S, 1),
        ),
        _binding,
    ),
}
BUILTIN_PRINTERS[("events.k8s.io", "events")] = BUILTIN_PRINTERS[("", "events")]

_DESCRIPTIONS = {"Name": NAME_COLUMN.description, "Age": CREATED_AT_COLUMN.description}


def _column_dict(col: PrinterColumn) -> dict[str, Any]:
    return {
        "name": col.name,
        "type": col.type,
        "format": col.format,
        "description": col.description,
        "priority": col.priority,
    }


_RFC3339 = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})")


def _rfc3339(text: str) -> datetime | None:
    """Go's ``time.Parse(time.RFC3339, text)``: None if it does not parse."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        return None
    base, fraction, zone = match.groups()
    micros = (fraction or "").ljust(6, "0")[:6]
    try:
        return datetime.fromisoformat(f"{base}.{micros}{'+00:00' if zone == 'Z' else zone}")
    except ValueError:
        return None


def date_cell(value: str, now: datetime) -> str:
    """A ``type: date`` printer column's cell, as kube-apiserver's table convertor makes it.

    The timestamp shows as its age (``duration.HumanDuration``: ``5s``, ``3m2s``, ``4d``):
    ``<unknown>`` for an empty (or ``null``) timestamp, ``<invalid>`` for one that is not
    RFC 3339 (or lies more than a second in the future).
    """
    if not value or value == "null":
        return "<unknown>"
    when = _rfc3339(value)
    if when is None:
        return "<invalid>"
    return human_duration((now - when).total_seconds())


def _custom_cell(col: PrinterColumn, obj: dict[str, Any], now: datetime) -> Any:  # noqa: PLR0911 - one return per printer column type, as the CRD table convertor
    try:
        results = _jsonpath.find(obj, col.json_path)
    except _jsonpath.JSONPathError:
        return None
    if not results:
        return None
    value = results[0]
    if col.type == "string":
        return _jsonpath.to_text(value)
    if col.type == "integer":
        return (
            int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
        )
    if col.type == "number":
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if col.type == "boolean":
        return value if isinstance(value, bool) else None
    if col.type == "date":
        return date_cell(value, now) if isinstance(value, str) else None
    return value


def columns_for(rt: ResourceType) -> list[dict[str, Any]]:
    """The column definitions of ``rt``'s table."""
    if rt.printer_columns:
        return [_column_dict(NAME_COLUMN), *(_column_dict(c) for c in rt.printer_columns)]
    printer = BUILTIN_PRINTERS.get((rt.group, rt.plural))
    if printer is None:
        return [_column_dict(NAME_COLUMN), _column_dict(CREATED_AT_COLUMN)]
    out = []
    for name, type_, priority in printer[0]:
        out.append(
            {
                "name": name,
                "type": type_,
                "format": "name" if name == "Name" and priority == 0 else "",
                "description": _DESCRIPTIONS.get(name, f"{name} of the {rt.kind}"),
                "priority": priority,
            }
        )
    return out


def cells_for(rt: ResourceType, obj: dict[str, Any], now: datetime | None = None) -> Cells:
    """The cells of ``obj``'s row."""
    moment = now or datetime.now(UTC)
    if rt.printer_columns:
        name = ro_meta(obj).get("name", "")
        return [name, *(_custom_cell(c, obj, moment) for c in rt.printer_columns)]
    printer = BUILTIN_PRINTERS.get((rt.group, rt.plural))
    if printer is None:
        return _default(obj, moment)
    return printer[1](obj, moment)


def partial_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as a ``meta.k8s.io/v1`` ``PartialObjectMetadata``."""
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata") or {},
    }


def row_for(rt: ResourceType, obj: dict[str, Any], include: str, now: datetime) -> dict[str, Any]:
    """One table row, with the object as ``include`` asks (Object, Metadata or None)."""
    row: dict[str, Any] = {"cells": cells_for(rt, obj, now)}
    if include == "Object":
        row["object"] = obj
    elif include != "None":
        row["object"] = partial_metadata(obj)
    return row


def to_table(
    rt: ResourceType,
    objs: list[dict[str, Any]],
    *,
    include: str,
    list_meta: dict[str, Any],
    headers: bool = True,
    api_version: str = "meta.k8s.io/v1",
) -> dict[str, Any]:
    """A ``Table`` of ``objs``."""
    now = datetime.now(UTC)
    return {
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": list_meta,
        "columnDefinitions": columns_for(rt) if headers else [],
        "rows": [row_for(rt, obj, include, now) for obj in objs],
    }
