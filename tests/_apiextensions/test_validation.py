"""Custom resource validation, defaulting and pruning against CRD schemas."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyctrl._apiextensions.pruning import apply_defaults, prune
from pyctrl._apiextensions.structural import structural_errors
from pyctrl._apiextensions.validation import validate
from pyctrl._apimachinery.field import Cause


def mysrv_schema() -> dict[str, Any]:
    """The openAPIV3Schema of an operator's MySrv custom resource."""
    return {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "minLength": 1, "maxLength": 20},
                    "port": {"type": "integer", "minimum": 1, "maximum": 65535, "default": 80},
                    "mode": {"type": "string", "enum": ["cool", "heat"]},
                    "replicas": {"type": "integer", "format": "int32"},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {
                            "type": "object",
                            "required": ["name"],
                            "properties": {
                                "name": {"type": "string"},
                                "port": {"type": "integer"},
                                "protocol": {"type": "string", "default": "TCP"},
                            },
                        },
                    },
                    "tags": {
                        "type": "array",
                        "x-kubernetes-list-type": "set",
                        "items": {"type": "string"},
                    },
                    "target": {
                        "x-kubernetes-int-or-string": True,
                        "anyOf": [{"type": "integer"}, {"type": "string"}],
                    },
                },
            },
            "status": {
                "type": "object",
                "properties": {
                    "conditions": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["type", "status"],
                            "properties": {
                                "type": {"type": "string"},
                                "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                                "lastTransitionTime": {"type": "string", "format": "date-time"},
                                "message": {"type": "string"},
                            },
                        },
                    },
                },
            },
        },
    }


def mysrv(**spec: Any) -> dict[str, Any]:
    """A MySrv object with the given spec."""
    return {
        "apiVersion": "example.com/v1",
        "kind": "MySrv",
        "metadata": {"name": "one", "namespace": "default"},
        "spec": {"name": "web", **spec},
    }


def messages(causes: list[Cause]) -> list[str]:
    return [str(c) for c in causes]


# --- types, bounds and enums ---------------------------------------------------------------


def test_mysrv_schemas_are_accepted_by_crd_validation() -> None:
    """The schemas used here are structural and their rules compile."""
    assert structural_errors(mysrv_schema()) == []
    assert structural_errors(cel_schema()) == []


def test_valid_object_has_no_causes() -> None:
    """A MySrv satisfying its schema validates without any cause."""
    obj = mysrv(port=8080, mode="cool", replicas=2, labels={"a": "b"}, target="50%")
    assert validate(obj, mysrv_schema()) == []


def test_maximum_violation_is_worded_as_kube_apiserver() -> None:
    """A port above maximum is FieldValueInvalid with kube-openapi's wording."""
    causes = validate(mysrv(port=70000), mysrv_schema())
    assert causes == [
        Cause(
            "FieldValueInvalid",
            "Invalid value: 70000: spec.port in body should be less than or equal to 65535",
            "spec.port",
        )
    ]


def test_minimum_violation_is_worded_as_kube_apiserver() -> None:
    """A port below minimum reports the greater-than-or-equal bound."""
    assert messages(validate(mysrv(port=0), mysrv_schema())) == [
        "spec.port: Invalid value: 0: spec.port in body should be greater than or equal to 1"
    ]


def test_exclusive_bounds_use_strict_wording() -> None:
    """exclusiveMinimum/exclusiveMaximum report 'greater than'/'less than'."""
    schema = {
        "type": "object",
        "properties": {
            "r": {
                "type": "number",
                "minimum": 0,
                "exclusiveMinimum": True,
                "maximum": 1.5,
                "exclusiveMaximum": True,
            }
        },
    }
    assert messages(validate({"r": 0}, schema)) == [
        "r: Invalid value: 0: r in body should be greater than 0"
    ]
    assert messages(validate({"r": 1.5}, schema)) == [
        "r: Invalid value: 1.5: r in body should be less than 1.5"
    ]


def test_missing_required_field_is_required_value() -> None:
    """A missing required property is 'Required value' at its path."""
    obj = mysrv()
    del obj["spec"]["name"]
    assert validate(obj, mysrv_schema()) == [
        Cause("FieldValueRequired", "Required value", "spec.name")
    ]


