"""``pyctrl crd check`` and ``pyctrl crd migrate``: CRD upgrades that keep stored data."""

from __future__ import annotations

import asyncio
import copy
from typing import TYPE_CHECKING, Any

import yaml
from click.testing import CliRunner

from pyctrl.cli import app
from pyctrl.client import Client
from pyctrl.envtest import Environment
from pyctrl.meta import GroupVersionKind
from pyctrl.resource import Unstructured

from .conftest import one_line_error

if TYPE_CHECKING:
    from pathlib import Path

    from .conftest import Workspace


def _crd(**spec_props: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "type": "object",
        "properties": {
            "port": {"type": "integer", "minimum": 1, "maximum": 65535},
            "mode": {"type": "string", "enum": ["fast", "safe"]},
            "legacy": {"type": "string"},
            "name": {"type": "string", "maxLength": 63},
        },
    }
    spec.update(spec_props)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.upgrade.example.com"},
        "spec": {
            "group": "upgrade.example.com",
            "scope": "Namespaced",
            "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}},
                }
            ],
        },
    }


def _breaking() -> dict[str, Any]:
    new = _crd()
    props = new["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    del props["properties"]["legacy"]
    props["properties"]["port"]["maximum"] = 1024
    props["properties"]["mode"]["enum"] = ["safe"]
    props["properties"]["name"] = {"type": "integer"}
    props["properties"]["owner"] = {"type": "string"}
    props["required"] = ["owner"]
    new["spec"]["scope"] = "Cluster"
    return new


def _write(path: Path, crd: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(crd))
    return path


def test_check_names_each_breaking_change_by_field(workspace: Workspace) -> None:
    """Removed field, type change, new required field, tightened bounds and scope: one line each."""
    _write(workspace.root / "old" / "gizmos.yaml", _crd())
    _write(workspace.root / "new.yaml", _breaking())
    result = workspace.invoke("crd", "check", "new.yaml", "--against", "old")
    assert result.exit_code == 1
    name = "gizmos.upgrade.example.com"
    assert sorted(result.stdout.splitlines()) == sorted(
        [
            f"breaking: {name}: scope changed from Namespaced to Cluster [scope-changed]",
            f"breaking: {name} v1 .spec.port: maximum changed from 65535 to 1024 [tightened]",
            f"breaking: {name} v1 .spec.mode: enum values ['fast'] removed: now ['safe'] "
            "[tightened]",
            f"breaking: {name} v1 .spec.legacy: field removed: stored values will be pruned "
            "[removed-field]",
            f"breaking: {name} v1 .spec.name: type changed from string to integer [type-changed]",
            f"breaking: {name} v1 .spec.owner: field is now required (and has no default): "
            "existing objects without it can no longer be updated [new-required]",
        ]
    )
    assert one_line_error(result) == (
        "error: 6 breaking changes; fix them or accept each with --allow RULE@FIELD"
    )


def test_check_accepts_changes_allowed_explicitly(workspace: Workspace) -> None:
    """Each change can be allowed by rule or by rule at its field; then the check passes."""
    _write(workspace.root / "old" / "gizmos.yaml", _crd())
    _write(workspace.root / "new.yaml", _breaking())
    allow = [
        "scope-changed", "tightened", "removed-field@.spec.legacy",
        "type-changed@.spec.name", "new-required@.spec.owner",
    ]  # fmt: skip
    args = [arg for rule in allow for arg in ("--allow", rule)]
    result = workspace.invoke("crd", "check", "new.yaml", "--against", "old", *args)
    assert result.exit_code == 0, result.output
    assert result.stdout == "no breaking changes in 1 CRD\n"
    partial = workspace.invoke("crd", "check", "new.yaml", "--against", "old", *args[:-2])
    assert partial.exit_code == 1
    assert "[new-required]" in partial.stdout
    unknown = workspace.invoke("crd", "check", "new.yaml", "--against", "old", "--allow", "nope")
    assert unknown.exit_code == 1
    assert one_line_error(unknown).startswith("error: unknown rule(s) nope; the rules are")


def test_check_of_a_module_against_its_committed_crds(workspace: Workspace) -> None:
    """The CRDs a module generates are compared with those `pyctrl generate` committed."""
    workspace.operator_module()
    assert workspace.invoke("generate", "gadgets:operator").exit_code == 0
    result = workspace.invoke("crd", "check", "gadgets:operator", "--against", "config/crd")
    assert result.exit_code == 0, result.output
    assert result.stdout == "no breaking changes in 1 CRD\n"


def test_generate_check_reports_breaking_changes_of_stale_crds(workspace: Workspace) -> None:
    """`generate --check` lists how a committed CRD that differs would break stored objects."""
    workspace.operator_module()
    assert workspace.invoke("generate", "gadgets:operator").exit_code == 0
    committed = workspace.root / "config" / "crd" / "gadgets.gadgets.example.com.yaml"
    crd = yaml.safe_load(committed.read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["retired"] = {"type": "string"}
    committed.write_text(yaml.safe_dump(crd))
    result = workspace.invoke("generate", "gadgets:operator", "--check")
    assert result.exit_code == 1
    assert (
        "breaking: gadgets.gadgets.example.com v1 .spec.retired: field removed: stored values "
        "will be pruned [removed-field] (pyctrl crd check --allow removed-field@.spec.retired)"
    ) in result.stdout


async def test_check_against_the_cluster_and_migrate(tmp_path: Path) -> None:
    """`crd check --against cluster` sees storedVersions; `crd migrate` clears the way."""
    alpha = _crd()
    alpha["spec"]["versions"][0]["name"] = "v1alpha1"
    async with Environment(crds=[alpha]) as env, Client.from_config(env.config) as client:
        gvk = GroupVersionKind("upgrade.example.com", "v1alpha1", "Gizmo")
        for i in range(3):
            await client.create(Unstructured.new(gvk, f"g{i}", "default", spec={"port": 80}))
        both = _crd()
        both["spec"]["versions"].append(copy.deepcopy(alpha["spec"]["versions"][0]))
        both["spec"]["versions"][1]["storage"] = False
        installed = await client.get(
            Unstructured, "gizmos.upgrade.example.com",
            gvk=GroupVersionKind("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        )  # fmt: skip
        installed.object["spec"]["versions"] = both["spec"]["versions"]
        await client.update(installed)
        kubeconfig = ["--kubeconfig", str(env.kubeconfig_path)]
        v1_only = _write(tmp_path / "v1.yaml", _crd())
        runner = CliRunner()

        def run(*args: str) -> Any:
            return runner.invoke(app, [*args, *kubeconfig])

        before = await asyncio.to_thread(
            run, "crd", "check", str(v1_only), "--against", "cluster",
            "--allow", "removed-served-version",
        )  # fmt: skip
        assert before.exit_code == 1
        assert "v1alpha1: version v1alpha1 is removed but objects may be stored at it" in (
            before.stdout
        )
        migrated = await asyncio.to_thread(run, "crd", "migrate", "gizmos.upgrade.example.com")
        assert migrated.exit_code == 0, migrated.output
        assert migrated.stdout.splitlines()[-1] == (
            "gizmos.upgrade.example.com: 3 objects rewritten at v1 (0 written by others "
            "meanwhile); storedVersions: v1"
        )
        after = await asyncio.to_thread(
            run, "crd", "check", str(v1_only), "--against", "cluster",
            "--allow", "removed-served-version",
        )  # fmt: skip
        assert after.exit_code == 0, after.output
