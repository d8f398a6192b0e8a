from __future__ import annotations

import ssl
import struct
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson
import pytest

from pyctrl._apiserver.openapi.protobuf import openapi_v2_protobuf
from pyctrl.envtest import Environment

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from multidict import CIMultiDict

GROUP = "openapi.pyctrl.dev"
META = "io.k8s.apimachinery.pkg.apis.meta.v1"
PROTOBUF_V2 = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A Lamp.",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "watts": {"type": "integer", "minimum": 1, "description": "Power."},
                "note": {"type": "string", "nullable": True},
                "either": {
                    "type": "object",
                    "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
                    "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                },
            },
        }
    },
}


def lamp_crd(plural: str = "lamps", kind: str = "Lamp") -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": SCHEMA},
                }
            ],
        },
    }


class Http:
    def __init__(self, env: Environment, session: aiohttp.ClientSession) -> None:
        self.base = str(env.config.host)
        self.session = session
        self.ssl = ssl.create_default_context(cafile=env.config.ssl_ca_cert)
        self.auth = env.config.api_key["BearerToken"]

    async def get(
        self, path: str, *, accept: str = "application/json"
    ) -> tuple[int, CIMultiDict[str], Any]:
        headers = {"Authorization": self.auth, "Accept": accept}
        async with self.session.get(
            self.base + path, headers=headers, ssl=self.ssl, allow_redirects=False
        ) as response:
            body = await response.read()
            decoded = orjson.loads(body) if body else None
            return response.status, response.headers.copy(), decoded


@pytest.fixture
async def env() -> AsyncIterator[Environment]:
    async with Environment(crds=[lamp_crd()]) as e:
        yield e


@pytest.fixture
async def http(env: Environment) -> AsyncIterator[Http]:
    async with aiohttp.ClientSession() as session:
        yield Http(env, session)


async def _v3(http: Http, path: str) -> dict[str, Any]:
    _, _, index = await http.get("/openapi/v3")
    status, _, document = await http.get(index["paths"][path]["serverRelativeURL"])
    assert status == 200
    result: dict[str, Any] = document
    return result


def _gvk(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "kind": kind, "version": version}


async def test_v3_index_lists_every_group_version_with_a_hash(http: Http) -> None:
    """/openapi/v3 lists core, built-in and CRD group versions, each URL pinned by a hash."""
    status, _, index = await http.get("/openapi/v3")
    assert status == 200
    paths = index["paths"]
    assert {"api/v1", "apis/apps/v1", f"apis/{GROUP}/v1"} <= set(paths)
    url = paths["apis/apps/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/apps/v1?hash=")
    assert len(url.split("hash=")[1]) == 128


async def test_v3_crd_schema_is_the_crds_with_standard_fields(http: Http) -> None:
    """A CRD's component schema is its openAPIV3Schema plus apiVersion, kind and metadata."""
    document = await _v3(http, f"apis/{GROUP}/v1")
    schemas = document["components"]["schemas"]
    lamp = schemas["dev.pyctrl.openapi.v1.Lamp"]
    assert lamp["x-kubernetes-group-version-kind"] == [_gvk(GROUP, "v1", "Lamp")]
    assert lamp["properties"]["spec"] == SCHEMA["properties"]["spec"]
    assert lamp["properties"]["metadata"]["allOf"] == [
        {"$ref": f"#/components/schemas/{META}.ObjectMeta"}
    ]
    assert set(schemas[f"{META}.ObjectMeta"]["properties"]) >= {"name", "labels", "finalizers"}
    lamp_list = schemas["dev.pyctrl.openapi.v1.LampList"]
    assert lamp_list["x-kubernetes-group-version-kind"] == [_gvk(GROUP, "v1", "LampList")]
    assert lamp_list["properties"]["items"]["items"] == {
        "$ref": "#/components/schemas/dev.pyctrl.openapi.v1.Lamp"
    }


async def test_v3_patch_operations_offer_field_validation(http: Http) -> None:
    """PATCH operations carry the kind's GVK and the fieldValidation parameter kubectl looks for."""
    document = await _v3(http, f"apis/{GROUP}/v1")
    item = document["paths"][f"/apis/{GROUP}/v1/namespaces/{{namespace}}/lamps/{{name}}"]
    patch = item["patch"]
    assert patch["x-kubernetes-group-version-kind"] == _gvk(GROUP, "v1", "Lamp")
    assert patch["x-kubernetes-action"] == "patch"
    assert "fieldValidation" in {p["name"] for p in patch["parameters"]}
    assert set(patch["requestBody"]["content"]) == {
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/apply-patch+yaml",
    }
    status_patch = document["paths"][
        f"/apis/{GROUP}/v1/namespaces/{{namespace}}/lamps/{{name}}/status"
    ]["patch"]
    assert status_patch["x-kubernetes-group-version-kind"] == _gvk(GROUP, "v1", "Lamp")


