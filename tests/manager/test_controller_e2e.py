"""Controllers built with the builder, end to end on the embedded API server under a Manager."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import TYPE_CHECKING, Any

from kubernetes_asyncio.client import V1ConfigMap, V1ObjectMeta
from structlog.testing import capture_logs

from pyctrl.builder import controller_managed_by
from pyctrl.client import MergePatch
from pyctrl.controller import Options
from pyctrl.controllerutil import set_owner_reference
from pyctrl.crd import crd_for
from pyctrl.envtest import Environment
from pyctrl.errors import NotFoundError
from pyctrl.handler import EnqueueRequestForObject, EnqueueRequestsFromMapFunc
from pyctrl.manager import Manager
from pyctrl.meta import ObjectMeta
from pyctrl.predicate import GenerationChanged
from pyctrl.reconcile import Request, Result
from pyctrl.source import Informer
from pyctrl.testing import eventually, running

from .conftest import Widget, options

if TYPE_CHECKING:
    from collections.abc import MutableMapping

    from pyctrl.controller import Controller


class Tracking:
    """Records every reconcile, how many run at once per key and in all, and what it saw."""

    def __init__(self, manager: Manager) -> None:
        self.client = manager.client
        self.calls: list[Request] = []
        self.active: Counter[Request] = Counter()
        self.max_per_key = 0
        self.max_total = 0
        self.generations: list[int] = []

    def enter(self, request: Request) -> None:
        self.calls.append(request)
        self.active[request] += 1
        self.max_per_key = max(self.max_per_key, self.active[request])
        self.max_total = max(self.max_total, sum(self.active.values()))

    async def reconcile(self, request: Request) -> Result:
        self.enter(request)
        try:
            await self.work(request)
        finally:
            self.active[request] -= 1
        return Result()

    async def work(self, request: Request) -> None:
        """Report the generation seen in status, as a real controller would."""
        try:
            widget = await self.client.get(Widget, request.name, request.namespace)
        except NotFoundError:
            return
        generation = widget.metadata.generation or 0
        self.generations.append(generation)
        await self.client.status().patch(
            widget, MergePatch({"status": {"observedGeneration": generation}})
        )


async def _idle(controller: Controller) -> None:
    """Wait until the controller's queue holds nothing ready and processes nothing."""

    async def idle() -> bool:
        stats = controller.queue.statistics()
        return stats.depth == 0 and stats.processing == 0 and stats.blocked == 0

    await eventually(idle)


def _widget(name: str) -> Widget:
    return Widget(metadata=ObjectMeta(name=name, namespace="default"))


async def test_same_key_never_reconciled_concurrently_under_load(env: Environment) -> None:
    """8 workers, 120 rapid PATCHes to 4 Widgets: never two reconciles of one key at once."""
    manager = Manager(env.config, options())
    tracking = Tracking(manager)
    (
        controller_managed_by(manager)
        .for_(Widget)
        .with_event_filter(GenerationChanged())
        .with_options(Options(max_concurrent_reconciles=8))
        .complete(tracking)
    )
    names, patches = [f"load-{i}" for i in range(4)], 30
    async with running(manager):
        widgets = [await manager.client.create(_widget(name)) for name in names]

        async def churn(widget: Widget) -> None:
            for size in range(2, patches + 2):
                await manager.client.patch(widget, MergePatch({"spec": {"size": size}}))

        async with asyncio.TaskGroup() as tg:
            for widget in widgets:
                tg.create_task(churn(widget))

        async def all_observed() -> bool:
            for name in names:
                live = await manager.api_reader.get(Widget, name, "default")
                if live.status.observed_generation != 1 + patches or live.spec.size != 1 + patches:
                    return False
            return True

        await eventually(all_observed)
    assert tracking.max_per_key == 1
    assert tracking.max_total > 1, "the load never ran two reconciles at once"
    assert set(tracking.calls) == {Request("default", name) for name in names}


async def test_burst_of_updates_collapses_into_one_reconcile(env: Environment) -> None:
    """30 spec updates while a Widget's reconcile is in flight lead to one more reconcile."""
    manager = Manager(env.config, options())
    in_first, release = asyncio.Event(), asyncio.Event()

    class BlockFirst(Tracking):
        async def work(self, request: Request) -> None:
            if request.name == "burst" and not in_first.is_set():
                in_first.set()
                await release.wait()
            widget = await self.client.get(Widget, request.name, request.namespace)
            self.generations.append(widget.metadata.generation or 0)

    tracking = BlockFirst(manager)
    controller = controller_managed_by(manager).for_(Widget).complete(tracking)
    burst = Request("default", "burst")
    updates = 30
    async with running(manager):
        widget = await manager.client.create(_widget("burst"))
        async with asyncio.timeout(15):
            await in_first.wait()
        for size in range(2, updates + 2):
            widget = await manager.client.patch(widget, MergePatch({"spec": {"size": size}}))
        # One informer delivers a type's events in order: once the marker's create is
        # queued, every update of the burst has been handed to the queue before it.
        await manager.client.create(_widget("marker"))

        async def marker_queued() -> bool:
            return controller.queue.statistics().depth == 1

        await eventually(marker_queued)
        release.set()
        await _idle(controller)
    assert tracking.calls.count(burst) == 2
    assert tracking.generations[tracking.calls.index(burst, 1)] == 1 + updates


