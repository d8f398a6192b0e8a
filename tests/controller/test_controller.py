"""pyctrl.controller: workers, result handling, metrics, logging and shutdown."""

from __future__ import annotations

import asyncio
from collections import Counter
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest
from structlog.contextvars import merge_contextvars
from structlog.testing import capture_logs

from pyctrl import metrics
from pyctrl.clock import FakeClock
from pyctrl.controller import Controller, Options
from pyctrl.errors import CacheSyncTimeoutError, NotFoundError, TerminalError
from pyctrl.reconcile import Request, Result
from pyctrl.source import Channel, Func

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from pyctrl.handler import Queue


def _obj(name: str, namespace: str = "ns") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}}


class Recorder:
    """A reconciler that records calls and runs a per-call behaviour."""

    def __init__(
        self, behaviour: Callable[[Request, int], Awaitable[Result | None]] | None = None
    ) -> None:
        self.calls: list[Request] = []
        self.changed = asyncio.Condition()
        self.active: Counter[Request] = Counter()
        self.max_active_per_key = 0
        self.behaviour = behaviour

    async def reconcile(self, request: Request) -> Result | None:
        self.active[request] += 1
        self.max_active_per_key = max(self.max_active_per_key, self.active[request])
        try:
            result = None
            if self.behaviour is not None:
                result = await self.behaviour(request, self.calls.count(request))
            return result
        finally:
            self.active[request] -= 1
            async with self.changed:
                self.calls.append(request)
                self.changed.notify_all()

    async def wait_calls(self, predicate: Callable[[list[Request]], bool]) -> None:
        async with asyncio.timeout(10), self.changed:
            await self.changed.wait_for(lambda: predicate(self.calls))


@asynccontextmanager
async def running(controller: Controller) -> AsyncIterator[asyncio.Task[None]]:
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(controller.start())
        async with asyncio.timeout(10):
            await controller.wait_started()
        yield task
        task.cancel()


def _count(metric: Any, *labels: str) -> float:
    return float(metric.labels(*labels)._value.get())


async def test_each_request_is_reconciled_and_counted_as_success() -> None:
    """Requests from a source reach the reconciler and count as successes."""
    rec = Recorder()
    ctrl = Controller("ctrl-success", rec)
    channel = Channel()
    ctrl.watch(channel)
    async with running(ctrl):
        await channel.send(_obj("a"))
        await channel.send(_obj("b"))
        await rec.wait_calls(lambda c: len(c) == 2)
    assert sorted(rec.calls) == [Request("ns", "a"), Request("ns", "b")]
    assert _count(metrics.reconcile_total, "ctrl-success", "success") == 2


async def test_same_key_never_reconciled_concurrently_under_load() -> None:
    """With many workers and a flood of adds, one key never has two reconciles at once."""

    async def slow(request: Request, n: int) -> None:
        await asyncio.sleep(0.001)

    rec = Recorder(slow)
    ctrl = Controller("ctrl-concurrency", rec, options=Options(max_concurrent_reconciles=8))
    feeder_done = asyncio.Event()

    async def feed(queue: Queue) -> None:
        for i in range(2000):
            queue.add(Request("ns", f"k{i % 5}"))
            if i % 50 == 0:
                await asyncio.sleep(0)
        feeder_done.set()
        await asyncio.Event().wait()

    ctrl.watch(Func(feed))
    async with running(ctrl):
        async with asyncio.timeout(10):
            await feeder_done.wait()
        await rec.wait_calls(lambda c: len(set(c)) == 5 and ctrl.queue.statistics().depth == 0)
        await rec.wait_calls(lambda c: not any(rec.active.values()))
    assert rec.max_active_per_key == 1
    assert len(rec.calls) < 2000


