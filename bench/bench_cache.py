"""Benchmark: pyctrl's informer cache against kubernetes-asyncio's Watch and models.

Both sides run in the same benchmark, each in a child process of its own (so that
resident memory is measured per side), against one embedded API server that holds
``--objects`` ConfigMaps of about 1 KB:

- sync: time from nothing to every object in memory. pyctrl: `Cache.start` and
  `Cache.wait_for_cache_sync` (discovery, paginated list, store). Baseline:
  ``CoreV1Api.list_namespaced_config_map`` (one unpaginated list, deserialised into
  ``V1ConfigMap`` models, as ``watch.Watch`` does) into a dict.
- memory: the growth of the child's resident set from before the sync to after it
  (garbage collected, freed heap returned to the OS), divided by the object count.
- events: ``--events`` updates made before the children start are replayed to a watch
  from the resourceVersion before them, so the client, not the server's write rate,
  is measured. pyctrl: a reflector watching into an informer's store (the cache's own
  code path). Baseline: ``watch.Watch().stream`` into a dict of models.

Run: ``python bench/bench_cache.py`` (or ``main()``, which returns the numbers).
The issue's bar: pyctrl uses at most half the baseline's memory per object and syncs
at least 3x faster.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import gc
import json
import os
import sys
import time
from typing import Any

NAMESPACE = "bench"
_SCRIPT = os.path.abspath(__file__)


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _settled_rss() -> int:
    gc.collect()
    # Hand freed heap back to the OS so that RSS shows what is really kept.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    return _rss()


def _configmap(i: int) -> dict[str, Any]:
    # About 1 KB of JSON as the server returns it (metadata included).
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"cm-{i:06d}",
            "namespace": NAMESPACE,
            "labels": {"app": "bench", "shard": str(i % 8)},
        },
        "data": {f"key-{j}": f"{i:06d}-" + "v" * 64 for j in range(9)},
    }


# --- parent: server and fixtures ------------------------------------------------------


async def _populate(rest: Any, objects: int, events: int) -> str:
    import orjson

    await rest.request(
        "POST",
        "/api/v1/namespaces",
        body=orjson.dumps(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        ),
        content_type="application/json",
    )
    gate = asyncio.Semaphore(64)
    base = f"/api/v1/namespaces/{NAMESPACE}/configmaps"

    async def create(i: int) -> None:
        async with gate:
            await rest.request(
                "POST", base, body=orjson.dumps(_configmap(i)), content_type="application/json"
            )

    async def update(i: int) -> None:
        patch = {"data": {"key-0": f"updated-{i}"}}
        async with gate:
            await rest.request(
                "PATCH",
                f"{base}/cm-{i % objects:06d}",
                body=orjson.dumps(patch),
                content_type="application/merge-patch+json",
            )

    async with asyncio.TaskGroup() as tg:
        for i in range(objects):
            tg.create_task(create(i))
    listed = (await rest.request("GET", base, query={"limit": "1"})).json()
    rv0 = str(listed["metadata"]["resourceVersion"])
    async with asyncio.TaskGroup() as tg:
        for i in range(events):
            tg.create_task(update(i))
    return rv0


async def _raw_list_seconds(rest: Any) -> float:
    started = time.perf_counter()
    response = await rest.request("GET", f"/api/v1/namespaces/{NAMESPACE}/configmaps")
    response.json()
    return time.perf_counter() - started


async def _child(
    side: str, kubeconfig: str, objects: int, events: int, rv0: str
) -> dict[str, float]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        _SCRIPT,
        "--child",
        side,
        "--kubeconfig",
        kubeconfig,
        "--objects",
        str(objects),
        "--events",
        str(events),
        "--rv0",
        rv0,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"{side} child failed:\n{err.decode()[-4000:]}")
    result: dict[str, float] = json.loads(out.decode().strip().splitlines()[-1])
    return result


async def _run(objects: int, events: int) -> dict[str, float]:
    from pyctrl.client import RESTClient
    from pyctrl.envtest import Environment

    async with Environment(history_size=events + objects + 1000) as env:
        async with RESTClient(env.config) as rest:
            started = time.perf_counter()
            rv0 = await _populate(rest, objects, events)
            setup = time.perf_counter() - started
            raw = await _raw_list_seconds(rest)
        kubeconfig = str(env.kubeconfig_path)
        pyctrl = await _child("pyctrl", kubeconfig, objects, events, rv0)
        baseline = await _child("baseline", kubeconfig, objects, events, rv0)
    return {
        "objects": float(objects),
        "events": float(events),
        "setup_seconds": setup,
        "server_raw_list_seconds": raw,
        "pyctrl_sync_seconds": pyctrl["sync_seconds"],
        "baseline_sync_seconds": baseline["sync_seconds"],
        "sync_speedup": baseline["sync_seconds"] / pyctrl["sync_seconds"],
        # Sync time beyond what the server needs to hand over every object in one list: a
        # conservative view of client-side cost (pyctrl's paginated lists cost the server more).
        "pyctrl_sync_beyond_raw_list_seconds": pyctrl["sync_seconds"] - raw,
        "baseline_sync_beyond_raw_list_seconds": baseline["sync_seconds"] - raw,
        "client_side_sync_speedup": (baseline["sync_seconds"] - raw)
        / max(pyctrl["sync_seconds"] - raw, 1e-3),
        "pyctrl_bytes_per_object": pyctrl["bytes_per_object"],
        "baseline_bytes_per_object": baseline["bytes_per_object"],
        "memory_ratio": pyctrl["bytes_per_object"] / baseline["bytes_per_object"],
        "pyctrl_events_per_second": pyctrl["events_per_second"],
        "baseline_events_per_second": baseline["events_per_second"],
        "events_speedup": pyctrl["events_per_second"] / baseline["events_per_second"],
    }


# --- children: one side each ----------------------------------------------------------


async def _pyctrl_side(kubeconfig: str, objects: int, events: int, rv0: str) -> dict[str, float]:
    import random

    from kubernetes_asyncio.client import V1ConfigMap

    from pyctrl.cache import Cache, CacheOptions
    from pyctrl.cache._informer import InformerConfig, SharedInformer
    from pyctrl.cache._listwatch import RESTSource
    from pyctrl.cache._reflector import Reflector, Watching
    from pyctrl.client import RESTClient, RESTMapper
    from pyctrl.clock import RealClock
    from pyctrl.config import get_config
    from pyctrl.meta import GroupVersionKind
    from pyctrl.scheme import default_scheme

    config = await get_config(kubeconfig=kubeconfig)
    async with RESTClient(config) as rest:
        mapper = RESTMapper(rest)
        await rest.request("GET", "/version")  # open the connection before measuring
        before = _settled_rss()
        started = time.perf_counter()
        cache = Cache(rest, mapper=mapper, options=CacheOptions(namespaces=[NAMESPACE]))
        cache.get_informer(V1ConfigMap)
        async with asyncio.TaskGroup() as tg:
            task = tg.create_task(cache.start())
            await cache.wait_for_cache_sync(timeout=600)
            sync_seconds = time.perf_counter() - started
            after = _settled_rss()
            status = cache.status()[0]
            if status.objects != objects:
                raise RuntimeError(f"cache holds {status.objects} objects, expected {objects}")
            task.cancel()

        # Watch throughput: replay `events` updates into an informer's store.
        gvk = GroupVersionKind("", "v1", "ConfigMap")
        source = RESTSource(rest, mapper, gvk)
        informer = SharedInformer(
            gvk=gvk,
            source=source,
            config=InformerConfig(namespaces=(NAMESPACE,)),
            scheme=default_scheme(),
            clock=RealClock(),
            random=random.random,
        )
        await source.namespaced()
        done = asyncio.Event()
        seen = 0

        class CountingSink:
            def replaced(self, reflector: Any, items: Any) -> None:
                informer.replaced(reflector, items)

            def changed(self, reflector: Any, event_type: str, key: Any, entry: Any) -> None:
                nonlocal seen
                informer.changed(reflector, event_type, key, entry)
                seen += 1
                if seen >= events:
                    done.set()

            def status_changed(self, reflector: Any) -> None:
                pass

        reflector = Reflector(
            source=source,
            sink=CountingSink(),
            prepare=informer.prepare,
            clock=RealClock(),
            random=random.random,
            namespace=NAMESPACE,
        )
        started = time.perf_counter()
        async with asyncio.TaskGroup() as tg:
            watching = tg.create_task(reflector.step(Watching(rv0)))
            await done.wait()
            elapsed = time.perf_counter() - started
            watching.cancel()
    return {
        "sync_seconds": sync_seconds,
        "bytes_per_object": (after - before) / objects,
        "events_per_second": events / elapsed,
    }


async def _baseline_side(kubeconfig: str, objects: int, events: int, rv0: str) -> dict[str, float]:
    from kubernetes_asyncio import client, config, watch

    configuration = client.Configuration()
    await config.load_kube_config(
        config_file=kubeconfig, client_configuration=configuration, persist_config=False
    )
    async with client.ApiClient(configuration) as api:
        v1 = client.CoreV1Api(api)
        await v1.list_namespace(limit=1)  # open the connection before measuring
        before = _settled_rss()
        started = time.perf_counter()
        listed = await v1.list_namespaced_config_map(NAMESPACE)
        store = {(cm.metadata.namespace, cm.metadata.name): cm for cm in listed.items}
        resource_version = listed.metadata.resource_version
        del listed
        sync_seconds = time.perf_counter() - started
        after = _settled_rss()
        if len(store) != objects:
            raise RuntimeError(f"baseline holds {len(store)} objects, expected {objects}")
        del resource_version

        replay: dict[tuple[str, str], Any] = {}
        seen = 0
        started = time.perf_counter()
        watcher = watch.Watch()
        async with watcher.stream(
            v1.list_namespaced_config_map, NAMESPACE, resource_version=rv0, timeout_seconds=600
        ) as stream:
            async for event in stream:
                obj = event["object"]
                replay[(obj.metadata.namespace, obj.metadata.name)] = obj
                seen += 1
                if seen >= events:
                    break
        elapsed = time.perf_counter() - started
        watcher.stop()
    return {
        "sync_seconds": sync_seconds,
        "bytes_per_object": (after - before) / objects,
        "events_per_second": events / elapsed,
    }


def _print(results: dict[str, float]) -> None:
    n = int(results["objects"])
    print(f"informer cache benchmark: {n} ConfigMaps of ~1 KB, {int(results['events'])} events")
    setup, raw = results["setup_seconds"], results["server_raw_list_seconds"]
    print(f"  (server: setup {setup:.1f} s, one raw list of everything {raw:.2f} s)")
    rows = [
        (
            "sync (list + store), s",
            "pyctrl_sync_seconds",
            "baseline_sync_seconds",
            "sync_speedup",
            "x faster",
        ),
        (
            "  of which beyond raw list, s",
            "pyctrl_sync_beyond_raw_list_seconds",
            "baseline_sync_beyond_raw_list_seconds",
            "client_side_sync_speedup",
            "x faster",
        ),
        (
            "memory per object, bytes",
            "pyctrl_bytes_per_object",
            "baseline_bytes_per_object",
            "memory_ratio",
            "of baseline",
        ),
        (
            "watch events per second",
            "pyctrl_events_per_second",
            "baseline_events_per_second",
            "events_speedup",
            "x faster",
        ),
    ]
    print(f"  {'':28} {'pyctrl':>12} {'baseline':>12}   ratio")
    for label, ours, theirs, ratio, unit in rows:
        mine, base, r = results[ours], results[theirs], results[ratio]
        print(f"  {label:28} {mine:12.2f} {base:12.2f}   {r:.2f} {unit}")
    ok_sync = results["sync_speedup"] >= 3.0
    ok_memory = results["memory_ratio"] <= 0.5
    print(
        f"  bar: sync >= 3x faster: {'met' if ok_sync else 'NOT met'}; "
        f"memory <= 0.5x: {'met' if ok_memory else 'NOT met'}"
    )


def main(objects: int = 10_000, events: int = 5_000) -> dict[str, float]:
    """Run the benchmark, print a table with ratios, and return the numbers."""
    results = asyncio.run(_run(objects, events))
    _print(results)
    return results


def _cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=5_000)
    parser.add_argument("--child", choices=["pyctrl", "baseline"])
    parser.add_argument("--kubeconfig")
    parser.add_argument("--rv0")
    args = parser.parse_args()
    if args.child is None:
        main(args.objects, args.events)
        return
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    side = _pyctrl_side if args.child == "pyctrl" else _baseline_side
    result = asyncio.run(side(args.kubeconfig, args.objects, args.events, args.rv0))
    print(json.dumps(result))


if __name__ == "__main__":
    _cli()
