"""Which lists a reflector asks for: client-go's relistResourceVersion rules, streaming lists."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from kubernetes_asyncio.client import V1ConfigMap

from pyctrl.cache._reflector import Listing, Watching
from pyctrl.clock import FakeClock
from pyctrl.errors import APIError, GoneError, ServerTimeoutError, StatusCause

from .conftest import RecordingREST, create_cm, started_cache, wait_until
from .test_reflector import make

if TYPE_CHECKING:
    from pyctrl.envtest import Environment

    from .fakes import FakeCluster


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def expired() -> GoneError:
    return GoneError(code=410, reason="Expired", message="too old resource version")


async def test_the_first_list_asks_for_any_version_from_the_watch_cache(
    fake: FakeCluster, clock: FakeClock
) -> None:
    """The first list asks for resourceVersion 0 (no match), page by page."""
    for name in "abc":
        fake.put(name)
    reflector, _ = make(fake, clock, page_size=2)
    assert await reflector.step(Listing()) == Watching("103")
    first = fake.list_calls[0]
    assert (first["resource_version"], first["resource_version_match"]) == ("0", None)
    assert first["limit"] == 2
    # Following pages carry only the continue token, as client-go's pager sends them.
    assert [c["resource_version"] for c in fake.list_calls[1:]] == [""]


async def test_a_relist_after_410_asks_for_the_last_version_not_older_than_it(
    fake: FakeCluster, clock: FakeClock
) -> None:
    """After a watch 410 the list is at the last version seen (NotOlderThan), unpaged."""
    fake.put("a")
    reflector, _ = make(fake, clock, page_size=2)
    await reflector.step(Listing())
    fake.put("b")
    fake.compact()
    assert await reflector.step(Watching(reflector.resource_version)) == Listing()
    assert await reflector.step(Listing()) == Watching("102")
    relist = fake.list_calls[-1]
    assert relist["resource_version"] == "101"
    assert relist["resource_version_match"] == "NotOlderThan"
    assert relist["limit"] is None


@pytest.mark.parametrize(
    "refusal",
    [
        expired(),
        ServerTimeoutError(
            code=504,
            reason="Timeout",
            message="Too large resource version",
            causes=(StatusCause(reason="ResourceVersionTooLarge"),),
        ),
    ],
)
async def test_a_version_the_server_cannot_serve_falls_back_to_a_consistent_paged_list(
    fake: FakeCluster, clock: FakeClock, refusal: APIError
) -> None:
    """410 or 'too large' on a list at a version lists again at once, consistently, in pages."""
    for name in "abc":
        fake.put(name)
    reflector, sink = make(fake, clock, page_size=2)
    await reflector.step(Listing())
    fake.list_calls.clear()
    reflector.resource_version = "999"
    fake.fail_next("list", refusal)
    assert await reflector.step(Listing()) == Watching("103")
    asked = [(c["resource_version"], c["limit"]) for c in fake.list_calls]
    # Pages stay on: this server paged the first list (client-go's paginatedResult).
    assert asked == [("999", 2), ("", 2), ("", 2)]
    assert reflector.last_error is None
    assert sink.lists[-1] == ["a", "b", "c"]
    # Once a list worked, the next relist asks for the last version again.
    assert reflector.relist_resource_version() == "103"


async def test_a_server_refusing_streaming_lists_is_listed_page_by_page(
    fake: FakeCluster, clock: FakeClock
) -> None:
    """A 422 to a streaming list falls back to list and watch, and is not asked again."""
    fake.put("a")
    reflector, sink = make(fake, clock, watch_list=True)
    assert await reflector.step(Listing()) == Listing()
    assert fake.watch_calls[0]["send_initial_events"] is True
    assert reflector.watch_list_supported is False
    assert reflector.last_error is None
    assert await reflector.step(Listing()) == Watching("101")
    assert sink.lists == [["a"]]
    assert reflector.relists == 0
    fake.put("b")
    fake.compact()
    assert await reflector.step(Watching("101")) == Listing()
    assert await reflector.step(Listing()) == Watching("102")
    assert len(fake.watch_calls) == 2  # the failed streaming list and the 410 watch only
    assert reflector.relists == 1


# --- against the embedded API server ---------------------------------------------------


@pytest.mark.embedded_only
async def test_streaming_lists_fall_back_on_a_server_that_refuses_them(
    envtest: Environment,
) -> None:
    """Against a server that refuses sendInitialEvents, the cache lists, watches and syncs."""
    envtest.faults.refuse_watch_list()
    async with RecordingREST(envtest.config) as rest:
        await create_cm(rest, "before")
        async with started_cache(rest) as cache:
            informer = cache.get_informer(V1ConfigMap)
            await cache.wait_for_cache_sync(timeout=10)
            await wait_until(lambda: informer.status().state == "watching", within=10)
            await create_cm(rest, "after")
            await wait_until(lambda: informer.status().objects >= 2, within=10)
            names = {cm.metadata.name for cm in await cache.list(V1ConfigMap)}
            status = informer.status()
        watches = rest.watches("/api/v1/configmaps")
        lists = rest.lists("/api/v1/configmaps")
    assert {"before", "after"} <= names
    assert watches[0].get("sendInitialEvents") == "true"
    assert all("sendInitialEvents" not in w for w in watches[1:])
    assert [q.get("resourceVersion") for q in lists] == ["0"]
    assert (status.healthy, status.last_error, status.reconnects) == (True, None, 0)


async def test_a_streaming_list_syncs_and_goes_on_watching_on_the_same_stream(
    envtest: Environment,
) -> None:
    """With streaming on, one watch request lists every object and then carries changes."""
    async with RecordingREST(envtest.config) as rest:
        for i in range(5):
            await create_cm(rest, f"cm-{i}")
        async with started_cache(rest) as cache:
            informer = cache.get_informer(V1ConfigMap)
            await cache.wait_for_cache_sync(timeout=10)
            await wait_until(lambda: informer.status().state == "watching", within=10)
            await create_cm(rest, "late")
            await wait_until(lambda: informer.status().objects >= 6, within=10)
            status = informer.status()
        watches = rest.watches("/api/v1/configmaps")
    assert rest.lists("/api/v1/configmaps") == []
    assert len(watches) == 1
    assert watches[0]["sendInitialEvents"] == "true"
    assert watches[0]["resourceVersionMatch"] == "NotOlderThan"
    assert "resourceVersion" not in watches[0]  # a consistent snapshot
    assert (status.state, status.relists, status.reconnects) == ("watching", 0, 0)
