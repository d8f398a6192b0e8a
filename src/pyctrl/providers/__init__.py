"""Cluster providers: where a manager's engaged clusters come from (multicluster-runtime's).

A `pyctrl.cluster.Provider` runs alongside the manager (``Options(cluster_provider=...)``)
and engages or disengages clusters as it learns of them:

- `StaticProvider`: a fixed set of clusters, each a kubeconfig file, a
  `pyctrl.config.Config` or a kubernetes-asyncio ``Configuration``;
- `KubeconfigSecretProvider`: Secrets of the local cluster labelled
  ``sigs.k8s.io/multicluster-runtime-kubeconfig: "true"``, each holding a kubeconfig under
  ``kubeconfig`` (multicluster-runtime's kubeconfig provider): a Secret appearing engages
  the cluster named after it, a change re-engages it, its deletion disengages it;
- `ClusterProfileProvider`: SIG-Multicluster's ClusterProfile API
  (``multicluster.x-k8s.io/v1alpha1`` ``ClusterProfile``), reading each profile's
  ``status.accessProviders`` (or the older ``credentialProviders``) for the server and CA
  and the consumer's own credentials per access provider, as multicluster-runtime's
  clusterprofile provider does.
"""

from __future__ import annotations

from pyctrl.providers._clusterprofile import CLUSTER_PROFILE, ClusterProfileProvider
from pyctrl.providers._kubeconfig import (
    KUBECONFIG_KEY,
    KUBECONFIG_LABEL,
    KubeconfigSecretProvider,
)
from pyctrl.providers._static import StaticProvider

__all__ = [
    "CLUSTER_PROFILE",
    "KUBECONFIG_KEY",
    "KUBECONFIG_LABEL",
    "ClusterProfileProvider",
    "KubeconfigSecretProvider",
    "StaticProvider",
]
