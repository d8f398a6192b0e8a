from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from kubernetes_asyncio.client import V1ConfigMap
from pydantic import Field

from pyctrl.builder import controller_managed_by
from pyctrl.cache import (
    ByObject,
    Cache,
    CacheNotReadyError,
    CacheNotStartedError,
    CacheOptions,
    ResourceEventHandlerFuncs,
)
from pyctrl.client import Reader
from pyctrl.errors import CacheSyncTimeoutError, NotFoundError
from pyctrl.manager import Manager, Options
from pyctrl.meta import GroupVersionKind
from pyctrl.reconcile import Request, Result
from pyctrl.resource import CustomResource, PartialObjectMetadata, Unstructured
from pyctrl.testing import running

from .conftest import (
    Mirror,
    RecordingREST,
    create_cm,
    delete_cm,
    patch_cm,
    started_cache,
    wait_until,
)

if TYPE_CHECKING:
    from pyctrl.client import RESTClient
    from pyctrl.envtest import Environment

CONFIGMAP = GroupVersionKind("", "v1", "ConfigMap")


class Widget(CustomResource, group="cache.pyctrl.dev", version="v1"):
    spec: dict[str, Any] = Field(default_factory=dict)


WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.cache.pyctrl.dev"},
    "spec": {
        "group": "cache.pyctrl.dev",
        "names": {
            "kind": "Widget",
            "plural": "widgets",
            "singular": "widget",
            "listKind": "WidgetList",
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                        },
                    }
                },
            }
        ],
    },
}


async def test_get_returns_a_fresh_typed_copy(rest: RESTClient) -> None:
    """get() answers from the cache with a new model object each time."""
    await create_cm(rest, "a", data={"k": "v"})
    async with started_cache(rest) as cache:
        first = await cache.get(V1ConfigMap, "a", "default")
        first.data["k"] = "changed"
        second = await cache.get(V1ConfigMap, "a", "default")
    assert isinstance(second, V1ConfigMap)
    assert second.data == {"k": "v"}
    assert first is not second


async def test_get_of_a_missing_object_raises_not_found(rest: RESTClient) -> None:
    """A name the cache does not hold raises NotFoundError naming it."""
    async with started_cache(rest) as cache:
        with pytest.raises(NotFoundError, match='configmaps "nope" not found') as info:
            await cache.get(V1ConfigMap, "nope", "default")
    assert info.value.name == "nope"


async def test_the_cache_is_a_reader(rest: RESTClient) -> None:
    """Cache implements the client's Reader protocol, so a Client can read through it."""
    reader: Reader = Cache(rest)
    assert isinstance(reader, Reader)


async def test_reads_before_start_raise_not_started(rest: RESTClient) -> None:
    """Reading a cache that is not running raises CacheNotStartedError."""
    cache = Cache(rest)
    with pytest.raises(CacheNotStartedError):
        await cache.get(V1ConfigMap, "a", "default")


async def test_namespaced_get_needs_a_namespace(rest: RESTClient) -> None:
    """get() of a namespaced type without a namespace is refused with a clear error."""
    async with started_cache(rest) as cache:
        with pytest.raises(ValueError, match="namespaced"):
            await cache.get(V1ConfigMap, "a")


async def test_list_is_sorted_and_filters_by_namespace_and_labels(rest: RESTClient) -> None:
    """list() returns matching objects sorted by namespace and name."""
    await create_cm(rest, "b", labels={"app": "web"})
    await create_cm(rest, "a", labels={"app": "db"})
    await create_cm(rest, "c", "kube-system", labels={"app": "web"})
    async with started_cache(rest) as cache:
        everything = await cache.list(V1ConfigMap)
        default = await cache.list(V1ConfigMap, namespace="default")
        web = await cache.list(V1ConfigMap, labels={"app": "web"})
        web_text = await cache.list(V1ConfigMap, labels="app in (web)", namespace="default")
    names = [(cm.metadata.namespace, cm.metadata.name) for cm in everything]
    assert [n for n in names if n[1] in "abc"] == [
        ("default", "a"),
        ("default", "b"),
        ("kube-system", "c"),
    ]
    assert [cm.metadata.name for cm in default] == ["a", "b"]
    assert [cm.metadata.name for cm in web] == ["b", "c"]
    assert [cm.metadata.name for cm in web_text] == ["b"]
    assert default.resource_version


