"""pyctrl against kopf, the same work on the same embedded API server, in one run.

For each size (1,000 and 10,000 existing custom resources by default), each repetition
and each peer (pyctrl and kopf alternate, so both see the same machine load) the driver:

1. starts the embedded API server in its own process and creates N ``BenchItem``s;
2. starts the operator in its own process and times the cold start: until every
   object's ``status.observed`` equals its ``spec.value``;
3. reads the operator's resident memory (after the cold start, all objects cached);
4. churns: for a fixed time, 32 concurrent writers bump ``spec.value`` of random
   objects as fast as the server answers; throughput is updates applied per second,
   counting the drain after the writers stop; the latency of an update is the time
   from the write's answer to the watch event showing ``status.observed`` equal to it
   (an update overtaken by a later one to the same object has no latency sample);
5. paced churn: the same writers at a fixed total rate that both peers sustain
   (``BENCH_PACED_RATE``, default 50 updates/s): the event-to-reconcile latency of an
   operator that is not saturated, where the saturated latency above is mostly the
   time an update waits behind the backlog;
6. backlog drain: the operator is paused (SIGSTOP), one update is written to each of
   ``min(N, BENCH_DRAIN)`` distinct objects, the operator is resumed (SIGCONT), and
   the drain throughput is those updates over the time until every one is reconciled.
   Here the operator, not the writers, sets the pace: it is the throughput of the
   operator itself, where the saturated churn above is bounded by what the API server
   and the driver can push through two shared cores;
7. stops the operator (SIGTERM) and the server.

Both operators (bench/operators.py) do the same: copy ``spec.value`` into
``status.observed`` through the status subresource. kopf runs with event posting off
and standalone (no peering); pyctrl with 8 workers. Each works the idiomatic way of
its framework, with its defaults: kopf also patches its last-handled-configuration
annotation on every change (that is where it keeps its state), pyctrl does not.

The CPU seconds each process spends during the saturated churn are reported per update
applied: they show which process limits the throughput (the API server and the driver
are shared by both peers). Memory is reported as the operator's total resident set and,
when both 1,000 and 10,000 are measured, as the slope per object
``(RSS at 10k - RSS at 1k) / 9k``, which leaves out the fixed cost of the imports.

Three processes share the machine (two cores here), so absolute numbers are noisy:
compare the ratios, and repeat (``BENCH_REPEAT``) to see their range.

Environment: ``BENCH_SIZES`` (``1000,10000``), ``BENCH_CHURN_SECONDS`` (15),
``BENCH_PACED_SECONDS`` (20; 0 skips the paced phase), ``BENCH_PACED_RATE`` (50),
``BENCH_DRAIN`` (10000; 0 skips the drain),
``BENCH_REPEAT`` (1), ``BENCH_PEERS`` (``pyctrl,kopf``; ``pyctrl,client-go`` runs the Go
baseline of ``bench/clientgo``, a dynamic informer and a one-worker workqueue, whose
binary ``BENCH_CLIENTGO`` names: ``python -m bench.clientgo_build``; with
``KUBEBUILDER_ASSETS`` the server is the real one, see ``nox -s bench_realserver``;
the targets are the kopf issue's), ``BENCH_PROFILE`` (a directory:
run the server and operator processes under cProfile, one ``.prof`` file each).
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
PACED_SECONDS = float(os.environ.get("BENCH_PACED_SECONDS", "20"))
PACED_RATE = float(os.environ.get("BENCH_PACED_RATE", "50"))
DRAIN = int(os.environ.get("BENCH_DRAIN", "10000"))
REPEAT = int(os.environ.get("BENCH_REPEAT", "1"))
PEERS = tuple(os.environ.get("BENCH_PEERS", "pyctrl,kopf").split(","))
PROFILE_DIR = os.environ.get("BENCH_PROFILE", "")
WRITERS = 32
_SERVER_MODULE = (
    "bench.realserver_env" if os.environ.get("KUBEBUILDER_ASSETS") else "pyctrl.envtest"
)
COLD_START_LIMIT = 900.0
SETTLE_LIMIT = 300.0
BASE = f"/apis/{GROUP}/{VERSION}/namespaces/default/{PLURAL}"
_TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Tracker:
    """What the driver's watch has seen: each object's spec value and observed value.

    The objects whose status lags behind their spec are kept as a set, so that waiting
    for the operator costs the driver nothing per event (it shares the CPUs with it).
    """

    spec: dict[str, int] = field(default_factory=dict)
    observed: dict[str, int] = field(default_factory=dict)
    unsettled: set[str] = field(default_factory=set)
    written_at: dict[tuple[str, int], float] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    settled: asyncio.Event = field(default_factory=asyncio.Event)

    def _check(self, name: str) -> None:
        if self.observed.get(name) == self.spec.get(name):
            self.unsettled.discard(name)
            if not self.unsettled:
                self.settled.set()
        else:
            self.unsettled.add(name)
            self.settled.clear()

    def wrote(self, name: str, value: int) -> None:
        """The driver set ``spec.value`` of ``name`` to ``value``."""
        self.spec[name] = value
        self._check(name)

    def see(self, obj: dict[str, Any]) -> None:
        """The watch delivered ``obj``."""
        name = obj["metadata"]["name"]
        value = int((obj.get("spec") or {}).get("value", 0))
        self.spec[name] = max(self.spec.get(name, value), value)
        observed = (obj.get("status") or {}).get("observed")
        if observed is not None and self.observed.get(name) != observed:
            self.observed[name] = int(observed)
            written = self.written_at.pop((name, int(observed)), None)
            if written is not None:
                self.latencies.append(time.monotonic() - written)
        self._check(name)

    def take_latencies(self) -> list[float]:
        """The latencies measured since the last call."""
        taken, self.latencies = self.latencies, []
        self.written_at.clear()
        return taken


def _profiled(name: str) -> tuple[str, ...]:
    if not PROFILE_DIR:
        return ()
    Path(PROFILE_DIR).mkdir(parents=True, exist_ok=True)
    return ("-m", "cProfile", "-o", str(Path(PROFILE_DIR) / f"{name}.prof"))


async def _server(
    workdir: Path, tag: str, *, src: Path | None = None, prefix: tuple[str, ...] = ()
) -> tuple[asyncio.subprocess.Process, Path]:
    """The server of the benchmark's CRD; ``src``: pyctrl's sources to serve it from,
    ``prefix``: a command to run it under (valgrind)."""
    crd_file = workdir / "crd.yaml"
    crd_file.write_text(to_yaml(crd_for(BenchItem)))
    kubeconfig = workdir / "kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        # With KUBEBUILDER_ASSETS, the real API server those binaries give.
        *(*prefix, sys.executable, *_profiled(f"server-{tag}"), "-m", _SERVER_MODULE),
        *("--crds", str(crd_file), "--kubeconfig-out", str(kubeconfig)),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(src)} if src is not None else None,
    )
    assert proc.stdout is not None
    async with asyncio.timeout(600 if prefix else 60):
        # The server prints the kubeconfig path once it serves and the CRDs are established.
        while str(kubeconfig) not in (await proc.stdout.readline()).decode():
            pass
    return proc, kubeconfig


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(60):
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
    # A real API server ends watches after its request timeout: list and watch again.
    while True:
        listing = (await rest.request("GET", BASE)).json()
        for item in listing["items"]:
            tracker.see(item)
        query = {"watch": "1", "resourceVersion": listing["metadata"]["resourceVersion"]}
        ready.set()
        async with rest.stream(BASE, query=query, read_timeout=1800) as lines:
            async for line in lines:
                event = orjson.loads(line)
                if event["type"] in ("ADDED", "MODIFIED"):
                    tracker.see(event["object"])


async def _wait_settled(tracker: Tracker, limit: float) -> bool:
    try:
        async with asyncio.timeout(limit):
            while tracker.unsettled:
                await tracker.settled.wait()
    except TimeoutError:
        return False
    return True


def _rss_mib(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process (and its reaped children)."""
    # The command name (field 2) may hold spaces: split after its closing parenthesis.
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / _TICK


