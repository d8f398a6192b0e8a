"""The embedded API server against an earlier version of itself, in the same run.

``python -m bench apiserver_against`` extracts ``src/`` of an earlier commit
(``BENCH_AGAINST``, by default 0c05ea2, the last commit before the server's fidelity work)
with ``git archive`` and serves requests from both versions, each as
``python -m pyctrl.envtest`` in its own process over HTTPS, driven by this process's
client. Three operations, each alternated ``BENCH_ROUNDS`` times (the order swapped every
round, a fresh server each time):

- ConfigMap creates (16 writers);
- merge patches of a custom resource with a status subresource (half to ``/status``);
- GETs of a custom resource.

For each it prints the medians of operations per second and of server CPU per operation
(from ``/proc``), and the median of the per-round ratios (this tree over the earlier one).
Wall time and CPU time move with whatever else the machine runs; with ``valgrind`` on
PATH and ``BENCH_INSTRUCTIONS=1`` it also counts the server's instructions per operation
(callgrind, the difference between two run lengths so that start-up cancels), a figure
the machine's load does not move.

Run: ``BENCH_AGAINST=<commit> python -m bench apiserver_against`` from a clone with history.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson

from bench.bench_controllers import _cpu_seconds, _server, _stop
from bench.operators import GROUP, PLURAL, VERSION
from pyctrl.client import RESTClient
from pyctrl.config import load_kubeconfig

AGAINST = os.environ.get("BENCH_AGAINST", "0c05ea2")
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "6"))
OPERATIONS = int(os.environ.get("BENCH_AGAINST_OPERATIONS", "3000"))
INSTRUCTIONS = os.environ.get("BENCH_INSTRUCTIONS") == "1"
WRITERS = 16
ITEMS = 100
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
ITEMS_PATH = f"/apis/{GROUP}/{VERSION}/namespaces/default/{PLURAL}"
ROOT = Path(__file__).resolve().parent.parent

Operation = Callable[[RESTClient, int], Awaitable[Any]]


async def _create(rest: RESTClient, n: int) -> None:
    body = orjson.dumps({"metadata": {"name": f"cm-{n:06d}"}, "data": {"k": "v" * 64}})
    await rest.request("POST", CONFIGMAPS, body=body, content_type="application/json")


async def _patch(rest: RESTClient, n: int) -> None:
    sub = "/status" if n % 2 else ""
    patch = {"status": {"observed": n}} if n % 2 else {"spec": {"value": n, "stamp": float(n)}}
    await rest.request(
        "PATCH",
        f"{ITEMS_PATH}/item-{n % ITEMS:05d}{sub}",
        body=orjson.dumps(patch),
        content_type="application/merge-patch+json",
    )


async def _get(rest: RESTClient, n: int) -> None:
    await rest.request("GET", f"{ITEMS_PATH}/item-{n % ITEMS:05d}")


OPS: dict[str, Operation] = {"configmap create": _create, "cr patch": _patch, "cr get": _get}


async def _fill(rest: RESTClient) -> None:
    for i in range(ITEMS):
        item = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "BenchItem",
            "metadata": {"name": f"item-{i:05d}", "namespace": "default"},
            "spec": {"value": 0, "stamp": 0.0},
        }
        await rest.request(
            "POST", ITEMS_PATH, body=orjson.dumps(item), content_type="application/json"
        )


async def _drive(rest: RESTClient, op: Operation, count: int, offset: int = 0) -> None:
    numbers = iter(range(offset, offset + count))

    async def writer() -> None:
        for n in numbers:
            await op(rest, n)

    await asyncio.gather(*(writer() for _ in range(WRITERS)))


async def _round(src: Path, op: Operation) -> tuple[float, float]:
    """(operations per second, server CPU µs per operation) on a fresh server."""
    with tempfile.TemporaryDirectory(prefix="bench-against-") as tmp:
        server, kubeconfig = await _server(Path(tmp), "against", src=src)
        try:
            async with RESTClient(await load_kubeconfig(kubeconfig)) as rest:
                await _fill(rest)
                await _drive(rest, op, 200, offset=10**6)  # warm-up
                cpu, wall = _cpu_seconds(server.pid), time.perf_counter()
                await _drive(rest, op, OPERATIONS)
                wall, cpu = time.perf_counter() - wall, _cpu_seconds(server.pid) - cpu
        finally:
            await _stop(server)
    return OPERATIONS / wall, cpu / OPERATIONS * 1e6


async def _instructions(src: Path, op: Operation, count: int) -> int:
    """The server's instructions over start-up, the fill and ``count`` operations."""
    with tempfile.TemporaryDirectory(prefix="bench-against-") as tmp:
        out = Path(tmp) / "callgrind.out"
        valgrind = ("valgrind", "--tool=callgrind", f"--callgrind-out-file={out}")
        server, kubeconfig = await _server(Path(tmp), "against", src=src, prefix=valgrind)
        try:
            async with RESTClient(await load_kubeconfig(kubeconfig)) as rest:
                await _fill(rest)
                await _drive(rest, op, count)
        finally:
            server.send_signal(signal.SIGTERM)
            await server.wait()
        for line in out.read_text(errors="replace").splitlines():
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    msg = f"no instruction count in {out}"
    raise RuntimeError(msg)


