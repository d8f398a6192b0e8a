"""pyctrl.crd markers: controller-gen's +kubebuilder comments as Annotated metadata."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import Field, TypeAdapter, ValidationError

from pyctrl._apiextensions.validation import validate
from pyctrl.crd import (
    Description,
    EmbeddedResource,
    Format,
    Int32,
    IntOrString,
    ListType,
    MapType,
    Marker,
    PreserveUnknownFields,
    Quantity,
    Schemaless,
    XValidation,
    schema_for,
    structural_errors,
)
from pyctrl.meta import Condition, KubeModel
from pyctrl.resource import CustomResource


def field_schema(annotation: Any, default: Any = ..., **field: Any) -> dict[str, Any]:
    """The schema of one field ``x`` of the given type, checked to be structural."""
    namespace: dict[str, Any] = {"__annotations__": {"x": annotation}}
    if default is not ... or field:
        namespace["x"] = Field(default, **field) if field else default
    model = type("Holder", (KubeModel,), namespace)
    schema = schema_for(model)
    assert structural_errors(schema) == []
    result: dict[str, Any] = schema["properties"]["x"]
    return result


class Port(KubeModel):
    name: str
    container_port: int
    protocol: str = "TCP"


def test_list_type_map_with_keys() -> None:
    """ListType('map', keys) sets the list type and map keys."""
    schema = field_schema(Annotated[list[Port], ListType("map", keys=("name",))])
    assert schema["x-kubernetes-list-type"] == "map"
    assert schema["x-kubernetes-list-map-keys"] == ["name"]


def test_list_map_keys_accept_python_names() -> None:
    """Map keys given by Python name are written by wire name; defaulted keys are allowed."""
    schema = field_schema(
        Annotated[list[Port], ListType("map", keys=("container_port", "protocol"))]
    )
    assert schema["x-kubernetes-list-map-keys"] == ["containerPort", "protocol"]


def test_list_type_set_and_atomic() -> None:
    """ListType('set') and ListType('atomic') set the list type without keys."""
    assert field_schema(Annotated[list[str], ListType("set")])["x-kubernetes-list-type"] == "set"
    assert field_schema(Annotated[list[Port], ListType("atomic")]) == {
        "type": "array",
        "items": schema_for(Port),
        "x-kubernetes-list-type": "atomic",
    }


def test_condition_lists_are_maps_keyed_by_type() -> None:
    """list[Condition] is a list-map keyed by type, like Go operators' conditions."""
    schema = field_schema(list[Condition])
    assert schema["x-kubernetes-list-type"] == "map"
    assert schema["x-kubernetes-list-map-keys"] == ["type"]
    assert schema["items"]["required"] == [
        "lastTransitionTime",
        "message",
        "reason",
        "status",
        "type",
    ]


def test_list_type_marker_overrides_condition_default() -> None:
    """An explicit ListType on a Condition list replaces the map default."""
    schema = field_schema(Annotated[list[Condition], ListType("atomic")])
    assert schema["x-kubernetes-list-type"] == "atomic"
    assert "x-kubernetes-list-map-keys" not in schema


def test_map_type_on_dict() -> None:
    """MapType('atomic') on a dict sets x-kubernetes-map-type."""
    assert field_schema(Annotated[dict[str, str], MapType("atomic")]) == {
        "type": "object",
        "additionalProperties": {"type": "string"},
        "x-kubernetes-map-type": "atomic",
    }


def test_map_type_as_class_decorator() -> None:
    """MapType decorating a model makes every use of it atomic (+structType=atomic)."""

    @MapType("atomic")
    class Ref(KubeModel):
        name: str = ""

    assert field_schema(Ref, default_factory=Ref)["x-kubernetes-map-type"] == "atomic"


def test_preserve_unknown_fields_on_model_field_keeps_properties() -> None:
    """PreserveUnknownFields on a model field keeps its declared properties too."""

    class Inner(KubeModel):
        a: int = 0

    schema = field_schema(Annotated[Inner, PreserveUnknownFields()], default_factory=Inner)
    assert schema["x-kubernetes-preserve-unknown-fields"] is True
    assert schema["properties"] == {"a": {"type": "integer", "default": 0}}


