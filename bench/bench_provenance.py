"""The cost of provenance: pyctrl with ``record_triggers`` on against off, in one run.

Provenance (`pyctrl.workqueue.Trigger`, on by default) builds a trigger per event,
keeps it per key in the queue, and counts each reconcile by its trigger kind. This
benchmark runs the operator of `bench.bench_controllers` (copy ``spec.value`` into
``status.observed``, 8 workers) twice per repetition, provenance on and off,
alternating, each against its own embedded API server with the same objects, and
compares the operator's CPU time per update applied during the saturated churn phase
(the same phase and measure as the controllers benchmark). Target: on costs at most 5%
more than off.

Tracing is off in both (no tracer provider): its cost when off is one dictionary lookup
per event and per reconcile, included in both figures.

Environment: ``BENCH_PROVENANCE_SIZE`` (1000 objects), ``BENCH_PROVENANCE_REPEAT`` (3),
and ``BENCH_CHURN_SECONDS`` as for the controllers benchmark.
"""

from __future__ import annotations

import asyncio
import os
import statistics
from typing import Any

from bench import bench_controllers

SIZE = int(os.environ.get("BENCH_PROVENANCE_SIZE", "1000"))
REPEAT = int(os.environ.get("BENCH_PROVENANCE_REPEAT", "3"))
PEERS = {"on": "pyctrl", "off": "pyctrl-noprov"}
MEASURE = "cpu_ms_per_update_operator"
TARGET = 1.05


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
    return {"runs": runs, "cpu_ratio_on_off": ratios, "median_ratio": median}
