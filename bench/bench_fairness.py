"""Benchmark: a fair WorkQueue against the plain one, measured in the same run.

- lone key: 10,000 keys of tenant ``busy`` are queued, then one key of tenant ``quiet``;
  four workers drain the queue, each "reconcile" yielding to the event loop once. We
  measure the quiet key's wait (from its add to its hand-out), in seconds and in
  hand-outs before it, for a queue with ``fairness_key=by_namespace`` and for the plain
  queue. The ratio plain/fair is how many times longer the lone key waits without
  fairness.
- cost: add/get/done of 100,000 distinct keys spread over 100 namespaces, fair against
  plain (ops/s ratio): what the round robin costs per call.

Each is the best of five rounds, the fair and plain queues alternating.
"""

from __future__ import annotations

import asyncio
import time

from pyctrl.reconcile import Request
from pyctrl.workqueue import ShutDownError, WorkQueue, by_namespace

FLOOD = 10_000
WORKERS = 4
COST_KEYS = 100_000
COST_NAMESPACES = 100
ROUNDS = 5


async def lone_key_wait(*, fair: bool) -> tuple[float, int]:
    """Seconds and hand-outs the quiet key waits behind the busy tenant's flood."""
    queue: WorkQueue[Request] = WorkQueue(fairness_key=by_namespace if fair else None)
    lone = Request("quiet", "lone")
    for i in range(FLOOD):
        queue.add(Request("busy", f"obj-{i}"))
    handed_out = 0
    before = -1
    seen = asyncio.Event()
    added = time.perf_counter()
    waited = 0.0

    async def worker() -> None:
        nonlocal handed_out, before, waited
        while True:
            try:
                key = await queue.get()
            except ShutDownError:
                return
            if key == lone:
                waited = time.perf_counter() - added
                before = handed_out
                seen.set()
            handed_out += 1
            await asyncio.sleep(0)  # the reconcile
            queue.done(key)

    async with asyncio.TaskGroup() as tg:
        queue.add(lone)
        added = time.perf_counter()
        for _ in range(WORKERS):
            tg.create_task(worker())
        await seen.wait()
        queue.shut_down()
    return waited, before


async def cost(*, fair: bool) -> float:
    """add/get/done operations per second over many namespaces."""
    queue: WorkQueue[Request] = WorkQueue(fairness_key=by_namespace if fair else None)
    keys = [Request(f"ns-{i % COST_NAMESPACES}", f"obj-{i}") for i in range(COST_KEYS)]
    started = time.perf_counter()
    for key in keys:
        queue.add(key)
    for _ in range(COST_KEYS):
        queue.done(await queue.get())
    return 3 * COST_KEYS / (time.perf_counter() - started)


def main() -> dict[str, float]:
    fair_wait = plain_wait = float("inf")
    fair_before = plain_before = 0
    fair_rate = plain_rate = 0.0
    for _ in range(ROUNDS):
        seconds, fair_before = asyncio.run(lone_key_wait(fair=True))
        fair_wait = min(fair_wait, seconds)
        seconds, plain_before = asyncio.run(lone_key_wait(fair=False))
        plain_wait = min(plain_wait, seconds)
        fair_rate = max(fair_rate, asyncio.run(cost(fair=True)))
        plain_rate = max(plain_rate, asyncio.run(cost(fair=False)))
    results = {
        "lone_key_wait_fair_s": fair_wait,
        "lone_key_wait_plain_s": plain_wait,
        "lone_key_wait_ratio_plain_over_fair": plain_wait / fair_wait,
        "lone_key_handed_out_after_fair": float(fair_before),
        "lone_key_handed_out_after_plain": float(plain_before),
        "fair_ops_per_s": fair_rate,
        "plain_ops_per_s": plain_rate,
        "cost_ratio_fair_over_plain": fair_rate / plain_rate,
    }
    print(
        f"lone key behind {FLOOD:,} keys of another namespace ({WORKERS} workers):\n"
        f"   fair  waits {fair_wait * 1e3:9.3f} ms, {fair_before:>6,} hand-outs before it\n"
        f"   plain waits {plain_wait * 1e3:9.3f} ms, {plain_before:>6,} hand-outs before it\n"
        f"   ratio plain/fair {plain_wait / fair_wait:,.0f}x\n"
        f"add/get/done over {COST_NAMESPACES} namespaces: fair {fair_rate:,.0f} ops/s, "
        f"plain {plain_rate:,.0f} ops/s, ratio {fair_rate / plain_rate:.2f}"
    )
    return results


if __name__ == "__main__":
    main()
