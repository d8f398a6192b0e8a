"""CustomResourceDefinitions: establishing, schema validation, defaulting, pruning, versions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyctrl.envtest._server import APIServer
    from tests.envtest.conftest import Kube
from tests.envtest.test_server_delete import wait_gone

GROUP = "myapp.example.com"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                "replicas": {"type": "integer", "default": 1},
                "mode": {"type": "string", "enum": ["fast", "safe"], "default": "safe"},
            },
        },
        "status": {
            "type": "object",
            "properties": {
                "ready": {"type": "boolean"},
                "replicas": {"type": "integer"},
                "selector": {"type": "string"},
            },
        },
    },
}


def crd(*, scope: str = "Namespaced") -> dict[str, Any]:
    version: dict[str, Any] = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": SCHEMA},
        "subresources": {
            "status": {},
            "scale": {
                "specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas",
                "labelSelectorPath": ".status.selector",
            },
        },
        "additionalPrinterColumns": [
            {"name": "Port", "type": "integer", "jsonPath": ".spec.port"},
            {"name": "Ready", "type": "boolean", "jsonPath": ".status.ready"},
        ],
    }
    beta = {
        "name": "v1beta1",
        "served": True,
        "storage": False,
        "schema": {"openAPIV3Schema": SCHEMA},
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"mysrvs.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": scope,
            "names": {
                "plural": "mysrvs",
                "singular": "mysrv",
                "kind": "MySrv",
                "shortNames": ["ms"],
            },
            "versions": [version, beta],
        },
    }


def srv(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "MySrv", "metadata": {"name": name}, "spec": spec}


async def install(kube: Kube) -> dict[str, Any]:
    await kube.create_ok(CRD_PATH, crd())
    return await kube.get_ok(f"{CRD_PATH}/mysrvs.{GROUP}")


async def test_crd_becomes_established(kube: Kube) -> None:
    """A created CRD gets NamesAccepted and Established conditions and acceptedNames."""
    obj = await install(kube)
    conditions = {c["type"]: c["status"] for c in obj["status"]["conditions"]}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    assert obj["status"]["acceptedNames"]["kind"] == "MySrv"
    assert obj["status"]["storedVersions"] == ["v1"]


async def test_custom_resources_are_served_after_establishing(kube: Kube, ns: str) -> None:
    """Once established, the CRD's resources accept creates with generation 1."""
    await install(kube)
    obj = await kube.create_ok(f"/apis/{GROUP}/v1/namespaces/{ns}/mysrvs", srv("a", port=80))
    assert obj["kind"] == "MySrv"
    assert obj["metadata"]["generation"] == 1


async def test_invalid_crd_is_rejected(kube: Kube) -> None:
    """A CRD failing apiextensions validation answers 422 with causes."""
    bad = crd()
    bad["metadata"]["name"] = "wrong-name"
    status, body, _ = await kube.post(CRD_PATH, bad)
    assert status == 422
    assert body["details"]["kind"] == "CustomResourceDefinition"
    assert body["details"]["causes"]


async def test_schema_violation_is_invalid_with_kind_and_group(kube: Kube, ns: str) -> None:
    """A custom resource breaking its schema answers Invalid naming Kind.group and the field."""
    await install(kube)
    status, body, _ = await kube.post(
        f"/apis/{GROUP}/v1/namespaces/{ns}/mysrvs", srv("bad", port=70000)
    )
    assert status == 422
    assert body["message"].startswith(f'MySrv.{GROUP} "bad" is invalid: spec.port: Invalid value: ')
    assert body["details"]["causes"][0]["field"] == "spec.port"


async def test_defaults_are_applied(kube: Kube, ns: str) -> None:
    """Schema defaults fill missing fields on write."""
    await install(kube)
    obj = await kube.create_ok(f"/apis/{GROUP}/v1/namespaces/{ns}/mysrvs", srv("d", port=1))
    assert obj["spec"] == {"port": 1, "replicas": 1, "mode": "safe"}


