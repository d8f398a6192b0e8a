"""``pyctrl install``/``uninstall``/``deploy``/``undeploy``/``docker-build``: refusals and commands.

Applying to a real API server is in test_create_project.py; here: a cluster that cannot
be found is refused in one line by every cluster command, ``deploy`` without
cert-manager applies nothing, and ``docker-build`` builds the command it would run.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner

from pyctrl.cli import app
from pyctrl.envtest import Environment

from ..kubectl import Kubectl
from .conftest import one_line_error, subprocess_env

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from .conftest import Workspace

CLUSTER_COMMANDS = ["install", "uninstall", "deploy", "undeploy"]


@pytest.fixture(scope="module")
def initialized(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A `pyctrl init` project with a validating webhook (so deploy needs cert-manager)."""
    root = tmp_path_factory.mktemp("deploy") / "shop"
    runner = CliRunner()
    result = runner.invoke(app, ["init", str(root), "--group", "webapp", "--kind", "Guestbook"])
    assert result.exit_code == 0, result.output
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        args = ["create", "webhook", "--kind", "Guestbook", "--programmatic-validation"]
        result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return root


@pytest.fixture
def project(
    initialized: Path, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """The initialized project as the current directory (its modules forgotten afterwards)."""
    monkeypatch.chdir(initialized)
    yield initialized
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(initialized)):
            del sys.modules[name]


@pytest.mark.parametrize("command", CLUSTER_COMMANDS)
def test_a_kubeconfig_that_points_nowhere_is_refused(
    project: Path, workspace: Workspace, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """KUBECONFIG naming a missing file: one line naming it, before any work."""
    monkeypatch.setenv("KUBECONFIG", str(project / "missing-kubeconfig"))
    line = one_line_error(workspace.invoke(command))
    assert line == (
        f"error: no cluster to talk to: kubeconfig '{project / 'missing-kubeconfig'}' "
        "does not exist"
    )


@pytest.mark.parametrize("command", CLUSTER_COMMANDS)
def test_no_configuration_at_all_is_refused(
    project: Path, workspace: Workspace, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """No KUBECONFIG, no in-cluster variables, no ~/.kube/config: one line saying so."""
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(workspace.root / "empty-home"))
    line = one_line_error(workspace.invoke(command))
    assert line.startswith("error: no cluster to talk to: ")


def test_an_unreachable_server_is_refused(
    project: Path, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kubeconfig whose server does not answer: one line naming the address."""
    kubeconfig = workspace.root / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    line = one_line_error(workspace.invoke("install"))
    assert line.startswith("error: cannot reach the API server at https://127.0.0.1:9: ")


def test_cluster_commands_need_a_project(workspace: Workspace) -> None:
    """Outside a project the commands say a PROJECT file is needed."""
    line = one_line_error(workspace.invoke("install"))
    assert "no PROJECT file in" in line


async def test_deploy_without_cert_manager_applies_nothing(project: Path, tmp_path: Path) -> None:
    """An operator with webhooks needs cert-manager's kinds: deploy says so and writes nothing."""
    async with Environment() as env:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "pyctrl.cli",
            "deploy",
            cwd=project,
            env={**subprocess_env(project), "KUBECONFIG": str(env.kubeconfig_path)},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        async with asyncio.timeout(50):
            _out, err = await proc.communicate()
        assert proc.returncode == 1
        assert err.decode() == (
            "error: the cluster does not serve cert-manager.io/v1 Certificate, cert-manager.io/v1 "
            "Issuer (install cert-manager first: the webhooks' certificates come from "
            'it; or let the operator manage them itself: Operator(cert_mode="self-managed")); '
            "nothing was applied\n"
        )
        kubectl = Kubectl(env.kubeconfig_path, tmp_path / "cache", "default")
        assert (await kubectl("get", "namespace", "shop-system", check=False)).code == 1
        assert (await kubectl("get", "crd", "-o", "name")).out == ""


def test_docker_build_dry_run_prints_the_command(project: Path, workspace: Workspace) -> None:
    """--dry-run prints `docker build -t IMAGE .`, with the Operator's image by default."""
    result = workspace.invoke("docker-build", "--dry-run")
    assert result.exit_code == 0, result.output
    assert result.stdout == "docker build -t shop-operator:latest .\n"
    result = workspace.invoke("docker-build", "--dry-run", "--image", "reg.test/shop:v2")
    assert result.stdout == "docker build -t reg.test/shop:v2 .\n"
    result = workspace.invoke("docker-build", "--dry-run", "--tool", "podman")
    assert result.stdout == "podman build -t shop-operator:latest .\n"


def test_docker_build_without_the_tool_says_what_to_run(
    project: Path, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No docker on PATH: one line with the command to run where an engine is."""
    monkeypatch.setenv("PATH", str(workspace.root / "no-bin"))
    line = one_line_error(workspace.invoke("docker-build", "--image", "shop:v1"))
    assert line == (
        "error: docker not found on PATH: install it, pass --tool (e.g. podman), or run "
        "`docker build -t shop:v1 .` where a container engine is"
    )


def test_docker_build_runs_the_tool(
    project: Path, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tool found on PATH runs with build -t IMAGE . in the project; its failure is reported."""
    bin_dir = workspace.root / "bin"
    bin_dir.mkdir()
    record = workspace.root / "args"
    fake = bin_dir / "fakedocker"
    fake.write_text(f'#!/bin/sh\necho "$PWD $*" > {record}\nexit 3\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    line = one_line_error(workspace.invoke("docker-build", "--tool", "fakedocker"))
    assert line == ("error: `fakedocker build -t shop-operator:latest .` failed with exit status 3")
    assert record.read_text() == f"{project} build -t shop-operator:latest .\n"
