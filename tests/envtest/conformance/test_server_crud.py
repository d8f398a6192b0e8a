"""Routing, CRUD verbs and object metadata semantics of the embedded API server."""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any

import pytest

from tests.envtest.conftest import unique

if TYPE_CHECKING:
    from tests.envtest.conftest import Kube


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def deployment(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    lbls = labels or {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": lbls},
            "template": {
                "metadata": {"labels": lbls},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]},
            },
        },
    }


@pytest.mark.needs_builtin_kinds
async def test_create_returns_201_with_system_metadata(kube: Kube, ns: str) -> None:
    """A create answers 201 with uid, creationTimestamp and an opaque resourceVersion set."""
    obj = await kube.create_ok(f"/api/v1/namespaces/{ns}/configmaps", cm("a", k="v"))
    meta = obj["metadata"]
    assert meta["namespace"] == ns
    assert len(meta["uid"]) == 36
    assert meta["creationTimestamp"].endswith("Z")
    assert int(meta["resourceVersion"]) > 0
    assert obj["data"] == {"k": "v"}
    assert "selfLink" not in meta


@pytest.mark.needs_builtin_kinds
async def test_configmaps_have_no_generation(kube: Kube, ns: str) -> None:
    """Types whose strategy does not track generation leave metadata.generation unset."""
    obj = await kube.create_ok(f"/api/v1/namespaces/{ns}/configmaps", cm("a"))
    assert "generation" not in obj["metadata"]


@pytest.mark.needs_builtin_kinds
async def test_get_unknown_object_is_404_with_details(kube: Kube, ns: str) -> None:
    """GET of a missing object answers NotFound naming the resource and the object."""
    status, body, _ = await kube.get(f"/api/v1/namespaces/{ns}/configmaps/missing")
    assert status == 404
    assert body["kind"] == "Status"
    assert body["reason"] == "NotFound"
    assert body["message"] == 'configmaps "missing" not found'
    assert body["details"] == {"name": "missing", "kind": "configmaps"}


@pytest.mark.needs_builtin_kinds
async def test_not_found_of_grouped_resource_names_the_group(kube: Kube, ns: str) -> None:
    """NotFound messages of non-core resources qualify the resource with its group."""
    status, body, _ = await kube.get(f"/apis/apps/v1/namespaces/{ns}/deployments/nope")
    assert status == 404
    assert body["message"] == 'deployments.apps "nope" not found'
    assert body["details"]["group"] == "apps"


@pytest.mark.needs_builtin_kinds
async def test_unknown_resource_is_the_mux_404(kube: Kube) -> None:
    """A path naming no served resource under /api/v1 is go-restful's 404, as a Status."""
    status, body, _ = await kube.get("/api/v1/widgets")
    # The /api/v1 web service claims the path (server/handler.go's director), so the
    # answer is go-restful's 404 through serviceErrorHandler, not the mux's text.
    assert (status, body["reason"], body["message"]) == (
        404,
        "NotFound",
        "the server could not find the requested resource",
    )


@pytest.mark.needs_builtin_kinds
async def test_post_to_named_object_is_405(kube: Kube, ns: str) -> None:
    """POST to an object path is MethodNotAllowed."""
    status, body, _ = await kube.post(f"/api/v1/namespaces/{ns}/configmaps/x", cm("x"))
    assert status == 405
    assert body["reason"] == "MethodNotAllowed"


@pytest.mark.needs_builtin_kinds
async def test_create_existing_is_409_already_exists(kube: Kube, ns: str) -> None:
    """Creating an object twice answers AlreadyExists."""
    await kube.create_ok(f"/api/v1/namespaces/{ns}/configmaps", cm("dup"))
    status, body, _ = await kube.post(f"/api/v1/namespaces/{ns}/configmaps", cm("dup"))
    assert status == 409
    assert body["reason"] == "AlreadyExists"
    assert body["message"] == 'configmaps "dup" already exists'


@pytest.mark.needs_builtin_kinds
async def test_namespace_mismatch_is_400(kube: Kube, ns: str) -> None:
    """A body namespace different from the URL namespace is a BadRequest."""
    body = cm("x")
    body["metadata"]["namespace"] = "other"
    status, resp, _ = await kube.post(f"/api/v1/namespaces/{ns}/configmaps", body)
    assert status == 400
    assert resp["message"] == (
        "the namespace of the provided object does not match the namespace sent on the request"
    )


