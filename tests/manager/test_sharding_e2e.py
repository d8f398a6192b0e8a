"""Sharded controllers: several managers split a ring's slots and its objects between them.

Every reconcile goes through one `Ledger`, which notes a key reconciled by two replicas
in overlapping intervals; "hot" objects requeue themselves every few milliseconds so that
reconciles are in flight whenever slots move.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import aiohttp

from pyctrl import metrics
from pyctrl._apiserver.registry.generic import RequestContext
from pyctrl.builder import controller_managed_by
from pyctrl.controller import Options as ControllerOptions
from pyctrl.manager import Manager
from pyctrl.meta import ObjectMeta
from pyctrl.reconcile import Request, Result
from pyctrl.shardelection import ShardingOptions
from pyctrl.sharding import hash_field, slot_of

from .conftest import Widget, options

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyctrl.daemon import DaemonContext
    from pyctrl.envtest import Environment

SLOTS = 12
LEASE, RENEW, RETRY = 2.5, 2.0, 0.4
# A crashed replica's last renewal is seen up to one (jittered) retry period after it was
# written, and its Leases expire lease_duration after that; the slack covers the HTTP
# round trips and scheduling on a loaded machine.
TAKEOVER_BOUND = LEASE + RETRY * 1.2 + 1.0
HOT = 40


@dataclass
class Ledger:
    """Every reconcile of every replica, and any key reconciled by two at once."""

    hot: int = 0
    """Objects ``w00000`` to ``w<hot - 1>`` requeue themselves every 0.2 s."""
    runs: dict[Request, list[str]] = field(default_factory=dict)
    active: dict[Request, str] = field(default_factory=dict)
    overlaps: list[tuple[Request, str, str]] = field(default_factory=list)


class Instrumented:
    """Notes when each reconcile starts and ends, and who else was on the key meanwhile."""

    def __init__(self, name: str, ledger: Ledger) -> None:
        self.name, self.ledger = name, ledger

    async def reconcile(self, request: Request) -> Result:
        ledger = self.ledger
        other = ledger.active.get(request)
        if other is not None:
            ledger.overlaps.append((request, other, self.name))
        ledger.active[request] = self.name
        try:
            await asyncio.sleep(0.003)  # the simulated work: a window where overlaps show
        finally:
            del ledger.active[request]
        ledger.runs.setdefault(request, []).append(self.name)
        hot = int(request.name[1:]) < ledger.hot
        return Result(requeue_after=0.2) if hot else Result()


def replica(
    env: Environment, name: str, ledger: Ledger, *, release: bool = True, slots: int = SLOTS
) -> Manager:
    """A manager in the ``widgets`` ring with an instrumented Widget controller."""
    manager = Manager(
        env.config,
        options(
            sharding=ShardingOptions(
                name="widgets",
                namespace="default",
                slots=slots,
                lease_duration=LEASE,
                renew_deadline=RENEW,
                retry_period=RETRY,
                identity=name,
                release_on_cancel=release,
            )
        ),
    )
    controller_managed_by(manager).for_(Widget).with_options(
        ControllerOptions(max_concurrent_reconciles=4, cache_sync_timeout=20)
    ).complete(Instrumented(name, ledger))
    return manager


def held(manager: Manager) -> frozenset[int]:
    """The slots a manager works on now."""
    assert manager.shards is not None
    return manager.shards.held()


async def until(check: Callable[[], bool]) -> None:
    """Wait (45 s at most) until ``check()`` holds: the state is in several managers."""
    async with asyncio.timeout(45):
        while not check():  # noqa: ASYNC110 - no single event to wait on
            await asyncio.sleep(0.02)


def split_evenly(managers: list[Manager]) -> Callable[[], bool]:
    """Every slot held, each replica holding its fair share."""

    def check() -> bool:
        sets = [held(m) for m in managers]
        low, high = SLOTS // len(managers), -(-SLOTS // len(managers))
        return len(frozenset().union(*sets)) == SLOTS and all(low <= len(s) <= high for s in sets)

    return check


async def store_widgets(env: Environment, count: int, start: int = 0) -> dict[Request, int]:
    """Create Widgets ``start`` to ``count - 1`` in the embedded server (quicker than HTTP).

    They are committed as any write is, so every watch sees them; only the client side
    of the HTTP round trip is skipped, to keep the 3,000-object test quick on a busy
    machine.
    """
    assert env.server is not None
    rt = env.server.registry.lookup("test.pyctrl.dev", "v1", "widgets")
    assert rt is not None
    widgets = env.server.stores.for_type(rt)
    slots: dict[Request, int] = {}
    for i in range(start, count):
        made = await widgets.create(
            RequestContext(), "default", {"metadata": {"name": f"w{i:05d}"}, "spec": {}}
        )
        slots[Request("default", f"w{i:05d}")] = slot_of(hash_field(made["metadata"]["uid"]), SLOTS)
        if i % 20 == 19:
            await asyncio.sleep(0)  # let the watches, renewals and reconciles run meanwhile
    return slots


async def create_widgets(manager: Manager, count: int) -> dict[Request, int]:
    """Create ``count`` Widgets; return the slot of each one's request."""
    limit = asyncio.Semaphore(32)
    slots: dict[Request, int] = {}

    async def create(i: int) -> None:
        async with limit:
            made = await manager.client.create(
                Widget(metadata=ObjectMeta(name=f"w{i:05d}", namespace="default"))
            )
        slots[Request("default", f"w{i:05d}")] = slot_of(hash_field(str(made.metadata.uid)), SLOTS)

    await asyncio.gather(*(create(i) for i in range(count)))
    return slots


