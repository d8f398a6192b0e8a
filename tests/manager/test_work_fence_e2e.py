"""The client refuses writes of work whose Lease (a shard slot's) is past its renew deadline."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import TYPE_CHECKING, Any, cast

import pytest
from kubernetes_asyncio.client import V1ConfigMap, V1ObjectMeta

from pyctrl import _executor, metrics
from pyctrl._fence import LeaseFence, fenced_by, work_fences
from pyctrl.blocking import SyncClient, run
from pyctrl.client import Client
from pyctrl.clock import Clock, FakeClock
from pyctrl.errors import LeaseLostError, NotFoundError

from ..test_shardelection import MemoryRing, elector, run_until

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from pyctrl.envtest import Environment


class _Never:
    def cancel(self) -> None:
        pass


class PausedClock:
    """A clock whose timers never run.

    A process resumed past its deadline, before any callback of its own (the fence's
    timer included) had a turn.
    """

    def __init__(self) -> None:
        self.time = 100.0

    def now(self) -> float:
        return self.time

    def call_at(self, when: float, callback: Callable[[], object]) -> _Never:
        return _Never()


def _configmap(name: str) -> V1ConfigMap:
    return V1ConfigMap(metadata=V1ObjectMeta(name=name, namespace="default"), data={"a": "b"})


def _fenced_writes(method: str) -> float:
    value = metrics.registry.get_sample_value(
        "pyctrl_lease_fenced_writes_total", {"method": method}
    )
    return value or 0.0


@pytest.fixture
async def client(env: Environment) -> AsyncIterator[Client]:
    async with Client.from_config(env.config) as c:
        yield c


async def test_a_slot_past_its_deadline_refuses_writes_from_async_and_blocking_code(
    client: Client,
) -> None:
    """Resumed past the slot's renew deadline, before its timer ran: no write goes out."""
    clock = PausedClock()
    slot = LeaseFence(10.0, clock=cast("Clock", clock), name="ns/ring-slot-0")
    slot.acquired(clock.now())
    sync = SyncClient(client)
    with fenced_by(slot):
        await client.create(_configmap("before"))  # in its term: written
        clock.time += 10.5  # the process was paused; nothing of its own has run since
        before = _fenced_writes("POST")
        with pytest.raises(LeaseLostError, match="ring-slot-0"):
            await client.create(_configmap("after-async"))
        assert _fenced_writes("POST") == before + 1

        def blocking() -> None:
            assert sync.get(V1ConfigMap, "before", "default").data == {"a": "b"}  # reads pass
            sync.create(_configmap("after-sync"))

        with pytest.raises(LeaseLostError, match="ring-slot-0"):
            await _executor.offload(blocking)
    for name in ("after-async", "after-sync"):
        with pytest.raises(NotFoundError):
            await client.get(V1ConfigMap, name, "default")
    await client.create(_configmap("unfenced"))  # outside the slot's work: not fenced


async def test_a_slot_fence_is_bound_to_the_work_it_bounds() -> None:
    """SlotElector.fence binds the slot's LeaseFence, so the client checks it."""
    clock, ring = FakeClock(), MemoryRing()
    a = elector(ring, clock, "a")
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(a.start())
        await run_until(clock, lambda: len(a.held()) == 4, 10)
        assert work_fences() == ()
        async with a.fence(2):
            assert work_fences() == (a.fence_of(2),)
        assert work_fences() == ()
        task.cancel()


async def test_blocking_calls_refuse_the_event_loop_and_cancelled_work(client: Client) -> None:
    """SyncClient on the loop would deadlock; after its task is cancelled a thread can't act."""
    sync = SyncClient(client)
    with pytest.raises(RuntimeError, match="event loop"):
        sync.get(V1ConfigMap, "x", "default")
    coro: Any = asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="threads pyctrl runs"):
        await asyncio.to_thread(run, coro)

    started = concurrent.futures.Future[None]()
    release = concurrent.futures.Future[None]()
    outcome = concurrent.futures.Future[BaseException]()

    def blocking() -> None:
        started.set_result(None)
        release.result(timeout=30)
        try:
            sync.create(_configmap("too-late"))
        except BaseException as exc:
            outcome.set_result(exc)

    task = asyncio.create_task(_executor.offload(blocking))
    await asyncio.wrap_future(started)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set_result(None)
    error = await asyncio.wrap_future(outcome)
    assert isinstance(error, concurrent.futures.CancelledError)
    with pytest.raises(NotFoundError):
        await client.get(V1ConfigMap, "too-late", "default")
