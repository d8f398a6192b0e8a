"""Why a reconcile ran: triggers, their log summary and metric, predicate drops, end to end."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import structlog
from kubernetes_asyncio.client import V1ConfigMap, V1ObjectMeta
from structlog.contextvars import merge_contextvars
from structlog.testing import capture_logs

from pyctrl import metrics
from pyctrl.builder import controller_managed_by
from pyctrl.client import MergePatch
from pyctrl.controller import Options, triggers
from pyctrl.controllerutil import set_controller_reference
from pyctrl.handler import EnqueueRequestForObject
from pyctrl.log import merge_triggers
from pyctrl.manager import Manager
from pyctrl.meta import ObjectMeta
from pyctrl.predicate import GenerationChanged
from pyctrl.reconcile import Request, Result
from pyctrl.source import Channel
from pyctrl.testing import running
from pyctrl.workqueue import Trigger, TriggerKind, Triggers

from .conftest import Widget, options

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pyctrl.envtest import Environment
    from pyctrl.event import GenericEvent
    from pyctrl.handler import Queue

TRIGGERS = "controller_runtime_reconcile_triggers_total"


def _count(controller: str, trigger: str) -> float:
    value = metrics.registry.get_sample_value(
        TRIGGERS, {"controller": controller, "trigger": trigger}
    )
    return value or 0.0


class Recorder:
    """A reconciler that hands each reconcile's request and triggers to the test."""

    def __init__(self) -> None:
        self.seen: asyncio.Queue[tuple[Request, Triggers]] = asyncio.Queue()
        self.results: list[Result | Exception] = []

    async def reconcile(self, request: Request) -> Result:
        await self.seen.put((request, triggers()))
        if self.results:
            outcome = self.results.pop(0)
            if isinstance(outcome, Exception):
                raise outcome
            return outcome
        return Result()

    async def next(self) -> tuple[Request, Triggers]:
        async with asyncio.timeout(20):
            return await self.seen.get()


def _widget(name: str) -> Widget:
    return Widget(metadata=ObjectMeta(name=name, namespace="default"))


async def test_a_reconcile_reads_the_event_and_the_child_that_queued_it(env: Environment) -> None:
    """The create of a Widget, then an update of its ConfigMap: each reconcile names its cause."""
    manager = Manager(env.config, options())
    recorder = Recorder()
    (
        controller_managed_by(manager)
        .for_(Widget)
        .owns(V1ConfigMap)
        .named("prov-child")
        .complete(recorder)
    )
    before = _count("prov-child", "update")
    async with running(manager):
        widget = await manager.client.create(_widget("w"))
        request, found = await recorder.next()
        assert request == Request("default", "w")
        assert [(t.kind, t.source, t.object, t.resource_version) for t in found] == [
            (
                "create",
                "Widget.test.pyctrl.dev",
                "Widget default/w",
                widget.metadata.resource_version,
            )
        ]
        assert found.kind == "create"
        assert str(found) == f"create Widget default/w@{widget.metadata.resource_version}"

        cm = V1ConfigMap(metadata=V1ObjectMeta(name="w-settings", namespace="default"))
        set_controller_reference(widget, cm)
        cm = await manager.client.create(cm)
        _, found = await recorder.next()
        assert [(t.kind, t.source, t.object) for t in found] == [
            ("create", "ConfigMap", "ConfigMap default/w-settings")
        ]
        cm = await manager.client.patch(cm, MergePatch({"data": {"color": "red"}}))
        _, found = await recorder.next()
        assert [(t.kind, t.object, t.resource_version) for t in found] == [
            ("update", "ConfigMap default/w-settings", cm.metadata.resource_version)
        ]
    assert _count("prov-child", "update") == before + 1


async def test_requeues_retries_and_timers_are_triggers(env: Environment) -> None:
    """requeue_after, requeue, a failure and a timer's add_after each queue their own kind."""
    manager = Manager(env.config, options())
    recorder = Recorder()
    recorder.results = [Result(requeue_after=0.01), Result(requeue=True), RuntimeError("boom")]
    controller = (
        controller_managed_by(manager).for_(Widget).named("prov-requeue").complete(recorder)
    )
    async with running(manager):
        await manager.client.create(_widget("r"))
        kinds = [(await recorder.next())[1].kind for _ in range(4)]
        assert kinds == ["create", "requeue_after", "requeue", "retry"]
        # Another mechanism (a per-object timer) names its own kind.
        timer = Trigger(TriggerKind.TIMER, source="expiry")
        controller.queue.add_after(Request("default", "r"), 0.01, trigger=timer)
        _, found = await recorder.next()
    assert list(found) == [timer]
    assert str(found) == "timer via expiry"
    assert _count("prov-requeue", "timer") >= 1
    assert _count("prov-requeue", "retry") >= 1


