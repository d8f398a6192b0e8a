from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from kubernetes_asyncio.client import V1ConfigMap

from pyctrl import metrics
from pyctrl.cache import BackoffPolicy, ResourceEventHandlerFuncs, strip_managed_fields
from pyctrl.cache._informer import Informer
from pyctrl.clock import FakeClock
from pyctrl.errors import CacheSyncTimeoutError, ServiceUnavailableError
from pyctrl.labels import parse

from .conftest import Recorder, make_informer, running, wait_until

if TYPE_CHECKING:
    from .fakes import FakeCluster


def gauge(name: str, label: str = "v1/ConfigMap") -> float | None:
    return metrics.registry.get_sample_value(name, {"gvk": label})


async def test_initial_list_adds_are_flagged_and_later_ones_are_not(fake: FakeCluster) -> None:
    """Objects from the first list arrive as initial adds; objects created later do not."""
    fake.put("a")
    fake.put("b")
    informer = make_informer(fake)
    recorder = Recorder()
    informer.add_listener(recorder, dict)
    async with running(informer):
        await recorder.wait_count(2)
        fake.put("c")
        await recorder.wait_count(3)
    assert recorder.named("add") == [("a", True), ("b", True), ("c", False)]


async def test_updates_carry_the_old_and_the_new_object(fake: FakeCluster) -> None:
    """An update hands the handler the previous and the current version."""
    fake.put("a", data={"v": "1"})
    informer = make_informer(fake)
    seen: list[tuple[dict[str, Any], dict[str, Any]]] = []
    handler = ResourceEventHandlerFuncs[dict[str, Any]](
        update_func=lambda old, new: seen.append((old, new))
    )
    async with running(informer):
        informer.add_listener(handler, dict)
        await informer.wait_synced()
        await wait_until(lambda: len(fake.watches) == 1)
        fake.put("a", data={"v": "2"})
        await wait_until(lambda: len(seen) == 1)
    old, new = seen[0]
    assert (old["data"], new["data"]) == ({"v": "1"}, {"v": "2"})


async def test_deletes_deliver_the_final_state_as_known(fake: FakeCluster) -> None:
    """A watched delete is delivered with delete_state_unknown False."""
    fake.put("a")
    informer = make_informer(fake)
    recorder = Recorder()
    informer.add_listener(recorder, dict)
    async with running(informer):
        await recorder.wait_count(1)
        await wait_until(lambda: len(fake.watches) == 1)
        fake.delete("a")
        await recorder.wait_count(2)
    assert recorder.events[-1] == ("delete", "a", False)
    assert recorder.objects[-1]["metadata"]["resourceVersion"] == "102"
    assert len(informer.store) == 0


async def test_a_relist_after_gone_recovers_missed_changes_and_deletes(fake: FakeCluster) -> None:
    """After 410, the re-list delivers missed creates, updates, and unknown-state deletes."""
    fake.put("kept")
    fake.put("changed", data={"v": "1"})
    fake.put("deleted")
    informer = make_informer(fake)
    recorder = Recorder()
    informer.add_listener(recorder, dict)
    async with running(informer):
        await recorder.wait_count(3)
        await wait_until(lambda: len(fake.watches) == 1)
        fake.hold_watches()
        fake.drop_watches()
        fake.put("changed", data={"v": "2"})
        fake.delete("deleted")
        fake.put("created")
        fake.compact()
        fake.release_watches()
        await recorder.wait_count(6)
        status = informer.status()
    assert sorted(recorder.events[3:]) == [
        ("add", "created", False),
        ("delete", "deleted", True),
        ("update", "changed", ("102", "104")),
    ]
    assert status.relists == 1
    assert sorted(key[1] for key, _ in informer.store.items()) == ["changed", "created", "kept"]


async def test_changes_made_while_a_watch_was_down_arrive_after_reconnect(
    fake: FakeCluster,
) -> None:
    """A dropped watch resumes from its version and delivers what happened meanwhile."""
    informer = make_informer(fake)
    recorder = Recorder()
    informer.add_listener(recorder, dict)
    async with running(informer):
        await informer.wait_synced()
        await wait_until(lambda: len(fake.watches) == 1)
        fake.hold_watches()
        fake.drop_watches()
        fake.put("a")
        fake.put("a")
        fake.delete("a")
        fake.release_watches()
        await recorder.wait_count(3)
    assert recorder.events == [
        ("add", "a", False),
        ("update", "a", ("101", "102")),
        ("delete", "a", False),
    ]
    assert informer.status().relists == 0