def test_enum_violation_lists_supported_values() -> None:
    """A value outside enum is FieldValueNotSupported listing the quoted values."""
    assert validate(mysrv(mode="x"), mysrv_schema()) == [
        Cause(
            "FieldValueNotSupported",
            'Unsupported value: "x": supported values: "cool", "heat"',
            "spec.mode",
        )
    ]


def test_non_string_enum_values_are_json_encoded() -> None:
    """Enum values that are not strings are listed as their JSON."""
    schema = {"type": "object", "properties": {"n": {"type": "integer", "enum": [1, 2]}}}
    assert messages(validate({"n": 3}, schema)) == [
        'n: Unsupported value: 3: supported values: "1", "2"'
    ]


def test_wrong_type_is_type_invalid() -> None:
    """A string where an integer belongs is FieldValueTypeInvalid naming the JSON type."""
    assert validate(mysrv(port="string"), mysrv_schema()) == [
        Cause(
            "FieldValueTypeInvalid",
            'Invalid value: "string": spec.port in body must be of type integer: "string"',
            "spec.port",
        )
    ]


def test_boolean_is_not_an_integer() -> None:
    """A JSON boolean is rejected for an integer field although Python bools are ints."""
    assert messages(validate(mysrv(port=True), mysrv_schema())) == [
        'spec.port: Invalid value: "boolean": spec.port in body must be of type integer: "boolean"'
    ]


def test_integral_float_is_accepted_as_integer() -> None:
    """1.0 is a valid integer, as JSON numbers are in kube-openapi."""
    assert validate(mysrv(port=8080.0), mysrv_schema()) == []


def test_fractional_float_is_not_an_integer() -> None:
    """1.5 for an integer field is a type error naming 'number'."""
    assert messages(validate(mysrv(port=1.5), mysrv_schema())) == [
        'spec.port: Invalid value: "number": spec.port in body must be of type integer: "number"'
    ]


def test_format_mismatch_names_the_format() -> None:
    """With format int32, kube-openapi reports the format and the value's Go format."""
    assert messages(validate(mysrv(replicas=1.5), mysrv_schema())) == [
        'spec.replicas: Invalid value: "float64": spec.replicas in body must be of type int32: '
        '"float64"'
    ]


def test_null_for_non_nullable_field_is_type_invalid() -> None:
    """null where the schema is not nullable reports type 'null'."""
    assert messages(validate(mysrv(port=None), mysrv_schema())) == [
        'spec.port: Invalid value: "null": spec.port in body must be of type integer: "null"'
    ]


def test_null_for_nullable_field_is_accepted() -> None:
    """nullable: true admits null."""
    schema = {"type": "object", "properties": {"x": {"type": "string", "nullable": True}}}
    assert validate({"x": None}, schema) == []


def test_max_length_violation_is_too_long() -> None:
    """A string over maxLength is FieldValueTooLong without the value."""
    assert validate(mysrv(name="x" * 21), mysrv_schema()) == [
        Cause("FieldValueTooLong", "Too long: may not be longer than 20", "spec.name")
    ]


def test_min_length_counts_characters() -> None:
    """minLength counts code points and reports 'chars long'."""
    assert messages(validate(mysrv(name=""), mysrv_schema())) == [
        'spec.name: Invalid value: "": spec.name in body should be at least 1 chars long'
    ]
    schema = {"type": "object", "properties": {"s": {"type": "string", "maxLength": 2}}}
    assert validate({"s": "éé"}, schema) == []


def test_pattern_violation_quotes_the_pattern() -> None:
    """A string not matching pattern reports the pattern in single quotes."""
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^[a-z]+$"}}}
    assert messages(validate({"s": "ABC"}, schema)) == [
        "s: Invalid value: \"ABC\": s in body should match '^[a-z]+$'"
    ]


def test_pattern_dollar_does_not_match_before_trailing_newline() -> None:
    """'$' anchors at the very end as in Go, unlike Python's re."""
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^a$"}}}
    assert len(validate({"s": "a\n"}, schema)) == 1


