"""Benchmark: pyctrl's WorkQueue against a plain asyncio.Queue, measured in the same run.

Three workloads, each timed as the best of five rounds, ours and the peer's alternating:

- distinct: N distinct keys added, then each taken with ``await get()`` and marked done.
- readds: K keys each added R times before draining. pyctrl collapses the re-adds into K
  hand-outs; asyncio.Queue hands out all K*R items. Operations are the calls each queue
  actually served, so the ratio shows the raw cost per call, and ``readds_handed_out``
  shows the work a controller is spared.
- workers: 4 worker tasks take keys while a producer adds N distinct keys, yielding to
  the loop every 64 adds (the waking path of ``get``).

Operations per second count every add, get and done (put, get, task_done for the peer).
Run with ``python bench/bench_workqueue.py``.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from pyctrl.workqueue import ShutDownError, WorkQueue

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

N = 100_000
READD_KEYS = 1_000
READDS = 100
WORKERS = 4
ROUNDS = 5


async def pyctrl_distinct() -> int:
    queue: WorkQueue[int] = WorkQueue()
    for i in range(N):
        queue.add(i)
    for _ in range(N):
        queue.done(await queue.get())
    return 3 * N


async def asyncio_distinct() -> int:
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(N):
        queue.put_nowait(i)
    for _ in range(N):
        await queue.get()
        queue.task_done()
    return 3 * N


async def pyctrl_readds() -> int:
    queue: WorkQueue[int] = WorkQueue()
    for _ in range(READDS):
        for key in range(READD_KEYS):
            queue.add(key)
    handed_out = len(queue)
    for _ in range(handed_out):
        queue.done(await queue.get())
    return READDS * READD_KEYS + 2 * handed_out


async def asyncio_readds() -> int:
    queue: asyncio.Queue[int] = asyncio.Queue()
    for _ in range(READDS):
        for key in range(READD_KEYS):
            queue.put_nowait(key)
    handed_out = queue.qsize()
    for _ in range(handed_out):
        await queue.get()
        queue.task_done()
    return READDS * READD_KEYS + 2 * handed_out


async def pyctrl_workers() -> int:
    queue: WorkQueue[int] = WorkQueue()
    finished = 0
    all_done = asyncio.Event()

    async def worker() -> None:
        nonlocal finished
        while True:
            try:
                key = await queue.get()
            except ShutDownError:
                return
            queue.done(key)
            finished += 1
            if finished == N:
                all_done.set()

    async with asyncio.TaskGroup() as tg:
        for _ in range(WORKERS):
            tg.create_task(worker())
        for i in range(N):
            queue.add(i)
            if i % 64 == 0:
                await asyncio.sleep(0)
        await all_done.wait()
        queue.shut_down()
    return 3 * N


async def asyncio_workers() -> int:
    queue: asyncio.Queue[int | None] = asyncio.Queue()

    async def worker() -> None:
        while True:
            key = await queue.get()
            queue.task_done()
            if key is None:
                return

    async with asyncio.TaskGroup() as tg:
        for _ in range(WORKERS):
            tg.create_task(worker())
        for i in range(N):
            queue.put_nowait(i)
            if i % 64 == 0:
                await asyncio.sleep(0)
        await queue.join()
        for _ in range(WORKERS):
            queue.put_nowait(None)
    return 3 * N


def ops_per_second(workload: Callable[[], Coroutine[None, None, int]]) -> float:
    start = time.perf_counter()
    operations = asyncio.run(workload())
    return operations / (time.perf_counter() - start)


def main() -> dict[str, float]:
    results: dict[str, float] = {}
    pairs = {
        "distinct": (pyctrl_distinct, asyncio_distinct),
        "readds": (pyctrl_readds, asyncio_readds),
        "workers": (pyctrl_workers, asyncio_workers),
    }
    for name, (ours, peer) in pairs.items():
        # Alternate the two so that load from elsewhere on the machine hits both alike.
        ours_rate = peer_rate = 0.0
        for _ in range(ROUNDS):
            ours_rate = max(ours_rate, ops_per_second(ours))
            peer_rate = max(peer_rate, ops_per_second(peer))
        results[f"{name}_pyctrl_ops_per_s"] = ours_rate
        results[f"{name}_asyncio_queue_ops_per_s"] = peer_rate
        results[f"{name}_ratio"] = ours_rate / peer_rate
    results["readds_handed_out_pyctrl"] = float(READD_KEYS)
    results["readds_handed_out_asyncio_queue"] = float(READD_KEYS * READDS)
    for name in pairs:
        print(
            f"{name:>9}: pyctrl {results[f'{name}_pyctrl_ops_per_s']:>12,.0f} ops/s   "
            f"asyncio.Queue {results[f'{name}_asyncio_queue_ops_per_s']:>12,.0f} ops/s   "
            f"ratio {results[f'{name}_ratio']:.2f}"
        )
    print(
        f"   readds: pyctrl handed out {READD_KEYS:,} keys for {READD_KEYS * READDS:,} adds; "
        f"asyncio.Queue handed out {READD_KEYS * READDS:,}"
    )
    return results


if __name__ == "__main__":
    main()
