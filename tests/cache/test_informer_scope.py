"""An informer's namespaces changed while it runs (SharedInformer.set_scope), over the fake."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .conftest import Recorder, make_informer, running, wait_until

if TYPE_CHECKING:
    from .fakes import FakeCluster


async def test_a_namespace_added_is_listed_and_watched(fake: FakeCluster) -> None:
    """set_scope with a new namespace starts its list and watch; its objects arrive as adds."""
    fake.put("a", namespace="one")
    fake.put("b", namespace="two")
    informer = make_informer(fake, namespaces=("one",))
    recorder = Recorder()
    informer.add_listener(recorder, dict)
    async with running(informer):
        await informer.wait_synced()
        informer.set_scope(["one", "two"])
        await recorder.wait_for(lambda: ("add", "b", False) in recorder.events)
        await wait_until(lambda: len(fake.watches) == 2)
        fake.put("c", namespace="two")
        await recorder.wait_for(lambda: ("add", "c", False) in recorder.events)
        assert informer.namespace_synced("two")
    assert sorted(call["namespace"] for call in fake.list_calls) == ["one", "two"]
    assert informer.scope == ("one", "two")


async def test_a_namespace_dropped_leaves_with_deletes_and_its_watch_ends(
    fake: FakeCluster,
) -> None:
    """A namespace dropped leaves the store with a delete to each handler, and is unwatched."""
    fake.put("a", namespace="one")
    fake.put("b", namespace="two")
    informer = make_informer(fake, namespaces=("one", "two"))
    recorder = Recorder()
    informer.add_listener(recorder, dict)
    async with running(informer):
        await informer.wait_synced()
        await wait_until(lambda: len(fake.watches) == 2)
        informer.set_scope(["two"])
        await recorder.wait_for(lambda: ("delete", "a", False) in recorder.events)
        await wait_until(lambda: len(fake.watches) == 1)
        fake.put("late", namespace="one")  # no longer watched
        fake.put("b", namespace="two")
        await recorder.wait_for(lambda: len(recorder.named("update")) == 1)
        assert informer.store.namespaces() == ["two"]
        assert informer.status().healthy


async def test_an_empty_scope_holds_nothing_and_all_namespaces_brings_them_back(
    fake: FakeCluster,
) -> None:
    """An empty scope is synced with nothing cached; None (all namespaces) lists everything."""
    fake.put("a", namespace="one")
    fake.put("b", namespace="two")
    informer = make_informer(fake)
    informer.set_scope([])
    async with running(informer):
        await informer.wait_synced()
        assert len(informer.store) == 0
        assert fake.list_calls == []
        informer.set_scope(None)
        await wait_until(lambda: len(informer.store) == 2)
        assert informer.namespace_synced(None)
    assert [call["namespace"] for call in fake.list_calls] == [None]
