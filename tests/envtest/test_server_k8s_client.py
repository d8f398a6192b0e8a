"""kubernetes_asyncio's typed clients against the embedded API server over its socket."""

from __future__ import annotations

import orjson
import pytest
from kubernetes_asyncio import client as k8s

from tests.envtest.test_server_crd import CRD_PATH, GROUP, crd


async def test_typed_configmap_round_trip(api_client: k8s.ApiClient, ns: str) -> None:
    """CoreV1Api creates, reads, lists, patches and deletes a ConfigMap."""
    core = k8s.CoreV1Api(api_client)
    body = k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="typed"), data={"a": "1"})
    created = await core.create_namespaced_config_map(ns, body)
    assert created.metadata.uid
    read = await core.read_namespaced_config_map("typed", ns)
    assert read.data == {"a": "1"}
    listed = await core.list_namespaced_config_map(ns)
    assert [i.metadata.name for i in listed.items] == ["typed"]
    patched = await core.patch_namespaced_config_map("typed", ns, {"data": {"b": "2"}})
    assert patched.data == {"a": "1", "b": "2"}
    await core.delete_namespaced_config_map("typed", ns)
    with pytest.raises(k8s.ApiException) as info:
        await core.read_namespaced_config_map("typed", ns)
    assert info.value.status == 404
    assert orjson.loads(info.value.body or b"{}")["reason"] == "NotFound"


async def test_typed_conflict_is_an_api_exception(api_client: k8s.ApiClient, ns: str) -> None:
    """A stale replace surfaces as ApiException 409."""
    core = k8s.CoreV1Api(api_client)
    created = await core.create_namespaced_config_map(
        ns, k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="c"))
    )
    created.data = {"x": "1"}
    await core.replace_namespaced_config_map("c", ns, created)
    created.data = {"x": "2"}
    with pytest.raises(k8s.ApiException) as info:
        await core.replace_namespaced_config_map("c", ns, created)
    assert info.value.status == 409


async def test_typed_deployment_and_scale(api_client: k8s.ApiClient, ns: str) -> None:
    """AppsV1Api reads a Deployment's defaults and its scale subresource."""
    apps = k8s.AppsV1Api(api_client)
    deployment = k8s.V1Deployment(
        metadata=k8s.V1ObjectMeta(name="web"),
        spec=k8s.V1DeploymentSpec(
            selector=k8s.V1LabelSelector(match_labels={"app": "web"}),
            template=k8s.V1PodTemplateSpec(
                metadata=k8s.V1ObjectMeta(labels={"app": "web"}),
                spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="web", image="nginx")]),
            ),
        ),
    )
    created = await apps.create_namespaced_deployment(ns, deployment)
    assert created.spec.replicas == 1
    assert created.spec.template.spec.containers[0].image_pull_policy == "Always"
    scale = await apps.read_namespaced_deployment_scale("web", ns)
    assert scale.spec.replicas == 1
    assert scale.status.selector == "app=web"


async def test_custom_objects_api(api_client: k8s.ApiClient, ns: str) -> None:
    """CustomObjectsApi creates and lists custom resources of a CRD made through the API."""
    ext = k8s.ApiextensionsV1Api(api_client)
    definition = crd()
    await api_client.call_api(
        CRD_PATH,
        "POST",
        body=definition,
        auth_settings=["BearerToken"],
        header_params={"Content-Type": "application/json", "Accept": "application/json"},
        _preload_content=False,
    )
    read = await ext.read_custom_resource_definition(f"mysrvs.{GROUP}")
    assert {c.type: c.status for c in read.status.conditions}["Established"] == "True"
    custom = k8s.CustomObjectsApi(api_client)
    body = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "MySrv",
        "metadata": {"name": "x"},
        "spec": {"port": 1},
    }
    await custom.create_namespaced_custom_object(GROUP, "v1", ns, "mysrvs", body)
    listed = await custom.list_namespaced_custom_object(GROUP, "v1", ns, "mysrvs")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["x"]


async def test_raw_watch_through_call_api(api_client: k8s.ApiClient, ns: str) -> None:
    """call_api with watch=1 streams newline-delimited events over the ApiClient's session."""
    core = k8s.CoreV1Api(api_client)
    await core.create_namespaced_config_map(
        ns, k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="w"))
    )
    response = await api_client.call_api(
        f"/api/v1/namespaces/{ns}/configmaps",
        "GET",
        query_params=[("watch", "true"), ("timeoutSeconds", "1")],
        auth_settings=["BearerToken"],
        header_params={"Accept": "application/json"},
        _preload_content=False,
        _request_timeout=10,
    )
    resp = response[0] if isinstance(response, tuple) else response
    try:
        line = await resp.content.readline()
    finally:
        resp.release()
    event = orjson.loads(line)
    assert event["type"] == "ADDED"
    assert event["object"]["metadata"]["name"] == "w"