async def test_watches_maps_a_configmap_to_its_owner(env: Environment) -> None:
    """watches(V1ConfigMap, map function) reconciles the Widget that owns a changed ConfigMap."""
    manager = Manager(env.config, options())
    tracking = Tracking(manager)

    def owners(cm: V1ConfigMap) -> list[Request]:
        return [
            Request(cm.metadata.namespace, ref.name)
            for ref in cm.metadata.owner_references or []
            if ref.kind == "Widget"
        ]

    controller = (
        controller_managed_by(manager)
        .for_(Widget, GenerationChanged())
        .watches(V1ConfigMap, EnqueueRequestsFromMapFunc(owners))
        .complete(tracking)
    )
    owner = Request("default", "owner")
    async with running(manager):
        widget = await manager.client.create(_widget("owner"))
        cm = V1ConfigMap(metadata=V1ObjectMeta(name="settings", namespace="default"))
        set_owner_reference(widget, cm)
        cm = await manager.client.create(cm)

        async def reconciled_twice() -> bool:
            return tracking.calls.count(owner) >= 2

        await eventually(reconciled_twice)
        await _idle(controller)
        before = len(tracking.calls)
        await manager.client.patch(cm, MergePatch({"data": {"color": "red"}}))

        async def reconciled_again() -> bool:
            return len(tracking.calls) > before

        await eventually(reconciled_again)
    assert tracking.calls[before:] == [owner]


async def test_with_options_sets_the_number_of_workers(env: Environment) -> None:
    """with_options(max_concurrent_reconciles=2) runs two reconciles at once."""
    manager = Manager(env.config, options())
    both_in = asyncio.Event()

    class WaitForTwo(Tracking):
        async def work(self, request: Request) -> None:
            if sum(self.active.values()) == 2:
                both_in.set()
            await both_in.wait()

    tracking = WaitForTwo(manager)
    (
        controller_managed_by(manager)
        .for_(Widget)
        .with_options(Options(max_concurrent_reconciles=2))
        .complete(tracking)
    )
    async with running(manager):
        await manager.client.create(_widget("one"))
        await manager.client.create(_widget("two"))
        async with asyncio.timeout(15):
            await both_in.wait()
    assert tracking.max_total == 2


async def test_informer_source_feeds_a_controller(env: Environment) -> None:
    """An Informer source over the cache's ConfigMap informer queues each ConfigMap's key."""
    manager = Manager(env.config, options())
    tracking = Tracking(manager)
    informer = manager.cache.get_informer(V1ConfigMap)
    (
        controller_managed_by(manager)
        .named("configmaps")
        .watches_raw_source(Informer(informer, EnqueueRequestForObject()))
        .complete(tracking)
    )
    async with running(manager):
        await manager.client.create(
            V1ConfigMap(metadata=V1ObjectMeta(name="fed", namespace="default"))
        )

        async def reconciled() -> bool:
            return Request("default", "fed") in tracking.calls

        await eventually(reconciled)


async def test_kind_waits_for_its_crd_and_starts_once_installed() -> None:
    """A controller whose CRD is missing logs its retries and reconciles once it is installed."""
    async with Environment() as env:
        manager = Manager(env.config, options())
        tracking = Tracking(manager)
        controller_managed_by(manager).for_(Widget).complete(tracking)
        with capture_logs() as logs:
            async with asyncio.TaskGroup() as tg:
                task = tg.create_task(manager.start())

                async def retrying() -> bool:
                    return any(_retry_line(record) for record in logs)

                await eventually(retrying)
                assert not tracking.calls
                await env.install_crds([crd_for(Widget)])
                async with asyncio.timeout(20):
                    await manager.wait_started()
                await manager.client.create(_widget("late"))

                async def reconciled() -> bool:
                    return Request("default", "late") in tracking.calls

                await eventually(reconciled)
                task.cancel()
    retry = next(record for record in logs if _retry_line(record))
    assert retry["log_level"] == "warning"
    assert "test.pyctrl.dev/v1/Widget" in retry["error"]


def _retry_line(record: MutableMapping[str, Any]) -> bool:
    return bool(record["event"] == "no REST mapping for type; retrying")