def test_preserve_unknown_fields_as_class_decorator() -> None:
    """PreserveUnknownFields decorating a class applies wherever the class is used."""

    @PreserveUnknownFields()
    class Open(KubeModel):
        a: int = 0

    assert schema_for(Open)["x-kubernetes-preserve-unknown-fields"] is True


def test_embedded_resource_on_any_dict() -> None:
    """EmbeddedResource on dict[str, Any] is controller-gen's RawExtension rendering."""
    assert field_schema(Annotated[dict[str, Any], EmbeddedResource()]) == {
        "type": "object",
        "x-kubernetes-embedded-resource": True,
        "x-kubernetes-preserve-unknown-fields": True,
    }


def test_embedded_resource_gets_no_empty_default() -> None:
    """An empty factory default is not written for an embedded resource (it needs a kind)."""
    schema = field_schema(Annotated[dict[str, Any], EmbeddedResource()], default_factory=dict)
    assert "default" not in schema


def test_embedded_resource_keeps_a_complete_default() -> None:
    """A default with apiVersion and kind is written for an embedded resource."""
    default = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    schema = field_schema(Annotated[dict[str, Any], EmbeddedResource()], default)
    assert schema["default"] == default


def test_embedded_resource_on_any_becomes_object() -> None:
    """EmbeddedResource on Any types the node as an object (embedded resources are objects)."""
    assert field_schema(Annotated[Any, EmbeddedResource(), PreserveUnknownFields()]) == {
        "type": "object",
        "x-kubernetes-embedded-resource": True,
        "x-kubernetes-preserve-unknown-fields": True,
    }


def test_schemaless_keeps_only_markers_and_description() -> None:
    """Schemaless drops the type's schema; markers and the description remain."""
    schema = field_schema(
        Annotated[dict[str, str], Schemaless(), PreserveUnknownFields(), Description("Anything.")]
    )
    assert schema == {"description": "Anything.", "x-kubernetes-preserve-unknown-fields": True}


def test_x_validation_on_field_renders_every_option() -> None:
    """XValidation renders rule, message, messageExpression, reason, fieldPath, optionalOldSelf."""
    rule = XValidation(
        "!oldSelf.hasValue() || self.name == oldSelf.value().name",
        message="immutable",
        message_expression="'name ' + self.name + ' cannot change'",
        reason="FieldValueForbidden",
        field_path=".name",
        optional_old_self=True,
    )
    schema = field_schema(Annotated[Port, rule])
    assert schema["x-kubernetes-validations"] == [
        {
            "rule": "!oldSelf.hasValue() || self.name == oldSelf.value().name",
            "message": "immutable",
            "messageExpression": "'name ' + self.name + ' cannot change'",
            "reason": "FieldValueForbidden",
            "fieldPath": ".name",
            "optionalOldSelf": True,
        }
    ]


def test_stacked_class_rules_keep_source_order() -> None:
    """Several XValidation decorators apply in the order they are written."""

    @XValidation("self.a >= 0", message="first")
    @XValidation("self.b >= 0", message="second")
    class Pair(KubeModel):
        a: int = 0
        b: int = 0

    rules = schema_for(Pair)["x-kubernetes-validations"]
    assert [r["message"] for r in rules] == ["first", "second"]


def test_class_rules_are_inherited() -> None:
    """Rules declared on a base class apply to its subclasses, base rules first."""

    @XValidation("self.a >= 0")
    class Base(KubeModel):
        a: int = 0

    @XValidation("self.b >= 0")
    class Child(Base):
        b: int = 0

    assert [r["rule"] for r in schema_for(Child)["x-kubernetes-validations"]] == [
        "self.a >= 0",
        "self.b >= 0",
    ]
    assert [r["rule"] for r in schema_for(Base)["x-kubernetes-validations"]] == ["self.a >= 0"]