class CPUMeter:
    """CPU seconds used by the server, the operator and this driver between two points."""

    def __init__(self, server: int, operator: int) -> None:
        self._pids = {"server": server, "operator": operator}
        self._start = self._now()

    def _now(self) -> dict[str, float]:
        now = {name: _cpu_seconds(pid) for name, pid in self._pids.items()}
        now["driver"] = time.process_time()
        return now

    def used(self) -> dict[str, float]:
        end = self._now()
        return {name: end[name] - self._start[name] for name in end}


async def _churn(
    rest: RESTClient, tracker: Tracker, n: int, seconds: float, rate: float | None
) -> tuple[int, float]:
    """Bump ``spec.value`` of random objects for ``seconds`` (at ``rate`` per second in all)."""
    names = [f"item-{i:05d}" for i in range(n)]
    writes = 0
    started = time.monotonic()
    stop_at = started + seconds

    # One write at a time per object: a server that handles requests concurrently (a
    # real one) may apply two concurrent patches of one object in either order, leaving
    # the lower value in place while the tracker waits for the higher one forever.
    in_flight: set[str] = set()
    writers = max(1, min(WRITERS, n // 2))  # so that a writer always finds a free object

    async def writer(index: int) -> None:
        nonlocal writes
        rng = random.Random()
        next_at = started + index / rate if rate else 0.0
        while time.monotonic() < stop_at:
            if rate:
                await asyncio.sleep(max(0.0, next_at - time.monotonic()))
                # A writer that fell behind does not burst to catch up.
                next_at = max(next_at + writers / rate, time.monotonic())
            name = rng.choice(names)
            while name in in_flight:
                name = rng.choice(names)
            in_flight.add(name)
            value = tracker.spec.get(name, 0) + 1
            tracker.wrote(name, value)
            patch = orjson.dumps({"spec": {"value": value, "stamp": time.time()}})
            try:
                await rest.request(
                    "PATCH",
                    f"{BASE}/{name}",
                    body=patch,
                    content_type="application/merge-patch+json",
                )
            finally:
                in_flight.discard(name)
            tracker.written_at[(name, value)] = time.monotonic()
            writes += 1

    await asyncio.gather(*(writer(i) for i in range(writers)))
    if not await _wait_settled(tracker, SETTLE_LIMIT):
        return writes, float("inf")
    return writes, time.monotonic() - started


async def _drain(
    rest: RESTClient, tracker: Tracker, n: int, operator_pid: int
) -> tuple[int, float]:
    """Updates to distinct objects written while the operator is paused, then drained."""
    count = min(n, DRAIN)
    names = iter([f"item-{i:05d}" for i in range(count)])

    async def writer() -> None:
        for name in names:
            value = tracker.spec.get(name, 0) + 1
            tracker.wrote(name, value)
            patch = orjson.dumps({"spec": {"value": value, "stamp": time.time()}})
            await rest.request(
                "PATCH", f"{BASE}/{name}", body=patch, content_type="application/merge-patch+json"
            )

    os.kill(operator_pid, signal.SIGSTOP)
    try:
        await asyncio.gather(*(writer() for _ in range(WRITERS)))
    finally:
        os.kill(operator_pid, signal.SIGCONT)
    started = time.monotonic()
    if not await _wait_settled(tracker, SETTLE_LIMIT):
        return count, float("inf")
    return count, time.monotonic() - started


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000


def _operator_command(peer: str, n: int, tag: str, kubeconfig: Path) -> tuple[str, ...]:
    if peer == "client-go":
        # The Go baseline (bench/clientgo), built by bench/clientgo_build.py.
        binary = os.environ.get("BENCH_CLIENTGO")
        if not binary:
            raise SystemExit(
                "the client-go peer needs BENCH_CLIENTGO (python -m bench.clientgo_build)"
            )
        return (binary, "--kubeconfig", str(kubeconfig))
    return (sys.executable, *_profiled(f"{peer}-{n}-{tag}"), "-m", "bench.operators", peer)


async def _run_peer(peer: str, n: int, tag: str) -> dict[str, float]:
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix=f"bench-{peer}-") as tmp:
        workdir = Path(tmp)
        server, kubeconfig = await _server(workdir, f"{peer}-{n}-{tag}")
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
                        *_operator_command(peer, n, tag, kubeconfig),
                        env=env,
                        stdout=asyncio.subprocess.DEVNULL,
                        stderr=asyncio.subprocess.DEVNULL,
                    )
                    try:
                        out = await _measure(rest, tracker, n, server.pid, operator.pid)
                    finally:
                        await _stop(operator)
                        watcher.cancel()
        finally:
            await _stop(server)
    return out


