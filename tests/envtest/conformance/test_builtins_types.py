"""Values of the wrong JSON type in built-in objects: refused as decoding them refuses them.

kube-apiserver decodes a built-in object into its Go struct with Go's JSON decoder, whose
type errors answer 400 for creates and updates (``json: cannot unmarshal string into Go
struct field DeploymentSpec.spec.replicas of type int32``), and 422 naming the patch for
JSON, merge and strategic merge patches (handlers/patch.go). The types' own unmarshalers
(IntOrString, Quantity) report their own errors; server-side apply fails its typed
conversion (structured-merge-diff). IntOrString takes both kinds, and null fits any field.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.envtest.conftest import deployment

if TYPE_CHECKING:
    from tests.envtest.conftest import Kube

# Built-in kinds: the CRD-only server has none.
pytestmark = pytest.mark.needs_builtin_kinds


_DECODE_DEPLOYMENT = 'Deployment in version "v1" cannot be handled as a Deployment: '


def _container(body: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = body["spec"]["template"]["spec"]["containers"][0]
    return container


async def test_string_for_an_int32_is_a_400_and_nothing_is_stored(kube: Kube, ns: str) -> None:
    """A create whose replicas is a string answers Go's decoding error."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    status, answer, _ = await kube.post(path, deployment("web", replicas="three"))
    assert status == 400, answer
    assert answer["reason"] == "BadRequest"
    assert answer["message"] == _DECODE_DEPLOYMENT + (
        "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of "
        "type int32"
    )
    missing, _, _ = await kube.get(f"{path}/web")
    assert missing == 404


async def test_nested_field_is_named_by_its_struct_and_go_path(kube: Kube, ns: str) -> None:
    """In a list item, the innermost struct and the path of field names (no indexes)."""
    body = deployment("web")
    _container(body)["ports"] = [{"containerPort": "80"}]
    status, answer, _ = await kube.post(f"/apis/apps/v1/namespaces/{ns}/deployments", body)
    assert status == 400, answer
    assert answer["message"] == _DECODE_DEPLOYMENT + (
        "json: cannot unmarshal string into Go struct field "
        "ContainerPort.spec.template.spec.containers.ports.containerPort of type int32"
    )


async def test_fraction_for_an_integer_names_the_number(kube: Kube, ns: str) -> None:
    """A number with a fraction does not fit an int32: Go quotes the number."""
    body = deployment("web", replicas=1.5)
    status, answer, _ = await kube.post(f"/apis/apps/v1/namespaces/{ns}/deployments", body)
    assert status == 400, answer
    assert answer["message"] == _DECODE_DEPLOYMENT + (
        "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas "
        "of type int32"
    )


