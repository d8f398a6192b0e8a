"""Benchmark: start-up imports, pyctrl's against kubernetes-asyncio's client, same run.

Each statement runs in a fresh interpreter (``python -X importtime -c ...``); rounds
alternate the statements, and the medians are reported. The peer is
``import kubernetes_asyncio.client``, what an operator written on kubernetes-asyncio
imports before its first request (kopf imports about as much). The figures:

- ``import pyctrl``: the everyday names (the manager's are deferred to first use);
- ``manager``: ``import pyctrl`` and the names a manager process uses (``Manager``,
  ``controller_managed_by``, ``Client``, ``Cache``, ``get_config``): what a cold start
  pays before it talks to the API server;
- ``kubernetes_asyncio.client``: the peer.

For each: wall time of the interpreter (its start included, measured the same way for
all), the cumulative import time ``-X importtime`` reports, and the modules loaded. The
guard: the manager's imports must stay within ``BENCH_STARTUP_MAX_RATIO`` (default 1.25:
in a development virtualenv structlog also loads rich) of the peer's import time, or the
run fails. Run with ``python -m bench startup``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

ROUNDS = int(os.environ.get("BENCH_STARTUP_ROUNDS", "7"))
MAX_RATIO = float(os.environ.get("BENCH_STARTUP_MAX_RATIO", "1.25"))

STATEMENTS = {
    "import pyctrl": "import pyctrl",
    "manager": (
        "import pyctrl\n"
        "from pyctrl import Cache, Client, Manager, controller_managed_by, get_config"
    ),
    "kubernetes_asyncio.client": "import kubernetes_asyncio.client",
}

_COUNT = "\nimport sys\nprint(len(sys.modules))"


def _measure(statement: str) -> tuple[float, float, int]:
    """Wall seconds, cumulative import seconds (top-level imports), modules loaded."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement + _COUNT],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    wall = time.perf_counter() - started
    imports = 0
    for line in done.stderr.splitlines():
        # "import time: self [us] | cumulative | <indent>name"; top level has no indent.
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line[len("import time:") :].split("|")
        if not name.startswith("  "):
            imports += int(cumulative)
    return wall, imports / 1e6, int(done.stdout.split()[-1])


def main() -> dict[str, object]:
    """Measure, print the table and the ratios, return the figures."""
    samples: dict[str, list[tuple[float, float, int]]] = {name: [] for name in STATEMENTS}
    for _ in range(ROUNDS):
        for name, statement in STATEMENTS.items():
            samples[name].append(_measure(statement))
    results: dict[str, dict[str, float]] = {}
    print(f"{'statement':<28}{'wall s':>9}{'imports s':>11}{'modules':>9}")
    for name, runs in samples.items():
        wall = statistics.median(run[0] for run in runs)
        imports = statistics.median(run[1] for run in runs)
        modules = runs[-1][2]
        results[name] = {"wall_s": wall, "imports_s": imports, "modules": modules}
        print(f"{name:<28}{wall:>9.3f}{imports:>11.3f}{modules:>9}")
    peer = results["kubernetes_asyncio.client"]
    ratios = {
        f"{name}_imports_ratio": results[name]["imports_s"] / peer["imports_s"]
        for name in ("import pyctrl", "manager")
    }
    for key, value in ratios.items():
        print(f"{key}: {value:.2f}x kubernetes_asyncio.client")
    if ratios["manager_imports_ratio"] > MAX_RATIO:
        raise SystemExit(
            f"a manager's imports take {ratios['manager_imports_ratio']:.2f}x "
            f"kubernetes_asyncio.client's, above the {MAX_RATIO}x guard"
        )
    return {"rounds": ROUNDS, **results, **ratios}


if __name__ == "__main__":
    main()
