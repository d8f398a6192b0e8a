from __future__ import annotations

import asyncio
import base64
import io
import os
import signal
import ssl
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

import pyctrl
from pyctrl.envtest.__main__ import run, serve
from tests.kubectl import kubectl_path

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "clis.cli.pyctrl.dev"},
    "spec": {
        "group": "cli.pyctrl.dev",
        "names": {"kind": "Cli", "listKind": "CliList", "plural": "clis", "singular": "cli"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}


class _Output(io.StringIO):
    """Captures the CLI output and signals when the kubeconfig line was printed."""

    def __init__(self) -> None:
        super().__init__()
        self.ready = asyncio.Event()

    def write(self, text: str) -> int:
        written = super().write(text)
        if "export KUBECONFIG=" in self.getvalue():
            self.ready.set()
        return written


def _load(kubeconfig: Path) -> Any:
    return yaml.safe_load(kubeconfig.read_text())


async def _get(kubeconfig: Path, path: str) -> int:
    config = _load(kubeconfig)
    cluster = config["clusters"][0]["cluster"]
    context = ssl.create_default_context(
        cadata=base64.b64decode(cluster["certificate-authority-data"]).decode()
    )
    headers = {"Authorization": "Bearer " + config["users"][0]["user"]["token"]}
    async with (
        aiohttp.ClientSession() as session,
        session.get(cluster["server"] + path, headers=headers, ssl=context) as response,
    ):
        await response.read()
        return response.status


@pytest.fixture
def crd_file(tmp_path: Path) -> Path:
    path = tmp_path / "crd.yaml"
    path.write_text(yaml.safe_dump(CRD))
    return path


async def test_serve_announces_kubeconfig_and_stops_cleanly(crd_file: Path, tmp_path: Path) -> None:
    """serve() installs the CRDs, prints a working kubeconfig, and removes it when stopped."""
    out = _Output()
    stop = asyncio.Event()
    copy = tmp_path / "out" / "kubeconfig"
    async with asyncio.TaskGroup() as group:
        task = group.create_task(
            serve(crds=[str(crd_file)], kubeconfig_out=copy, stop=stop, out=out)
        )
        async with asyncio.timeout(20):
            await out.ready.wait()
        lines = out.getvalue().splitlines()
        assert lines[0].startswith("pyctrl envtest API server serving at https://127.0.0.1:")
        assert "installed CRD clis.cli.pyctrl.dev" in lines
        assert f"export KUBECONFIG={copy}" in lines
        assert await _get(copy, "/apis/cli.pyctrl.dev/v1/namespaces/default/clis") == 200
        stop.set()
    assert task.done()
    assert not copy.exists()
    assert out.getvalue().splitlines()[-1] == "shutting down"


@pytest.mark.kubectl
async def test_module_serves_kubectl_until_sigint(crd_file: Path, tmp_path: Path) -> None:
    """`python -m pyctrl.envtest` serves kubectl and exits 0 on SIGINT, removing its files."""
    source = str(Path(pyctrl.__file__).parent.parent)
    environ = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([source, os.environ.get("PYTHONPATH", "")]),
    }
    for name in ("USE_EXISTING_CLUSTER", "KUBEBUILDER_ASSETS"):
        environ.pop(name, None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pyctrl.envtest",
        "--crds",
        str(crd_file),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=environ,
    )
    try:
        assert proc.stdout is not None
        kubeconfig: Path | None = None
        async with asyncio.timeout(30):
            while kubeconfig is None:
                line = (await proc.stdout.readline()).decode()
                assert line, "the CLI exited before printing the kubeconfig"
                if line.startswith("export KUBECONFIG="):
                    kubeconfig = Path(line.strip().split("=", 1)[1])
        kubectl = await asyncio.create_subprocess_exec(
            kubectl_path(),
            f"--kubeconfig={kubeconfig}",
            f"--cache-dir={tmp_path / 'cache'}",
            "get",
            "crd",
            "-o",
            "name",
            stdout=asyncio.subprocess.PIPE,
        )
        async with asyncio.timeout(30):
            listed, _ = await kubectl.communicate()
        assert listed.decode().split() == [
            "customresourcedefinition.apiextensions.k8s.io/clis.cli.pyctrl.dev"
        ]
        proc.send_signal(signal.SIGINT)
        async with asyncio.timeout(30):
            code = await proc.wait()
        assert code == 0
        assert not kubeconfig.exists()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def test_run_reports_a_bad_crd_path_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing --crds path makes the command exit 1 with the path in the error."""
    assert run(["--crds", str(tmp_path / "missing.yaml")]) == 1
    assert "missing.yaml" in capsys.readouterr().err
