"""pyctrl.crd.crd_for / crds_for: CustomResourceDefinitions from CustomResource classes."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import Field

from pyctrl._apiextensions.crd_validation import validate_crd
from pyctrl._apiextensions.pruning import apply_defaults
from pyctrl._apiextensions.validation import validate
from pyctrl.crd import crd_for, crds_for, structural_errors, version_priority_key
from pyctrl.errors import SchemaError
from pyctrl.meta import Condition, KubeModel
from pyctrl.resource import CustomResource, PrinterColumn
from tests.crd.models import (
    ClusterPool,
    MySrv,
    MySrvSpec,
    MySrvV1alpha1,
    ServicePort,
)


def openapi(crd: dict[str, Any], version: str) -> dict[str, Any]:
    """The openAPIV3Schema of one version of a CRD."""
    for entry in crd["spec"]["versions"]:
        if entry["name"] == version:
            schema: dict[str, Any] = entry["schema"]["openAPIV3Schema"]
            return schema
    raise AssertionError(f"no version {version}")


def version(crd: dict[str, Any], name: str) -> dict[str, Any]:
    """One entry of spec.versions."""
    found: dict[str, Any] = next(v for v in crd["spec"]["versions"] if v["name"] == name)
    return found


def test_crd_header_and_names() -> None:
    """The CRD has the v1 type, the <plural>.<group> name, names and scope."""
    crd = crd_for(MySrv)
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["kind"] == "CustomResourceDefinition"
    assert crd["metadata"] == {"name": "mysrvs.myapp.example.com"}
    assert crd["spec"]["group"] == "myapp.example.com"
    assert crd["spec"]["scope"] == "Namespaced"
    assert crd["spec"]["names"] == {
        "kind": "MySrv",
        "listKind": "MySrvList",
        "plural": "mysrvs",
        "singular": "mysrv",
        "shortNames": ["ms"],
        "categories": ["all", "myapp"],
    }


def test_root_schema_has_type_meta_metadata_spec_status() -> None:
    """The root carries apiVersion/kind strings, metadata as a bare object, spec and status."""
    schema = openapi(crd_for(MySrv), "v1")
    assert schema["type"] == "object"
    assert schema["description"] == "MySrv is the Schema for the mysrvs API."
    assert list(schema["properties"]) == ["apiVersion", "kind", "metadata", "spec", "status"]
    assert schema["properties"]["apiVersion"]["type"] == "string"
    assert schema["properties"]["apiVersion"]["description"].startswith(
        "APIVersion defines the versioned schema"
    )
    assert schema["properties"]["kind"]["type"] == "string"
    assert schema["properties"]["metadata"] == {"type": "object"}
    assert schema["required"] == ["spec"]


def test_spec_scalar_fields() -> None:
    """Spec scalars carry types, bounds, formats, enums, defaults and descriptions."""
    spec = openapi(crd_for(MySrv), "v1")["properties"]["spec"]
    assert spec["description"] == "MySrvSpec defines the desired state of MySrv."
    assert spec["required"] == ["name"]
    props = spec["properties"]
    assert props["name"] == {
        "type": "string",
        "minLength": 1,
        "maxLength": 63,
        "description": "Name of the server process.",
    }
    assert props["port"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 65535,
        "description": "Main port.",
        "default": 80,
    }
    assert props["replicas"] == {
        "type": "integer",
        "format": "int32",
        "description": "Number of pods.",
        "default": 1,
    }
    assert props["mode"] == {
        "type": "string",
        "enum": ["fast", "safe"],
        "description": "How the server trades speed for safety.",
        "default": "safe",
    }
    assert props["labels"] == {
        "type": "object",
        "additionalProperties": {"type": "string"},
        "description": "Labels put on the pods.",
        "default": {},
    }


def test_ports_are_a_list_map_keyed_by_name() -> None:
    """The ports list renders as a list-map with its item object inlined."""
    ports = openapi(crd_for(MySrv), "v1")["properties"]["spec"]["properties"]["ports"]
    assert ports == {
        "type": "array",
        "description": "Extra ports.",
        "default": [],
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        "items": {
            "type": "object",
            "description": "ServicePort is one port the server listens on.",
            "properties": {
                "name": {
                    "type": "string",
                    "description": "Name of the port, unique within the server.",
                },
                "port": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 65535,
                    "description": "Port number.",
                },
                "protocol": {
                    "type": "string",
                    "enum": ["TCP", "UDP"],
                    "description": "Transport protocol.",
                    "default": "TCP",
                },
            },
            "required": ["name", "port"],
        },
    }


def test_optional_nested_object_with_int_or_string() -> None:
    """An optional nested model is a nullable object; its IntOrString is int-or-string."""
    probe = openapi(crd_for(MySrv), "v1")["properties"]["spec"]["properties"]["probe"]
    assert probe == {
        "type": "object",
        "description": "Health probe; none when unset.",
        "nullable": True,
        "properties": {
            "path": {"type": "string", "default": "/healthz"},
            "periodSeconds": {
                "type": "integer",
                "minimum": 0,
                "exclusiveMinimum": True,
                "default": 10,
            },
            "target": {
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "x-kubernetes-int-or-string": True,
                "default": "http",
            },
        },
    }


def test_object_level_cel_rule() -> None:
    """A class-level XValidation sits on the nested object; its default satisfies the rule."""
    scaling = openapi(crd_for(MySrv), "v1")["properties"]["spec"]["properties"]["autoscaling"]
    assert scaling["x-kubernetes-validations"] == [
        {
            "rule": "self.minReplicas <= self.maxReplicas",
            "message": "minReplicas exceeds maxReplicas",
        }
    ]
    assert scaling["default"] == {"minReplicas": 1, "maxReplicas": 3}
    assert scaling["properties"]["minReplicas"] == {
        "type": "integer",
        "format": "int32",
        "default": 1,
    }


def test_status_conditions_as_controller_gen_renders_them() -> None:
    """status.conditions is metav1.Condition exactly as controller-gen renders it."""
    status = openapi(crd_for(MySrv), "v1")["properties"]["status"]
    conditions = status["properties"]["conditions"]
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    item = conditions["items"]
    assert item["required"] == ["lastTransitionTime", "message", "reason", "status", "type"]
    assert item["properties"]["reason"] == {
        "description": (
            "reason contains a programmatic identifier indicating the reason for the condition's "
            "last transition.\nProducers of specific condition types may define expected values "
            "and meanings for this field,\nand whether the values are considered a guaranteed "
            "API.\nThe value should be a CamelCase string.\nThis field may not be empty."
        ),
        "maxLength": 1024,
        "minLength": 1,
        "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
        "type": "string",
    }
    assert item["properties"]["status"]["enum"] == ["True", "False", "Unknown"]
    assert item["properties"]["lastTransitionTime"]["format"] == "date-time"
    assert item["properties"]["observedGeneration"]["minimum"] == 0
    assert status["properties"]["lastBackup"] == {
        "type": "string",
        "format": "date-time",
        "nullable": True,
    }


def test_subresources_status_and_scale() -> None:
    """The version declares the status and scale subresources with their paths."""
    assert version(crd_for(MySrv), "v1")["subresources"] == {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.selector",
        },
    }


def test_printer_columns() -> None:
    """Printer columns render with jsonPath, and description/priority only when set."""
    assert version(crd_for(MySrv), "v1")["additionalPrinterColumns"] == [
        {"jsonPath": ".spec.port", "name": "Port", "type": "integer", "description": "Main port"},
        {"jsonPath": ".spec.mode", "name": "Mode", "type": "string"},
        {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"},
        {"jsonPath": ".status.replicas", "name": "Replicas", "type": "integer", "priority": 1},
    ]


def test_generated_crds_pass_api_server_validation() -> None:
    """Every generated schema is structural and every CRD passes kube-apiserver's checks."""
    crds = [crd_for(MySrv), crd_for(MySrvV1alpha1, MySrv), crd_for(ClusterPool)]
    for crd in crds:
        for entry in crd["spec"]["versions"]:
            assert structural_errors(entry["schema"]["openAPIV3Schema"]) == []
        assert validate_crd(crd) == []


