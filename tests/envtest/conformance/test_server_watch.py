"""Watch streams: event types, resume, bookmarks, selectors, timeouts and slow clients."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from kubernetes_asyncio import client as k8s

from pyctrl._apiserver.endpoints.server import APIServer
from pyctrl._apiserver.registry.generic import RequestContext
from pyctrl.clock import FakeClock
from pyctrl.envtest import Environment
from pyctrl.testing import eventually
from tests.envtest.conftest import Kube, server_config

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    import aiohttp


class Stream:
    """An open watch: read its events one by one."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response

    async def next(self, within: float = 5.0) -> dict[str, Any]:
        async with asyncio.timeout(within):
            while True:
                line = await self.response.content.readline()
                if not line:
                    raise EOFError("watch stream ended")
                if line.strip():
                    return dict(orjson.loads(line))

    async def next_non_bookmark(self, within: float = 5.0) -> dict[str, Any]:
        while True:
            event = await self.next(within)
            if event["type"] != "BOOKMARK":
                return event

    async def ended(self, within: float = 5.0) -> bool:
        async with asyncio.timeout(within):
            while True:
                line = await self.response.content.readline()
                if not line:
                    return True


@asynccontextmanager
async def watch(
    kube: Kube, path: str, accept: str | None = None, **params: str
) -> AsyncIterator[Stream]:
    async with kube.stream(path, params=params, accept=accept) as resp:
        yield Stream(resp)


def cm(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "data": data}


@pytest.mark.needs_builtin_kinds
async def test_watch_without_version_starts_with_added_events(kube: Kube, ns: str) -> None:
    """A watch without resourceVersion first sends ADDED for every existing object."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, cm("a"))
    await kube.create_ok(path, cm("b"))
    async with watch(kube, path) as stream:
        first = await stream.next()
        second = await stream.next()
    assert [first["type"], second["type"]] == ["ADDED", "ADDED"]
    assert [first["object"]["metadata"]["name"], second["object"]["metadata"]["name"]] == ["a", "b"]
    assert first["object"]["kind"] == "ConfigMap"


@pytest.mark.needs_builtin_kinds
async def test_watch_delivers_modified_and_deleted(kube: Kube, ns: str) -> None:
    """Updates arrive as MODIFIED and deletions as DELETED with the last state."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    created = await kube.create_ok(path, cm("a"))
    rv = created["metadata"]["resourceVersion"]
    async with watch(kube, path, resourceVersion=rv) as stream:
        await kube.put(f"{path}/a", cm("a", k="v"))
        modified = await stream.next()
        await kube.delete(f"{path}/a")
        deleted = await stream.next()
    assert modified["type"] == "MODIFIED"
    assert modified["object"]["data"] == {"k": "v"}
    assert deleted["type"] == "DELETED"
    assert deleted["object"]["data"] == {"k": "v"}
    assert int(deleted["object"]["metadata"]["resourceVersion"]) > int(
        modified["object"]["metadata"]["resourceVersion"]
    )


@pytest.mark.needs_builtin_kinds
async def test_watch_from_version_skips_earlier_events(kube: Kube, ns: str) -> None:
    """A watch from resourceVersion N only sends changes after N."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, cm("old"))
    mid = await kube.create_ok(path, cm("mid"))
    await kube.create_ok(path, cm("new"))
    async with watch(kube, path, resourceVersion=mid["metadata"]["resourceVersion"]) as stream:
        event = await stream.next()
    assert event["type"] == "ADDED"
    assert event["object"]["metadata"]["name"] == "new"


def assert_expired(event: dict[str, Any], rv: str) -> None:
    """``event`` is the ERROR event of a watch resumed from the too old version ``rv``."""
    assert event["type"] == "ERROR"
    status = event["object"]
    assert (status["kind"], status["apiVersion"], status["status"]) == ("Status", "v1", "Failure")
    assert (status["code"], status["reason"]) == (410, "Expired")
    assert status["message"].startswith(f"too old resource version: {rv} (")


@pytest.mark.embedded_only
async def test_watch_from_compacted_version_gets_410_error_event(
    env: Environment, kube: Kube, ns: str
) -> None:
    """Resuming from a version older than the history answers an ERROR event with 410 Expired."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    old = await kube.create_ok(path, cm("a"))
    await kube.create_ok(path, cm("b"))
    env.faults.compact()
    async with watch(kube, path, resourceVersion=old["metadata"]["resourceVersion"]) as stream:
        event = await stream.next()
        assert await stream.ended()
    assert_expired(event, old["metadata"]["resourceVersion"])