async def _measure(
    rest: RESTClient, tracker: Tracker, n: int, server_pid: int, operator_pid: int
) -> dict[str, float]:
    started = time.monotonic()
    done = await _wait_settled(tracker, COLD_START_LIMIT)
    out: dict[str, float] = {
        "cold_start_s": time.monotonic() - started if done else float("inf"),
        "rss_mib": _rss_mib(operator_pid),
        "max_rss_mib": _rss_mib(operator_pid, "VmHWM"),
    }
    out["rss_kib_per_object"] = out["rss_mib"] * 1024 / n
    if not done:
        return out
    tracker.take_latencies()
    meter = CPUMeter(server_pid, operator_pid)
    writes, elapsed = await _churn(rest, tracker, n, CHURN_SECONDS, None)
    cpu = meter.used()
    latencies = tracker.take_latencies()
    out.update(
        {
            "throughput_per_s": writes / elapsed if elapsed else 0.0,
            "p50_ms": _percentile(latencies, 0.5),
            "p99_ms": _percentile(latencies, 0.99),
            "latency_samples": float(len(latencies)),
        }
    )
    for name, seconds in cpu.items():
        out[f"cpu_ms_per_update_{name}"] = seconds / writes * 1000 if writes else float("nan")
    if PACED_SECONDS > 0:
        writes, elapsed = await _churn(rest, tracker, n, PACED_SECONDS, PACED_RATE)
        latencies = tracker.take_latencies()
        out.update(
            {
                "paced_rate_per_s": writes / PACED_SECONDS,
                "paced_p50_ms": _percentile(latencies, 0.5),
                "paced_p99_ms": _percentile(latencies, 0.99),
            }
        )
    if DRAIN > 0:
        tracker.take_latencies()
        count, elapsed = await _drain(rest, tracker, n, operator_pid)
        out["drain_per_s"] = count / elapsed
        tracker.take_latencies()
    out["rss_after_churn_mib"] = _rss_mib(operator_pid)
    return out