@pytest.mark.needs_builtin_kinds
async def test_create_in_missing_namespace_is_404(kube: Kube) -> None:
    """Creating in a namespace that does not exist answers NotFound for the namespace."""
    status, body, _ = await kube.post("/api/v1/namespaces/no-such-ns/configmaps", cm("x"))
    assert status == 404
    assert body["message"] == 'namespaces "no-such-ns" not found'


@pytest.mark.needs_builtin_kinds
async def test_invalid_name_is_422_with_cause(kube: Kube, ns: str) -> None:
    """A name that is not a DNS-1123 subdomain is Invalid with a metadata.name cause."""
    status, body, _ = await kube.post(f"/api/v1/namespaces/{ns}/configmaps", cm("Bad_Name"))
    assert status == 422
    assert body["reason"] == "Invalid"
    assert body["message"].startswith(
        'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value'
    )
    assert body["details"]["causes"][0]["field"] == "metadata.name"
    assert body["details"]["causes"][0]["reason"] == "FieldValueInvalid"


@pytest.mark.needs_builtin_kinds
async def test_service_names_follow_dns1035(kube: Kube, ns: str) -> None:
    """Service names must start with a letter (DNS-1035 label)."""
    svc = {"metadata": {"name": "1svc"}, "spec": {"ports": [{"port": 80}]}}
    status, body, _ = await kube.post(f"/api/v1/namespaces/{ns}/services", svc)
    assert status == 422
    assert "DNS-1035 label" in body["message"]


@pytest.mark.needs_builtin_kinds
async def test_generate_name_appends_five_characters(kube: Kube, ns: str) -> None:
    """generateName yields the prefix plus a random five-character suffix."""
    body = {"metadata": {"generateName": "gen-"}, "data": {}}
    obj = await kube.create_ok(f"/api/v1/namespaces/{ns}/configmaps", body)
    name = obj["metadata"]["name"]
    assert name.startswith("gen-")
    assert len(name) == len("gen-") + 5


@pytest.mark.needs_builtin_kinds
async def test_missing_name_is_required(kube: Kube, ns: str) -> None:
    """An object without name or generateName is Invalid: name or generateName is required."""
    status, body, _ = await kube.post(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {}})
    assert status == 422
    assert "metadata.name: Required value: name or generateName is required" in body["message"]


@pytest.mark.needs_builtin_kinds
async def test_resource_version_is_global_and_increasing(kube: Kube, ns: str) -> None:
    """Each write gets a larger resourceVersion than the previous one, across resources."""
    a = await kube.create_ok(f"/api/v1/namespaces/{ns}/configmaps", cm("a"))
    b = await kube.create_ok(f"/api/v1/namespaces/{ns}/secrets", {"metadata": {"name": "b"}})
    assert int(b["metadata"]["resourceVersion"]) > int(a["metadata"]["resourceVersion"])


@pytest.mark.needs_builtin_kinds
async def test_update_with_stale_resource_version_conflicts(kube: Kube, ns: str) -> None:
    """PUT with an outdated resourceVersion answers 409 Conflict with the apiserver's message."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    created = await kube.create_ok(path, deployment("web"))
    fresh = dict(created, spec=dict(created["spec"], replicas=2))
    status, _, _ = await kube.put(f"{path}/web", fresh)
    assert status == 200
    stale = dict(created, spec=dict(created["spec"], replicas=3))
    status, body, _ = await kube.put(f"{path}/web", stale)
    assert status == 409
    assert body["reason"] == "Conflict"
    assert body["message"] == (
        'Operation cannot be fulfilled on deployments.apps "web": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


@pytest.mark.needs_builtin_kinds
async def test_update_without_resource_version_is_unconditional(kube: Kube, ns: str) -> None:
    """PUT without resourceVersion overwrites for types that allow unconditional updates."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, cm("u", a="1"))
    status, body, _ = await kube.put(f"{path}/u", cm("u", a="2"))
    assert status == 200
    assert body["data"] == {"a": "2"}


@pytest.mark.needs_builtin_kinds
async def test_update_of_missing_configmap_is_404(kube: Kube, ns: str) -> None:
    """PUT of a missing ConfigMap does not create it (AllowCreateOnUpdate is false)."""
    status, body, _ = await kube.put(f"/api/v1/namespaces/{ns}/configmaps/new", cm("new"))
    assert status == 404
    assert body["reason"] == "NotFound"


