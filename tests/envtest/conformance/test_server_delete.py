"""Deletion: finalizers, preconditions, propagation, garbage collection and namespaces."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from kubernetes_asyncio import client as k8s

from pyctrl.envtest import Environment
from tests.envtest.conftest import Kube, own

if TYPE_CHECKING:
    from collections.abc import Callable


def cm(name: str, **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, **meta}, "data": {}}


def owner_ref(owner: dict[str, Any], *, block: bool = False) -> dict[str, Any]:
    ref = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
    }
    if block:
        ref["blockOwnerDeletion"] = True
    return ref


async def wait_for(kube: Kube, path: str, done: Callable[[dict[str, Any] | None], bool]) -> None:
    """Wait (at most 20 s) until ``done`` holds for the object at ``path`` (None: deleted)."""
    collection, name = path.rsplit("/", 1)
    status, obj, _ = await kube.get(path)
    current = obj if status == 200 else None
    if done(current):
        return
    assert current is not None

    def stop(events: list[dict[str, Any]]) -> bool:
        event = events[-1]
        return done(None if event["type"] == "DELETED" else event["object"])

    params = {
        "resourceVersion": current["metadata"]["resourceVersion"],
        "fieldSelector": f"metadata.name={name}",
    }
    async with asyncio.timeout(20):
        await kube.watch_lines(collection, stop=stop, params=params)


async def wait_gone(kube: Kube, path: str) -> None:
    """Wait until the object at ``path`` is deleted."""
    await wait_for(kube, path, lambda obj: obj is None)


@pytest.mark.needs_builtin_kinds
async def test_delete_answers_status_success(kube: Kube, ns: str) -> None:
    """Deleting a ConfigMap answers a Success Status naming it."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    obj = await kube.create_ok(path, cm("d"))
    status, body, _ = await kube.delete(f"{path}/d")
    assert status == 200
    assert body["status"] == "Success"
    assert body["details"] == {"name": "d", "kind": "configmaps", "uid": obj["metadata"]["uid"]}
    status, _, _ = await kube.get(f"{path}/d")
    assert status == 404


@pytest.mark.needs_builtin_kinds
async def test_delete_missing_is_404(kube: Kube, ns: str) -> None:
    """Deleting a missing object answers NotFound."""
    status, body, _ = await kube.delete(f"/api/v1/namespaces/{ns}/configmaps/none")
    assert status == 404
    assert body["message"] == 'configmaps "none" not found'


@pytest.mark.needs_builtin_kinds
async def test_finalizers_hold_the_object(kube: Kube, ns: str) -> None:
    """An object with finalizers gets a deletionTimestamp and stays until they are removed."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, cm("f", finalizers=["example.com/hold"]))
    status, body, _ = await kube.delete(f"{path}/f")
    assert status == 200
    assert body["metadata"]["deletionTimestamp"]
    assert body["metadata"]["deletionGracePeriodSeconds"] == 0
    still = await kube.get_ok(f"{path}/f")
    assert still["metadata"]["finalizers"] == ["example.com/hold"]
    status, _, _ = await kube.patch(f"{path}/f", {"metadata": {"finalizers": None}})
    assert status == 200
    status, _, _ = await kube.get(f"{path}/f")
    assert status == 404


@pytest.mark.needs_builtin_kinds
async def test_no_new_finalizers_while_deleting(kube: Kube, ns: str) -> None:
    """Adding a finalizer to an object being deleted is Forbidden (422)."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, cm("f", finalizers=["example.com/a"]))
    await kube.delete(f"{path}/f")
    patch = {"metadata": {"finalizers": ["example.com/a", "example.com/b"]}}
    status, body, _ = await kube.patch(f"{path}/f", patch)
    assert status == 422
    cause = body["details"]["causes"][0]
    assert cause["reason"] == "FieldValueForbidden"
    assert cause["field"] == "metadata.finalizers"
    assert "no new finalizers can be added if the object is being deleted" in cause["message"]
    await kube.patch(f"{path}/f", {"metadata": {"finalizers": None}})


@pytest.mark.needs_builtin_kinds
async def test_last_finalizer_removal_emits_deleted(kube: Kube, ns: str) -> None:
    """Removing the last finalizer deletes the object: watchers see MODIFIED then DELETED."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    created = await kube.create_ok(path, cm("w", finalizers=["example.com/a"]))
    rv = created["metadata"]["resourceVersion"]
    events: list[dict[str, Any]] = []

    async def collect() -> None:
        events.extend(
            await kube.watch_lines(
                path, stop=lambda e: e[-1]["type"] == "DELETED", params={"resourceVersion": rv}
            )
        )

    task = asyncio.create_task(collect())
    await kube.delete(f"{path}/w")
    await kube.patch(f"{path}/w", {"metadata": {"finalizers": None}})
    async with asyncio.timeout(5):
        await task
    assert [e["type"] for e in events] == ["MODIFIED", "DELETED"]
    assert events[0]["object"]["metadata"]["deletionTimestamp"]


@pytest.mark.needs_builtin_kinds
async def test_uid_precondition_mismatch_conflicts(kube: Kube, ns: str) -> None:
    """A delete whose uid precondition does not match answers 409."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, cm("p"))
    body = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "other"}}
    status, resp, _ = await kube.delete(f"{path}/p", body)
    assert status == 409
    assert "the UID in the precondition (other) does not match the UID in record" in resp["message"]


