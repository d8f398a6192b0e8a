"""Throughput of the embedded API server: creates per second and watch events delivered.

Run: ``python bench/bench_apiserver.py``. Everything runs on loopback in one process (the
server and its clients share the event loop, as in pyctrl's own tests and benchmarks).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from typing import TYPE_CHECKING

import aiohttp
import orjson

from pyctrl.envtest._server import APIServer

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

TOKEN = "bench"
WRITES = 3000
WRITERS = 16
WATCHERS = 20
WATCH_EVENTS = 1000


async def _creates(session: aiohttp.ClientSession, url: str, ns: str) -> float:
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    counter = iter(range(WRITES))

    async def writer() -> None:
        for i in counter:
            body = orjson.dumps({"metadata": {"name": f"cm-{i}"}, "data": {"k": "v" * 64}})
            async with session.post(
                f"{url}/api/v1/namespaces/{ns}/configmaps", data=body, headers=headers
            ) as resp:
                assert resp.status == 201, await resp.text()
                await resp.read()

    start = time.perf_counter()
    await asyncio.gather(*(writer() for _ in range(WRITERS)))
    return WRITES / (time.perf_counter() - start)


async def _watch_fanout(server: APIServer, session: aiohttp.ClientSession) -> float:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    ns = "watch-bench"
    async with session.post(
        f"{server.url}/api/v1/namespaces",
        data=orjson.dumps({"metadata": {"name": ns}}),
        headers={**headers, "Content-Type": "application/json"},
    ) as resp:
        created = await resp.json()
    rv = created["metadata"]["resourceVersion"]
    ready = asyncio.Event()
    opened = 0

    async def watcher() -> int:
        nonlocal opened
        seen = 0
        async with session.get(
            f"{server.url}/api/v1/namespaces/{ns}/configmaps",
            params={"watch": "1", "resourceVersion": rv},
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=120),
        ) as resp:
            opened += 1
            if opened == WATCHERS:
                ready.set()
            async for line in resp.content:
                if line.strip():
                    seen += 1
                    if seen == WATCH_EVENTS:
                        return seen
        return seen

    tasks = [asyncio.create_task(watcher()) for _ in range(WATCHERS)]
    await ready.wait()
    rt = server.registry.lookup("", "v1", "configmaps")
    assert rt is not None
    from pyctrl.envtest._api import WriteOptions

    start = time.perf_counter()
    for i in range(WATCH_EVENTS):
        await server.api.create(
            rt, ns, {"metadata": {"name": f"w-{i}"}, "data": {"k": "v"}}, WriteOptions()
        )
        if i % 50 == 0:
            await asyncio.sleep(0)
    counts = await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - start
    return sum(counts) / elapsed


def _serve(conn: Connection) -> None:
    async def serve() -> None:
        async with APIServer(tokens=[TOKEN], ssl_context=None) as server:
            conn.send(server.url)
            await asyncio.get_running_loop().run_in_executor(None, conn.recv)

    asyncio.run(serve())


async def _creates_other_process() -> float:
    parent, child = multiprocessing.Pipe()
    proc = multiprocessing.get_context("spawn").Process(target=_serve, args=(child,))
    proc.start()
    try:
        url = parent.recv()
        connector = aiohttp.TCPConnector(limit=WRITERS + 4)
        async with aiohttp.ClientSession(connector=connector) as session:
            return await _creates(session, url, "default")
    finally:
        parent.send("stop")
        proc.join(30)


async def _run() -> dict[str, float]:
    async with APIServer(tokens=[TOKEN], ssl_context=None) as server:
        connector = aiohttp.TCPConnector(limit=WATCHERS + WRITERS + 4)
        async with aiohttp.ClientSession(connector=connector) as session:
            writes = await _creates(session, server.url, "default")
            events = await _watch_fanout(server, session)
    separate = await _creates_other_process()
    return {
        "creates_per_s": writes,
        "creates_per_s_server_in_own_process": separate,
        "watch_events_per_s": events,
    }


def main() -> dict[str, float]:
    """Measure and print creates/s and watch events delivered/s."""
    results = asyncio.run(_run())
    for key, value in results.items():
        print(f"{key}: {value:,.0f}")
    return results


if __name__ == "__main__":
    main()