def test_server_defaults_match_model_defaults() -> None:
    """The API server's defaulting of a minimal object yields what the Python model dumps."""
    schema = openapi(crd_for(MySrv), "v1")
    minimal = {
        "apiVersion": "myapp.example.com/v1",
        "kind": "MySrv",
        "metadata": {"name": "a"},
        "spec": {"name": "srv", "ports": [{"name": "http", "port": 8080}]},
    }
    defaulted = copy.deepcopy(minimal)
    apply_defaults(defaulted, schema)
    assert defaulted == MySrv.model_validate(minimal).to_dict()


def test_model_objects_validate_against_their_schema() -> None:
    """An object dumped from the model passes the schema's validation."""
    obj = MySrv(
        metadata={"name": "a"},
        spec=MySrvSpec(
            name="srv", ports=[ServicePort(name="http", port=80)], probe={"target": 8080}
        ),
        status={"conditions": [Condition(type="Ready", status="True", reason="Up")]},
    )
    obj.status.conditions[0].last_transition_time = None
    wire = obj.to_dict()
    wire["status"]["conditions"][0]["lastTransitionTime"] = "2024-05-01T10:00:00Z"
    assert validate(wire, openapi(crd_for(MySrv), "v1")) == []


def test_schema_rejects_what_the_model_rejects() -> None:
    """Out-of-range ports, duplicate list-map keys and CEL violations are refused."""
    schema = openapi(crd_for(MySrv), "v1")
    obj = {
        "apiVersion": "myapp.example.com/v1",
        "kind": "MySrv",
        "metadata": {"name": "a"},
        "spec": {
            "name": "srv",
            "port": 70000,
            "ports": [{"name": "a", "port": 1}, {"name": "a", "port": 2}],
            "autoscaling": {"minReplicas": 5, "maxReplicas": 1},
        },
    }
    fields = sorted(cause.field for cause in validate(obj, schema))
    assert fields == ["spec.autoscaling", "spec.port", "spec.ports[1]"]


