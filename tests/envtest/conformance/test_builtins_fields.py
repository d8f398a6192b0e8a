"""Unknown fields in built-in objects: dropped, and reported as ``fieldValidation`` asks.

kube-apiserver decodes built-in objects into their Go structs: an undeclared field never
reaches storage. ``fieldValidation=Warn`` (the default) answers a ``Warning`` header per
field, ``Strict`` refuses the request (400 for creates and updates, 422 naming the patch
for patches), ``Ignore`` says nothing; server-side apply refuses undeclared fields
whatever it is asked (staging/src/k8s.io/apiserver/pkg/endpoints/handlers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.envtest.conftest import deployment

if TYPE_CHECKING:
    from multidict import CIMultiDict

    from tests.envtest.conftest import Kube


# Built-in kinds: the CRD-only server has none.
pytestmark = pytest.mark.needs_builtin_kinds


def _warnings(headers: CIMultiDict[str]) -> list[str]:
    return headers.getall("Warning", [])


async def test_unknown_field_is_dropped_with_a_warning(kube: Kube, ns: str) -> None:
    """By default an unknown top-level field is dropped and named in a Warning header."""
    body = {"metadata": {"name": "cm"}, "data": {"a": "b"}, "bogus": 1}
    status, obj, headers = await kube.post(f"/api/v1/namespaces/{ns}/configmaps", body)
    assert status == 201, obj
    assert "bogus" not in obj
    assert _warnings(headers) == ['299 - "unknown field \\"bogus\\""']
    stored = await kube.get_ok(f"/api/v1/namespaces/{ns}/configmaps/cm")
    assert "bogus" not in stored
    assert stored["data"] == {"a": "b"}


async def test_strict_create_is_refused_naming_the_field(kube: Kube, ns: str) -> None:
    """fieldValidation=Strict turns an unknown field into kube-apiserver's 400."""
    body = {"metadata": {"name": "cm"}, "bogus": 1}
    status, answer, _ = await kube.post(
        f"/api/v1/namespaces/{ns}/configmaps", body, params={"fieldValidation": "Strict"}
    )
    assert status == 400
    assert answer["reason"] == "BadRequest"
    assert answer["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'unknown field "bogus"'
    )
    missing, _, _ = await kube.get(f"/api/v1/namespaces/{ns}/configmaps/cm")
    assert missing == 404


async def test_ignore_drops_the_field_silently(kube: Kube, ns: str) -> None:
    """fieldValidation=Ignore drops unknown fields without a warning."""
    body = {"metadata": {"name": "cm"}, "bogus": 1}
    status, obj, headers = await kube.post(
        f"/api/v1/namespaces/{ns}/configmaps", body, params={"fieldValidation": "Ignore"}
    )
    assert status == 201, obj
    assert "bogus" not in obj
    assert _warnings(headers) == []


