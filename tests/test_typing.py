"""Static proof that every function adapter conforms to its Protocol (checked by mypy)."""

from __future__ import annotations

from typing import Any

from pyctrl import handler, predicate, reconcile, source
from pyctrl.cache import ResourceEventHandler, ResourceEventHandlerFuncs
from pyctrl.controller import Controller
from pyctrl.handler import EventHandler, Queue
from pyctrl.healthz import Checker, ping
from pyctrl.manager import Runnable
from pyctrl.metrics import WorkqueueMetrics
from pyctrl.predicate import Predicate
from pyctrl.reconcile import Reconciler, Request, Result
from pyctrl.source import Source, SyncingSource
from pyctrl.workqueue import QueueMetrics, RateLimiter, WorkQueue, default_controller_rate_limiter


async def _reconcile(request: Request) -> Result:
    return Result()


async def _feed(queue: Queue) -> None:
    queue.add(Request("ns", "name"))


def test_adapters_conform_to_their_protocols() -> None:
    """Each adapter is usable where its Protocol is expected, statically and at run time."""
    r: Reconciler = reconcile.Func(_reconcile)
    p: Predicate = predicate.Funcs()
    h: EventHandler = handler.Funcs()
    s: Source = source.Func(_feed)
    c: Source = source.Channel()
    q: Queue = WorkQueue[Request]()
    limiter: RateLimiter[Request] = default_controller_rate_limiter()
    metrics_hook: QueueMetrics = WorkqueueMetrics("typing")
    runnable: Runnable = Controller("typing-test", r)
    check: Checker = ping
    informer_handler: ResourceEventHandler[Any] = ResourceEventHandlerFuncs()
    assert isinstance(r, Reconciler)
    assert isinstance(p, Predicate)
    assert isinstance(h, EventHandler)
    assert isinstance(s, Source)
    assert isinstance(c, Source)
    assert not isinstance(c, SyncingSource)
    assert isinstance(runnable, Runnable)
    assert all(x is not None for x in (q, limiter, metrics_hook, check, informer_handler))