def test_multi_version_crd() -> None:
    """Two classes of one kind make one CRD with two versions, v1 first, one storage."""
    crd = crd_for(MySrvV1alpha1, MySrv)
    assert [v["name"] for v in crd["spec"]["versions"]] == ["v1", "v1alpha1"]
    assert version(crd, "v1")["storage"] is True
    assert version(crd, "v1")["served"] is True
    assert "deprecated" not in version(crd, "v1")
    alpha = version(crd, "v1alpha1")
    assert alpha["storage"] is False
    assert alpha["served"] is True
    assert alpha["deprecated"] is True
    assert alpha["deprecationWarning"] == "myapp.example.com/v1alpha1 MySrv is deprecated; use v1"
    assert openapi(crd, "v1alpha1")["properties"]["spec"]["required"] == ["name"]
    assert "additionalPrinterColumns" not in alpha


def test_version_order_does_not_depend_on_argument_order() -> None:
    """crd_for gives the same CRD whatever order the versions are passed in."""
    assert crd_for(MySrvV1alpha1, MySrv) == crd_for(MySrv, MySrvV1alpha1)


def test_version_priority_order() -> None:
    """Versions sort as Kubernetes ranks them: GA, beta, alpha, then others."""
    versions = ["v1alpha1", "v2", "v1beta1", "v1", "v10beta3", "v1beta2", "foo", "v12alpha1"]
    assert sorted(versions, key=version_priority_key) == [
        "v2",
        "v1",
        "v10beta3",
        "v1beta2",
        "v1beta1",
        "v12alpha1",
        "v1alpha1",
        "foo",
    ]