async def test_nested_unknown_fields_are_named_by_path(kube: Kube, ns: str) -> None:
    """Unknown fields anywhere (metadata, a list item) are listed in document order."""
    body = deployment("web", container={"bogusField": True})
    body["metadata"]["bogusMeta"] = "x"
    body["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "nope": 1}]
    status, answer, _ = await kube.post(
        f"/apis/apps/v1/namespaces/{ns}/deployments", body, params={"fieldValidation": "Strict"}
    )
    assert status == 400
    assert answer["message"] == (
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
        'unknown field "metadata.bogusMeta", '
        'unknown field "spec.template.spec.containers[0].bogusField", '
        'unknown field "spec.template.spec.containers[0].ports[0].nope"'
    )


async def test_nested_unknown_field_is_dropped_and_the_rest_kept(kube: Kube, ns: str) -> None:
    """A container's unknown field goes; its known fields and free-form values stay."""
    body = deployment("web", container={"bogusField": True})
    body["spec"]["strategy"] = {"rollingUpdate": {"maxSurge": 2, "maxUnavailable": "10%"}}
    status, obj, headers = await kube.post(f"/apis/apps/v1/namespaces/{ns}/deployments", body)
    assert status == 201, obj
    container = obj["spec"]["template"]["spec"]["containers"][0]
    assert "bogusField" not in container
    assert container["image"] == "nginx:1.27"
    assert obj["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 2, "maxUnavailable": "10%"}
    assert _warnings(headers) == [
        '299 - "unknown field \\"spec.template.spec.containers[0].bogusField\\""'
    ]


async def test_strict_update_is_refused(kube: Kube, ns: str) -> None:
    """A PUT with an unknown field and Strict validation answers the same 400."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    created = await kube.create_ok(path, {"metadata": {"name": "cm"}})
    created["extra"] = {"x": 1}
    status, answer, _ = await kube.put(f"{path}/cm", created, params={"fieldValidation": "Strict"})
    assert status == 400
    assert answer["message"].endswith('strict decoding error: unknown field "extra"')


async def test_merge_patch_warns_then_strict_is_invalid(kube: Kube, ns: str) -> None:
    """A merge patch adding an unknown field warns; with Strict it is a 422 on ``patch``."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    await kube.create_ok(path, deployment("web"))
    status, obj, headers = await kube.patch(f"{path}/web", {"spec": {"bogus": 1, "paused": True}})
    assert status == 200, obj
    assert obj["spec"]["paused"] is True
    assert "bogus" not in obj["spec"]
    assert _warnings(headers) == ['299 - "unknown field \\"spec.bogus\\""']

    status, answer, _ = await kube.patch(
        f"{path}/web", {"spec": {"bogus": 1}}, params={"fieldValidation": "Strict"}
    )
    assert status == 422
    assert answer["reason"] == "Invalid"
    assert answer["message"].startswith(' "" is invalid: patch: Invalid value: "{')
    assert answer["message"].endswith('": strict decoding error: unknown field "spec.bogus"')
    [cause] = answer["details"]["causes"]
    assert cause["field"] == "patch"


async def test_strategic_merge_patch_strict_names_the_patch(kube: Kube, ns: str) -> None:
    """A strict strategic merge patch is refused with the patch printed as a Go map."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    await kube.create_ok(path, deployment("web"))
    status, answer, _ = await kube.patch(
        f"{path}/web",
        {"spec": {"bogus": 1, "replicas": 2}},
        "strategic",
        params={"fieldValidation": "Strict"},
    )
    assert status == 422
    assert answer["message"] == (
        ' "" is invalid: patch: Invalid value: "map[spec:map[bogus:1 replicas:2]]": '
        'strict decoding error: unknown field "spec.bogus"'
    )


async def test_server_side_apply_refuses_undeclared_fields(kube: Kube, ns: str) -> None:
    """An apply patch with an undeclared field fails its typed conversion, even with Ignore."""
    body = deployment("web", container={"bogusField": True})
    body["metadata"]["namespace"] = ns
    status, answer, _ = await kube.patch(
        f"/apis/apps/v1/namespaces/{ns}/deployments/web",
        body,
        "apply",
        params={"fieldManager": "tests", "fieldValidation": "Ignore"},
    )
    assert status == 500
    assert answer["message"] == (
        f"failed to create typed patch object ({ns}/web; apps/v1, Kind=Deployment): "
        '.spec.template.spec.containers[name="app"].bogusField: field not declared in schema'
    )


async def test_unknown_status_field_on_status_write_warns(kube: Kube, ns: str) -> None:
    """The status subresource reports unknown status fields too, and keeps the known ones."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    await kube.create_ok(path, deployment("web"))
    status, obj, headers = await kube.patch(
        f"{path}/web/status", {"status": {"replicas": 1, "bogus": True}}
    )
    assert status == 200, obj
    assert obj["status"]["replicas"] == 1
    assert "bogus" not in obj["status"]
    assert _warnings(headers) == ['299 - "unknown field \\"status.bogus\\""']


async def test_crd_schema_unknown_fields_are_dropped(kube: Kube) -> None:
    """A CRD is a built-in object too: unknown fields of its schema are dropped."""
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.fields.pyctrl.dev"},
        "spec": {
            "group": "fields.pyctrl.dev",
            "names": {"kind": "Gadget", "plural": "gadgets"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "x-kubernetes-preserve-unknown-fields": True,
                                    "typo": "string",
                                },
                                # JSONSchemaPropsOrArray decodes without strictness.
                                "tags": {"type": "array", "items": {"type": "string", "x": 1}},
                            },
                        }
                    },
                }
            ],
        },
    }
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    status, obj, headers = await kube.post(path, crd)
    try:
        assert status == 201, obj
        spec_schema = obj["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
        assert spec_schema["spec"] == {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
        }
        assert spec_schema["tags"]["items"] == {"type": "string"}
        assert _warnings(headers) == [
            '299 - "unknown field '
            '\\"spec.versions[0].schema.openAPIV3Schema.properties.spec.typo\\""'
        ]
    finally:
        await kube.delete(f"{path}/gadgets.fields.pyctrl.dev")


async def test_unknown_field_in_a_scale_write_warns(kube: Kube, ns: str) -> None:
    """A /scale body is decoded as autoscaling/v1 Scale: an unknown field is warned about."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    await kube.create_ok(path, deployment("web"))
    scale = await kube.get_ok(f"{path}/web/scale")
    scale["spec"] = {"replicas": 2, "bogus": 1}
    status, answer, headers = await kube.put(f"{path}/web/scale", scale)
    assert status == 200, answer
    assert answer["spec"] == {"replicas": 2}
    assert _warnings(headers) == ['299 - "unknown field \\"spec.bogus\\""']


async def test_unknown_field_in_a_strict_scale_write_is_refused(kube: Kube, ns: str) -> None:
    """With Strict, a /scale PUT with an unknown field is a 400 and a patch a 422."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    await kube.create_ok(path, deployment("web"))
    scale = await kube.get_ok(f"{path}/web/scale")
    scale["spec"] = {"replicas": 2, "bogus": 1}
    strict = {"fieldValidation": "Strict"}
    status, answer, _ = await kube.put(f"{path}/web/scale", scale, params=strict)
    assert status == 400
    assert answer["message"] == (
        'Scale in version "v1" cannot be handled as a Scale: strict decoding error: '
        'unknown field "spec.bogus"'
    )
    status, answer, _ = await kube.patch(
        f"{path}/web/scale", {"spec": {"replicas": 3, "bogus": 1}}, params=strict
    )
    assert status == 422
    assert answer["message"].startswith(' "" is invalid: patch: Invalid value: "{')
    assert answer["message"].endswith('": strict decoding error: unknown field "spec.bogus"')
    stored = await kube.get_ok(f"{path}/web")
    assert stored["spec"]["replicas"] == 1


_IMMUTABLE = "Forbidden: field is immutable when `immutable` is set"


async def test_immutable_configmap_refuses_changes_to_its_data(kube: Kube, ns: str) -> None:
    """An immutable ConfigMap keeps its data, binaryData and immutable flag."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    body = {"metadata": {"name": "frozen"}, "data": {"a": "1"}, "immutable": True}
    await kube.create_ok(path, body)
    status, answer, _ = await kube.patch(
        f"{path}/frozen", {"data": {"a": "2"}, "binaryData": {"b": "AA=="}, "immutable": False}
    )
    assert status == 422
    assert answer["message"] == (
        'ConfigMap "frozen" is invalid: [immutable: ' + _IMMUTABLE + ", data: " + _IMMUTABLE
        + ", binaryData: " + _IMMUTABLE + "]"
    )  # fmt: skip
    assert [c["field"] for c in answer["details"]["causes"]] == ["immutable", "data", "binaryData"]
    status, _, _ = await kube.patch(f"{path}/frozen", {"metadata": {"labels": {"x": "y"}}})
    assert status == 200


async def test_immutable_secret_refuses_changes_to_its_data(kube: Kube, ns: str) -> None:
    """An immutable Secret keeps its data (stringData included) but takes metadata changes."""
    path = f"/api/v1/namespaces/{ns}/secrets"
    await kube.create_ok(
        path, {"metadata": {"name": "s"}, "data": {"a": "MQ=="}, "immutable": True}
    )
    status, answer, _ = await kube.patch(f"{path}/s", {"stringData": {"a": "2"}})
    assert status == 422
    assert answer["message"] == 'Secret "s" is invalid: data: ' + _IMMUTABLE
    status, _, _ = await kube.patch(f"{path}/s", {"metadata": {"labels": {"x": "y"}}})
    assert status == 200


async def test_secret_type_is_immutable(kube: Kube, ns: str) -> None:
    """A Secret's type cannot change (an update without one defaults it to Opaque)."""
    path = f"/api/v1/namespaces/{ns}/secrets"
    await kube.create_ok(path, {"metadata": {"name": "s"}, "data": {"a": "MQ=="}})
    status, answer, _ = await kube.patch(f"{path}/s", {"type": "example.com/custom"})
    assert status == 422
    assert answer["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "example.com/custom": field is immutable',
            "field": "type",
        }
    ]