def test_patterns_use_go_regexp_syntax() -> None:
    """RE2 syntax Python lacks (the z anchor, POSIX and Unicode classes) works in patterns."""
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "pattern": "^[[:alpha:]]+\\z"},
            "b": {"type": "string", "pattern": "^\\p{L}+$"},
        },
    }
    assert validate({"a": "abc", "b": "héllo"}, schema) == []
    assert len(validate({"a": "ab1", "b": "h3llo"}, schema)) == 2


def test_multiple_of_integer() -> None:
    """multipleOf on integers reports the factor."""
    schema = {"type": "object", "properties": {"n": {"type": "integer", "multipleOf": 5}}}
    assert messages(validate({"n": 7}, schema)) == [
        "n: Invalid value: 7: n in body should be a multiple of 5"
    ]
    assert validate({"n": -10}, schema) == []


def test_multiple_of_fraction() -> None:
    """multipleOf below one is checked on floats without rounding noise."""
    schema = {"type": "object", "properties": {"n": {"type": "number", "multipleOf": 0.1}}}
    assert validate({"n": 0.3}, schema) == []
    assert messages(validate({"n": 0.35}, schema)) == [
        "n: Invalid value: 0.35: n in body should be a multiple of 0.1"
    ]


def test_large_bounds_print_like_go() -> None:
    """Float bounds of a million or more print in Go's %v exponent form."""
    schema = {"type": "object", "properties": {"n": {"type": "number", "maximum": 1000000}}}
    assert messages(validate({"n": 2000000.5}, schema)) == [
        "n: Invalid value: 2.0000005e+06: n in body should be less than or equal to 1e+06"
    ]


def test_min_items_and_max_items() -> None:
    """Too few items is Invalid with the count; too many is FieldValueTooMany."""
    schema = {
        "type": "object",
        "properties": {
            "l": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string"}}
        },
    }
    assert messages(validate({"l": []}, schema)) == [
        "l: Invalid value: 0: l in body should have at least 1 items"
    ]
    assert validate({"l": ["a", "b", "c"]}, schema) == [
        Cause("FieldValueTooMany", "Too many: 3: must have at most 2 items", "l")
    ]


def test_min_and_max_properties() -> None:
    """minProperties and maxProperties bound the number of keys of a map."""
    schema = {
        "type": "object",
        "properties": {
            "m": {
                "type": "object",
                "minProperties": 1,
                "maxProperties": 1,
                "additionalProperties": {"type": "string"},
            }
        },
    }
    assert messages(validate({"m": {}}, schema)) == [
        "m: Invalid value: 0: m in body should have at least 1 properties"
    ]
    assert messages(validate({"m": {"a": "1", "b": "2"}}, schema)) == [
        "m: Too many: 2: must have at most 1 items"
    ]


def test_additional_properties_schema_validates_each_value() -> None:
    """Values of a map are validated against additionalProperties with key paths."""
    assert messages(validate(mysrv(labels={"a": "b", "n": 1}), mysrv_schema())) == [
        'spec.labels.n: Invalid value: "integer": spec.labels.n in body must be of type string: '
        '"integer"'
    ]


def test_items_are_validated_with_index_paths() -> None:
    """Array items are validated with [i] in their paths."""
    obj = mysrv()
    obj["status"] = {"conditions": [{"type": "Ready", "status": "Maybe"}]}
    assert messages(validate(obj, mysrv_schema())) == [
        'status.conditions[0].status: Unsupported value: "Maybe": supported values: "True", '
        '"False", "Unknown"'
    ]


@pytest.mark.parametrize(
    ("fmt", "good", "bad"),
    [
        ("date-time", "2024-05-01T10:00:00Z", "yesterday"),
        ("date", "2024-02-29", "2023-02-29"),
        ("byte", "aGVsbG8=", "not base64!"),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123"),
        ("hostname", "web-1.example.com", "-web"),
        ("ipv4", "10.0.0.1", "10.0.0.256"),
        ("ipv6", "fe80::1", "10.0.0.1"),
        ("cidr", "10.0.0.0/8", "10.0.0.0"),
        ("duration", "1h30m", "soon"),
        ("email", "a@example.com", "nobody"),
        ("mac", "00:1a:2b:3c:4d:5e", "00:1a"),
    ],
)
def test_string_formats_are_checked(fmt: str, good: str, bad: str) -> None:
    """Each format kube-apiserver checks accepts a valid value and reports an invalid one."""
    schema = {"type": "object", "properties": {"v": {"type": "string", "format": fmt}}}
    assert validate({"v": good}, schema) == []
    assert messages(validate({"v": bad}, schema)) == [
        f"v: Invalid value: {_go_quoted(bad)}: v in body must be of type {fmt}: {_go_quoted(bad)}"
    ]