async def test_unknown_fields_are_pruned_with_a_warning(kube: Kube, ns: str) -> None:
    """Fields the schema does not know are dropped, and a Warning header names them."""
    await install(kube)
    status, obj, headers = await kube.post(
        f"/apis/{GROUP}/v1/namespaces/{ns}/mysrvs", srv("p", port=1, extra="x")
    )
    assert status == 201
    assert "extra" not in obj["spec"]
    assert 'unknown field \\"spec.extra\\"' in headers["Warning"]


async def test_strict_field_validation_rejects_unknown_fields(kube: Kube, ns: str) -> None:
    """fieldValidation=Strict turns unknown fields into a BadRequest."""
    await install(kube)
    status, body, _ = await kube.post(
        f"/apis/{GROUP}/v1/namespaces/{ns}/mysrvs",
        srv("p", port=1, extra="x"),
        params={"fieldValidation": "Strict"},
    )
    assert status == 400
    assert body["message"] == 'strict decoding error: unknown field "spec.extra"'


async def test_strategic_merge_patch_of_custom_resource_is_415(kube: Kube, ns: str) -> None:
    """Custom resources refuse strategic merge patches."""
    await install(kube)
    path = f"/apis/{GROUP}/v1/namespaces/{ns}/mysrvs"
    await kube.create_ok(path, srv("s", port=1))
    status, body, _ = await kube.patch(f"{path}/s", {"spec": {"port": 2}}, "strategic")
    assert status == 415
    assert body["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    )


async def test_update_needs_resource_version(kube: Kube, ns: str) -> None:
    """Custom resources do not allow unconditional updates."""
    await install(kube)
    path = f"/apis/{GROUP}/v1/namespaces/{ns}/mysrvs"
    await kube.create_ok(path, srv("u", port=1))
    status, body, _ = await kube.put(f"{path}/u", srv("u", port=2))
    assert status == 422
    assert (
        "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
        in body["message"]
    )


async def test_status_subresource_does_not_bump_generation(kube: Kube, ns: str) -> None:
    """Status writes keep generation; spec writes bump it; main writes ignore status."""
    await install(kube)
    path = f"/apis/{GROUP}/v1/namespaces/{ns}/mysrvs"
    await kube.create_ok(path, srv("g", port=1))
    _, with_status, _ = await kube.patch(f"{path}/g/status", {"status": {"ready": True}})
    assert with_status["status"] == {"ready": True}
    assert with_status["metadata"]["generation"] == 1
    _, main, _ = await kube.patch(f"{path}/g", {"spec": {"port": 2}, "status": {"ready": False}})
    assert main["metadata"]["generation"] == 2
    assert main["status"] == {"ready": True}


async def test_status_is_dropped_on_create(kube: Kube, ns: str) -> None:
    """A create cannot set status when the CRD has a status subresource."""
    await install(kube)
    body = srv("c", port=1)
    body["status"] = {"ready": True}
    obj = await kube.create_ok(f"/apis/{GROUP}/v1/namespaces/{ns}/mysrvs", body)
    assert "status" not in obj


async def test_scale_subresource_uses_declared_paths(kube: Kube, ns: str) -> None:
    """The CRD's scale subresource reads and writes the declared replica paths."""
    await install(kube)
    path = f"/apis/{GROUP}/v1/namespaces/{ns}/mysrvs"
    await kube.create_ok(path, srv("sc", port=1, replicas=2))
    await kube.patch(f"{path}/sc/status", {"status": {"replicas": 1, "selector": "app=sc"}})
    scale = await kube.get_ok(f"{path}/sc/scale")
    assert scale["spec"] == {"replicas": 2}
    assert scale["status"] == {"replicas": 1, "selector": "app=sc"}
    _, updated, _ = await kube.patch(f"{path}/sc/scale", {"spec": {"replicas": 4}})
    assert updated["spec"]["replicas"] == 4
    obj = await kube.get_ok(f"{path}/sc")
    assert obj["spec"]["replicas"] == 4


async def test_other_served_version_reads_the_same_object(kube: Kube, ns: str) -> None:
    """With conversion None, another served version shows the object with its apiVersion."""
    await install(kube)
    await kube.create_ok(f"/apis/{GROUP}/v1/namespaces/{ns}/mysrvs", srv("v", port=5))
    obj = await kube.get_ok(f"/apis/{GROUP}/v1beta1/namespaces/{ns}/mysrvs/v")
    assert obj["apiVersion"] == f"{GROUP}/v1beta1"
    assert obj["spec"]["port"] == 5


async def test_printer_columns_render_as_table(kube: Kube, ns: str) -> None:
    """Table responses use additionalPrinterColumns evaluated with JSONPath."""
    await install(kube)
    path = f"/apis/{GROUP}/v1/namespaces/{ns}/mysrvs"
    await kube.create_ok(path, srv("t", port=8080))
    table = await kube.get_ok(path, accept="application/json;as=Table;v=v1;g=meta.k8s.io")
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Port", "Ready"]
    assert table["rows"][0]["cells"] == ["t", 8080, None]


async def test_custom_resource_list_items_keep_type_meta(kube: Kube, ns: str) -> None:
    """Items of custom resource lists carry apiVersion and kind."""
    await install(kube)
    path = f"/apis/{GROUP}/v1/namespaces/{ns}/mysrvs"
    await kube.create_ok(path, srv("l", port=1))
    body = await kube.get_ok(path)
    assert body["kind"] == "MySrvList"
    assert body["items"][0]["kind"] == "MySrv"


async def test_deleting_crd_removes_its_resources(kube: Kube, ns: str) -> None:
    """Deleting a CRD deletes its custom resources, then stops serving them."""
    await install(kube)
    path = f"/apis/{GROUP}/v1/namespaces/{ns}/mysrvs"
    await kube.create_ok(path, srv("x", port=1))
    status, body, _ = await kube.delete(f"{CRD_PATH}/mysrvs.{GROUP}")
    assert status == 200
    assert "customresourcecleanup.apiextensions.k8s.io" in body["metadata"]["finalizers"]
    await wait_gone(kube, f"{CRD_PATH}/mysrvs.{GROUP}")
    status, body, _ = await kube.get(path)
    assert status == 404
    assert body["message"] == "the server could not find the requested resource"


async def test_registry_generation_bumps_when_crd_is_established(
    server: APIServer, kube: Kube
) -> None:
    """Discovery caches see a new registry generation once a CRD is served."""
    before = server.registry.generation
    await install(kube)
    assert server.registry.generation > before
    assert server.registry.lookup(GROUP, "v1", "mysrvs") is not None


async def test_cluster_scoped_custom_resources(kube: Kube) -> None:
    """A cluster-scoped CRD serves its resources without namespaces."""
    await kube.create_ok(CRD_PATH, crd(scope="Cluster"))
    obj = await kube.create_ok(f"/apis/{GROUP}/v1/mysrvs", srv("global", port=1))
    assert "namespace" not in obj["metadata"]


async def test_selectable_fields_filter_lists(kube: Kube, ns: str) -> None:
    """CRD selectableFields are accepted as field selectors."""
    definition = crd()
    definition["spec"]["versions"][0]["selectableFields"] = [{"jsonPath": ".spec.mode"}]
    await kube.create_ok(CRD_PATH, definition)
    path = f"/apis/{GROUP}/v1/namespaces/{ns}/mysrvs"
    await kube.create_ok(path, srv("f", port=1, mode="fast"))
    await kube.create_ok(path, srv("s", port=1))
    body = await kube.get_ok(path, params={"fieldSelector": "spec.mode=fast"})
    assert [i["metadata"]["name"] for i in body["items"]] == ["f"]
