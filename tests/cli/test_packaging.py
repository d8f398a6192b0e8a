"""Kustomizations, the installer and the Helm chart, checked with the real kubectl and helm.

The MySrv example (webhooks, a conversion-free CRD) in both certificate modes:
``kubectl kustomize config/default`` builds exactly ``install.yaml``; ``helm lint``
passes and ``helm template`` with the default values renders exactly the same objects;
values change what they say; ``generate --check`` covers the installer and the chart;
and ``install.yaml`` applied to the embedded API server creates every object.
"""

from __future__ import annotations

import asyncio
import subprocess
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from pyctrl.envtest import Environment
from tests.helm import helm_path
from tests.kubectl import Kubectl, kubectl_path

from .conftest import read_tree

if TYPE_CHECKING:
    from pathlib import Path

    from .conftest import Workspace

MODES = ["cert-manager", "self-managed"]


def _module(workspace: Workspace, mode: str) -> None:
    workspace.module(
        "packaged",
        "import dataclasses\n"
        "from examples.mysrv import operator as example\n"
        f"operator = dataclasses.replace(example, cert_mode={mode!r})\n",
    )


def _generate(workspace: Workspace, *args: str) -> None:
    result = workspace.invoke("generate", *args, "packaged:operator")
    assert result.exit_code == 0, result.output


def _objects(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def _run(*argv: str) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=50)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _key(obj: dict[str, Any]) -> tuple[str, str]:
    return obj["kind"], obj["metadata"]["name"]


@pytest.mark.parametrize("mode", MODES)
def test_kustomize_default_builds_the_installer(workspace: Workspace, mode: str) -> None:
    """`kubectl kustomize config/default` gives install.yaml's objects, in its order."""
    _module(workspace, mode)
    _generate(workspace)
    _generate(workspace, "installer")
    built = _objects(_run(kubectl_path(), "kustomize", str(workspace.root / "config/default")))
    installer = _objects((workspace.root / "dist/install.yaml").read_text())
    assert built == installer
    kinds = {obj["kind"] for obj in installer}
    assert ("Certificate" in kinds) == (mode == "cert-manager")
    assert "ServiceMonitor" not in kinds  # prometheus/ stays out, as kubebuilder's default


@pytest.mark.parametrize("mode", MODES)
def test_helm_chart_lints_and_renders_the_installer_by_default(
    workspace: Workspace, mode: str
) -> None:
    """`helm lint` passes; `helm template` with default values is exactly install.yaml."""
    _module(workspace, mode)
    _generate(workspace, "installer")
    _generate(workspace, "helm")
    chart = str(workspace.root / "dist/chart")
    assert "0 chart(s) failed" in _run(helm_path(), "lint", "--strict", chart)
    rendered = _objects(_run(helm_path(), "template", "mysrv", chart))
    installer = _objects((workspace.root / "dist/install.yaml").read_text())
    assert sorted(rendered, key=_key) == sorted(installer, key=_key)


def _deployment(objects: list[dict[str, Any]]) -> dict[str, Any]:
    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    return deployment


def test_helm_values_change_what_they_say(workspace: Workspace) -> None:
    """Image, replicas and sharding, resources, namespaces, CRDs, monitor, certificate mode."""
    _module(workspace, "cert-manager")
    _generate(workspace, "helm")
    chart = str(workspace.root / "dist/chart")
    values = [
        "image=registry.example.com/mysrv:v2",
        "replicas=3",
        "sharded=true",
        "resources.limits.memory=1Gi",
        "watchNamespaces={team-a,team-b}",
        "crds.install=false",
        "serviceMonitor.enabled=true",
        "certMode=self-managed",
    ]
    sets = [arg for value in values for arg in ("--set", value)]
    rendered = _objects(_run(helm_path(), "template", "mysrv", chart, *sets))
    kinds = {obj["kind"] for obj in rendered}
    assert "CustomResourceDefinition" not in kinds
    assert "ServiceMonitor" in kinds
    assert not {"Certificate", "Issuer"} & kinds
    deployment = _deployment(rendered)
    assert deployment["spec"]["replicas"] == 3
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.example.com/mysrv:v2"
    assert container["resources"]["limits"]["memory"] == "1Gi"
    args = container["args"]
    assert "--shard-ring=mysrv" in args
    assert "--leader-elect" not in args
    assert "--namespace=team-a,team-b" in args
    assert "--webhook-cert-secret=mysrv-system/mysrv-webhook-server-cert" in args
    no_election = _objects(
        _run(helm_path(), "template", "mysrv", chart, "--set", "leaderElection=false")
    )
    args = _deployment(no_election)["spec"]["template"]["spec"]["containers"][0]["args"]
    assert not [a for a in args if a.startswith(("--leader-elect", "--shard-ring"))]


def test_generate_check_covers_the_installer_and_the_chart(workspace: Workspace) -> None:
    """--check passes on what generate wrote and names a changed or leftover file."""
    _module(workspace, "self-managed")
    for what in ("installer", "helm"):
        _generate(workspace, what)
        result = workspace.invoke("generate", what, "packaged:operator", "--check")
        assert result.exit_code == 0, result.output
    values = workspace.root / "dist/chart/values.yaml"
    values.write_text(values.read_text() + "extra: 1\n")
    leftover = workspace.root / "dist/chart/templates/old.yaml"
    leftover.write_text("---\n")
    result = workspace.invoke("generate", "helm", "packaged:operator", "--check")
    assert result.exit_code == 1
    assert f"stale: {values.relative_to(workspace.root)} (differs)" in result.stdout
    assert "old.yaml (no longer generated)" in result.stdout
    assert "regenerate with: pyctrl generate helm packaged:operator" in result.output
    _generate(workspace, "helm")
    assert "old.yaml" not in read_tree(workspace.root / "dist/chart")


async def test_the_installer_creates_every_object_on_the_embedded_server(
    workspace: Workspace, tmp_path: Path
) -> None:
    """`kubectl apply --server-side -f install.yaml` (no cert-manager): every object is made."""
    _module(workspace, "self-managed")
    # The command runs its own event loop: not in this test's.
    await asyncio.to_thread(_generate, workspace, "installer")
    installer = workspace.root / "dist/install.yaml"
    objects = _objects(installer.read_text())
    async with Environment() as env:
        # kubectl's namespace is the objects' (it refuses objects of another one).
        kubectl = Kubectl(env.kubeconfig_path, tmp_path / "cache", "mysrv-system")
        await kubectl("apply", "--server-side", "-f", str(installer))
        for obj in objects:
            meta = obj["metadata"]
            where = ["-n", meta["namespace"]] if "namespace" in meta else []
            kind = obj["kind"].lower() + "." + obj["apiVersion"].rpartition("/")[0]
            got = await kubectl("get", kind.rstrip("."), meta["name"], *where, "-o", "json")
            assert yaml.safe_load(got.out)["metadata"]["name"] == meta["name"]
        deployment = _deployment(objects)
        live = await kubectl(
            "get", "deployment", deployment["metadata"]["name"],
            "-n", deployment["metadata"]["namespace"], "-o", "json",
        )  # fmt: skip
        spec = yaml.safe_load(live.out)["spec"]
        assert (
            spec["template"]["spec"]["containers"][0]["args"]
            == (deployment["spec"]["template"]["spec"]["containers"][0]["args"])
        )
        assert spec["template"]["spec"]["serviceAccountName"] == "mysrv-controller-manager"
