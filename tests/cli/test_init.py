"""``pyctrl init``: option checks and the non-empty directory rule."""

from __future__ import annotations

import tomllib
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

import pytest
import yaml
from packaging.requirements import Requirement

from .conftest import one_line_error

if TYPE_CHECKING:
    from .conftest import Workspace


def test_init_refuses_a_non_empty_directory(workspace: Workspace) -> None:
    """A directory holding anything is left alone without --force."""
    target = workspace.root / "project"
    target.mkdir()
    (target / "notes.txt").write_text("mine\n")
    error = one_line_error(workspace.invoke("init", "project", "--name", "shop"))
    assert error == (
        "error: project is not empty: choose a new directory, or pass --force to write the "
        "project into it (files with the same names are overwritten)"
    )
    assert [path.name for path in target.iterdir()] == ["notes.txt"]


def test_init_force_writes_into_a_non_empty_directory(workspace: Workspace) -> None:
    """With --force the project is written next to the files already there."""
    target = workspace.root / "project"
    target.mkdir()
    (target / "notes.txt").write_text("mine\n")
    (target / "README.md").write_text("old readme\n")
    result = workspace.invoke(
        "init", "project", "--name", "shop", "--group", "retail", "--kind", "Store", "--force"
    )
    assert result.exit_code == 0, result.output
    assert (target / "notes.txt").read_text() == "mine\n"
    assert (target / "README.md").read_text().startswith("# shop\n")
    crd = yaml.safe_load((target / "config" / "crd" / "stores.retail.example.com.yaml").read_text())
    assert crd["spec"]["names"]["kind"] == "Store"
    assert (target / "shop" / "controller.py").is_file()


def test_init_refuses_a_file_as_directory(workspace: Workspace) -> None:
    """An existing file where the project should go is a usage error naming it."""
    (workspace.root / "taken").write_text("")
    result = workspace.invoke("init", "taken", "--name", "shop")
    assert result.exit_code == 2
    assert "Invalid value for 'DIRECTORY': Directory 'taken' is a file." in result.stderr


def test_init_reports_an_unwritable_directory(workspace: Workspace) -> None:
    """A directory that cannot be created is one error line naming the file."""
    (workspace.root / "afile").write_text("")
    error = one_line_error(workspace.invoke("init", "afile/project", "--name", "shop"))
    assert error.startswith("error: cannot write afile/project/pyproject.toml: ")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--name", "My_Shop"], "operator name 'My_Shop' must be a DNS label"),
        (["--name", "shop", "--group", "Retail"], "--group 'Retail' must be a DNS label"),
        (["--name", "shop", "--domain", "localhost"], "--domain 'localhost' must be a DNS"),
        (["--name", "shop", "--version", "1"], "--version '1' must look like v1"),
        (["--name", "shop", "--kind", "store"], "--kind 'store' must be CamelCase"),
        (["--name", "shop", "--kind", "Condition"], "--kind 'Condition' would shadow"),
        (["--name", "shop", "--package", "json"], "package name 'json' is taken"),
        (["--name", "shop", "--package", "pydantic"], "would shadow the installed module"),
        (["--name", "shop", "--package", "class"], "must be a lowercase Python identifier"),
    ],
)
def test_init_rejects_bad_options_before_writing(
    workspace: Workspace, options: list[str], message: str
) -> None:
    """Each invalid option is named in one error line, and nothing is created."""
    error = one_line_error(workspace.invoke("init", "project", *options))
    assert message in error
    assert not (workspace.root / "project").exists()


def test_init_needs_a_name_when_the_directory_has_none_usable(workspace: Workspace) -> None:
    """Without --name the directory name is used, and a bad one asks for --name."""
    error = one_line_error(workspace.invoke("init", "My Project"))
    assert error.startswith("error: operator name 'My Project' must be a DNS label")
    assert error.endswith("pass --name")


def test_init_does_not_double_an_operator_suffix(workspace: Workspace) -> None:
    """`--name robot-operator` names image and script robot-operator, not ...-operator-operator."""
    result = workspace.invoke("init", "robot", "--name", "robot-operator", "--kind", "Robot")
    assert result.exit_code == 0, result.output
    root = workspace.root / "robot"
    namespace, deployment = yaml.safe_load_all((root / "config/manager/manager.yaml").read_text())
    assert namespace["metadata"]["name"] == "robot-operator-system"
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == (
        "robot-operator:latest"
    )
    pyproject = (root / "pyproject.toml").read_text()
    assert 'robot-operator = "robot_operator.__main__:main"' in pyproject
    assert "operator-operator" not in "".join(
        path.read_text()
        for path in root.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    )


def test_init_depends_on_the_pyctrl_runtime_distribution(workspace: Workspace) -> None:
    """The project requires pyctrl-runtime (pyctrl's distribution), never PyPI's other `pyctrl`."""
    result = workspace.invoke("init", "shop", "--kind", "Store")
    assert result.exit_code == 0, result.output
    project = tomllib.loads((workspace.root / "shop" / "pyproject.toml").read_text())["project"]
    [requirement] = [Requirement(spec) for spec in project["dependencies"]]
    assert requirement.name == "pyctrl-runtime"
    # The distribution installed here, which brings the `pyctrl` command, has that name.
    (script,) = entry_points(group="console_scripts", name="pyctrl")
    assert script.dist is not None
    assert script.dist.name == requirement.name
