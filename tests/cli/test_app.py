"""The ``pyctrl`` command as a whole: entry point, help, version."""

from __future__ import annotations

import importlib.metadata
import platform
from typing import TYPE_CHECKING

import pyctrl
from pyctrl.cli import main

if TYPE_CHECKING:
    from .conftest import Workspace


def test_console_script_points_at_main() -> None:
    """The installed `pyctrl` console script runs pyctrl.cli.main."""
    (script,) = importlib.metadata.entry_points(group="console_scripts", name="pyctrl")
    assert script.load() is main


def test_version_prints_pyctrl_and_python(workspace: Workspace) -> None:
    """`pyctrl version` names the pyctrl and Python versions."""
    result = workspace.invoke("version")
    assert result.exit_code == 0
    assert result.stdout == f"pyctrl {pyctrl.__version__} (Python {platform.python_version()})\n"


def test_help_lists_every_command(workspace: Workspace) -> None:
    """`pyctrl --help` lists the commands in the order of the kubebuilder workflow."""
    result = workspace.invoke("--help")
    assert result.exit_code == 0
    commands = result.stdout.split("Commands:", 1)[1]
    assert [line.split()[0] for line in commands.strip().splitlines()] == [
        "init",
        "create",
        "generate",
        "crd",
        "install",
        "uninstall",
        "run",
        "docker-build",
        "deploy",
        "undeploy",
        "envtest",
        "version",
    ]


def test_an_unknown_command_is_a_usage_error(workspace: Workspace) -> None:
    """A command that does not exist exits with status 2 naming it."""
    result = workspace.invoke("frobnicate")
    assert result.exit_code == 2
    assert "No such command 'frobnicate'" in result.stderr
