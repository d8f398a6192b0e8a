"""Structural-schema and OpenAPI restrictions on CRD schemas, as kube-apiserver words them."""

from __future__ import annotations

from typing import Any

from pyctrl._apiextensions.structural import structural_errors

P = "spec.validation.openAPIV3Schema"


def errors(schema: dict[str, Any], path: str = P) -> list[str]:
    return [str(c) for c in structural_errors(schema, path)]


def obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


def test_well_formed_schema_has_no_errors() -> None:
    """A typed schema with list/map extensions, int-or-string and defaults is accepted."""
    schema = obj(
        spec=obj(
            port={"type": "integer", "default": 80, "minimum": 1},
            target={
                "x-kubernetes-int-or-string": True,
                "anyOf": [{"type": "integer"}, {"type": "string"}],
            },
            ports={
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": obj(name={"type": "string"}) | {"required": ["name"]},
            },
            labels={"type": "object", "additionalProperties": {"type": "string"}},
            free={"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        ),
        metadata={"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}},
    )
    assert errors(schema) == []


def test_missing_type_of_a_field() -> None:
    """A property without type is 'must not be empty for specified object fields'."""
    assert errors(obj(spec=obj(x={"description": "untyped"}))) == [
        f"{P}.properties[spec].properties[x].type: Required value: must not be empty for specified "
        "object fields"
    ]


def test_missing_type_of_array_items_and_root() -> None:
    """Untyped items and an untyped root have their own wording."""
    schema = {"properties": {"l": {"type": "array", "items": {}}}}
    assert errors(schema) == [
        f"{P}.properties[l].items.type: Required value: must not be empty for specified array "
        "items",
        f"{P}.type: Required value: must not be empty at the root",
    ]


def test_v1_per_version_path_prefix() -> None:
    """The path prefix is the caller's, e.g. a per-version schema of a v1 CRD."""
    path = "spec.versions[0].schema.openAPIV3Schema"
    assert errors(obj(spec={}), path) == [
        f"{path}.properties[spec].type: Required value: must not be empty for specified object "
        "fields"
    ]


def test_preserve_unknown_fields_and_int_or_string_need_no_type() -> None:
    """x-kubernetes-preserve-unknown-fields and x-kubernetes-int-or-string nodes may be untyped."""
    schema = obj(
        a={"x-kubernetes-preserve-unknown-fields": True}, b={"x-kubernetes-int-or-string": True}
    )
    assert errors(schema) == []


def test_ref_is_forbidden() -> None:
    """$ref is not supported."""
    assert errors(obj(a={"$ref": "#/definitions/x"})) == [
        f"{P}.properties[a].$ref: Forbidden: $ref is not supported"
    ]


def test_additional_properties_with_properties_is_forbidden() -> None:
    """properties and additionalProperties are mutually exclusive."""
    schema = obj(
        a={
            "type": "object",
            "properties": {"b": {"type": "string"}},
            "additionalProperties": {"type": "string"},
        }
    )
    assert errors(schema) == [
        f"{P}.properties[a].additionalProperties: Forbidden: additionalProperties and "
        "properties are "
        "mutual exclusive"
    ]


def test_additional_properties_at_root_is_forbidden() -> None:
    """additionalProperties cannot be used at the root."""
    assert errors({"type": "object", "additionalProperties": {"type": "string"}}) == [
        f"{P}.additionalProperties: Forbidden: must not be used at the root"
    ]


def test_junctors_may_only_hold_value_validations() -> None:
    """Types, defaults, descriptions, nullable inside anyOf/allOf/oneOf/not are not structural."""
    schema = obj(
        a={
            "type": "string",
            "anyOf": [{"type": "string", "description": "d"}],
            "allOf": [{"default": "x"}],
            "oneOf": [{"nullable": True}],
            "not": {"title": "t"},
        }
    )
    assert errors(schema) == [
        f"{P}.properties[a].allOf[0].default: Forbidden: must be undefined to be structural",
        f"{P}.properties[a].anyOf[0].description: Forbidden: must be empty to be structural",
        f"{P}.properties[a].anyOf[0].type: Forbidden: must be empty to be structural",
        f"{P}.properties[a].not.title: Forbidden: must be empty to be structural",
        f"{P}.properties[a].oneOf[0].nullable: Forbidden: must be false to be structural",
    ]


def test_junctor_fields_must_be_specified_structurally() -> None:
    """A property named only inside a root junctor must also exist outside it."""
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "anyOf": [{"properties": {"b": {"minLength": 1}}}],
    }
    assert errors(schema) == [
        f"{P}.properties[b]: Required value: because it is defined in {P}.anyOf[0].properties[b]"
    ]


def test_int_or_string_pattern_is_allowed_in_any_of() -> None:
    """The int-or-string anyOf of an integer and a string type is the one allowed typed junctor."""
    ok = obj(
        a={"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]}
    )
    assert errors(ok) == []
    bad = obj(
        a={"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "boolean"}]}
    )
    assert errors(bad) == [
        f"{P}.properties[a].anyOf[0].type: Forbidden: must be empty to be structural",
        f"{P}.properties[a].anyOf[1].type: Forbidden: must be empty to be structural",
    ]


def test_metadata_may_only_restrict_name_and_generate_name() -> None:
    """Root metadata beyond name/generateName is forbidden."""
    schema = obj(metadata={"type": "object", "properties": {"labels": {"type": "object"}}})
    assert errors(schema) == [
        f"{P}.properties[metadata]: Forbidden: must not specify anything other than name and "
        "generateName, but metadata is implicitly specified"
    ]


def test_metadata_must_be_an_object() -> None:
    """Root metadata of another type is invalid."""
    assert errors(obj(metadata={"type": "string"})) == [
        f'{P}.properties[metadata].type: Invalid value: "string": must be object'
    ]


def test_root_must_be_an_object() -> None:
    """A root of another type is invalid."""
    assert errors({"type": "array", "items": {"type": "string"}}) == [
        f'{P}.type: Invalid value: "array": must be object at the root'
    ]


def test_array_needs_items() -> None:
    """An array without items is incomplete."""
    assert errors(obj(l={"type": "array"})) == [
        f"{P}.properties[l].items: Required value: must be specified"
    ]


def test_items_must_be_a_single_schema() -> None:
    """items given as a list of schemas is forbidden."""
    assert errors(obj(l={"type": "array", "items": [{"type": "string"}]})) == [
        f"{P}.properties[l].items: Forbidden: items must be a schema object and not an array"
    ]


def test_unique_items_is_forbidden() -> None:
    """uniqueItems: true is refused (quadratic)."""
    assert errors(obj(l={"type": "array", "uniqueItems": True, "items": {"type": "string"}})) == [
        f"{P}.properties[l].uniqueItems: Forbidden: uniqueItems cannot be set to true since the "
        "runtime "
        "complexity becomes quadratic"
    ]


def test_unknown_type_is_not_supported() -> None:
    """Types outside OpenAPI v3's set are refused; null suggests nullable."""
    assert errors(obj(a={"type": "float"}, b={"type": "null"})) == [
        f'{P}.properties[a].type: Unsupported value: "float": supported values: "array", '
        '"boolean", '
        '"integer", "number", "object", "string"',
        f'{P}.properties[b].type: Unsupported value: "null": supported values: "array", "boolean", '
        '"integer", "number", "object", "string"',
        f"{P}.properties[b].type: Forbidden: type cannot be set to null, use nullable as an "
        "alternative",
    ]


def test_invalid_pattern_is_refused() -> None:
    """A pattern Go's RE2 refuses (lookahead) is invalid."""
    assert errors(obj(s={"type": "string", "pattern": "^(?!x)"})) == [
        f'{P}.properties[s].pattern: Invalid value: "^(?!x)": must be a valid regular '
        "expression, but "
        "isn't: error parsing regexp: invalid or unsupported Perl syntax: `(?!`"
    ]


def test_embedded_resource_must_be_object_with_properties() -> None:
    """x-kubernetes-embedded-resource needs type object and properties unless preserving fields."""
    assert errors(obj(e={"type": "object", "x-kubernetes-embedded-resource": True})) == [
        f"{P}.properties[e].properties: Required value: must not be empty if "
        "x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"
    ]


def test_list_map_keys_must_be_required_or_defaulted_scalars() -> None:
    """Map-list keys must be item properties, scalar, and required or defaulted."""
    schema = obj(
        l={
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name", "missing"],
            "items": obj(name={"type": "string"}),
        }
    )
    assert errors(schema) == [
        f"{P}.properties[l].x-kubernetes-list-map-keys: Invalid value: "
        '[]string{"name", "missing"}: entries must all be names of item properties',
        f"{P}.properties[l].items.properties[name].default: Required value: this property is in "
        "x-kubernetes-list-map-keys, so it must have a default or be a required property",
    ]


def test_list_type_requires_array_and_known_value() -> None:
    """x-kubernetes-list-type only fits arrays and only atomic/set/map."""
    assert errors(obj(s={"type": "string", "x-kubernetes-list-type": "set"})) == [
        f'{P}.properties[s].type: Invalid value: "string": must be array if '
        "x-kubernetes-list-type is specified"
    ]
    assert errors(
        obj(l={"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "bag"})
    ) == [
        f'{P}.properties[l].x-kubernetes-list-type: Unsupported value: "bag": supported values: '
        '"atomic", '
        '"set", "map"'
    ]


def test_set_items_must_be_atomic() -> None:
    """Objects in a set list must be x-kubernetes-map-type atomic."""
    schema = obj(
        l={"type": "array", "x-kubernetes-list-type": "set", "items": obj(a={"type": "string"})}
    )
    assert errors(schema) == [
        f"{P}.properties[l].items.x-kubernetes-map-type: Invalid value: null: must be atomic "
        "as item of a "
        "list with x-kubernetes-list-type=set"
    ]


def test_default_must_validate_against_its_schema() -> None:
    """A default violating its own schema is reported at .default."""
    assert errors(obj(port={"type": "integer", "maximum": 10, "default": 80})) == [
        f"{P}.properties[port].default: Invalid value: 80:  in body should be less than or "
        "equal to 10"
    ]


def test_default_must_be_pruned() -> None:
    """A default with fields the schema does not specify is refused."""
    schema = obj(
        o={
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "default": {"a": "x", "b": "y"},
        }
    )
    assert errors(schema) == [
        f'{P}.properties[o].default: Invalid value: {{"a":"x","b":"y"}}: '
        "must not have unknown fields"
    ]


def test_defaults_are_forbidden_in_root_metadata() -> None:
    """A default in top-level metadata is forbidden."""
    schema = obj(
        metadata={"type": "object", "properties": {"name": {"type": "string", "default": "x"}}}
    )
    assert errors(schema) == [
        f"{P}.properties[metadata].properties[name].default: Forbidden: must not be set in "
        "top-level metadata"
    ]


def test_nested_x_kubernetes_validations_are_not_structural() -> None:
    """Rules inside a junctor are forbidden."""
    schema = obj(a={"type": "string", "allOf": [{"x-kubernetes-validations": [{"rule": "true"}]}]})
    assert errors(schema) == [
        f"{P}.properties[a].allOf[0].x-kubernetes-validations: Forbidden: must be empty to be "
        "structural"
    ]


def test_unsupported_fields_hide_structural_errors() -> None:
    """Like kube-apiserver, a schema that cannot be made structural reports only OpenAPI errors."""
    schema = obj(spec={"properties": {"x": {}}}, r={"$ref": "#/x"})
    assert errors(schema) == [f"{P}.properties[r].$ref: Forbidden: $ref is not supported"]


def test_structural_errors_are_sorted() -> None:
    """Structural errors come sorted as kube-apiserver sorts them."""
    schema = obj(z={}, a={})
    assert errors(schema) == [
        f"{P}.properties[a].type: Required value: must not be empty for specified object fields",
        f"{P}.properties[z].type: Required value: must not be empty for specified object fields",
    ]
