"""The cost of provenance: pyctrl with ``record_triggers`` on against off, in one run.

Provenance (`pyctrl.workqueue.Trigger`, on by default) builds a trigger per event,
keeps it per key in the queue, and counts each reconcile by its trigger kind. This
benchmark runs the operator of `bench.bench_controllers` (copy ``spec.value`` into
``status.observed``, 8 workers) with provenance on and off at the same time, each
against its own embedded API server with the same objects and its own writers, so both
see the same machine load, and compares the operator's CPU time per update applied
during the saturated churn phase (the same phase and measure as the controllers
benchmark). Target: on costs at most 5% more than off.

Across processes on a shared machine the CPU figures vary by more than 5% from run to
run, so a second, in-process measure isolates the path provenance adds to: a whole
controller in the benchmark's process, fed update events one at a time through the
source's predicate and handler into its queue, its worker reconciling each (a no-op
reconciler, so the path is all pyctrl), provenance on against off, alternating, many
times (CPU microseconds per update). The median of the paired differences, set
against the operator's CPU per update from the churn phase, is provenance's share of
an update.

Tracing is off in both (no tracer provider): its cost when off is one dictionary lookup
per event and per reconcile, included in both figures.

Environment: ``BENCH_PROVENANCE_SIZE`` (1000 objects), ``BENCH_PROVENANCE_REPEAT`` (3),
and ``BENCH_CHURN_SECONDS`` as for the controllers benchmark.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import statistics
import time
from typing import TYPE_CHECKING, Any

from bench import bench_controllers
from bench.operators import BenchItem

if TYPE_CHECKING:
    from pyctrl.reconcile import Request

SIZE = int(os.environ.get("BENCH_PROVENANCE_SIZE", "1000"))
REPEAT = int(os.environ.get("BENCH_PROVENANCE_REPEAT", "3"))
PEERS = {"on": "pyctrl", "off": "pyctrl-noprov"}
MEASURE = "cpu_ms_per_update_operator"
TARGET = 1.05


MICRO_EVENTS = 2000
# The operator's CPU per update when the churn phase is skipped (its median in our runs).
OPERATOR_US_PER_UPDATE = 350.0
MICRO_ROUNDS = 30


async def _event_path(objects: list[BenchItem], record: bool, tag: str) -> float:
    """Microseconds per update: event, predicate, handler, queue, worker, reconcile (a no-op).

    A whole `pyctrl.controller.Controller` in this process, fed by a source that
    dispatches one update event at a time and waits for its reconcile.
    """
    from pyctrl.controller import Controller, Options
    from pyctrl.event import UpdateEvent
    from pyctrl.handler import EnqueueRequestForObject, Queue
    from pyctrl.predicate import GenerationChanged
    from pyctrl.reconcile import Func, Result
    from pyctrl.source import Func as FuncSource
    from pyctrl.source import dispatch

    reconciled, finished = asyncio.Event(), asyncio.Event()
    elapsed = 0.0

    async def reconcile(request: Request) -> Result:
        reconciled.set()
        return Result()

    async def pump(queue: Queue) -> None:
        nonlocal elapsed
        handler, predicates = EnqueueRequestForObject(), (GenerationChanged(),)
        # CPU time of this process: on a loaded machine, wall time mostly measures waiting.
        started = time.process_time()
        for old, new in itertools.pairwise(objects):
            await dispatch(
                UpdateEvent(old, new),
                handler,
                predicates,
                queue,
                source="BenchItem.bench.pyctrl.dev",
                kind="BenchItem",
            )
            await reconciled.wait()
            reconciled.clear()
        elapsed = time.process_time() - started
        finished.set()
        await asyncio.Event().wait()

    options = Options(record_triggers=record, need_leader_election=False)
    controller = Controller(f"bench-provenance-{tag}", Func(reconcile), options=options)
    controller.watch(FuncSource(pump))
    async with asyncio.TaskGroup() as group:
        task = group.create_task(controller.start())
        await finished.wait()
        task.cancel()
    return elapsed / (len(objects) - 1) * 1e6


async def _micro() -> dict[str, float]:
    objects = [
        BenchItem.model_validate(
            {
                "apiVersion": "bench.pyctrl.dev/v1",
                "kind": "BenchItem",
                "metadata": {
                    "name": "item-00001",
                    "namespace": "default",
                    "resourceVersion": str(i),
                    "generation": i,
                },
                "spec": {"value": i},
            }
        )
        for i in range(MICRO_EVENTS + 1)
    ]
    on: list[float] = []
    off: list[float] = []
    for round_ in range(MICRO_ROUNDS):
        # Alternate which goes first, so that neither always runs on a warmer cache.
        for record in (False, True) if round_ % 2 == 0 else (True, False):
            mode = "on" if record else "off"
            took = await _event_path(objects, record=record, tag=f"{mode}-{round_}")
            (on if record else off).append(took)
    return {
        "event_us_on": statistics.median(on),
        "event_us_off": statistics.median(off),
        "event_us_added": statistics.median(a - b for a, b in zip(on, off, strict=True)),
    }


async def _pair(rep: int) -> tuple[dict[str, float], ...]:
    """Both operators at once, each with its own server: the same machine load for both."""
    return tuple(
        await asyncio.gather(
            *(bench_controllers._run_peer(PEERS[mode], SIZE, f"prov-{rep}") for mode in PEERS)
        )
    )


def main() -> dict[str, Any]:
    """Run provenance on and off, alternating, and print the CPU per update of each."""
    # Only the saturated churn: the paced phase and the backlog drain measure latency.
    bench_controllers.PACED_SECONDS = 0
    bench_controllers.DRAIN = 0
    runs: dict[str, list[dict[str, float]]] = {"on": [], "off": []}
    for rep in range(REPEAT):  # BENCH_PROVENANCE_REPEAT=0: the in-process measure only
        print(f"provenance on and off, {SIZE} objects (run {rep + 1}/{REPEAT}) ...", flush=True)
        pair = asyncio.run(_pair(rep))
        for mode, run in zip(("on", "off"), pair, strict=True):
            runs[mode].append(run)
            print(f"  {mode}: " + ", ".join(f"{k}={v:.3f}" for k, v in run.items()), flush=True)
    ratios = [
        on[MEASURE] / off[MEASURE]
        for on, off in zip(runs["on"], runs["off"], strict=True)
        if off.get(MEASURE)
    ]
    median = statistics.median(ratios) if ratios else float("nan")
    if ratios:
        print()
        print(f"{'metric':<30} {'on':>10} {'off':>10} {'on/off':>10}")
        for metric in (MEASURE, "throughput_per_s", "p50_ms", "p99_ms", "rss_mib"):
            on = statistics.median(r.get(metric, float("nan")) for r in runs["on"])
            off = statistics.median(r.get(metric, float("nan")) for r in runs["off"])
            ratio = on / off if off else float("nan")
            print(f"{metric:<30} {on:>10.3f} {off:>10.3f} {ratio:>10.3f}")
        verdict = "met" if median <= TARGET else "NOT met"
        print(
            f"operator CPU per update, on/off: median {median:.3f} over {len(ratios)} pair(s) "
            f"(each {', '.join(f'{r:.3f}' for r in ratios)}); target <= {TARGET}: {verdict}"
        )
    micro = asyncio.run(_micro())
    offs = [r[MEASURE] for r in runs["off"]]
    per_update_us = statistics.median(offs) * 1000 if offs else OPERATOR_US_PER_UPDATE
    added = micro["event_us_added"]
    print(
        f"controller path in process: on {micro['event_us_on']:.2f} us, off "
        f"{micro['event_us_off']:.2f} us CPU per update; median difference +{added:.2f} us = "
        f"{added / per_update_us * 100:.1f}% of the operator's {per_update_us:.0f} us per update"
    )
    return {
        "runs": runs,
        "cpu_ratio_on_off": ratios,
        "median_ratio": median,
        **micro,
        "added_share_of_update": added / per_update_us,
    }
