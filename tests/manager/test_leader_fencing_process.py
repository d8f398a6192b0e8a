"""A leader paused past its Lease (SIGSTOP) never writes once its successor is elected.

Two operator processes (`tests.manager.fenced_operator`) share one embedded API server.
Each, while leading, creates ConfigMaps labelled with its identity as fast as it can. The
test pauses the leader with SIGSTOP, waits until the other process has taken the Lease
over and written, resumes the old leader with SIGCONT, and compares resourceVersions: the
server orders every write, so no mark of the old leader may come after the Lease update
that made the new one holder.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from kubernetes_asyncio.client import V1ConfigMap, V1ObjectMeta

from pyctrl.client import Client, RESTClient
from pyctrl.envtest import Environment

from .fenced_operator import TICKERS

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

REPO = Path(__file__).resolve().parents[2]
LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"


class LeaseHistory:
    """Every version of the Lease, in the server's order: (resourceVersion, holder)."""

    def __init__(self) -> None:
        self.versions: list[tuple[int, str]] = []
        self.changed = asyncio.Condition()

    async def follow(self, rest: RESTClient) -> None:
        query = {"watch": "true", "fieldSelector": "metadata.name=fence-test"}
        query["timeoutSeconds"] = "600"
        async with rest.stream(LEASES, query=query, read_timeout=700) as lines:
            async for line in lines:
                lease: dict[str, Any] = orjson.loads(line)["object"]
                holder = (lease.get("spec") or {}).get("holderIdentity") or ""
                async with self.changed:
                    self.versions.append((int(lease["metadata"]["resourceVersion"]), holder))
                    self.changed.notify_all()

    def elected(self, identity: str) -> int | None:
        """The resourceVersion of the write that first made ``identity`` the holder."""
        return next((rv for rv, holder in self.versions if holder == identity), None)

    async def wait_elected(self, identity: str) -> int:
        async with asyncio.timeout(40), self.changed:
            await self.changed.wait_for(lambda: self.elected(identity) is not None)
        rv = self.elected(identity)
        assert rv is not None
        return rv


async def marks(client: Client) -> dict[str, list[int]]:
    """Each writer's marks, as the resourceVersions the server gave them."""
    found: dict[str, list[int]] = {}
    for cm in (await client.list(V1ConfigMap, namespace="default", labels="writer")).items:
        writer = cm.metadata.labels["writer"]
        found.setdefault(writer, []).append(int(cm.metadata.resource_version))
    return found


async def until(check: Callable[[], Awaitable[bool]], within: float = 40.0) -> None:
    """Wait until ``check`` holds: for state that lives in the server."""
    async with asyncio.timeout(within):
        while not await check():  # noqa: ASYNC110 - no event to wait on across processes
            await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def operator(
    env: Environment, identity: str, log: Path
) -> AsyncIterator[asyncio.subprocess.Process]:
    """An operator process; resumed and killed on exit if still running."""
    with log.open("wb") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.manager.fenced_operator",
            identity,
            cwd=REPO,
            env={**os.environ, "KUBECONFIG": str(env.kubeconfig_path)},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=out,
        )
    try:
        yield process
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGCONT)
            process.kill()
        await process.wait()


# Two interpreters start one after the other and a Lease must expire: about 12 s alone,
# 30 s on a loaded 2-core machine; the default 60 s leaves too little room.
@pytest.mark.timeout(120)
async def test_a_paused_leader_writes_nothing_after_its_successor_is_elected(
    tmp_path: Path,
) -> None:
    """SIGSTOP the leader past its Lease, let the other take over, SIGCONT: no late write."""
    async with (
        Environment() as env,
        Client.from_config(env.config) as client,
        RESTClient(env.config) as rest,
        asyncio.TaskGroup() as tg,
    ):
        history = LeaseHistory()
        watch = tg.create_task(history.follow(rest))
        for i in range(TICKERS):
            meta = V1ObjectMeta(name=f"ticker-{i}", namespace="default")
            await client.create(V1ConfigMap(metadata=meta))
        async with operator(env, "a", tmp_path / "a.log") as a:
            await history.wait_elected("a")
            await until(lambda: _wrote(client, "a", 5))
            async with operator(env, "b", tmp_path / "b.log"):
                a.send_signal(signal.SIGSTOP)
                b_elected = await history.wait_elected("b")
                await until(lambda: _wrote(client, "b", 5))
                a.send_signal(signal.SIGCONT)
                async with asyncio.timeout(30):
                    code = await a.wait()
                written = await marks(client)
        watch.cancel()
    a_log = (tmp_path / "a.log").read_text()
    assert code != 0, a_log
    assert "leader election lost" in a_log, a_log
    late = [rv for rv in written["a"] if rv > b_elected]
    assert not late, f"the old leader wrote {len(late)} marks after b was elected at {b_elected}"
    assert any(rv > b_elected for rv in written["b"])


async def _wrote(client: Client, writer: str, count: int) -> bool:
    return len((await marks(client)).get(writer, ())) >= count
