"""Reads that never go behind the client's own writes, under 1 s of injected watch latency."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from kubernetes_asyncio.client import V1ConfigMap, V1ObjectMeta

from pyctrl import metrics
from pyctrl.builder import controller_managed_by
from pyctrl.cache import CacheOptions, compare_resource_versions
from pyctrl.client import Client
from pyctrl.errors import NotFoundError
from pyctrl.manager import Manager
from pyctrl.predicate import label_selector
from pyctrl.reconcile import Request, Result
from pyctrl.testing import running
from tests.manager.conftest import options

from .conftest import FAST, create_cm, started_cache, wait_until

if TYPE_CHECKING:
    from pyctrl.cache import Cache
    from pyctrl.client import RESTClient
    from pyctrl.envtest import Environment

LATENCY = 1.0
TASKS, PAIRS = 200, 5  # 1,000 write/read pairs


def waits(result: str) -> float:
    """The count of reads that waited for an own write of a ConfigMap, by result."""
    labels = {"gvk": "v1/ConfigMap", "result": result}
    return metrics.registry.get_sample_value("pyctrl_cache_own_write_waits_total", labels) or 0.0


async def watching(cache: Cache) -> None:
    """Start the ConfigMap informer and wait until its watch is open."""
    informer = cache.get_informer(V1ConfigMap)
    await cache.wait_for_cache_sync(timeout=20)
    await wait_until(lambda: informer.status().state == "watching", within=20)


async def write_read_pairs(client: Client, name: str, pairs: int) -> int:
    """Update one ConfigMap ``pairs`` times, reading it back after each; count stale reads."""
    stale = 0
    obj = await client.api_reader.get(V1ConfigMap, name, "default")
    for i in range(1, pairs + 1):
        obj.data = {"v": str(i)}
        obj = await client.update(obj)
        read = await client.get(V1ConfigMap, name, "default")
        if read.data != {"v": str(i)}:
            stale += 1
    return stale


async def stale_reads(
    envtest: Environment, rest: RESTClient, tasks: int, pairs: int, **cache_options: Any
) -> int:
    """Run tasks x pairs write/read pairs through a cached client under the latency fault."""
    for t in range(tasks):
        await create_cm(rest, f"rw-{t}", data={"v": "0"})
    async with started_cache(rest, **cache_options) as cache:
        await watching(cache)
        client = Client(rest, cache=cache)
        envtest.faults.delay_watch_events(LATENCY, resource="configmaps")
        async with asyncio.TaskGroup() as tg:
            runs = [
                tg.create_task(write_read_pairs(client, f"rw-{t}", pairs)) for t in range(tasks)
            ]
    return sum(run.result() for run in runs)


@pytest.mark.embedded_only
async def test_reads_after_writes_are_stale_without_the_feature(
    envtest: Environment, rest: RESTClient
) -> None:
    """With read_your_own_writes off, 1 s of watch latency makes reads return older versions."""
    stale = await stale_reads(envtest, rest, 10, 2, read_your_own_writes=False)
    assert stale > 0


@pytest.mark.embedded_only
async def test_a_thousand_reads_after_writes_are_never_stale(
    envtest: Environment, rest: RESTClient
) -> None:
    """1,000 write/read pairs under 1 s of watch latency: every read shows its own write."""
    before = waits("caught_up")
    stale = await stale_reads(envtest, rest, TASKS, PAIRS, own_writes_timeout=30.0)
    assert stale == 0
    assert waits("caught_up") - before >= TASKS  # reads did wait for the cache


@pytest.mark.embedded_only
async def test_a_deleted_object_is_not_read_from_the_cache_after_its_delete(
    envtest: Environment, rest: RESTClient
) -> None:
    """Once delete returned, a cached get raises NotFound and a list leaves it out."""
    await create_cm(rest, "doomed")
    await create_cm(rest, "kept")
    async with started_cache(rest) as cache:
        await watching(cache)
        client = Client(rest, cache=cache)
        envtest.faults.delay_watch_events(LATENCY, resource="configmaps")
        doomed = await client.get(V1ConfigMap, "doomed", "default")
        await client.delete(doomed)
        with pytest.raises(NotFoundError):
            await client.get(V1ConfigMap, "doomed", "default")
        names = [cm.metadata.name for cm in await client.list(V1ConfigMap, namespace="default")]
    assert "doomed" not in names
    assert "kept" in names


@pytest.mark.embedded_only
async def test_a_create_is_read_back_at_once(envtest: Environment, rest: RESTClient) -> None:
    """A created object is found by a cached get right after create returned."""
    async with started_cache(rest) as cache:
        await watching(cache)
        client = Client(rest, cache=cache)
        envtest.faults.delay_watch_events(LATENCY, resource="configmaps")
        made = await client.create(
            V1ConfigMap(metadata=V1ObjectMeta(generate_name="fresh-", namespace="default"))
        )
        read = await client.get(V1ConfigMap, made.metadata.name, "default")
    assert read.metadata.resource_version == made.metadata.resource_version


@pytest.mark.embedded_only
async def test_a_wait_that_times_out_reads_what_the_cache_has_and_counts_it(
    envtest: Environment, rest: RESTClient
) -> None:
    """Past own_writes_timeout the read returns the cached version and counts a timeout."""
    await create_cm(rest, "slow", data={"v": "0"})
    before = waits("timeout")
    async with started_cache(rest, own_writes_timeout=0.3) as cache:
        await watching(cache)
        client = Client(rest, cache=cache)
        envtest.faults.delay_watch_events(30.0, resource="configmaps")
        obj = await client.get(V1ConfigMap, "slow", "default")
        obj.data = {"v": "1"}
        await client.update(obj)
        read = await client.get(V1ConfigMap, "slow", "default")
    assert read.data == {"v": "0"}
    assert waits("timeout") - before == 1


def test_resource_versions_compare_as_kep_5504_integers_or_not_at_all() -> None:
    """Decimal versions without leading zeros compare by value; others are not comparable."""
    assert compare_resource_versions("9", "10") == -1
    assert compare_resource_versions("123", "123") == 0
    assert compare_resource_versions("1000000000000000000000", "999") == 1
    assert compare_resource_versions("0", "1") == -1
    for opaque in ("", "01", "a1", "1.5", "-1", "\u0661"):
        assert compare_resource_versions(opaque, "1") is None
        assert compare_resource_versions("1", opaque) is None


class Counter:
    """Reconciles ConfigMaps by bumping data.n, checking it never reads behind its own write."""

    def __init__(self, client: Client, rounds: int) -> None:
        self.client = client
        self.rounds = rounds
        self.written: dict[str, int] = {}
        self.behind: list[tuple[str, int, int]] = []
        self.done = asyncio.Event()

    async def reconcile(self, request: Request) -> Result:
        obj = await self.client.get(V1ConfigMap, request.name, request.namespace)
        seen = int((obj.data or {}).get("n", "0"))
        last = self.written.get(request.name, 0)
        if seen < last:
            self.behind.append((request.name, seen, last))
        if seen >= self.rounds:
            if all(n >= self.rounds for n in self.written.values()):
                self.done.set()
            return Result()
        obj.data = {"n": str(seen + 1)}
        await self.client.update(obj)
        self.written[request.name] = seen + 1
        return Result(requeue_after=0.01)


@pytest.mark.embedded_only
async def test_no_reconcile_sees_a_state_older_than_its_own_last_write(
    envtest: Environment,
) -> None:
    """Reconciles that write and run again at once never read behind their last write."""
    manager = Manager(
        envtest.config,
        options(cache=CacheOptions(backoff=FAST, own_writes_timeout=30.0)),
    )
    counter = Counter(manager.client, rounds=5)
    controller_managed_by(manager).for_(V1ConfigMap).with_event_filter(
        label_selector({"counted": "yes"})
    ).complete(counter)
    envtest.faults.delay_watch_events(LATENCY, resource="configmaps")
    async with running(manager):
        for i in range(4):
            await create_cm(manager.rest, f"count-{i}", labels={"counted": "yes"})
        async with asyncio.timeout(45):
            await counter.done.wait()
    assert counter.behind == []
    assert counter.written == {f"count-{i}": 5 for i in range(4)}


def test_own_writes_timeout_must_be_positive() -> None:
    """own_writes_timeout of zero, a negative number or None is refused, naming the option."""
    for bad in (0, -1.0, None, float("nan")):
        with pytest.raises(ValueError, match="own_writes_timeout"):
            CacheOptions(own_writes_timeout=bad)  # type: ignore[arg-type]
