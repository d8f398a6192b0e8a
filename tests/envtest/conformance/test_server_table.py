"""Table and PartialObjectMetadata responses, and events in both API groups."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.envtest.conftest import Kube

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
KUBECTL_TABLE = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)
META = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
META_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


def deployment(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]},
            },
        },
    }


@pytest.mark.needs_builtin_kinds
async def test_deployment_table_has_kubectl_columns(kube: Kube, ns: str) -> None:
    """Deployments render with NAME, READY, UP-TO-DATE, AVAILABLE and AGE columns."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    await kube.create_ok(path, deployment("web"))
    table = await kube.get_ok(path, accept=KUBECTL_TABLE)
    assert table["kind"] == "Table"
    assert table["apiVersion"] == "meta.k8s.io/v1"
    visible = [c["name"] for c in table["columnDefinitions"] if c["priority"] == 0]
    assert visible == ["Name", "Ready", "Up-to-date", "Available", "Age"]
    cells = table["rows"][0]["cells"]
    assert cells[:4] == ["web", "0/3", 0, 0]
    assert cells[5:7] == ["web", "nginx:1.25"]


@pytest.mark.needs_builtin_kinds
async def test_table_rows_carry_partial_metadata_by_default(kube: Kube, ns: str) -> None:
    """Rows include the object as PartialObjectMetadata unless includeObject says otherwise."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, {"metadata": {"name": "c"}, "data": {"a": "b"}})
    table = await kube.get_ok(path, accept=TABLE)
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    full = await kube.get_ok(path, accept=TABLE, params={"includeObject": "Object"})
    assert full["rows"][0]["object"]["data"] == {"a": "b"}
    bare = await kube.get_ok(path, accept=TABLE, params={"includeObject": "None"})
    assert "object" not in bare["rows"][0]


@pytest.mark.needs_builtin_kinds
async def test_single_object_table(kube: Kube, ns: str) -> None:
    """GET of one object as Table answers a one-row table."""
    table = await kube.get_ok(f"/api/v1/namespaces/{ns}", accept=TABLE)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Status", "Age"]
    assert table["rows"][0]["cells"][:2] == [ns, "Active"]


@pytest.mark.needs_builtin_kinds
async def test_service_table_shows_ports_and_cluster_ip(kube: Kube, ns: str) -> None:
    """Services render TYPE, CLUSTER-IP, EXTERNAL-IP and PORT(S) like kubectl."""
    path = f"/api/v1/namespaces/{ns}/services"
    svc = await kube.create_ok(path, {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}})
    table = await kube.get_ok(path, accept=TABLE)
    cells = table["rows"][0]["cells"]
    assert cells[:5] == ["s", "ClusterIP", svc["spec"]["clusterIP"], "<none>", "80/TCP"]


@pytest.mark.needs_builtin_kinds
async def test_partial_object_metadata_get(kube: Kube, ns: str) -> None:
    """GET as PartialObjectMetadata answers only the metadata."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(
        path, {"metadata": {"name": "m", "labels": {"a": "b"}}, "data": {"x": "y"}}
    )
    obj = await kube.get_ok(f"{path}/m", accept=META)
    assert obj["kind"] == "PartialObjectMetadata"
    assert obj["apiVersion"] == "meta.k8s.io/v1"
    assert obj["metadata"]["labels"] == {"a": "b"}
    assert "data" not in obj


@pytest.mark.needs_builtin_kinds
async def test_partial_object_metadata_list(kube: Kube, ns: str) -> None:
    """A list as PartialObjectMetadataList has typed items and the list resourceVersion."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, {"metadata": {"name": "m"}, "data": {"x": "y"}})
    body = await kube.get_ok(path, accept=META_LIST)
    assert body["kind"] == "PartialObjectMetadataList"
    assert body["metadata"]["resourceVersion"]
    assert body["items"][0]["kind"] == "PartialObjectMetadata"
    assert body["items"][0]["metadata"]["name"] == "m"


@pytest.mark.needs_builtin_kinds
async def test_core_event_is_readable_as_events_k8s_io(kube: Kube, ns: str) -> None:
    """A core/v1 Event is served by events.k8s.io/v1 with the renamed fields."""
    event = {
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": ns},
        "reason": "Started",
        "message": "started the container",
        "type": "Normal",
        "source": {"component": "kubelet"},
    }
    await kube.create_ok(f"/api/v1/namespaces/{ns}/events", event)
    obj = await kube.get_ok(f"/apis/events.k8s.io/v1/namespaces/{ns}/events/e1")
    assert obj["apiVersion"] == "events.k8s.io/v1"
    assert obj["regarding"] == {"kind": "Pod", "name": "p", "namespace": ns}
    assert obj["note"] == "started the container"
    assert obj["deprecatedSource"] == {"component": "kubelet"}


@pytest.mark.needs_builtin_kinds
async def test_events_field_selector_on_involved_object(kube: Kube, ns: str) -> None:
    """Core events can be selected by involvedObject.name."""
    path = f"/api/v1/namespaces/{ns}/events"
    for name, target in (("e1", "a"), ("e2", "b")):
        await kube.create_ok(
            path,
            {
                "metadata": {"name": name},
                "involvedObject": {"kind": "Pod", "name": target, "namespace": ns},
            },
        )
    body = await kube.get_ok(path, params={"fieldSelector": "involvedObject.name=b"})
    assert [i["metadata"]["name"] for i in body["items"]] == ["e2"]
