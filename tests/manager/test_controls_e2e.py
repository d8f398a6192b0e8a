"""The controller's last controls end to end: on_error, timeouts, priorities, new_queue."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, ClassVar

from kubernetes_asyncio.client import V1ConfigMap, V1ObjectMeta

from pyctrl import metrics
from pyctrl.builder import controller_managed_by
from pyctrl.client import MergePatch
from pyctrl.controller import Options, triggers
from pyctrl.errors import TerminalError
from pyctrl.handler import EnqueueRequestsFromMapFunc
from pyctrl.manager import Manager
from pyctrl.meta import Condition, ObjectMeta, set_status_condition
from pyctrl.predicate import GenerationChanged
from pyctrl.reconcile import Request, Result
from pyctrl.testing import running
from pyctrl.workqueue import RateLimiter, Trigger, WorkQueue, event_trigger

from .conftest import Widget, options

if TYPE_CHECKING:
    from datetime import timedelta

    from pyctrl.envtest import Environment


def _widget(name: str) -> Widget:
    return Widget(metadata=ObjectMeta(name=name, namespace="default"))


def _sample(name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


class Calls:
    """Hands each reconcile's request, its triggers' kind and the object's status to the test."""

    def __init__(self, manager: Manager, outcomes: list[Any]) -> None:
        self.reader = manager.api_reader  # the status as written, not as cached yet
        self.outcomes = outcomes
        self.seen: asyncio.Queue[tuple[Request, str, list[str]]] = asyncio.Queue()

    async def reconcile(self, request: Request) -> Result | None:
        widget = await self.reader.get(Widget, request.name, request.namespace)
        reasons = [c.reason for c in widget.status.conditions]
        await self.seen.put((request, triggers().kind, reasons))
        outcome = self.outcomes.pop(0) if self.outcomes else Result()
        if isinstance(outcome, Exception):
            raise outcome
        if isinstance(outcome, asyncio.Event):
            await outcome.wait()
            return None
        result: Result = outcome
        return result

    async def next(self) -> tuple[Request, str, list[str]]:
        async with asyncio.timeout(20):
            return await self.seen.get()


async def test_on_error_writes_status_before_the_requeue_it_chooses(env: Environment) -> None:
    """The hook gets the request and exception, its status write is seen by the retry it chose."""
    manager = Manager(env.config, options())
    hooked: list[tuple[Request, str]] = []
    both = asyncio.Event()

    async def on_error(request: Request, exc: Exception) -> Result | None:
        hooked.append((request, str(exc)))
        if len(hooked) == 2:
            both.set()
        widget = await manager.client.get(Widget, request.name, request.namespace)
        condition = Condition(
            type="Ready", status="False", reason=f"Failed{len(hooked)}", message=str(exc)
        )
        set_status_condition(widget.status.conditions, condition)
        await manager.client.status().update(widget)
        # First failure: retry after 10 ms; the terminal one cannot be retried anyway.
        return Result(requeue_after=0.01) if len(hooked) == 1 else Result()

    calls = Calls(manager, [RuntimeError("first"), TerminalError("second")])
    (
        controller_managed_by(manager)
        # The hook's status writes must not queue reconciles of their own.
        .for_(Widget, GenerationChanged())
        .named("ctl-on-error")
        .with_options(Options(on_error=on_error))
        .complete(calls)
    )
    async with running(manager):
        widget = await manager.client.create(_widget("e"))
        first = await calls.next()
        second = await calls.next()
        async with asyncio.timeout(20):
            await both.wait()
        # The next reconcile comes from the next event: the terminal error was not retried.
        await manager.client.patch(widget, MergePatch({"spec": {"size": 2}}))
        third = await calls.next()
    assert first == (Request("default", "e"), "create", [])
    # The retry was queued by the hook's choice, after the hook's status write.
    assert second == (Request("default", "e"), "retry", ["Failed1"])
    assert third == (Request("default", "e"), "update", ["Failed2"])
    assert hooked == [(Request("default", "e"), "first"), (Request("default", "e"), "second")]


