"""``pyctrl envtest``: the embedded API server's command line, served until Ctrl-C."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.kubectl import kubectl_path

from .conftest import subprocess_env

if TYPE_CHECKING:
    from .conftest import Workspace


async def _kubeconfig_line(stdout: asyncio.StreamReader) -> Path:
    async with asyncio.timeout(30):
        while True:
            line = (await stdout.readline()).decode()
            assert line, "pyctrl envtest exited before printing the kubeconfig"
            if line.startswith("kubeconfig: "):
                return Path(line.removeprefix("kubeconfig: ").strip())


@pytest.mark.kubectl
async def test_envtest_serves_kubectl_until_sigint(tmp_path: Path) -> None:
    """The printed kubeconfig works for `kubectl get ns`; SIGINT stops it with status 0."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pyctrl.cli",
        "envtest",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=subprocess_env(),
    )
    try:
        assert proc.stdout is not None
        kubeconfig = await _kubeconfig_line(proc.stdout)
        kubectl = await asyncio.create_subprocess_exec(
            kubectl_path(),
            f"--kubeconfig={kubeconfig}",
            f"--cache-dir={tmp_path / 'kubectl-cache'}",
            "get",
            "ns",
            "-o",
            "name",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        async with asyncio.timeout(30):
            listed, errors = await kubectl.communicate()
        assert kubectl.returncode == 0, errors.decode()
        assert "namespace/default" in listed.decode().split()
        proc.send_signal(signal.SIGINT)
        async with asyncio.timeout(30):
            rest, _ = await proc.communicate()
        assert proc.returncode == 0
        assert rest.decode().splitlines()[-1] == "shutting down"
        assert not kubeconfig.exists()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def test_envtest_passes_its_flags_through(workspace: Workspace) -> None:
    """A bad --crds path is the envtest command line's own error, with exit status 1."""
    result = workspace.invoke("envtest", "--crds", "missing-crds.yaml")
    assert result.exit_code == 1
    assert "missing-crds.yaml" in result.stderr


def test_envtest_help_is_the_envtest_command_lines(workspace: Workspace) -> None:
    """`pyctrl envtest --help` lists the embedded server's flags."""
    result = workspace.invoke("envtest", "--help")
    assert result.exit_code == 0
    for flag in ("--crds", "--host", "--port", "--kubeconfig-out"):
        assert flag in result.stdout


def test_envtest_help_names_the_pyctrl_command(workspace: Workspace) -> None:
    """`pyctrl envtest --help` prints its usage as `pyctrl envtest`, the command typed."""
    result = workspace.invoke("envtest", "--help")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("usage: pyctrl envtest [-h] [--host HOST]")
    assert "python -m" not in result.output
