"""The cache against a misbehaving API server: nothing is lost, failures are visible."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest
from kubernetes_asyncio.client import V1ConfigMap

from pyctrl import metrics
from pyctrl.cache import CacheNotReadyError
from pyctrl.errors import CacheSyncTimeoutError

from .conftest import (
    Mirror,
    converge,
    create_cm,
    delete_cm,
    patch_cm,
    started_cache,
    wait_until,
)

if TYPE_CHECKING:
    from pyctrl.cache import Cache
    from pyctrl.client import RESTClient
    from pyctrl.envtest import Environment


async def watched(cache: Cache, mirror: Mirror) -> None:
    """Register the mirror on the ConfigMap informer and wait until its watch is open."""
    informer = cache.get_informer(V1ConfigMap)
    registration = informer.add_event_handler(mirror)
    await cache.wait_for_cache_sync(timeout=10)
    async with asyncio.timeout(10):
        await registration.wait_synced()
    await wait_until(lambda: informer.status().state == "watching", within=10)


async def test_changes_made_while_watches_drop_all_reach_the_cache(
    envtest: Environment, rest: RESTClient
) -> None:
    """Creates, updates and deletes interleaved with dropped watches all end up cached."""
    for i in range(10):
        await create_cm(rest, f"cm-{i}", data={"v": "0"})
    mirror = Mirror()
    async with started_cache(rest) as cache:
        await watched(cache, mirror)
        for round_ in range(5):
            await patch_cm(rest, f"cm-{round_}", {"v": str(round_)})
            envtest.faults.drop_watches()
            await create_cm(rest, f"new-{round_}")
            await delete_cm(rest, f"cm-{round_ + 5}")
            envtest.faults.drop_watches()
        final = await converge(rest, cache, mirror)
        status = cache.status()[0]
    assert len(final) == 10
    assert {name for name, _ in mirror.deletes} == {f"cm-{i}" for i in range(5, 10)}
    assert status.reconnects >= 1
    assert status.healthy


async def test_a_forced_410_relists_and_reports_missed_deletes(
    envtest: Environment, rest: RESTClient
) -> None:
    """Changes missed while watching was impossible are recovered by a re-list after 410."""
    for i in range(6):
        await create_cm(rest, f"cm-{i}")
    mirror = Mirror()
    async with started_cache(rest) as cache:
        await watched(cache, mirror)
        envtest.faults.fail_next(10_000, verb="watch", code=503)
        envtest.faults.drop_watches()
        await delete_cm(rest, "cm-0")
        await delete_cm(rest, "cm-1")
        await patch_cm(rest, "cm-2", {"changed": "yes"})
        await create_cm(rest, "late")
        envtest.faults.compact()
        envtest.faults.clear()
        final = await converge(rest, cache, mirror)
        status = cache.status()[0]
    assert sorted(final) == ["cm-2", "cm-3", "cm-4", "cm-5", "late"]
    assert sorted(mirror.deletes) == [("cm-0", True), ("cm-1", True)]
    assert status.relists >= 1


async def test_changes_across_a_server_restart_reach_the_cache(
    envtest: Environment, rest: RESTClient
) -> None:
    """A restarted API server is reconnected to, and nothing changed around it is lost."""
    assert envtest.server is not None
    for i in range(5):
        await create_cm(rest, f"cm-{i}")
    mirror = Mirror()
    async with started_cache(rest) as cache:
        await watched(cache, mirror)
        await patch_cm(rest, "cm-0", {"before": "restart"})
        await envtest.server.restart()
        await delete_cm(rest, "cm-1")
        await create_cm(rest, "after")
        await envtest.server.restart()
        await patch_cm(rest, "cm-2", {"after": "second restart"})
        final = await converge(rest, cache, mirror)
    assert sorted(final) == ["after", "cm-0", "cm-2", "cm-3", "cm-4"]
    assert ("cm-1", False) in mirror.deletes or ("cm-1", True) in mirror.deletes


async def test_bursts_of_5xx_and_429_delay_but_lose_nothing(
    envtest: Environment, rest: RESTClient
) -> None:
    """Failing lists and watches (500, 503, 429) are retried until the cache is complete."""
    for i in range(5):
        await create_cm(rest, f"cm-{i}")
    faults = envtest.faults
    faults.fail_next(3, verb="list", resource="configmaps", code=500)
    faults.fail_next(2, verb="list", resource="configmaps", code=429, retry_after=0)
    mirror = Mirror()
    async with started_cache(rest, watch_list=False) as cache:
        await watched(cache, mirror)
        first_error = cache.status()[0].last_error
        faults.fail_next(3, verb="watch", resource="configmaps", code=503)
        faults.fail_next(4, verb="watch", resource="configmaps", code=429, retry_after=0)
        faults.drop_watches()
        await delete_cm(rest, "cm-0")
        await create_cm(rest, "new")
        faults.fail_next(3, verb="list", resource="configmaps", code=503)
        faults.compact()
        faults.drop_watches()
        await patch_cm(rest, "cm-1", {"v": "2"})
        final = await converge(rest, cache, mirror)
    assert first_error is not None
    assert sorted(final) == ["cm-1", "cm-2", "cm-3", "cm-4", "new"]
    assert "cm-0" not in mirror.objects


async def test_readiness_is_false_until_an_informer_can_sync(
    envtest: Environment, rest: RESTClient
) -> None:
    """While lists fail the readiness check fails, naming the informer; then it passes."""
    await create_cm(rest, "a")
    envtest.faults.fail_next(10_000, verb="list", resource="configmaps", code=503)
    async with started_cache(rest, unhealthy_after=0.0, watch_list=False) as cache:
        informer = cache.get_informer(V1ConfigMap)
        await wait_until(lambda: informer.status().last_error is not None)
        with pytest.raises(CacheNotReadyError, match=r"v1/ConfigMap: not synced and failing"):
            cache.check_ready()
        assert not cache.synced()
        envtest.faults.clear()
        await cache.wait_for_cache_sync(timeout=10)
        await wait_until(cache.healthy)
        cache.check_ready()


async def test_readiness_turns_false_when_a_synced_informer_keeps_failing(
    envtest: Environment, rest: RESTClient
) -> None:
    """A synced informer that cannot watch or list for too long fails readiness, then recovers."""

    def healthy_gauge() -> float | None:
        return metrics.registry.get_sample_value("pyctrl_informer_healthy", {"gvk": "v1/ConfigMap"})

    await create_cm(rest, "a")
    mirror = Mirror()
    async with started_cache(rest, unhealthy_after=0.2, watch_list=False) as cache:
        await watched(cache, mirror)
        cache.check_ready()
        assert healthy_gauge() == 1.0
        envtest.faults.fail_next(10_000, verb="watch", resource="configmaps", code=500)
        envtest.faults.fail_next(10_000, verb="list", resource="configmaps", code=500)
        envtest.faults.compact()
        envtest.faults.drop_watches()
        await wait_until(lambda: not cache.healthy())
        with pytest.raises(CacheNotReadyError, match=r"v1/ConfigMap: failing \(.*500"):
            cache.check_ready()
        # The gauge is set by a timer at the moment health runs out, which may run one
        # loop turn after a reader of healthy() saw it run out.
        await wait_until(lambda: healthy_gauge() == 0.0)
        await delete_cm(rest, "a")
        envtest.faults.clear()
        await converge(rest, cache, mirror)
        await wait_until(cache.healthy)
        cache.check_ready()
        assert healthy_gauge() == 1.0


async def test_a_silent_watch_is_reestablished_by_the_idle_watchdog(rest: RESTClient) -> None:
    """A watch that sends nothing for watch_idle_timeout is reopened, not waited on forever."""
    async with started_cache(rest, watch_idle_timeout=0.2) as cache:
        informer = cache.get_informer(V1ConfigMap)
        await cache.wait_for_cache_sync(timeout=10)
        await wait_until(lambda: informer.status().reconnects >= 2, within=10)
        status = informer.status()
        await create_cm(rest, "after-idle")
        await wait_until(lambda: informer.status().objects >= 1)
    assert status.last_error is None
    assert status.healthy


async def test_a_server_dropping_every_watch_at_once_fails_readiness_until_watches_hold(
    envtest: Environment, rest: RESTClient
) -> None:
    """Watches accepted and dropped at once (flapping) turn readiness false; steady ones, true."""
    assert envtest.server is not None
    hub = envtest.server.hub
    await create_cm(rest, "a")

    async def flap() -> None:
        while True:
            await wait_until(lambda: hub.count() > 0, within=10)
            envtest.faults.drop_watches()

    async with started_cache(rest, unhealthy_after=0.3) as cache:
        await watched(cache, Mirror())
        async with asyncio.TaskGroup() as tg:
            flapper = tg.create_task(flap())
            await wait_until(lambda: not cache.healthy(), within=10)
            with pytest.raises(
                CacheNotReadyError, match=r"v1/ConfigMap: failing \(watch .*without sending"
            ):
                cache.check_ready()
            reconnects = cache.status()[0].reconnects
            flapper.cancel()
        await wait_until(cache.healthy, within=10)
        cache.check_ready()
    assert reconnects >= 3


async def test_a_read_of_a_type_that_never_syncs_fails_with_the_informers_error(
    envtest: Environment, rest: RESTClient
) -> None:
    """get and list of a type whose lists are refused raise after sync_timeout, naming why."""
    envtest.faults.fail_next(10_000, verb="list", resource="configmaps", code=403)
    async with started_cache(rest, sync_timeout=0.3, watch_list=False) as cache:
        message = r"v1/ConfigMap did not sync within 0.3s; last error: list .*Forbidden"
        with pytest.raises(CacheSyncTimeoutError, match=message):
            await cache.get(V1ConfigMap, "a", "default")
        with pytest.raises(CacheSyncTimeoutError, match=message):
            await cache.list(V1ConfigMap, namespace="default")
        await create_cm(rest, "a")  # before the lists pass: the first one holds it
        envtest.faults.clear()
        await cache.wait_for_cache_sync(timeout=10)
        assert (await cache.get(V1ConfigMap, "a", "default")).metadata.name == "a"