async def test_a_failing_handler_is_counted_and_stops_nothing(fake: FakeCluster) -> None:
    """A handler that raises is logged and counted; it and others keep getting events."""
    calls: list[str] = []

    def explode(obj: dict[str, Any], initial: bool) -> None:
        calls.append(obj["metadata"]["name"])
        raise RuntimeError("handler bug")

    fake.put("a")
    informer = make_informer(fake)
    registration_listener = informer.add_listener(
        ResourceEventHandlerFuncs[dict[str, Any]](add_func=explode), dict
    )
    recorder = Recorder()
    informer.add_listener(recorder, dict)
    async with running(informer):
        await recorder.wait_count(1)
        await wait_until(lambda: len(fake.watches) == 1)
        fake.put("b")
        await recorder.wait_count(2)
        await wait_until(lambda: len(calls) == 2)
        status = informer.status()
    assert calls == ["a", "b"]
    assert registration_listener.errors == 2
    assert status.handler_errors == 2
    assert status.healthy


async def test_a_slow_handler_does_not_hold_up_other_handlers(fake: FakeCluster) -> None:
    """Each handler runs from its own queue: a blocked one does not delay the rest."""
    release = asyncio.Event()

    async def blocked(obj: dict[str, Any], initial: bool) -> None:
        await release.wait()

    fake.put("a")
    fake.put("b")
    informer = make_informer(fake)
    slow = informer.add_listener(ResourceEventHandlerFuncs[dict[str, Any]](add_func=blocked), dict)
    recorder = Recorder()
    informer.add_listener(recorder, dict)
    async with running(informer):
        await recorder.wait_count(2)
        assert slow.backlog >= 1
        release.set()
        await wait_until(lambda: slow.backlog == 0)


async def test_a_late_handler_gets_every_cached_object_as_initial_adds(fake: FakeCluster) -> None:
    """A handler added after sync is first given the cached objects, flagged initial."""
    fake.put("a")
    fake.put("b")
    informer = make_informer(fake)
    async with running(informer):
        await informer.wait_synced()
        recorder = Recorder()
        view = Informer(informer, dict)
        registration = view.add_event_handler(recorder)
        async with asyncio.timeout(5):
            await registration.wait_synced()
        assert registration.synced()
    assert recorder.named("add") == [("a", True), ("b", True)]


async def test_a_handler_is_synced_only_once_the_first_list_reached_it(fake: FakeCluster) -> None:
    """A registration made before the list is not synced until the list was delivered."""
    fake.put("a")
    fake.hold_watches()
    fake.fail_next("list", ServiceUnavailableError(code=503))
    informer = make_informer(fake)
    recorder = Recorder()
    registration = Informer(informer, dict).add_event_handler(recorder)
    async with running(informer):
        await wait_until(lambda: informer.status().last_error is not None)
        assert not registration.synced()
        async with asyncio.timeout(5):
            await registration.wait_synced()
    assert recorder.events == [("add", "a", True)]


async def test_resync_redelivers_every_object_as_an_update_of_itself() -> None:
    """After the jittered resync period, every object comes again with equal versions."""
    from .fakes import FakeCluster

    fake = FakeCluster()
    fake.put("a")
    fake.put("b")
    clock = FakeClock()
    informer = make_informer(fake, clock=clock, resync_period=100.0)
    recorder = Recorder()
    informer.add_listener(recorder, dict)
    async with running(informer):
        await recorder.wait_count(2)
        clock.advance(89.0)
        await asyncio.sleep(0)
        assert len(recorder.events) == 2
        clock.advance(22.0)
        await recorder.wait_count(4)
    assert sorted(recorder.events[2:]) == [
        ("update", "a", ("101", "101")),
        ("update", "b", ("102", "102")),
    ]


async def test_resync_off_delivers_no_resync() -> None:
    """With resync_period None, no amount of time redelivers an unchanged object."""
    from .fakes import FakeCluster

    fake = FakeCluster()
    fake.put("a")
    clock = FakeClock()
    informer = make_informer(fake, clock=clock, resync_period=None)
    recorder = Recorder()
    informer.add_listener(recorder, dict)
    async with running(informer):
        await recorder.wait_count(1)
        clock.advance(100 * 3600.0)
        fake.put("b")
        await recorder.wait_count(2)
    assert recorder.events == [("add", "a", True), ("add", "b", False)]


