"""What the scaffolding commands share: templates, scaffold markers, and a checked write.

Templates are files under ``pyctrl/cli/templates`` with ``{{placeholders}}``. Code that
later commands extend (the ``__main__`` module's types and setup, a kind's conversion
spokes) carries marker comments, ``# +pyctrl:scaffold:<name>``, as kubebuilder's
``// +kubebuilder:scaffold:...`` markers: a new line is inserted just above the marker,
with its indentation, so what the user wrote around them is kept.

A command first computes every change in memory (`Changes`): new files, which must not
exist yet, and edits of existing ones. Only when all of them are possible does it write,
so a refused command changes nothing.
"""

from __future__ import annotations

import importlib.resources
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pyctrl
from pyctrl.cli._common import CliError

if TYPE_CHECKING:
    from collections.abc import Mapping

_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
MARKER = "# +pyctrl:scaffold:"


def render(template: str, values: Mapping[str, object]) -> str:
    """Fill the ``{{placeholders}}`` of ``templates/<template>`` with ``values``."""
    text = importlib.resources.files("pyctrl.cli").joinpath("templates", template).read_text()

    def replace(match: re.Match[str]) -> str:
        return str(values[match.group(1)])

    return _PLACEHOLDER.sub(replace, text)


def insert_at_marker(text: str, marker: str, line: str, *, where: str) -> str:
    """Insert ``line`` above the ``# +pyctrl:scaffold:<marker>`` comment of ``text``.

    A line already present (stripped) is not added twice.

    Raises:
        CliError: ``text`` (the file ``where``) has no such marker.
    """
    lines = text.splitlines(keepends=True)
    if any(existing.strip() == line.strip() for existing in lines):
        return text
    for index, existing in enumerate(lines):
        if existing.strip() == MARKER + marker:
            indent = existing[: len(existing) - len(existing.lstrip())]
            lines.insert(index, f"{indent}{line.strip()}\n")
            return "".join(lines)
    raise CliError(
        f"{where} has no `{MARKER}{marker}` comment: put it back where pyctrl adds "
        f"{marker} (see docs/cli.md), then run the command again"
    )


@dataclass
class Changes:
    """The files a command will write: new ones and edited ones, by path under ``root``.

    Attributes:
        root: The project directory.
        new: Files to create; none may exist yet.
        edited: Existing files with their new text.
    """

    root: Path
    new: dict[str, str] = field(default_factory=dict)
    edited: dict[str, str] = field(default_factory=dict)

    def read(self, relative: str) -> str:
        """The current text of a file, as edited so far by this command."""
        if relative in self.edited:
            return self.edited[relative]
        if relative in self.new:
            return self.new[relative]
        path = self.root / relative
        try:
            return path.read_text()
        except FileNotFoundError:
            raise CliError(f"{relative} is missing: pyctrl expected it in {self.root}") from None
        except OSError as exc:
            raise CliError(f"cannot read {path}: {exc.strerror or exc}") from exc

    def add(self, relative: str, text: str) -> None:
        """Create ``relative``; refused (`CliError`) if it exists."""
        if (self.root / relative).exists() or relative in self.new:
            raise CliError(
                f"{relative} already exists: pyctrl does not overwrite it (move it away to "
                "scaffold it again)"
            )
        self.new[relative] = text

    def ensure(self, relative: str, text: str) -> None:
        """Create ``relative`` with ``text`` unless it exists (``__init__.py`` files)."""
        if not (self.root / relative).exists() and relative not in self.new:
            self.new[relative] = text

    def edit(self, relative: str, marker: str, line: str) -> None:
        """Insert ``line`` at ``marker`` of ``relative`` (see `insert_at_marker`)."""
        text = insert_at_marker(self.read(relative), marker, line, where=relative)
        if relative in self.new:
            self.new[relative] = text
        else:
            self.edited[relative] = text

    def write(self) -> list[str]:
        """Write everything; return the relative paths written, new ones first."""
        written = []
        for relative, text in [*self.new.items(), *self.edited.items()]:
            path = self.root / relative
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
            except OSError as exc:
                raise CliError(f"cannot write {path}: {exc.strerror or exc}") from exc
            written.append(relative)
        return written


def regenerate_manifests(directory: Path, package: str) -> None:
    """Run ``pyctrl generate`` in the project, with this interpreter and this pyctrl.

    A child process, so the project's freshly written modules are imported anew.
    """
    source = str(Path(pyctrl.__file__).resolve().parent.parent)
    paths = [str(directory.resolve()), source, os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    command = [
        sys.executable,
        "-m",
        "pyctrl.cli",
        "generate",
        f"{package}.__main__:operator",
        "--out",
        "config",
    ]
    try:
        done = subprocess.run(
            command,
            cwd=directory,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CliError(f"generating the manifests failed: {exc}") from exc
    if done.returncode != 0:
        detail = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        raise CliError(f"generating the project's manifests failed: {detail[0]}")