async def test_list_pages_with_limit_and_continue(rest: RESTClient) -> None:
    """limit and continue_ walk the cached objects page by page."""
    for name in "abcde":
        await create_cm(rest, name)
    async with started_cache(rest) as cache:
        first = await cache.list(V1ConfigMap, namespace="default", limit=2)
        assert first.continue_ is not None
        second = await cache.list(
            V1ConfigMap, namespace="default", limit=2, continue_=first.continue_
        )
        assert second.continue_ is not None
        third = await cache.list(
            V1ConfigMap, namespace="default", limit=2, continue_=second.continue_
        )
        with pytest.raises(ValueError, match="continue token"):
            await cache.list(V1ConfigMap, continue_="garbage")
    pages = [[cm.metadata.name for cm in page] for page in (first, second, third)]
    assert pages == [["a", "b"], ["c", "d"], ["e"]]
    assert first.remaining_item_count == 3
    assert third.continue_ is None


async def test_index_field_serves_field_selectors(rest: RESTClient) -> None:
    """A field index added with index_field answers list(fields=...)."""
    await create_cm(rest, "a", data={"owner": "x"})
    await create_cm(rest, "b", data={"owner": "y"})
    await create_cm(rest, "c", data={"owner": "x"})
    async with started_cache(rest) as cache:
        cache.index_field(V1ConfigMap, "data.owner", lambda cm: (cm.data or {}).get("owner", ""))
        owned = await cache.list(V1ConfigMap, fields={"data.owner": "x"})
        owned_text = await cache.list(V1ConfigMap, fields="data.owner=y", namespace="default")
        await patch_cm(rest, "b", {"owner": "x"})
        with pytest.raises(ValueError, match="index_field"):
            await cache.list(V1ConfigMap, fields={"data.other": "x"})
        with pytest.raises(ValueError, match="exact matches"):
            await cache.list(V1ConfigMap, fields="data.owner!=x")
    assert [cm.metadata.name for cm in owned] == ["a", "c"]
    assert [cm.metadata.name for cm in owned_text] == ["b"]


async def test_index_follows_updates(rest: RESTClient) -> None:
    """An object whose indexed value changes moves to its new index value."""
    await create_cm(rest, "a", data={"owner": "x"})
    async with started_cache(rest) as cache:
        cache.index_field(V1ConfigMap, "data.owner", lambda cm: [(cm.data or {})["owner"]])
        await cache.wait_for_cache_sync(timeout=5)
        patched = await patch_cm(rest, "a", {"owner": "y"})
        informer = cache.get_informer(V1ConfigMap)
        rv = patched["metadata"]["resourceVersion"]
        await wait_until(lambda: informer.status().resource_version == rv)
        moved = await cache.list(V1ConfigMap, fields={"data.owner": "y"})
        left = await cache.list(V1ConfigMap, fields={"data.owner": "x"})
    assert [cm.metadata.name for cm in moved] == ["a"]
    assert list(left) == []


async def test_untyped_reads_need_a_gvk(rest: RESTClient) -> None:
    """Unstructured and PartialObjectMetadata reads work with gvk=, and fail clearly without."""
    await create_cm(rest, "a", data={"k": "v"}, labels={"app": "web"})
    async with started_cache(rest) as cache:
        raw = await cache.get(Unstructured, "a", "default", gvk=CONFIGMAP)
        meta = await cache.get(PartialObjectMetadata, "a", "default", gvk=CONFIGMAP)
        with pytest.raises(TypeError, match="gvk="):
            await cache.get(Unstructured, "a", "default")
    assert raw.get_nested("data", "k") == "v"
    assert meta.kind == "ConfigMap"
    assert meta.metadata.labels == {"app": "web"}
    assert len(cache.status()) == 2
    assert sorted(s.metadata_only for s in cache.status()) == [False, True]


async def test_metadata_only_types_cache_no_data(rest: RESTClient) -> None:
    """A type listed in metadata_only is cached without its data."""
    await create_cm(rest, "a", data={"k": "v" * 1000})
    async with started_cache(rest, metadata_only=[V1ConfigMap]) as cache:
        cm = await cache.get(V1ConfigMap, "a", "default")
        (status,) = cache.status()
    assert status.metadata_only
    assert cm.metadata.name == "a"
    assert not cm.data


async def test_the_default_transform_strips_managed_fields(rest: RESTClient) -> None:
    """Cached objects have no managedFields unless the transform is replaced."""
    await create_cm(rest, "a")
    async with started_cache(rest) as cache:
        stripped = await cache.get(V1ConfigMap, "a", "default")
    async with started_cache(rest, default_transform=None) as cache:
        kept = await cache.get(V1ConfigMap, "a", "default")
    assert kept.metadata.managed_fields
    assert not stripped.metadata.managed_fields


