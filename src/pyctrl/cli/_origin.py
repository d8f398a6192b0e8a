"""Where this pyctrl came from, and the ``pip install`` that finds it again.

pyctrl-runtime is not on PyPI yet, so a project made by ``pyctrl init`` cannot get its
``pyctrl-runtime`` dependency from there: ``pip install -e '.[dev]'`` alone stops with
"No matching distribution found for pyctrl-runtime". ``init`` knows where the running
pyctrl came from, and prints (and writes into the project's README) an install command
that names that source, so the steps work as printed:

- a checkout (``<root>/src/pyctrl``, run from source or installed editable):
  ``pip install -e '.[dev]' -e <root>``;
- a local directory or a wheel file pip installed (PEP 610's ``direct_url.json``):
  ``pip install -e '.[dev]' <path>``;
- a version control or archive URL:
  ``pip install -e '.[dev]' 'pyctrl-runtime @ git+<url>@<commit>'``;
- a package index (no ``direct_url.json``): ``pip install -e '.[dev]'``, which finds it
  on the same index.
"""

from __future__ import annotations

import importlib.metadata
import json
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlparse

import pyctrl

DISTRIBUTION = "pyctrl-runtime"
# The project's own install: its dev extra brings pytest and mypy.
PROJECT = "-e '.[dev]'"

Kind = Literal["checkout", "directory", "wheel", "url", "index", "unknown"]


@dataclass(frozen=True)
class Origin:
    """Where pyctrl-runtime came from.

    Attributes:
        kind: ``checkout`` (a source tree, editable), ``directory`` (a local source
            directory installed as is), ``wheel`` (a wheel file), ``url`` (a version
            control or archive URL), ``index`` (a package index) or ``unknown``.
        location: The checkout's root, the directory, the wheel file or the URL
            (``git+...@commit``); empty for an index or unknown.
    """

    kind: Kind
    location: str = ""

    def requirement(self) -> str:
        """The pip argument that installs this pyctrl-runtime, or "" for an index."""
        match self.kind:
            case "checkout":
                return f"-e {shlex.quote(self.location)}"
            case "directory" | "wheel":
                return shlex.quote(self.location)
            case "url":
                return shlex.quote(f"{DISTRIBUTION} @ {self.location}")
            case _:
                return ""

    def pip_install(self) -> str:
        """The command that installs a generated project with its dev tools, as printed."""
        return " ".join(filter(None, ["pip install", PROJECT, self.requirement()]))

    def note(self) -> str:
        """Why the command names a source, for the README and init's output."""
        match self.kind:
            case "checkout":
                return f"pyctrl-runtime from the checkout pyctrl init ran from ({self.location})"
            case "directory" | "wheel" | "url":
                return f"pyctrl-runtime from {self.location}, as pyctrl init's own"
            case "index":
                return "pyctrl-runtime from the package index it was installed from"
            case _:
                return (
                    "pyctrl-runtime is not on PyPI yet: add its checkout, directory or wheel "
                    "to this command"
                )


def _checkout(package_dir: Path) -> Path | None:
    """The root of the source tree ``package_dir`` (``<root>/src/pyctrl``) belongs to."""
    root = package_dir.parent.parent
    if package_dir.parent.name != "src" or not (root / "pyproject.toml").is_file():
        return None
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return root if project.get("project", {}).get("name") == DISTRIBUTION else None


def from_direct_url(direct_url: dict[str, object] | None) -> Origin:
    """The origin a distribution's PEP 610 ``direct_url.json`` records (None: an index)."""
    if direct_url is None:
        return Origin("index")
    url = str(direct_url.get("url", ""))
    vcs = direct_url.get("vcs_info")
    if isinstance(vcs, dict):
        commit = vcs.get("commit_id") or vcs.get("requested_revision")
        return Origin("url", f"{vcs.get('vcs', 'git')}+{url}" + (f"@{commit}" if commit else ""))
    parsed = urlparse(url)
    if parsed.scheme != "file":
        return Origin("url", url)
    path = unquote(parsed.path)
    info = direct_url.get("dir_info")
    if isinstance(info, dict):
        return Origin("checkout" if info.get("editable") else "directory", path)
    if not Path(path).exists():
        return Origin("unknown")
    return Origin("wheel" if path.endswith(".whl") else "directory", path)


def pyctrl_origin() -> Origin:
    """Where the running pyctrl came from."""
    root = _checkout(Path(pyctrl.__file__).resolve().parent)
    if root is not None:
        return Origin("checkout", str(root))
    try:
        distribution = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return Origin("unknown")
    text = distribution.read_text("direct_url.json")
    try:
        return from_direct_url(json.loads(text) if text else None)
    except (ValueError, AttributeError):
        return Origin("unknown")