async def test_the_transform_runs_before_objects_are_stored(fake: FakeCluster) -> None:
    """With strip_managed_fields, neither handlers nor the store see managedFields."""
    fake.put("a")
    informer = make_informer(fake, transform=strip_managed_fields)
    recorder = Recorder()
    informer.add_listener(recorder, dict)
    async with running(informer):
        await recorder.wait_count(1)
    assert "managedFields" not in recorder.objects[0]["metadata"]
    assert b"managedFields" not in next(iter(informer.store.items()))[1].data


async def test_metadata_only_informers_keep_nothing_but_metadata(fake: FakeCluster) -> None:
    """A metadata-only informer stores apiVersion, kind and metadata, nothing else."""
    fake.put("a", data={"big": "x" * 1000}, labels={"app": "web"})
    informer = make_informer(fake, metadata_only=True)
    recorder = Recorder()
    informer.add_listener(recorder, dict)
    async with running(informer):
        await recorder.wait_count(1)
    obj = recorder.objects[0]
    assert set(obj) == {"apiVersion", "kind", "metadata"}
    assert obj["kind"] == "ConfigMap"
    assert obj["metadata"]["labels"] == {"app": "web"}


async def test_an_unserved_type_is_retried_until_it_appears(fake: FakeCluster) -> None:
    """While the type is not served the informer keeps resolving; it syncs once it is."""
    fake.served = False
    fake.put("a")
    informer = make_informer(fake)
    async with running(informer):
        await wait_until(lambda: informer.status().last_error is not None)
        status = informer.status()
        assert status.state == "resolving"
        assert not status.synced
        assert "cannot find v1/ConfigMap on the API server" in (status.last_error or "")
        fake.served = True
        async with asyncio.timeout(5):
            await informer.wait_synced()
    assert len(informer.store) == 1


async def test_an_informer_failing_too_long_turns_unhealthy_then_recovers() -> None:
    """Health and its gauge drop after unhealthy_after seconds of failure, and come back."""
    from .fakes import FakeCluster

    fake = FakeCluster()
    fake.put("a")
    clock = FakeClock()
    informer = make_informer(
        fake,
        clock=clock,
        unhealthy_after=30.0,
        backoff=BackoffPolicy(initial=10.0, maximum=10.0, jitter=0.0),
    )
    for _ in range(50):
        fake.fail_next("list", ServiceUnavailableError(code=503, message="down"))
    async with running(informer):
        await wait_until(lambda: informer.status().last_error is not None)
        clock.advance(29.0)
        assert informer.healthy()
        assert gauge("pyctrl_informer_healthy") == 1.0
        clock.advance(2.0)
        assert not informer.healthy()
        assert gauge("pyctrl_informer_healthy") == 0.0
        assert gauge("pyctrl_informer_synced") == 0.0
        fake.failures.clear()
        clock.advance(10.0)
        async with asyncio.timeout(5):
            await informer.wait_synced()
        await wait_until(informer.healthy)
        assert gauge("pyctrl_informer_healthy") == 1.0
        assert gauge("pyctrl_informer_synced") == 1.0


async def test_wait_synced_times_out_naming_the_type_and_its_last_error(
    fake: FakeCluster,
) -> None:
    """Not synced in time raises CacheSyncTimeoutError with the type and the failure."""
    for _ in range(1000):
        fake.fail_next("list", ServiceUnavailableError(code=503, message="overloaded"))
    informer = make_informer(fake)
    async with running(informer):
        await wait_until(lambda: informer.status().last_error is not None)
        with pytest.raises(CacheSyncTimeoutError, match=r"v1/ConfigMap.*overloaded"):
            await informer.wait_synced(timeout=0.05)


async def test_watched_namespaces_get_one_reflector_each(fake: FakeCluster) -> None:
    """With namespaces configured, only those are listed, watched and cached."""
    fake.put("a", namespace="one")
    fake.put("b", namespace="two")
    fake.put("c", namespace="three")
    informer = make_informer(fake, namespaces=("one", "two"))
    recorder = Recorder()
    informer.add_listener(recorder, dict)
    async with running(informer):
        await informer.wait_synced()
        await wait_until(lambda: len(fake.watches) == 2)
        fake.put("d", namespace="three")
        fake.put("e", namespace="two")
        await recorder.wait_count(3)
    assert sorted(informer.store.namespaces()) == ["one", "two"]
    assert sorted(name for name, _ in recorder.named("add")) == ["a", "b", "e"]
    assert sorted(call["namespace"] for call in fake.list_calls) == ["one", "two"]


