"""Developer tasks: `nox -s lint typecheck tests` is what CI runs."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nox

nox.options.sessions = ["lint", "typecheck", "tests"]
nox.options.reuse_existing_virtualenvs = True
nox.options.default_venv_backend = "venv"

CHECKED = ["src", "tests", "examples", "bench", "noxfile.py"]
EXAMPLES = ["mysrv", "airconditioner", "optionsrecord", "evc"]

# One shared virtualenv keeps CI fast: every session needs the same packages. Its
# programs are called by absolute path, never looked up on PATH.
VENV = Path(".nox/pyctrl").resolve()
# The benchmarks have their own, with pyctrl's runtime dependencies only (and the peers):
# the operators they measure run as they would from an image, without the dev tools.
BENCH_VENV = Path(".nox/bench").resolve()


def _install(session: nox.Session, *specs: str, venv: Path = VENV) -> None:
    if not (venv / "bin" / "python").exists():
        session.run(sys.executable, "-m", "venv", str(venv), external=True)
    session.run(
        str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "-e", *specs,
        external=True,
    )  # fmt: skip


def _run(session: nox.Session, program: str, *args: str, venv: Path = VENV, **env: str) -> None:
    session.run(str(venv / "bin" / program), *args, external=True, env={**os.environ, **env})


@nox.session(python=False)
def tests(session: nox.Session) -> None:
    """Run the test suite with a coverage report (pass pytest options after --)."""
    _install(session, ".[dev]")
    # coverage starts before pytest: pytest imports the pyctrl plugin (an entry point)
    # before pytest-cov would start measuring, and its imports would count as unrun.
    _run(session, "python", "-m", "coverage", "erase")
    _run(session, "python", "-m", "coverage", "run", "-m", "pytest", *session.posargs)
    _run(session, "python", "-m", "coverage", "report")


# The API server conformance suite: HTTP (kubernetes_asyncio and raw) and kubectl tests
# written against `Environment`, so that they run against any cluster.
CONFORMANCE = [
    *sorted(str(p) for p in Path("tests/envtest").glob("test_server_*.py")),
    *sorted(str(p) for p in Path("tests/envtest").glob("test_builtins*.py")),
    "tests/envtest/test_discovery.py",
    "tests/envtest/test_kubectl.py",
]


@nox.session(python=False)
def conformance(session: nox.Session) -> None:
    """The API server conformance suite against the existing cluster of KUBECONFIG.

    Tests that need the embedded server (the fault API, its internals) are deselected.
    Pass pytest options after --.
    """
    if not os.environ.get("KUBECONFIG"):
        session.error("set KUBECONFIG to the kubeconfig of the cluster to test")
    _install(session, ".[dev]")
    _run(
        session, "python", "-m", "pytest", *CONFORMANCE, *session.posargs,
        USE_EXISTING_CLUSTER="true",
    )  # fmt: skip


@nox.session(python=False)
def lint(session: nox.Session) -> None:
    """Ruff (lint and format) and the import-layering contract."""
    _install(session, ".[dev]")
    _run(session, "python", "-m", "ruff", "check", *CHECKED)
    _run(session, "python", "-m", "ruff", "format", "--check", *CHECKED)
    _run(session, "lint-imports")


@nox.session(python=False)
def typecheck(session: nox.Session) -> None:
    """Type-check with mypy --strict: the library, the tests, the examples, the benchmarks."""
    _install(session, ".[dev]")
    _run(session, "python", "-m", "mypy", "src", "tests", "examples", "bench")


@nox.session(python=False)
def docs(session: nox.Session) -> None:
    """Build the documentation site with mkdocs --strict."""
    _install(session, ".[dev,docs]")
    _run(session, "python", "-m", "mkdocs", "build", "--strict", NO_MKDOCS_2_WARNING="1")


@nox.session(python=False)
def demo(session: nox.Session) -> None:
    """The MySrv operator on the embedded API server, with a live view (--check: CI mode)."""
    _install(session, ".[dev]")
    _run(session, "python", "-m", "examples.demo", *session.posargs)


@nox.session(python=False)
def manifests(session: nox.Session) -> None:
    """Regenerate every example's config/ from its Python types (--check: fail if stale)."""
    _install(session, ".[dev]")
    for example in EXAMPLES:
        _run(
            session, "pyctrl", "generate", "all", f"examples.{example}:operator",
            "--out", f"examples/{example}/config", *session.posargs,
        )  # fmt: skip


@nox.session(python=False)
def bench(session: nox.Session) -> None:
    """Benchmarks: each prints ratios against a peer measured in the same run."""
    _install(session, ".", "kopf>=1.37", venv=BENCH_VENV)
    _run(session, "python", "-m", "bench", *session.posargs, venv=BENCH_VENV)
