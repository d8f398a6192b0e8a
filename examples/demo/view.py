"""What the demo shows: a snapshot of the cluster, rendered as tables with rich.

`take_snapshot` reads, straight from the API server, what a person would look at with
kubectl: the MySrvs with their conditions, the Deployments and Services the operator made,
the recent Events, and the records of the (simulated) external DNS zone. `render` turns a
snapshot and the scenario's progress into one screen; the interactive demo redraws it a
few times a second in a ``rich.live.Live`` display, the ``--check`` run prints it once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from kubernetes_asyncio.client import V1Deployment, V1Service
from rich import box
from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from examples.mysrv.api import AVAILABLE, DNS_REGISTERED, MySrv
from pyctrl.meta import GroupVersionKind, find_status_condition
from pyctrl.resource import Unstructured, accessor

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rich.console import RenderableType

    from examples.mysrv.dns import DNSZone
    from pyctrl.client import Client

__all__ = ["Snapshot", "Step", "render", "take_snapshot"]

EVENTS = GroupVersionKind("events.k8s.io", "v1", "Event")
_RECENT_EVENTS = 6


@dataclass
class Step:
    """One step of the scenario, as the view lists it."""

    title: str
    state: Literal["pending", "running", "done", "failed"] = "pending"
    detail: str = ""


@dataclass
class Snapshot:
    """The objects of one namespace, and the external DNS records, at one moment."""

    mysrvs: list[MySrv] = field(default_factory=list)
    deployments: list[V1Deployment] = field(default_factory=list)
    services: list[V1Service] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    dns: dict[str, str] = field(default_factory=dict)
    taken_at: datetime = field(default_factory=lambda: datetime.now(UTC))


async def take_snapshot(client: Client, zone: DNSZone, namespace: str) -> Snapshot:
    """Read the MySrvs, Deployments, Services and Events of ``namespace``, and the DNS zone."""
    mysrvs = await client.list(MySrv, namespace=namespace)
    deployments = await client.list(V1Deployment, namespace=namespace)
    services = await client.list(V1Service, namespace=namespace)
    events = await client.list(Unstructured, namespace=namespace, gvk=EVENTS)
    recent = sorted((e.object for e in events.items), key=_event_time)[-_RECENT_EVENTS:]
    return Snapshot(
        mysrvs=list(mysrvs),
        deployments=list(deployments),
        # The API server's own Service is not the operator's doing.
        services=[s for s in services if s.metadata.name != "kubernetes"],
        events=recent,
        dns=await zone.records(),
    )


def _event_time(event: dict[str, Any]) -> str:
    series = event.get("series") or {}
    return str(
        series.get("lastObservedTime")
        or event.get("eventTime")
        or event.get("metadata", {}).get("creationTimestamp")
        or ""
    )


def _age(timestamp: Any, now: datetime) -> str:
    if not timestamp:
        return ""
    moment = (
        timestamp
        if isinstance(timestamp, datetime)
        else datetime.fromisoformat(str(timestamp).replace("Z", "+00:00"))
    )
    seconds = max(0, int((now - moment).total_seconds()))
    if seconds < 120:
        return f"{seconds}s"
    return f"{seconds // 60}m"


def _owner(obj: Any) -> str:
    for ref in accessor(obj).owner_references:
        if ref.controller:
            return f"{ref.kind}/{ref.name}"
    return "-"


def _condition_cell(mysrv: MySrv, type_: str) -> Text:
    condition = find_status_condition(mysrv.status.conditions, type_)
    if condition is None:
        return Text("-", style="dim")
    if condition.status == "True":
        return Text("True", style="green")
    style = "red" if condition.status == "False" else "yellow"
    return Text(f"{condition.status}: {condition.reason}", style=style)


def _table(title: str) -> Table:
    return Table(
        title=title,
        title_justify="left",
        title_style="bold",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        expand=True,
    )


def _mysrv_table(snapshot: Snapshot) -> Table:
    table = _table("MySrv (myapp.example.com/v1alpha1)")
    for column in ("NAME", "APP", "PORT", "AVAILABLE", "DNS", "REPLICAS", "URL"):
        table.add_column(column, overflow="fold")
    for mysrv in snapshot.mysrvs:
        port = str(mysrv.spec.port) if mysrv.spec.port is not None else "(80)"
        table.add_row(
            mysrv.metadata.name,
            mysrv.spec.name or "",
            port,
            _condition_cell(mysrv, AVAILABLE),
            _condition_cell(mysrv, DNS_REGISTERED),
            str(mysrv.status.available_replicas or 0),
            mysrv.status.url or "",
        )
        if mysrv.metadata.deletion_timestamp is not None:
            table.add_row(Text("  deleting: waiting for finalizers", style="yellow"))
    return table


def _deployment_table(snapshot: Snapshot) -> Table:
    table = _table("Deployments (apps/v1)")
    for column in ("NAME", "READY", "CONTAINER PORT", "OWNER", "AGE"):
        table.add_column(column)
    for deployment in snapshot.deployments:
        status = deployment.status
        available = (status.available_replicas or 0) if status else 0
        ports = [
            str(port.container_port)
            for container in deployment.spec.template.spec.containers
            for port in container.ports or ()
        ]
        table.add_row(
            deployment.metadata.name,
            f"{available}/{deployment.spec.replicas}",
            ",".join(ports),
            _owner(deployment),
            _age(deployment.metadata.creation_timestamp, snapshot.taken_at),
        )
    return table


def _service_table(snapshot: Snapshot) -> Table:
    table = _table("Services (v1)")
    for column in ("NAME", "CLUSTER-IP", "PORTS", "OWNER", "AGE"):
        table.add_column(column)
    for service in snapshot.services:
        ports = [f"{p.port}/{p.protocol or 'TCP'}" for p in service.spec.ports or ()]
        table.add_row(
            service.metadata.name,
            service.spec.cluster_ip or "",
            ",".join(ports),
            _owner(service),
            _age(service.metadata.creation_timestamp, snapshot.taken_at),
        )
    return table


def _dns_table(snapshot: Snapshot) -> Table:
    table = _table("DNS records (outside the cluster, simulated)")
    table.add_column("NAME")
    table.add_column("CNAME")
    for name, target in sorted(snapshot.dns.items()):
        table.add_row(name, target)
    return table


def _event_table(snapshot: Snapshot) -> Table:
    table = _table("Recent events (events.k8s.io/v1)")
    for column in ("AGE", "TYPE", "REASON", "OBJECT"):
        table.add_column(column, no_wrap=True, min_width=len(column))
    # The message takes what the other columns leave, on one line.
    table.add_column("MESSAGE", no_wrap=True, overflow="ellipsis", ratio=1)
    for event in snapshot.events:
        regarding = event.get("regarding", {})
        kind = event.get("type", "")
        table.add_row(
            _age(_event_time(event), snapshot.taken_at),
            Text(kind, style="yellow" if kind == "Warning" else ""),
            event.get("reason", ""),
            f"{str(regarding.get('kind', '')).lower()}/{regarding.get('name', '')}",
            event.get("note", ""),
        )
    return table


_MARKS = {
    "pending": Text("  ", style="dim"),
    "running": Text("… ", style="yellow"),
    "done": Text("✓ ", style="green"),
    "failed": Text("✗ ", style="red"),
}


def _steps(steps: Sequence[Step]) -> Text:
    lines = []
    for step in steps:
        line = _MARKS[step.state].copy()
        line.append(step.title, style="dim" if step.state == "pending" else "")
        if step.detail:
            line.append(f"  {step.detail}", style="dim")
        lines.append(line)
    return Text("\n").join(lines)


def render(snapshot: Snapshot, steps: Sequence[Step], footer: Sequence[str] = ()) -> RenderableType:
    """One screen: the steps (then ``footer``), the objects, the DNS records, recent events.

    What matters most comes first: a terminal too short for all of it cuts the bottom.
    """
    heading = _steps(steps)
    if footer:
        heading.append("\n\n")
        heading.append("\n".join(footer), style="bold")
    return Group(
        Panel(heading, title="pyctrl demo: the MySrv operator", title_align="left"),
        _mysrv_table(snapshot),
        _deployment_table(snapshot),
        _service_table(snapshot),
        _dns_table(snapshot),
        _event_table(snapshot),
    )
