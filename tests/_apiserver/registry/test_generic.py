"""The registry's stores: one per served resource, built when its type is registered.

Each request reaches its resource's store (`registry.generic.ResourceStore`), which holds
the type's strategy from the moment it is built: serving a request looks no strategy up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from kubernetes_asyncio import client as k8s

from pyctrl._apiserver.endpoints.server import APIServer
from pyctrl._apiserver.registry.strategies import Strategies
from pyctrl.testing import eventually
from tests.envtest.conformance.test_server_crd import crd, srv
from tests.envtest.conftest import Kube, server_config

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from pyctrl._apiserver.registry.rest import Strategy
    from pyctrl._apiserver.scheme.resources import ResourceType

GROUP = "stores.pyctrl.dev"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
MYSRVS = f"/apis/{GROUP}/v1/namespaces/default/mysrvs"


@pytest.fixture
async def server() -> AsyncIterator[tuple[APIServer, Kube]]:
    """A plain-HTTP server and a raw client of it."""
    server = APIServer(tokens=["token"], ssl_context=None)
    async with server, k8s.ApiClient(server_config(server, "token")) as api:
        yield server, Kube(api)


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The plurals whose strategy is looked up from now on."""
    seen: list[str] = []
    original = Strategies.for_type

    def counting(self: Strategies, rt: ResourceType) -> Strategy:
        seen.append(rt.plural)
        return original(self, rt)

    monkeypatch.setattr(Strategies, "for_type", counting)
    return seen


async def test_requests_use_the_store_built_at_registration(
    server: tuple[APIServer, Kube], lookups: list[str]
) -> None:
    """A create, update, patch (each type), status, get and delete look no strategy up."""
    _, kube = server
    made = await kube.create_ok(CONFIGMAPS, {"metadata": {"name": "a"}, "data": {"k": "v"}})
    made["data"]["k"] = "w"
    code, _, _ = await kube.put(f"{CONFIGMAPS}/a", made)
    assert code == 200
    for patch_type, patch in (
        ("merge", {"data": {"m": "1"}}),
        ("json", [{"op": "add", "path": "/data/j", "value": "2"}]),
        ("strategic", {"data": {"s": "3"}}),
    ):
        code, body, _ = await kube.patch(f"{CONFIGMAPS}/a", patch, patch_type)
        assert code == 200, body
    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
    code, body, _ = await kube.patch(
        f"{CONFIGMAPS}/a", {**applied, "data": {"x": "4"}}, "apply", params={"fieldManager": "t"}
    )
    assert code == 200, body
    assert body["data"] == {"k": "w", "m": "1", "j": "2", "s": "3", "x": "4"}
    assert (await kube.get_ok(f"{CONFIGMAPS}/a"))["data"]["x"] == "4"
    code, _, _ = await kube.delete(f"{CONFIGMAPS}/a")
    assert code == 200
    assert lookups == []


async def test_a_crds_types_get_their_stores_when_the_crd_is_established(
    server: tuple[APIServer, Kube], lookups: list[str]
) -> None:
    """The CRD controller registers a CRD's types with their stores; writes find them."""
    api_server, kube = server
    await kube.create_ok("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd(GROUP))

    async def served() -> bool:
        code, _, _ = await kube.get(MYSRVS)
        return code == 200

    await eventually(served, within=10)
    assert lookups.count("mysrvs") == 2  # v1 and v1beta1, once each, when registered
    rt = api_server.registry.lookup(GROUP, "v1", "mysrvs")
    assert rt is not None
    store = api_server.stores.for_type(rt)
    assert store.strategy is api_server.stores.strategies.custom_resources
    made = await kube.create_ok(MYSRVS, srv(GROUP, "one", port=80))
    code, body, _ = await kube.patch(f"{MYSRVS}/one/status", {"status": {"ready": True}})
    assert code == 200, body
    assert body["status"] == {"ready": True}
    assert made["spec"]["port"] == 80
    assert lookups.count("mysrvs") == 2


async def test_a_patch_answers_with_its_own_warnings(server: tuple[APIServer, Kube]) -> None:
    """Each request's context collects its own warnings: none leak into the next answer."""
    _, kube = server
    await kube.create_ok(CONFIGMAPS, {"metadata": {"name": "w"}})
    patch: dict[str, Any] = {"data": {"a": "1"}, "bogus": 1}
    _, _, headers = await kube.patch(f"{CONFIGMAPS}/w", patch)
    assert headers.getall("Warning") == ['299 - "unknown field \\"bogus\\""']
    _, _, headers = await kube.patch(f"{CONFIGMAPS}/w", {"data": {"b": "2"}})
    assert "Warning" not in headers
