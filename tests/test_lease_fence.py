"""pyctrl.leaderelection.LeaseFence: Lease-held work stops by the local monotonic clock."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from pyctrl import metrics
from pyctrl.client import Client, RESTClient
from pyctrl.clock import FakeClock, TimerHandle
from pyctrl.controller import Controller
from pyctrl.envtest import Environment
from pyctrl.errors import LeaseLostError, NotFoundError
from pyctrl.leaderelection import LeaderElectionConfig, LeaderElector, LeaseFence
from pyctrl.reconcile import Request, Result
from pyctrl.source import Channel
from tests.test_leaderelection import MemoryLeases, settle

if TYPE_CHECKING:
    from collections.abc import Callable

from kubernetes_asyncio.client import V1ConfigMap, V1ObjectMeta


class _NeverFires:
    def cancel(self) -> None:
        pass


class FrozenTimers(FakeClock):
    """A FakeClock whose timers never fire: a process whose own timer has not run yet."""

    __slots__ = ()

    def call_at(self, when: float, callback: Callable[[], object]) -> TimerHandle:
        return _NeverFires()


async def test_term_ends_at_renew_deadline_after_the_last_renew_started() -> None:
    """The fence is valid until start of the last renew + renew deadline, then lost for good."""
    clock = FakeClock(100.0)
    fence = LeaseFence(10.0, clock=clock, name="ns/lock")
    fence.acquired(100.0)
    clock.advance(6.0)
    assert fence.renewed(105.0)
    assert fence.deadline == 115.0
    clock.set(114.999)
    assert fence.valid()
    fence.raise_if_lost()
    clock.set(115.0)
    assert not fence.valid()
    assert fence.lost
    with pytest.raises(LeaseLostError, match=r"ns/lock.*10s renew deadline"):
        fence.raise_if_lost()
    # A renewal whose answer arrives after the deadline does not revive the term.
    assert not fence.renewed(114.0)
    assert fence.lost


async def test_the_check_reads_the_clock_and_needs_no_timer_or_task() -> None:
    """With no timer or renewing task run since the pause, the first check sees the expiry."""
    clock = FrozenTimers()
    fence = LeaseFence(10.0, clock=clock)
    fence.acquired(0.0)
    clock.advance(25.0)  # a SIGSTOP of 25 s: nothing of the process ran meanwhile
    with pytest.raises(LeaseLostError):
        fence.raise_if_lost()


async def test_timer_ends_the_term_and_runs_callbacks_and_wakes_waiters() -> None:
    """At the deadline the fence's own timer runs on_lost callbacks and wakes wait_lost."""
    clock = FakeClock()
    fence = LeaseFence(3.0, clock=clock)
    calls: list[float] = []
    fence.on_lost(lambda: calls.append(clock.now()))
    fence.acquired(0.0)
    waiter = asyncio.ensure_future(fence.wait_lost())
    await settle()
    assert not waiter.done()
    clock.advance(2.0)
    assert calls == []
    clock.advance(1.0)
    assert calls == [3.0]  # synchronously, from the timer
    await asyncio.wait_for(waiter, 5)
    late: list[bool] = []
    fence.on_lost(lambda: late.append(True))
    assert late == [True]  # registered after the end: runs at once


async def test_idle_fence_fences_nothing_and_a_new_acquire_opens_a_new_term() -> None:
    """Before any acquire nothing is refused; after a loss, only acquired() reopens."""
    clock = FakeClock()
    fence = LeaseFence(2.0, clock=clock)
    fence.raise_if_lost()
    assert not fence.valid()
    assert not fence.lost
    fence.acquired(0.0)
    fence.release()
    with pytest.raises(LeaseLostError, match="released"):
        fence.raise_if_lost()
    fence.acquired(clock.now())
    assert fence.valid()
    fence.raise_if_lost()


def test_renew_deadline_must_be_positive() -> None:
    """A fence without a positive renew deadline is refused."""
    with pytest.raises(ValueError, match="renew_deadline must be positive"):
        LeaseFence(0.0)


async def test_elector_counts_from_the_start_of_the_request() -> None:
    """The elector feeds its fence with the time the acquiring request started, not ended."""
    store, clock = MemoryLeases(), FakeClock(50.0)
    view = store.view("a")
    original = view.create

    async def slow_create(lease: dict[str, Any]) -> dict[str, Any]:
        clock.advance(4.0)
        return await original(lease)

    view.create = slow_create  # type: ignore[method-assign]
    config = LeaderElectionConfig(name="lock", namespace="ns", identity="a", renew_deadline=10)
    elector = LeaderElector(view, config, clock=clock)
    await elector.acquire()
    assert elector.fence.deadline == 60.0


