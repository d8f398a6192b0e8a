"""The cost of provenance: pyctrl with ``record_triggers`` on against off, in one run.

Provenance (`pyctrl.workqueue.Trigger`, on by default) builds a trigger per event,
keeps it per key in the queue, and counts each reconcile by its trigger kind. This
benchmark runs the operator of `bench.bench_controllers` (copy ``spec.value`` into
``status.observed``, 8 workers) twice per repetition, provenance on and off,
alternating, each against its own embedded API server with the same objects, and
compares the operator's CPU time per update applied during the saturated churn phase
(the same phase and measure as the controllers benchmark). Target: on costs at most 5%
more than off.

Across processes on a shared machine the CPU figures vary by more than 5% from run to
run, so a second, in-process measure isolates the path provenance adds to: an update
event through predicates and handler into the queue, handed out with its triggers and
done, on against off, alternating, many times (microseconds per event). Its
difference, set against the operator's CPU per update, is the overhead per update.

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


MICRO_EVENTS = 4000
MICRO_ROUNDS = 15


async def _event_path(objects: list[BenchItem], record: bool) -> float:
    """Microseconds per update event: source, predicate, handler, queue, hand-out, done."""
    from pyctrl.handler import EnqueueRequestForObject
    from pyctrl.meta import GroupVersionKind
    from pyctrl.predicate import GenerationChanged
    from pyctrl.source import Informer
    from pyctrl.workqueue import WorkQueue

    class _Informer:
        gvk = GroupVersionKind("bench.pyctrl.dev", "v1", "BenchItem")
        handler: Any = None

        def add_event_handler(self, handler: Any) -> Any:
            self.handler = handler
            return self

        def remove(self) -> None:
            pass

    informer = _Informer()
    queue: WorkQueue[Request] = WorkQueue(record_triggers=record)
    source = Informer(informer, EnqueueRequestForObject(), GenerationChanged())  # type: ignore[arg-type]
    task = asyncio.create_task(source.start(queue))
    await asyncio.sleep(0)
    forward = informer.handler
    started = time.perf_counter()
    for old, new in itertools.pairwise(objects):
        await forward.update(old, new)
        key = queue.get_nowait()
        queue.triggers(key)
        queue.done(key)
    elapsed = time.perf_counter() - started
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
    for _ in range(MICRO_ROUNDS):
        off.append(await _event_path(objects, record=False))
        on.append(await _event_path(objects, record=True))
    return {"event_us_on": statistics.median(on), "event_us_off": statistics.median(off)}


def main() -> dict[str, Any]:
    """Run provenance on and off, alternating, and print the CPU per update of each."""
    # Only the saturated churn: the paced phase and the backlog drain measure latency.
    bench_controllers.PACED_SECONDS = 0
    bench_controllers.DRAIN = 0
    runs: dict[str, list[dict[str, float]]] = {"on": [], "off": []}
    for rep in range(REPEAT):
        order = ("on", "off") if rep % 2 == 0 else ("off", "on")
        for mode in order:
            print(f"provenance {mode}, {SIZE} objects (run {rep + 1}/{REPEAT}) ...", flush=True)
            run = asyncio.run(bench_controllers._run_peer(PEERS[mode], SIZE, f"prov-{rep}"))
            runs[mode].append(run)
            print("  " + ", ".join(f"{k}={v:.3f}" for k, v in run.items()), flush=True)
    ratios = [
        on[MEASURE] / off[MEASURE]
        for on, off in zip(runs["on"], runs["off"], strict=True)
        if off.get(MEASURE)
    ]
    print()
    print(f"{'metric':<30} {'on':>10} {'off':>10} {'on/off':>10}")
    for metric in (MEASURE, "throughput_per_s", "p50_ms", "p99_ms", "rss_mib"):
        on = statistics.median(r.get(metric, float("nan")) for r in runs["on"])
        off = statistics.median(r.get(metric, float("nan")) for r in runs["off"])
        print(f"{metric:<30} {on:>10.3f} {off:>10.3f} {on / off if off else float('nan'):>10.3f}")
    median = statistics.median(ratios) if ratios else float("nan")
    verdict = "met" if median <= TARGET else "NOT met"
    print(
        f"operator CPU per update, on/off: median {median:.3f} over {len(ratios)} pair(s) "
        f"(each {', '.join(f'{r:.3f}' for r in ratios)}); target <= {TARGET}: {verdict}"
    )
    micro = asyncio.run(_micro())
    per_update_us = statistics.median(r[MEASURE] for r in runs["off"]) * 1000
    added = micro["event_us_on"] - micro["event_us_off"]
    print(
        f"event path in process: on {micro['event_us_on']:.2f} us, off "
        f"{micro['event_us_off']:.2f} us per event; +{added:.2f} us = "
        f"{added / per_update_us * 100:.1f}% of the operator's {per_update_us:.0f} us per update"
    )
    return {
        "runs": runs,
        "cpu_ratio_on_off": ratios,
        "median_ratio": median,
        **micro,
        "added_share_of_update": added / per_update_us,
    }