@pytest.mark.needs_builtin_kinds
async def test_resource_version_precondition_mismatch_conflicts(kube: Kube, ns: str) -> None:
    """A delete whose resourceVersion precondition is stale answers 409."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, cm("p"))
    body = {"preconditions": {"resourceVersion": "1"}}
    status, resp, _ = await kube.delete(f"{path}/p", body)
    assert status == 409
    assert resp["reason"] == "Conflict"


@pytest.mark.needs_builtin_kinds
async def test_dry_run_delete_keeps_object(kube: Kube, ns: str) -> None:
    """dryRun=All on delete answers as if deleted but keeps the object."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, cm("dr"))
    status, _, _ = await kube.delete(f"{path}/dr", params={"dryRun": "All"})
    assert status == 200
    await kube.get_ok(f"{path}/dr")


@pytest.mark.needs_builtin_kinds
async def test_delete_collection_with_label_selector(kube: Kube, ns: str) -> None:
    """DELETE on a collection removes only the selected objects."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, cm("a", labels={"del": "yes"}))
    await kube.create_ok(path, cm("b", labels={"del": "no"}))
    status, body, _ = await kube.delete(path, params={"labelSelector": "del=yes"})
    assert status == 200
    assert body["kind"] == "ConfigMapList"
    remaining = await kube.get_ok(path)
    assert own(i["metadata"]["name"] for i in remaining["items"]) == ["b"]


@pytest.mark.needs_controllers
async def test_gc_deletes_dependents_of_deleted_owner(kube: Kube, ns: str) -> None:
    """Background deletion: the garbage collector deletes dependents after the owner."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    owner = await kube.create_ok(path, cm("owner"))
    await kube.create_ok(path, cm("child", ownerReferences=[owner_ref(owner)]))
    await kube.delete(f"{path}/owner")
    await wait_gone(kube, f"{path}/child")


@pytest.mark.needs_controllers
async def test_gc_deletes_objects_with_dangling_owner(kube: Kube, ns: str) -> None:
    """An object whose owner uid does not exist is collected."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    ghost = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ghost", "uid": "00000000-0000-0000-0000-000000000000"},
    }
    await kube.create_ok(path, cm("orphaned", ownerReferences=[owner_ref(ghost)]))
    await wait_gone(kube, f"{path}/orphaned")


def _owners(obj: dict[str, Any] | None) -> list[str]:
    assert obj is not None, "deleted"
    return [r["name"] for r in obj["metadata"].get("ownerReferences") or ()]


@pytest.mark.needs_controllers
async def test_gc_keeps_dependents_with_a_live_owner(kube: Kube, ns: str) -> None:
    """Dependents with one live owner stay; the dangling reference is removed."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    first = await kube.create_ok(path, cm("first"))
    second = await kube.create_ok(path, cm("second"))
    refs = [owner_ref(first), owner_ref(second)]
    await kube.create_ok(path, cm("child", ownerReferences=refs))
    await kube.delete(f"{path}/first")
    await wait_for(kube, f"{path}/child", lambda obj: _owners(obj) == ["second"])


@pytest.mark.needs_controllers
async def test_orphan_propagation_strips_owner_references(kube: Kube, ns: str) -> None:
    """propagationPolicy=Orphan keeps dependents and removes their reference to the owner."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    owner = await kube.create_ok(path, cm("owner"))
    await kube.create_ok(path, cm("child", ownerReferences=[owner_ref(owner)]))
    status, body, _ = await kube.delete(f"{path}/owner", {"propagationPolicy": "Orphan"})
    assert status == 200
    assert "orphan" in body["metadata"]["finalizers"]
    await wait_gone(kube, f"{path}/owner")
    # The collector removes the orphan finalizer only after stripping the references.
    child = await kube.get_ok(f"{path}/child")
    assert "ownerReferences" not in child["metadata"]


@pytest.mark.needs_controllers
async def test_foreground_deletion_deletes_dependents_first(kube: Kube, ns: str) -> None:
    """Foreground: the owner waits (foregroundDeletion finalizer) until blocking dependents go."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    owner = await kube.create_ok(path, cm("owner"))
    await kube.create_ok(
        path,
        cm("child", ownerReferences=[owner_ref(owner, block=True)], finalizers=["example.com/x"]),
    )
    status, body, _ = await kube.delete(f"{path}/owner", {"propagationPolicy": "Foreground"})
    assert status == 200
    assert body["metadata"]["finalizers"] == ["foregroundDeletion"]
    await wait_for(
        kube,
        f"{path}/child",
        lambda obj: obj is not None and bool(obj["metadata"].get("deletionTimestamp")),
    )
    held = await kube.get_ok(f"{path}/owner")
    assert held["metadata"]["deletionTimestamp"]
    await kube.patch(f"{path}/child", {"metadata": {"finalizers": None}})
    await wait_gone(kube, f"{path}/owner")


