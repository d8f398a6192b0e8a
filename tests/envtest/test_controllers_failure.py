"""The embedded server's own controllers: a failure among them is never silent."""

from __future__ import annotations

from typing import Any, NoReturn

import pytest
from kubernetes_asyncio import client as k8s

from pyctrl.envtest import Environment
from tests.envtest.conftest import Kube

pytestmark = pytest.mark.embedded_only

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object"}},
            }
        ],
    },
}


async def test_a_failed_controller_fails_wait_idle_livez_and_close() -> None:
    """A crash in the server's controllers fails wait_idle, /livez and the Environment's exit."""
    env = Environment(crds=[WIDGET_CRD])
    await env.start()
    try:
        server = env.server
        assert server is not None

        def broken(name: str) -> NoReturn:
            raise ValueError(f"cleanup of {name} broke")

        server.controllers.crds.cleanup = broken  # type: ignore[method-assign]
        async with k8s.ApiClient(env.config) as api:
            kube = Kube(api)
            status, _, _ = await kube.request("GET", "/livez")
            assert status == 200
            await kube.request(
                "DELETE",
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
            )
            with pytest.raises(RuntimeError, match="controllers failed") as info:
                await server.wait_idle()
            assert isinstance(info.value.__cause__, ValueError)
            status, body, _ = await kube.request("GET", "/livez")
            assert (status, body) == (500, "controllers failed")
    finally:
        with pytest.raises(ValueError, match=r"cleanup of widgets\.example\.com broke"):
            await env.stop()