def owners(managers: dict[str, Manager]) -> dict[int, str]:
    """Which replica holds each slot now."""
    return {slot: name for name, m in managers.items() for slot in held(m)}


async def test_three_replicas_split_the_slots_and_reconcile_each_object_once(
    env: Environment,
) -> None:
    """3 managers over 3,000 objects: an even split, and each object reconciled by one."""
    ledger = Ledger()
    managers = {f"r{i}": replica(env, f"r{i}", ledger) for i in range(3)}
    async with asyncio.TaskGroup() as tg:
        tasks = [tg.create_task(m.start()) for m in managers.values()]
        await until(split_evenly(list(managers.values())))
        slots = await store_widgets(env, 3000)
        await until(lambda: len(ledger.runs) == 3000)
        holder = owners(managers)
        assert sorted(len(held(m)) for m in managers.values()) == [4, 4, 4]
        for request, who in ledger.runs.items():
            assert set(who) == {holder[slots[request]]}, request
        for name, manager in managers.items():
            cached = await manager.cache.list(Widget, namespace="default")
            assert len(cached.items) == sum(1 for s in slots.values() if holder[s] == name)
            widget = cached.items[0]  # typed: what a per-object daemon asks about
            assert [m.shards.is_mine(widget) for m in managers.values() if m.shards] == [
                other == name for other in managers
            ]
        assert filtering() == 1.0
        assert not ledger.overlaps
        for task in tasks:
            task.cancel()