@pytest.mark.embedded_only
async def test_gc_can_be_switched_off() -> None:
    """With the garbage collector off, dependents of a deleted owner stay."""
    async with (
        Environment(garbage_collector=False) as env,
        k8s.ApiClient(env.config) as api,
    ):
        assert env.server is not None
        kube = Kube(api)
        path = "/api/v1/namespaces/default/configmaps"
        owner = await kube.create_ok(path, cm("owner"))
        await kube.create_ok(path, cm("child", ownerReferences=[owner_ref(owner)]))
        await kube.delete(f"{path}/owner")
        await env.server.wait_idle()
        await kube.get_ok(f"{path}/child")


@pytest.mark.needs_controllers
async def test_namespace_deletion_removes_content_then_namespace(kube: Kube, ns: str) -> None:
    """A deleted namespace is Terminating, its content is deleted, then it is removed."""
    await kube.create_ok(f"/api/v1/namespaces/{ns}/configmaps", cm("a"))
    status, body, _ = await kube.delete(f"/api/v1/namespaces/{ns}")
    assert status == 200
    assert body["status"]["phase"] == "Terminating"
    await wait_gone(kube, f"/api/v1/namespaces/{ns}")
    status, _, _ = await kube.get(f"/api/v1/namespaces/{ns}/configmaps/a")
    assert status == 404


@pytest.mark.needs_builtin_kinds
async def test_terminating_namespace_rejects_creates(kube: Kube, ns: str) -> None:
    """Creating in a namespace that is being deleted is Forbidden."""
    await kube.create_ok(
        f"/api/v1/namespaces/{ns}/configmaps", cm("held", finalizers=["example.com/x"])
    )
    await kube.delete(f"/api/v1/namespaces/{ns}")
    status, body, _ = await kube.post(f"/api/v1/namespaces/{ns}/configmaps", cm("new"))
    assert status == 403
    assert body["reason"] == "Forbidden"
    assert body["message"] == (
        f'configmaps "new" is forbidden: unable to create new content in namespace {ns} because '
        "it is being terminated"
    )
    assert body["details"]["causes"][0]["reason"] == "NamespaceTerminating"
    await kube.patch(f"/api/v1/namespaces/{ns}/configmaps/held", {"metadata": {"finalizers": None}})


def _conditions(obj: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    assert obj is not None, "deleted"
    return {c["type"]: c for c in obj.get("status", {}).get("conditions") or ()}


@pytest.mark.needs_controllers
async def test_namespace_waits_for_finalized_content(kube: Kube, ns: str) -> None:
    """A namespace with content held by finalizers stays Terminating with conditions saying so."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, cm("held", finalizers=["example.com/x"]))
    await kube.delete(f"/api/v1/namespaces/{ns}")
    await wait_for(
        kube,
        f"/api/v1/namespaces/{ns}",
        lambda obj: (
            _conditions(obj).get("NamespaceFinalizersRemaining", {}).get("status") == "True"
        ),
    )
    namespace = await kube.get_ok(f"/api/v1/namespaces/{ns}")
    assert namespace["status"]["phase"] == "Terminating"
    assert (
        "example.com/x in 1 resource instances"
        in _conditions(namespace)["NamespaceFinalizersRemaining"]["message"]
    )
    await kube.patch(f"{path}/held", {"metadata": {"finalizers": None}})
    await wait_gone(kube, f"/api/v1/namespaces/{ns}")


@pytest.mark.needs_builtin_kinds
async def test_default_namespace_cannot_be_deleted(kube: Kube) -> None:
    """The default namespace is immortal."""
    status, body, _ = await kube.delete("/api/v1/namespaces/default")
    assert status == 403
    assert body["message"] == 'namespaces "default" is forbidden: this namespace may not be deleted'


@pytest.mark.needs_builtin_kinds
async def test_scheduled_pod_is_deleted_gracefully(kube: Kube, ns: str) -> None:
    """A pod bound to a node gets a grace period instead of disappearing at once."""
    path = f"/api/v1/namespaces/{ns}/pods"
    pod = {
        "metadata": {"name": "p"},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "busybox"}]},
    }
    await kube.create_ok(path, pod)
    status, body, _ = await kube.delete(f"{path}/p")
    assert status == 200
    assert body["metadata"]["deletionGracePeriodSeconds"] == 30
    status, _, _ = await kube.delete(f"{path}/p", {"gracePeriodSeconds": 0})
    assert status == 200
    await wait_gone(kube, f"{path}/p")


@pytest.mark.needs_builtin_kinds
async def test_unscheduled_pod_is_deleted_at_once(kube: Kube, ns: str) -> None:
    """A pod without a node is deleted immediately and the deleted pod is returned."""
    path = f"/api/v1/namespaces/{ns}/pods"
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    await kube.create_ok(path, pod)
    status, body, _ = await kube.delete(f"{path}/p")
    assert status == 200
    assert body["kind"] == "Pod"
    status, _, _ = await kube.get(f"{path}/p")
    assert status == 404
