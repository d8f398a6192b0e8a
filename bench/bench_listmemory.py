"""Benchmark: an informer's peak memory when the server answers its list in one response.

A server without streaming lists answers ``resourceVersion=0`` from its watch cache, in
one response whatever ``limit`` says. pyctrl decodes that response as it arrives and
encodes each object for the store as soon as it is decoded (``incremental``); the peer,
measured in the same run, is the same informer decoding the whole body at once, as pyctrl
did before (``whole``: the body, and every decoded object, held together). For reference,
the streaming list (``streaming``, a watch with ``sendInitialEvents``).

Each side runs in a child process of its own against one embedded API server holding
``BENCH_LIST_OBJECTS`` ConfigMaps of about 1 KB (10,000 by default), ``BENCH_REPEAT``
times (3), alternating. Figures: the child's peak resident set during the sync (``VmHWM``,
reset just before it), the peak above its resident set before the sync, and the sync
time. Ratios:
``incremental`` against ``whole``. Run with ``python -m bench listmemory``.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import statistics
import sys
import time
from typing import Any

OBJECTS = int(os.environ.get("BENCH_LIST_OBJECTS", "10000"))
REPEAT = int(os.environ.get("BENCH_REPEAT", "3"))
SIDES = ("incremental", "whole", "streaming")
NAMESPACE = "bench"


def _configmap(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"cm-{i:06d}", "namespace": NAMESPACE, "labels": {"app": "b"}},
        "data": {f"key-{j}": f"{i:06d}-" + "v" * 64 for j in range(9)},
    }


async def _populate(rest: Any, objects: int) -> None:
    import orjson

    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    await rest.request(
        "POST", "/api/v1/namespaces", body=orjson.dumps(namespace), content_type="application/json"
    )
    gate = asyncio.Semaphore(64)
    base = f"/api/v1/namespaces/{NAMESPACE}/configmaps"

    async def create(i: int) -> None:
        async with gate:
            body = orjson.dumps(_configmap(i))
            await rest.request("POST", base, body=body, content_type="application/json")

    async with asyncio.TaskGroup() as tg:
        for i in range(objects):
            tg.create_task(create(i))


def _status_bytes(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_peak() -> int:
    """Reset the peak resident set (Linux: clear_refs 5); return the current one."""
    gc.collect()
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")
    return _status_bytes("VmRSS")


async def _child(side: str, kubeconfig: str) -> dict[str, float]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.bench_listmemory",
        side,
        kubeconfig,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"{side} child failed:\n{err.decode()[-4000:]}")
    result: dict[str, float] = json.loads(out.decode().strip().splitlines()[-1])
    return result


async def _run() -> dict[str, list[dict[str, float]]]:
    from pyctrl.client import RESTClient
    from pyctrl.envtest import Environment

    runs: dict[str, list[dict[str, float]]] = {side: [] for side in SIDES}
    async with Environment() as env:
        async with RESTClient(env.config) as rest:
            await _populate(rest, OBJECTS)
        for rep in range(REPEAT):
            for side in SIDES if rep % 2 == 0 else reversed(SIDES):
                runs[side].append(await _child(side, str(env.kubeconfig_path)))
    return runs


async def _side(side: str, kubeconfig: str) -> dict[str, float]:
    from pyctrl.cache import Cache, CacheOptions
    from pyctrl.cache._listwatch import RESTSource
    from pyctrl.client import RESTClient
    from pyctrl.config import get_config
    from pyctrl.meta import GroupVersionKind
    from pyctrl.resource import Unstructured

    if side == "whole":
        # The peer: the list decoded whole (no list_stream, so the reflector calls list).
        del RESTSource.list_stream
    config = await get_config(kubeconfig=kubeconfig)
    async with RESTClient(config) as rest:
        await rest.request("GET", "/version")
        before = _reset_peak()
        # page_size=None: one response, as a watch cache serves resourceVersion=0 whatever
        # limit says (the embedded server would page it).
        options = CacheOptions(
            namespaces=[NAMESPACE], watch_list=side == "streaming", page_size=None
        )
        cache = Cache(rest, options=options)
        # Unstructured: kubernetes-asyncio's models would weigh more than the list.
        cache.get_informer(Unstructured, gvk=GroupVersionKind("", "v1", "ConfigMap"))
        started = time.perf_counter()
        async with asyncio.TaskGroup() as tg:
            task = tg.create_task(cache.start())
            await cache.wait_for_cache_sync(timeout=600)
            seconds = time.perf_counter() - started
            if (held := cache.status()[0].objects) != OBJECTS:
                raise RuntimeError(f"cache holds {held} objects, expected {OBJECTS}")
            task.cancel()
    peak = _status_bytes("VmHWM")
    return {"peak_mib": peak / 2**20, "growth_mib": (peak - before) / 2**20, "sync_s": seconds}


def main() -> dict[str, Any]:
    """Run the sides, print medians and the incremental/whole ratios, return the figures."""
    runs = asyncio.run(_run())
    print(f"list memory: {OBJECTS} ConfigMaps of ~1 KB, {REPEAT} run(s) per side, medians")
    print(f"  {'side':<12}{'peak MiB':>10}{'growth MiB':>12}{'sync s':>9}")
    medians: dict[str, dict[str, float]] = {}
    for side, results in runs.items():
        medians[side] = {k: statistics.median(r[k] for r in results) for k in results[0]}
        m = medians[side]
        print(f"  {side:<12}{m['peak_mib']:>10.1f}{m['growth_mib']:>12.1f}{m['sync_s']:>9.2f}")
    ratios = {
        f"incremental_vs_whole_{k}": statistics.median(
            a[k] / max(b[k], 1e-9) for a, b in zip(runs["incremental"], runs["whole"], strict=True)
        )
        for k in ("peak_mib", "growth_mib", "sync_s")
    }
    for key, value in ratios.items():
        print(f"  {key}: {value:.2f}x")
    return {"objects": OBJECTS, "runs": runs, "medians": medians, **ratios}


if __name__ == "__main__":
    if len(sys.argv) == 3:
        import logging

        import structlog

        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
        print(json.dumps(asyncio.run(_side(sys.argv[1], sys.argv[2]))))
    else:
        main()
