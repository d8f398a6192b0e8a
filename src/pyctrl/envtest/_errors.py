"""The errors of the test environment, and the environment variables it reads.

The tree::

    pyctrl.errors.PyctrlError
    └── EnvtestError                  the environment could not be set up, used or torn down
        ├── CRDInstallError           a CRD could not be read, installed, or made ready
        └── ControlPlaneError         the etcd / kube-apiserver binaries failed
            └── BinariesNotFoundError the binaries directory lacks a binary
"""

from __future__ import annotations

import os

from pyctrl.envtest import _binaries
from pyctrl.errors import PyctrlError

__all__ = [
    "BinariesNotFoundError",
    "CRDInstallError",
    "ControlPlaneError",
    "EnvtestError",
    "env_flag",
    "env_seconds",
]

_TRUE = ("1", "t", "true", "y", "yes", "on")
_FALSE = ("", "0", "f", "false", "n", "no", "off")


class EnvtestError(PyctrlError):
    """The test environment could not be set up, used or torn down as asked."""


class CRDInstallError(EnvtestError):
    """A CustomResourceDefinition could not be read, installed, or did not become ready."""


class ControlPlaneError(EnvtestError, _binaries.ControlPlaneError):
    """The etcd / kube-apiserver binaries failed to start or stop."""


class BinariesNotFoundError(ControlPlaneError, _binaries.BinariesNotFoundError):
    """The binaries directory lacks ``etcd`` or ``kube-apiserver``."""


def env_flag(name: str) -> bool:
    """The boolean environment variable ``name`` (unset or empty: False), as Go's ParseBool.

    Raises:
        EnvtestError: The value is not a boolean.
    """
    value = os.environ.get(name, "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise EnvtestError(f"environment variable {name}={os.environ[name]!r} is not a boolean")


def env_seconds(name: str, default: float) -> float:
    """The environment variable ``name`` as seconds (``"20"`` or ``"20s"``), else ``default``.

    Raises:
        EnvtestError: The value is not a number of seconds.
    """
    value = os.environ.get(name)
    if not value:
        return default
    try:
        return float(value.removesuffix("s"))
    except ValueError:
        raise EnvtestError(
            f"environment variable {name}={value!r} is not a number of seconds"
        ) from None
