"""Request.cluster, a cluster's view of a controller's queue, and the per-cluster metric."""

from __future__ import annotations

import asyncio

import pytest
from kubernetes_asyncio.client import V1ConfigMap, V1ObjectMeta

from pyctrl import metrics
from pyctrl.clock import FakeClock
from pyctrl.cluster import cluster_queue
from pyctrl.controller import Controller
from pyctrl.event import CreateEvent
from pyctrl.handler import EnqueueRequestForObject
from pyctrl.reconcile import Func, Request, Result
from pyctrl.source import dispatch
from pyctrl.workqueue import TriggerKind, WorkQueue, by_cluster


def test_request_cluster_defaults_to_the_local_one() -> None:
    """Two-field Requests are the local cluster's and print as before."""
    request = Request("ns", "web")
    assert request.cluster == ""
    assert str(request) == "ns/web"
    assert request == Request("ns", "web", "")


def test_request_of_another_cluster_prints_and_parses_with_its_cluster() -> None:
    """cluster:namespace/name round-trips; the same key in two clusters is two requests."""
    request = Request("ns", "web", "east")
    assert str(request) == "east:ns/web"
    assert Request.parse("east:ns/web") == request
    assert Request.parse("east:node-1") == Request("", "node-1", "east")
    assert request != Request("ns", "web")
    assert Request("ns", "web").in_cluster("east") == request
    with pytest.raises(ValueError, match=r"\[cluster:\]namespace/name"):
        Request.parse(":ns/web")


async def test_cluster_queue_adds_the_cluster_to_requests_and_triggers() -> None:
    """An event delivered through a cluster's view enqueues that cluster's key and trigger."""
    queue: WorkQueue[Request] = WorkQueue(
        clock=FakeClock(), record_triggers=True, fairness_key=by_cluster
    )
    view = cluster_queue(queue, "east")
    obj = V1ConfigMap(metadata=V1ObjectMeta(name="web", namespace="ns", resource_version="7"))
    await dispatch(
        CreateEvent(obj), EnqueueRequestForObject(), (), view, source="ConfigMap", kind="ConfigMap"
    )
    view.add_after(Request("ns", "later"), 0)
    view.add_rate_limited(Request("ns", "retry"))
    request = queue.get_nowait()
    assert request == Request("ns", "web", "east")
    (trigger,) = queue.triggers(request).first
    assert trigger.kind == TriggerKind.CREATE
    assert trigger.source == "ConfigMap@east"
    assert queue.get_nowait() == Request("ns", "later", "east")
    assert queue.statistics().delayed == 1


async def test_reconciles_of_an_engaged_cluster_are_counted_per_cluster() -> None:
    """pyctrl_cluster_reconcile_total counts the reconciles of each engaged cluster."""
    done = asyncio.Event()

    async def reconcile(request: Request) -> Result:
        done.set()
        return Result()

    controller = Controller("count-per-cluster", Func(reconcile))
    counter = metrics.cluster_reconcile_total.labels("count-per-cluster", "west")
    before = counter._value.get()
    controller.queue.add(Request("ns", "a", "west"))
    async with asyncio.timeout(10), asyncio.TaskGroup() as tg:
        task = tg.create_task(controller.start())
        await done.wait()
        task.cancel()
    assert counter._value.get() == before + 1
