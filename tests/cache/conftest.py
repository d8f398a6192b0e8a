"""Fixtures for cache tests: a fake cluster, informers over it, and a recording handler."""

from __future__ import annotations

import asyncio
import contextlib
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
import pytest
import pytest_asyncio
from kubernetes_asyncio.client import V1ConfigMap

from pyctrl.cache import Cache, CacheOptions
from pyctrl.cache._backoff import BackoffPolicy
from pyctrl.cache._informer import InformerConfig, SharedInformer
from pyctrl.client import Response, RESTClient
from pyctrl.clock import Clock, RealClock
from pyctrl.errors import APIError
from pyctrl.meta import GroupVersionKind
from pyctrl.scheme import default_scheme

from .fakes import FakeCluster

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Mapping

    from pyctrl.envtest import Environment

CONFIGMAP = GroupVersionKind("", "v1", "ConfigMap")
FAST = BackoffPolicy(initial=0.01, maximum=0.05)


@dataclass
class Recorder:
    """An event handler that records what it is given, as (verb, name, flag or rv) tuples."""

    events: list[tuple[str, str, Any]] = field(default_factory=list)
    objects: list[Any] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    @staticmethod
    def _name(obj: Any) -> str:
        return str(obj["metadata"]["name"])

    def add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.events.append(("add", self._name(obj), is_in_initial_list))
        self.objects.append(obj)
        self.changed.set()

    def update(self, old: Any, new: Any) -> None:
        rvs = (old["metadata"]["resourceVersion"], new["metadata"]["resourceVersion"])
        self.events.append(("update", self._name(new), rvs))
        self.objects.append(new)
        self.changed.set()

    def delete(self, obj: Any, delete_state_unknown: bool) -> None:
        self.events.append(("delete", self._name(obj), delete_state_unknown))
        self.objects.append(obj)
        self.changed.set()

    async def wait_for(self, condition: Callable[[], bool], within: float = 5.0) -> None:
        """Wait until ``condition()`` holds after some event."""
        async with asyncio.timeout(within):
            while not condition():
                self.changed.clear()
                await self.changed.wait()

    async def wait_count(self, n: int, within: float = 5.0) -> None:
        """Wait until at least ``n`` events were recorded."""
        await self.wait_for(lambda: len(self.events) >= n, within)

    def named(self, verb: str) -> list[tuple[str, Any]]:
        """(name, extra) of the events of one verb."""
        return [(name, extra) for v, name, extra in self.events if v == verb]


@pytest.fixture
def fake() -> FakeCluster:
    return FakeCluster()


def make_informer(
    fake: FakeCluster,
    *,
    clock: Clock | None = None,
    seed: int = 1,
    **config: Any,
) -> SharedInformer:
    """A SharedInformer for ConfigMaps over the fake, with fast retries by default."""
    config.setdefault("backoff", FAST)
    config.setdefault("resync_period", None)
    config.setdefault("watch_list", False)
    rng = random.Random(seed)
    return SharedInformer(
        gvk=CONFIGMAP,
        source=fake,
        config=InformerConfig(**config),
        scheme=default_scheme(),
        clock=clock or RealClock(),
        random=rng.random,
    )


@contextlib.asynccontextmanager
async def running(informer: SharedInformer) -> AsyncIterator[SharedInformer]:
    """Run the informer in a task for the duration of the block."""
    task = asyncio.get_running_loop().create_task(informer.run())
    try:
        yield informer
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def wait_until(condition: Callable[[], bool], within: float = 5.0) -> None:
    """Poll ``condition`` until it holds, for state that signals no event."""
    async with asyncio.timeout(within):
        while not condition():  # noqa: ASYNC110 - polls state that has no event to wait on
            await asyncio.sleep(0.001)


# --- against the embedded API server ---------------------------------------------------