async def test_elector_fence_expires_while_the_hold_task_sleeps() -> None:
    """A partitioned leader's fence closes at the deadline, and hold() then raises."""
    store, clock = MemoryLeases(), FakeClock()
    config = LeaderElectionConfig(name="lock", namespace="ns", identity="a")
    elector = LeaderElector(store.view("a"), config, clock=clock)
    await elector.acquire()
    store.broken_for.add("a")
    hold = asyncio.ensure_future(elector.hold())
    while not hold.done():
        clock.advance(0.5)
        await settle()
        assert clock.now() <= 12.0
        if clock.now() >= 10.0:
            assert elector.fence.lost
    with pytest.raises(Exception, match="could not renew"):
        hold.result()


async def test_controller_starts_no_reconcile_and_cancels_in_flight_ones_on_loss() -> None:
    """At the fence's deadline the in-flight reconcile is cancelled; later requests never run."""
    clock = FakeClock()
    fence = LeaseFence(5.0, clock=clock)
    fence.acquired(0.0)
    started: list[Request] = []
    in_flight = asyncio.Event()
    cancelled = asyncio.Event()

    class Slow:
        async def reconcile(self, request: Request) -> Result:
            started.append(request)
            in_flight.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return Result()

    ctrl = Controller("ctrl-fenced", Slow(), clock=clock, fence=fence)
    channel = Channel()
    ctrl.watch(channel)
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(ctrl.start())
        async with asyncio.timeout(10):
            await ctrl.wait_started()
            await channel.send({"metadata": {"name": "a", "namespace": "ns"}})
            await in_flight.wait()
        clock.advance(5.0)
        async with asyncio.timeout(10):
            await cancelled.wait()
        await channel.send({"metadata": {"name": "b", "namespace": "ns"}})
        await settle()
        assert started == [Request("ns", "a")]
        task.cancel()


async def test_worker_checks_the_clock_itself_before_each_reconcile() -> None:
    """With the fence's timer not yet run, a worker still refuses to start a reconcile."""
    clock = FrozenTimers()
    fence = LeaseFence(5.0, clock=clock)
    fence.acquired(0.0)
    started: list[Request] = []

    class Record:
        async def reconcile(self, request: Request) -> Result:
            started.append(request)
            return Result()

    ctrl = Controller("ctrl-fenced-check", Record(), clock=clock, fence=fence)
    channel = Channel()
    ctrl.watch(channel)
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(ctrl.start())
        async with asyncio.timeout(10):
            await ctrl.wait_started()
        clock.advance(6.0)
        await channel.send({"metadata": {"name": "a", "namespace": "ns"}})
        await settle()
        assert started == []
        assert len(ctrl.queue) == 1  # kept for whoever leads next
        task.cancel()


async def test_client_refuses_writes_once_the_fence_is_lost() -> None:
    """After the fence closes every write raises LeaseLostError unsent and is counted."""
    clock = FakeClock()
    fence = LeaseFence(5.0, clock=clock, name="default/leader")
    fence.acquired(0.0)
    refused = metrics.lease_fenced_writes_total.labels("POST")
    before = refused._value.get()
    async with Environment() as env, Client.from_config(env.config, fence=fence) as client:
        kept = await client.create(
            V1ConfigMap(metadata=V1ObjectMeta(name="kept", namespace="default"))
        )
        clock.advance(5.0)
        fresh = V1ConfigMap(metadata=V1ObjectMeta(name="fenced", namespace="default"))
        writes = [
            client.create(fresh),
            client.update(kept),
            client.delete(kept),
            client.status().update(kept),
        ]
        for write in writes:
            with pytest.raises(LeaseLostError, match="default/leader"):
                await write
        assert refused._value.get() == before + 1
        with pytest.raises(NotFoundError):
            await client.get(V1ConfigMap, "fenced", "default")
        assert (await client.get(V1ConfigMap, "kept", "default")).metadata.name == "kept"


class ClosesAfterFirstCheck(LeaseFence):
    """A fence that passes the check before sending and fails the one as the body goes out."""

    __slots__ = ("checks",)

    def __init__(self) -> None:
        super().__init__(10.0, clock=FakeClock(), name="default/leader")
        self.checks = 0

    def raise_if_lost(self) -> None:
        self.checks += 1
        if self.checks > 1:
            raise LeaseLostError("the hold on default/leader is lost: paused")


async def test_a_write_is_checked_again_in_the_step_that_sends_its_body() -> None:
    """A fence closing after the first check still stops the body: nothing reaches the server."""
    fence = ClosesAfterFirstCheck()
    async with Environment() as env, RESTClient(env.config) as rest:
        body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"late"}}'
        with pytest.raises(LeaseLostError, match="paused"):
            await rest.request(
                "POST",
                "/api/v1/namespaces/default/configmaps",
                body=body,
                content_type="application/json",
                fence=fence,
            )
        assert fence.checks == 2
        with pytest.raises(NotFoundError):
            await rest.request("GET", "/api/v1/namespaces/default/configmaps/late")
        # The connection is not poisoned: the next request goes through.
        await rest.request(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            body=body,
            content_type="application/json",
        )
