"""Benchmark: pyctrl's informer cache against kubernetes-asyncio's Watch and models.

Both sides run in the same benchmark, each in a child process of its own (so that
resident memory is measured per side), against one embedded API server that holds
``--objects`` ConfigMaps of about 1 KB:

- sync: time from nothing to every object in memory (a cold start). pyctrl:
  `Cache.start` and `Cache.wait_for_cache_sync` (discovery, list, store), once with
  the streaming list (a watch with ``sendInitialEvents=true``, the default) and once
  with the paged list (``CacheOptions(watch_list=False)``: ``resourceVersion=0``, pages
  of 500). Baseline: ``CoreV1Api.list_namespaced_config_map`` (one unpaginated list,
  deserialised into ``V1ConfigMap`` models, as ``watch.Watch`` does) into a dict.
- memory: the growth of the child's resident set from before the sync to after it
  (garbage collected, freed heap returned to the OS), divided by the object count.
- events: ``--events`` updates made before the children start are replayed to a watch
  from the resourceVersion before them, so the client, not the server's write rate,
  is measured. pyctrl: a reflector watching into an informer's store (the cache's own
  code path). Baseline: ``watch.Watch().stream`` into a dict of models.

Like for like: pyctrl's cache drops ``metadata.managedFields`` by default (controller-
runtime's recommended transform) while the models keep them, so pyctrl is also measured
with ``CacheOptions(default_transform=None)``, keeping every field the baseline keeps.

The sides run ``BENCH_REPEAT`` times (3 by default), in alternating order so that neither
always runs on a warmer or busier machine; the table gives the median and the range of
each figure and of each ratio.

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
import statistics
import sys
import time
from typing import Any

NAMESPACE = "bench"
REPEAT = int(os.environ.get("BENCH_REPEAT", "3"))
SIDES = ("pyctrl", "pyctrl-paged", "pyctrl-full", "baseline")
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


async def _run(objects: int, events: int) -> dict[str, Any]:
    from pyctrl.client import RESTClient
    from pyctrl.envtest import Environment

    runs: dict[str, list[dict[str, float]]] = {side: [] for side in SIDES}
    async with Environment(history_size=events + objects + 1000) as env:
        async with RESTClient(env.config) as rest:
            started = time.perf_counter()
            rv0 = await _populate(rest, objects, events)
            setup = time.perf_counter() - started
        kubeconfig = str(env.kubeconfig_path)
        for rep in range(REPEAT):
            for side in SIDES if rep % 2 == 0 else reversed(SIDES):
                runs[side].append(await _child(side, kubeconfig, objects, events, rv0))
    return {"objects": objects, "events": events, "setup_seconds": setup, "runs": runs}


# --- children: one side each ----------------------------------------------------------


async def _pyctrl_side(
    kubeconfig: str,
    objects: int,
    events: int,
    rv0: str,
    *,
    keep_managed_fields: bool = False,
    watch_list: bool = True,
) -> dict[str, float]:
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
        options = CacheOptions(namespaces=[NAMESPACE], watch_list=watch_list)
        if keep_managed_fields:
            options = CacheOptions(
                namespaces=[NAMESPACE], default_transform=None, watch_list=watch_list
            )
        cache = Cache(rest, mapper=mapper, options=options)
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

            def progressed(self, reflector: Any) -> None:
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


ROWS = (
    # label, figure, side, measured against, unit, ratio wanted (None: no bar)
    ("sync, streaming list, s", "sync_seconds", "pyctrl", "baseline", "x faster", 3.0),
    ("sync, paged list, s", "sync_seconds", "pyctrl-paged", "baseline", "x faster", None),
    ("sync, streaming vs paged", "sync_seconds", "pyctrl", "pyctrl-paged", "x faster", None),
    ("memory per object, bytes", "bytes_per_object", "pyctrl", "baseline", "of baseline", 0.5),
    ("  paged list, bytes", "bytes_per_object", "pyctrl-paged", "baseline", "of baseline", 0.5),
    ("  streaming vs paged", "bytes_per_object", "pyctrl", "pyctrl-paged", "of paged", None),
    (
        "  managedFields kept, bytes",
        "bytes_per_object",
        "pyctrl-full",
        "baseline",
        "of baseline",
        0.5,
    ),
    ("watch events per second", "events_per_second", "pyctrl", "baseline", "x faster", None),
)


def _median_span(values: list[float]) -> tuple[float, str]:
    middle = statistics.median(values)
    if len(values) == 1:
        return middle, f"{middle:.2f}"
    return middle, f"{middle:.2f} ({min(values):.2f}-{max(values):.2f})"


def _table(results: dict[str, Any]) -> dict[str, float]:
    """Print the table of medians and ratios; return the median ratios by row."""
    runs: dict[str, list[dict[str, float]]] = results["runs"]
    print(
        f"informer cache benchmark: {results['objects']} ConfigMaps of ~1 KB, "
        f"{results['events']} events, {REPEAT} run(s) per side, median (min-max)"
    )
    print(f"  (server setup {results['setup_seconds']:.1f} s)")
    print(f"  {'':30} {'side':>30} {'against':>30}   ratio")
    ratios: dict[str, float] = {}
    for label, figure, side, against, unit, bar in ROWS:
        ours = [run[figure] for run in runs[side]]
        theirs = [run[figure] for run in runs[against]]
        pairs = zip(ours, theirs, strict=True)
        if unit == "x faster" and figure == "sync_seconds":
            each = [b / a for a, b in pairs]
        else:
            each = [a / b for a, b in pairs]
        ratio, ratio_text = _median_span(each)
        ratios[label.strip()] = ratio
        verdict = ""
        if bar is not None:
            met = [r >= bar for r in each] if unit == "x faster" else [r <= bar for r in each]
            verdict = "  met" if all(met) else ("  partly met" if any(met) else "  NOT met")
            verdict += f" ({'>=' if unit == 'x faster' else '<='} {bar:g})"
        print(
            f"  {label:30} {side + ' ' + _median_span(ours)[1]:>30}"
            f" {against + ' ' + _median_span(theirs)[1]:>30}   {ratio_text} {unit}{verdict}"
        )
    return ratios


def main(objects: int = 10_000, events: int = 5_000) -> dict[str, Any]:
    """Run the benchmark, print a table with ratios, and return the numbers."""
    results = asyncio.run(_run(objects, events))
    results["ratios"] = _table(results)
    return results


def _cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=5_000)
    parser.add_argument("--child", choices=SIDES)
    parser.add_argument("--kubeconfig")
    parser.add_argument("--rv0")
    args = parser.parse_args()
    if args.child is None:
        main(args.objects, args.events)
        return
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    if args.child == "baseline":
        run = _baseline_side(args.kubeconfig, args.objects, args.events, args.rv0)
    else:
        run = _pyctrl_side(
            args.kubeconfig,
            args.objects,
            args.events,
            args.rv0,
            keep_managed_fields=args.child == "pyctrl-full",
            watch_list=args.child != "pyctrl-paged",
        )
    result = asyncio.run(run)
    print(json.dumps(result))


if __name__ == "__main__":
    _cli()
