"""The manager stack end to end on the embedded API server."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import aiohttp
import pytest
from kubernetes_asyncio.client import V1ConfigMap, V1ObjectMeta
from prometheus_client.parser import text_string_to_metric_families

from pyctrl.builder import controller_managed_by
from pyctrl.controllerutil import create_or_update, set_controller_reference
from pyctrl.errors import NotFoundError
from pyctrl.manager import Manager
from pyctrl.meta import GroupVersionKind, ObjectMeta
from pyctrl.predicate import GenerationChanged
from pyctrl.reconcile import Func, Request, Result
from pyctrl.resource import Unstructured
from pyctrl.testing import eventually, running

from .conftest import Widget, WidgetSpec, options

if TYPE_CHECKING:
    from pyctrl.controller import Controller
    from pyctrl.envtest import Environment

EVENTS_V1 = GroupVersionKind("events.k8s.io", "v1", "Event")


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
    """With GenerationChanged, a status-only write triggers no reconcile; a spec write does."""
    manager = Manager(env.config, options())
    reconciler = WidgetReconciler(manager)
    controller = (
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
        await _idle(controller)
        before = len(reconciler.calls)
        live = await manager.api_reader.get(Widget, "w2", "default")
        live.status.config_map = "changed-by-someone-else"
        written = await manager.client.status().update(live)

        async def cached() -> bool:
            seen = await manager.cache.get(Widget, "w2", "default")
            return bool(seen.metadata.resource_version == written.metadata.resource_version)

        await eventually(cached)
        # One informer delivers a type's events in order: once the marker (created after
        # the status write) has been reconciled, the status event has passed the filter.
        await manager.client.create(
            Widget(metadata=ObjectMeta(name="w2-marker", namespace="default"))
        )

        async def marker_reconciled() -> bool:
            return Request("default", "w2-marker") in reconciler.calls

        await eventually(marker_reconciled)
        await _idle(controller)
        assert Request("default", "w2") not in reconciler.calls[before:]
        before = len(reconciler.calls)
        live = await manager.api_reader.get(Widget, "w2", "default")
        live.spec.size = 5
        await manager.client.update(live)

        async def reconciled_spec_change() -> bool:
            return len(reconciler.calls) > before

        await eventually(reconciled_spec_change)
        assert reconciler.calls[before:] == [Request("default", "w2")]


async def _idle(controller: Controller) -> None:
    """Wait until the controller's queue holds nothing ready and processes nothing."""

    async def idle() -> bool:
        stats = controller.queue.statistics()
        return stats.depth == 0 and stats.processing == 0 and stats.blocked == 0

    await eventually(idle)


class StatusOnly:
    """Writes observedGeneration with one status update per generation, nothing else."""

    def __init__(self, manager: Manager) -> None:
        self.client = manager.client

    async def reconcile(self, request: Request) -> Result:
        widget = await self.client.get(Widget, request.name, request.namespace)
        widget.status.observed_generation = widget.metadata.generation or 0
        await self.client.status().update(widget)
        return Result()


async def _scrape(port: int) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample served on /metrics, by name and labels."""
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}/metrics") as resp,
    ):
        assert resp.status == 200
        text = await resp.text()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def test_metrics_values_after_known_work(env: Environment) -> None:
    """/metrics counts exactly the reconciles, queue adds and requests of known work."""
    manager = Manager(env.config, options())
    controller = (
        controller_managed_by(manager)
        .for_(Widget)
        .with_event_filter(GenerationChanged())
        .named("widget-metrics")
        .complete(StatusOnly(manager))
    )
    host = urlsplit(str(env.config.host)).netloc
    name = {("controller", "widget-metrics")}
    queue = {("name", "widget-metrics"), ("controller", "widget-metrics")}
    wanted = {
        ("controller_runtime_reconcile_total", frozenset({*name, ("result", "success")})),
        ("controller_runtime_reconcile_time_seconds_count", frozenset(name)),
        ("workqueue_adds_total", frozenset(queue)),
        ("rest_client_requests_total", _rest("201", "POST", host)),
        ("rest_client_requests_total", _rest("200", "PUT", host)),
    }
    count = 3
    async with running(manager):
        assert manager.metrics_server is not None
        port = manager.metrics_server.port
        before = await _scrape(port)
        for i in range(count):
            await manager.client.create(
                Widget(metadata=ObjectMeta(name=f"m{i}", namespace="default"))
            )

        async def all_observed() -> bool:
            widgets = await manager.api_reader.list(Widget, namespace="default")
            return sum(w.status.observed_generation == 1 for w in widgets.items) == count

        await eventually(all_observed)
        await _idle(controller)
        after = await _scrape(port)
    # Polling reads are GETs; the POSTs are the creates and the PUTs the status writes.
    deltas = {key: after.get(key, 0.0) - before.get(key, 0.0) for key in wanted}
    assert deltas == dict.fromkeys(wanted, float(count))


def _rest(code: str, method: str, host: str) -> frozenset[tuple[str, str]]:
    return frozenset({("code", code), ("method", method), ("host", host)})


async def test_events_and_probes(env: Environment) -> None:
    """A reconciler's Event is recorded, and /readyz answers ok once started."""
    manager = Manager(env.config, options(health_probe_bind_address="127.0.0.1:0"))
    reconciler = WidgetReconciler(manager)
    controller_managed_by(manager).for_(Widget).named("widget-events").complete(reconciler)
    async with running(manager):
        await manager.client.create(Widget(metadata=ObjectMeta(name="w3", namespace="default")))

        async def event_recorded() -> bool:
            events = await manager.api_reader.list(Unstructured, namespace="default", gvk=EVENTS_V1)
            return any(e.object.get("regarding", {}).get("name") == "w3" for e in events.items)

        await eventually(event_recorded)
        assert manager.probe_server is not None
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{manager.probe_server.port}/readyz") as resp,
        ):
            assert (resp.status, await resp.text()) == (200, "ok")


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


async def test_runnables_and_sources_are_readable(env: Environment) -> None:
    """Manager.runnables lists leader runnables first; Controller.sources lists its watches."""

    class Other:
        need_leader_election = False

        async def start(self) -> None:
            await asyncio.Event().wait()

    manager = Manager(env.config, options())
    other = Other()
    manager.add(other)
    controller = controller_managed_by(manager).for_(Widget).owns(V1ConfigMap).complete(Func(_noop))
    assert manager.runnables == (controller, other)
    assert [source.type for source in controller.sources] == [Widget, V1ConfigMap]  # type: ignore[attr-defined]


async def _noop(request: Request) -> Result:
    del request
    return Result()