def test_cluster_scoped_crd_without_subresources() -> None:
    """A cluster-scoped kind without status has scope Cluster and no subresources."""
    crd = crd_for(ClusterPool)
    assert crd["spec"]["scope"] == "Cluster"
    entry = version(crd, "v1beta1")
    assert "subresources" not in entry
    nodes = openapi(crd, "v1beta1")["properties"]["spec"]["properties"]["nodes"]
    assert nodes == {
        "type": "array",
        "items": {"type": "string"},
        "x-kubernetes-list-type": "set",
        "default": [],
    }


def test_conversion_labels_and_annotations_verbatim() -> None:
    """conversion goes to spec.conversion verbatim; labels and annotations to metadata."""
    conversion = {
        "strategy": "Webhook",
        "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {"service": {"name": "wh", "namespace": "sys", "path": "/convert"}},
        },
    }
    crd = crd_for(
        MySrvV1alpha1,
        MySrv,
        conversion=conversion,
        labels={"app": "mysrv"},
        annotations={"cert-manager.io/inject-ca-from": "sys/wh"},
    )
    assert crd["spec"]["conversion"] == conversion
    assert crd["spec"]["conversion"] is not conversion
    assert crd["metadata"] == {
        "name": "mysrvs.myapp.example.com",
        "labels": {"app": "mysrv"},
        "annotations": {"cert-manager.io/inject-ca-from": "sys/wh"},
    }
    assert validate_crd(crd) == []


def test_no_conversion_by_default() -> None:
    """Without conversion, spec.conversion is left out (the API server defaults None)."""
    assert "conversion" not in crd_for(MySrv)["spec"]


def test_crds_for_groups_versions_by_kind() -> None:
    """crds_for makes one CRD per kind, sorted by name, versions grouped."""
    crds = crds_for(MySrv, ClusterPool, MySrvV1alpha1)
    assert [c["metadata"]["name"] for c in crds] == [
        "clusterpools.infra.example.com",
        "mysrvs.myapp.example.com",
    ]
    assert [v["name"] for v in crds[1]["spec"]["versions"]] == ["v1", "v1alpha1"]


def test_crds_for_conversions_by_crd_name() -> None:
    """crds_for places each conversion on the CRD it names."""
    crds = crds_for(
        MySrv,
        MySrvV1alpha1,
        ClusterPool,
        conversions={"mysrvs.myapp.example.com": {"strategy": "None"}},
    )
    assert crds[1]["spec"]["conversion"] == {"strategy": "None"}
    assert "conversion" not in crds[0]["spec"]


def test_crds_for_refuses_unknown_conversion_names() -> None:
    """A conversion for a CRD that is not generated is an error listing the known names."""
    with pytest.raises(
        SchemaError, match=r"not generated: foos\.x\.example\.com \(generated: mysrvs"
    ):
        crds_for(MySrv, conversions={"foos.x.example.com": {"strategy": "None"}})


def test_two_storage_versions_are_refused() -> None:
    """Two versions both marked storage=True are refused, naming them."""

    class MySrvV2(CustomResource, group="myapp.example.com", version="v2", kind="MySrv",
                  short_names=("ms",), categories=("all", "myapp")):  # fmt: skip
        spec: dict[str, Any] = Field(default_factory=dict)

    with pytest.raises(
        SchemaError,
        match=r"exactly one storage version, but MySrvV2 \(v2\), MySrv \(v1\) are all marked",
    ):
        crd_for(MySrvV2, MySrv)


def test_no_storage_version_is_refused() -> None:
    """A CRD whose versions all have storage=False is refused."""
    with pytest.raises(SchemaError, match=r"none of MySrvV1alpha1 \(v1alpha1\) is marked storage"):
        crd_for(MySrvV1alpha1)


