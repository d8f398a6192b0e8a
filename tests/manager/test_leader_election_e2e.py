"""Leader election between managers on the embedded API server."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from pyctrl.builder import controller_managed_by
from pyctrl.manager import Manager
from pyctrl.meta import ObjectMeta
from pyctrl.reconcile import Request, Result

from .conftest import Widget, options

if TYPE_CHECKING:
    from pyctrl.envtest import Environment

LEASE, RENEW, RETRY = 2.0, 1.5, 0.25


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
        assert took <= LEASE + RETRY * 1.2 + 1.0, took
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