def _go_quoted(s: str) -> str:
    return '"' + s.replace('"', '\\"') + '"'


def test_unknown_formats_are_ignored() -> None:
    """A format kube-apiserver does not know is not checked."""
    schema = {"type": "object", "properties": {"v": {"type": "string", "format": "whatever"}}}
    assert validate({"v": "anything"}, schema) == []


def test_int_or_string_accepts_both_and_rejects_others() -> None:
    """x-kubernetes-int-or-string admits integers and strings only."""
    schema = mysrv_schema()
    assert validate(mysrv(target=3), schema) == []
    assert validate(mysrv(target="25%"), schema) == []
    assert messages(validate(mysrv(target=True), schema)) == [
        'spec.target: Invalid value: "boolean": spec.target in body must be of type '
        'integer,string: "boolean"',
        '<nil>: Invalid value: "": "spec.target" must validate at least one schema (anyOf)',
        'spec.target: Invalid value: "boolean": spec.target in body must be of type integer: '
        '"boolean"',
    ]


def test_one_of_requires_exactly_one_match() -> None:
    """oneOf reports a composite error when no alternative or several match."""
    schema = {
        "type": "object",
        "properties": {
            "s": {
                "type": "object",
                "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
            }
        },
    }
    assert validate({"s": {"a": "x"}}, schema) == []
    assert messages(validate({"s": {"a": "x", "b": "y"}}, schema)) == [
        '<nil>: Invalid value: "": "s" must validate one and only one schema (oneOf). '
        "Found 2 valid alternatives"
    ]


def test_not_rejects_matching_values() -> None:
    """not reports a composite error when the value matches the negated schema."""
    schema = {
        "type": "object",
        "properties": {"s": {"type": "string", "not": {"enum": ["forbidden"]}}},
    }
    assert validate({"s": "fine"}, schema) == []
    assert messages(validate({"s": "forbidden"}, schema)) == [
        '<nil>: Invalid value: "": "s" must not validate the schema (not)'
    ]


def test_all_of_reports_each_failure() -> None:
    """allOf merges its members' errors and adds the composite error."""
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "allOf": [{"minimum": 5}, {"maximum": 10}]}},
    }
    assert messages(validate({"n": 11}, schema)) == [
        "n: Invalid value: 11: n in body should be less than or equal to 10",
        '<nil>: Invalid value: "": "n" must validate all the schemas (allOf)',
    ]


def test_unknown_fields_are_not_validation_errors() -> None:
    """Fields absent from the schema are accepted (pruning removes them)."""
    assert validate(mysrv(extra={"x": 1}), mysrv_schema()) == []


# --- list types ----------------------------------------------------------------------------


def test_list_map_duplicate_key_is_duplicate_value() -> None:
    """Two items of a map list with the same key are FieldValueDuplicate with the key."""
    obj = mysrv(ports=[{"name": "http", "port": 80}, {"name": "http", "port": 8080}])
    assert validate(obj, mysrv_schema()) == [
        Cause(
            "FieldValueDuplicate",
            'Duplicate value: {"name":"http"}',
            "spec.ports[1]",
        )
    ]


def test_list_set_duplicate_is_duplicate_value() -> None:
    """A repeated element of a set list is FieldValueDuplicate with the element."""
    assert messages(validate(mysrv(tags=["a", "b", "a"]), mysrv_schema())) == [
        'spec.tags[2]: Duplicate value: "a"'
    ]


