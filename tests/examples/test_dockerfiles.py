"""The examples' Dockerfiles, read and played without a Docker engine.

No image is built here. Each Dockerfile is parsed; its COPY instructions are replayed
from the repository root (the build context) into a directory standing for the image's
filesystem, and its ENTRYPOINT runs there with ``--help`` under this interpreter, with
pyctrl installed, as ``pip install .`` installs it in the image, and with the
distributions that only pyctrl's extras bring made unimportable.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, packages_distributions, requires
from typing import TYPE_CHECKING

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from .conftest import EXAMPLES, REPO

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

NAMES = ["airconditioner", "evc", "mysrv", "optionsrecord"]


def instructions(name: str) -> list[tuple[str, str]]:
    """The example's Dockerfile as (KEYWORD, arguments), continuations joined, comments dropped."""
    text = (EXAMPLES / name / "Dockerfile").read_text().replace("\\\n", " ")
    found = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            keyword, _, rest = stripped.partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def copies(name: str) -> list[tuple[list[str], str, str]]:
    """Each COPY as (sources, destination, the WORKDIR it runs in)."""
    workdir, found = "/", []
    for keyword, rest in instructions(name):
        if keyword == "WORKDIR":
            workdir = rest
        elif keyword == "COPY":
            *sources, target = [a for a in shlex.split(rest) if not a.startswith("--")]
            found.append((sources, target, workdir))
    return found


def _wanted(requirement: Requirement, extras: Iterable[str]) -> bool:
    marker = requirement.marker
    return marker is None or any(marker.evaluate({"extra": e}) for e in ("", *extras))


def modules_not_in_the_image() -> list[str]:
    """Top-level modules installed here that ``pip install .`` on python:3.11-slim lacks."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    # pyctrl itself (its distribution), and what the base image ships.
    present = {canonicalize_name(project["name"]), "pip", "setuptools", "wheel"}
    pending = [Requirement(spec) for spec in project["dependencies"]]
    seen: set[tuple[str, frozenset[str]]] = set()
    while pending:
        requirement = pending.pop()
        key = (canonicalize_name(requirement.name), frozenset(requirement.extras))
        if key in seen or not _wanted(requirement, ()):
            continue
        seen.add(key)
        present.add(key[0])
        try:
            specs = requires(requirement.name) or []
        except PackageNotFoundError:
            continue  # not installed here, so not importable here either
        children = [Requirement(spec) for spec in specs]
        pending += [c for c in children if _wanted(c, requirement.extras)]
    return sorted(
        module
        for module, dists in packages_distributions().items()
        if not any(canonicalize_name(dist) in present for dist in dists)
    )


def play_copies(name: str, root: Path) -> Path:
    """Replay the Dockerfile's COPYs into ``root``; return the final WORKDIR under it."""
    ignore = shutil.ignore_patterns("__pycache__")  # as .dockerignore says
    workdir = "/"
    for sources, target, workdir in copies(name):
        base = root / workdir.lstrip("/")
        destination = root / target.lstrip("/") if target.startswith("/") else base / target
        for source in sources:
            path = REPO / source
            if path.is_dir():
                shutil.copytree(path, destination, ignore=ignore, dirs_exist_ok=True)
            else:
                into = destination / path.name if target.endswith("/") else destination
                into.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, into)
    return root / workdir.lstrip("/")


@pytest.mark.parametrize("name", NAMES)
def test_dockerfile_starts_from_python_311_slim_and_pip_installs_the_project(name: str) -> None:
    """The image starts from python:3.11-slim and pip-installs the repository's project."""
    steps = instructions(name)
    assert steps[0] == ("FROM", "python:3.11-slim")
    assert ("RUN", "pip install .") in steps


@pytest.mark.parametrize("name", NAMES)
def test_dockerfile_copies_only_files_that_exist(name: str) -> None:
    """Every COPY source exists relative to the repository root, the build context."""
    sources = [source for found, _, _ in copies(name) for source in found]
    assert f"examples/{name}" in {source.rstrip("/") for source in sources}
    for source in sources:
        assert (REPO / source).exists(), f"examples/{name}/Dockerfile: COPY {source}: no such file"


@pytest.mark.parametrize("name", NAMES)
def test_dockerfile_runs_the_example_as_a_numeric_non_root_user(name: str) -> None:
    """The last USER is a numeric non-zero uid; the entry point is python -m examples.<name>."""
    steps = instructions(name)
    users = [rest for keyword, rest in steps if keyword == "USER"]
    uid = users[-1].split(":")[0]
    assert uid.isdigit()
    assert int(uid) != 0
    [entrypoint] = [rest for keyword, rest in steps if keyword == "ENTRYPOINT"]
    assert json.loads(entrypoint) == ["python", "-m", f"examples.{name}"]


@pytest.mark.parametrize("name", NAMES)
async def test_dockerfile_entrypoint_runs_from_the_copied_files(name: str, tmp_path: Path) -> None:
    """In a tree holding only what the Dockerfile copies, ``<ENTRYPOINT> --help`` exits 0."""
    workdir = await asyncio.to_thread(play_copies, name, tmp_path / "image")
    [entrypoint] = [
        json.loads(rest) for keyword, rest in instructions(name) if keyword == "ENTRYPOINT"
    ]
    program, *args = entrypoint
    assert program == "python"
    # What the image lacks is made unimportable before anything else is imported.
    blocker = tmp_path / "site"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        f"import sys\nfor name in {modules_not_in_the_image()!r}:\n"
        "    sys.modules.setdefault(name, None)\n"
    )
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *args,
        "--help",
        cwd=workdir,
        env={**environ, "PYTHONPATH": str(blocker), "PYTHONDONTWRITEBYTECODE": "1"},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(30):
        out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    assert out.decode().startswith("usage: ")
