"""Throughput of the embedded API server: writes, watch events and paginated lists.

The server must never be the bottleneck of pyctrl's benchmarks. This measures it the way
the controller benchmark uses it: ``python -m pyctrl.envtest`` in its own process, over
HTTPS, with the clients in this process, and reports the server's own CPU time per
operation (the figure that decides how much of two shared cores it takes):

- creates of ConfigMaps (16 concurrent writers);
- merge patches of a custom resource with a status subresource and a schema with
  defaults (the controller benchmark's ``BenchItem``): half to ``spec``, half to
  ``status``, each with managedFields tracking, pruning, defaulting and validation;
- watch fan-out: the same patches with 20 watchers of the custom resource open; events
  delivered per second over all watchers (the clients count lines, they do not decode),
  and the server CPU each delivered event adds;
- a paginated list (500 per page) of 10,000 ConfigMaps, as an informer's first list.

It also times the API layer alone (no HTTP: the resource's store from ``server.stores``
called in-process) for the same writes, which bounds what any HTTP stack could reach.

Run: ``python -m bench apiserver``.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from bench.bench_controllers import BASE, _cpu_seconds, _server, _stop
from bench.operators import GROUP, PLURAL, VERSION, BenchItem
from pyctrl.client import RESTClient
from pyctrl.config import load_kubeconfig

WRITERS = 16
CREATES = int(os.environ.get("BENCH_APISERVER_CREATES", "3000"))
PATCH_SECONDS = float(os.environ.get("BENCH_APISERVER_PATCH_SECONDS", "8"))
ITEMS = 1000
WATCHERS = 20
LIST_OBJECTS = int(os.environ.get("BENCH_APISERVER_LIST_OBJECTS", "10000"))
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def _item(i: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "BenchItem",
        "metadata": {"name": f"item-{i:05d}", "namespace": "default"},
        "spec": {"value": 0, "stamp": 0.0},
    }


def _patch_body(n: int) -> tuple[str, bytes]:
    if n % 2:
        return "/status", orjson.dumps({"status": {"observed": n}})
    return "", orjson.dumps({"spec": {"value": n, "stamp": time.time()}})


class _Meter:
    """Wall time and server CPU time between start and stop."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.wall = time.perf_counter()
        self.cpu = _cpu_seconds(pid)

    def per(self, count: int) -> tuple[float, float]:
        """(operations per second, server CPU milliseconds per operation)."""
        wall = time.perf_counter() - self.wall
        cpu = _cpu_seconds(self.pid) - self.cpu
        return count / wall, cpu / max(count, 1) * 1000


async def _gather_writers(count: int, one: Any) -> None:
    numbers = iter(range(count))

    async def writer() -> None:
        for n in numbers:
            await one(n)

    await asyncio.gather(*(writer() for _ in range(WRITERS)))


async def _creates(rest: RESTClient, pid: int) -> dict[str, float]:
    async def one(n: int) -> None:
        body = orjson.dumps({"metadata": {"name": f"cm-{n:06d}"}, "data": {"k": "v" * 64}})
        await rest.request("POST", CONFIGMAPS, body=body, content_type="application/json")

    meter = _Meter(pid)
    await _gather_writers(CREATES, one)
    rate, cpu = meter.per(CREATES)
    return {"creates_per_s": rate, "create_server_cpu_ms": cpu}