async def test_burst_of_updates_collapses_into_few_reconciles() -> None:
    """100 adds of a key while it is being reconciled collapse into exactly one more reconcile."""
    in_first, burst_done = asyncio.Event(), asyncio.Event()
    seen_by_second: list[tuple[int, int]] = []
    ctrl: Controller

    async def behaviour(request: Request, n: int) -> None:
        if n == 0:
            in_first.set()
            await burst_done.wait()
        else:
            stats = ctrl.queue.statistics()
            seen_by_second.append((stats.depth, stats.blocked))

    async def burst(queue: Queue) -> None:
        queue.add(Request("ns", "a"))
        await in_first.wait()
        for _ in range(100):
            queue.add(Request("ns", "a"))
        burst_done.set()
        await asyncio.Event().wait()

    rec = Recorder(behaviour)
    ctrl = Controller("ctrl-burst", rec)
    ctrl.watch(Func(burst))
    async with running(ctrl):
        await rec.wait_calls(lambda c: len(c) == 2)
    assert len(rec.calls) == 2
    assert seen_by_second == [(0, 0)]


async def test_errors_are_retried_with_backoff_and_counted() -> None:
    """An exception requeues with backoff until success; bugs also count as panics."""

    async def flaky(request: Request, n: int) -> None:
        if n == 0:
            raise NotFoundError(code=404, reason="NotFound", message="not yet")
        if n == 1:
            raise KeyError("bug")

    rec = Recorder(flaky)
    ctrl = Controller("ctrl-errors", rec)
    channel = Channel()
    ctrl.watch(channel)
    async with running(ctrl):
        await channel.send(_obj("a"))
        await rec.wait_calls(lambda c: len(c) == 3)
    assert _count(metrics.reconcile_errors_total, "ctrl-errors") == 2
    assert _count(metrics.reconcile_panics_total, "ctrl-errors") == 1
    assert _count(metrics.reconcile_total, "ctrl-errors", "success") == 1
    assert ctrl.queue.num_requeues(Request("ns", "a")) == 0


async def test_terminal_error_is_not_retried() -> None:
    """TerminalError is counted and the request is not requeued."""

    async def terminal(request: Request, n: int) -> None:
        raise TerminalError("spec can never work")

    rec = Recorder(terminal)
    ctrl = Controller("ctrl-terminal", rec)
    channel = Channel()
    ctrl.watch(channel)
    async with running(ctrl):
        await channel.send(_obj("a"))
        await rec.wait_calls(lambda c: len(c) == 1)
    stats = ctrl.queue.statistics()
    assert (stats.retries, stats.delayed, len(rec.calls)) == (0, 0, 1)
    assert _count(metrics.terminal_reconcile_errors_total, "ctrl-terminal") == 1


async def test_requeue_after_and_requeue() -> None:
    """requeue_after brings the key back after the delay; requeue through the limiter."""

    async def requeueing(request: Request, n: int) -> Result:
        if request.name == "later":
            return Result(requeue_after=0.05) if n == 0 else Result()
        return Result(requeue=True) if n == 0 else Result()

    rec = Recorder(requeueing)
    ctrl = Controller("ctrl-requeue", rec)
    channel = Channel()
    ctrl.watch(channel)
    async with running(ctrl):
        await channel.send(_obj("later"))
        await channel.send(_obj("now"))
        await rec.wait_calls(lambda c: len(c) == 4)
    assert Counter(r.name for r in rec.calls) == {"later": 2, "now": 2}
    assert _count(metrics.reconcile_total, "ctrl-requeue", "requeue_after") == 1
    assert _count(metrics.reconcile_total, "ctrl-requeue", "requeue") == 1


async def test_reconcile_context_is_bound_in_logs() -> None:
    """Log lines from inside a reconcile carry controller, name and a reconcile id."""
    from pyctrl.log import get_logger

    async def logging(request: Request, n: int) -> None:
        get_logger().info("inside reconcile")

    rec = Recorder(logging)
    ctrl = Controller("ctrl-logs", rec, kind="MySrv")
    channel = Channel()
    ctrl.watch(channel)
    with capture_logs(processors=[merge_contextvars]) as logs:
        async with running(ctrl):
            await channel.send(_obj("a"))
            await channel.send(_obj("b"))
            await rec.wait_calls(lambda c: len(c) == 2)
    inside = [entry for entry in logs if entry["event"] == "inside reconcile"]
    assert {e["name"] for e in inside} == {"a", "b"}
    assert all(e["controller"] == "ctrl-logs" and e["kind"] == "MySrv" for e in inside)
    assert len({e["reconcile_id"] for e in inside}) == 2


