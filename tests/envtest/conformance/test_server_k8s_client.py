"""kubernetes_asyncio's typed clients and its Watch against the API server under test."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, cast

import orjson
import pytest
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import watch as k8s_watch

from pyctrl.envtest import Environment
from tests.envtest.conformance.test_server_crd import crd
from tests.envtest.conftest import own, unique

if TYPE_CHECKING:
    from collections.abc import Callable


# Patch types the typed methods accept at run time but do not declare.
MERGE_PATCH: dict[str, Any] = {"_content_type": "application/merge-patch+json"}
APPLY_PATCH: dict[str, Any] = {"_content_type": "application/apply-patch+yaml"}


def configmap(name: str, labels: dict[str, str] | None = None, **data: str) -> k8s.V1ConfigMap:
    return k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name=name, labels=labels), data=data)


async def watch_events(
    list_call: Callable[..., Any], *args: Any, count: int, server_timeout: int = 30, **kwargs: Any
) -> list[tuple[str, Any]]:
    """The first ``count`` events of a kubernetes_asyncio Watch (type, object)."""
    events: list[tuple[str, Any]] = []
    # With timeout_seconds the Watch ends with the stream instead of silently resuming.
    async with asyncio.timeout(server_timeout + 5), k8s_watch.Watch() as watch:
        async for event in watch.stream(list_call, *args, timeout_seconds=server_timeout, **kwargs):
            events.append((event["type"], event["object"]))
            if len(events) == count:
                break
    return events


@pytest.mark.needs_builtin_kinds
async def test_typed_configmap_round_trip(api_client: k8s.ApiClient, ns: str) -> None:
    """CoreV1Api creates, reads, lists, patches and deletes a ConfigMap."""
    core = k8s.CoreV1Api(api_client)
    body = k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="typed"), data={"a": "1"})
    created = await core.create_namespaced_config_map(ns, body)
    assert created.metadata.uid
    read = await core.read_namespaced_config_map("typed", ns)
    assert read.data == {"a": "1"}
    listed = await core.list_namespaced_config_map(ns)
    assert own(i.metadata.name for i in listed.items) == ["typed"]
    patched = await core.patch_namespaced_config_map("typed", ns, {"data": {"b": "2"}})
    assert patched.data == {"a": "1", "b": "2"}
    await core.delete_namespaced_config_map("typed", ns)
    with pytest.raises(k8s.ApiException) as info:
        await core.read_namespaced_config_map("typed", ns)
    assert info.value.status == 404
    assert orjson.loads(info.value.body or b"{}")["reason"] == "NotFound"


@pytest.mark.needs_builtin_kinds
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


@pytest.mark.needs_builtin_kinds
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


async def test_custom_objects_api(env: Environment, api_client: k8s.ApiClient, ns: str) -> None:
    """CustomObjectsApi creates, lists and watches custom resources of a CRD made via the API."""
    group = f"{unique('g')}.example.com"
    ext = k8s.ApiextensionsV1Api(api_client)
    # The typed method takes a plain dict too: the client serializes it as it is.
    await ext.create_custom_resource_definition(cast("k8s.V1CustomResourceDefinition", crd(group)))
    try:
        [read] = await env.wait_for_crds([f"mysrvs.{group}"], max_time=30)
        assert {c["type"]: c["status"] for c in read["status"]["conditions"]} == {
            "NamesAccepted": "True",
            "Established": "True",
        }
        custom = k8s.CustomObjectsApi(api_client)
        body = {
            "apiVersion": f"{group}/v1",
            "kind": "MySrv",
            "metadata": {"name": "x"},
            "spec": {"port": 1},
        }
        created = await custom.create_namespaced_custom_object(group, "v1", ns, "mysrvs", body)
        assert created["spec"] == {"port": 1, "replicas": 1, "mode": "safe"}
        listed = await custom.list_namespaced_custom_object(group, "v1", ns, "mysrvs")
        assert [i["metadata"]["name"] for i in listed["items"]] == ["x"]
        await custom.patch_namespaced_custom_object(
            group,
            "v1",
            ns,
            "mysrvs",
            "x",
            {"spec": {"port": 2}},
            **MERGE_PATCH,
        )
        events = await watch_events(
            custom.list_namespaced_custom_object,
            group,
            "v1",
            ns,
            "mysrvs",
            count=1,
            resource_version=listed["metadata"]["resourceVersion"],
        )
        assert [(kind, obj["spec"]["port"]) for kind, obj in events] == [("MODIFIED", 2)]
    finally:
        await ext.delete_custom_resource_definition(f"mysrvs.{group}")


@pytest.mark.needs_builtin_kinds
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


@pytest.mark.needs_builtin_kinds
async def test_typed_list_selects_and_pages(api_client: k8s.ApiClient, ns: str) -> None:
    """list_namespaced_config_map applies label and field selectors and pages with _continue."""
    core = k8s.CoreV1Api(api_client)
    for name, team in (("a", "x"), ("b", "y"), ("c", "x")):
        await core.create_namespaced_config_map(ns, configmap(name, {"team": team}))
    selected = await core.list_namespaced_config_map(ns, label_selector="team=x")
    assert [i.metadata.name for i in selected.items] == ["a", "c"]
    named = await core.list_namespaced_config_map(ns, field_selector="metadata.name=b")
    assert [i.metadata.name for i in named.items] == ["b"]
    first = await core.list_namespaced_config_map(ns, label_selector="team", limit=2)
    assert [i.metadata.name for i in first.items] == ["a", "b"]
    rest = await core.list_namespaced_config_map(
        ns, label_selector="team", limit=2, _continue=first.metadata._continue
    )
    assert [i.metadata.name for i in rest.items] == ["c"]
    assert rest.metadata._continue is None


@pytest.mark.needs_builtin_kinds
async def test_typed_watch_delivers_changes_in_order(api_client: k8s.ApiClient, ns: str) -> None:
    """A Watch from a list's resourceVersion yields ADDED, MODIFIED, DELETED as typed objects."""
    core = k8s.CoreV1Api(api_client)
    listed = await core.list_namespaced_config_map(ns)
    await core.create_namespaced_config_map(ns, configmap("w", k="1"))
    await core.patch_namespaced_config_map("w", ns, {"data": {"k": "2"}})
    await core.delete_namespaced_config_map("w", ns)
    events = await watch_events(
        core.list_namespaced_config_map,
        ns,
        count=3,
        resource_version=listed.metadata.resource_version,
    )
    assert [(kind, obj.metadata.name, obj.data) for kind, obj in events] == [
        ("ADDED", "w", {"k": "1"}),
        ("MODIFIED", "w", {"k": "2"}),
        ("DELETED", "w", {"k": "2"}),
    ]
    versions = [int(obj.metadata.resource_version) for _, obj in events]
    assert versions == sorted(versions)
    assert versions[0] > int(listed.metadata.resource_version)


