"""``pyctrl generate models``: typed models of CRDs from files or from the cluster."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import yaml
from click.testing import CliRunner

from pyctrl.cli import app
from pyctrl.crd import models_for
from pyctrl.envtest import Environment

from .conftest import one_line_error

if TYPE_CHECKING:
    from .conftest import Workspace

FIXTURE = Path(__file__).parents[1] / "crd" / "fixtures" / "cert-manager.io_certificates.yaml"


def test_generate_models_writes_one_module_per_crd_and_checks_it(workspace: Workspace) -> None:
    """--out writes <plural>_<group>.py; again it is up to date; --check fails once edited."""
    shutil.copy(FIXTURE, workspace.root / "certificates.yaml")
    args = ("generate", "models", "--crd", "certificates.yaml", "--out", "thirdparty")
    result = workspace.invoke(*args)
    assert result.exit_code == 0, result.output
    module = workspace.root / "thirdparty" / "certificates_cert_manager_io.py"
    assert result.stdout == f"created {module.relative_to(workspace.root)}\n"
    crd = yaml.safe_load(FIXTURE.read_text())
    assert module.read_text() == models_for(crd, source="certificates.yaml")
    again = workspace.invoke(*args, "--check")
    assert again.exit_code == 0, again.output
    assert "up to date" in again.stdout
    module.write_text(module.read_text() + "# edited\n")
    stale = workspace.invoke(*args, "--check")
    assert stale.exit_code == 1
    assert "stale: thirdparty/certificates_cert_manager_io.py (differs)" in stale.stdout
    assert one_line_error(stale).startswith("error: 1 models module(s) under thirdparty are stale")


def test_generate_models_without_out_prints_the_module(workspace: Workspace) -> None:
    """Without --out the module goes to standard output."""
    shutil.copy(FIXTURE, workspace.root / "certificates.yaml")
    result = workspace.invoke("generate", "models", "--crd", "certificates.yaml")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith('"""Typed models of the Certificate custom resource')
    assert "class Certificate(CustomResource, group='cert-manager.io'" in result.stdout


def test_generate_models_refuses_a_file_without_crds(workspace: Workspace) -> None:
    """A file that holds no CRD is one error line naming it."""
    (workspace.root / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\n")
    result = workspace.invoke("generate", "models", "--crd", "cm.yaml")
    assert result.exit_code == 1
    assert one_line_error(result) == "error: cm.yaml holds no CustomResourceDefinition"


async def test_generate_models_reads_the_crd_from_the_cluster() -> None:
    """--crd-name reads the CRD through the kubeconfig: the same models as from the file."""
    crd = yaml.safe_load(FIXTURE.read_text())
    async with Environment(crds=[crd]) as env:
        result = await asyncio.to_thread(
            CliRunner().invoke,
            app,
            ["generate", "models", "--crd-name", "certificates.cert-manager.io",
             "--kubeconfig", str(env.kubeconfig_path)],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        from_file = models_for(crd, source=f"the cluster at {env.config.host}")
        assert result.stdout == from_file
        missing = await asyncio.to_thread(
            CliRunner().invoke,
            app,
            ["generate", "models", "--crd-name", "nothere.example.com",
             "--kubeconfig", str(env.kubeconfig_path)],
        )  # fmt: skip
        assert missing.exit_code == 1
        assert "the cluster has no CustomResourceDefinition 'nothere.example.com'" in missing.output