def test_class_rule_on_custom_resource_root() -> None:
    """An XValidation decorating a CustomResource sits on the schema root."""

    class Spec(KubeModel):
        a: int = 0

    @XValidation("self.metadata.name.size() < 20", message="name too long")
    class Thing(CustomResource, group="x.example.com", version="v1"):
        spec: Spec = Field(default_factory=Spec)

    schema = schema_for(Thing)
    assert schema["x-kubernetes-validations"] == [
        {"rule": "self.metadata.name.size() < 20", "message": "name too long"}
    ]
    assert structural_errors(schema) == []


def test_class_rule_is_enforced_by_validation() -> None:
    """A class rule relating two fields rejects an object that breaks it."""

    @XValidation("self.low <= self.high", message="low exceeds high")
    class Range(KubeModel):
        low: int = 0
        high: int = 0

    errors = validate({"low": 5, "high": 1}, schema_for(Range))
    assert [(e.field, e.message) for e in errors] == [("<nil>", "Invalid value: low exceeds high")]


def test_format_marker() -> None:
    """Format sets the OpenAPI format."""
    assert field_schema(Annotated[str, Format("hostname")]) == {
        "type": "string",
        "format": "hostname",
    }


def test_description_marker_beats_field_description() -> None:
    """Description overrides Field(description=...)."""
    schema = field_schema(Annotated[int, Description("From marker.")], 0, description="Field.")
    assert schema["description"] == "From marker."


def test_int_or_string() -> None:
    """IntOrString renders as controller-gen renders intstr.IntOrString."""
    assert field_schema(IntOrString) == {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    }


def test_optional_int_or_string() -> None:
    """Optional IntOrString is nullable int-or-string."""
    assert field_schema(IntOrString | None, None) == {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
        "nullable": True,
    }


def test_quantity_schema_and_python_validation() -> None:
    """Quantity is int-or-string with the quantity pattern, also checked in Python."""
    schema = field_schema(Quantity)
    assert schema["x-kubernetes-int-or-string"] is True
    assert schema["pattern"].startswith("^(\\+|-)?")
    adapter: TypeAdapter[int | str] = TypeAdapter(Quantity)
    assert adapter.validate_python("500m") == "500m"
    with pytest.raises(ValidationError, match="not a quantity"):
        adapter.validate_python("lots")


def test_int32_format_and_range() -> None:
    """Int32 renders format int32 and refuses out-of-range values in Python."""
    assert field_schema(Int32) == {"type": "integer", "format": "int32"}
    with pytest.raises(ValidationError, match="does not fit in 32 bits"):
        TypeAdapter(Int32).validate_python(2**31)


def test_custom_marker() -> None:
    """A user Marker subclass edits the schema of the field it annotates."""

    class Immutable(Marker):
        def apply(self, schema: dict[str, Any]) -> None:
            schema.setdefault("x-kubernetes-validations", []).append(
                {"rule": "self == oldSelf", "message": "is immutable"}
            )

    assert field_schema(Annotated[str, Immutable()])["x-kubernetes-validations"] == [
        {"rule": "self == oldSelf", "message": "is immutable"}
    ]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: ListType("map"), "needs keys"),
        (lambda: ListType("set", keys=("a",)), "takes no keys"),
        (lambda: ListType("tree"), "atomic, set or map"),  # type: ignore[arg-type]
        (lambda: ListType("map", keys="name"), "tuple of names"),  # type: ignore[arg-type]
        (lambda: MapType("flat"), "atomic or granular"),  # type: ignore[arg-type]
        (lambda: XValidation(""), "non-empty"),
        (lambda: XValidation("true", reason="Nope"), "not one of"),  # type: ignore[arg-type]
        (lambda: XValidation("true", message="a\nb"), "line breaks"),
    ],
)
def test_marker_arguments_are_checked(make: Any, message: str) -> None:
    """Markers refuse bad arguments when built, saying what is wrong."""
    with pytest.raises(ValueError, match=message):
        make()


def test_class_marker_refuses_non_classes() -> None:
    """A class marker used on something that is not a class raises TypeError."""
    with pytest.raises(TypeError, match="decorates classes"):
        XValidation("true")(len)  # type: ignore[type-var]
