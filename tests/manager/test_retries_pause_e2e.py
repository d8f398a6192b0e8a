"""Retries that end, objects on hold, debounced bursts and reconciling everything."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import TYPE_CHECKING, Any

from kubernetes_asyncio.client import V1ConfigMap, V1ObjectMeta
from structlog.testing import capture_logs

from pyctrl import metrics
from pyctrl.builder import controller_managed_by
from pyctrl.client import MergePatch
from pyctrl.controller import Options, triggers
from pyctrl.errors import RetriesExhaustedError
from pyctrl.manager import Manager
from pyctrl.meta import GroupVersionKind, ObjectMeta
from pyctrl.pause import PAUSED_ANNOTATION
from pyctrl.predicate import FieldEquals
from pyctrl.reconcile import Request, Result
from pyctrl.resource import Unstructured
from pyctrl.testing import eventually, running

from .conftest import Widget, options

if TYPE_CHECKING:
    from pyctrl.envtest import Environment

EVENTS = GroupVersionKind("events.k8s.io", "v1", "Event")


async def _events(manager: Manager, name: str, reason: str) -> list[dict[str, Any]]:
    listed = await manager.api_reader.list(Unstructured, namespace="default", gvk=EVENTS)
    return [
        e.object
        for e in listed.items
        if e.object.get("reason") == reason and e.object["regarding"]["name"] == name
    ]


def _exhausted(controller: str) -> float:
    value = metrics.registry.get_sample_value(
        "pyctrl_reconcile_retries_exhausted_total", {"controller": controller}
    )
    return value or 0.0


class Failing:
    """Fails every reconcile, or asks to requeue forever with a budget of its own."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    async def reconcile(self, request: Request) -> Result | None:
        self.calls[request.name] += 1
        if request.name.startswith("loop"):
            return Result(requeue=True, max_retries=2)
        raise OSError("the bucket API is down")


async def test_a_key_past_its_retry_budget_is_dropped_until_its_next_event(
    env: Environment,
) -> None:
    """max_retries=3: 4 attempts, then an event, a metric, on_error told; edits restart it."""
    manager = Manager(env.config, options())
    failing = Failing()
    told: list[tuple[Request, Exception]] = []

    async def on_error(request: Request, exc: Exception) -> Result | None:
        told.append((request, exc))
        return None

    controller = (
        controller_managed_by(manager)
        .for_(Widget)
        .named("budgeted")
        .with_options(Options(max_retries=3, on_error=on_error))
        .complete(failing)
    )
    before = _exhausted("budgeted")

    def given_up() -> list[Exception]:
        return [exc for _, exc in told if isinstance(exc, RetriesExhaustedError)]

    async with running(manager):
        widget = await manager.client.create(
            Widget(metadata=ObjectMeta(name="f", namespace="default"))
        )
        await eventually(lambda: asyncio.sleep(0, len(given_up()) == 1))
        assert failing.calls["f"] == 4  # the first attempt and three retries
        assert _exhausted("budgeted") == before + 1
        error = given_up()[0]
        assert isinstance(error.__cause__, OSError)
        assert "gave up after 3 retries" in str(error)
        assert controller.queue.num_requeues(Request("default", "f")) == 0
        await eventually(lambda: _has_events(manager, "f", "RetriesExhausted"))

        widget.spec.color = "red"  # a new event of the object: a fresh budget
        await manager.client.update(widget)
        await eventually(lambda: asyncio.sleep(0, len(given_up()) == 2))
        assert failing.calls["f"] == 8

        await manager.client.create(Widget(metadata=ObjectMeta(name="loop", namespace="default")))
        await eventually(lambda: asyncio.sleep(0, len(given_up()) == 3))
        assert failing.calls["loop"] == 3  # Result(max_retries=2) overrides the controller's
        assert given_up()[2].__cause__ is None


async def _has_events(manager: Manager, name: str, reason: str) -> bool:
    return bool(await _events(manager, name, reason))


class Recording:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    async def reconcile(self, request: Request) -> Result | None:
        self.seen.append((request.name, str(triggers())))
        return None