async def _per_op_instructions(src: Path, op: Operation) -> float:
    short, long = await asyncio.gather(_instructions(src, op, 100), _instructions(src, op, 600))
    return (long - short) / 500


def _extract(ref: str, into: Path) -> bool:
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "src"], capture_output=True, check=False
    )
    if archive.returncode != 0:
        return False
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return True


async def _compare(base: Path, *, instructions: bool) -> dict[str, float]:
    trees = {"this": ROOT / "src", "base": base}
    results: dict[str, float] = {}
    print(
        f"{'operation':<18} {'this /s':>9} {'base /s':>9} {'ratio':>6}   "
        f"{'this CPU µs':>11} {'base CPU µs':>11} {'ratio':>6}"
    )
    for name, op in OPS.items():
        runs: dict[str, list[tuple[float, float]]] = {"this": [], "base": []}
        for r in range(ROUNDS):
            for tree in ("this", "base") if r % 2 == 0 else ("base", "this"):
                runs[tree].append(await _round(trees[tree], op))
        rate = [t[0] / b[0] for t, b in zip(runs["this"], runs["base"], strict=True)]
        cpu = [t[1] / b[1] for t, b in zip(runs["this"], runs["base"], strict=True)]
        row = {
            "this_per_s": statistics.median(x[0] for x in runs["this"]),
            "base_per_s": statistics.median(x[0] for x in runs["base"]),
            "rate_ratio": statistics.median(rate),
            "this_cpu_us": statistics.median(x[1] for x in runs["this"]),
            "base_cpu_us": statistics.median(x[1] for x in runs["base"]),
            "cpu_ratio": statistics.median(cpu),
        }
        print(
            f"{name:<18} {row['this_per_s']:>9,.0f} {row['base_per_s']:>9,.0f} "
            f"{row['rate_ratio']:>6.3f}   {row['this_cpu_us']:>11,.0f} "
            f"{row['base_cpu_us']:>11,.0f} {row['cpu_ratio']:>6.3f}",
            flush=True,
        )
        results.update({f"{name.replace(' ', '_')}_{k}": v for k, v in row.items()})
        if instructions:
            this = await _per_op_instructions(trees["this"], op)
            earlier = await _per_op_instructions(trees["base"], op)
            print(
                f"{'':<18} server instructions per operation: {this:,.0f} against "
                f"{earlier:,.0f} ({this / earlier:.3f})",
                flush=True,
            )
            results[f"{name.replace(' ', '_')}_instructions_ratio"] = this / earlier
    print(
        f"({ROUNDS} rounds each, load average {os.getloadavg()[0]:.2f} at the end; "
        f"ratios are this tree over {AGAINST}, the median of the per-round ratios)"
    )
    return results


def main() -> dict[str, float]:
    """Compare this tree's server with ``BENCH_AGAINST``'s; print and return the figures."""
    with tempfile.TemporaryDirectory(prefix="bench-against-src-") as tmp:
        if not _extract(AGAINST, Path(tmp)):
            print(f"NOT RUN: {AGAINST} is not in this clone (git archive failed)")
            return {}
        instructions = INSTRUCTIONS and shutil.which("valgrind") is not None
        if INSTRUCTIONS and not instructions:
            print("valgrind is not on PATH: no instruction counts")
        return asyncio.run(_compare(Path(tmp) / "src", instructions=instructions))


if __name__ == "__main__":
    main()