async def test_namespaces_option_limits_what_is_cached(rest: RESTClient) -> None:
    """With namespaces set, only they are cached, and reads elsewhere are refused."""
    await create_cm(rest, "a", "default")
    await create_cm(rest, "b", "kube-public")
    await create_cm(rest, "c", "kube-system")
    async with started_cache(rest, namespaces=["default", "kube-public"]) as cache:
        listed = await cache.list(V1ConfigMap)
        with pytest.raises(ValueError, match="not cached"):
            await cache.get(V1ConfigMap, "c", "kube-system")
    assert {cm.metadata.name for cm in listed} >= {"a", "b"}
    assert "c" not in {cm.metadata.name for cm in listed}


async def test_by_type_selectors_filter_on_the_server(rest: RESTClient) -> None:
    """A ByObject label selector keeps non-matching objects out of the cache."""
    await create_cm(rest, "a", labels={"cached": "yes"})
    await create_cm(rest, "b", labels={"cached": "no"})
    options = {"by_type": {V1ConfigMap: ByObject(labels={"cached": "yes"})}}
    async with started_cache(rest, **options) as cache:
        listed = await cache.list(V1ConfigMap, namespace="default")
    assert [cm.metadata.name for cm in listed] == ["a"]


async def test_by_type_field_selectors_filter_on_the_server(rest: RESTClient) -> None:
    """A ByObject field selector is sent to the server with every list and watch."""
    await create_cm(rest, "a")
    await create_cm(rest, "b")
    options = {"by_type": {CONFIGMAP: ByObject(fields={"metadata.name": "b"})}}
    async with started_cache(rest, **options) as cache:
        listed = await cache.list(V1ConfigMap, namespace="default")
    assert [cm.metadata.name for cm in listed] == ["b"]


async def test_handlers_see_adds_updates_and_deletes(rest: RESTClient) -> None:
    """An informer's handler gets initial adds flagged, then live changes with old and new."""
    await create_cm(rest, "a", data={"v": "1"})
    mirror = Mirror()
    updates: list[tuple[str, str]] = []
    async with started_cache(rest) as cache:
        informer = cache.get_informer(V1ConfigMap)
        informer.add_event_handler(mirror)
        informer.add_event_handler(
            ResourceEventHandlerFuncs[V1ConfigMap](
                update_func=lambda old, new: updates.append((old.data["v"], new.data["v"]))
            )
        )
        await cache.wait_for_cache_sync(timeout=5)
        await wait_until(lambda: informer.status().state == "watching")
        await patch_cm(rest, "a", {"v": "2"})
        await create_cm(rest, "b")
        await delete_cm(rest, "a")
        await wait_until(lambda: "b" in mirror.objects and "a" not in mirror.objects)
        await wait_until(lambda: bool(updates))
    assert "a" in mirror.initial
    assert ("a", False) in mirror.deletes
    assert updates == [("1", "2")]


async def test_a_crd_installed_later_is_picked_up(envtest: Environment, rest: RESTClient) -> None:
    """An informer for a kind not yet served keeps trying and syncs once its CRD exists."""
    async with started_cache(rest, unhealthy_after=0.0) as cache:
        informer = cache.get_informer(Widget)
        await wait_until(lambda: informer.status().last_error is not None)
        status = informer.status()
        assert status.state == "resolving"
        assert "Widget" in (status.last_error or "")
        with pytest.raises(CacheNotReadyError, match=r"cache\.pyctrl\.dev/v1/Widget"):
            cache.check_ready()
        with pytest.raises(CacheSyncTimeoutError, match="Widget"):
            await cache.wait_for_cache_sync(timeout=0.1)
        await envtest.install_crds([WIDGET_CRD])
        await rest.request(
            "POST",
            "/apis/cache.pyctrl.dev/v1/namespaces/default/widgets",
            body=b'{"apiVersion":"cache.pyctrl.dev/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":3}}',
            content_type="application/json",
        )
        await informer.wait_synced(timeout=10)
        await wait_until(lambda: informer.status().objects == 1)
        widget = await cache.get(Widget, "w", "default")
        await wait_until(cache.healthy)
        cache.check_ready()
    assert widget.spec == {"size": 3}


async def test_check_ready_passes_once_everything_synced(rest: RESTClient) -> None:
    """The readiness check fails before start and passes once informers synced."""
    cache = Cache(rest)
    with pytest.raises(CacheNotReadyError, match="not started"):
        cache.check_ready()
    async with started_cache(rest) as cache:
        cache.get_informer(V1ConfigMap)
        await cache.wait_for_cache_sync(timeout=5)
        cache.check_ready()
        assert cache.synced()
        assert cache.healthy()


