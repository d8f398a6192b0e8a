"""Namespaces chosen at run time, informers removed, and reads that refuse to start informers."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from kubernetes_asyncio.client import V1ConfigMap

from pyctrl.builder import controller_managed_by
from pyctrl.cache import CacheOptions, ResourceNotCachedError
from pyctrl.errors import NotFoundError
from pyctrl.manager import Manager
from pyctrl.reconcile import Request, Result
from pyctrl.testing import running
from tests.manager.conftest import options

from .conftest import CONFIGMAP, FAST, Recorder, create_cm, patch_cm, started_cache, wait_until

if TYPE_CHECKING:
    from pyctrl.cache import Cache
    from pyctrl.client import RESTClient
    from pyctrl.envtest import Environment


async def create_ns(rest: RESTClient, name: str, labels: dict[str, str] | None = None) -> None:
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = labels
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}
    await rest.request(
        "POST", "/api/v1/namespaces", body=orjson.dumps(body), content_type="application/json"
    )


async def label_ns(rest: RESTClient, name: str, labels: dict[str, str | None]) -> None:
    await rest.request(
        "PATCH",
        f"/api/v1/namespaces/{name}",
        body=orjson.dumps({"metadata": {"labels": labels}}),
        content_type="application/merge-patch+json",
    )


async def cached_names(cache: Cache, namespace: str | None = None) -> set[str]:
    listed = await cache.list(V1ConfigMap, namespace=namespace)
    return {f"{cm.metadata.namespace}/{cm.metadata.name}" for cm in listed}


async def test_set_namespaces_adds_and_drops_namespaces_while_running(
    rest: RESTClient,
) -> None:
    """Namespaces added are listed and watched; those dropped leave with deletes to handlers."""
    for ns in ("ns-a", "ns-b"):
        await create_ns(rest, ns)
        await create_cm(rest, "cm", ns)
    recorder = Recorder()
    async with started_cache(rest, namespaces=["ns-a"]) as cache:
        cache.get_informer(dict, gvk=CONFIGMAP).add_event_handler(recorder)
        await cache.wait_for_cache_sync(timeout=10)
        assert await cached_names(cache) == {"ns-a/cm"}

        cache.set_namespaces(["ns-a", "ns-b"])
        assert cache.namespaces == ("ns-a", "ns-b")
        assert (await cache.get(V1ConfigMap, "cm", "ns-b")).metadata.namespace == "ns-b"
        await recorder.wait_for(lambda: ("add", "cm", False) in recorder.events)

        recorder.events.clear()
        cache.set_namespaces(["ns-b"])
        await recorder.wait_for(lambda: recorder.named("delete") == [("cm", False)])
        assert recorder.objects[-1]["metadata"]["namespace"] == "ns-a"
        with pytest.raises(NotFoundError):
            await cache.get(V1ConfigMap, "cm", "ns-a")
        assert await cached_names(cache, "ns-a") == set()
        assert await cached_names(cache) == {"ns-b/cm"}

        await patch_cm(rest, "cm", {"still": "watched"}, "ns-b")
        await recorder.wait_for(lambda: len(recorder.named("update")) == 1)

        cache.set_namespaces(None)
        await wait_until(lambda: cache.namespaces is None)
        assert {"ns-a/cm", "ns-b/cm"} <= await cached_names(cache)


async def test_set_namespaces_checks_its_argument(rest: RESTClient) -> None:
    """A single string or an empty name is refused with a clear error."""
    async with started_cache(rest) as cache:
        with pytest.raises(TypeError, match="not the string"):
            cache.set_namespaces("default")
        with pytest.raises(ValueError, match="non-empty"):
            cache.set_namespaces(["default", ""])


def test_namespaces_and_a_namespace_selector_exclude_each_other() -> None:
    """CacheOptions takes namespaces or namespace_selector, not both; bad selectors are named."""
    with pytest.raises(ValueError, match="not both"):
        CacheOptions(namespaces=["a"], namespace_selector={"team": "a"})
    with pytest.raises(ValueError, match="namespace_selector"):
        CacheOptions(namespace_selector="team in (")


class Seen:
    """A reconciler that records the keys it reconciles, and whether their object exists."""

    def __init__(self, manager: Manager) -> None:
        self.manager = manager
        self.keys: list[tuple[str, str, bool]] = []
        self.changed = asyncio.Event()

    async def reconcile(self, request: Request) -> Result:
        try:
            await self.manager.client.get(V1ConfigMap, request.name, request.namespace)
            found = True
        except NotFoundError:
            found = False
        self.keys.append((request.namespace or "", request.name, found))
        self.changed.set()
        return Result()

    async def wait_for(self, key: tuple[str, str, bool], within: float = 15.0) -> None:
        """Wait until ``key`` has been reconciled."""
        async with asyncio.timeout(within):
            while key not in self.keys:
                self.changed.clear()
                await self.changed.wait()


@pytest.mark.needs_controllers  # a deleted namespace goes only once its contents are gone
async def test_a_namespace_selector_is_followed_live(envtest: Environment) -> None:
    """A namespace labelled after start is reconciled; unlabelled or deleted, it is dropped."""
    manager = Manager(
        envtest.config,
        options(cache=CacheOptions(backoff=FAST, namespace_selector={"team": "a"})),
    )
    seen = Seen(manager)
    controller_managed_by(manager).for_(V1ConfigMap).complete(seen)
    rest = manager.rest
    await create_ns(rest, "team-a-1", {"team": "a"})
    await create_cm(rest, "first", "team-a-1")
    await create_ns(rest, "later")
    await create_cm(rest, "second", "later")
    async with running(manager):
        await seen.wait_for(("team-a-1", "first", True))
        assert not [key for key in seen.keys if key[0] == "later"]

        await label_ns(rest, "later", {"team": "a"})
        await seen.wait_for(("later", "second", True))
        assert manager.cache.namespaces == ("later", "team-a-1")

        await label_ns(rest, "later", {"team": None})
        await seen.wait_for(("later", "second", False))  # its object left the cache
        assert await cached_names(manager.cache) == {"team-a-1/first"}

        await rest.request("DELETE", "/api/v1/namespaces/team-a-1")
        await wait_until(lambda: manager.cache.namespaces == (), within=15)
        await seen.wait_for(("team-a-1", "first", False))

        # The controller kept running: a namespace labelled now is reconciled as well.
        await create_ns(rest, "team-a-2", {"team": "a"})
        await create_cm(rest, "third", "team-a-2")
        await seen.wait_for(("team-a-2", "third", True))
        assert manager.cache.healthy()


async def test_set_namespaces_is_refused_while_following_a_selector(rest: RESTClient) -> None:
    """set_namespaces on a cache that follows a namespace selector raises ValueError."""
    async with started_cache(rest, namespace_selector="team=a") as cache:
        with pytest.raises(ValueError, match="namespace selector"):
            cache.set_namespaces(["default"])


@pytest.mark.embedded_only
async def test_remove_informer_closes_its_watch(envtest: Environment, rest: RESTClient) -> None:
    """remove_informer stops the watch (the server sees it closed); a read starts a new one."""
    assert envtest.server is not None
    hub = envtest.server.hub
    await create_cm(rest, "a")
    async with started_cache(rest) as cache:
        informer = cache.get_informer(V1ConfigMap)
        await cache.wait_for_cache_sync(timeout=10)
        await wait_until(lambda: informer.status().state == "watching", within=10)
        assert hub.count() == 1
        assert cache.remove_informer(V1ConfigMap) is True
        await wait_until(lambda: hub.count() == 0, within=5)
        assert informer.status().state == "stopped"
        assert cache.status() == []
        assert cache.remove_informer(V1ConfigMap) is False
        assert (await cache.get(V1ConfigMap, "a", "default")).metadata.name == "a"
        await wait_until(lambda: hub.count() == 1, within=10)


async def test_reader_fail_on_missing_informer(rest: RESTClient) -> None:
    """With reader_fail_on_missing_informer a read of an uncached type raises, not starts one."""
    await create_cm(rest, "a")
    async with started_cache(rest, reader_fail_on_missing_informer=True) as cache:
        with pytest.raises(ResourceNotCachedError, match="ConfigMap"):
            await cache.get(V1ConfigMap, "a", "default")
        with pytest.raises(ResourceNotCachedError):
            await cache.list(V1ConfigMap)
        assert cache.status() == []
        cache.get_informer(V1ConfigMap)
        assert (await cache.get(V1ConfigMap, "a", "default")).metadata.name == "a"
