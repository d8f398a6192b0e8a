"""Fixtures for the ``pyctrl`` command: a scratch working directory and user modules in it."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner

import pyctrl
from pyctrl.cli import app

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import ModuleType

    from click.testing import Result

# A user's operator module: one custom resource, a reconciler that marks it Ready.
OPERATOR_MODULE = """
from __future__ import annotations

from pydantic import Field

from pyctrl.app import Operator
from pyctrl.builder import controller_managed_by
from pyctrl.meta import Condition, KubeModel, set_status_condition
from pyctrl.resource import CustomResource


class GadgetSpec(KubeModel):
    size: int = 1


class GadgetStatus(KubeModel):
    conditions: list[Condition] = Field(default_factory=list)


class Gadget(CustomResource, group="{group}", version="v1"):
    spec: GadgetSpec = Field(default_factory=GadgetSpec)
    status: GadgetStatus = Field(default_factory=GadgetStatus)


class GadgetReconciler:
    def __init__(self, client):
        self.client = client

    async def reconcile_object(self, obj):
        ready = Condition(type="Ready", status="True", reason="Reconciled")
        if set_status_condition(obj.status.conditions, ready):
            await self.client.status().update(obj)


def setup(manager):
    controller_managed_by(manager).for_(Gadget).complete(GadgetReconciler(manager.client))


operator = Operator(name="gadget", types=[Gadget], setup=setup)
"""


class Workspace:
    """A scratch current directory whose ``*.py`` files are importable user modules."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.runner = CliRunner()

    def module(self, name: str, source: str, **fields: str) -> Path:
        """Write ``<name>.py`` (dedented; ``{field}`` placeholders filled) and return it."""
        path = self.root / f"{name.replace('.', '/')}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = textwrap.dedent(source)
        path.write_text(text.format(**fields) if fields else text)
        # A module rewritten within the same second at the same size would look unchanged
        # to the bytecode cache (mtime in seconds, and size): drop its compiled form.
        Path(importlib.util.cache_from_source(str(path))).unlink(missing_ok=True)
        return path

    def operator_module(self, name: str = "gadgets", group: str = "gadgets.example.com") -> Path:
        """Write a module holding ``operator``, an Operator for the Gadget kind of ``group``."""
        return self.module(name, OPERATOR_MODULE.replace("{group}", group))

    def imported(self, name: str) -> ModuleType:
        """The module as the command imported it (or import it now)."""
        if name not in sys.modules and str(self.root) not in sys.path:
            sys.path.insert(0, str(self.root))
            importlib.invalidate_caches()
        return sys.modules.get(name) or importlib.import_module(name)

    def invoke(self, *args: str) -> Result:
        """Run ``pyctrl <args>`` in this process."""
        return self.runner.invoke(app, list(args))


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    """A scratch working directory; modules imported from it are forgotten afterwards."""
    monkeypatch.chdir(tmp_path)
    # The command puts the current directory on sys.path, as `python -m` does.
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield Workspace(tmp_path)
    for name in set(sys.modules) - before:
        origin = getattr(sys.modules[name], "__file__", None) or ""
        if origin.startswith(str(tmp_path)):
            del sys.modules[name]


def subprocess_env(*paths: Path) -> dict[str, str]:
    """The environment for a child Python: ``paths`` and this pyctrl importable.

    Coverage's subprocess hooks are dropped: the child is a separate program under test.
    """
    source = Path(pyctrl.__file__).parent.parent
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("COV_CORE_", "COVERAGE_", "PYTEST_"))
    }
    entries = [*map(str, paths), str(source), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(entry for entry in entries if entry)
    return env


def read_tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` but Python's bytecode caches: text by POSIX relative path."""
    return {
        path.relative_to(root).as_posix(): path.read_text()
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def one_line_error(result: Result) -> str:
    """Assert the command failed with exactly one ``error:`` line and no traceback."""
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in result.output
    return lines[0]


@pytest.fixture(scope="session")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One mypy cache for the scaffolded projects' type checks.

    The projects differ, but most of what mypy reads (pyctrl, its dependencies, the
    standard library) is the same files: a warm cache skips them. mypy checks each cached
    module against its source, so a project's own modules are checked anew.
    """
    return tmp_path_factory.mktemp("mypy-cache")
