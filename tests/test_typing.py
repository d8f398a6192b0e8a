"""Static proof that every function adapter conforms to its Protocol (checked by mypy)."""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio.client import V1ConfigMap, V1Secret

from pyctrl import handler, predicate, reconcile, source
from pyctrl.builder import controller_managed_by
from pyctrl.cache import ResourceEventHandler, ResourceEventHandlerFuncs
from pyctrl.controller import Controller
from pyctrl.envtest import Environment
from pyctrl.handler import EventHandler, Queue
from pyctrl.healthz import Checker, ping
from pyctrl.manager import Manager, Options, Runnable
from pyctrl.metrics import WorkqueueMetrics
from pyctrl.predicate import Predicate
from pyctrl.reconcile import ObjectReconciler, Reconciler, Request, Result, as_reconciler
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


class _ConfigMapReconciler:
    async def reconcile_object(self, obj: V1ConfigMap) -> Result | None:
        del obj
        return None


async def test_object_reconcilers_are_typed_by_the_for_type() -> None:
    """complete() takes an ObjectReconciler of the for_ type; mypy refuses one of another type."""
    async with Environment() as env:
        manager = Manager(env.config, Options(metrics_bind_address="0"))
        typed: ObjectReconciler[V1ConfigMap] = _ConfigMapReconciler()
        assert isinstance(typed, ObjectReconciler)
        built = controller_managed_by(manager).for_(V1ConfigMap).complete(_ConfigMapReconciler())
        assert built.name == "configmap"
        secrets = controller_managed_by(manager).for_(V1Secret)
        # The ignore is the proof (mypy --strict warns of unused ignores): a V1ConfigMap
        # reconciler is not an ObjectReconciler[V1Secret]. Python cannot tell at run time.
        secrets.complete(_ConfigMapReconciler())  # type: ignore[arg-type]
        adapted = as_reconciler(manager.cache, V1ConfigMap, _ConfigMapReconciler())
        assert isinstance(adapted, Reconciler)
