"""``python -m examples.mysrv`` as a process: finds the API server through KUBECONFIG, stops."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest

from pyctrl.testing import eventually

from .conftest import EXAMPLES, REPO

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pyctrl.envtest import Environment

    from .conftest import Kubectl


@pytest.fixture
def crds() -> Sequence[Any]:
    return [EXAMPLES / "mysrv" / "config" / "crd"]


async def next_log(stream: asyncio.StreamReader, event: str, seen: list[str]) -> dict[str, Any]:
    """Read JSON log lines until one whose event is ``event``; return it."""
    async with asyncio.timeout(20):
        while True:
            raw = await stream.readline()
            if not raw:
                raise AssertionError(f"the operator exited before logging {event!r}: {seen}")
            line = raw.decode().strip()
            seen.append(line)
            if line.startswith("{"):
                record: dict[str, Any] = json.loads(line)
                if record.get("event") == event:
                    return record


async def test_the_operator_process_reconciles_through_kubeconfig_and_stops_on_sigterm(
    env: Environment, kubectl: Kubectl
) -> None:
    """Started with KUBECONFIG and the usual flags, it logs JSON, is ready, reconciles, exits 0."""
    environ = {
        **os.environ,
        "KUBECONFIG": str(env.kubeconfig_path),
        "ENABLE_WEBHOOKS": "false",
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "examples.mysrv",
        "--metrics-bind-address=0",
        "--health-probe-bind-address=127.0.0.1:0",
        "--log-format=json",
        cwd=REPO,
        env=environ,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    seen: list[str] = []
    try:
        assert process.stderr is not None
        probes = await next_log(process.stderr, "serving health probes", seen)
        await next_log(process.stderr, "manager started", seen)
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{probes['port']}/readyz") as response,
        ):
            assert response.status == 200
        await kubectl("apply", "-f", str(EXAMPLES / "mysrv" / "samples"))

        async def reconciled() -> bool:
            run = await kubectl("get", "deployment", "mysrv-sample", check=False)
            return run.code == 0

        await eventually(reconciled)
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(20):
            # Drain the log so the process never blocks on a full pipe while stopping.
            while await process.stderr.readline():
                pass
            code = await process.wait()
        assert code == 0, "\n".join(seen)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
