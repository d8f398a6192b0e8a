"""Helpers for multi-cluster tests: a hub manager engaging a fleet through kubeconfig Secrets."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubernetes_asyncio.client import V1ConfigMap, V1ObjectMeta, V1Secret

from pyctrl.errors import NotFoundError
from pyctrl.manager import Options
from pyctrl.providers import KUBECONFIG_LABEL

if TYPE_CHECKING:
    from pyctrl.client import Client
    from pyctrl.envtest import Environment

NAMESPACE = "default"


def options(**kw: Any) -> Options:
    """Manager options for tests: no metrics port clash, quick sync timeout."""
    return Options(metrics_bind_address="0", cache_sync_timeout=20, **kw)


def kubeconfig_secret(name: str, env: Environment) -> V1Secret:
    """The kubeconfig Secret through which the hub engages ``env`` as ``name``."""
    return V1Secret(
        metadata=V1ObjectMeta(name=name, namespace=NAMESPACE, labels={KUBECONFIG_LABEL: "true"}),
        string_data={"kubeconfig": env.kubeconfig_path.read_text()},
    )


def config_map(name: str, **data: str) -> V1ConfigMap:
    """A ConfigMap of the test namespace."""
    return V1ConfigMap(metadata=V1ObjectMeta(name=name, namespace=NAMESPACE), data=data)


async def exists(client: Client, name: str) -> bool:
    """Whether the ConfigMap ``name`` exists, read from the API server."""
    try:
        await client.api_reader.get(V1ConfigMap, name, NAMESPACE)
    except NotFoundError:
        return False
    return True
