"""Clusters from kubeconfig Secrets of the local cluster (multicluster-runtime's provider)."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any, Final

from kubernetes_asyncio.client import V1Secret

from pyctrl.log import get_logger
from pyctrl.providers._engaging import Engaging

if TYPE_CHECKING:
    from pyctrl.cache import CachedObject
    from pyctrl.cluster import Aware, Cluster

__all__ = ["KUBECONFIG_KEY", "KUBECONFIG_LABEL", "KubeconfigSecretProvider"]

KUBECONFIG_LABEL: Final = "sigs.k8s.io/multicluster-runtime-kubeconfig"
"""The label (value ``"true"``) marking a Secret as a cluster's kubeconfig."""

KUBECONFIG_KEY: Final = "kubeconfig"
"""The Secret data key holding the kubeconfig."""

_log = get_logger("pyctrl.providers")


class KubeconfigSecretProvider(Engaging):
    """Engages a cluster per labelled kubeconfig Secret of one namespace of the local cluster.

    The cluster is named after the Secret. A Secret appearing (or gaining the label)
    engages it; a change of its kubeconfig engages a new `Cluster` in place of the old
    one; its deletion (or losing the label) disengages it. A Secret whose kubeconfig is
    missing or broken is logged and skipped (a cluster it served is disengaged).

    Args:
        namespace: Where the Secrets are (typically the operator's namespace).
        label: The label marking kubeconfig Secrets (value ``"true"``).
        key: The data key holding the kubeconfig.
    """

    def __init__(
        self, namespace: str, *, label: str = KUBECONFIG_LABEL, key: str = KUBECONFIG_KEY
    ) -> None:
        if not namespace:
            raise ValueError("KubeconfigSecretProvider needs the namespace of the Secrets")
        super().__init__()
        self.namespace, self.label, self.key = namespace, label, key

    async def start(self, aware: Aware, local: Cluster) -> None:
        """Follow the Secrets through the local cache until cancelled."""
        await self._follow(aware, local, local.cache.get_informer(V1Secret))

    def _kubeconfig(self, cached: CachedObject[Any]) -> bytes | None:
        """The Secret's kubeconfig; None for a Secret not followed (read undecoded)."""
        meta = cached.meta()
        if meta.namespace != self.namespace or (meta.labels or {}).get(self.label) != "true":
            return None
        value = (cached.object.data or {}).get(self.key)
        return base64.b64decode(value) if value else b""

    async def _gone(self, namespace: str, name: str) -> None:
        if namespace == self.namespace:
            await self._drop(name)

    async def _seen(self, obj: CachedObject[Any]) -> None:
        name = obj.name
        kubeconfig = self._kubeconfig(obj)
        if kubeconfig is None:
            if obj.namespace == self.namespace:
                await self._drop(name)  # the label went away
            return
        if not kubeconfig:
            _log.error(
                "kubeconfig Secret has no kubeconfig",
                secret=f"{self.namespace}/{name}",
                key=self.key,
            )
            await self._drop(name)
            return
        await self._engage(name, kubeconfig, f"Secret {self.namespace}/{name}")
