"""``pyctrl generate``: manifests written from an Operator or CustomResource classes."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from pyctrl.crd import crds_for, to_yaml

from .conftest import one_line_error, read_tree

if TYPE_CHECKING:
    from .conftest import Workspace


def _rendered(workspace: Workspace, module: str, attribute: str = "operator") -> dict[str, str]:
    operator = getattr(workspace.imported(module), attribute)
    rendered: dict[str, str] = asyncio.run(operator.render_manifests())
    return rendered


def test_generate_writes_exactly_the_rendered_manifests(workspace: Workspace) -> None:
    """`generate MODULE:ATTR` writes every file of Operator.render_manifests, byte for byte."""
    workspace.operator_module()
    result = workspace.invoke("generate", "gadgets:operator", "--out", "out")
    assert result.exit_code == 0, result.output
    written = read_tree(workspace.root / "out")
    assert written == _rendered(workspace, "gadgets")
    assert "crd/gadgets.gadgets.example.com.yaml" in written
    assert "created out/rbac/role.yaml" in result.stdout


def test_generate_defaults_to_all_into_config(workspace: Workspace) -> None:
    """Without WHAT and --out, everything goes to ./config."""
    workspace.operator_module()
    result = workspace.invoke("generate", "gadgets:operator")
    assert result.exit_code == 0, result.output
    assert read_tree(workspace.root / "config") == _rendered(workspace, "gadgets")


def test_generate_finds_the_modules_only_operator(workspace: Workspace) -> None:
    """Without :ATTRIBUTE, the one Operator the module holds is used."""
    workspace.operator_module()
    result = workspace.invoke("generate", "gadgets")
    assert result.exit_code == 0, result.output
    assert read_tree(workspace.root / "config") == _rendered(workspace, "gadgets")


@pytest.mark.parametrize("what", ["crd", "rbac", "manager"])
def test_generate_subset_writes_only_that_subdirectory(workspace: Workspace, what: str) -> None:
    """`generate crd|rbac|manager` writes only the rendered files of that subdirectory."""
    workspace.operator_module()
    result = workspace.invoke("generate", what, "gadgets:operator")
    assert result.exit_code == 0, result.output
    expected = {
        name: text
        for name, text in _rendered(workspace, "gadgets").items()
        if name.startswith(f"{what}/")
    }
    assert expected
    assert read_tree(workspace.root / "config") == expected


def test_generate_webhook_without_webhooks_writes_nothing(workspace: Workspace) -> None:
    """An operator with no webhooks has no webhook manifests, and the command says so."""
    workspace.operator_module()
    result = workspace.invoke("generate", "webhook", "gadgets:operator")
    assert result.exit_code == 0, result.output
    assert not (workspace.root / "config").exists()
    assert "gadgets:operator has no webhook manifests" in result.stdout


def test_generate_removes_manifests_no_longer_generated(workspace: Workspace) -> None:
    """Stale YAML in generated subdirectories is removed; other directories are left alone."""
    workspace.operator_module()
    stale = workspace.root / "config" / "crd" / "olds.gadgets.example.com.yaml"
    sample = workspace.root / "config" / "samples" / "gadget.yaml"
    for path in (stale, sample):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("kind: Old\n")
    result = workspace.invoke("generate", "gadgets:operator")
    assert result.exit_code == 0, result.output
    assert not stale.exists()
    assert sample.read_text() == "kind: Old\n"
    assert f"removed {stale.relative_to(workspace.root)}" in result.stdout


def test_generate_leaves_current_files_untouched(workspace: Workspace) -> None:
    """A second run rewrites nothing (files keep their modification times)."""
    workspace.operator_module()
    assert workspace.invoke("generate", "gadgets:operator").exit_code == 0
    times = {path: path.stat().st_mtime_ns for path in (workspace.root / "config").rglob("*")}
    result = workspace.invoke("generate", "gadgets:operator")
    assert result.exit_code == 0, result.output
    assert {path: path.stat().st_mtime_ns for path in times} == times
    assert "config: 15 manifest files up to date" in result.stdout


def test_check_passes_when_manifests_are_current(workspace: Workspace) -> None:
    """`--check` exits 0 when every file matches."""
    workspace.operator_module()
    assert workspace.invoke("generate", "gadgets:operator").exit_code == 0
    result = workspace.invoke("generate", "gadgets:operator", "--check")
    assert result.exit_code == 0, result.output
    assert "up to date" in result.stdout


def test_check_lists_a_stale_file_and_writes_nothing(workspace: Workspace) -> None:
    """`--check` exits 1 naming a file that differs, and leaves it as it is."""
    workspace.operator_module()
    assert workspace.invoke("generate", "gadgets:operator").exit_code == 0
    role = workspace.root / "config" / "rbac" / "role.yaml"
    role.write_text(role.read_text().replace("watch", "wander"))
    edited = role.read_text()
    result = workspace.invoke("generate", "gadgets:operator", "--check")
    assert result.stdout.splitlines() == ["stale: config/rbac/role.yaml (differs)"]
    error = one_line_error(result)
    assert error == (
        "error: 1 manifest file under config is stale; regenerate with: "
        "pyctrl generate gadgets:operator"
    )
    assert role.read_text() == edited


def test_check_lists_missing_and_leftover_files(workspace: Workspace) -> None:
    """`--check` reports files to create and files no longer generated."""
    workspace.operator_module()
    assert workspace.invoke("generate", "crd", "gadgets:operator", "-o", "deploy").exit_code == 0
    leftover = workspace.root / "deploy" / "crd" / "olds.gadgets.example.com.yaml"
    leftover.write_text("kind: Old\n")
    (workspace.root / "deploy" / "crd" / "gadgets.gadgets.example.com.yaml").unlink()
    result = workspace.invoke("generate", "crd", "gadgets:operator", "-o", "deploy", "--check")
    assert result.stdout.splitlines() == [
        "stale: deploy/crd/gadgets.gadgets.example.com.yaml (missing)",
        "stale: deploy/crd/olds.gadgets.example.com.yaml (no longer generated)",
    ]
    assert one_line_error(result).endswith(
        "regenerate with: pyctrl generate crd gadgets:operator --out deploy"
    )
    assert leftover.exists()


API_MODULE = """
from pydantic import Field

