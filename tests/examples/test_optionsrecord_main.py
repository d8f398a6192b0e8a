"""``python -m examples.optionsrecord`` as a process: KUBECONFIG, backups on disk, SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

import pytest
from examples.optionsrecord.backup import BackupStore, load_backup

from pyctrl.meta import GroupVersionKind
from pyctrl.testing import eventually

from .conftest import EXAMPLES, REPO

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from pathlib import Path
    from typing import BinaryIO

    from pyctrl.envtest import Environment

    from .conftest import Kubectl

SAMPLES = EXAMPLES / "optionsrecord" / "samples"


@pytest.fixture
def crds() -> Sequence[Any]:
    return [EXAMPLES / "optionsrecord" / "config" / "crd"]


@pytest.fixture
def log_file(tmp_path: Path) -> Iterator[BinaryIO]:
    """Where the operator process writes its logs (a file never blocks it, unlike a pipe)."""
    with (tmp_path / "operator.log").open("w+b") as log:
        yield log


async def test_the_process_backs_up_a_change_and_stops_on_sigterm(
    env: Environment, kubectl: Kubectl, log_file: BinaryIO, tmp_path: Path
) -> None:
    """Started with KUBECONFIG and --backup-dir, it keeps a changed ConfigMap's old version."""
    store = BackupStore(tmp_path / "backups")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "examples.optionsrecord",
        f"--backup-dir={store.root}",
        "--metrics-bind-address=0",
        "--health-probe-bind-address=0",
        cwd=REPO,
        env={**os.environ, "KUBECONFIG": str(env.kubeconfig_path)},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=log_file,
        stderr=log_file,
    )
    try:
        await kubectl("apply", "-f", str(SAMPLES / "backup_v1_optionsrecord.yaml"))

        async def ready() -> bool:
            status = (await kubectl.json("optionsrecord", "default-apps")).get("status") or {}
            return any(
                c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions", [])
            )

        await eventually(ready)
        await kubectl("apply", "-f", str(SAMPLES / "app_config.yaml"))
        await kubectl(
            "patch", "configmap", "app-config", "--type=merge", "-p", '{"data":{"greeting":"hi"}}'
        )
        gvk = GroupVersionKind("", "v1", "ConfigMap")

        async def kept() -> bool:
            return bool(store.history(gvk, "default", "app-config"))

        await eventually(kept)
        (backup,) = store.history(gvk, "default", "app-config")
        assert load_backup(backup)["data"]["greeting"] == "hello"
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(20):
            code = await process.wait()
        log_file.seek(0)
        assert code == 0, log_file.read().decode()[-3000:]
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