@pytest.mark.embedded_only
async def test_watch_from_beyond_the_history_window_gets_410() -> None:
    """With history_size=3, a watch resumed from before the last three events gets 410 Expired."""
    async with Environment(history_size=3) as env, k8s.ApiClient(env.config) as api:
        kube = Kube(api)
        path = "/api/v1/namespaces/default/configmaps"
        old = await kube.create_ok(path, cm("old"))
        rv = old["metadata"]["resourceVersion"]
        await kube.create_ok(path, cm("new-0"))
        async with watch(kube, path, resourceVersion=rv) as stream:
            assert (await stream.next())["object"]["metadata"]["name"] == "new-0"
        for i in range(1, 10):
            await kube.create_ok(path, cm(f"new-{i}"))
        async with watch(kube, path, resourceVersion=rv) as stream:
            event = await stream.next()
            assert await stream.ended()
        assert_expired(event, rv)
        recent = await kube.get_ok(path)
        async with watch(kube, path, resourceVersion=recent["metadata"]["resourceVersion"]) as s:
            await kube.create_ok(path, cm("newest"))
            assert (await s.next())["object"]["metadata"]["name"] == "newest"


@pytest.mark.needs_builtin_kinds
async def test_watch_label_selector_transitions(kube: Kube, ns: str) -> None:
    """Objects entering a selector arrive as ADDED and leaving it as DELETED."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    created = await kube.create_ok(path, cm("a", {"team": "x"}))
    rv = created["metadata"]["resourceVersion"]
    async with watch(kube, path, resourceVersion=rv, labelSelector="team=y") as stream:
        await kube.patch(f"{path}/a", {"metadata": {"labels": {"team": "y"}}})
        entered = await stream.next()
        await kube.patch(f"{path}/a", {"metadata": {"labels": {"team": "z"}}})
        left = await stream.next()
    assert entered["type"] == "ADDED"
    assert left["type"] == "DELETED"
    assert left["object"]["metadata"]["labels"] == {"team": "y"}


@pytest.mark.needs_builtin_kinds
async def test_single_object_watch_by_field_selector(kube: Kube, ns: str) -> None:
    """fieldSelector=metadata.name=x watches one object only."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    start = await kube.create_ok(path, cm("other"))
    rv = start["metadata"]["resourceVersion"]
    async with watch(kube, path, resourceVersion=rv, fieldSelector="metadata.name=mine") as stream:
        await kube.create_ok(path, cm("noise"))
        await kube.create_ok(path, cm("mine"))
        event = await stream.next()
    assert event["object"]["metadata"]["name"] == "mine"


@pytest.mark.needs_builtin_kinds
async def test_legacy_watch_path(kube: Kube, ns: str) -> None:
    """The deprecated /watch/ prefix serves the same stream."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, cm("a"))
    async with watch(kube, f"/api/v1/watch/namespaces/{ns}/configmaps") as stream:
        event = await stream.next()
    assert event["type"] == "ADDED"


@pytest.mark.needs_builtin_kinds
async def test_bookmarks_carry_only_the_resource_version(kube: Kube, ns: str) -> None:
    """allowWatchBookmarks sends a BOOKMARK with kind, apiVersion and the RV before the timeout."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    created = await kube.create_ok(path, cm("a"))
    rv = created["metadata"]["resourceVersion"]
    # kube-apiserver sends one 2 s before the watch's deadline (and about every minute).
    async with watch(
        kube, path, resourceVersion=rv, allowWatchBookmarks="true", timeoutSeconds="3"
    ) as stream:
        event = await stream.next()
    assert event["type"] == "BOOKMARK"
    obj = event["object"]
    assert obj["kind"] == "ConfigMap"
    assert obj["apiVersion"] == "v1"
    assert int(obj["metadata"]["resourceVersion"]) >= int(rv)
    assert set(obj["metadata"]) <= {"resourceVersion", "creationTimestamp"}