async def test_on_error_returning_result_stops_retries(env: Environment) -> None:
    """An on_error that returns Result() drops the request instead of retrying it."""
    manager = Manager(env.config, options())
    done = asyncio.Event()

    async def on_error(request: Request, exc: Exception) -> Result:
        done.set()
        return Result()

    calls = Calls(manager, [RuntimeError("once")])
    (
        controller_managed_by(manager)
        .for_(Widget)
        .named("ctl-no-retry")
        .with_options(Options(on_error=on_error))
        .complete(calls)
    )
    async with running(manager):
        widget = await manager.client.create(_widget("n"))
        await calls.next()
        async with asyncio.timeout(20):
            await done.wait()
        # The next reconcile comes from the next event, not from a retry.
        await manager.client.patch(widget, MergePatch({"spec": {"size": 2}}))
        _, kind, _ = await calls.next()
    assert kind == "update"


async def test_a_reconcile_timeout_is_counted_and_retried(env: Environment) -> None:
    """reconcile_timeout cancels a stuck reconcile, counts it, and the retry follows."""
    manager = Manager(env.config, options())
    never = asyncio.Event()
    calls = Calls(manager, [never])
    before = _sample("controller_runtime_reconcile_timeouts_total", controller="ctl-timeout")
    errors = _sample("controller_runtime_reconcile_errors_total", controller="ctl-timeout")
    (
        controller_managed_by(manager)
        .for_(Widget)
        .named("ctl-timeout")
        .with_options(Options(reconcile_timeout=0.2))
        .complete(calls)
    )
    async with running(manager):
        await manager.client.create(_widget("t"))
        await calls.next()
        _, kind, _ = await calls.next()
    assert kind == "retry"
    assert _sample("controller_runtime_reconcile_timeouts_total", controller="ctl-timeout") == (
        before + 1
    )
    assert _sample("controller_runtime_reconcile_errors_total", controller="ctl-timeout") == (
        errors + 1
    )


class RecordingQueue(WorkQueue[Request]):
    """A workqueue that remembers the priority of every add, made by new_queue."""

    made: ClassVar[list[tuple[str, RateLimiter[Request] | None]]] = []

    def __init__(self, name: str, rate_limiter: RateLimiter[Request] | None) -> None:
        super().__init__(name=name, rate_limiter=rate_limiter, record_triggers=True)
        self.made.append((name, rate_limiter))
        self.priorities: list[tuple[str, int]] = []

    def add(self, key: Request, *, priority: int = 0, trigger: Trigger | None = None) -> None:
        # A handler's bare add records the trigger of the event it handles.
        trigger = trigger or event_trigger.get()
        self.priorities.append((trigger.kind if trigger else "", priority))
        super().add(key, priority=priority, trigger=trigger)

    def add_after(
        self,
        key: Request,
        delay: float | timedelta,
        *,
        priority: int = 0,
        trigger: Trigger | None = None,
    ) -> None:
        self.priorities.append((trigger.kind if trigger else "", priority))
        super().add_after(key, delay, priority=priority, trigger=trigger)


async def test_result_and_handler_priorities_reach_the_queue_new_queue_built(
    env: Environment,
) -> None:
    """new_queue builds the queue; Result(priority) and a handler's priority are its adds'."""
    manager = Manager(env.config, options())
    RecordingQueue.made.clear()
    calls = Calls(manager, [Result(requeue_after=0.01, priority=5)])

    def owners(cm: V1ConfigMap) -> list[Request]:
        return [Request("default", cm.metadata.labels["widget"])]

    controller = (
        controller_managed_by(manager)
        .for_(Widget)
        .watches(V1ConfigMap, EnqueueRequestsFromMapFunc(owners, priority=7))
        .named("ctl-priority")
        .with_options(Options(new_queue=RecordingQueue))
        .complete(calls)
    )
    assert isinstance(controller.queue, RecordingQueue)
    assert RecordingQueue.made == [("ctl-priority", None)]
    async with running(manager):
        await manager.client.create(_widget("p"))
        await calls.next()
        await calls.next()  # the requeue_after
        cm = V1ConfigMap(
            metadata=V1ObjectMeta(name="p-cm", namespace="default", labels={"widget": "p"})
        )
        await manager.client.create(cm)
        _, kind, _ = await calls.next()
    assert kind == "create"
    assert controller.queue.priorities == [("create", 0), ("requeue_after", 5), ("create", 7)]
