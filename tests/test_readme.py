"""README.md stays true to pyproject.toml."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

from pyctrl.cli._init import next_steps, project
from pyctrl.cli._origin import Origin

REPO = Path(__file__).resolve().parents[1]


def test_readme_names_every_runtime_dependency() -> None:
    """The README's list of runtime dependencies is pyproject's, no more and no fewer."""
    readme = " ".join((REPO / "README.md").read_text().split())
    listed = re.search(r"Runtime dependencies: ([^.]+)\.", readme)
    assert listed is not None, "README.md has no 'Runtime dependencies: ...' sentence"
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = {re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0] for spec in project["dependencies"]}
    assert set(listed.group(1).split(", ")) == declared


def _start_a_project() -> str:
    return (REPO / "README.md").read_text().split("## Start a project", 1)[1].split("\n## ", 1)[0]


def test_the_readme_shows_what_init_prints_for_a_checkout_directory() -> None:
    """Start a project's example of init's steps is what init prints after `pip install .`."""
    section = _start_a_project()
    command = re.search(r"^(pyctrl init .*)$", section, re.M)
    shown = re.search(r"```console\nNext:\n(.*?)```", section, re.S)
    assert command is not None
    assert shown is not None
    args = shlex.split(command[1])
    directory = Path(args[2])
    options = dict(zip(args[3::2], args[4::2], strict=True))
    values = project(
        directory.name, domain="example.com", group=options["--group"], version="v1alpha1",
        kind=options["--kind"], package=None, directory=directory,
    )  # fmt: skip
    origin = Origin("directory", "/home/you/pyctrl")  # `pip install .` of a checkout there
    printed = [f"  {step}" for step in next_steps(directory, values, origin)]
    assert shown[1].splitlines() == printed


def test_the_readme_installs_from_the_checkout_it_is_in() -> None:
    """No step assumes the checkout's directory name: pyctrl is installed from `.`."""
    section = _start_a_project()
    assert "pip install .  " in section
    assert "./pyctrl" not in section