from pyctrl.meta import KubeModel
from pyctrl.resource import CustomResource


class ToolSpec(KubeModel):
    size: int = 1


class ToolV1alpha1(CustomResource, group="tools.example.com", version="v1alpha1", kind="Tool",
                   storage=False):
    spec: ToolSpec = Field(default_factory=ToolSpec)


class Tool(CustomResource, group="tools.example.com", version="v1"):
    spec: ToolSpec = Field(default_factory=ToolSpec)


class Box(CustomResource, group="boxes.example.com", version="v1", scope="Cluster"):
    pass
"""


def test_generate_crd_from_a_module_without_operator(workspace: Workspace) -> None:
    """`generate crd MODULE` writes one CRD per group and kind of the module's classes."""
    workspace.module("toolapi", API_MODULE)
    result = workspace.invoke("generate", "crd", "toolapi")
    assert result.exit_code == 0, result.output
    module = workspace.imported("toolapi")
    written = read_tree(workspace.root / "config")
    crds = crds_for(module.ToolV1alpha1, module.Tool, module.Box)
    kustomization = yaml.safe_load(written.pop("crd/kustomization.yaml"))
    assert written == {f"crd/{crd['metadata']['name']}.yaml": to_yaml([crd]) for crd in crds}
    assert kustomization["resources"] == sorted(f"{crd['metadata']['name']}.yaml" for crd in crds)
    tool: dict[str, Any] = yaml.safe_load(written["crd/tools.tools.example.com.yaml"])
    assert [v["name"] for v in tool["spec"]["versions"]] == ["v1", "v1alpha1"]
    assert "crd/boxes.boxes.example.com.yaml" in written


def test_generate_crd_matches_what_the_operator_renders(workspace: Workspace) -> None:
    """The CRDs of a package's types are the same files with or without an Operator."""
    workspace.module("kit.api", API_MODULE)
    workspace.module("kit.__init__", "from kit.api import Box, Tool, ToolV1alpha1\n")
    workspace.module(
        "kit.app",
        """
        from kit.api import Box, Tool, ToolV1alpha1
        from pyctrl.app import Operator

        operator = Operator(name="kit", types=[ToolV1alpha1, Tool, Box], setup=lambda m: None)
        """,
    )
    assert workspace.invoke("generate", "crd", "kit", "-o", "bare").exit_code == 0
    assert workspace.invoke("generate", "crd", "kit.app:operator", "-o", "full").exit_code == 0
    bare = read_tree(workspace.root / "bare")
    assert sorted(bare) == [
        "crd/boxes.boxes.example.com.yaml",
        "crd/kustomization.yaml",
        "crd/tools.tools.example.com.yaml",
    ]
    assert bare == read_tree(workspace.root / "full")


def test_generate_crd_skips_types_imported_from_elsewhere(workspace: Workspace) -> None:
    """Classes a module imports from another package are not its CRDs."""
    workspace.module("toolapi", API_MODULE)
    workspace.module(
        "mine",
        """
        from pyctrl.resource import CustomResource
        from toolapi import Tool


        class Mine(CustomResource, group="mine.example.com", version="v1"):
            pass
        """,
    )
    result = workspace.invoke("generate", "crd", "mine")
    assert result.exit_code == 0, result.output
    assert sorted(read_tree(workspace.root / "config")) == [
        "crd/kustomization.yaml",
        "crd/mines.mine.example.com.yaml",
    ]


# -- errors --------------------------------------------------------------------------


def test_a_missing_module_is_one_line(workspace: Workspace) -> None:
    """A module that cannot be found is named in a single error line, exit 1."""
    result = workspace.invoke("generate", "nosuchmodule:operator")
    assert one_line_error(result).startswith(
        "error: cannot import module 'nosuchmodule': no module named 'nosuchmodule'"
    )


def test_a_module_failing_to_import_is_one_line_with_its_location(workspace: Workspace) -> None:
    """An exception while importing is reported with its type, message and file:line."""
    path = workspace.module("broken", "x = 1\ny = 1 / 0\n")
    result = workspace.invoke("generate", "broken:operator")
    assert one_line_error(result) == (
        f"error: importing module 'broken' failed: ZeroDivisionError: division by zero ({path}:2)"
    )