def test_cache_options_refuse_bad_values() -> None:
    """Nonsensical options raise errors naming the option."""
    with pytest.raises(ValueError, match="sync_period"):
        CacheOptions(sync_period=0)
    with pytest.raises(TypeError, match="namespaces"):
        CacheOptions(namespaces="default")
    with pytest.raises(ValueError, match="page_size"):
        CacheOptions(page_size=0)
    with pytest.raises(TypeError, match="ByObject"):
        CacheOptions(by_type={V1ConfigMap: {"labels": "a=b"}})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match=r"ByObject\.labels"):
        ByObject(labels="=x")
    with pytest.raises(ValueError, match="sync_timeout"):
        CacheOptions(sync_timeout=-1)


# sharing and paging ---------------------------------------------------------------------


async def test_every_view_of_a_type_shares_one_informer_one_list_and_one_watch(
    envtest: Environment,
) -> None:
    """Two get_informer calls and a typed and an Unstructured view share one streamed list."""
    typed: list[Any] = []
    raw: list[Any] = []
    async with RecordingREST(envtest.config) as rest:
        await create_cm(rest, "a")
        async with started_cache(rest) as cache:
            first = cache.get_informer(V1ConfigMap)
            again = cache.get_informer(V1ConfigMap)
            untyped = cache.get_informer(Unstructured, gvk=CONFIGMAP)
            first.add_event_handler(ResourceEventHandlerFuncs(lambda o, _: typed.append(o)))
            untyped.add_event_handler(ResourceEventHandlerFuncs(lambda o, _: raw.append(o)))
            await cache.wait_for_cache_sync(timeout=10)
            await wait_until(lambda: again.status().state == "watching", within=10)
            await create_cm(rest, "b")
            await wait_until(lambda: len(typed) == len(raw) == 2)
            assert await cache.get(Unstructured, "b", "default", gvk=CONFIGMAP)
            statuses = cache.status()
            open_watches = envtest.server.hub.count() if envtest.server else None
    assert len(statuses) == 1
    # The list is streamed: one watch with sendInitialEvents both lists and watches.
    assert rest.lists("/api/v1/configmaps") == []
    watches = rest.watches("/api/v1/configmaps")
    assert [w.get("sendInitialEvents") for w in watches] == ["true"]
    assert open_watches == 1
    assert {type(o) for o in typed} == {V1ConfigMap}
    assert {type(o) for o in raw} == {Unstructured}


async def test_two_controllers_of_one_type_share_its_informer_and_watch(
    envtest: Environment,
) -> None:
    """Two controllers for ConfigMaps in one Manager both reconcile from a single informer."""
    seen: dict[str, set[str]] = {"one": set(), "two": set()}

    class Reconciler:
        def __init__(self, name: str) -> None:
            self.name = name

        async def reconcile(self, request: Request) -> Result:
            seen[self.name].add(request.name)
            return Result()

    manager = Manager(envtest.config, Options(metrics_bind_address="0"))
    for name in seen:
        controller_managed_by(manager).for_(V1ConfigMap).named(f"cm-{name}").complete(
            Reconciler(name)
        )
    async with running(manager):
        await create_cm(manager.rest, "shared")
        await wait_until(lambda: all("shared" in names for names in seen.values()), within=10)
        statuses = manager.cache.status()
        open_watches = envtest.server.hub.count() if envtest.server else None
    assert [(s.gvk.kind, s.metadata_only) for s in statuses] == [("ConfigMap", False)]
    assert open_watches == 1


async def test_informers_list_in_pages_of_page_size(envtest: Environment) -> None:
    """With page_size=2 and no streaming, the first list is fetched page by page."""
    async with RecordingREST(envtest.config) as rest:
        for i in range(5):
            await create_cm(rest, f"cm-{i}")
        everything = (await rest.request("GET", "/api/v1/configmaps")).json()["items"]
        rest.sent.clear()
        async with started_cache(rest, page_size=2, watch_list=False) as cache:
            cached = await cache.list(V1ConfigMap)
    pages = rest.lists("/api/v1/configmaps")
    assert len(pages) == (len(everything) + 1) // 2 >= 3
    assert {page["limit"] for page in pages} == {"2"}
    assert "continue" not in pages[0]
    assert all(page["continue"] for page in pages[1:])
    assert len({page["continue"] for page in pages[1:]}) == len(pages) - 1
    assert len(cached) == len(everything)
    assert {f"cm-{i}" for i in range(5)} <= {cm.metadata.name for cm in cached}