@pytest.mark.parametrize(
    ("kind", "data", "fields"),
    [
        ("kubernetes.io/tls", {}, ["data[tls.crt]", "data[tls.key]"]),
        ("kubernetes.io/tls", {"tls.crt": ""}, ["data[tls.key]"]),
        ("kubernetes.io/dockerconfigjson", {}, ["data[.dockerconfigjson]"]),
        ("kubernetes.io/basic-auth", {}, ["data[username]", "data[password]"]),
        ("kubernetes.io/ssh-auth", {}, ["data[ssh-privatekey]"]),
        (
            "kubernetes.io/service-account-token",
            {},
            ["metadata.annotations[kubernetes.io/service-account.name]"],
        ),
    ],
)
async def test_secret_types_require_their_keys(
    kube: Kube, ns: str, kind: str, data: dict[str, str], fields: list[str]
) -> None:
    """Each well-known Secret type requires its data keys, all reported at once."""
    body = {"metadata": {"name": "typed"}, "type": kind, "data": data}
    status, answer, _ = await kube.post(f"/api/v1/namespaces/{ns}/secrets", body)
    assert status == 422, answer
    assert answer["details"]["causes"] == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": field}
        for field in fields
    ]


async def test_tls_secret_with_both_keys_is_accepted(kube: Kube, ns: str) -> None:
    """A kubernetes.io/tls Secret with tls.crt and tls.key is created."""
    body = {
        "metadata": {"name": "tls"},
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": "Y3J0", "tls.key": "a2V5"},
    }
    created = await kube.create_ok(f"/api/v1/namespaces/{ns}/secrets", body)
    assert created["type"] == "kubernetes.io/tls"
