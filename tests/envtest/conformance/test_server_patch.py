"""Patches of every type, server-side apply, and the status and scale subresources."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.envtest.conftest import Kube


def deployment(name: str, replicas: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]},
        },
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": spec}


@pytest.mark.needs_builtin_kinds
async def test_merge_patch_sets_and_removes_keys(kube: Kube, ns: str) -> None:
    """A JSON merge patch sets keys and removes those set to null."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, {"metadata": {"name": "m"}, "data": {"a": "1", "b": "2"}})
    status, body, _ = await kube.patch(f"{path}/m", {"data": {"a": None, "c": "3"}})
    assert status == 200
    assert body["data"] == {"b": "2", "c": "3"}


@pytest.mark.needs_builtin_kinds
async def test_json_patch_operations(kube: Kube, ns: str) -> None:
    """A JSON patch applies its operations in order."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, {"metadata": {"name": "j"}, "data": {"a": "1"}})
    ops = [{"op": "add", "path": "/data/b", "value": "2"}, {"op": "remove", "path": "/data/a"}]
    status, body, _ = await kube.patch(f"{path}/j", ops, "json")
    assert status == 200
    assert body["data"] == {"b": "2"}


@pytest.mark.needs_builtin_kinds
async def test_json_patch_failed_test_is_422(kube: Kube, ns: str) -> None:
    """A JSON patch whose test operation fails is rejected and stores nothing."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, {"metadata": {"name": "j"}, "data": {"a": "1"}})
    ops = [{"op": "test", "path": "/data/a", "value": "2"}, {"op": "remove", "path": "/data/a"}]
    status, _body, _ = await kube.patch(f"{path}/j", ops, "json")
    assert status == 422
    stored = await kube.get_ok(f"{path}/j")
    assert stored["data"] == {"a": "1"}


@pytest.mark.needs_builtin_kinds
async def test_patch_with_resource_version_is_a_precondition(kube: Kube, ns: str) -> None:
    """A patch carrying an old resourceVersion conflicts."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    created = await kube.create_ok(path, {"metadata": {"name": "p"}, "data": {}})
    await kube.patch(f"{path}/p", {"data": {"x": "1"}})
    stale = {
        "metadata": {"resourceVersion": created["metadata"]["resourceVersion"]},
        "data": {"y": "1"},
    }
    status, body, _ = await kube.patch(f"{path}/p", stale)
    assert status == 409
    assert body["reason"] == "Conflict"


@pytest.mark.needs_builtin_kinds
async def test_strategic_merge_patch_merges_containers_by_name(kube: Kube, ns: str) -> None:
    """A strategic merge patch merges list items by their merge key."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    await kube.create_ok(path, deployment("s"))
    patch = {
        "spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "busybox"}]}}}
    }
    status, body, _ = await kube.patch(f"{path}/s", patch, "strategic")
    assert status == 200
    names = [c["name"] for c in body["spec"]["template"]["spec"]["containers"]]
    assert sorted(names) == ["app", "sidecar"]


@pytest.mark.needs_builtin_kinds
async def test_unknown_patch_type_is_415(kube: Kube, ns: str) -> None:
    """PATCH with a Content-Type that is no patch type is UnsupportedMediaType."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, {"metadata": {"name": "x"}})
    status, body, _ = await kube.request(
        "PATCH", f"{path}/x", body={"data": {}}, content_type="application/json"
    )
    assert status == 415
    assert body["reason"] == "UnsupportedMediaType"


async def test_patch_of_missing_object_is_404(kube: Kube, ns: str) -> None:
    """A merge patch of a missing object answers NotFound."""
    status, _body, _ = await kube.patch(f"/api/v1/namespaces/{ns}/configmaps/none", {"data": {}})
    assert status == 404


@pytest.mark.needs_builtin_kinds
async def test_apply_creates_and_records_apply_manager(kube: Kube, ns: str) -> None:
    """Server-side apply of a missing object creates it, owned by the Apply manager."""
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ssa"},
        "data": {"a": "1"},
    }
    status, obj, _ = await kube.patch(
        f"/api/v1/namespaces/{ns}/configmaps/ssa", body, "apply", params={"fieldManager": "me"}
    )
    assert status == 201
    entries = obj["metadata"]["managedFields"]
    assert [(e["manager"], e["operation"]) for e in entries] == [("me", "Apply")]


@pytest.mark.needs_builtin_kinds
async def test_apply_without_field_manager_is_invalid(kube: Kube, ns: str) -> None:
    """An apply patch needs a fieldManager."""
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}}
    status, resp, _ = await kube.patch(f"/api/v1/namespaces/{ns}/configmaps/ssa", body, "apply")
    assert status == 422
    assert resp["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for '
        "apply patch"
    )


@pytest.mark.needs_builtin_kinds
async def test_apply_conflict_names_the_other_manager(kube: Kube, ns: str) -> None:
    """Applying a field another manager owns conflicts with 409 and a FieldManagerConflict cause."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(
        path, {"metadata": {"name": "c"}, "data": {"a": "1"}}, params={"fieldManager": "writer"}
    )
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "2"}}
    status, resp, _ = await kube.patch(
        f"{path}/c", body, "apply", params={"fieldManager": "applier"}
    )
    assert status == 409
    assert resp["reason"] == "Conflict"
    assert resp["message"] == (
        'Apply failed with 1 conflict: conflict with "writer" using v1: .data.a'
    )
    assert resp["details"]["causes"][0]["reason"] == "FieldManagerConflict"
    status, forced, _ = await kube.patch(
        f"{path}/c", body, "apply", params={"fieldManager": "applier", "force": "true"}
    )
    assert status == 200
    assert forced["data"] == {"a": "2"}


