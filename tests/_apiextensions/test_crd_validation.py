"""Validation of apiextensions.k8s.io/v1 CustomResourceDefinition objects."""

from __future__ import annotations

import copy
from typing import Any

from pyctrl._apiextensions.crd_validation import (
    apply_crd_defaults,
    crd_stored_versions,
    validate_crd,
)
from pyctrl._apimachinery.field import Cause


def mysrv_crd() -> dict[str, Any]:
    """A valid CRD for an operator's MySrv kind."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "mysrvs.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {
                "plural": "mysrvs",
                "singular": "mysrv",
                "kind": "MySrv",
                "shortNames": ["ms"],
            },
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
                                    "properties": {
                                        "replicas": {"type": "integer", "default": 1},
                                        "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                                    },
                                },
                                "status": {
                                    "type": "object",
                                    "properties": {"replicas": {"type": "integer"}},
                                },
                            },
                        }
                    },
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.replicas",
                            "statusReplicasPath": ".status.replicas",
                        },
                    },
                    "additionalPrinterColumns": [
                        {"name": "Port", "type": "integer", "jsonPath": ".spec.port"}
                    ],
                }
            ],
        },
    }


def errors(crd: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return [str(c) for c in validate_crd(crd, old)]


def test_valid_crd_has_no_errors() -> None:
    """A well-formed CRD with schema, subresources and columns validates."""
    assert validate_crd(mysrv_crd()) == []


def test_validation_does_not_modify_the_crd() -> None:
    """validate_crd works on a defaulted copy."""
    crd = mysrv_crd()
    before = copy.deepcopy(crd)
    validate_crd(crd)
    assert crd == before


def test_name_must_be_plural_dot_group() -> None:
    """metadata.name must be <plural>.<group>."""
    crd = mysrv_crd()
    crd["metadata"]["name"] = "servers.example.com"
    assert validate_crd(crd) == [
        Cause(
            "FieldValueInvalid",
            'Invalid value: "servers.example.com": must be spec.names.plural+"."+spec.group',
            "metadata.name",
        )
    ]


def test_group_needs_a_dot() -> None:
    """The group must be a domain with at least one dot."""
    crd = mysrv_crd()
    crd["spec"]["group"] = "example"
    crd["metadata"]["name"] = "mysrvs.example"
    assert errors(crd) == [
        'spec.group: Invalid value: "example": should be a domain with at least one dot'
    ]


def test_scope_must_be_namespaced_or_cluster() -> None:
    """Scope is required and limited to Cluster and Namespaced."""
    crd = mysrv_crd()
    crd["spec"]["scope"] = "Global"
    assert errors(crd) == [
        'spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"'
    ]


def test_names_follow_dns_rules() -> None:
    """Plural must be a lowercase DNS-1035 label; kind may have mixed case."""
    crd = mysrv_crd()
    crd["spec"]["names"]["plural"] = "MySrvs"
    crd["spec"]["names"]["kind"] = "My_Srv"
    crd["metadata"]["name"] = "MySrvs.example.com"
    out = errors(crd)
    dns = (
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
        "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
        "'abc-123', "
        "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
    )
    assert f'spec.names.plural: Invalid value: "MySrvs": {dns}' in out
    assert (
        f'spec.names.kind: Invalid value: "My_Srv": may have mixed case, but should otherwise '
        f"match: {dns}" in out
    )


def test_singular_and_list_kind_are_defaulted() -> None:
    """Missing singular and listKind take v1's defaults instead of failing."""
    crd = mysrv_crd()
    del crd["spec"]["names"]["singular"]
    assert validate_crd(crd) == []
    apply_crd_defaults(crd)
    assert crd["spec"]["names"]["singular"] == "mysrv"
    assert crd["spec"]["names"]["listKind"] == "MySrvList"
    assert crd["spec"]["conversion"] == {"strategy": "None"}


def test_kind_is_required() -> None:
    """A CRD without kind fails with Required and cannot default singular/listKind."""
    crd = mysrv_crd()
    del crd["spec"]["names"]["kind"]
    del crd["spec"]["names"]["singular"]
    assert errors(crd) == [
        "spec.names.singular: Required value",
        "spec.names.kind: Required value",
        "spec.names.listKind: Required value",
    ]


def test_exactly_one_storage_version() -> None:
    """Zero storage versions is invalid, and nothing gets stored."""
    crd = mysrv_crd()
    crd["spec"]["versions"][0]["storage"] = False
    out = errors(crd)
    assert out[0].startswith("spec.versions: Invalid value: ")
    assert out[0].endswith(": must have exactly one version marked as storage version")
    assert (
        out[1]
        == "status.storedVersions: Invalid value: []string{}: must have at least one stored version"
    )