@pytest.mark.needs_builtin_kinds
async def test_no_bookmarks_unless_asked(kube: Kube, ns: str) -> None:
    """Without allowWatchBookmarks the stream carries no BOOKMARK; timeoutSeconds ends it."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    created = await kube.create_ok(path, cm("a"))
    rv = created["metadata"]["resourceVersion"]
    events = await kube.watch_lines(
        path, stop=lambda e: False, params={"resourceVersion": rv, "timeoutSeconds": "1"}
    )
    assert events == []


@pytest.mark.needs_builtin_kinds
async def test_send_initial_events_ends_with_annotated_bookmark(kube: Kube, ns: str) -> None:
    """sendInitialEvents sends the current objects, then a bookmark marking the end."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, cm("a"))
    async with watch(
        kube,
        path,
        sendInitialEvents="true",
        resourceVersionMatch="NotOlderThan",
        allowWatchBookmarks="true",
    ) as stream:
        added = await stream.next()
        bookmark = await stream.next()
    assert added["type"] == "ADDED"
    assert bookmark["type"] == "BOOKMARK"
    assert bookmark["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


@pytest.mark.needs_builtin_kinds
async def test_send_initial_events_needs_not_older_than(kube: Kube, ns: str) -> None:
    """sendInitialEvents without resourceVersionMatch=NotOlderThan is Invalid."""
    status, body, _ = await kube.get(
        f"/api/v1/namespaces/{ns}/configmaps",
        params={"watch": "true", "sendInitialEvents": "true", "allowWatchBookmarks": "true"},
    )
    assert status == 422
    assert (
        "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan" in body["message"]
    )


@pytest.mark.needs_builtin_kinds
async def test_watch_across_namespaces(kube: Kube, ns: str) -> None:
    """A cluster-wide watch sees objects of every namespace."""
    start = await kube.create_ok(f"/api/v1/namespaces/{ns}/configmaps", cm("first"))
    async with watch(
        kube, "/api/v1/configmaps", resourceVersion=start["metadata"]["resourceVersion"]
    ) as stream:
        await kube.create_ok(f"/api/v1/namespaces/{ns}/configmaps", cm("second"))
        event = await stream.next_non_bookmark()
    assert event["object"]["metadata"]["name"] == "second"


@pytest.mark.embedded_only
async def test_drop_watches_ends_streams(env: Environment, kube: Kube, ns: str) -> None:
    """faults.drop_watches closes every open watch cleanly."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, cm("a"))
    async with watch(kube, path) as stream:
        await stream.next()
        assert env.faults.drop_watches() >= 1
        assert await stream.ended()


@pytest.mark.embedded_only
async def test_slow_watcher_is_closed_without_blocking_writers() -> None:
    """A watcher that does not read is closed once its buffer overflows; writes go on."""
    srv = APIServer(tokens=["token"], ssl_context=None, watch_queue_size=5)
    async with srv, k8s.ApiClient(server_config(srv, "token")) as api:
        client = Kube(api)
        path = "/api/v1/namespaces/default/configmaps"
        start = await client.create_ok(path, cm("seed"))
        rv = start["metadata"]["resourceVersion"]
        async with client.stream(path, params={"resourceVersion": rv}) as resp:
            # Writes committed in one event-loop turn: the watcher cannot drain in between.
            rt = srv.registry.lookup("", "v1", "configmaps")
            assert rt is not None
            configmaps = srv.stores.for_type(rt)
            for i in range(20):
                await configmaps.create(RequestContext(), "default", cm(f"x{i}"))
            assert srv.hub.count() == 0
            body = await resp.read()
        assert body.count(b"\n") <= 5


@pytest.mark.needs_builtin_kinds
async def test_watch_as_partial_object_metadata(kube: Kube, ns: str) -> None:
    """A metadata-only watch sends PartialObjectMetadata objects."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, cm("a", k="v"))
    async with watch(
        kube, path, accept="application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
    ) as stream:
        event = await stream.next()
    obj = event["object"]
    assert obj["kind"] == "PartialObjectMetadata"
    assert obj["apiVersion"] == "meta.k8s.io/v1"
    assert obj["metadata"]["name"] == "a"
    assert "data" not in obj


@pytest.mark.needs_builtin_kinds
async def test_watch_as_table_sends_headers_first(kube: Kube, ns: str) -> None:
    """A Table watch sends column definitions with the first event only."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, cm("a"))
    await kube.create_ok(path, cm("b"))
    async with watch(kube, path, accept="application/json;as=Table;v=v1;g=meta.k8s.io") as stream:
        first = await stream.next()
        second = await stream.next()
    assert first["object"]["kind"] == "Table"
    assert [c["name"] for c in first["object"]["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert second["object"]["columnDefinitions"] == []
    assert second["object"]["rows"][0]["cells"][0] == "b"


@pytest.mark.needs_builtin_kinds
async def test_watch_timeout_closes_the_stream(kube: Kube, ns: str) -> None:
    """timeoutSeconds ends the stream cleanly."""
    async with watch(kube, f"/api/v1/namespaces/{ns}/configmaps", timeoutSeconds="1") as stream:
        assert await stream.ended(within=5)


@pytest.mark.embedded_only
async def test_closing_the_connection_ends_the_watch_at_once(
    env: Environment, kube: Kube, ns: str
) -> None:
    """A watch whose client closes the connection is unregistered without waiting for an event."""
    assert env.server is not None
    hub = env.server.hub

    async def open_watches(n: int) -> bool:
        return hub.count() == n

    async with kube.stream(f"/api/v1/namespaces/{ns}/configmaps"):
        await eventually(lambda: open_watches(1), within=5)
    # No event of the kind follows: only the closed connection can end the watch.
    await eventually(lambda: open_watches(0), within=2)


@pytest.mark.embedded_only
async def test_bookmarks_and_timeouts_follow_the_server_clock() -> None:
    """On a FakeClock, bookmarks and ``timeoutSeconds`` come when the test moves time."""
    clock = FakeClock()
    srv = APIServer(tokens=["token"], ssl_context=None, clock=clock, bookmark_interval=60)
    async with srv, k8s.ApiClient(server_config(srv, "token")) as api:
        client = Kube(api)
        path = "/api/v1/namespaces/default/configmaps"
        rv = (await client.get_ok(path))["metadata"]["resourceVersion"]
        params = {"resourceVersion": rv, "allowWatchBookmarks": "true", "timeoutSeconds": "600"}
        async with watch(client, path, **params) as stream:
            await clock.wait_for_timers(1)
            assert clock.next_deadline == 60.0
            clock.advance(60)
            assert (await stream.next())["type"] == "BOOKMARK"
            await clock.wait_for_timers(1)
            clock.set(600)
            assert await stream.ended()
