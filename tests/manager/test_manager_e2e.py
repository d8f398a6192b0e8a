"""The manager stack end to end on the embedded API server."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest
from kubernetes_asyncio.client import V1ConfigMap, V1ObjectMeta

from pyctrl import metrics
from pyctrl.builder import controller_managed_by
from pyctrl.controllerutil import create_or_update, set_controller_reference
from pyctrl.errors import NotFoundError
from pyctrl.manager import Manager
from pyctrl.meta import ObjectMeta
from pyctrl.predicate import GenerationChanged
from pyctrl.reconcile import Request, Result

from .conftest import Widget, WidgetSpec, eventually, options, running

if TYPE_CHECKING:
    from pyctrl.envtest import Environment


class WidgetReconciler:
    """Keeps a ConfigMap per Widget (owned by it) and reports it in status."""

    def __init__(self, manager: Manager) -> None:
        self.manager = manager
        self.client = manager.client
        self.recorder = manager.get_event_recorder_for("widget")
        self.calls: list[Request] = []

    async def reconcile(self, request: Request) -> Result:
        self.calls.append(request)
        try:
            widget = await self.client.get(Widget, request.name, request.namespace)
        except NotFoundError:
            return Result()
        desired = V1ConfigMap(
            metadata=V1ObjectMeta(name=f"{request.name}-config", namespace=request.namespace)
        )

        def mutate(cm: V1ConfigMap) -> None:
            cm.data = {"color": widget.spec.color, "size": str(widget.spec.size)}
            set_controller_reference(widget, cm)

        result, cm = await create_or_update(self.client, desired, mutate)
        if result != "unchanged":
            self.recorder.event(widget, "Normal", "ConfigMapSynced", f"ConfigMap {result}")
        if widget.status.observed_generation != widget.metadata.generation:
            widget.status.observed_generation = widget.metadata.generation or 0
            widget.status.config_map = cm.metadata.name
            await self.client.status().update(widget)
        return Result()


async def _configmap(manager: Manager, name: str) -> V1ConfigMap | None:
    try:
        cm: V1ConfigMap = await manager.api_reader.get(V1ConfigMap, name, "default")
    except NotFoundError:
        return None
    return cm


async def test_reconciles_owned_objects_and_reacts_to_their_deletion(env: Environment) -> None:
    """A Widget gets an owned ConfigMap; deleting the ConfigMap brings it back (owner requeue)."""
    manager = Manager(env.config, options())
    reconciler = WidgetReconciler(manager)
    controller_managed_by(manager).for_(Widget).owns(V1ConfigMap).complete(reconciler)
    async with running(manager):
        widget = await manager.client.create(
            Widget(
                metadata=ObjectMeta(name="w1", namespace="default"), spec=WidgetSpec(color="red")
            )
        )

        async def has_config() -> bool:
            cm = await _configmap(manager, "w1-config")
            return cm is not None and cm.data == {"color": "red", "size": "1"}

        await eventually(has_config)
        cm = await _configmap(manager, "w1-config")
        assert cm is not None
        assert cm.metadata.owner_references[0].uid == widget.metadata.uid
        assert cm.metadata.owner_references[0].controller is True

        async def status_written() -> bool:
            live = await manager.api_reader.get(Widget, "w1", "default")
            return live.status.config_map == "w1-config" and live.status.observed_generation == 1

        await eventually(status_written)
        await manager.client.delete(cm)
        await eventually(has_config)
        recreated = await _configmap(manager, "w1-config")
        assert recreated is not None
        assert recreated.metadata.uid != cm.metadata.uid

        widget = await manager.api_reader.get(Widget, "w1", "default")
        widget.spec.color = "green"
        await manager.client.update(widget)

        async def recolored() -> bool:
            cm = await _configmap(manager, "w1-config")
            return cm is not None and (cm.data or {}).get("color") == "green"

        await eventually(recolored)


async def test_generation_predicate_drops_status_only_updates(env: Environment) -> None:
    """With GenerationChanged, writing only status triggers no reconcile."""
    manager = Manager(env.config, options())
    reconciler = WidgetReconciler(manager)
    (
        controller_managed_by(manager)
        .for_(Widget)
        .with_event_filter(GenerationChanged())
        .named("widget-gen")
        .complete(reconciler)
    )
    async with running(manager):
        await manager.client.create(Widget(metadata=ObjectMeta(name="w2", namespace="default")))

        async def settled() -> bool:
            live = await manager.api_reader.get(Widget, "w2", "default")
            return live.status.observed_generation == 1

        await eventually(settled)
        queue = _controller(manager, "widget-gen").queue
        async with asyncio.timeout(10):
            while queue.statistics().processing or len(queue):  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        before = len(reconciler.calls)
        live = await manager.api_reader.get(Widget, "w2", "default")
        live.status.config_map = "changed-by-someone-else"
        await manager.client.status().update(live)
        live = await manager.api_reader.get(Widget, "w2", "default")
        live.spec.size = 5
        await manager.client.update(live)

        async def reconciled_spec_change() -> bool:
            return len(reconciler.calls) > before

        await eventually(reconciled_spec_change)
        assert reconciler.calls[before:] == [Request("default", "w2")]


def _controller(manager: Manager, name: str) -> Any:
    return next(r for r in manager._leader if getattr(r, "name", "") == name)


async def test_metrics_events_and_probes(env: Environment) -> None:
    """After known work: success counted, an Event recorded, /readyz and /metrics served."""
    manager = Manager(env.config, options(health_probe_bind_address="127.0.0.1:0"))
    reconciler = WidgetReconciler(manager)
    controller_managed_by(manager).for_(Widget).named("widget-metrics").complete(reconciler)
    before = metrics.reconcile_total.labels("widget-metrics", "success")._value.get()
    async with running(manager):
        await manager.client.create(Widget(metadata=ObjectMeta(name="w3", namespace="default")))

        async def event_recorded() -> bool:
            from pyctrl.meta import GroupVersionKind
            from pyctrl.resource import Unstructured

            events = await manager.api_reader.list(
                Unstructured,
                namespace="default",
                gvk=GroupVersionKind("events.k8s.io", "v1", "Event"),
            )
            return any(e.object.get("regarding", {}).get("name") == "w3" for e in events.items)

        await eventually(event_recorded)
        assert metrics.reconcile_total.labels("widget-metrics", "success")._value.get() > before
        assert manager.probe_server is not None
        assert manager.metrics_server is not None
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{manager.probe_server.port}/readyz") as resp:
                assert (resp.status, await resp.text()) == (200, "ok")
            url = f"http://127.0.0.1:{manager.metrics_server.port}/metrics"
            async with session.get(url) as resp:
                text = await resp.text()
        assert (
            'controller_runtime_reconcile_total{controller="widget-metrics",result="success"}'
            in text
        )
        assert "workqueue_adds_total" in text
        assert "rest_client_requests_total" in text


async def test_a_failing_runnable_stops_the_manager_with_its_error(env: Environment) -> None:
    """One runnable raising stops every other one and surfaces its error."""

    class Broken:
        async def start(self) -> None:
            raise RuntimeError("broken runnable")

    manager = Manager(env.config, options())
    manager.add(Broken())
    async with asyncio.timeout(20):
        with pytest.raises(RuntimeError, match=r"^broken runnable$"):
            await manager.start()