@pytest.mark.needs_builtin_kinds
async def test_force_on_non_apply_patch_is_invalid(kube: Kube, ns: str) -> None:
    """force is only allowed for apply patches."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, {"metadata": {"name": "x"}})
    status, _, _ = await kube.patch(f"{path}/x", {"data": {}}, params={"force": "true"})
    assert status == 422


@pytest.mark.needs_builtin_kinds
async def test_status_write_changes_only_status(kube: Kube, ns: str) -> None:
    """Writes to /status change status and ignore spec and labels."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    created = await kube.create_ok(path, deployment("st"))
    body = dict(created)
    body["spec"] = dict(created["spec"], replicas=9)
    body["metadata"] = dict(created["metadata"], labels={"x": "y"})
    body["status"] = {"replicas": 1, "readyReplicas": 1}
    status, updated, _ = await kube.put(f"{path}/st/status", body)
    assert status == 200
    assert updated["status"] == {"replicas": 1, "readyReplicas": 1}
    assert updated["spec"]["replicas"] == 1
    assert "labels" not in updated["metadata"]
    assert updated["metadata"]["generation"] == 1


@pytest.mark.needs_builtin_kinds
async def test_main_resource_write_keeps_status(kube: Kube, ns: str) -> None:
    """Writes to the main resource ignore status changes for types with a status subresource."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    await kube.create_ok(path, deployment("ms"))
    await kube.patch(f"{path}/ms/status", {"status": {"replicas": 2}})
    status, body, _ = await kube.patch(
        f"{path}/ms", {"status": {"replicas": 7}, "spec": {"replicas": 3}}
    )
    assert status == 200
    assert body["status"] == {"replicas": 2}
    assert body["spec"]["replicas"] == 3


@pytest.mark.needs_builtin_kinds
async def test_create_resets_status(kube: Kube, ns: str) -> None:
    """Status sent with a create is dropped for types with a status subresource."""
    body = deployment("cs")
    body["status"] = {"replicas": 5}
    obj = await kube.create_ok(f"/apis/apps/v1/namespaces/{ns}/deployments", body)
    assert obj["status"] == {}


@pytest.mark.needs_builtin_kinds
async def test_status_patch_on_type_without_status_is_404(kube: Kube, ns: str) -> None:
    """ConfigMaps have no status subresource."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, {"metadata": {"name": "x"}})
    status, _, _ = await kube.patch(f"{path}/x/status", {"data": {}})
    assert status == 404


@pytest.mark.needs_builtin_kinds
async def test_scale_subresource_reads_and_writes_replicas(kube: Kube, ns: str) -> None:
    """GET scale answers autoscaling/v1 Scale; PUT scale sets spec.replicas."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    await kube.create_ok(path, deployment("sc", replicas=2))
    scale = await kube.get_ok(f"{path}/sc/scale")
    assert scale["kind"] == "Scale"
    assert scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"] == {"replicas": 2}
    assert scale["status"]["selector"] == "app=sc"
    scale["spec"]["replicas"] = 5
    status, updated, _ = await kube.put(f"{path}/sc/scale", scale)
    assert status == 200
    assert updated["spec"]["replicas"] == 5
    deploy = await kube.get_ok(f"{path}/sc")
    assert deploy["spec"]["replicas"] == 5
    assert deploy["metadata"]["generation"] == 2


@pytest.mark.needs_builtin_kinds
async def test_scale_patch(kube: Kube, ns: str) -> None:
    """A merge patch of the scale subresource changes the replicas."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    await kube.create_ok(path, deployment("sp"))
    status, body, _ = await kube.patch(f"{path}/sp/scale", {"spec": {"replicas": 3}})
    assert status == 200
    assert body["spec"]["replicas"] == 3


@pytest.mark.needs_builtin_kinds
async def test_negative_scale_is_invalid(kube: Kube, ns: str) -> None:
    """A Scale with negative replicas is Invalid."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    await kube.create_ok(path, deployment("neg"))
    status, body, _ = await kube.patch(f"{path}/neg/scale", {"spec": {"replicas": -1}})
    assert status == 422
    assert body["details"]["causes"][0]["field"] == "spec.replicas"