async def _patches(rest: RESTClient, pid: int) -> dict[str, float]:
    await _gather_writers(
        ITEMS,
        lambda i: rest.request(
            "POST", BASE, body=orjson.dumps(_item(i)), content_type="application/json"
        ),
    )
    counted = 0
    stop_at = 0.0

    async def writer(index: int) -> None:
        nonlocal counted
        n = index
        while time.monotonic() < stop_at:
            sub, body = _patch_body(n)
            path = f"{BASE}/item-{n % ITEMS:05d}{sub}"
            await rest.request(
                "PATCH", path, body=body, content_type="application/merge-patch+json"
            )
            counted += 1
            n += WRITERS

    received = [0] * WATCHERS
    ready = asyncio.Event()
    opened = 0

    async def watcher(index: int) -> None:
        nonlocal opened
        listing = (await rest.request("GET", BASE, query={"limit": "1"})).json()
        query = {"watch": "1", "resourceVersion": listing["metadata"]["resourceVersion"]}
        async with rest.stream(BASE, query=query, read_timeout=120) as lines:
            opened += 1
            if opened == WATCHERS:
                ready.set()
            async for _ in lines:
                received[index] += 1

    stop_at = time.monotonic() + PATCH_SECONDS / 2
    meter = _Meter(pid)
    await asyncio.gather(*(writer(i) for i in range(WRITERS)))
    alone_rate, alone_cpu = meter.per(counted)
    async with asyncio.TaskGroup() as tg:
        watchers = [tg.create_task(watcher(i)) for i in range(WATCHERS)]
        await ready.wait()
        counted = 0
        stop_at = time.monotonic() + PATCH_SECONDS / 2
        meter = _Meter(pid)
        await asyncio.gather(*(writer(i) for i in range(WRITERS)))
        rate, cpu = meter.per(counted)
        # Let the watchers catch up with the last writes before counting (every patch
        # changes its object, so each makes one event per watcher).
        last, still = -1, 0
        while sum(received) < counted * WATCHERS and still < 20:
            await asyncio.sleep(0.05)
            still = still + 1 if sum(received) == last else 0
            last = sum(received)
        events_rate, _ = meter.per(sum(received))
        for task in watchers:
            task.cancel()
    return {
        "cr_patches_per_s": alone_rate,
        "cr_patch_server_cpu_ms": alone_cpu,
        "cr_patches_per_s_with_20_watchers": rate,
        "cr_patch_server_cpu_ms_with_20_watchers": cpu,
        "watch_events_delivered_per_s": events_rate,
        "watch_event_server_cpu_us": (cpu - alone_cpu) / WATCHERS * 1000,
    }


async def _list(rest: RESTClient, pid: int) -> dict[str, float]:
    await _gather_writers(
        LIST_OBJECTS - CREATES,
        lambda n: rest.request(
            "POST",
            CONFIGMAPS,
            body=orjson.dumps({"metadata": {"name": f"cm-{CREATES + n:06d}"}, "data": {"k": "v"}}),
            content_type="application/json",
        ),
    )
    meter = _Meter(pid)
    objects = 0
    token = ""
    while True:
        query = {"limit": "500", **({"continue": token} if token else {})}
        page = (await rest.request("GET", CONFIGMAPS, query=query)).json()
        objects += len(page["items"])
        token = page["metadata"].get("continue", "")
        if not token:
            break
    seconds = time.perf_counter() - meter.wall
    rate, cpu = meter.per(objects)
    return {
        "paginated_list_10k_s": seconds,
        "list_objects_per_s": rate,
        "list_server_cpu_us_per_object": cpu * 1000,
    }


async def _over_https() -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-apiserver-") as tmp:
        server, kubeconfig = await _server(Path(tmp), "apiserver")
        try:
            config = await load_kubeconfig(kubeconfig)
            async with RESTClient(config) as rest:
                results = await _creates(rest, server.pid)
                results.update(await _patches(rest, server.pid))
                results.update(await _list(rest, server.pid))
        finally:
            await _stop(server)
    return results


async def _in_process() -> dict[str, float]:
    """The API layer alone: the same writes, called without HTTP in this process."""
    from pyctrl._apiserver.registry.generic import RequestContext
    from pyctrl.crd import crd_for
    from pyctrl.envtest import Environment

    async with Environment(crds=[crd_for(BenchItem)]) as env:
        assert env.server is not None
        rt = env.server.registry.lookup(GROUP, VERSION, PLURAL)
        assert rt is not None
        items = env.server.stores.for_type(rt)
        started = time.perf_counter()
        for i in range(ITEMS):
            await items.create(RequestContext(field_manager="bench"), "default", _item(i))
        creates = ITEMS / (time.perf_counter() - started)
        started = time.perf_counter()
        count = 4 * ITEMS
        for n in range(count):
            sub, body = _patch_body(n)
            ctx = RequestContext(
                field_manager="op" if sub else "driver",
                patch_type="merge",
                patch=orjson.loads(body),
            )
            await items.patch(ctx, "default", f"item-{n % ITEMS:05d}", subresource=sub.lstrip("/"))
        patches = count / (time.perf_counter() - started)
    return {"api_layer_cr_creates_per_s": creates, "api_layer_cr_patches_per_s": patches}


def main() -> dict[str, float]:
    """Measure and print the server's throughput and CPU cost per operation."""
    results = asyncio.run(_in_process())
    results.update(asyncio.run(_over_https()))
    width = max(len(k) for k in results)
    for key, value in results.items():
        print(f"{key:<{width}}  {value:>12,.2f}")
    return results


if __name__ == "__main__":
    main()