METRICS = (
    "cold_start_s",
    "throughput_per_s",
    "drain_per_s",
    "p50_ms",
    "p99_ms",
    "paced_p50_ms",
    "paced_p99_ms",
    "rss_mib",
    "max_rss_mib",
    "rss_after_churn_mib",
    "rss_kib_per_object",
)
CPU_METRICS = ("cpu_ms_per_update_server", "cpu_ms_per_update_operator", "cpu_ms_per_update_driver")
TARGETS = {
    "throughput_per_s": (">=", 5.0),
    "drain_per_s": (">=", 5.0),
    "p99_ms": ("<=", 0.5),
    "paced_p99_ms": ("<=", 0.5),
    "rss_mib": ("<=", 0.5),
    "rss_after_churn_mib": ("<=", 0.5),
    "rss_slope_kib_per_object": ("<=", 0.5),
}


def _ratio(a: float, b: float) -> float:
    if b == 0 or math.isnan(a) or math.isnan(b) or math.isinf(b):
        return float("nan")
    return a / b


def _span(values: list[float]) -> str:
    finite = [v for v in values if not math.isnan(v)]
    if not finite:
        return "n/a"
    if len(finite) == 1:
        return f"{finite[0]:.2f}"
    return f"{statistics.median(finite):.2f} ({min(finite):.2f}-{max(finite):.2f})"