async def test_reconcile_timeout_retries() -> None:
    """A reconcile exceeding reconcile_timeout is cancelled and retried."""

    async def hangs_once(request: Request, n: int) -> None:
        if n == 0:
            await asyncio.Event().wait()

    rec = Recorder(hangs_once)
    ctrl = Controller("ctrl-timeout", rec, options=Options(reconcile_timeout=0.05))
    channel = Channel()
    ctrl.watch(channel)
    async with running(ctrl):
        await channel.send(_obj("a"))
        await rec.wait_calls(lambda c: len(c) == 2)
    assert _count(metrics.reconcile_errors_total, "ctrl-timeout") == 1


async def test_shutdown_lets_in_flight_reconciles_finish() -> None:
    """Cancelling the controller waits for the reconcile in flight, then stops."""
    started, release = asyncio.Event(), asyncio.Event()
    finished: list[str] = []

    async def slow(request: Request, n: int) -> None:
        started.set()
        await release.wait()
        finished.append(request.name)

    ctrl = Controller("ctrl-drain", Recorder(slow))
    channel = Channel()
    ctrl.watch(channel)
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(ctrl.start())
        await ctrl.wait_started()
        await channel.send(_obj("a"))
        async with asyncio.timeout(5):
            await started.wait()
        task.cancel()
        await asyncio.sleep(0)  # let the cancellation reach the controller
        assert not task.done()
        release.set()
    assert finished == ["a"]
    assert task.cancelled()


async def test_shutdown_is_bounded_by_the_graceful_timeout() -> None:
    """A reconcile that never finishes is cancelled after graceful_shutdown_timeout."""
    started = asyncio.Event()

    async def stuck(request: Request, n: int) -> None:
        started.set()
        await asyncio.Event().wait()

    ctrl = Controller("ctrl-stuck", Recorder(stuck), options=Options(graceful_shutdown_timeout=0.1))
    channel = Channel()
    ctrl.watch(channel)
    task = asyncio.create_task(ctrl.start())
    await ctrl.wait_started()
    await channel.send(_obj("a"))
    async with asyncio.timeout(5):
        await started.wait()
    task.cancel()
    async with asyncio.timeout(5):
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_unsynced_source_fails_the_controller() -> None:
    """A syncing source that never syncs fails start with CacheSyncTimeoutError."""

    class NeverSyncs:
        async def start(self, queue: Queue) -> None:
            await asyncio.Event().wait()

        async def wait_for_sync(self) -> None:
            await asyncio.Event().wait()

    ctrl = Controller("ctrl-nosync", Recorder(), options=Options(cache_sync_timeout=0.05))
    ctrl.watch(NeverSyncs())
    with pytest.raises(ExceptionGroup) as info:
        await ctrl.start()
    assert info.group_contains(CacheSyncTimeoutError, match="ctrl-nosync")


def test_options_are_validated() -> None:
    """Zero workers is refused."""
    with pytest.raises(ValueError, match="at least 1"):
        Options(max_concurrent_reconciles=0)


def test_a_debounced_intake_delays_every_add_by_at_least_the_debounce_time() -> None:
    """``Options.debounce``: add, add_after and add_rate_limited all reach the queue."""
    clock = FakeClock()
    controller = Controller(
        "debounced-intake", Recorder(), options=Options(debounce=5), clock=clock
    )
    intake, queue = controller.intake, controller.queue
    intake.add(Request("ns", "now"))
    intake.add_after(Request("ns", "soon"), 1)  # debounced: no sooner than 5 s
    intake.add_after(Request("ns", "late"), timedelta(seconds=8))
    intake.add_rate_limited(Request("ns", "retry"))  # the rate limiter's delay only
    assert queue.statistics().delayed == 4
    clock.advance(4.9)
    assert [queue.get_nowait() for _ in range(len(queue))] == [Request("ns", "retry")]
    clock.advance(0.1)
    assert {queue.get_nowait() for _ in range(len(queue))} == {
        Request("ns", "now"),
        Request("ns", "soon"),
    }
    clock.advance(3)
    assert [queue.get_nowait() for _ in range(len(queue))] == [Request("ns", "late")]
