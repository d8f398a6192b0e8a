"""Clusters from SIG-Multicluster's ClusterProfile API (multicluster-runtime's provider)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from pyctrl.meta import GroupVersionKind
from pyctrl.providers._engaging import Engaging
from pyctrl.resource import Unstructured

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyctrl.cache import CachedObject
    from pyctrl.cluster import Aware, Cluster

__all__ = ["CLUSTER_PROFILE", "ClusterProfileProvider"]

CLUSTER_PROFILE: Final = GroupVersionKind("multicluster.x-k8s.io", "v1alpha1", "ClusterProfile")
"""The kind the provider follows."""


def _access_providers(profile: Unstructured) -> list[dict[str, Any]]:
    """``status.accessProviders``, then the deprecated ``credentialProviders`` not shadowed."""
    status = profile.object.get("status") or {}
    providers = list(status.get("accessProviders") or [])
    named = {p.get("name") for p in providers}
    providers += [p for p in status.get("credentialProviders") or [] if p.get("name") not in named]
    return providers


class ClusterProfileProvider(Engaging):
    """Engages a cluster per ClusterProfile of the local cluster that it has access to.

    A ClusterProfile's ``status.accessProviders`` lists ways to reach its cluster, each
    with a ``name`` and a kubeconfig ``cluster`` entry (``server``,
    ``certificate-authority-data``...). The consumer (this operator) says, per access
    provider name, which credentials to use: a kubeconfig ``user`` entry (an ``exec``
    plugin, as multicluster-runtime's provider configures, or a ``token``...). The first
    access provider of the profile the consumer has credentials for is used.

    Clusters are named ``namespace/name`` after their profile. A profile appearing, or
    its access changing, engages its cluster; its deletion, or losing every usable
    access provider, disengages it.

    Args:
        credentials: Per access provider name, the kubeconfig ``user`` entry to use.
        namespace: Only the profiles of this namespace; None for every namespace.
    """

    def __init__(
        self, credentials: Mapping[str, Mapping[str, Any]], *, namespace: str | None = None
    ) -> None:
        if not credentials:
            raise ValueError(
                "ClusterProfileProvider needs credentials for at least one access provider"
            )
        super().__init__()
        self.credentials = {name: dict(user) for name, user in credentials.items()}
        self.namespace = namespace

    async def start(self, aware: Aware, local: Cluster) -> None:
        """Follow the ClusterProfiles through the local cache until cancelled."""
        await self._follow(
            aware, local, local.cache.get_informer(Unstructured, gvk=CLUSTER_PROFILE)
        )

    def kubeconfig(self, profile: Unstructured) -> dict[str, Any] | None:
        """The kubeconfig reaching ``profile``'s cluster, or None if no access provider fits."""
        for provider in _access_providers(profile):
            user = self.credentials.get(str(provider.get("name")))
            cluster = provider.get("cluster")
            if user is None or not isinstance(cluster, dict) or not cluster.get("server"):
                continue
            return {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "profile", "cluster": cluster}],
                "users": [{"name": "consumer", "user": user}],
                "contexts": [
                    {"name": "profile", "context": {"cluster": "profile", "user": "consumer"}}
                ],
                "current-context": "profile",
            }
        return None

    def _name(self, namespace: str, name: str) -> str | None:
        if self.namespace is not None and namespace != self.namespace:
            return None
        return f"{namespace}/{name}"

    async def _gone(self, namespace: str, name: str) -> None:
        cluster = self._name(namespace, name)
        if cluster is not None:
            await self._drop(cluster)

    async def _seen(self, obj: CachedObject[Unstructured]) -> None:
        name = self._name(obj.namespace, obj.name)
        if name is None:
            return  # decoded only for a profile of the namespace followed
        kubeconfig = self.kubeconfig(obj.object)
        if kubeconfig is None:
            await self._drop(name)
            return
        await self._engage(name, kubeconfig, f"ClusterProfile {name}")