def _target(metric: str, n: int) -> tuple[str, float] | None:
    if PEERS[-1] != "client-go":
        return TARGETS.get(metric)
    # Against client-go, the goals of the project's issue on client-go, by size.
    if metric == "cold_start_s":
        return ("<=", 2.0 if n < 10_000 else 1.1)
    if metric == "max_rss_mib" and n >= 10_000:
        return ("<=", 0.5 if n >= 100_000 else 0.6)
    return None


def _verdict(metric: str, ratios: list[float], n: int = 0) -> str:
    target = _target(metric, n)
    finite = [r for r in ratios if not math.isnan(r)]
    if target is None or not finite:
        return ""
    op, bar = target
    met = [r >= bar if op == ">=" else r <= bar for r in finite]
    if all(met):
        return f"met ({op} {bar:g})"
    if any(met):
        return f"partly ({op} {bar:g})"
    return f"NOT met ({op} {bar:g})"


def _slopes(results: dict[str, list[dict[str, float]]], peer: str) -> list[float]:
    """Resident memory per object, KiB, between the smallest and the largest size."""
    small, large = min(SIZES), max(SIZES)
    if small == large:
        return []
    runs_small = results.get(f"{peer}-{small}", [])
    runs_large = results.get(f"{peer}-{large}", [])
    return [
        (b["rss_mib"] - a["rss_mib"]) * 1024 / (large - small)
        for a, b in zip(runs_small, runs_large, strict=False)
    ]


def _table(results: dict[str, list[dict[str, float]]]) -> None:
    both = len(PEERS) == 2
    peer = PEERS[-1] if both else "kopf"
    print()
    print("median (min-max) over", REPEAT, "run(s) each")
    header = f"{'objects':>8} {'metric':<27} {'pyctrl':>22} {peer:>22}"
    print(header + (f" {'pyctrl/' + peer:>22}  target" if both else ""))
    for n in SIZES:
        p_runs = results.get(f"pyctrl-{n}", [])
        k_runs = results.get(f"{peer}-{n}", [])
        for metric in METRICS + CPU_METRICS:
            p = [r.get(metric, float("nan")) for r in p_runs]
            k = [r.get(metric, float("nan")) for r in k_runs]
            line = f"{n:>8} {metric:<27} {_span(p):>22} {_span(k):>22}"
            if both:
                ratios = [_ratio(a, b) for a, b in zip(p, k, strict=False)]
                line += f" {_span(ratios):>22}  {_verdict(metric, ratios, n)}"
            print(line)
    if len(SIZES) > 1:
        p, k = _slopes(results, "pyctrl"), _slopes(results, peer)
        metric = "rss_slope_kib_per_object"
        line = f"{'slope':>8} {metric:<27} {_span(p):>22} {_span(k):>22}"
        if both:
            ratios = [_ratio(a, b) for a, b in zip(p, k, strict=False)]
            line += f" {_span(ratios):>22}  {_verdict(metric, ratios)}"
        print(line)


def _order(rep: int) -> tuple[str, ...]:
    """The peers' order in repetition ``rep``: alternated, so neither always runs first."""
    return PEERS if rep % 2 == 0 else tuple(reversed(PEERS))


def main() -> dict[str, Any]:
    """Run both peers at every size, repeatedly, and print the table of ratios."""
    results: dict[str, list[dict[str, float]]] = {}
    for n in SIZES:
        for rep in range(REPEAT):
            for peer in _order(rep):
                print(f"running {peer} with {n} objects (run {rep + 1}/{REPEAT}) ...", flush=True)
                load = os.getloadavg()[0]
                run = asyncio.run(_run_peer(peer, n, str(rep)))
                # The machine's load (1-minute average) before and after the run.
                run["load_before"], run["load_after"] = load, os.getloadavg()[0]
                results.setdefault(f"{peer}-{n}", []).append(run)
                print("  " + ", ".join(f"{k}={v:.2f}" for k, v in run.items()), flush=True)
    _table(results)
    loads = [r[k] for runs in results.values() for r in runs for k in ("load_before", "load_after")]
    print(f"load average (1 min) during the runs: {min(loads):.1f}-{max(loads):.1f}")
    return {"results": results, "slopes_kib_per_object": {p: _slopes(results, p) for p in PEERS}}


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