def test_list_map_duplicate_ratchets_when_old_already_had_it() -> None:
    """On update, list-type errors count only if the old object had none."""
    ports = [{"name": "http"}, {"name": "http"}]
    old = mysrv(ports=ports)
    new = mysrv(ports=ports, port=81)
    assert validate(new, mysrv_schema(), old=old) == []


# --- ratcheting ----------------------------------------------------------------------------


def test_update_ratchets_errors_in_unchanged_fields() -> None:
    """An invalid value carried over unchanged on update is not reported."""
    schema = mysrv_schema()
    old = mysrv(port=70000)
    new = mysrv(port=70000, mode="cool")
    assert validate(new, schema, old=old) == []


def test_update_reports_errors_in_changed_fields() -> None:
    """A changed invalid value is reported on update."""
    schema = mysrv_schema()
    old = mysrv(port=70000)
    new = mysrv(port=70001)
    assert messages(validate(new, schema, old=old)) == [
        "spec.port: Invalid value: 70001: spec.port in body should be less than or equal to 65535"
    ]


def test_update_ratchets_map_list_items_by_key() -> None:
    """Items of a map list correlate with their old item by key, not by index."""
    schema = mysrv_schema()
    schema["properties"]["spec"]["properties"]["ports"]["items"]["properties"]["port"][
        "maximum"
    ] = 100
    old = mysrv(ports=[{"name": "a", "port": 500}])
    new = mysrv(ports=[{"name": "b", "port": 1}, {"name": "a", "port": 500}])
    assert validate(new, schema, old=old) == []


# --- embedded resources --------------------------------------------------------------------


def embedded_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "template": {
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {"metadata": {"type": "object"}},
            }
        },
    }


def test_embedded_resource_requires_api_version_and_kind() -> None:
    """An embedded resource without apiVersion and kind reports both as required."""
    assert messages(validate({"template": {"spec": {}}}, embedded_schema())) == [
        "template.apiVersion: Required value",
        "template.kind: Required value",
    ]


def test_embedded_resource_metadata_is_validated() -> None:
    """Embedded ObjectMeta is checked: a name with a slash and a bad label are rejected."""
    obj = {
        "template": {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "a/b", "labels": {"ok": "-bad-"}},
        }
    }
    causes = messages(validate(obj, embedded_schema()))
    assert causes[0] == "template.metadata.name: Invalid value: \"a/b\": may not contain '/'"
    assert causes[1].startswith('template.metadata.labels: Invalid value: "-bad-": a valid label')


def test_embedded_resource_with_malformed_metadata() -> None:
    """Embedded metadata that cannot decode as ObjectMeta is Invalid with the decode error."""
    obj = {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": 5}}}
    assert messages(validate(obj, embedded_schema())) == [
        'template.metadata: Invalid value: {"name":5}: json: cannot '
        "unmarshal number into Go struct field ObjectMeta.name of type string"
    ]


# --- CEL inside validate -------------------------------------------------------------------


def cel_schema() -> dict[str, Any]:
    schema = mysrv_schema()
    schema["properties"]["spec"]["x-kubernetes-validations"] = [
        {"rule": "self.name != 'forbidden'", "message": "name is reserved"},
        {"rule": "self.port == oldSelf.port", "message": "port is immutable"},
    ]
    return schema


def test_cel_rule_failure_is_invalid_object() -> None:
    """A failing rule reports Invalid value "object" with its message at the node path."""
    assert validate(mysrv(name="forbidden"), cel_schema()) == [
        Cause("FieldValueInvalid", "Invalid value: name is reserved", "spec")
    ]


def test_transition_rule_runs_only_on_update() -> None:
    """A rule using oldSelf is skipped on create and runs on update."""
    schema = cel_schema()
    assert validate(mysrv(port=81), schema) == []
    assert messages(validate(mysrv(port=81), schema, old=mysrv(port=80))) == [
        "spec: Invalid value: port is immutable"
    ]


def test_cel_skipped_when_schema_errors_block_it() -> None:
    """A required/type error stops CEL evaluation with kube-apiserver's explanation."""
    obj = mysrv(name="forbidden", port="x")
    assert messages(validate(obj, cel_schema()))[-1] == (
        "<nil>: Invalid value: null: some validation rules were not checked because the object "
        "was invalid; correct the existing errors to complete validation"
    )


def test_cel_rule_failure_ratchets_on_unchanged_value() -> None:
    """A non-transition rule failing on an unchanged value is dropped on update."""
    schema = cel_schema()
    old = mysrv(name="forbidden", port=80)
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {"touched": "yes"}
    assert validate(new, schema, old=old) == []


# --- defaulting ----------------------------------------------------------------------------


def test_defaults_fill_missing_fields() -> None:
    """A missing field with a default gets the default."""
    obj = mysrv()
    apply_defaults(obj, mysrv_schema())
    assert obj["spec"]["port"] == 80


def test_defaults_do_not_override_values() -> None:
    """A present field keeps its value."""
    obj = mysrv(port=443)
    apply_defaults(obj, mysrv_schema())
    assert obj["spec"]["port"] == 443


def test_defaults_apply_inside_array_items() -> None:
    """Defaults of item properties apply to every item."""
    obj = mysrv(ports=[{"name": "a"}, {"name": "b", "protocol": "UDP"}])
    apply_defaults(obj, mysrv_schema())
    assert [p["protocol"] for p in obj["spec"]["ports"]] == ["TCP", "UDP"]


def test_defaults_apply_inside_additional_properties() -> None:
    """Defaults apply to every value of a map."""
    schema = {
        "type": "object",
        "properties": {
            "m": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "properties": {"size": {"type": "integer", "default": 1}},
                },
            }
        },
    }
    obj: dict[str, Any] = {"m": {"a": {}, "b": {"size": 5}}}
    apply_defaults(obj, schema)
    assert obj == {"m": {"a": {"size": 1}, "b": {"size": 5}}}