@pytest.mark.needs_builtin_kinds
async def test_update_of_missing_lease_creates_it(kube: Kube, ns: str) -> None:
    """PUT of a missing Lease creates it with 201 (leases allow create on update)."""
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "leader"},
        "spec": {"holderIdentity": "me"},
    }
    status, body, _ = await kube.put(
        f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/leader", lease
    )
    assert status == 201
    assert body["spec"]["holderIdentity"] == "me"


@pytest.mark.needs_builtin_kinds
async def test_url_name_must_match_body_name(kube: Kube, ns: str) -> None:
    """PUT whose body names another object is a BadRequest."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, cm("one"))
    status, body, _ = await kube.put(f"{path}/one", cm("two"))
    assert status == 400
    assert (
        body["message"] == "the name of the object (two) does not match the name on the URL (one)"
    )


@pytest.mark.needs_builtin_kinds
async def test_noop_update_keeps_resource_version(kube: Kube, ns: str) -> None:
    """An update that changes nothing stores nothing: the resourceVersion stays."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    created = await kube.create_ok(path, cm("same", a="1"))
    status, body, _ = await kube.put(f"{path}/same", created)
    assert status == 200
    assert body["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


@pytest.mark.needs_builtin_kinds
async def test_deployment_defaults_are_applied(kube: Kube, ns: str) -> None:
    """A Deployment gets the defaults kube-apiserver applies (replicas, strategy, template)."""
    obj = await kube.create_ok(f"/apis/apps/v1/namespaces/{ns}/deployments", deployment("d"))
    spec = obj["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert spec["revisionHistoryLimit"] == 10
    assert spec["progressDeadlineSeconds"] == 600
    container = spec["template"]["spec"]["containers"][0]
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["terminationMessagePath"] == "/dev/termination-log"
    assert spec["template"]["spec"]["restartPolicy"] == "Always"
    assert obj["metadata"]["generation"] == 1
    assert obj["status"] == {}


@pytest.mark.needs_builtin_kinds
async def test_deployment_selector_must_match_template(kube: Kube, ns: str) -> None:
    """A Deployment whose selector does not match its template labels is Invalid."""
    body = deployment("bad")
    body["spec"]["template"]["metadata"]["labels"] = {"other": "x"}
    status, resp, _ = await kube.post(f"/apis/apps/v1/namespaces/{ns}/deployments", body)
    assert status == 422
    assert resp["details"]["causes"][0]["field"] == "spec.template.metadata.labels"


@pytest.mark.needs_builtin_kinds
async def test_generation_bumps_on_spec_change_only(kube: Kube, ns: str) -> None:
    """metadata.generation increases when the spec changes, not when labels do."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    await kube.create_ok(path, deployment("g"))
    _, labelled, _ = await kube.patch(f"{path}/g", {"metadata": {"labels": {"x": "y"}}})
    assert labelled["metadata"]["generation"] == 1
    _, scaled, _ = await kube.patch(f"{path}/g", {"spec": {"replicas": 4}})
    assert scaled["metadata"]["generation"] == 2


@pytest.mark.needs_builtin_kinds
async def test_service_gets_cluster_ip_and_port_defaults(kube: Kube, ns: str) -> None:
    """A Service gets a cluster IP from the service range and TCP/targetPort defaults."""
    svc = {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}], "selector": {"a": "b"}}}
    obj = await kube.create_ok(f"/api/v1/namespaces/{ns}/services", svc)
    spec = obj["spec"]
    assert spec["type"] == "ClusterIP"
    assert spec["sessionAffinity"] == "None"
    assert ipaddress.ip_address(spec["clusterIP"])
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    assert spec["ports"][0] == {"port": 80, "protocol": "TCP", "targetPort": 80}


@pytest.mark.needs_builtin_kinds
async def test_service_cluster_ip_survives_update_without_it(kube: Kube, ns: str) -> None:
    """A PUT that omits the allocated clusterIP keeps it."""
    path = f"/api/v1/namespaces/{ns}/services"
    created = await kube.create_ok(
        path, {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}
    )
    body = {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 81}]}}
    status, updated, _ = await kube.put(f"{path}/s", body)
    assert status == 200
    assert updated["spec"]["clusterIP"] == created["spec"]["clusterIP"]


@pytest.mark.needs_builtin_kinds
async def test_secret_string_data_is_merged_into_data(kube: Kube, ns: str) -> None:
    """stringData is base64-encoded into data and not stored itself."""
    body = {"metadata": {"name": "s"}, "stringData": {"password": "hunter2"}, "data": {"a": "Yg=="}}
    obj = await kube.create_ok(f"/api/v1/namespaces/{ns}/secrets", body)
    assert obj["data"] == {"a": "Yg==", "password": "aHVudGVyMg=="}
    assert obj["type"] == "Opaque"
    assert "stringData" not in obj


@pytest.mark.needs_builtin_kinds
async def test_secret_data_must_be_base64(kube: Kube, ns: str) -> None:
    """Secret data that is not base64 is a BadRequest."""
    body = {"metadata": {"name": "s"}, "data": {"a": "not base64!"}}
    status, resp, _ = await kube.post(f"/api/v1/namespaces/{ns}/secrets", body)
    assert status == 400
    assert "illegal base64 data" in resp["message"]


@pytest.mark.needs_builtin_kinds
async def test_dry_run_create_stores_nothing(kube: Kube, ns: str) -> None:
    """dryRun=All validates and answers the object but stores nothing."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    status, obj, _ = await kube.post(path, cm("dry"), params={"dryRun": "All"})
    assert status == 201
    assert obj["metadata"]["uid"]
    assert "resourceVersion" not in obj["metadata"]
    status, _, _ = await kube.get(f"{path}/dry")
    assert status == 404


@pytest.mark.needs_builtin_kinds
async def test_dry_run_rejects_unknown_values(kube: Kube, ns: str) -> None:
    """dryRun accepts only All."""
    status, body, _ = await kube.post(
        f"/api/v1/namespaces/{ns}/configmaps", cm("x"), params={"dryRun": "Maybe"}
    )
    assert status == 422
    assert 'Unsupported value: "Maybe"' in body["message"]


@pytest.mark.needs_builtin_kinds
async def test_dry_run_update_keeps_stored_object(kube: Kube, ns: str) -> None:
    """A dry-run update answers the new object while the stored one is unchanged."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, cm("d", a="1"))
    status, body, _ = await kube.put(f"{path}/d", cm("d", a="2"), params={"dryRun": "All"})
    assert status == 200
    assert body["data"] == {"a": "2"}
    stored = await kube.get_ok(f"{path}/d")
    assert stored["data"] == {"a": "1"}


@pytest.mark.needs_builtin_kinds
async def test_field_manager_defaults_to_user_agent_prefix(kube: Kube, ns: str) -> None:
    """Without fieldManager the managedFields entry is named after the User-Agent prefix."""
    obj = await kube.create_ok(
        f"/api/v1/namespaces/{ns}/configmaps",
        cm("m", a="1"),
        headers={"User-Agent": "my-operator/v1.2 (linux/amd64)"},
    )
    managers = [e["manager"] for e in obj["metadata"]["managedFields"]]
    assert managers == ["my-operator"]


@pytest.mark.needs_builtin_kinds
async def test_field_manager_query_parameter_names_the_entry(kube: Kube, ns: str) -> None:
    """The fieldManager query parameter names the managedFields entry of an update."""
    obj = await kube.create_ok(
        f"/api/v1/namespaces/{ns}/configmaps", cm("m", a="1"), params={"fieldManager": "tester"}
    )
    entry = obj["metadata"]["managedFields"][0]
    assert entry["manager"] == "tester"
    assert entry["operation"] == "Update"


@pytest.mark.needs_builtin_kinds
async def test_cluster_scoped_object_drops_namespace(kube: Kube) -> None:
    """A cluster-scoped object's metadata.namespace is cleared."""
    name = unique("test-role-")
    body = {"metadata": {"name": name, "namespace": "ignored"}, "rules": []}
    path = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
    obj = await kube.create_ok(path, body)
    assert "namespace" not in obj["metadata"]
    await kube.delete(f"{path}/{name}")


async def test_namespaced_object_needs_namespace_in_path(kube: Kube) -> None:
    """A namespaced object cannot be addressed without its namespace."""
    status, _, _ = await kube.get("/api/v1/configmaps/x")
    assert status == 404


@pytest.mark.needs_builtin_kinds
async def test_list_across_namespaces_includes_both(kube: Kube, ns: str) -> None:
    """Listing without a namespace returns objects of every namespace."""
    other = (await kube.create_ok("/api/v1/namespaces", {"metadata": {"generateName": "other-"}}))[
        "metadata"
    ]["name"]
    await kube.create_ok(f"/api/v1/namespaces/{ns}/configmaps", cm("one"))
    await kube.create_ok(f"/api/v1/namespaces/{other}/configmaps", cm("two"))
    body = await kube.get_ok("/api/v1/configmaps")
    await kube.delete(f"/api/v1/namespaces/{other}")
    names = {(i["metadata"]["namespace"], i["metadata"]["name"]) for i in body["items"]}
    assert {(ns, "one"), (other, "two")} <= names


@pytest.mark.needs_builtin_kinds
async def test_list_items_of_builtin_types_omit_type_meta(kube: Kube, ns: str) -> None:
    """Items of built-in lists carry no kind/apiVersion, as Go's typed lists encode them."""
    await kube.create_ok(f"/api/v1/namespaces/{ns}/configmaps", cm("one"))
    body = await kube.get_ok(f"/api/v1/namespaces/{ns}/configmaps")
    assert body["kind"] == "ConfigMapList"
    assert body["apiVersion"] == "v1"
    assert "kind" not in body["items"][0]


@pytest.mark.needs_builtin_kinds
async def test_default_namespaces_exist(kube: Kube) -> None:
    """default, kube-system, kube-public and kube-node-lease exist from the start."""
    body = await kube.get_ok("/api/v1/namespaces")
    names = {i["metadata"]["name"] for i in body["items"]}
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names


@pytest.mark.needs_builtin_kinds
async def test_namespace_gets_name_label_and_finalizer(kube: Kube, ns: str) -> None:
    """A namespace carries the kubernetes.io/metadata.name label and the kubernetes finalizer."""
    obj = await kube.get_ok(f"/api/v1/namespaces/{ns}")
    assert obj["metadata"]["labels"]["kubernetes.io/metadata.name"] == ns
    assert obj["spec"]["finalizers"] == ["kubernetes"]
    assert obj["status"]["phase"] == "Active"


@pytest.mark.needs_builtin_kinds
async def test_yaml_body_is_accepted(kube: Kube, ns: str) -> None:
    """A create with an application/yaml body works like JSON."""
    raw = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  k: v\n"
    status, obj, _ = await kube.request(
        "POST", f"/api/v1/namespaces/{ns}/configmaps", raw=raw, content_type="application/yaml"
    )
    assert status == 201
    assert obj["data"] == {"k": "v"}


@pytest.mark.embedded_only  # kube-apiserver answers protobuf; this server does not
async def test_protobuf_only_accept_is_406(kube: Kube, ns: str) -> None:
    """An Accept header the server cannot satisfy answers NotAcceptable."""
    status, body, _ = await kube.get(
        f"/api/v1/namespaces/{ns}/configmaps", accept="application/vnd.kubernetes.protobuf"
    )
    assert status == 406
    assert body["reason"] == "NotAcceptable"


@pytest.mark.embedded_only  # kube-apiserver prefers the protobuf kubectl lists first
async def test_protobuf_accept_with_json_fallback_gets_json(kube: Kube, ns: str) -> None:
    """kubectl's Accept list (protobuf, then JSON) is answered in JSON."""
    status, body, headers = await kube.get(
        f"/api/v1/namespaces/{ns}/configmaps",
        accept="application/vnd.kubernetes.protobuf,application/json",
    )
    assert status == 200
    assert headers["Content-Type"].startswith("application/json")
    assert body["kind"] == "ConfigMapList"


@pytest.mark.needs_builtin_kinds
async def test_wrong_api_version_in_body_is_400(kube: Kube, ns: str) -> None:
    """A body of another API version than the endpoint's is a BadRequest."""
    body = cm("x")
    body["apiVersion"] = "apps/v1"
    status, resp, _ = await kube.post(f"/api/v1/namespaces/{ns}/configmaps", body)
    assert status == 400
    # kube-apiserver's scheme has no ConfigMap in apps/v1: decoding fails before any
    # API version check (k8s.io/apimachinery's json serializer, runtime.Scheme.New).
    assert resp["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: no kind "ConfigMap" is '
        'registered for version "apps/v1" in scheme "pkg/api/legacyscheme/scheme.go:30"'
    )


@pytest.mark.needs_builtin_kinds
async def test_resource_version_on_create_is_rejected(kube: Kube, ns: str) -> None:
    """A create carrying a resourceVersion fails."""
    body = cm("x")
    body["metadata"]["resourceVersion"] = "5"
    status, resp, _ = await kube.post(f"/api/v1/namespaces/{ns}/configmaps", body)
    assert status == 500
    assert "resourceVersion should not be set on objects to be created" in resp["message"]