async def test_a_crashed_replicas_slots_and_objects_move_to_the_others(env: Environment) -> None:
    """A replica killed without releasing: its slots move within lease + retry, objects rerun."""
    ledger = Ledger(hot=HOT)
    managers = {
        "r0": replica(env, "r0", ledger),
        "r1": replica(env, "r1", ledger),
        "r2": replica(env, "r2", ledger, release=False),
    }
    async with asyncio.TaskGroup() as tg:
        tasks = {name: tg.create_task(m.start()) for name, m in managers.items()}
        await until(split_evenly(list(managers.values())))
        slots = await create_widgets(managers["r0"], 900)
        await until(lambda: len(ledger.runs) == 900)
        lost = held(managers["r2"])
        victims = [r for r, s in slots.items() if s in lost]

        managers["r2"].force_stop()
        tasks["r2"].cancel()  # a crash: the Leases are left to expire
        crashed = time.monotonic()
        await asyncio.wait([tasks["r2"]])
        runs_before = {r: len(ledger.runs[r]) for r in victims}
        survivors = [managers["r0"], managers["r1"]]
        await until(lambda: len(held(survivors[0]) | held(survivors[1])) == SLOTS)
        took_over = time.monotonic() - crashed

        await until(lambda: all(len(ledger.runs[r]) > runs_before[r] for r in victims))
        assert took_over <= TAKEOVER_BOUND, took_over
        await until(split_evenly(survivors))
        for request in victims:
            assert set(ledger.runs[request][runs_before[request] :]) <= {"r0", "r1"}
        assert not ledger.overlaps
        for name in ("r0", "r1"):
            tasks[name].cancel()


async def test_an_added_replica_takes_a_third_of_the_slots_without_overlap(
    env: Environment,
) -> None:
    """A third replica joining two takes about a third of the slots, drained before moving."""
    ledger = Ledger(hot=HOT)
    managers = {"r0": replica(env, "r0", ledger), "r1": replica(env, "r1", ledger)}
    async with asyncio.TaskGroup() as tg:
        tasks = [tg.create_task(m.start()) for m in managers.values()]
        await until(split_evenly(list(managers.values())))
        slots = await create_widgets(managers["r0"], 900)
        await until(lambda: len(ledger.runs) == 900)
        before = owners(managers)
        given_up: list[int] = []
        for manager in managers.values():
            assert manager.shards is not None
            manager.shards.on_slot_lost(given_up.append)

        managers["r2"] = replica(env, "r2", ledger)
        tasks.append(tg.create_task(managers["r2"].start()))
        await until(split_evenly(list(managers.values())))
        after = owners(managers)
        moved = {slot for slot in range(SLOTS) if before[slot] != after[slot]}
        assert len(moved) == SLOTS // 3
        assert all(after[slot] == "r2" for slot in moved)
        assert sorted(given_up) == sorted(moved)
        arrived = [r for r, s in slots.items() if s in moved]
        await until(lambda: all("r2" in ledger.runs[r] for r in arrived))
        assert not ledger.overlaps
        for task in tasks:
            task.cancel()


async def test_without_server_side_sharding_replicas_filter_by_themselves(
    env: Environment,
) -> None:
    """A server that ignores shardSelector: each replica still caches and reconciles its own."""
    assert env.server is not None
    env.server.sharded_list_and_watch = False  # a server before 1.36, or the gate off
    ledger = Ledger()
    managers = {f"r{i}": replica(env, f"r{i}", ledger) for i in range(2)}
    async with asyncio.TaskGroup() as tg:
        tasks = [tg.create_task(m.start()) for m in managers.values()]
        await until(split_evenly(list(managers.values())))
        slots = await create_widgets(managers["r0"], 600)
        await until(lambda: len(ledger.runs) == 600)
        holder = owners(managers)
        for request, who in ledger.runs.items():
            assert set(who) == {holder[slots[request]]}
        for name, manager in managers.items():
            cached = await manager.cache.list(Widget, namespace="default")
            assert len(cached.items) == sum(1 for s in slots.values() if holder[s] == name)
        assert filtering() == 0.0
        assert not ledger.overlaps
        for task in tasks:
            task.cancel()


def filtering() -> float | None:
    """``pyctrl_shard_server_filtering`` of Widgets: 1 server side, 0 client side."""
    return metrics.registry.get_sample_value(
        "pyctrl_shard_server_filtering", {"gvk": "test.pyctrl.dev/v1/Widget"}
    )


