"""The slot elector on a FakeClock: fair shares, draining before release, takeover on expiry."""

from __future__ import annotations

import asyncio
import copy
import random
from typing import TYPE_CHECKING, Any

from pyctrl.clock import FakeClock
from pyctrl.errors import AlreadyExistsError, ConflictError
from pyctrl.shardelection import ShardingOptions, ShardLostError, SlotElector

if TYPE_CHECKING:
    from collections.abc import Callable

LEASE, RENEW, RETRY = 15.0, 10.0, 2.0


class MemoryRing:
    """Leases in memory, with the API server's compare-and-swap on resourceVersion."""

    def __init__(self) -> None:
        self.leases: dict[str, dict[str, Any]] = {}
        self.rv = 0

    def _stamp(self, lease: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        stored = copy.deepcopy(lease)
        stored["metadata"]["resourceVersion"] = str(self.rv)
        self.leases[stored["metadata"]["name"]] = stored
        return copy.deepcopy(stored)

    async def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        lease = self.leases.get(name)
        return copy.deepcopy(lease) if lease else None

    async def create(self, lease: dict[str, Any]) -> dict[str, Any]:
        if lease["metadata"]["name"] in self.leases:
            raise AlreadyExistsError(409, "AlreadyExists", "exists")
        return self._stamp(lease)

    async def update(self, lease: dict[str, Any]) -> dict[str, Any]:
        current = self.leases[lease["metadata"]["name"]]
        if current["metadata"]["resourceVersion"] != lease["metadata"].get("resourceVersion"):
            raise ConflictError(409, "Conflict", "stale")
        return self._stamp(lease)

    async def list(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        key, _, value = label_selector.partition("=")
        return [
            copy.deepcopy(lease)
            for lease in self.leases.values()
            if (lease["metadata"].get("labels") or {}).get(key) == value
        ]

    def holders(self) -> dict[int, str]:
        out = {}
        for lease in self.leases.values():
            slot = (lease["metadata"].get("labels") or {}).get("pyctrl.io/shard-slot")
            if slot is not None and lease["spec"].get("holderIdentity"):
                out[int(slot)] = lease["spec"]["holderIdentity"]
        return out


def elector(
    ring: MemoryRing, clock: FakeClock, identity: str, *, release: bool = True
) -> SlotElector:
    return SlotElector(
        ring,
        ShardingOptions(
            name="ring",
            namespace="ns",
            slots=4,
            lease_duration=LEASE,
            renew_deadline=RENEW,
            retry_period=RETRY,
            identity=identity,
            release_on_cancel=release,
        ),
        clock=clock,
        rng=random.Random(7),
    )


async def run_until(clock: FakeClock, check: Callable[[], bool], limit: float) -> float:
    """Advance the clock 0.1 s at a time (letting tasks run) until ``check()``; the time taken."""
    start = clock.now()
    while not check():
        assert clock.now() - start <= limit, f"not within {limit}s"
        for _ in range(10):
            await asyncio.sleep(0)
        clock.advance(0.1)
    return clock.now() - start


async def test_a_lone_replica_takes_every_slot_after_announcing_itself() -> None:
    """Alone in the ring, a replica holds every slot from its second round."""
    clock, ring = FakeClock(), MemoryRing()
    a = elector(ring, clock, "a")
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(a.start())
        took = await run_until(clock, lambda: len(a.held()) == 4, 10)
        assert RETRY <= took <= 2 * RETRY * 1.2 + 0.2
        assert ring.holders() == dict.fromkeys(range(4), "a")
        task.cancel()
    assert ring.holders() == {}  # released on the way out


async def test_surplus_is_released_only_after_its_in_flight_work() -> None:
    """A joining replica gets the surplus only once the work in flight on it has finished."""
    clock, ring = FakeClock(), MemoryRing()
    a, b = elector(ring, clock, "a"), elector(ring, clock, "b")
    async with asyncio.TaskGroup() as tg:
        tasks = [tg.create_task(a.start())]
        await run_until(clock, lambda: len(a.held()) == 4, 10)
        finish = asyncio.Event()
        entered = [asyncio.Event() for _ in range(4)]

        async def work(slot: int) -> None:
            async with a.fence(slot):
                entered[slot].set()
                await finish.wait()

        blocks = [tg.create_task(work(slot)) for slot in range(4)]
        for event in entered:
            await event.wait()
        tasks.append(tg.create_task(b.start()))
        await run_until(clock, lambda: len(a.held()) == 2, 10)  # draining: keys stop at once
        draining = set(range(4)) - a.held()
        assert not any(a.assignment.owns_slot(s) for s in draining)
        await run_until(clock, lambda: clock.now() >= 30, 40)
        assert b.held() == frozenset()  # still a's Leases: its work is in flight
        assert all(ring.holders()[s] == "a" for s in draining)
        finish.set()
        await asyncio.gather(*blocks)
        await run_until(clock, lambda: b.held() == draining, 3 * RETRY)
        assert a.held() | b.held() == set(range(4))
        for task in tasks:
            task.cancel()


async def test_a_crashed_holders_slots_are_taken_once_expired_by_the_observer() -> None:
    """Slots of a replica that stopped renewing move after lease_duration by the taker's clock."""
    clock, ring = FakeClock(), MemoryRing()
    a, b = elector(ring, clock, "a", release=False), elector(ring, clock, "b")
    async with asyncio.TaskGroup() as tg:
        crashed = tg.create_task(a.start())
        await run_until(clock, lambda: len(a.held()) == 4, 10)
        taker = tg.create_task(b.start())
        await run_until(clock, lambda: len(a.held()) == 2 and len(b.held()) == 2, 20)
        crashed.cancel()  # no release: the Leases are left to expire
        await asyncio.sleep(0)
        took = await run_until(clock, lambda: len(b.held()) == 4, 3 * LEASE)
        assert LEASE - RETRY * 1.2 <= took <= LEASE + RETRY * 1.2 + 0.2
        assert ring.holders() == dict.fromkeys(range(4), "b")
        taker.cancel()


async def test_a_slot_not_renewed_by_its_deadline_is_dropped_and_its_work_cancelled() -> None:
    """Past renew_deadline without a renewal, a slot is not held and fenced work is cancelled."""
    clock, ring = FakeClock(), MemoryRing()
    a = elector(ring, clock, "a")
    lost: list[int] = []
    a.on_slot_lost(lost.append)
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(a.start())
        await run_until(clock, lambda: len(a.held()) == 4, 10)
        ring.update = _fail  # type: ignore[method-assign]  # the API server stops answering
        ring.create = _fail  # type: ignore[method-assign]
        started = asyncio.Event()
        errors: list[Exception] = []

        async def work() -> None:
            try:
                async with a.fence(0):
                    started.set()
                    await asyncio.Event().wait()
            except ShardLostError as exc:
                errors.append(exc)

        block = tg.create_task(work())
        await started.wait()
        await run_until(clock, lambda: not a.held(), RENEW + 0.5)
        assert sorted(lost) == [0, 1, 2, 3]
        await asyncio.wait_for(block, 5)
        assert "was lost" in str(errors[0])
        task.cancel()


async def _fail(lease: dict[str, Any]) -> dict[str, Any]:
    raise OSError("connection refused")
