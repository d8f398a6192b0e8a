"""The providers following objects of the local cluster decode only what they use."""

from __future__ import annotations

import base64
from typing import Any

from kubernetes_asyncio.client import V1Secret

from pyctrl.providers import (
    CLUSTER_PROFILE,
    KUBECONFIG_LABEL,
    ClusterProfileProvider,
    KubeconfigSecretProvider,
)
from pyctrl.resource import Unstructured

from ..cached import Decodes


def _secret(name: str, namespace: str, labelled: bool) -> dict[str, Any]:
    labels = {KUBECONFIG_LABEL: "true"} if labelled else {"app": "other"}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "data": {"kubeconfig": base64.b64encode(b"").decode()},
    }


async def test_secrets_not_followed_and_deletes_are_not_decoded() -> None:
    """Secrets of other namespaces or without the label, and deletes, stay undecoded."""
    provider = KubeconfigSecretProvider("fleet")
    decodes = Decodes()
    elsewhere = decodes.cached(_secret("a", "other", labelled=True), V1Secret)
    unlabelled = decodes.cached(_secret("b", "fleet", labelled=False), V1Secret)
    await provider.add(elsewhere, False)
    await provider.add(unlabelled, True)
    await provider.update(unlabelled, unlabelled)
    await provider.delete(decodes.cached(_secret("c", "fleet", labelled=True), V1Secret), False)
    assert decodes.count == 0
    # A labelled Secret of the namespace is decoded, to read its kubeconfig (empty here:
    # logged and skipped).
    await provider.add(decodes.cached(_secret("d", "fleet", labelled=True), V1Secret), False)
    assert decodes.count == 1


async def test_profiles_of_other_namespaces_and_deletes_are_not_decoded() -> None:
    """A ClusterProfile outside the namespace followed, or deleted, stays undecoded."""
    provider = ClusterProfileProvider({"mine": {"token": "t"}}, namespace="fleet")
    decodes = Decodes()

    def profile(namespace: str) -> dict[str, Any]:
        return Unstructured.new(CLUSTER_PROFILE, name="p", namespace=namespace).object

    await provider.add(decodes.cached(profile("other"), Unstructured), False)
    await provider.delete(decodes.cached(profile("fleet"), Unstructured), False)
    assert decodes.count == 0
    await provider.add(decodes.cached(profile("fleet"), Unstructured), False)
    assert decodes.count == 1  # read for its access providers (none: nothing engaged)