async def test_v3_builtin_kinds_have_gvk_and_operations(http: Http) -> None:
    """Built-in kinds get GVK-tagged schemas and operations, scale included."""
    document = await _v3(http, "apis/apps/v1")
    schemas = document["components"]["schemas"]
    deployment = schemas["io.k8s.api.apps.v1.Deployment"]
    assert deployment["x-kubernetes-group-version-kind"] == [_gvk("apps", "v1", "Deployment")]
    assert {"apiVersion", "kind", "metadata", "spec", "status"} <= set(deployment["properties"])
    paths = document["paths"]
    assert "/apis/apps/v1/deployments" in paths
    scale = paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]["patch"]
    assert scale["x-kubernetes-group-version-kind"] == _gvk("autoscaling", "v1", "Scale")
    assert "io.k8s.api.autoscaling.v1.Scale" in schemas


async def test_v3_builtin_schemas_are_complete_with_merge_keys(http: Http) -> None:
    """Built-in kinds are published in full, with kube-apiserver's list and patch extensions."""
    document = await _v3(http, "apis/apps/v1")
    schemas = document["components"]["schemas"]
    deployment_spec = schemas["io.k8s.api.apps.v1.DeploymentSpec"]
    assert deployment_spec["required"] == ["selector", "template"]
    assert deployment_spec["properties"]["template"] == {
        "$ref": "#/components/schemas/io.k8s.api.core.v1.PodTemplateSpec"
    }
    assert deployment_spec["properties"]["strategy"] == {
        "allOf": [{"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentStrategy"}],
        "x-kubernetes-patch-strategy": "retainKeys",
    }
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["items"] == {"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}
    assert {k: v for k, v in containers.items() if k.startswith("x-")} == {
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        "x-kubernetes-patch-merge-key": "name",
        "x-kubernetes-patch-strategy": "merge",
    }
    ports = schemas["io.k8s.api.core.v1.Container"]["properties"]["ports"]
    assert ports["x-kubernetes-list-map-keys"] == ["containerPort", "protocol"]
    assert ports["x-kubernetes-patch-merge-key"] == "containerPort"
    volumes = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["volumes"]
    assert volumes["x-kubernetes-patch-strategy"] == "merge,retainKeys"
    conditions = schemas["io.k8s.api.apps.v1.DeploymentStatus"]["properties"]["conditions"]
    assert conditions["x-kubernetes-patch-merge-key"] == "type"
    max_surge = schemas["io.k8s.api.apps.v1.RollingUpdateDeployment"]["properties"]["maxSurge"]
    assert max_surge["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.util.intstr.IntOrString"}
    ]
    assert schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["oneOf"] == [
        {"type": "integer"},
        {"type": "string"},
    ]
    label_selector = schemas["io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"]
    assert label_selector["x-kubernetes-map-type"] == "atomic"