@pytest.mark.needs_builtin_kinds
async def test_typed_watch_with_selector_and_bookmarks(api_client: k8s.ApiClient, ns: str) -> None:
    """A Watch with a label selector skips other objects; bookmarks carry a resourceVersion."""
    core = k8s.CoreV1Api(api_client)
    listed = await core.list_namespaced_config_map(ns)
    await core.create_namespaced_config_map(ns, configmap("other", {"team": "y"}))
    await core.create_namespaced_config_map(ns, configmap("mine", {"team": "x"}))
    events = await watch_events(
        core.list_namespaced_config_map,
        ns,
        count=2,
        resource_version=listed.metadata.resource_version,
        label_selector="team=x",
        allow_watch_bookmarks=True,
        # kube-apiserver bookmarks 2 s before the deadline (and about every minute).
        server_timeout=3,
    )
    (added, obj), (bookmark, marker) = events
    assert (added, obj.metadata.name) == ("ADDED", "mine")
    assert bookmark == "BOOKMARK"
    # Watch leaves a bookmark's object undecoded.
    assert int(marker["metadata"]["resourceVersion"]) >= int(obj.metadata.resource_version)


@pytest.mark.embedded_only
async def test_typed_watch_from_beyond_the_history_window_raises_410() -> None:
    """With history_size=3, a Watch resumed from an overflowed version raises ApiException 410."""
    async with Environment(history_size=3) as env, k8s.ApiClient(env.config) as api:
        core = k8s.CoreV1Api(api)
        old = await core.create_namespaced_config_map("default", configmap("old"))
        for i in range(5):
            await core.create_namespaced_config_map("default", configmap(f"new-{i}"))
        with pytest.raises(k8s.ApiException) as info:
            await watch_events(
                core.list_namespaced_config_map,
                "default",
                count=1,
                resource_version=old.metadata.resource_version,
            )
    assert info.value.status == 410
    assert str(info.value.reason).startswith(
        f"Expired: too old resource version: {old.metadata.resource_version} ("
    )


@pytest.mark.needs_builtin_kinds
async def test_typed_status_update_and_server_side_apply(
    api_client: k8s.ApiClient, ns: str
) -> None:
    """replace_namespaced_deployment_status writes status only; an apply patch owns its fields."""
    apps = k8s.AppsV1Api(api_client)
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]},
            },
        },
    }
    applied = await apps.patch_namespaced_deployment(
        "web", ns, body, field_manager="tester", **APPLY_PATCH
    )
    assert [(m.manager, m.operation) for m in applied.metadata.managed_fields] == [
        ("tester", "Apply")
    ]
    applied.status = k8s.V1DeploymentStatus(replicas=1, ready_replicas=1)
    applied.spec.replicas = 5
    updated = await apps.replace_namespaced_deployment_status("web", ns, applied)
    assert (updated.status.replicas, updated.status.ready_replicas) == (1, 1)
    assert updated.spec.replicas == 1
    assert updated.metadata.generation == 1
