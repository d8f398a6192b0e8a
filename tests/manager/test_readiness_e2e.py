"""The Manager's /readyz follows its informers: false while one cannot sync or watch."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import aiohttp
from kubernetes_asyncio.client import V1ConfigMap, V1ObjectMeta

from pyctrl.cache import BackoffPolicy, CacheOptions
from pyctrl.manager import Manager
from pyctrl.testing import eventually

from .conftest import options

if TYPE_CHECKING:
    from pyctrl.envtest import Environment

FAST = BackoffPolicy(initial=0.01, maximum=0.05)


class Probe:
    """Reads a running manager's readiness endpoint."""

    def __init__(self, manager: Manager, session: aiohttp.ClientSession) -> None:
        self.manager = manager
        self.session = session

    async def started(self) -> bool:
        """True once the probe server listens."""
        server = self.manager.probe_server
        if server is None:
            return False
        await server.wait_started()
        return True

    async def readyz(self) -> tuple[int, str]:
        """The status and body of ``/readyz?verbose``."""
        assert self.manager.probe_server is not None
        url = f"http://127.0.0.1:{self.manager.probe_server.port}/readyz?verbose"
        async with self.session.get(url) as response:
            return response.status, await response.text()

    async def ready(self) -> bool:
        """True if /readyz answers 200."""
        return (await self.readyz())[0] == 200

    async def not_ready(self) -> bool:
        """True if /readyz answers 500."""
        return (await self.readyz())[0] == 500

    async def failing(self) -> bool:
        """True if /readyz reports a failing informer."""
        return "failing" in (await self.readyz())[1]


async def test_readyz_is_false_while_an_informer_cannot_sync_and_true_after(
    env: Environment,
) -> None:
    """/readyz fails naming the informer while its lists are refused, and passes once it syncs."""
    env.faults.fail_next(10_000, verb="list", resource="configmaps", code=403)
    manager = Manager(
        env.config,
        options(
            health_probe_bind_address="127.0.0.1:0",
            cache=CacheOptions(backoff=FAST, unhealthy_after=0.3, watch_list=False),
        ),
    )
    manager.cache.get_informer(V1ConfigMap)
    async with aiohttp.ClientSession() as session, asyncio.TaskGroup() as tg:
        probe = Probe(manager, session)
        task = tg.create_task(manager.start())
        await eventually(probe.started)
        await eventually(probe.failing)
        status, body = await probe.readyz()
        assert status == 500
        assert "[-]informers failed: v1/ConfigMap: not synced and failing" in body
        assert "Forbidden" in body
        assert "[+]ping ok" in body
        env.faults.clear()
        async with asyncio.timeout(15):
            await manager.wait_started()
        await eventually(probe.ready)
        task.cancel()


async def test_readyz_turns_false_when_a_synced_informer_cannot_watch_and_back_after(
    env: Environment,
) -> None:
    """A synced informer whose watches and lists fail for too long fails /readyz until it heals."""
    manager = Manager(
        env.config,
        options(
            health_probe_bind_address="127.0.0.1:0",
            cache=CacheOptions(backoff=FAST, unhealthy_after=0.3, watch_list=False),
        ),
    )
    informer = manager.cache.get_informer(V1ConfigMap)
    async with aiohttp.ClientSession() as session, asyncio.TaskGroup() as tg:
        probe = Probe(manager, session)
        task = tg.create_task(manager.start())
        async with asyncio.timeout(15):
            await manager.wait_started()
        await eventually(probe.started)
        assert await probe.ready()
        env.faults.fail_next(10_000, verb="watch", resource="configmaps", code=500)
        env.faults.fail_next(10_000, verb="list", resource="configmaps", code=500)
        env.faults.compact()
        env.faults.drop_watches()
        await eventually(probe.not_ready)
        status, body = await probe.readyz()
        assert status == 500
        assert "[-]informers failed: v1/ConfigMap: failing" in body
        assert "InternalError" in body
        env.faults.clear()
        await manager.client.create(
            V1ConfigMap(metadata=V1ObjectMeta(name="after", namespace="default"))
        )
        await eventually(probe.ready)
        assert informer.status().healthy
        assert (await manager.client.get(V1ConfigMap, "after", "default")).metadata.name
        task.cancel()