async def test_collapsed_triggers_show_in_the_log_summary(env: Environment) -> None:
    """Events sent while a reconcile runs collapse into one; its log lines carry the summary."""
    manager = Manager(env.config, options())

    class Counting(EnqueueRequestForObject):
        """Tells the test when all eleven objects sent went through the source."""

        def __init__(self) -> None:
            super().__init__()
            self.handled = 0
            self.all = asyncio.Event()

        async def generic(self, event: GenericEvent[Any], queue: Queue) -> None:
            await super().generic(event, queue)
            self.handled += 1
            if self.handled == 11:
                self.all.set()

    counting = Counting()
    channel = Channel(counting)
    entered, release = asyncio.Event(), asyncio.Event()
    log = structlog.get_logger("test")

    class Blocking(Recorder):
        async def reconcile(self, request: Request) -> Result:
            if not entered.is_set():
                entered.set()
                await release.wait()
            log.info("reconciling")
            return await super().reconcile(request)

    recorder = Blocking()
    (
        controller_managed_by(manager)
        .named("prov-collapse")
        .watches_raw_source(channel)
        .complete(recorder)
    )
    async with running(manager):
        await channel.send(_widget("c"))
        async with asyncio.timeout(20):
            await entered.wait()
        for _ in range(10):
            await channel.send(_widget("c"))
        async with asyncio.timeout(20):
            await counting.all.wait()
        with capture_logs(processors=[merge_contextvars, merge_triggers]) as logs:
            release.set()
            await recorder.next()
            _, found = await recorder.next()
    assert found.count == 10
    assert found.by_kind == {"channel": 10}
    assert len(found.first) == 3
    assert len(found.last) == 3
    assert found.omitted == 4
    assert str(found) == "channel Widget default/c (10 triggers: channel=10)"
    lines = [line for line in logs if line["event"] == "reconciling"]
    assert [str(line["triggers"]) for line in lines] == [
        "channel Widget default/c",
        "channel Widget default/c (10 triggers: channel=10)",
    ]


async def test_record_triggers_off_leaves_the_reconcile_without_any(env: Environment) -> None:
    """Options(record_triggers=False): triggers() is empty and nothing is counted."""
    manager = Manager(env.config, options())
    recorder = Recorder()
    (
        controller_managed_by(manager)
        .for_(Widget)
        .named("prov-off")
        .with_options(Options(record_triggers=False))
        .complete(recorder)
    )
    async with running(manager):
        await manager.client.create(_widget("off"))
        _, found = await recorder.next()
    assert not found
    assert found.kind == "unknown"
    assert _count("prov-off", "create") == 0


def test_triggers_outside_a_reconcile_is_an_error() -> None:
    """triggers() outside a reconcile says where it may be called."""
    with pytest.raises(RuntimeError, match="only available inside a reconcile"):
        triggers()


@pytest.fixture
def debug_logging() -> Iterator[None]:
    """structlog writing debug lines, as configure(level="DEBUG") sets it."""
    saved = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    try:
        yield
    finally:
        structlog.configure(**saved)


@pytest.mark.usefixtures("debug_logging")
async def test_a_dropped_event_is_logged_with_the_predicate_that_dropped_it(
    env: Environment,
) -> None:
    """A status-only update filtered by GenerationChanged logs which predicate dropped it."""
    manager = Manager(env.config, options())
    recorder = Recorder()
    (
        controller_managed_by(manager)
        .for_(Widget, GenerationChanged())
        .named("prov-drop")
        .complete(recorder)
    )
    async with running(manager):
        widget = await manager.client.create(_widget("d"))
        await recorder.next()
        with capture_logs() as logs:
            widget = await manager.client.status().patch(
                widget, MergePatch({"status": {"configMap": "x"}})
            )
            # The spec update after it passes, so the drop was logged before it arrived.
            await manager.client.patch(widget, MergePatch({"spec": {"size": 2}}))
            await recorder.next()
    drops = [e for e in logs if e["event"] == "event dropped by predicate"]
    assert [(d["predicate"], d["event_type"], d["name"], d["resource_version"]) for d in drops] == [
        ("GenerationChanged", "UpdateEvent", "d", widget.metadata.resource_version)
    ]
    assert drops[0]["log_level"] == "debug"


def test_debugging_page_says_record_triggers_off_stops_the_trigger_metric() -> None:
    """docs/debugging.md's table says what the test above shows: the metric follows the option."""
    page = (Path(__file__).parents[2] / "docs" / "debugging.md").read_text()
    row = next(
        line
        for line in page.splitlines()
        if line.startswith("| `controller_runtime_reconcile_triggers_total")
    )
    cost = row.rstrip(" |").rsplit(" | ", 1)[1]
    assert "record_triggers=False" in cost
    assert "always" not in cost
