"""CustomResourceDefinitions: establishing, schema validation, defaulting, pruning, versions.

Each test installs its CRDs in a group of its own (the ``group`` fixture) through
`Environment.install_crds`, which waits until they are served and, on a shared cluster,
removes them at the end.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import pytest

from tests.envtest.conformance.test_server_delete import wait_gone
from tests.envtest.conftest import unique

if TYPE_CHECKING:
    from pyctrl.envtest import Environment
    from tests.envtest.conftest import Kube

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


def crd(group: str, *, scope: str = "Namespaced") -> dict[str, Any]:
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
        "metadata": {"name": f"mysrvs.{group}"},
        "spec": {
            "group": group,
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


def srv(group: str, name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{group}/v1", "kind": "MySrv", "metadata": {"name": name}, "spec": spec}


@pytest.fixture
def group() -> str:
    """An API group no other test uses."""
    return f"{unique('g')}.example.com"


async def install(env: Environment, definition: dict[str, Any]) -> dict[str, Any]:
    """Install a CRD and wait until it is Established and served; returns it as read then."""
    [installed] = await env.install_crds([definition])
    return installed


async def test_crd_becomes_established(env: Environment, group: str) -> None:
    """A created CRD gets NamesAccepted and Established conditions and acceptedNames."""
    obj = await install(env, crd(group))
    conditions = {c["type"]: c["status"] for c in obj["status"]["conditions"]}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    assert obj["status"]["acceptedNames"]["kind"] == "MySrv"
    assert obj["status"]["storedVersions"] == ["v1"]


async def test_custom_resources_are_served_after_establishing(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """Once established, the CRD's resources accept creates with generation 1."""
    await install(env, crd(group))
    obj = await kube.create_ok(f"/apis/{group}/v1/namespaces/{ns}/mysrvs", srv(group, "a", port=80))
    assert obj["kind"] == "MySrv"
    assert obj["metadata"]["generation"] == 1


async def test_invalid_crd_is_rejected(kube: Kube, group: str) -> None:
    """A CRD failing apiextensions validation answers 422 with causes."""
    bad = crd(group)
    bad["metadata"]["name"] = "wrong-name"
    status, body, _ = await kube.post(CRD_PATH, bad)
    assert status == 422
    assert body["details"]["kind"] == "CustomResourceDefinition"
    assert body["details"]["causes"]


