"""Scale-out: reconciles per second with 1, 2 and 4 sharded replicas, in one run.

An I/O-bound reconciler (each reconcile awaits 50 ms of simulated external work, 4
workers per replica) over 5,000 existing custom resources. For each replica count the
driver starts a fresh embedded API server, creates the objects, starts the replicas
(managers of one shard ring, 64 slots), waits until they hold an even split of the
slots, and then counts the reconciles completed in a fixed window: reconciles/s. One
replica's figure is the peer the others are compared with (the speed-up), measured in
the same run on the same machine.

Then it reads, for each replica, how many objects its sharded informer caches and the
bytes of their stored encodings: with the API server filtering by ``shardSelector``
(KEP-5866), a replica's cache holds only its share.

All replicas and the server share one process (and two cores): the reconciler waits
rather than computes, so the ceiling is 4 workers / 50 ms = 80 reconciles/s per replica,
and the figures show how close sharding gets to it. Environment: ``BENCH_SHARD_OBJECTS``
(5000), ``BENCH_SHARD_REPLICAS`` (``1,2,4``), ``BENCH_SHARD_WINDOW`` (10 seconds).
"""

from __future__ import annotations

import asyncio
import logging
import os
import statistics
import time
from typing import Any

import structlog
from pydantic import Field

from pyctrl.builder import controller_managed_by
from pyctrl.controller import Options as ControllerOptions
from pyctrl.crd import crd_for
from pyctrl.envtest import Environment
from pyctrl.manager import Manager, Options
from pyctrl.meta import KubeModel, ObjectMeta
from pyctrl.reconcile import Request, Result
from pyctrl.resource import CustomResource
from pyctrl.shardelection import ShardingOptions

WORK = 0.05
WORKERS = 4
SLOTS = 64


class ShardSpec(KubeModel):
    """Nothing to do: the work is simulated."""

    value: int = 0


class ShardItem(CustomResource, group="bench.pyctrl.dev", version="v1"):
    """An object to reconcile."""

    spec: ShardSpec = Field(default_factory=ShardSpec)


class _Simulated:
    """Awaits 50 ms of external work per reconcile, and counts."""

    def __init__(self, counter: list[float]) -> None:
        self.done = counter

    async def reconcile(self, request: Request) -> Result:
        await asyncio.sleep(WORK)
        self.done.append(time.monotonic())
        return Result()


def _replica(env: Environment, index: int, done: list[float]) -> Manager:
    manager = Manager(
        env.config,
        Options(
            metrics_bind_address="0",
            cache_sync_timeout=60,
            sharding=ShardingOptions(
                name="bench",
                namespace="default",
                slots=SLOTS,
                lease_duration=6.0,
                renew_deadline=4.0,
                retry_period=0.5,
                identity=f"replica-{index}",
            ),
        ),
    )
    controller_managed_by(manager).for_(ShardItem).with_options(
        ControllerOptions(max_concurrent_reconciles=WORKERS, cache_sync_timeout=60)
    ).complete(_Simulated(done))
    return manager


def _cached(manager: Manager) -> tuple[int, int]:
    """Objects and stored bytes in the replica's ShardItem informer."""
    objects = stored = 0
    for shared in manager.cache._informers.informers.values():
        if shared.gvk.kind == "ShardItem":
            objects += len(shared.store)
            stored += sum(len(entry.data) for _, entry in shared.store.items())
    return objects, stored


async def _measure(replicas: int, objects: int, window: float) -> dict[str, Any]:
    async with Environment(crds=[crd_for(ShardItem)]) as env:
        setup = Manager(env.config, Options(metrics_bind_address="0"))
        limit = asyncio.Semaphore(64)

        async def create(i: int) -> None:
            async with limit:
                await setup.client.create(
                    ShardItem(metadata=ObjectMeta(name=f"item-{i:05d}", namespace="default"))
                )

        await asyncio.gather(*(create(i) for i in range(objects)))
        await setup.rest.aclose()
        done: list[float] = []
        managers = [_replica(env, i, done) for i in range(replicas)]
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(m.start()) for m in managers]
            share = SLOTS // replicas
            async with asyncio.timeout(120):
                while not all(  # noqa: ASYNC110 - polls several managers
                    m.shards is not None and len(m.shards.held()) == share for m in managers
                ):
                    await asyncio.sleep(0.05)
            # The informers list their share after the last slot moved; then count.
            await asyncio.sleep(1.0)
            start, before = time.monotonic(), len(done)
            await asyncio.sleep(window)
            rate = (len(done) - before) / (time.monotonic() - start)
            cached = [_cached(m) for m in managers]
            for task in tasks:
                task.cancel()
    return {
        "replicas": replicas,
        "reconciles_per_s": round(rate, 1),
        "ceiling_per_s": replicas * WORKERS / WORK,
        "cached_objects": [c[0] for c in cached],
        "cached_bytes": [c[1] for c in cached],
        "backlog_left": objects - len(done),
    }


def main() -> dict[str, Any]:
    """Run the benchmark, print a table with the speed-up over one replica, return it."""
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    objects = int(os.environ.get("BENCH_SHARD_OBJECTS", "5000"))
    counts = [int(n) for n in os.environ.get("BENCH_SHARD_REPLICAS", "1,2,4").split(",")]
    window = float(os.environ.get("BENCH_SHARD_WINDOW", "10"))
    rows = [asyncio.run(_measure(n, objects, window)) for n in counts]
    base = rows[0]["reconciles_per_s"] or 1.0
    print(f"{objects} objects, {WORKERS} workers per replica, {WORK * 1000:.0f} ms per reconcile")
    print(f"{'replicas':>8} {'rec/s':>8} {'ceiling':>8} {'speed-up':>9} {'cached objects':>20}")
    for row in rows:
        row["speedup"] = round(row["reconciles_per_s"] / base, 2)
        cached = row["cached_objects"]
        print(
            f"{row['replicas']:>8} {row['reconciles_per_s']:>8} {row['ceiling_per_s']:>8.0f} "
            f"{row['speedup']:>8}x {statistics.mean(cached):>12.0f} avg of {sum(cached)}"
        )
    for row in rows:
        kib = [round(b / 1024) for b in row["cached_bytes"]]
        print(f"  {row['replicas']} replica(s): cache KiB per replica {kib}")
    if rows[-1]["backlog_left"] <= 0:
        print("  warning: the backlog ran out during the window; raise BENCH_SHARD_OBJECTS")
    return {"rows": rows}


if __name__ == "__main__":
    main()