async def test_handlers_cannot_corrupt_the_cache_or_each_other(fake: FakeCluster) -> None:
    """An object a handler changes is its own copy: the store and other handlers keep theirs."""

    def vandal(obj: dict[str, Any], initial: bool) -> None:
        obj["data"]["k"] = "vandalised"

    fake.put("a", data={"k": "v"})
    informer = make_informer(fake)
    informer.add_listener(ResourceEventHandlerFuncs[dict[str, Any]](add_func=vandal), dict)
    recorder = Recorder()
    informer.add_listener(recorder, dict)
    async with running(informer):
        await recorder.wait_count(1)
    assert recorder.objects[0]["data"] == {"k": "v"}
    entry = informer.store.get(("default", "a"))
    assert entry is not None
    assert informer.decode_as(entry, dict)["data"] == {"k": "v"}


async def test_a_typed_view_hands_out_model_objects(fake: FakeCluster) -> None:
    """Handlers added through an Informer of V1ConfigMap receive V1ConfigMap objects."""
    fake.put("a", data={"k": "v"})
    informer = make_informer(fake)
    got: list[V1ConfigMap] = []
    view = Informer(informer, V1ConfigMap)
    view.add_event_handler(
        ResourceEventHandlerFuncs[V1ConfigMap](add_func=lambda obj, initial: got.append(obj))
    )
    async with running(informer):
        await wait_until(lambda: len(got) == 1)
    assert isinstance(got[0], V1ConfigMap)
    assert got[0].data == {"k": "v"}


async def test_a_removed_handler_gets_nothing_more(fake: FakeCluster) -> None:
    """After remove(), a handler receives no further events."""
    informer = make_informer(fake)
    removed, kept = Recorder(), Recorder()
    view = Informer(informer, dict)
    registration = view.add_event_handler(removed)
    view.add_event_handler(kept)
    async with running(informer):
        await informer.wait_synced()
        await wait_until(lambda: len(fake.watches) == 1)
        view.remove_event_handler(registration)
        fake.put("a")
        await kept.wait_count(1)
    assert removed.events == []


def test_add_event_handler_refuses_objects_that_are_not_handlers(fake: FakeCluster) -> None:
    """Passing something without add/update/delete raises TypeError naming what is missing."""
    view = Informer(make_informer(fake), dict)
    with pytest.raises(TypeError, match=r"no add\(\) method"):
        view.add_event_handler(object())  # type: ignore[arg-type]


async def test_select_filters_by_namespace_labels_names_and_indexes(fake: FakeCluster) -> None:
    """select() combines namespace, label selector, metadata.name and field indexes."""
    fake.put("a", namespace="one", labels={"app": "web"}, data={"node": "n1"})
    fake.put("b", namespace="one", labels={"app": "db"}, data={"node": "n1"})
    fake.put("c", namespace="two", labels={"app": "web"}, data={"node": "n2"})
    informer = make_informer(fake)
    informer.add_index("data.node", lambda obj: [obj["data"]["node"]])
    async with running(informer):
        await informer.wait_synced()

    def names(**kwargs: Any) -> list[str]:
        kwargs.setdefault("namespace", None)
        kwargs.setdefault("labels", None)
        kwargs.setdefault("fields", [])
        return [key[1] for key, _ in informer.select(**kwargs)]

    assert names() == ["a", "b", "c"]
    assert names(namespace="one") == ["a", "b"]
    assert names(labels=parse("app=web")) == ["a", "c"]
    assert names(fields=[("data.node", "n1")]) == ["a", "b"]
    assert names(fields=[("data.node", "n1")], labels=parse("app=web")) == ["a"]
    assert names(fields=[("metadata.name", "c")]) == ["c"]
    assert names(fields=[("metadata.namespace", "two")]) == ["c"]
    with pytest.raises(ValueError, match=r"'spec.x'.*index_field"):
        names(fields=[("spec.x", "1")])


async def test_status_reports_state_counts_and_versions(fake: FakeCluster) -> None:
    """status() says what the informer does, how many objects it holds and how it fared."""
    fake.put("a")
    informer = make_informer(fake)
    assert informer.status().state == "pending"
    async with running(informer):
        await informer.wait_synced()
        await wait_until(lambda: informer.status().state == "watching")
        status = informer.status()
        assert status.synced
        assert status.healthy
        assert status.objects == 1
        assert status.resource_version == "101"
        assert status.last_sync_time is not None
        assert status.last_error is None
    assert informer.status().state == "stopped"
    assert not informer.healthy()