async def test_v3_builtin_patch_accepts_strategic_merge_patches(http: Http) -> None:
    """Built-in PATCH operations accept strategic merge patches, so kubectl computes them."""
    document = await _v3(http, "apis/apps/v1")
    item = document["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]
    assert list(item["patch"]["requestBody"]["content"]) == [
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
    ]


async def test_v2_builtin_definitions_carry_merge_keys(http: Http) -> None:
    """The v2 document has the same full built-in definitions, references under definitions."""
    _, _, document = await http.get("/openapi/v2")
    definitions = document["definitions"]
    ports = definitions["io.k8s.api.core.v1.ServiceSpec"]["properties"]["ports"]
    assert ports["items"] == {"$ref": "#/definitions/io.k8s.api.core.v1.ServicePort"}
    assert ports["x-kubernetes-patch-merge-key"] == "port"
    assert ports["x-kubernetes-list-map-keys"] == ["port", "protocol"]
    target_port = definitions["io.k8s.api.core.v1.ServicePort"]["properties"]["targetPort"]
    assert target_port["$ref"] == "#/definitions/io.k8s.apimachinery.pkg.util.intstr.IntOrString"
    assert definitions["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["type"] == "string"


async def test_v3_document_with_outdated_hash_redirects(http: Http) -> None:
    """A v3 URL with an outdated hash redirects to the current one."""
    _, _, index = await http.get("/openapi/v3")
    current = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
    status, headers, _ = await http.get("/openapi/v3/apis/apps/v1?hash=0123")
    assert status == 301
    assert headers["Location"] == current


async def test_v3_hashed_document_is_immutable(http: Http) -> None:
    """A v3 document fetched by its hash may be cached forever; its ETag is the hash."""
    _, _, index = await http.get("/openapi/v3")
    url = index["paths"]["api/v1"]["serverRelativeURL"]
    _, headers, _ = await http.get(url)
    assert "immutable" in headers["Cache-Control"]
    assert headers["ETag"] == f'"{url.split("hash=")[1]}"'


async def test_v3_unknown_group_version_is_not_found(http: Http) -> None:
    """A v3 document for a group version the server does not serve is a 404 Status."""
    status, _, body = await http.get("/openapi/v3/apis/nope.example.com/v1")
    assert status == 404
    assert body["reason"] == "NotFound"


async def test_v3_lists_a_crd_installed_later(env: Environment, http: Http) -> None:
    """Installing a CRD adds its kind to the group version's document and changes its hash."""
    _, _, before = await http.get("/openapi/v3")
    await env.install_crds([lamp_crd("lanterns", "Lantern")])
    _, _, after = await http.get("/openapi/v3")
    path = f"apis/{GROUP}/v1"
    assert after["paths"][path] != before["paths"][path]
    document = await _v3(http, path)
    assert "dev.pyctrl.openapi.v1.Lantern" in document["components"]["schemas"]


async def test_v2_has_definitions_with_gvk(http: Http) -> None:
    """/openapi/v2 is a Swagger 2.0 document whose definitions carry their GVK."""
    status, headers, document = await http.get("/openapi/v2")
    assert status == 200
    assert headers["Content-Type"].startswith("application/json")
    assert document["swagger"] == "2.0"
    definitions = document["definitions"]
    assert definitions["io.k8s.api.core.v1.ConfigMap"]["x-kubernetes-group-version-kind"] == [
        _gvk("", "v1", "ConfigMap")
    ]
    assert definitions["dev.pyctrl.openapi.v1.Lamp"]["properties"]["metadata"]["$ref"] == (
        f"#/definitions/{META}.ObjectMeta"
    )
    patch = document["paths"][f"/apis/{GROUP}/v1/namespaces/{{namespace}}/lamps/{{name}}"]["patch"]
    assert "application/merge-patch+json" in patch["consumes"]


async def test_v2_drops_what_swagger_2_cannot_express(http: Http) -> None:
    """The v2 schema of a CRD drops nullable and oneOf, as kube-apiserver's v2 conversion does."""
    _, _, document = await http.get("/openapi/v2")
    spec = document["definitions"]["dev.pyctrl.openapi.v1.Lamp"]["properties"]["spec"]
    assert spec["properties"]["note"] == {}
    assert "oneOf" not in spec["properties"]["either"]
    assert spec["properties"]["watts"] == {"type": "integer", "minimum": 1, "description": "Power."}


async def test_v2_is_served_as_protobuf_when_asked(http: Http) -> None:
    """/openapi/v2 answers client-go's protobuf Accept with the gnostic encoding."""
    headers = {"Authorization": http.auth, "Accept": PROTOBUF_V2}
    async with http.session.get(http.base + "/openapi/v2", headers=headers, ssl=http.ssl) as r:
        body = await r.read()
        assert r.status == 200
        assert r.headers["Content-Type"] == (
            "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
        )
    assert body.startswith(b"\n\x032.0")  # field 1 (swagger), "2.0"
    assert b"io.k8s.api.apps.v1.Deployment" in body
    assert b"x-kubernetes-group-version-kind" in body


async def test_v2_unsupported_media_type_is_not_acceptable(http: Http) -> None:
    """/openapi/v2 answers 406 for an Accept header it cannot satisfy."""
    status, _, body = await http.get("/openapi/v2", accept="application/xml")
    assert status == 406
    assert body["reason"] == "NotAcceptable"


def test_protobuf_encoding_of_a_schema() -> None:
    """The protobuf encoder writes proto3 wire format: keys, lengths, varints and doubles."""
    document = {
        "swagger": "2.0",
        "info": {"title": "T", "version": "v"},
        "paths": {},
        "definitions": {"K": {"type": "object", "minimum": 1.5, "maxLength": 300}},
    }
    encoded = openapi_v2_protobuf(document)
    schema = b"I" + struct.pack("<d", 1.5) + b"X\xac\x02" + b"\xb2\x01\x08\n\x06object"
    named = b"\n\x01K\x12" + bytes([len(schema)]) + schema
    definitions = b"\n" + bytes([len(named)]) + named
    assert encoded == (
        b"\n\x032.0"
        + b"\x12\x06\n\x01T\x12\x01v"
        + b"B\x00"
        + b"J"
        + bytes([len(definitions)])
        + definitions
        + b"j\x00"
    )