def test_defaulted_object_gets_nested_defaults() -> None:
    """A defaulted object is itself defaulted recursively."""
    schema = {
        "type": "object",
        "properties": {
            "o": {
                "type": "object",
                "default": {},
                "properties": {"x": {"type": "string", "default": "y"}},
            }
        },
    }
    obj: dict[str, Any] = {}
    apply_defaults(obj, schema)
    assert obj == {"o": {"x": "y"}}


def test_null_without_default_is_removed() -> None:
    """A null non-nullable field without default is dropped before defaulting."""
    obj = mysrv(mode=None)
    apply_defaults(obj, mysrv_schema())
    assert "mode" not in obj["spec"]


def test_null_with_default_is_defaulted() -> None:
    """A null non-nullable field with a default gets the default."""
    obj = mysrv(port=None)
    apply_defaults(obj, mysrv_schema())
    assert obj["spec"]["port"] == 80


def test_nullable_null_is_kept() -> None:
    """A null nullable field stays null even if it has a default."""
    schema = {
        "type": "object",
        "properties": {"x": {"type": "string", "nullable": True, "default": "d"}},
    }
    obj: dict[str, Any] = {"x": None}
    apply_defaults(obj, schema)
    assert obj == {"x": None}


def test_default_values_are_copied() -> None:
    """Two objects defaulted from the same schema do not share the default value."""
    schema = {
        "type": "object",
        "properties": {
            "o": {
                "type": "object",
                "default": {"l": []},
                "properties": {"l": {"type": "array", "items": {"type": "string"}}},
            }
        },
    }
    a: dict[str, Any] = {}
    b: dict[str, Any] = {}
    apply_defaults(a, schema)
    apply_defaults(b, schema)
    a["o"]["l"].append("x")
    assert b == {"o": {"l": []}}


# --- pruning -------------------------------------------------------------------------------


def test_prune_drops_unknown_fields_and_keeps_root_meta() -> None:
    """Unknown fields go; apiVersion, kind and all of metadata stay at the root."""
    obj = mysrv(junk=1)
    obj["metadata"]["whatever"] = "kept"
    obj["extra"] = {"a": 1}
    prune(obj, mysrv_schema())
    assert obj == {
        "apiVersion": "example.com/v1",
        "kind": "MySrv",
        "metadata": {"name": "one", "namespace": "default", "whatever": "kept"},
        "spec": {"name": "web"},
    }