def test_version_names_must_be_unique() -> None:
    """Two versions with one name are refused."""
    crd = mysrv_crd()
    second = copy.deepcopy(crd["spec"]["versions"][0])
    second["storage"] = False
    crd["spec"]["versions"].append(second)
    assert any(e.endswith(": must contain unique version names") for e in errors(crd))


def test_version_name_must_be_dns_label() -> None:
    """A version name is a DNS-1035 label (reported for the version and spec.version)."""
    crd = mysrv_crd()
    crd["spec"]["versions"][0]["name"] = "V1"
    out = errors(crd)
    assert out[0].startswith('spec.versions[0].name: Invalid value: "V1": a DNS-1035 label')
    assert out[1].startswith('spec.version: Invalid value: "V1": a DNS-1035 label')


def test_schema_is_required_per_version() -> None:
    """v1 requires a schema for every version."""
    crd = mysrv_crd()
    del crd["spec"]["versions"][0]["schema"]
    assert errors(crd) == [
        "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"
    ]


def test_shared_schema_errors_are_reported_under_spec_validation() -> None:
    """A schema common to all versions is hoisted to spec.validation, as kube-apiserver does."""
    crd = mysrv_crd()
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "x"
    ] = {}
    assert errors(crd) == [
        "spec.validation.openAPIV3Schema.properties[spec].properties[x].type: Required value: "
        "must not "
        "be empty for specified object fields"
    ]


def test_per_version_schema_errors_use_the_version_path() -> None:
    """Schemas that differ between versions are checked under spec.versions[i]."""
    crd = mysrv_crd()
    v2 = copy.deepcopy(crd["spec"]["versions"][0])
    v2["name"] = "v2"
    v2["storage"] = False
    v2["schema"]["openAPIV3Schema"]["properties"]["extra"] = {"type": "array"}
    crd["spec"]["versions"].append(v2)
    assert errors(crd) == [
        "spec.versions[1].schema.openAPIV3Schema.properties[extra].items: Required value: must "
        "be specified"
    ]


def test_status_subresource_restricts_root_schema() -> None:
    """With the status subresource, the root may not carry e.g. anyOf."""
    crd = mysrv_crd()
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["anyOf"] = [{"required": ["spec"]}]
    out = errors(crd)
    assert len(out) == 1
    assert out[0].startswith("spec.validation.openAPIV3Schema: Invalid value: ")
    assert out[0].endswith(
        "only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum "
        "MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items "
        "Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are "
        "allowed at the "
        "root of the schema if the status subresource is enabled"
    )


def test_scale_paths_must_be_under_spec_and_status() -> None:
    """specReplicasPath must be under .spec and statusReplicasPath under .status."""
    crd = mysrv_crd()
    scale = crd["spec"]["versions"][0]["subresources"]["scale"]
    scale["specReplicasPath"] = ".status.replicas"
    scale["statusReplicasPath"] = "status.replicas"
    assert errors(crd) == [
        'spec.subresources.scale.specReplicasPath: Invalid value: ".status.replicas": should be '
        "a json "
        "path under .spec",
        'spec.subresources.scale.statusReplicasPath: Invalid value: "status.replicas": must be '
        "a simple "
        "json path starting with .",
    ]


def test_printer_columns_are_checked() -> None:
    """Printer columns need a name, a known type and format, and a JSON path."""
    crd = mysrv_crd()
    crd["spec"]["versions"][0]["additionalPrinterColumns"] = [
        {"name": "", "type": "float", "format": "hex", "jsonPath": "spec.port"}
    ]
    assert errors(crd) == [
        "spec.additionalPrinterColumns[0].name: Required value",
        'spec.additionalPrinterColumns[0].type: Invalid value: "float": must be one of '
        "boolean,date,integer,number,string",
        'spec.additionalPrinterColumns[0].format: Invalid value: "hex": must be one of '
        "byte,date,date-time,double,float,int32,int64,password",
        'spec.additionalPrinterColumns[0].JSONPath: Invalid value: "spec.port": must be a '
        "simple json "
        "path starting with .",
    ]


def test_webhook_conversion_needs_client_config_and_review_versions() -> None:
    """Strategy Webhook requires a client config and conversionReviewVersions."""
    crd = mysrv_crd()
    crd["spec"]["conversion"] = {"strategy": "Webhook"}
    assert errors(crd) == [
        "spec.conversion.webhookClientConfig: Required value: required when strategy is set to "
        "Webhook",
        "spec.conversion.conversionReviewVersions: Required value",
    ]


