"""pyctrl.client.RESTMapper: kinds to resources from discovery, refreshed on a miss."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from pyctrl.client import (
    NoKindMatchError,
    NoResourceMatchError,
    RESTClient,
    RESTMapper,
    RESTMapping,
)
from pyctrl.meta import GroupVersionKind, GroupVersionResource
from tests.client.conftest import FakeServer, json_response

if TYPE_CHECKING:
    from aiohttp import web

DEPLOYMENT = GroupVersionKind("apps", "v1", "Deployment")
WIDGET = GroupVersionKind("example.com", "v1", "Widget")


def resource_list(group_version: str, *resources: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "APIResourceList", "groupVersion": group_version, "resources": list(resources)}


def entry(name: str, kind: str, *, namespaced: bool = True) -> dict[str, Any]:
    return {"name": name, "kind": kind, "namespaced": namespaced, "verbs": ["get", "list"]}


class Discovery:
    """Serves discovery documents from a dict of path -> resources, counting fetches."""

    def __init__(self, server: FakeServer, documents: dict[str, list[dict[str, Any]]]) -> None:
        self.documents = documents
        self.gate: asyncio.Event | None = None
        self.arrived = asyncio.Event()
        server.handler = self.handle

    async def handle(self, request: web.Request) -> web.Response:
        self.arrived.set()
        if self.gate is not None:
            await self.gate.wait()
        resources = self.documents.get(request.path)
        if resources is None:
            return json_response(
                {"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404}, 404
            )
        return json_response(resource_list(request.path.split("/", 2)[-1], *resources))


async def test_mapping_comes_from_the_group_version_document(
    fake_server: FakeServer, rest: RESTClient
) -> None:
    """A kind maps to its resource, scope, verbs and subresources from /apis/<group>/<version>."""
    Discovery(
        fake_server,
        {
            "/apis/apps/v1": [
                entry("deployments", "Deployment"),
                entry("deployments/status", "Deployment"),
                entry("deployments/scale", "Scale"),
            ]
        },
    )
    mapping = await RESTMapper(rest).mapping_for(DEPLOYMENT)
    assert mapping == RESTMapping(
        gvk=DEPLOYMENT,
        resource=GroupVersionResource("apps", "v1", "deployments"),
        namespaced=True,
        verbs=frozenset({"get", "list"}),
        subresources=frozenset({"status", "scale"}),
    )


async def test_core_group_is_read_from_api_v1(fake_server: FakeServer, rest: RESTClient) -> None:
    """Kinds of the core group are looked up under /api/v1."""
    Discovery(fake_server, {"/api/v1": [entry("namespaces", "Namespace", namespaced=False)]})
    mapping = await RESTMapper(rest).mapping_for(GroupVersionKind("", "v1", "Namespace"))
    assert (mapping.resource.resource, mapping.namespaced) == ("namespaces", False)
    assert fake_server.requests[0].path == "/api/v1"


async def test_known_kinds_are_not_fetched_again(fake_server: FakeServer, rest: RESTClient) -> None:
    """Once a group version is read, lookups of its kinds make no more requests."""
    Discovery(fake_server, {"/apis/apps/v1": [entry("deployments", "Deployment")]})
    mapper = RESTMapper(rest)
    for _ in range(3):
        await mapper.mapping_for(DEPLOYMENT)
    assert len(fake_server.requests) == 1


async def test_unknown_kind_refreshes_discovery(fake_server: FakeServer, rest: RESTClient) -> None:
    """A kind missing from the cached document triggers a new read, which can find it."""
    discovery = Discovery(fake_server, {"/apis/example.com/v1": [entry("gizmos", "Gizmo")]})
    mapper = RESTMapper(rest)
    await mapper.mapping_for(GroupVersionKind("example.com", "v1", "Gizmo"))
    discovery.documents["/apis/example.com/v1"].append(entry("widgets", "Widget"))
    mapping = await mapper.mapping_for(WIDGET)
    assert mapping.resource.resource == "widgets"
    assert len(fake_server.requests) == 2


async def test_kind_still_unknown_after_refresh_raises(
    fake_server: FakeServer, rest: RESTClient
) -> None:
    """A kind that is not served even after re-reading discovery raises NoKindMatchError."""
    Discovery(fake_server, {"/apis/example.com/v1": [entry("gizmos", "Gizmo")]})
    with pytest.raises(NoKindMatchError, match=r'no matches for kind "Widget".*installed') as info:
        await RESTMapper(rest).mapping_for(WIDGET)
    assert info.value.gvk == WIDGET


async def test_concurrent_misses_share_one_fetch(fake_server: FakeServer, rest: RESTClient) -> None:
    """Several lookups of an unknown kind at once wait for a single discovery request."""
    discovery = Discovery(fake_server, {"/apis/example.com/v1": [entry("widgets", "Widget")]})
    discovery.gate = asyncio.Event()
    mapper = RESTMapper(rest)
    async with asyncio.timeout(5), asyncio.TaskGroup() as tg:
        lookups = [tg.create_task(mapper.mapping_for(WIDGET)) for _ in range(5)]
        await discovery.arrived.wait()
        discovery.gate.set()
    assert {t.result().resource.resource for t in lookups} == {"widgets"}
    assert len(fake_server.requests) == 1


async def test_kind_for_a_resource(fake_server: FakeServer, rest: RESTClient) -> None:
    """kind_for finds the kind of a plural resource name; an unknown one raises."""
    Discovery(fake_server, {"/apis/apps/v1": [entry("deployments", "Deployment")]})
    mapper = RESTMapper(rest)
    assert await mapper.kind_for(GroupVersionResource("apps", "v1", "deployments")) == DEPLOYMENT
    with pytest.raises(NoResourceMatchError, match='"statefulsets"'):
        await mapper.kind_for(GroupVersionResource("apps", "v1", "statefulsets"))


async def test_reset_forgets_everything(fake_server: FakeServer, rest: RESTClient) -> None:
    """After reset the next lookup reads discovery again."""
    Discovery(fake_server, {"/apis/apps/v1": [entry("deployments", "Deployment")]})
    mapper = RESTMapper(rest)
    await mapper.mapping_for(DEPLOYMENT)
    mapper.reset()
    await mapper.mapping_for(DEPLOYMENT)
    assert len(fake_server.requests) == 2


def test_paths_of_collections_objects_and_subresources() -> None:
    """path builds collection, object and subresource URLs; scope decides the namespace part."""
    namespaced = RESTMapping(DEPLOYMENT, GroupVersionResource("apps", "v1", "deployments"), True)
    cluster = RESTMapping(
        GroupVersionKind("", "v1", "Node"), GroupVersionResource("", "v1", "nodes"), False
    )
    assert RESTMapper.path(namespaced) == "/apis/apps/v1/deployments"
    assert RESTMapper.path(namespaced, "ns") == "/apis/apps/v1/namespaces/ns/deployments"
    assert (
        RESTMapper.path(namespaced, "ns", "web", "scale")
        == "/apis/apps/v1/namespaces/ns/deployments/web/scale"
    )
    assert RESTMapper.path(cluster, "ignored", "n1") == "/api/v1/nodes/n1"
    with pytest.raises(ValueError, match="needs an object name"):
        RESTMapper.path(namespaced, "ns", None, "status")
