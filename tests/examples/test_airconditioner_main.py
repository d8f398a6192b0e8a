"""``python -m examples.airconditioner`` as a process: KUBECONFIG, flags, metrics, SIGTERM."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest

from pyctrl.testing import eventually

from .conftest import EXAMPLES, REPO

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from pathlib import Path
    from typing import BinaryIO

    from pyctrl.envtest import Environment

    from .conftest import Kubectl

AIRCONDITIONER = EXAMPLES / "airconditioner"


@pytest.fixture
def crds() -> Sequence[Any]:
    return [AIRCONDITIONER / "config" / "crd"]


def free_port() -> int:
    """A TCP port nothing listens on right now (the process binds it moments later)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
def log_file(tmp_path: Path) -> Iterator[BinaryIO]:
    """Where the operator process writes its logs (a file never blocks it, unlike a pipe)."""
    with (tmp_path / "operator.log").open("w+b") as log:
        yield log


def series(page: str, name: str, unit: str) -> float | None:
    """The value of ``name`` for unit ``default/unit`` in a metrics page, or None."""
    prefix = f'{name}{{namespace="default",unit="{unit}"}} '
    values = [float(line[len(prefix) :]) for line in page.splitlines() if line.startswith(prefix)]
    return values[0] if values else None


async def test_the_process_cools_the_sample_rooms_and_stops_on_sigterm(
    env: Environment, kubectl: Kubectl, log_file: BinaryIO
) -> None:
    """Started with KUBECONFIG and flags, it logs JSON, serves metrics, cools A and B, exits 0."""
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "examples.airconditioner",
        f"--metrics-bind-address=127.0.0.1:{port}",
        "--health-probe-bind-address=0",
        "--log-format=json",
        "--probe-period=0.1",
        "--sim-tick=0.05",
        "--sim-speed=120",
        cwd=REPO,
        env={**os.environ, "KUBECONFIG": str(env.kubeconfig_path)},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=log_file,
        stderr=log_file,
    )
    try:
        await kubectl("apply", "-f", str(AIRCONDITIONER / "samples"))
        url = f"http://127.0.0.1:{port}/metrics"

        async def both_at_target() -> bool:
            try:
                async with aiohttp.ClientSession() as session, session.get(url) as response:
                    page = await response.text()
            except aiohttp.ClientConnectionError:
                return False  # not serving yet
            a = series(page, "airconditioner_room_temperature_celsius", "my-airconditioner-a")
            b = series(page, "airconditioner_room_temperature_celsius", "my-airconditioner-b")
            return a is not None and b is not None and a <= 25.5 and b <= 22.5

        await eventually(both_at_target)
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(20):
            code = await process.wait()
        log_file.seek(0)
        logs = log_file.read().decode()
        assert code == 0, logs[-3000:]
        records = [json.loads(line) for line in logs.splitlines() if line.startswith("{")]
        switched_on = {r["name"] for r in records if r["event"] == "cooling switched" and r["on"]}
        assert switched_on == {"my-airconditioner-a", "my-airconditioner-b"}
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
