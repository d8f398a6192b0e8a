"""A fixed set of clusters."""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING

from pyctrl.cluster import Cluster
from pyctrl.config import load_kubeconfig

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyctrl._kubernetes import Configuration
    from pyctrl.cluster import Aware
    from pyctrl.config import Config

__all__ = ["StaticProvider"]


class StaticProvider:
    """Engages a fixed set of clusters when the manager starts.

    Args:
        clusters: Each cluster's name and where it is: a kubeconfig file's path, a
            `pyctrl.config.Config` or a kubernetes-asyncio ``Configuration``
            (``Environment.config``).
    """

    def __init__(
        self, clusters: Mapping[str, str | os.PathLike[str] | Config | Configuration]
    ) -> None:
        for name in clusters:
            if not name:
                raise ValueError("StaticProvider: a cluster needs a non-empty name")
        self._clusters = dict(clusters)

    async def start(self, aware: Aware, local: Cluster) -> None:
        """Engage every cluster, then wait until cancelled."""
        for name, where in self._clusters.items():
            if isinstance(where, str | os.PathLike):
                config: Config | Configuration = await load_kubeconfig(where)
            else:
                config = where
            await aware.engage(name, Cluster(config, name=name, scheme=local.scheme))
        await asyncio.Event().wait()