async def test_schema_violation_is_invalid_with_kind_and_group(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """A custom resource breaking its schema answers Invalid naming Kind.group and the field."""
    await install(env, crd(group))
    status, body, _ = await kube.post(
        f"/apis/{group}/v1/namespaces/{ns}/mysrvs", srv(group, "bad", port=70000)
    )
    assert status == 422
    assert body["message"].startswith(f'MySrv.{group} "bad" is invalid: spec.port: Invalid value: ')
    assert body["details"]["causes"][0]["field"] == "spec.port"


async def test_defaults_are_applied(env: Environment, kube: Kube, ns: str, group: str) -> None:
    """Schema defaults fill missing fields on write."""
    await install(env, crd(group))
    obj = await kube.create_ok(f"/apis/{group}/v1/namespaces/{ns}/mysrvs", srv(group, "d", port=1))
    assert obj["spec"] == {"port": 1, "replicas": 1, "mode": "safe"}


async def test_unknown_fields_are_pruned_with_a_warning(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """Fields the schema does not know are dropped, and a Warning header names them."""
    await install(env, crd(group))
    status, obj, headers = await kube.post(
        f"/apis/{group}/v1/namespaces/{ns}/mysrvs", srv(group, "p", port=1, extra="x")
    )
    assert status == 201
    assert "extra" not in obj["spec"]
    assert 'unknown field \\"spec.extra\\"' in headers["Warning"]


async def test_strict_field_validation_rejects_unknown_fields(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """fieldValidation=Strict turns unknown fields into a BadRequest."""
    await install(env, crd(group))
    status, body, _ = await kube.post(
        f"/apis/{group}/v1/namespaces/{ns}/mysrvs",
        srv(group, "p", port=1, extra="x"),
        params={"fieldValidation": "Strict"},
    )
    assert status == 400
    assert body["message"] == (
        'MySrv in version "v1" cannot be handled as a MySrv: strict decoding error: '
        'unknown field "spec.extra"'
    )


@pytest.mark.parametrize("validation", ["Ignore", "Warn", "Strict"])
async def test_server_side_apply_refuses_undeclared_fields(
    env: Environment, kube: Kube, ns: str, group: str, validation: str
) -> None:
    """An apply is never pruned: its typed conversion fails on an undeclared field.

    structured-merge-diff names the first undeclared field of each object, whatever
    ``fieldValidation`` says, and nothing is stored.
    """
    await install(env, crd(group))
    body = srv(group, "a", port=1, extra="x")
    body["metadata"].update(namespace=ns, bogus="y")
    path = f"/apis/{group}/v1/namespaces/{ns}/mysrvs"
    status, answer, _ = await kube.patch(
        f"{path}/a",
        body,
        "apply",
        params={"fieldManager": "tests", "fieldValidation": validation},
    )
    assert status == 500
    prefix = f"failed to create typed patch object ({ns}/a; {group}/v1, Kind=MySrv): errors:\n  "
    assert answer["message"].startswith(prefix)
    # The walk visits an object's fields in map order: the errors' order is not fixed.
    assert set(answer["message"].removeprefix(prefix).split("\n  ")) == {
        ".metadata.bogus: field not declared in schema",
        ".spec.extra: field not declared in schema",
    }
    status, _, _ = await kube.get(f"{path}/a")
    assert status == 404


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ({"port": "80"}, ".spec.port: expected numeric (int or float), got string"),
        ({"port": True}, ".spec.port: expected numeric (int or float), got bool"),
        ({"mode": 5}, ".spec.mode: expected string, got &value.valueUnstructured{Value:5}"),
        ("x", ".spec: expected map, got &{x}"),
    ],
)
async def test_server_side_apply_refuses_values_of_the_wrong_type(
    env: Environment, kube: Kube, ns: str, group: str, *, spec: Any, error: str
) -> None:
    """The typed conversion of an apply checks each value's JSON type against the schema.

    kube-apiserver answers 500 from structured-merge-diff, before any validation (a
    merge patch with the same value gets a 422 from the schema instead).
    """
    await install(env, crd(group))
    body = srv(group, "t")
    body["metadata"]["namespace"] = ns
    body["spec"] = spec
    path = f"/apis/{group}/v1/namespaces/{ns}/mysrvs/t"
    status, answer, _ = await kube.patch(path, body, "apply", params={"fieldManager": "tests"})
    # A plain error in the handler: 500 with StatusReasonUnknown, which is "" (omitted).
    assert (status, answer.get("reason")) == (500, None)
    assert answer["message"] == (
        f"failed to create typed patch object ({ns}/t; {group}/v1, Kind=MySrv): {error}"
    )
    status, _, _ = await kube.get(path)
    assert status == 404


def crd_with_ports(group: str) -> dict[str, Any]:
    """`crd` with ``spec.ports``, an associative list keyed by ``name``."""
    definition = crd(group)
    schema = copy.deepcopy(SCHEMA)
    schema["properties"]["spec"]["properties"]["ports"] = {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        "items": {
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
        },
    }
    for version in definition["spec"]["versions"]:
        version["schema"] = {"openAPIV3Schema": schema}
    return definition


@pytest.mark.parametrize(
    ("ports", "error"),
    [
        (
            [{"name": "http", "port": 80, "bogus": 1}],
            '.spec.ports[name="http"].bogus: field not declared in schema',
        ),
        (
            [{"name": "http", "port": "eighty"}],
            '.spec.ports[name="http"].port: expected numeric (int or float), got string',
        ),
        (
            ["http"],
            ".spec.ports: element 0: associative list with keys may not have non-map elements",
        ),
    ],
)
async def test_server_side_apply_names_list_items_by_their_keys(
    env: Environment, kube: Kube, ns: str, group: str, *, ports: Any, error: str
) -> None:
    """structured-merge-diff names an item of an associative list by its keys."""
    await install(env, crd_with_ports(group))
    body = srv(group, "k", port=1, ports=ports)
    body["metadata"]["namespace"] = ns
    path = f"/apis/{group}/v1/namespaces/{ns}/mysrvs/k"
    status, answer, _ = await kube.patch(path, body, "apply", params={"fieldManager": "tests"})
    assert status == 500
    assert answer["message"] == (
        f"failed to create typed patch object ({ns}/k; {group}/v1, Kind=MySrv): {error}"
    )


async def test_server_side_apply_of_declared_fields_succeeds(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """The same apply without the undeclared fields creates the object, defaulted."""
    await install(env, crd(group))
    body = srv(group, "a", port=1)
    body["metadata"]["namespace"] = ns
    status, obj, _ = await kube.patch(
        f"/apis/{group}/v1/namespaces/{ns}/mysrvs/a",
        body,
        "apply",
        params={"fieldManager": "tests"},
    )
    assert status == 201, obj
    assert obj["spec"] == {"port": 1, "replicas": 1, "mode": "safe"}


async def test_strategic_merge_patch_of_custom_resource_is_415(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """Custom resources refuse strategic merge patches."""
    await install(env, crd(group))
    path = f"/apis/{group}/v1/namespaces/{ns}/mysrvs"
    await kube.create_ok(path, srv(group, "s", port=1))
    status, body, _ = await kube.patch(f"{path}/s", {"spec": {"port": 2}}, "strategic")
    assert status == 415
    assert body["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    )


async def test_update_needs_resource_version(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """Custom resources do not allow unconditional updates."""
    await install(env, crd(group))
    path = f"/apis/{group}/v1/namespaces/{ns}/mysrvs"
    await kube.create_ok(path, srv(group, "u", port=1))
    status, body, _ = await kube.put(f"{path}/u", srv(group, "u", port=2))
    assert status == 422
    assert (
        "metadata.resourceVersion: Invalid value: 0: must be specified for an update"
        in body["message"]
    )


async def test_status_subresource_does_not_bump_generation(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """Status writes keep generation; spec writes bump it; main writes ignore status."""
    await install(env, crd(group))
    path = f"/apis/{group}/v1/namespaces/{ns}/mysrvs"
    await kube.create_ok(path, srv(group, "g", port=1))
    _, with_status, _ = await kube.patch(f"{path}/g/status", {"status": {"ready": True}})
    assert with_status["status"] == {"ready": True}
    assert with_status["metadata"]["generation"] == 1
    _, main, _ = await kube.patch(f"{path}/g", {"spec": {"port": 2}, "status": {"ready": False}})
    assert main["metadata"]["generation"] == 2
    assert main["status"] == {"ready": True}


async def test_status_is_dropped_on_create(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """A create cannot set status when the CRD has a status subresource."""
    await install(env, crd(group))
    body = srv(group, "c", port=1)
    body["status"] = {"ready": True}
    obj = await kube.create_ok(f"/apis/{group}/v1/namespaces/{ns}/mysrvs", body)
    assert "status" not in obj


async def test_scale_subresource_uses_declared_paths(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """The CRD's scale subresource reads and writes the declared replica paths."""
    await install(env, crd(group))
    path = f"/apis/{group}/v1/namespaces/{ns}/mysrvs"
    await kube.create_ok(path, srv(group, "sc", port=1, replicas=2))
    await kube.patch(f"{path}/sc/status", {"status": {"replicas": 1, "selector": "app=sc"}})
    scale = await kube.get_ok(f"{path}/sc/scale")
    assert scale["spec"] == {"replicas": 2}
    assert scale["status"] == {"replicas": 1, "selector": "app=sc"}
    _, updated, _ = await kube.patch(f"{path}/sc/scale", {"spec": {"replicas": 4}})
    assert updated["spec"]["replicas"] == 4
    obj = await kube.get_ok(f"{path}/sc")
    assert obj["spec"]["replicas"] == 4


async def test_other_served_version_reads_the_same_object(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """With conversion None, another served version shows the object with its apiVersion."""
    await install(env, crd(group))
    await kube.create_ok(f"/apis/{group}/v1/namespaces/{ns}/mysrvs", srv(group, "v", port=5))
    obj = await kube.get_ok(f"/apis/{group}/v1beta1/namespaces/{ns}/mysrvs/v")
    assert obj["apiVersion"] == f"{group}/v1beta1"
    assert obj["spec"]["port"] == 5


async def test_printer_columns_render_as_table(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """Table responses use additionalPrinterColumns evaluated with JSONPath."""
    await install(env, crd(group))
    path = f"/apis/{group}/v1/namespaces/{ns}/mysrvs"
    await kube.create_ok(path, srv(group, "t", port=8080))
    table = await kube.get_ok(path, accept="application/json;as=Table;v=v1;g=meta.k8s.io")
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Port", "Ready"]
    assert table["rows"][0]["cells"] == ["t", 8080, None]


async def test_custom_resource_list_items_keep_type_meta(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """Items of custom resource lists carry apiVersion and kind."""
    await install(env, crd(group))
    path = f"/apis/{group}/v1/namespaces/{ns}/mysrvs"
    await kube.create_ok(path, srv(group, "l", port=1))
    body = await kube.get_ok(path)
    assert body["kind"] == "MySrvList"
    assert body["items"][0]["kind"] == "MySrv"


async def test_deleting_crd_removes_its_resources(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """Deleting a CRD deletes its custom resources, then stops serving them."""
    await install(env, crd(group))
    path = f"/apis/{group}/v1/namespaces/{ns}/mysrvs"
    await kube.create_ok(path, srv(group, "x", port=1))
    status, body, _ = await kube.delete(f"{CRD_PATH}/mysrvs.{group}")
    assert status == 200
    assert "customresourcecleanup.apiextensions.k8s.io" in body["metadata"]["finalizers"]
    await wait_gone(kube, f"{CRD_PATH}/mysrvs.{group}")
    assert (await kube.get(path))[:2] == (404, "404 page not found\n")


@pytest.mark.embedded_only
async def test_registry_generation_bumps_when_crd_is_established(
    env: Environment, group: str
) -> None:
    """Discovery caches see a new registry generation once a CRD is served."""
    assert env.server is not None
    before = env.server.registry.generation
    await install(env, crd(group))
    assert env.server.registry.generation > before
    assert env.server.registry.lookup(group, "v1", "mysrvs") is not None


async def test_cluster_scoped_custom_resources(env: Environment, kube: Kube, group: str) -> None:
    """A cluster-scoped CRD serves its resources without namespaces."""
    await install(env, crd(group, scope="Cluster"))
    obj = await kube.create_ok(f"/apis/{group}/v1/mysrvs", srv(group, "global", port=1))
    assert "namespace" not in obj["metadata"]


async def test_selectable_fields_filter_lists(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """CRD selectableFields are accepted as field selectors."""
    definition = crd(group)
    for version in definition["spec"]["versions"]:
        version["selectableFields"] = [{"jsonPath": ".spec.mode"}]
    await install(env, definition)
    path = f"/apis/{group}/v1/namespaces/{ns}/mysrvs"
    await kube.create_ok(path, srv(group, "f", port=1, mode="fast"))
    await kube.create_ok(path, srv(group, "s", port=1))
    body = await kube.get_ok(path, params={"fieldSelector": "spec.mode=fast"})
    assert [i["metadata"]["name"] for i in body["items"]] == ["f"]


async def test_selectable_fields_of_one_version_need_its_own_schema(kube: Kube, group: str) -> None:
    """Versions sharing one schema cannot differ in selectableFields (the schema is hoisted)."""
    definition = crd(group)
    definition["spec"]["versions"][0]["selectableFields"] = [{"jsonPath": ".spec.mode"}]
    status, body, _ = await kube.post(CRD_PATH, definition)
    assert status == 422, body
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "": may only be set when '
            "`version.schema.openAPIV3Schema` is not included",
            "field": "spec.versions[0].selectableFields",
        }
    ]


# -- validation by the structural schema: formats, patterns, int-or-string, nullable, CEL --

VALIDATED: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {
                    "rule": "self.minReplicas <= self.maxReplicas",
                    "message": "minReplicas must not exceed maxReplicas",
                },
                {
                    "rule": "!has(self.image) || self.image.startsWith('registry.example.com/')",
                    "messageExpression": (
                        "'image ' + self.image + ' is not from registry.example.com'"
                    ),
                    "fieldPath": ".image",
                    "reason": "FieldValueForbidden",
                },
            ],
            "properties": {
                "host": {"type": "string", "format": "hostname"},
                "since": {"type": "string", "format": "date-time"},
                "id": {"type": "string", "format": "uuid"},
                "address": {"type": "string", "format": "ipv4"},
                "name": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$"},
                "port": {"x-kubernetes-int-or-string": True},
                "note": {"type": "string", "nullable": True},
                "tags": {"type": "array", "items": {"type": "string"}},
                "minReplicas": {"type": "integer", "default": 1},
                "maxReplicas": {"type": "integer", "default": 3},
                "image": {"type": "string", "maxLength": 200},
                "size": {
                    "type": "string",
                    "x-kubernetes-validations": [
                        {"rule": "self == oldSelf", "message": "size is immutable"}
                    ],
                },
            },
        }
    },
}

# Type errors block CEL rules; kube-apiserver then says so in a cause of its own.
NOT_CHECKED = (
    "FieldValueInvalid",
    "<nil>",
    "Invalid value: null: some validation rules were not checked because the object was "
    "invalid; correct the existing errors to complete validation",
)


def things_crd(group: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"things.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "things", "singular": "thing", "kind": "Thing"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": VALIDATED},
                }
            ],
        },
    }


def thing(group: str, name: str, /, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{group}/v1", "kind": "Thing", "metadata": {"name": name}, "spec": spec}


def assert_invalid(
    body: dict[str, Any], group: str, name: str, causes: list[tuple[str, str, str]]
) -> None:
    """``body`` is kube-apiserver's 422 Invalid Status for Thing ``name`` with ``causes``.

    kube-openapi visits an object's properties in Go map order, which is random: causes of
    different properties may come in any order, and the message lists them in that order.
    """
    expected = [{"reason": r, "message": m, "field": f} for r, f, m in causes]
    got = (body.get("details") or {}).get("causes") or []
    assert sorted(got, key=repr) == sorted(expected, key=repr)
    causes = [(c["reason"], c["field"], c["message"]) for c in got]
    listed = [f"{field}: {message}" for _, field, message in causes]
    summary = listed[0] if len(listed) == 1 else "[" + ", ".join(listed) + "]"
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'Thing.{group} "{name}" is invalid: {summary}',
        "reason": "Invalid",
        "details": {
            "name": name,
            "group": group,
            "kind": "Thing",
            "causes": [
                {"reason": reason, "message": message, "field": field}
                for reason, field, message in causes
            ],
        },
        "code": 422,
    }


def _type_error(field: str, value: str, type_: str) -> tuple[str, str, str]:
    return (
        "FieldValueTypeInvalid",
        field,
        f'Invalid value: "{value}": {field} in body must be of type {type_}: "{value}"',
    )


@pytest.mark.parametrize(
    ("spec", "causes"),
    [
        pytest.param(
            {"host": "-web"},
            [_type_error("spec.host", "-web", "hostname"), NOT_CHECKED],
            id="hostname",
        ),
        pytest.param(
            {"since": "yesterday"},
            [_type_error("spec.since", "yesterday", "date-time"), NOT_CHECKED],
            id="date-time",
        ),
        pytest.param(
            {"id": "123"}, [_type_error("spec.id", "123", "uuid"), NOT_CHECKED], id="uuid"
        ),
        pytest.param(
            {"address": "10.0.0.256"},
            [_type_error("spec.address", "10.0.0.256", "ipv4"), NOT_CHECKED],
            id="ipv4",
        ),
        pytest.param(
            {"name": "Web"},
            [
                (
                    "FieldValueInvalid",
                    "spec.name",
                    "Invalid value: \"Web\": spec.name in body should match '^[a-z][a-z0-9-]*$'",
                )
            ],
            id="pattern",
        ),
        pytest.param(
            {"port": True},
            [_type_error("spec.port", "boolean", "integer,string"), NOT_CHECKED],
            id="int-or-string",
        ),
        pytest.param(
            {"tags": ["a", None]},
            [_type_error("spec.tags[1]", "null", "string"), NOT_CHECKED],
            id="null-item-not-nullable",
        ),
        pytest.param(
            {"minReplicas": 5, "maxReplicas": 2},
            [
                (
                    "FieldValueInvalid",
                    "spec",
                    "Invalid value: minReplicas must not exceed maxReplicas",
                )
            ],
            id="cel-rule",
        ),
        pytest.param(
            {"image": "docker.io/app"},
            [
                (
                    "FieldValueForbidden",
                    "spec.image",
                    "Forbidden: image docker.io/app is not from registry.example.com",
                )
            ],
            id="cel-message-expression-field-path-reason",
        ),
        pytest.param(
            {"host": "-web", "name": "Web"},
            [
                _type_error("spec.host", "-web", "hostname"),
                (
                    "FieldValueInvalid",
                    "spec.name",
                    "Invalid value: \"Web\": spec.name in body should match '^[a-z][a-z0-9-]*$'",
                ),
                NOT_CHECKED,
            ],
            id="several-causes",
        ),
    ],
)
async def test_schema_violations_are_422_with_field_causes(
    env: Environment,
    kube: Kube,
    ns: str,
    group: str,
    *,
    spec: dict[str, Any],
    causes: list[tuple[str, str, str]],
) -> None:
    """A custom resource breaking its schema is 422 Invalid with kube-apiserver's causes."""
    await install(env, things_crd(group))
    path = f"/apis/{group}/v1/namespaces/{ns}/things"
    status, body, _ = await kube.post(path, thing(group, "bad", **spec))
    assert status == 422
    assert_invalid(body, group, "bad", causes)
    status, _, _ = await kube.get(f"{path}/bad")
    assert status == 404


async def test_valid_formats_int_or_string_and_nulls_are_accepted(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """Valid values pass; null stays where nullable, is dropped or defaulted where not."""
    await install(env, things_crd(group))
    spec = {
        "host": "web-1.example.com",
        "since": "2024-05-01T10:00:00Z",
        "id": "123e4567-e89b-12d3-a456-426614174000",
        "address": "10.0.0.1",
        "name": "web",
        "port": "25%",
        "note": None,
        "image": None,
        "minReplicas": None,
    }
    path = f"/apis/{group}/v1/namespaces/{ns}/things"
    obj = await kube.create_ok(path, thing(group, "ok", **spec))
    expected = {k: v for k, v in spec.items() if k != "image"}
    assert obj["spec"] == {**expected, "minReplicas": 1, "maxReplicas": 3}
    assert (await kube.get_ok(f"{path}/ok"))["spec"] == obj["spec"]


async def test_cel_transition_rule_checks_updates_only(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """A rule on oldSelf lets the create through and refuses an update breaking it."""
    await install(env, things_crd(group))
    path = f"/apis/{group}/v1/namespaces/{ns}/things"
    await kube.create_ok(path, thing(group, "sized", size="small"))
    status, body, _ = await kube.patch(f"{path}/sized", {"spec": {"size": "large"}})
    assert status == 422
    assert_invalid(
        body,
        group,
        "sized",
        [("FieldValueInvalid", "spec.size", 'Invalid value: "large": size is immutable')],
    )
    status, _, _ = await kube.patch(f"{path}/sized", {"metadata": {"labels": {"a": "b"}}})
    assert status == 200


async def test_negative_scale_is_invalid_as_the_custom_resource(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """A negative scale is the custom resource's 422: the schema's cause, then the scale's.

    apiextensions writes a Scale's replicas into the object unvalidated; the custom
    resource's validation then reports its schema (``spec.replicas``) and its scale
    subresource (``.spec.replicas``, the path as the CRD writes it).
    """
    definition = crd(group)
    schema = copy.deepcopy(SCHEMA)
    schema["properties"]["spec"]["properties"]["replicas"]["minimum"] = 0
    definition["spec"]["versions"][0]["schema"] = {"openAPIV3Schema": schema}
    await install(env, definition)
    path = f"/apis/{group}/v1/namespaces/{ns}/mysrvs"
    await kube.create_ok(path, srv(group, "neg", port=1, replicas=2))
    status, body, _ = await kube.patch(f"{path}/neg/scale", {"spec": {"replicas": -1}})
    assert status == 422
    assert (body["reason"], body["details"]["group"], body["details"]["kind"]) == (
        "Invalid",
        group,
        "MySrv",
    )
    assert [(c["field"], c["message"]) for c in body["details"]["causes"]] == [
        (
            "spec.replicas",
            "Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
        ),
        (".spec.replicas", "Invalid value: -1: should be a non-negative integer"),
    ]
    assert (await kube.get_ok(f"{path}/neg"))["spec"]["replicas"] == 2