async def test_a_paused_object_is_skipped_and_resumes_at_once(env: Environment) -> None:
    """pyctrl.dev/paused=true: a Paused event, no reconcile; removing it reconciles."""
    manager = Manager(env.config, options())
    recording = Recording()
    controller = controller_managed_by(manager).for_(Widget).complete(recording)
    async with running(manager):
        widget = await manager.client.create(
            Widget(metadata=ObjectMeta(name="p", namespace="default"))
        )
        await eventually(lambda: asyncio.sleep(0, len(recording.seen) == 1))
        pause = MergePatch({"metadata": {"annotations": {PAUSED_ANNOTATION: "true"}}})
        widget = await manager.client.patch(widget, pause)
        await eventually(lambda: _has_events(manager, "p", "Paused"))
        with capture_logs() as logs:
            widget.spec.color = "green"
            widget = await manager.client.update(widget)  # dropped by the predicate
            controller.queue.add(Request("default", "p"))  # and anything queued is skipped

            def skipped() -> bool:
                return any(r["event"] == "reconcile skipped: object paused" for r in logs)

            await eventually(lambda: asyncio.sleep(0, skipped()))
        assert len(recording.seen) == 1
        resume = MergePatch({"metadata": {"annotations": {PAUSED_ANNOTATION: None}}})
        await manager.client.patch(widget, resume)
        await eventually(lambda: asyncio.sleep(0, len(recording.seen) == 2), within=5)
        assert "update" in recording.seen[1][1]


async def test_pausing_can_be_turned_off(env: Environment) -> None:
    """paused_annotation(None): the annotation means nothing."""
    manager = Manager(env.config, options())
    recording = Recording()
    controller_managed_by(manager).for_(Widget).paused_annotation(None).complete(recording)
    async with running(manager):
        await manager.client.create(
            Widget(
                metadata=ObjectMeta(
                    name="q", namespace="default", annotations={PAUSED_ANNOTATION: "true"}
                )
            )
        )
        await eventually(lambda: asyncio.sleep(0, len(recording.seen) == 1))


class Latest:
    def __init__(self, manager: Manager) -> None:
        self.manager = manager
        self.seen: list[tuple[str, dict[str, int]]] = []

    async def reconcile(self, request: Request) -> Result | None:
        widget = await self.manager.cache.get(Widget, request.name, request.namespace)
        self.seen.append((widget.spec.color, dict(triggers().by_kind)))
        return None


async def test_debounce_collapses_a_burst_into_one_reconcile(env: Environment) -> None:
    """A create and five quick updates within the debounce time make one reconcile."""
    manager = Manager(env.config, options())
    latest = Latest(manager)
    controller_managed_by(manager).for_(Widget).with_options(Options(debounce=5)).complete(latest)
    async with running(manager):
        widget = await manager.client.create(
            Widget(metadata=ObjectMeta(name="d", namespace="default"))
        )
        for color in ("c1", "c2", "c3", "c4", "c5"):
            widget.spec.color = color
            widget = await manager.client.update(widget)
        await eventually(lambda: asyncio.sleep(0, len(latest.seen) == 1), within=20)
        color, kinds = latest.seen[0]
        assert color == "c5"
        assert kinds.get("create") == 1
        assert kinds.get("update") == 5


async def test_reconcile_all_on_a_config_change(env: Environment) -> None:
    """reconcile_all_on(V1ConfigMap, name=config): its change reconciles every widget."""
    manager = Manager(env.config, options())
    recording = Recording()
    controller_managed_by(manager).for_(Widget).reconcile_all_on(
        V1ConfigMap, FieldEquals("metadata.name", "config")
    ).complete(recording)
    async with running(manager):
        for name in ("a", "b", "c"):
            await manager.client.create(Widget(metadata=ObjectMeta(name=name, namespace="default")))
        await eventually(lambda: asyncio.sleep(0, len(recording.seen) == 3))
        await manager.client.create(
            V1ConfigMap(metadata=V1ObjectMeta(name="other", namespace="default"))
        )
        await manager.client.create(
            V1ConfigMap(metadata=V1ObjectMeta(name="config", namespace="default"))
        )

        def by_config() -> set[str]:
            return {name for name, why in recording.seen[3:] if "ConfigMap default/config" in why}

        await eventually(lambda: asyncio.sleep(0, by_config() == {"a", "b", "c"}))
        assert not any("ConfigMap default/other" in why for _, why in recording.seen)