def test_versions_must_share_names() -> None:
    """Versions of one kind that disagree on short names are refused."""

    class Other(CustomResource, group="myapp.example.com", version="v2", kind="MySrv",
                storage=False):  # fmt: skip
        spec: dict[str, Any] = Field(default_factory=dict)

    with pytest.raises(SchemaError, match=r"MySrv and Other .* differ in short_names"):
        crd_for(MySrv, Other)


def test_versions_must_share_group_and_kind() -> None:
    """crd_for refuses classes of different kinds, pointing at crds_for."""
    with pytest.raises(SchemaError, match=r"share group and kind.*crds_for"):
        crd_for(MySrv, ClusterPool)


def test_duplicate_versions_are_refused() -> None:
    """Two classes for the same version are refused."""

    class Again(CustomResource, group="myapp.example.com", version="v1", kind="MySrv",
                short_names=("ms",), categories=("all", "myapp"), storage=False):  # fmt: skip
        spec: dict[str, Any] = Field(default_factory=dict)

    with pytest.raises(SchemaError, match="MySrv and Again are both version v1"):
        crd_for(MySrv, Again)


def test_deprecation_warning_requires_deprecated() -> None:
    """A deprecation warning on a version that is not deprecated is refused."""

    class Warned(CustomResource, group="w.example.com", version="v1",
                 deprecation_warning="old"):  # fmt: skip
        spec: dict[str, Any] = Field(default_factory=dict)

    with pytest.raises(SchemaError, match="deprecation_warning is set but deprecated=False"):
        crd_for(Warned)


def test_bad_printer_column_type_is_refused() -> None:
    """A printer column type kubectl does not know is refused."""

    class Printed(CustomResource, group="p.example.com", version="v1",
                  printer_columns=(PrinterColumn("When", ".spec.when", "datetime"),)):  # fmt: skip
        spec: dict[str, Any] = Field(default_factory=dict)

    with pytest.raises(SchemaError, match="printer column 'When' has type 'datetime'"):
        crd_for(Printed)


def test_abstract_and_foreign_classes_are_refused() -> None:
    """crd_for refuses classes without group/version and classes that are not resources."""

    class Abstract(CustomResource):
        pass

    with pytest.raises(SchemaError, match="declares no group and version"):
        crd_for(Abstract)
    with pytest.raises(SchemaError, match="is not a CustomResource class"):
        crd_for(KubeModel)  # type: ignore[arg-type]
    with pytest.raises(SchemaError, match="at least one"):
        crd_for()


def test_same_crd_name_for_two_kinds_is_refused() -> None:
    """crds_for refuses two kinds that would produce the same CRD name."""

    class Foo(CustomResource, group="f.example.com", version="v1", plural="things"):
        spec: dict[str, Any] = Field(default_factory=dict)

    class Bar(CustomResource, group="f.example.com", version="v1", plural="things"):
        spec: dict[str, Any] = Field(default_factory=dict)

    with pytest.raises(SchemaError, match=r"Foo and Bar would both be CRD things\.f\.example\.com"):
        crds_for(Foo, Bar)


def test_a_served_version_is_required() -> None:
    """A CRD none of whose versions is served is refused."""

    class Hidden(CustomResource, group="h.example.com", version="v1", served=False):
        spec: dict[str, Any] = Field(default_factory=dict)

    with pytest.raises(SchemaError, match=r"Hidden\.h\.example\.com: no version is served"):
        crd_for(Hidden)


def test_root_attributes_describe_spec_and_status() -> None:
    """The resource class's Attributes section describes its spec and status."""

    class Described(CustomResource, group="d.example.com", version="v1"):
        """Described is documented.

        Attributes:
            spec: What is wanted.
            status: What is.
        """

        spec: dict[str, Any] = Field(default_factory=dict)
        status: dict[str, Any] = Field(default_factory=dict)

    schema = openapi(crd_for(Described), "v1")
    assert schema["description"] == "Described is documented."
    assert schema["properties"]["spec"]["description"] == "What is wanted."
    assert schema["properties"]["status"]["description"] == "What is."