def test_a_missing_dependency_of_the_module_is_named(workspace: Workspace) -> None:
    """A module that imports something absent is reported as failing, naming the absent one."""
    workspace.module("needy", "import absent_dependency_xyz\n")
    error = one_line_error(workspace.invoke("generate", "needy:operator"))
    assert error.startswith("error: importing module 'needy' failed: ModuleNotFoundError: ")
    assert "absent_dependency_xyz" in error


def test_a_module_that_exits_on_import_is_explained(workspace: Workspace) -> None:
    """A module calling sys.exit at import (an unguarded main) does not end the command."""
    workspace.module("eager", "import sys\nsys.exit(3)\n")
    error = one_line_error(workspace.invoke("generate", "eager:operator"))
    assert error.startswith("error: module 'eager' exited (status 3) while being imported")


def test_a_missing_attribute_names_the_modules_operators(workspace: Workspace) -> None:
    """A wrong attribute is reported with the Operators the module does hold."""
    workspace.operator_module()
    error = one_line_error(workspace.invoke("generate", "gadgets:oprator"))
    assert error == "error: module 'gadgets' has no attribute 'oprator' (its Operators: operator)"


def test_an_attribute_that_is_not_an_operator_is_refused(workspace: Workspace) -> None:
    """Naming something else than an Operator is an error saying what it is."""
    workspace.operator_module()
    error = one_line_error(workspace.invoke("generate", "gadgets:setup"))
    assert error.startswith("error: gadgets:setup is a function, not a pyctrl.app.Operator")


def test_a_module_without_operator_needs_crd(workspace: Workspace) -> None:
    """`generate all` on a module with no Operator points at `generate crd`."""
    workspace.module("toolapi", API_MODULE)
    error = one_line_error(workspace.invoke("generate", "toolapi"))
    assert "defines no Operator" in error
    assert "pyctrl generate crd toolapi" in error


def test_a_module_with_nothing_to_generate_is_an_error(workspace: Workspace) -> None:
    """`generate crd` on a module without Operator or CustomResource classes fails."""
    workspace.module("empty", "x = 1\n")
    error = one_line_error(workspace.invoke("generate", "crd", "empty"))
    assert error == ("error: module 'empty' defines no Operator and no CustomResource classes")


def test_several_operators_must_be_named(workspace: Workspace) -> None:
    """Without :ATTRIBUTE, a module holding two Operators is ambiguous."""
    workspace.operator_module()
    workspace.module(
        "twins",
        """
        from gadgets import operator as first
        from pyctrl.app import Operator

        second = Operator(name="other", types=[], setup=lambda manager: None)
        """,
    )
    error = one_line_error(workspace.invoke("generate", "twins"))
    assert error == (
        "error: module 'twins' holds several Operators: name one of twins:first, twins:second"
    )


def test_a_failing_setup_is_reported(workspace: Workspace) -> None:
    """An exception from the Operator's setup is one line naming the target."""
    workspace.module(
        "badsetup",
        """
        from pyctrl.app import Operator


        def setup(manager):
            raise RuntimeError("no controllers today")


        operator = Operator(name="bad", types=[], setup=setup)
        """,
    )
    error = one_line_error(workspace.invoke("generate", "badsetup:operator"))
    assert error.startswith(
        "error: cannot render the manifests of badsetup:operator: "
        "RuntimeError: no controllers today ("
    )


def test_an_unwritable_directory_is_one_line(workspace: Workspace) -> None:
    """A --out that cannot be created is named in the error, nothing else is printed."""
    workspace.operator_module()
    (workspace.root / "afile").write_text("")
    error = one_line_error(workspace.invoke("generate", "gadgets:operator", "-o", "afile/config"))
    assert error.startswith("error: cannot write afile/config/crd/gadgets.gadgets.example.com.yaml")


def test_traceback_option_prints_the_cause(workspace: Workspace) -> None:
    """`pyctrl --traceback` prints the traceback behind the error line."""
    workspace.module("broken", "y = 1 / 0\n")
    result = workspace.invoke("--traceback", "generate", "broken:operator")
    assert result.exit_code == 1
    assert "Traceback (most recent call last)" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("error: importing module 'broken'")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["bogus", "gadgets"], "'bogus' is not one of all, crd, rbac, manager, webhook"),
        (["crd"], "missing MODULE[:ATTRIBUTE] after 'crd'"),
        (["crd", "a", "b"], "expected [WHAT] MODULE[:ATTRIBUTE], got 3 arguments"),
        (["not-a-module:operator"], "'not-a-module' is not a dotted module name"),
    ],
)
def test_bad_arguments_are_usage_errors(
    workspace: Workspace, args: list[str], message: str
) -> None:
    """Malformed arguments exit with status 2 (a usage error) or 1, saying what is wrong."""
    result = workspace.invoke("generate", *args)
    assert result.exit_code in (1, 2)
    assert message in result.stderr
    assert "Traceback" not in result.output
