"""The binaries mode with real binaries: etcd and the CRD-only API server (kube-apiextensions).

These run where ``KUBEBUILDER_ASSETS`` names a directory built by ``tests/realserver.py``
(``nox -s realserver`` does that); elsewhere they are deselected, with the reason printed.
"""

from __future__ import annotations

import os
import ssl
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from kubernetes_asyncio import client as k8s_client

from pyctrl.envtest import Environment
from tests.envtest.conftest import anonymous_config, unique

pytestmark = pytest.mark.needs_crd_only_server


def _crd(group: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {"size": {"type": "integer", "minimum": 1}},
                                }
                            },
                        }
                    },
                }
            ],
        },
    }


async def test_real_crd_only_server_serves_installed_crds() -> None:
    """Environment starts real etcd and kube-apiextensions, installs a CRD, serves its CRs."""
    group = f"{unique('g')}.example.com"
    async with Environment(crds=[_crd(group)]) as env:
        assert env.mode == "binaries"
        assert env.crd_only
        assert env.server is None
        assert [c["metadata"]["name"] for c in env.crds] == [f"gadgets.{group}"]
        async with k8s_client.ApiClient(env.config) as api:
            objects = k8s_client.CustomObjectsApi(api)
            created = await objects.create_namespaced_custom_object(
                group, "v1", "ns1", "gadgets",
                {"apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {"name": "g"},
                 "spec": {"size": 2}},
            )  # fmt: skip
            assert created["metadata"]["uid"]
            with pytest.raises(k8s_client.ApiException) as refused:
                await objects.create_namespaced_custom_object(
                    group, "v1", "ns1", "gadgets",
                    {"apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {"name": "h"},
                     "spec": {"size": 0}},
                )  # fmt: skip
            assert refused.value.status == 422


async def test_real_server_kubeconfig_authenticates_by_client_certificate() -> None:
    """The kubeconfig carries a client certificate the real server accepts; no token works."""
    async with Environment() as env:
        assert env.token is None
        config = yaml.safe_load(env.kubeconfig_path.read_text())
        (user,) = config["users"]
        assert set(user["user"]) == {"client-certificate-data", "client-key-data"}
        async with k8s_client.ApiClient(anonymous_config(env, token="not-a-token")) as api:
            status = await api.call_api(
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "GET",
                auth_settings=["BearerToken"], _preload_content=False,
            )  # fmt: skip
            assert status.status == 401
            status.release()
        async with k8s_client.ApiClient(env.config) as api:
            listing = await api.call_api(
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "GET",
                _preload_content=False,
            )  # fmt: skip
            assert listing.status == 200
            listing.release()


async def test_real_server_processes_and_files_are_gone_after_stop() -> None:
    """After stop nothing answers at the server's address and its directory is removed."""
    env = Environment()
    await env.start()
    directory = env.kubeconfig_path.parent
    host = env.config.host
    context = ssl.create_default_context(cafile=env.config.ssl_ca_cert)
    context.load_cert_chain(str(env.config.cert_file), str(env.config.key_file))
    async with aiohttp.ClientSession() as session, session.get(f"{host}/livez", ssl=context) as r:
        assert r.status == 200
    await env.stop()
    assert not directory.exists()
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectionError):
            await session.get(f"{host}/livez", ssl=False)


def test_assets_directory_is_a_real_build() -> None:
    """The binaries are the built kube-apiextensions and etcd, not scripts standing in."""
    directory = Path(os.environ["KUBEBUILDER_ASSETS"])
    for name in ("etcd", "kube-apiextensions"):
        head = (directory / name).read_bytes()[:4]
        assert head == b"\x7fELF", name
