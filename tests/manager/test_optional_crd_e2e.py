"""Optional kinds: a controller that owns a CR whose CRD comes and goes, without a restart."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import aiohttp
from kubernetes_asyncio.client import Configuration
from pydantic import Field
from structlog.testing import capture_logs

from pyctrl import metrics
from pyctrl.app import Operator
from pyctrl.builder import controller_managed_by
from pyctrl.controller import triggers
from pyctrl.controllerutil import set_controller_reference
from pyctrl.crd import crd_for
from pyctrl.manager import Manager
from pyctrl.meta import GroupVersionKind, KubeModel, ObjectMeta
from pyctrl.resource import CustomResource, Unstructured
from pyctrl.testing import eventually, running

from .conftest import Widget, options

if TYPE_CHECKING:
    from pyctrl.envtest import Environment
    from pyctrl.reconcile import Request, Result

CRD = GroupVersionKind("apiextensions.k8s.io", "v1", "CustomResourceDefinition")


class MonitorSpec(KubeModel):
    """What a ServiceMonitor-like object scrapes."""

    port: str = "metrics"


class Monitor(CustomResource, group="monitoring.test.pyctrl.dev", version="v1"):
    """A ServiceMonitor look-alike, whose CRD may not be installed."""

    spec: MonitorSpec = Field(default_factory=MonitorSpec)


class Reconciler:
    """Reconciles widgets, and gives each a Monitor once Monitors are served."""

    def __init__(self, manager: Manager) -> None:
        self.manager = manager
        self.seen: list[tuple[str, bool, str]] = []

    async def reconcile(self, request: Request) -> Result | None:
        served = self.manager.cache.is_served(Monitor)
        self.seen.append((request.name, served, str(triggers())))
        return None


def _served_gauge() -> float | None:
    return metrics.registry.get_sample_value(
        "pyctrl_informer_served", {"gvk": "monitoring.test.pyctrl.dev/v1/Monitor"}
    )


async def _ready(session: aiohttp.ClientSession, manager: Manager) -> None:
    assert manager.probe_server is not None
    url = f"http://127.0.0.1:{manager.probe_server.port}/readyz?verbose"
    async with session.get(url) as response:
        assert response.status == 200, await response.text()


async def test_an_optional_owned_kind_comes_and_goes_without_a_restart(env: Environment) -> None:
    """Start without the CRD; install it and its events flow; delete it and /readyz stays green."""
    manager = Manager(env.config, options(health_probe_bind_address="127.0.0.1:0"))
    reconciler = Reconciler(manager)
    controller_managed_by(manager).for_(Widget).owns(Monitor, optional=True).complete(reconciler)
    started = time.monotonic()
    with capture_logs() as logs:
        async with running(manager, start_timeout=10), aiohttp.ClientSession() as session:
            assert time.monotonic() - started < 10  # not cache_sync_timeout (20 s here)
            widget = await manager.client.create(
                Widget(metadata=ObjectMeta(name="w", namespace="default"))
            )
            await eventually(lambda: asyncio.sleep(0, bool(reconciler.seen)))
            assert reconciler.seen[0][:2] == ("w", False)
            await _ready(session, manager)
            states = {s.gvk.kind: s.state for s in manager.cache.status()}
            assert states["Monitor"] == "inactive"
            assert _served_gauge() == 0

            await env.install_crds([crd_for(Monitor)])

            async def served() -> bool:
                return manager.cache.is_served(Monitor)

            await eventually(served, within=5)
            monitor = Monitor(metadata=ObjectMeta(name="w-monitor", namespace="default"))
            set_controller_reference(widget, monitor)
            await manager.client.create(monitor)

            def by_monitor() -> bool:
                return any("Monitor default/w-monitor" in why for _, _, why in reconciler.seen)

            await eventually(lambda: asyncio.sleep(0, by_monitor()), within=5)
            assert _served_gauge() == 1
            await _ready(session, manager)

            crd = await manager.api_reader.get(
                Unstructured, "monitors.monitoring.test.pyctrl.dev", gvk=CRD
            )
            await manager.client.delete(crd)

            async def gone() -> bool:
                return not manager.cache.is_served(Monitor)

            await eventually(gone, within=10)
            await _ready(session, manager)
            manager.cache.check_ready()
            assert _served_gauge() == 0
    stopped = [r for r in logs if r["event"] == "optional kind no longer served: informer stopped"]
    assert len(stopped) == 1


async def test_generated_rbac_reads_crds_for_optional_kinds() -> None:
    """An optional watch adds get/list/watch on CustomResourceDefinitions to the ClusterRole."""

    def setup(manager: Manager) -> None:
        controller_managed_by(manager).for_(Widget).owns(Monitor, optional=True).complete(
            Reconciler(manager)
        )

    operator = Operator(name="widget", types=[Widget], setup=setup)
    manager = await operator.create_manager(Configuration(host="https://cluster.invalid"))
    crds = [r for r in operator.rbac_rules(manager) if "customresourcedefinitions" in r.resources]
    assert len(crds) == 1
    assert crds[0].api_groups == ("apiextensions.k8s.io",)
    assert crds[0].verbs == ("get", "list", "watch")


async def test_an_optional_kind_installed_before_the_start_is_watched(env: Environment) -> None:
    """With its CRD already there, the optional informer starts with the manager."""
    await env.install_crds([crd_for(Monitor)])
    manager = Manager(env.config, options())
    reconciler = Reconciler(manager)
    controller_managed_by(manager).for_(Widget).owns(Monitor, optional=True).complete(reconciler)
    async with running(manager):

        async def served() -> bool:
            return manager.cache.is_served(Monitor)

        await eventually(served, within=5)
        widget = await manager.client.create(
            Widget(metadata=ObjectMeta(name="early", namespace="default"))
        )
        monitor = Monitor(metadata=ObjectMeta(name="early-monitor", namespace="default"))
        set_controller_reference(widget, monitor)
        await manager.client.create(monitor)

        def by_monitor() -> bool:
            return any("Monitor default/early-monitor" in why for _, _, why in reconciler.seen)

        await eventually(lambda: asyncio.sleep(0, by_monitor()), within=5)
        assert {s.gvk.kind: s.state for s in manager.cache.status()}["Monitor"] == "watching"
