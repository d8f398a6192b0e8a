"""Watch faults: events delivered late (a lagging watch cache), streaming lists refused."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest
from kubernetes_asyncio import client as k8s

from pyctrl._apiserver.endpoints.server import APIServer
from tests.envtest.conformance.test_server_watch import cm, watch
from tests.envtest.conftest import Kube, server_config

if TYPE_CHECKING:
    from pyctrl.envtest import Environment

pytestmark = pytest.mark.embedded_only


async def test_delayed_watch_events_arrive_late_and_in_order(
    env: Environment, kube: Kube, ns: str
) -> None:
    """delay_watch_events holds every event back by its delay, keeping their order."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    first = await kube.create_ok(path, cm("seed"))
    env.faults.delay_watch_events(1.0, resource="configmaps")
    loop = asyncio.get_running_loop()
    async with watch(kube, path, resourceVersion=first["metadata"]["resourceVersion"]) as stream:
        written = loop.time()
        a = await kube.create_ok(path, cm("a"))
        b = await kube.create_ok(path, cm("b"))
        got_a = await stream.next_non_bookmark()
        arrived = loop.time()
        got_b = await stream.next_non_bookmark()
    assert arrived - written >= 1.0
    assert [got_a["object"]["metadata"]["name"], got_b["object"]["metadata"]["name"]] == ["a", "b"]
    assert got_b["object"]["metadata"]["resourceVersion"] == b["metadata"]["resourceVersion"]
    assert got_a["object"]["metadata"]["resourceVersion"] == a["metadata"]["resourceVersion"]


async def test_bookmarks_never_pass_an_event_held_back() -> None:
    """While an event is delayed, bookmarks carry versions older than it."""
    srv = APIServer(tokens=["token"], ssl_context=None, bookmark_interval=0.05)
    async with srv, k8s.ApiClient(server_config(srv, "token")) as api:
        client = Kube(api)
        path = "/api/v1/namespaces/default/configmaps"
        seed = await client.create_ok(path, cm("seed"))
        srv.faults.delay_watch_events(1.0)
        params = {"resourceVersion": seed["metadata"]["resourceVersion"]}
        async with watch(client, path, allowWatchBookmarks="true", **params) as stream:
            written = await client.create_ok(path, cm("late"))
            version = int(written["metadata"]["resourceVersion"])
            bookmarks: list[int] = []
            while (event := await stream.next())["type"] == "BOOKMARK":
                bookmarks.append(int(event["object"]["metadata"]["resourceVersion"]))
    assert event["object"]["metadata"]["name"] == "late"
    assert bookmarks, "bookmarks are sent every 50 ms while the event is held back"
    assert max(bookmarks) < version


async def test_clear_ends_the_watch_delay(env: Environment, kube: Kube, ns: str) -> None:
    """After faults.clear() events are delivered without the injected delay."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    seed = await kube.create_ok(path, cm("seed"))
    env.faults.delay_watch_events(60.0)
    env.faults.clear()
    async with watch(kube, path, resourceVersion=seed["metadata"]["resourceVersion"]) as stream:
        await kube.create_ok(path, cm("now"))
        event = await stream.next_non_bookmark(within=30.0)
    assert event["object"]["metadata"]["name"] == "now"


async def test_refused_watch_list_is_422_as_before_kubernetes_1_27(
    env: Environment, kube: Kube, ns: str
) -> None:
    """refuse_watch_list answers a streaming list 422 Invalid; plain watches still work."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, cm("a"))
    env.faults.refuse_watch_list()
    params = {
        "watch": "true",
        "sendInitialEvents": "true",
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": "true",
    }
    status, body, _ = await kube.get(path, params=params)
    assert status == 422
    assert body["reason"] == "Invalid"
    assert body["details"]["causes"][0]["field"] == "resourceVersionMatch"
    assert "forbidden for watch" in body["details"]["causes"][0]["message"]
    async with watch(kube, path) as stream:
        event = await stream.next()
    assert event["type"] == "ADDED"


async def test_streaming_list_larger_than_the_watch_queue_ends_with_its_bookmark() -> None:
    """Initial events beyond the watcher's queue size are all sent, then the end bookmark."""
    srv = APIServer(tokens=["token"], ssl_context=None, watch_queue_size=5)
    async with srv, k8s.ApiClient(server_config(srv, "token")) as api:
        client = Kube(api)
        path = "/api/v1/namespaces/default/configmaps"
        for i in range(8):
            await client.create_ok(path, cm(f"cm-{i}"))
        params = {
            "sendInitialEvents": "true",
            "resourceVersionMatch": "NotOlderThan",
            "allowWatchBookmarks": "true",
        }
        async with watch(client, path, **params) as stream:
            events = [await stream.next() for _ in range(9)]
    assert [e["type"] for e in events] == ["ADDED"] * 8 + ["BOOKMARK"]
    annotations = events[-1]["object"]["metadata"]["annotations"]
    assert annotations == {"k8s.io/initial-events-end": "true"}
