"""Developer tasks: `nox -s lint typecheck tests` is what CI runs."""

from __future__ import annotations

import os
import sys

import nox

nox.options.sessions = ["lint", "typecheck", "tests"]
nox.options.reuse_existing_virtualenvs = True
nox.options.default_venv_backend = "venv"

PYTHON = "3.11"
CHECKED = ["src", "tests", "examples", "bench", "noxfile.py"]
EXAMPLES = ["mysrv", "airconditioner", "optionsrecord"]


@nox.session(python=False)
def tests(session: nox.Session) -> None:
    """Run the test suite with a coverage report (pass pytest options after --)."""
    _install(session, ".[dev]")
    session.run(
        "python",
        "-m",
        "pytest",
        "--cov",
        "--cov-report=term",
        *session.posargs,
        env=_env(session),
    )


@nox.session(python=False)
def lint(session: nox.Session) -> None:
    """Ruff (lint and format) and the import-layering contract."""
    _install(session, ".[dev]")
    session.run("python", "-m", "ruff", "check", *CHECKED, env=_env(session))
    session.run("python", "-m", "ruff", "format", "--check", *CHECKED, env=_env(session))
    session.run("lint-imports", env=_env(session))


@nox.session(python=False)
def typecheck(session: nox.Session) -> None:
    """Type-check with mypy --strict: the library, the tests and the examples."""
    _install(session, ".[dev]")
    session.run("python", "-m", "mypy", "src", "tests", "examples", env=_env(session))


@nox.session(python=False)
def docs(session: nox.Session) -> None:
    """Build the documentation site with mkdocs --strict."""
    _install(session, ".[dev,docs]")
    session.run(
        "python",
        "-m",
        "mkdocs",
        "build",
        "--strict",
        env={**_env(session), "NO_MKDOCS_2_WARNING": "1"},
    )


@nox.session(python=False)
def demo(session: nox.Session) -> None:
    """The MySrv operator on the embedded API server, with a live view (--check: CI mode)."""
    _install(session, ".[dev]")
    session.run("python", "-m", "examples.demo", *session.posargs, env=_env(session))


@nox.session(python=False)
def manifests(session: nox.Session) -> None:
    """Regenerate every example's config/ from its Python types (--check: fail if stale)."""
    _install(session, ".[dev]")
    for example in EXAMPLES:
        session.run(
            "pyctrl",
            "generate",
            "all",
            f"examples.{example}:operator",
            "--out",
            f"examples/{example}/config",
            *session.posargs,
            env=_env(session),
        )


@nox.session(python=False)
def bench(session: nox.Session) -> None:
    """Benchmarks: each prints ratios against a peer measured in the same run."""
    _install(session, ".[dev]", "kopf>=1.37")
    session.run("python", "-m", "bench", *session.posargs, env=_env(session))


# One shared virtualenv (.nox/pyctrl) keeps CI fast: every session needs the same packages.
VENV = ".nox/pyctrl"


def _env(session: nox.Session) -> dict[str, str]:
    bin_dir = os.path.abspath(os.path.join(VENV, "bin"))
    return {"PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), "VIRTUAL_ENV": VENV}


def _install(session: nox.Session, *specs: str) -> None:
    if not os.path.exists(os.path.join(VENV, "bin", "python")):
        session.run(sys.executable, "-m", "venv", VENV, external=True)
    session.run(
        os.path.join(VENV, "bin", "python"),
        "-m",
        "pip",
        "install",
        "--quiet",
        "-e",
        *specs,
        external=True,
    )