class RecordingREST(RESTClient):
    """A RESTClient that records every request and stream it sends: (method, path, query).

    Watches are recorded with the method ``WATCH``; lists read as a stream, with ``GET``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent: list[tuple[str, str, dict[str, Any]]] = []

    async def request(
        self, method: str, path: str, *, query: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> Response:
        self.sent.append((method, path, dict(query or {})))
        return await super().request(method, path, query=query, **kwargs)

    @contextlib.asynccontextmanager
    async def stream(
        self, path: str, *, query: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> AsyncIterator[AsyncIterator[bytes]]:
        sent = dict(query or {})
        self.sent.append(("WATCH" if "watch" in sent else "GET", path, sent))
        async with super().stream(path, query=query, **kwargs) as lines:
            yield lines

    def lists(self, path: str) -> list[dict[str, Any]]:
        """The queries of the list requests sent to ``path``."""
        return [q for m, p, q in self.sent if m == "GET" and p == path and "watch" not in q]

    def watches(self, path: str) -> list[dict[str, Any]]:
        """The queries of the watches opened on ``path``."""
        return [q for m, p, q in self.sent if m == "WATCH" and p == path]


@pytest_asyncio.fixture
async def rest(envtest: Environment) -> AsyncIterator[RESTClient]:
    async with RESTClient(envtest.config) as client:
        yield client


@contextlib.asynccontextmanager
async def started_cache(rest: RESTClient, **options: Any) -> AsyncIterator[Cache]:
    """A Cache with fast retries, started for the duration of the block."""
    options.setdefault("backoff", FAST)
    cache = Cache(rest, options=CacheOptions(**options))
    task = asyncio.get_running_loop().create_task(cache.start())
    try:
        async with asyncio.timeout(5):
            await cache.wait_started()
        yield cache
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def configmaps(namespace: str = "default") -> str:
    return f"/api/v1/namespaces/{namespace}/configmaps"


async def create_cm(
    rest: RESTClient,
    name: str,
    namespace: str = "default",
    *,
    data: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = labels
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data or {}}
    response = await rest.request(
        "POST", configmaps(namespace), body=orjson.dumps(body), content_type="application/json"
    )
    result: dict[str, Any] = response.json()
    return result


async def patch_cm(
    rest: RESTClient, name: str, data: dict[str, str], namespace: str = "default"
) -> dict[str, Any]:
    response = await rest.request(
        "PATCH",
        f"{configmaps(namespace)}/{name}",
        body=orjson.dumps({"data": data}),
        content_type="application/merge-patch+json",
    )
    result: dict[str, Any] = response.json()
    return result


async def delete_cm(rest: RESTClient, name: str, namespace: str = "default") -> None:
    await rest.request("DELETE", f"{configmaps(namespace)}/{name}")


async def server_state(rest: RESTClient, namespace: str = "default") -> dict[str, str]:
    """name -> resourceVersion of every ConfigMap the server holds in ``namespace``."""
    body = (await rest.request("GET", configmaps(namespace))).json()
    return {item["metadata"]["name"]: item["metadata"]["resourceVersion"] for item in body["items"]}


async def cache_state(cache: Cache, namespace: str = "default") -> dict[str, str]:
    """name -> resourceVersion of every ConfigMap the cache holds in ``namespace``."""
    listed = await cache.list(V1ConfigMap, namespace=namespace)
    return {cm.metadata.name: cm.metadata.resource_version for cm in listed}


@dataclass
class Mirror:
    """An event handler that rebuilds the set of objects from its events alone."""

    objects: dict[str, str] = field(default_factory=dict)
    deletes: list[tuple[str, bool]] = field(default_factory=list)
    initial: list[str] = field(default_factory=list)

    def add(self, obj: V1ConfigMap, is_in_initial_list: bool) -> None:
        self.objects[obj.metadata.name] = obj.metadata.resource_version
        if is_in_initial_list:
            self.initial.append(obj.metadata.name)

    def update(self, old: V1ConfigMap, new: V1ConfigMap) -> None:
        self.objects[new.metadata.name] = new.metadata.resource_version

    def delete(self, obj: V1ConfigMap, delete_state_unknown: bool) -> None:
        self.objects.pop(obj.metadata.name, None)
        self.deletes.append((obj.metadata.name, delete_state_unknown))


async def converge(
    rest: RESTClient, cache: Cache, mirror: Mirror | None = None, within: float = 15.0
) -> dict[str, str]:
    """Wait until the cache (and the mirror) hold exactly what the server holds."""
    expected: dict[str, str] = {}
    try:
        async with asyncio.timeout(within):
            while True:
                try:
                    expected = await server_state(rest)
                except APIError:  # the test's own list may meet an injected fault
                    await asyncio.sleep(0.02)
                    continue
                cached = await cache_state(cache)
                mirrored = mirror.objects if mirror is not None else expected
                if cached == expected and mirrored == expected:
                    return expected
                await asyncio.sleep(0.02)
    except TimeoutError:
        cached = await cache_state(cache)
        raise AssertionError(
            f"cache did not converge: server {expected}, cache {cached}, "
            f"mirror {mirror.objects if mirror else None}, status {cache.status()}"
        ) from None