async def test_readyz_fails_while_a_replica_holds_no_slot(env: Environment) -> None:
    """/readyz reports the shards check failing on a replica that holds no slot."""
    ledger = Ledger()
    first = replica(env, "r0", ledger, slots=1)
    second = Manager(
        env.config,
        options(
            health_probe_bind_address="127.0.0.1:0",
            sharding=ShardingOptions(
                name="widgets",
                namespace="default",
                slots=1,
                identity="r1",
                lease_duration=LEASE,
                renew_deadline=RENEW,
                retry_period=RETRY,
            ),
        ),
    )
    async with asyncio.TaskGroup() as tg:
        tasks = [tg.create_task(first.start())]
        await until(lambda: held(first) == {0})
        tasks.append(tg.create_task(second.start()))
        await second.wait_started()
        assert second.probe_server is not None
        shards = second.shards
        assert shards is not None
        await until(lambda: len(shards.members()) == 2)
        url = f"http://127.0.0.1:{second.probe_server.port}/readyz?verbose"
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            body = await response.text()
        assert response.status == 500
        assert "[-]shards failed: shard ring widgets: this replica holds no slot yet" in body
        for task in tasks:
            task.cancel()


async def test_slots_lapsed_in_a_stalled_process_come_back_with_all_their_objects(
    env: Environment,
) -> None:
    """A process stalled past the renew deadline stops work on its slots, then resumes it all."""
    ledger = Ledger()
    managers = {f"r{i}": replica(env, f"r{i}", ledger) for i in range(2)}
    lost = metrics.registry.get_sample_value(
        "pyctrl_shard_slot_moves_total", {"ring": "widgets", "direction": "lost"}
    )
    async with asyncio.TaskGroup() as tg:
        tasks = [tg.create_task(m.start()) for m in managers.values()]
        await until(split_evenly(list(managers.values())))
        await store_widgets(env, 150)
        # The whole process stops (GC pause, CPU starvation): every slot's validity runs
        # out by the monotonic clock before anything can renew it.
        time.sleep(RENEW + 0.2)  # noqa: ASYNC251 - the stall is the point
        await store_widgets(env, 300, start=150)
        await until(lambda: len(ledger.runs) == 300)
        await until(split_evenly(list(managers.values())))
        assert not ledger.overlaps
        for task in tasks:
            task.cancel()
    after = metrics.registry.get_sample_value(
        "pyctrl_shard_slot_moves_total", {"ring": "widgets", "direction": "lost"}
    )
    assert (after or 0) >= (lost or 0) + SLOTS


async def test_daemons_run_on_the_replica_holding_their_object(env: Environment) -> None:
    """A per-object daemon runs where its object's slot is held, and stops when it moves."""
    ledger = Ledger()
    running: dict[str, set[str]] = {}

    def with_daemon(name: str) -> Manager:
        manager = replica(env, name, Ledger())
        mine: set[str] = running.setdefault(name, set())

        async def watch_widget(ctx: DaemonContext[Widget]) -> None:
            mine.add(ctx.request.name)
            try:
                await ctx.wait_stopping()
            finally:
                mine.discard(ctx.request.name)

        controller_managed_by(manager).for_(Widget).named("daemons").daemon(watch_widget).complete(
            Instrumented(name, ledger)
        )
        return manager

    managers = {name: with_daemon(name) for name in ("r0", "r1")}
    async with asyncio.TaskGroup() as tg:
        tasks = [tg.create_task(m.start()) for m in managers.values()]
        await until(split_evenly(list(managers.values())))
        slots = await create_widgets(managers["r0"], 60)

        def placed() -> bool:
            holder = owners(managers)
            return all(
                running[name] == {r.name for r, s in slots.items() if holder.get(s) == name}
                for name in managers
            )

        await until(placed)
        managers["r2"] = with_daemon("r2")
        tasks.append(tg.create_task(managers["r2"].start()))
        await until(split_evenly(list(managers.values())))
        await until(placed)
        assert not set.intersection(*running.values())
        for task in tasks:
            task.cancel()
