"""Leader election between managers on the embedded API server."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import pytest

from pyctrl.builder import controller_managed_by
from pyctrl.client import RESTClient
from pyctrl.leaderelection import LeaderElectionLostError, RESTLeaseStore
from pyctrl.manager import Manager
from pyctrl.meta import ObjectMeta
from pyctrl.reconcile import Request, Result

from .conftest import Widget, options

if TYPE_CHECKING:
    from pyctrl.envtest import Environment

LEASE, RENEW, RETRY = 2.0, 1.5, 0.25
# The follower observes the leader's last renewal up to one retry period (jittered by
# up to 1.2) after it, and notices the expiry up to one more after that; the rest is
# the HTTP round trips of a get and an update, and scheduling on a busy test machine.
FAILOVER_BOUND = LEASE + 2 * RETRY * 1.2 + 0.25


class Counting:
    """Records which manager reconciled what."""

    def __init__(self, name: str, log: list[tuple[str, Request]]) -> None:
        self.name, self.log = name, log
        self.reconciled = asyncio.Event()

    async def reconcile(self, request: Request) -> Result:
        self.log.append((self.name, request))
        self.reconciled.set()
        return Result()


def _manager(
    env: Environment, name: str, log: list[tuple[str, Request]], release: bool
) -> tuple[Manager, Counting]:
    manager = Manager(
        env.config,
        options(
            leader_election=True,
            leader_election_id="widgets-leader",
            leader_election_namespace="default",
            lease_duration=LEASE,
            renew_deadline=RENEW,
            retry_period=RETRY,
            leader_election_release_on_cancel=release,
            identity=name,
        ),
    )
    counting = Counting(name, log)
    controller_managed_by(manager).for_(Widget).complete(counting)
    return manager, counting


async def test_failover_within_lease_duration_plus_retry_period(env: Environment) -> None:
    """A dead leader's Lease passes on within lease duration plus retry period."""
    log: list[tuple[str, Request]] = []
    (a, rec_a), (b, rec_b) = _manager(env, "a", log, False), _manager(env, "b", log, False)
    async with asyncio.TaskGroup() as tg:
        task_a = tg.create_task(a.start())
        async with asyncio.timeout(20):
            await a.elected()
        task_b = tg.create_task(b.start())
        await a.client.create(Widget(metadata=ObjectMeta(name="w", namespace="default")))
        async with asyncio.timeout(20):
            await rec_a.reconciled.wait()
            await b.wait_started()
        assert b.elector is not None
        assert not b.elector.is_leader
        assert all(who == "a" for who, _ in log)
        task_a.cancel()
        stopped = time.monotonic()
        async with asyncio.timeout(20):
            await b.elected()
        took = time.monotonic() - stopped
        assert took <= FAILOVER_BOUND, took
        async with asyncio.timeout(20):
            await rec_b.reconciled.wait()
        task_b.cancel()


async def test_release_on_cancel_hands_over_at_once(env: Environment) -> None:
    """A leader releasing its Lease on shutdown lets the next one lead within a retry period."""
    log: list[tuple[str, Request]] = []
    (a, _), (b, _) = _manager(env, "a", log, True), _manager(env, "b", log, True)
    async with asyncio.TaskGroup() as tg:
        task_a = tg.create_task(a.start())
        async with asyncio.timeout(20):
            await a.elected()
        task_b = tg.create_task(b.start())
        async with asyncio.timeout(20):
            await b.wait_started()
        task_a.cancel()
        stopped = time.monotonic()
        async with asyncio.timeout(20):
            await b.elected()
        assert time.monotonic() - stopped < LEASE
        task_b.cancel()


async def test_losing_the_lease_stops_the_manager_with_an_error(env: Environment) -> None:
    """Another holder taking the Lease stops the leader, stuck reconcile and all, with an error."""
    manager = Manager(
        env.config,
        options(
            leader_election=True,
            leader_election_id="widgets-leader",
            leader_election_namespace="default",
            lease_duration=LEASE,
            renew_deadline=RENEW,
            retry_period=RETRY,
            identity="leader",
        ),
    )
    stuck = asyncio.Event()

    class Stuck:
        async def reconcile(self, request: Request) -> Result:
            stuck.set()
            await asyncio.Event().wait()
            return Result()

    controller_managed_by(manager).for_(Widget).complete(Stuck())

    async def lead() -> LeaderElectionLostError:
        with pytest.raises(LeaderElectionLostError, match="widgets-leader") as lost:
            await manager.start()
        return lost.value

    rest = RESTClient(env.config)
    try:
        async with asyncio.TaskGroup() as tg:
            task = tg.create_task(lead())
            async with asyncio.timeout(20):
                await manager.elected()
            await manager.client.create(Widget(metadata=ObjectMeta(name="w", namespace="default")))
            async with asyncio.timeout(20):
                await stuck.wait()
            store = RESTLeaseStore(rest)
            lease = await store.get("default", "widgets-leader")
            assert lease is not None
            lease["spec"]["holderIdentity"] = "intruder"
            lease["spec"]["leaseDurationSeconds"] = 60
            await store.update(lease)
            taken = time.monotonic()
            # The leader gives up once it has failed to renew for the renew deadline, and
            # skips the 30 s graceful wait for the stuck reconcile.
            done, _ = await asyncio.wait({task}, timeout=RENEW + RETRY * 1.2 + 1.0)
            assert done == {task}
            assert "could not renew" in str(task.result())
            assert time.monotonic() - taken >= RENEW - RETRY * 1.2
    finally:
        await rest.aclose()
    assert manager.elector is not None
    assert not manager.elector.is_leader
