"""The envtest server's certificates: see `pyctrl.certs`, where they live."""

from __future__ import annotations

from pyctrl.certs import *  # noqa: F403
from pyctrl.certs import __all__  # noqa: F401 - the same public names