async def test_configmap_data_of_the_wrong_type(kube: Kube, ns: str) -> None:
    """A number among the data, or data that is no map: the map's Go types are named."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    status, answer, _ = await kube.post(path, {"metadata": {"name": "cm"}, "data": {"a": 1}})
    assert status == 400, answer
    assert answer["reason"] == "BadRequest"
    assert answer["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal '
        "number into Go struct field ConfigMap.data of type string"
    )
    status, answer, _ = await kube.post(path, {"metadata": {"name": "cm"}, "data": "x"})
    assert status == 400, answer
    assert answer["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal '
        "string into Go struct field ConfigMap.data of type map[string]string"
    )


async def test_type_error_comes_before_strict_unknown_fields(kube: Kube, ns: str) -> None:
    """With fieldValidation=Strict, a type error is reported rather than unknown fields."""
    body = {"metadata": {"name": "cm"}, "bogus": 1, "data": {"a": True}}
    status, answer, _ = await kube.post(
        f"/api/v1/namespaces/{ns}/configmaps", body, params={"fieldValidation": "Strict"}
    )
    assert status == 400, answer
    assert answer["message"].endswith(
        "json: cannot unmarshal bool into Go struct field ConfigMap.data of type string"
    )


async def test_update_with_a_wrong_type_is_a_400(kube: Kube, ns: str) -> None:
    """A PUT body is decoded the same way; the stored object is unchanged."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    created = await kube.create_ok(path, deployment("web"))
    created["spec"]["paused"] = "yes"
    status, answer, _ = await kube.put(f"{path}/web", created)
    assert status == 400, answer
    assert answer["message"] == _DECODE_DEPLOYMENT + (
        "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.paused of type bool"
    )
    stored = await kube.get_ok(f"{path}/web")
    assert stored["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_merge_patch_to_a_wrong_type_is_invalid(kube: Kube, ns: str) -> None:
    """A merge patch whose result does not decode is a 422 naming the patched object."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    await kube.create_ok(path, deployment("web"))
    status, answer, _ = await kube.patch(f"{path}/web", {"spec": {"replicas": "three"}})
    assert status == 422, answer
    assert answer["reason"] == "Invalid"
    assert answer["message"].startswith(' "" is invalid: patch: Invalid value: "{')
    assert answer["message"].endswith(
        '": json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas '
        "of type int32"
    )
    [cause] = answer["details"]["causes"]
    assert cause["field"] == "patch"
    assert cause["reason"] == "FieldValueInvalid"
    stored = await kube.get_ok(f"{path}/web")
    assert stored["spec"]["replicas"] == 1


async def test_json_patch_to_a_wrong_type_is_invalid(kube: Kube, ns: str) -> None:
    """A JSON patch is decoded the same way as a merge patch."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, {"metadata": {"name": "cm"}, "data": {"a": "b"}})
    status, answer, _ = await kube.patch(
        f"{path}/cm", [{"op": "replace", "path": "/data/a", "value": 7}], "json"
    )
    assert status == 422, answer
    assert answer["message"].endswith(
        '": json: cannot unmarshal number into Go struct field ConfigMap.data of type string'
    )


async def test_strategic_merge_patch_to_a_wrong_type_is_invalid(kube: Kube, ns: str) -> None:
    """A strategic merge patch's result is converted from a map: the converter's words."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    await kube.create_ok(path, deployment("web"))
    status, answer, _ = await kube.patch(
        f"{path}/web", {"spec": {"replicas": "three"}}, "strategic"
    )
    assert status == 422, answer
    assert answer["message"] == (
        ' "" is invalid: patch: Invalid value: "map[spec:map[replicas:three]]": '
        "unrecognized type: int32"
    )


async def test_server_side_apply_of_a_wrong_type_fails_the_typed_conversion(
    kube: Kube, ns: str
) -> None:
    """An apply patch with a string for an integer fails structured-merge-diff's check."""
    body = deployment("web", replicas="three")
    body["metadata"]["namespace"] = ns
    status, answer, _ = await kube.patch(
        f"/apis/apps/v1/namespaces/{ns}/deployments/web",
        body,
        "apply",
        params={"fieldManager": "tests"},
    )
    assert status == 500, answer
    assert answer["message"] == (
        f"failed to create typed patch object ({ns}/web; apps/v1, Kind=Deployment): "
        ".spec.replicas: expected numeric (int or float), got string"
    )


async def test_int_or_string_takes_an_integer_or_a_string(kube: Kube, ns: str) -> None:
    """maxSurge, maxUnavailable and targetPort accept both kinds, stored as sent."""
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2, "maxUnavailable": "25%"}}
    obj = await kube.create_ok(
        f"/apis/apps/v1/namespaces/{ns}/deployments", deployment("web", strategy=strategy)
    )
    assert obj["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 2, "maxUnavailable": "25%"}
    ports = [
        {"name": "http", "port": 80, "targetPort": "http"},
        {"name": "admin", "port": 81, "targetPort": 8081},
    ]
    service = await kube.create_ok(
        f"/api/v1/namespaces/{ns}/services",
        {"metadata": {"name": "svc"}, "spec": {"selector": {"app": "web"}, "ports": ports}},
    )
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["http", 8081]


async def test_int_or_string_refuses_other_kinds(kube: Kube, ns: str) -> None:
    """IntOrString's own unmarshaler reports a bool without naming the field."""
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": True}}
    status, answer, _ = await kube.post(
        f"/apis/apps/v1/namespaces/{ns}/deployments", deployment("web", strategy=strategy)
    )
    assert status == 400, answer
    assert answer["message"] == (
        _DECODE_DEPLOYMENT + "json: cannot unmarshal bool into Go value of type int32"
    )


async def test_quantity_takes_a_number_and_refuses_a_bad_string(kube: Kube, ns: str) -> None:
    """A resource quantity may be a JSON number; an unparsable string fails decoding."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    body = deployment("web")
    _container(body)["resources"] = {"limits": {"cpu": 1, "memory": "64Mi"}}
    await kube.create_ok(path, body)
    body = deployment("other")
    _container(body)["resources"] = {"limits": {"cpu": "lots"}}
    status, answer, _ = await kube.post(path, body)
    assert status == 400, answer
    assert answer["message"] == _DECODE_DEPLOYMENT + (
        "quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )


async def test_null_fits_any_field(kube: Kube, ns: str) -> None:
    """null leaves a field unset, whatever its type: defaults then apply."""
    body = deployment("web", replicas=None, paused=None, strategy=None)
    _container(body)["ports"] = None
    obj = await kube.create_ok(f"/apis/apps/v1/namespaces/{ns}/deployments", body)
    assert obj["spec"]["replicas"] == 1
    assert obj["spec"]["strategy"]["type"] == "RollingUpdate"
    assert "ports" not in obj["spec"]["template"]["spec"]["containers"][0]


async def test_scale_with_a_string_is_a_400(kube: Kube, ns: str) -> None:
    """The body of a /scale write is decoded into autoscaling/v1 Scale."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    await kube.create_ok(path, deployment("web"))
    scale = await kube.get_ok(f"{path}/web/scale")
    scale["spec"]["replicas"] = "3"
    status, answer, _ = await kube.put(f"{path}/web/scale", scale)
    assert status == 400, answer
    assert answer["message"] == (
        'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal string '
        "into Go struct field ScaleSpec.spec.replicas of type int32"
    )
