"""pyctrl against kopf, the same work on the same embedded API server, in one run.

For each peer and each size (1,000 and 10,000 existing custom resources) the driver:

1. starts the embedded API server in its own process and creates N ``BenchItem``s;
2. starts the operator in its own process and times the cold start: until every
   object's ``status.observed`` equals its ``spec.value``;
3. reads the operator's resident memory;
4. churns: for a fixed time, 32 concurrent writers bump ``spec.value`` of random
   objects; the latency of an update is the time from the write's answer to the
   watch event showing ``status.observed`` equal to it; throughput is updates applied
   per second, counting the drain after the writers stop;
5. stops the operator (SIGTERM) and the server.

Both operators (bench/operators.py) do the same: copy ``spec.value`` into
``status.observed`` through the status subresource. kopf runs with event posting off
and standalone (no peering); pyctrl with 8 workers. Three processes share two cores,
so absolute numbers are noisy: compare the ratios.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from bench.operators import GROUP, PLURAL, VERSION, BenchItem
from pyctrl.client import RESTClient
from pyctrl.config import load_kubeconfig
from pyctrl.crd import crd_for, to_yaml

SIZES = tuple(int(x) for x in os.environ.get("BENCH_SIZES", "1000,10000").split(","))
CHURN_SECONDS = float(os.environ.get("BENCH_CHURN_SECONDS", "15"))
WRITERS = 32
COLD_START_LIMIT = 600.0
BASE = f"/apis/{GROUP}/{VERSION}/namespaces/default/{PLURAL}"


@dataclass
class Tracker:
    """What the driver's watch has seen: each object's spec value and observed value."""

    spec: dict[str, int] = field(default_factory=dict)
    observed: dict[str, int] = field(default_factory=dict)
    written_at: dict[tuple[str, int], float] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def pending(self) -> int:
        return sum(1 for name, value in self.spec.items() if self.observed.get(name) != value)

    def see(self, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        value = int((obj.get("spec") or {}).get("value", 0))
        self.spec[name] = max(self.spec.get(name, value), value)
        observed = (obj.get("status") or {}).get("observed")
        if observed is not None and self.observed.get(name) != observed:
            self.observed[name] = int(observed)
            written = self.written_at.pop((name, int(observed)), None)
            if written is not None:
                self.latencies.append(time.monotonic() - written)
        self.changed.set()


async def _server(workdir: Path) -> tuple[asyncio.subprocess.Process, Path]:
    crd_file = workdir / "crd.yaml"
    crd_file.write_text(to_yaml(crd_for(BenchItem)))
    kubeconfig = workdir / "kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "pyctrl.envtest", "--crds", str(crd_file)),
        *("--kubeconfig-out", str(kubeconfig)),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    async with asyncio.timeout(60):
        # The server prints the kubeconfig path once it serves and the CRDs are established.
        while str(kubeconfig) not in (await proc.stdout.readline()).decode():
            pass
    return proc, kubeconfig


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(30):
                await proc.wait()
        except TimeoutError:
            proc.kill()
            await proc.wait()


async def _create(rest: RESTClient, n: int) -> None:
    semaphore = asyncio.Semaphore(WRITERS)

    async def one(i: int) -> None:
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "BenchItem",
            "metadata": {"name": f"item-{i:05d}", "namespace": "default"},
            "spec": {"value": 0, "stamp": 0.0},
        }
        async with semaphore:
            await rest.request(
                "POST", BASE, body=orjson.dumps(body), content_type="application/json"
            )

    await asyncio.gather(*(one(i) for i in range(n)))


async def _watch(rest: RESTClient, tracker: Tracker, ready: asyncio.Event) -> None:
    listing = (await rest.request("GET", BASE)).json()
    for item in listing["items"]:
        tracker.see(item)
    query = {"watch": "1", "resourceVersion": listing["metadata"]["resourceVersion"]}
    ready.set()
    async with rest.stream(BASE, query=query, read_timeout=600) as lines:
        async for line in lines:
            event = orjson.loads(line)
            if event["type"] in ("ADDED", "MODIFIED"):
                tracker.see(event["object"])


async def _wait_settled(tracker: Tracker, limit: float) -> bool:
    try:
        async with asyncio.timeout(limit):
            while tracker.pending():
                tracker.changed.clear()
                await tracker.changed.wait()
    except TimeoutError:
        return False
    return True


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def _churn(rest: RESTClient, tracker: Tracker, n: int) -> tuple[int, float]:
    names = [f"item-{i:05d}" for i in range(n)]
    writes = 0
    stop_at = time.monotonic() + CHURN_SECONDS

    async def writer() -> None:
        nonlocal writes
        rng = random.Random()
        while time.monotonic() < stop_at:
            name = rng.choice(names)
            value = tracker.spec.get(name, 0) + 1
            tracker.spec[name] = value
            patch = orjson.dumps({"spec": {"value": value, "stamp": time.time()}})
            await rest.request(
                "PATCH", f"{BASE}/{name}", body=patch, content_type="application/merge-patch+json"
            )
            tracker.written_at[(name, value)] = time.monotonic()
            writes += 1

    started = time.monotonic()
    await asyncio.gather(*(writer() for _ in range(WRITERS)))
    await _wait_settled(tracker, 300)
    return writes, time.monotonic() - started


async def _run_peer(peer: str, n: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix=f"bench-{peer}-") as tmp:
        workdir = Path(tmp)
        server, kubeconfig = await _server(workdir)
        try:
            config = await load_kubeconfig(kubeconfig)
            async with RESTClient(config) as rest:
                await _create(rest, n)
                tracker, ready = Tracker(), asyncio.Event()
                async with asyncio.TaskGroup() as tg:
                    watcher = tg.create_task(_watch(rest, tracker, ready))
                    await ready.wait()
                    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
                    operator = await asyncio.create_subprocess_exec(
                        *(sys.executable, "-m", "bench.operators", peer),
                        env=env,
                        stdout=asyncio.subprocess.DEVNULL,
                        stderr=asyncio.subprocess.DEVNULL,
                    )
                    try:
                        started = time.monotonic()
                        done = await _wait_settled(tracker, COLD_START_LIMIT)
                        cold = time.monotonic() - started if done else float("inf")
                        rss = _rss_mib(operator.pid)
                        writes, elapsed = (0, 0.0)
                        if done:
                            writes, elapsed = await _churn(rest, tracker, n)
                    finally:
                        await _stop(operator)
                        watcher.cancel()
        finally:
            await _stop(server)
    lat = sorted(tracker.latencies) or [float("nan")]
    return {
        "cold_start_s": cold,
        "rss_mib": rss,
        "throughput_per_s": writes / elapsed if elapsed else 0.0,
        "p50_ms": statistics.median(lat) * 1000,
        "p99_ms": lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000,
        "latency_samples": float(len(tracker.latencies)),
    }


def _ratio(a: float, b: float) -> str:
    if b == 0 or math.isnan(a) or math.isnan(b):
        return "n/a"
    return f"{a / b:.2f}"


def main() -> dict[str, Any]:
    """Run both peers at both sizes and print the table of ratios."""
    results: dict[str, Any] = {}
    for n in SIZES:
        for peer in ("pyctrl", "kopf"):
            print(f"running {peer} with {n} objects ...", flush=True)
            results[f"{peer}-{n}"] = asyncio.run(_run_peer(peer, n))
            print(f"  {results[f'{peer}-{n}']}", flush=True)
    print()
    header = f"{'objects':>8} {'metric':<18} {'pyctrl':>10} {'kopf':>10} {'pyctrl/kopf':>12}"
    print(header)
    for n in SIZES:
        p, k = results[f"pyctrl-{n}"], results[f"kopf-{n}"]
        for metric in ("cold_start_s", "throughput_per_s", "p50_ms", "p99_ms", "rss_mib"):
            ratio = _ratio(p[metric], k[metric])
            print(f"{n:>8} {metric:<18} {p[metric]:>10.2f} {k[metric]:>10.2f} {ratio:>12}")
    return results


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