def test_webhook_conversion_with_service_is_valid() -> None:
    """A Webhook conversion with a service and v1 review versions validates."""
    crd = mysrv_crd()
    crd["spec"]["conversion"] = {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {
                "service": {"name": "conv", "namespace": "system", "path": "/convert"}
            },
            "conversionReviewVersions": ["v1"],
        },
    }
    assert validate_crd(crd) == []


def test_unknown_conversion_strategy() -> None:
    """Only None and Webhook strategies exist."""
    crd = mysrv_crd()
    crd["spec"]["conversion"] = {"strategy": "Magic"}
    assert errors(crd) == [
        'spec.conversion.strategy: Unsupported value: "Magic": supported values: "None", "Webhook"'
    ]


def test_protected_groups_need_api_approval() -> None:
    """*.k8s.io groups need the api-approved.kubernetes.io annotation."""
    crd = mysrv_crd()
    crd["spec"]["group"] = "things.k8s.io"
    crd["metadata"]["name"] = "mysrvs.things.k8s.io"
    assert errors(crd) == [
        "metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups "
        "must have "
        'approval annotation "api-approved.kubernetes.io", see '
        "https://github.com/kubernetes/enhancements/pull/1111"
    ]
    crd["metadata"]["annotations"] = {"api-approved.kubernetes.io": "unapproved, testing"}
    assert validate_crd(crd) == []


def test_preserve_unknown_fields_true_is_refused() -> None:
    """spec.preserveUnknownFields cannot be set to true in v1."""
    crd = mysrv_crd()
    crd["spec"]["preserveUnknownFields"] = True
    assert (
        "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set "
        "x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"
    ) in errors(crd)


def test_invalid_cel_rule_fails_crd_creation() -> None:
    """A rule that does not compile makes the CRD invalid."""
    crd = mysrv_crd()
    spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec_schema["x-kubernetes-validations"] = [{"rule": "self.replicas > self.nope"}]
    out = errors(crd)
    assert len(out) == 1
    assert out[0].startswith(
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: "
        "Invalid value: "
    )
    assert "undefined field 'nope'" in out[0]


def test_update_keeps_group_and_plural_immutable() -> None:
    """Group and plural never change, even with a matching new name."""
    old = mysrv_crd()
    new = mysrv_crd()
    new["spec"]["names"]["plural"] = "servers"
    new["metadata"]["name"] = "servers.example.com"
    assert errors(new, old) == ['spec.names.plural: Invalid value: "servers": field is immutable']
    new = mysrv_crd()
    new["spec"]["group"] = "example.org"
    new["metadata"]["name"] = "mysrvs.example.org"
    assert errors(new, old) == ['spec.group: Invalid value: "example.org": field is immutable']


def test_update_of_established_crd_keeps_scope_and_kind() -> None:
    """Scope and kind are immutable once the CRD is Established."""
    old = mysrv_crd()
    old["status"] = {
        "conditions": [{"type": "Established", "status": "True"}],
        "storedVersions": ["v1"],
    }
    new = mysrv_crd()
    new["spec"]["scope"] = "Cluster"
    assert errors(new, old) == ['spec.scope: Invalid value: "Cluster": field is immutable']
    old["status"]["conditions"] = []
    assert errors(new, old) == []


def test_update_must_keep_stored_versions() -> None:
    """A version still in status.storedVersions cannot be removed from spec.versions."""
    old = mysrv_crd()
    old["status"] = {"storedVersions": ["v1alpha1", "v1"]}
    assert errors(mysrv_crd(), old) == [
        'status.storedVersions[0]: Invalid value: "v1alpha1": missing from spec.versions; '
        "v1alpha1 was "
        "previously a storage version, and must remain in spec.versions until a storage migration "
        "ensures no data remains persisted in v1alpha1 and removes v1alpha1 from "
        "status.storedVersions"
    ]


def test_stored_versions_accumulate_storage_versions() -> None:
    """Changing the storage version appends it to the stored versions."""
    old = mysrv_crd()
    old["status"] = {"storedVersions": ["v1"]}
    new = mysrv_crd()
    v2 = copy.deepcopy(new["spec"]["versions"][0])
    v2["name"] = "v2"
    new["spec"]["versions"][0]["storage"] = False
    new["spec"]["versions"].append(v2)
    assert crd_stored_versions(new, old) == ["v1", "v2"]
    assert crd_stored_versions(new) == ["v2"]
