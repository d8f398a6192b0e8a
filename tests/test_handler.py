"""pyctrl.handler: from events to queued requests."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubernetes_asyncio.client import V1Deployment

from pyctrl import handler
from pyctrl.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent
from pyctrl.meta import GroupVersionKind
from pyctrl.reconcile import Request
from pyctrl.resource import CustomResource

if TYPE_CHECKING:
    from pyctrl.workqueue import Trigger


class Owner(CustomResource, group="example.com", version="v1"):
    pass


class ClusterOwner(CustomResource, group="example.com", version="v1", scope="Cluster"):
    pass


class RecordingQueue:
    """A fake queue that records what was added, with priorities."""

    def __init__(self) -> None:
        self.added: list[tuple[Request, int]] = []

    def add(self, item: Request, *, priority: int = 0, trigger: Trigger | None = None) -> None:
        self.added.append((item, priority))


def _obj(
    name: str = "a", rv: str = "1", owners: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "resourceVersion": rv}
    if owners:
        meta["ownerReferences"] = owners
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def _ref(
    kind: str, name: str, controller: bool = True, api: str = "example.com/v1"
) -> dict[str, Any]:
    return {"apiVersion": api, "kind": kind, "name": name, "uid": name, "controller": controller}


async def test_enqueue_for_object_with_priorities() -> None:
    """The object's own key is queued; initial-list creates and resyncs at low priority."""
    q = RecordingQueue()
    h = handler.EnqueueRequestForObject()
    await h.create(CreateEvent(_obj()), q)
    await h.create(CreateEvent(_obj(), is_in_initial_list=True), q)
    await h.update(UpdateEvent(_obj(rv="1"), _obj(rv="1")), q)
    await h.update(UpdateEvent(_obj(rv="1"), _obj(rv="2")), q)
    await h.delete(DeleteEvent(_obj()), q)
    await h.generic(GenericEvent(_obj("b")), q)
    key = Request("ns", "a")
    assert q.added == [
        (key, 0),
        (key, handler.LOW_PRIORITY),
        (key, handler.LOW_PRIORITY),
        (key, 0),
        (key, 0),
        (Request("ns", "b"), 0),
    ]


async def test_enqueue_for_owner_matches_group_kind_and_controller() -> None:
    """Only controller owners of the owner's group and kind are queued by default."""
    q = RecordingQueue()
    h = handler.EnqueueRequestForOwner(Owner)
    owners = [
        _ref("Owner", "ctrl"),
        _ref("Owner", "plain", controller=False),
        _ref("Owner", "other-group", api="other.com/v1"),
        _ref("Deployment", "deploy", api="apps/v1"),
    ]
    await h.create(CreateEvent(_obj(owners=owners)), q)
    assert q.added == [(Request("ns", "ctrl"), 0)]
    every = handler.EnqueueRequestForOwner(Owner, only_controller=False)
    q2 = RecordingQueue()
    await every.delete(DeleteEvent(_obj(owners=owners)), q2)
    assert [r for r, _ in q2.added] == [Request("ns", "ctrl"), Request("ns", "plain")]


async def test_enqueue_for_owner_on_update_reaches_old_and_new_owners() -> None:
    """A change of owner enqueues both the previous and the new owner, once each."""
    q = RecordingQueue()
    h = handler.EnqueueRequestForOwner(Owner)
    old = _obj(rv="1", owners=[_ref("Owner", "first")])
    new = _obj(rv="2", owners=[_ref("Owner", "second"), _ref("Owner", "first")])
    await h.update(UpdateEvent(old, new), q)
    assert [r for r, _ in q.added] == [Request("ns", "first"), Request("ns", "second")]


async def test_cluster_scoped_owner_has_no_namespace() -> None:
    """Requests for cluster-scoped owners carry an empty namespace."""
    q = RecordingQueue()
    await handler.EnqueueRequestForOwner(ClusterOwner).create(
        CreateEvent(_obj(owners=[_ref("ClusterOwner", "c")])), q
    )
    assert q.added == [(Request("", "c"), 0)]


async def test_owner_given_as_builtin_type_or_gvk() -> None:
    """Built-in owner types and explicit GVKs are matched by group and kind."""
    refs = [_ref("Deployment", "d", api="apps/v1")]
    for owner in (V1Deployment, GroupVersionKind("apps", "v1", "Deployment")):
        q = RecordingQueue()
        await handler.EnqueueRequestForOwner(owner).generic(GenericEvent(_obj(owners=refs)), q)
        assert q.added == [(Request("ns", "d"), 0)]


async def test_map_func_sync_and_async() -> None:
    """Map functions may be plain or coroutine functions; updates map old and new."""

    def plain(obj: Any) -> list[Request]:
        return [Request("ns", obj["metadata"]["name"] + "-owner")]

    async def coro(obj: Any) -> list[Request]:
        return [Request("ns", "all")]

    q = RecordingQueue()
    await handler.EnqueueRequestsFromMapFunc(plain).update(
        UpdateEvent(_obj("x", rv="1"), _obj("y", rv="2")), q
    )
    await handler.EnqueueRequestsFromMapFunc(coro).create(CreateEvent(_obj(), True), q)
    assert q.added == [
        (Request("ns", "x-owner"), 0),
        (Request("ns", "y-owner"), 0),
        (Request("ns", "all"), handler.LOW_PRIORITY),
    ]


async def test_funcs_adapter_ignores_missing_functions() -> None:
    """Funcs calls only the functions it was given."""
    q = RecordingQueue()

    async def on_delete(event: DeleteEvent[Any], queue: handler.Queue) -> None:
        queue.add(Request("ns", "deleted"), priority=0)

    h = handler.Funcs(on_delete=on_delete)
    assert isinstance(h, handler.EventHandler)
    await h.create(CreateEvent(_obj()), q)
    await h.delete(DeleteEvent(_obj()), q)
    assert q.added == [(Request("ns", "deleted"), 0)]
