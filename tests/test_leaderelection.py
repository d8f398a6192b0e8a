"""pyctrl.leaderelection: Lease-based election with client-go's timings."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from pyctrl.clock import FakeClock
from pyctrl.errors import AlreadyExistsError, APIError, ConflictError
from pyctrl.leaderelection import (
    LeaderElectionConfig,
    LeaderElectionLostError,
    LeaderElector,
)


class MemoryLeases:
    """An in-memory Lease store with resourceVersion compare-and-swap, like the API server."""

    def __init__(self) -> None:
        self.leases: dict[tuple[str, str], dict[str, Any]] = {}
        self.version = 0
        self.broken_for: set[str] = set()

    def view(self, identity: str) -> _View:
        return _View(self, identity)

    def holder(self) -> str | None:
        lease = self.leases.get(("ns", "lock"))
        return None if lease is None else lease["spec"].get("holderIdentity")


class _View:
    def __init__(self, store: MemoryLeases, identity: str) -> None:
        self.store, self.identity = store, identity

    def _check(self) -> None:
        if self.identity in self.store.broken_for:
            raise APIError(code=503, reason="ServiceUnavailable", message="partitioned")

    async def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        self._check()
        lease = self.store.leases.get((namespace, name))
        return copy.deepcopy(lease)

    async def create(self, lease: dict[str, Any]) -> dict[str, Any]:
        self._check()
        key = (lease["metadata"]["namespace"], lease["metadata"]["name"])
        if key in self.store.leases:
            raise AlreadyExistsError(code=409, reason="AlreadyExists")
        self.store.version += 1
        stored = copy.deepcopy(lease)
        stored["metadata"]["resourceVersion"] = str(self.store.version)
        self.store.leases[key] = stored
        return copy.deepcopy(stored)

    async def update(self, lease: dict[str, Any]) -> dict[str, Any]:
        self._check()
        key = (lease["metadata"]["namespace"], lease["metadata"]["name"])
        current = self.store.leases[key]
        if current["metadata"]["resourceVersion"] != lease["metadata"].get("resourceVersion"):
            raise ConflictError(code=409, reason="Conflict")
        self.store.version += 1
        stored = copy.deepcopy(lease)
        stored["metadata"]["resourceVersion"] = str(self.store.version)
        self.store.leases[key] = stored
        return copy.deepcopy(stored)


async def settle() -> None:
    """Let every runnable task progress (no time passes on the fake clock)."""
    for _ in range(50):
        await asyncio.sleep(0)


def elector(store: MemoryLeases, identity: str, clock: FakeClock, **kw: Any) -> LeaderElector:
    config = LeaderElectionConfig(name="lock", namespace="ns", identity=identity, **kw)
    return LeaderElector(store.view(identity), config, clock=clock)


async def test_first_candidate_creates_and_holds_the_lease() -> None:
    """With no Lease, the candidate creates it and leads at once."""
    store, clock = MemoryLeases(), FakeClock()
    a = elector(store, "a", clock)
    await a.acquire()
    assert a.is_leader
    assert store.holder() == "a"
    lease = store.leases[("ns", "lock")]
    assert lease["spec"]["leaseDurationSeconds"] == 15
    assert lease["spec"]["renewTime"].endswith("Z")
    assert "." in lease["spec"]["renewTime"]


async def test_follower_waits_while_the_leader_renews() -> None:
    """A second candidate stays a follower while the leader keeps renewing."""
    store, clock = MemoryLeases(), FakeClock()
    a, b = elector(store, "a", clock), elector(store, "b", clock)
    await a.acquire()
    async with asyncio.TaskGroup() as tg:
        hold = tg.create_task(a.hold())
        follower = tg.create_task(b.acquire())
        for _ in range(30):
            clock.advance(1.0)
            await settle()
        assert not follower.done()
        assert store.holder() == "a"
        hold.cancel()
        follower.cancel()


async def test_partitioned_leader_stops_before_anyone_else_takes_over() -> None:
    """A leader that cannot renew gives up within renew_deadline, before the follower leads."""
    store, clock = MemoryLeases(), FakeClock()
    a, b = elector(store, "a", clock), elector(store, "b", clock)
    await a.acquire()
    timeline: list[tuple[float, str]] = []

    async def holding() -> LeaderElectionLostError | None:
        try:
            await a.hold()
        except LeaderElectionLostError as exc:
            return exc
        return None

    async with asyncio.TaskGroup() as tg:
        hold = tg.create_task(holding())
        follower = tg.create_task(b.acquire())
        clock.advance(4.0)
        await settle()
        store.broken_for.add("a")
        partitioned_at = clock.now()
        while not (hold.done() and follower.done()):
            clock.advance(0.5)
            await settle()
            if hold.done() and not any(e == "a-lost" for _, e in timeline):
                timeline.append((clock.now(), "a-lost"))
            if follower.done() and not any(e == "b-leads" for _, e in timeline):
                timeline.append((clock.now(), "b-leads"))
            assert clock.now() < 60
    lost = hold.result()
    assert lost is not None
    assert "could not renew" in str(lost)
    lost_at = {e: t for t, e in timeline}["a-lost"]
    leads_at = {e: t for t, e in timeline}["b-leads"]
    assert lost_at <= partitioned_at + 10.0
    assert leads_at > lost_at
    assert not a.is_leader
    assert b.is_leader
    assert store.holder() == "b"


async def test_release_on_cancel_hands_over_quickly() -> None:
    """A leader that releases on cancel lets the follower lead within about a retry period."""
    store, clock = MemoryLeases(), FakeClock()
    a = elector(store, "a", clock, release_on_cancel=True)
    b = elector(store, "b", clock)
    await a.acquire()
    async with asyncio.TaskGroup() as tg:
        hold = tg.create_task(a.hold())
        follower = tg.create_task(b.acquire())
        await settle()
        hold.cancel()
        await settle()
        assert store.holder() is None
        waited = 0.0
        while not follower.done():
            clock.advance(0.5)
            waited += 0.5
            await settle()
    assert waited <= 3.0
    assert b.is_leader
    assert store.holder() == "b"
    assert store.leases[("ns", "lock")]["spec"]["leaseTransitions"] == 1


async def test_racing_candidates_never_both_lead() -> None:
    """Many candidates started together: exactly one leads."""
    store, clock = MemoryLeases(), FakeClock()
    candidates = [elector(store, f"c{i}", clock) for i in range(5)]
    async with asyncio.TaskGroup() as tg:
        tasks = [tg.create_task(c.acquire()) for c in candidates]
        await settle()
        leaders = [c for c in candidates if c.is_leader]
        assert len(leaders) == 1
        assert store.holder() == leaders[0].identity
        for task in tasks:
            task.cancel()


def test_timings_are_validated() -> None:
    """Timings that could allow two leaders are refused."""
    with pytest.raises(ValueError, match="lease_duration must be greater"):
        LeaderElectionConfig(name="x", namespace="y", lease_duration=10, renew_deadline=10)
    with pytest.raises(ValueError, match="renew_deadline must be greater"):
        LeaderElectionConfig(name="x", namespace="y", renew_deadline=2, retry_period=2)
    assert LeaderElectionConfig(name="x", namespace="y").identity