def test_prune_recurses_into_items_and_maps() -> None:
    """Unknown fields inside array items and map values are dropped."""
    schema = {
        "type": "object",
        "properties": {
            "l": {
                "type": "array",
                "items": {"type": "object", "properties": {"a": {"type": "string"}}},
            },
            "m": {
                "type": "object",
                "additionalProperties": {"type": "object", "properties": {"b": {"type": "string"}}},
            },
        },
    }
    obj: dict[str, Any] = {"l": [{"a": "1", "x": 2}], "m": {"k": {"b": "2", "y": 3}}}
    prune(obj, schema)
    assert obj == {"l": [{"a": "1"}], "m": {"k": {"b": "2"}}}


def test_prune_keeps_preserve_unknown_fields_subtrees() -> None:
    """Under x-kubernetes-preserve-unknown-fields unknown fields stay, known ones are pruned."""
    schema = {
        "type": "object",
        "properties": {
            "free": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {
                    "known": {"type": "object", "properties": {"a": {"type": "string"}}}
                },
            }
        },
    }
    obj: dict[str, Any] = {"free": {"anything": {"deep": 1}, "known": {"a": "x", "b": "y"}}}
    prune(obj, schema)
    assert obj == {"free": {"anything": {"deep": 1}, "known": {"a": "x"}}}


def test_prune_keeps_embedded_type_meta_and_coerces_metadata() -> None:
    """Embedded resources keep apiVersion/kind; their metadata loses unknown and empty fields."""
    schema = {
        "type": "object",
        "properties": {
            "template": {
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}},
            }
        },
    }
    obj: dict[str, Any] = {
        "template": {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "bogus": 1, "labels": {}, "generateName": ""},
            "spec": {"a": "1", "b": 2},
            "other": 3,
        }
    }
    prune(obj, schema)
    assert obj == {
        "template": {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"a": "1"},
        }
    }


def test_prune_then_default_round_trip() -> None:
    """Pruning then defaulting yields exactly the specified fields plus defaults."""
    obj = mysrv(unknown=True, ports=[{"name": "a", "bogus": 1}])
    schema = mysrv_schema()
    prune(obj, schema)
    apply_defaults(obj, schema)
    assert obj["spec"] == {"name": "web", "ports": [{"name": "a", "protocol": "TCP"}], "port": 80}
    assert validate(obj, schema) == []


# --- speed ---------------------------------------------------------------------------------


def test_validating_many_small_objects_reuses_compiled_schema() -> None:
    """10,000 small objects prune, default and validate quickly (timed, not asserted)."""
    schema = cel_schema()
    objs = [
        mysrv(name=f"web-{i}", mode="cool", replicas=i % 5, ports=[{"name": "http", "port": 80}])
        for i in range(10_000)
    ]
    start = time.perf_counter()
    invalid = 0
    for obj in objs:
        prune(obj, schema)
        apply_defaults(obj, schema)
        invalid += bool(validate(obj, schema))
    elapsed = time.perf_counter() - start
    assert invalid == 0
    print(f"validated 10000 objects in {elapsed:.2f}s")


# --- robustness ----------------------------------------------------------------------------

_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)
_spec_keys = st.sampled_from(
    ["name", "port", "mode", "replicas", "labels", "ports", "tags", "target", "x"]
)


@settings(max_examples=150, deadline=None)
@given(
    spec=st.dictionaries(_spec_keys, _json, max_size=6),
    old_spec=st.dictionaries(_spec_keys, _json, max_size=6),
)
def test_arbitrary_json_never_crashes(spec: dict[str, Any], old_spec: dict[str, Any]) -> None:
    """Pruning, defaulting and validating any JSON spec returns causes instead of raising."""
    schema = cel_schema()
    obj = {"apiVersion": "example.com/v1", "kind": "MySrv", "metadata": {"name": "x"}, "spec": spec}
    old = {
        "apiVersion": "example.com/v1",
        "kind": "MySrv",
        "metadata": {"name": "x"},
        "spec": old_spec,
    }
    prune(obj, schema)
    apply_defaults(obj, schema)
    causes = validate(obj, schema, old=old) + validate(obj, schema)
    assert all(isinstance(c, Cause) and c.message for c in causes)
