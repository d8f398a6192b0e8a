"""pyctrl.crd.schema_for: Python types to structural OpenAPI v3 schemas."""

from __future__ import annotations

import datetime
import enum
import ipaddress
import uuid
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, NewType, NotRequired

import annotated_types
from pydantic import AnyUrl, BaseModel, Field, conint, constr
from pydantic.dataclasses import dataclass as pydantic_dataclass
from pydantic.json_schema import SkipJsonSchema, WithJsonSchema
from typing_extensions import TypedDict

from pyctrl.crd import schema_for, structural_errors
from pyctrl.meta import KubeModel, MicroTime, ObjectMeta, Time


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


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


Name = NewType("Name", str)


def test_str_is_string() -> None:
    """str renders as type string."""
    assert field_schema(str) == {"type": "string"}


def test_int_is_integer() -> None:
    """int renders as type integer, without a format (Python ints have no width)."""
    assert field_schema(int) == {"type": "integer"}


def test_float_is_number() -> None:
    """float renders as type number."""
    assert field_schema(float) == {"type": "number"}


def test_bool_is_boolean() -> None:
    """bool renders as boolean, not integer."""
    assert field_schema(bool) == {"type": "boolean"}


def test_datetime_is_date_time_string() -> None:
    """datetime and pyctrl's Time/MicroTime render as date-time strings."""
    expected = {"type": "string", "format": "date-time"}
    assert field_schema(datetime.datetime) == expected
    assert field_schema(Time) == expected
    assert field_schema(MicroTime) == expected


def test_well_known_string_formats() -> None:
    """date, UUID, IP addresses, networks and URLs carry their OpenAPI formats."""
    assert field_schema(datetime.date) == {"type": "string", "format": "date"}
    assert field_schema(uuid.UUID) == {"type": "string", "format": "uuid"}
    assert field_schema(ipaddress.IPv4Address) == {"type": "string", "format": "ipv4"}
    assert field_schema(ipaddress.IPv6Address) == {"type": "string", "format": "ipv6"}
    assert field_schema(ipaddress.IPv4Network) == {"type": "string", "format": "cidr"}
    assert field_schema(AnyUrl) == {"type": "string", "format": "uri"}


def test_timedelta_and_bytes_are_plain_strings() -> None:
    """timedelta (ISO 8601 in pydantic) and bytes (UTF-8 text) get no misleading format."""
    assert field_schema(datetime.timedelta) == {"type": "string"}
    assert field_schema(bytes) == {"type": "string"}


def test_newtype_uses_its_supertype() -> None:
    """A NewType renders as the type it wraps."""
    assert field_schema(Name) == {"type": "string"}


def test_optional_is_nullable_not_any_of() -> None:
    """Optional[X] is X's schema with nullable: true, never an anyOf with null."""
    assert field_schema(int | None, None) == {"type": "integer", "nullable": True}


def test_optional_model_is_nullable_object() -> None:
    """An optional model field is the object schema with nullable: true."""

    class Inner(KubeModel):
        a: int

    assert field_schema(Inner | None, None) == {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
        "nullable": True,
    }


def test_dict_of_values_is_additional_properties() -> None:
    """dict[str, X] renders as an object with additionalProperties X."""
    assert field_schema(dict[str, int]) == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
    }
    assert field_schema(Mapping[str, bool]) == {
        "type": "object",
        "additionalProperties": {"type": "boolean"},
    }


def test_dict_of_any_preserves_unknown_fields() -> None:
    """dict[str, Any] and bare dict are objects that keep whatever they hold."""
    expected = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert field_schema(dict[str, Any]) == expected
    assert field_schema(dict) == expected


def test_any_preserves_unknown_fields_without_type() -> None:
    """Any is an untyped node that preserves unknown fields."""
    assert field_schema(Any) == {"x-kubernetes-preserve-unknown-fields": True}


def test_lists_and_sequences_are_arrays() -> None:
    """list[X], Sequence[X] and tuple[X, ...] render as arrays of X."""
    expected = {"type": "array", "items": {"type": "string"}}
    assert field_schema(list[str]) == expected
    assert field_schema(Sequence[str]) == expected
    assert field_schema(tuple[str, ...]) == expected


def test_fixed_tuple_of_one_type_bounds_the_length() -> None:
    """tuple[int, int] is an array of integers with exactly two items."""
    assert field_schema(tuple[int, int]) == {
        "type": "array",
        "items": {"type": "integer"},
        "minItems": 2,
        "maxItems": 2,
    }


def test_set_is_list_type_set() -> None:
    """set[X] renders as an array with x-kubernetes-list-type set (uniqueItems is forbidden)."""
    assert field_schema(frozenset[str]) == {
        "type": "array",
        "items": {"type": "string"},
        "x-kubernetes-list-type": "set",
    }


def test_literal_is_enum() -> None:
    """Literal values become an enum of the values' type."""
    assert field_schema(Literal["a", "b"]) == {"type": "string", "enum": ["a", "b"]}
    assert field_schema(Literal[1, 2]) == {"type": "integer", "enum": [1, 2]}


def test_optional_literal_is_nullable_enum() -> None:
    """Literal with None is the enum of the other values, nullable."""
    assert field_schema(Literal["a", None], None) == {
        "type": "string",
        "enum": ["a"],
        "nullable": True,
    }


def test_enum_classes_are_enums_of_their_values() -> None:
    """Enum members render as their values; an IntEnum as integers."""
    assert field_schema(Color) == {"type": "string", "enum": ["red", "green"]}
    assert field_schema(Level) == {"type": "integer", "enum": [1, 2]}


def test_numeric_bounds_use_openapi_v3_0_boolean_exclusive_form() -> None:
    """ge/le become minimum/maximum; gt/lt add exclusiveMinimum/exclusiveMaximum: true."""
    assert field_schema(Annotated[int, Field(ge=1, le=10)]) == {
        "type": "integer",
        "minimum": 1,
        "maximum": 10,
    }
    assert field_schema(Annotated[float, Field(gt=0, lt=1)]) == {
        "type": "number",
        "minimum": 0,
        "exclusiveMinimum": True,
        "maximum": 1,
        "exclusiveMaximum": True,
    }


def test_multiple_of() -> None:
    """multiple_of becomes multipleOf."""
    assert field_schema(Annotated[int, Field(multiple_of=5)]) == {
        "type": "integer",
        "multipleOf": 5,
    }


def test_string_constraints() -> None:
    """min_length, max_length and pattern apply to strings, also through constr()."""
    assert field_schema(Annotated[str, Field(min_length=1, max_length=5, pattern="^[a-z]+$")]) == {
        "type": "string",
        "minLength": 1,
        "maxLength": 5,
        "pattern": "^[a-z]+$",
    }
    assert field_schema(constr(max_length=3)) == {"type": "string", "maxLength": 3}


def test_conint_and_interval_metadata() -> None:
    """conint() and annotated_types.Interval give the same bounds as Field()."""
    assert field_schema(conint(ge=0, lt=3)) == {
        "type": "integer",
        "minimum": 0,
        "maximum": 3,
        "exclusiveMaximum": True,
    }
    assert field_schema(Annotated[int, annotated_types.Interval(ge=2, le=4)]) == {
        "type": "integer",
        "minimum": 2,
        "maximum": 4,
    }


def test_length_constraints_on_lists_and_dicts() -> None:
    """min_length/max_length bound items of lists and properties of dicts."""
    assert field_schema(Annotated[list[int], Field(min_length=1, max_length=3)]) == {
        "type": "array",
        "items": {"type": "integer"},
        "minItems": 1,
        "maxItems": 3,
    }
    assert field_schema(Annotated[dict[str, str], Field(max_length=2)]) == {
        "type": "object",
        "additionalProperties": {"type": "string"},
        "maxProperties": 2,
    }


def test_constraints_on_list_items() -> None:
    """Constraints inside the item type apply to the items."""
    assert field_schema(list[Annotated[int, Field(ge=0)]]) == {
        "type": "array",
        "items": {"type": "integer", "minimum": 0},
    }


def test_constraints_on_optional_apply_to_the_value() -> None:
    """Field(ge=...) on an Optional field constrains the non-null value."""
    assert field_schema(int | None, None, ge=1) == {
        "type": "integer",
        "minimum": 1,
        "nullable": True,
    }


def test_scalar_default_in_wire_form() -> None:
    """A scalar default is written as the default."""
    assert field_schema(int, 80) == {"type": "integer", "default": 80}


def test_enum_and_datetime_defaults_are_serialised() -> None:
    """Enum defaults are written as their value and times as RFC 3339 (with Z for Time)."""
    assert field_schema(Color, Color.GREEN)["default"] == "green"
    moment = datetime.datetime(2024, 5, 1, 10, 0, tzinfo=datetime.UTC)
    assert field_schema(Time, moment)["default"] == "2024-05-01T10:00:00Z"


def test_none_default_is_not_written() -> None:
    """A None default leaves no default in the schema (nullable says enough)."""
    assert "default" not in field_schema(str | None, None)


def test_empty_container_factories_default_to_empty_values() -> None:
    """default_factory=list / dict give default [] / {}."""
    assert field_schema(list[int], default_factory=list)["default"] == []
    assert field_schema(dict[str, int], default_factory=dict)["default"] == {}


def test_model_default_is_written_in_full_wire_form() -> None:
    """A model default is written whole in wire form (camelCase, None fields left out)."""

    class Inner(KubeModel):
        max_count: int = 3
        min_count: int = 1
        note: str | None = None

    assert field_schema(Inner, default_factory=Inner)["default"] == {"maxCount": 3, "minCount": 1}
    assert field_schema(Inner, Inner(max_count=5))["default"] == {"maxCount": 5, "minCount": 1}


def test_scalar_factory_is_treated_as_dynamic() -> None:
    """A factory producing a scalar (a fresh id, a timestamp) gives no schema default."""
    assert "default" not in field_schema(str, default_factory=lambda: uuid.uuid4().hex)


def test_wire_names_are_aliases() -> None:
    """Properties use the camelCase wire name; an explicit alias wins."""

    class Holder(KubeModel):
        max_surge: int
        odd: int = Field(alias="oDD")

    schema = schema_for(Holder)
    assert list(schema["properties"]) == ["maxSurge", "oDD"]
    assert schema["required"] == ["maxSurge", "oDD"]


def test_required_fields_are_sorted() -> None:
    """required lists the fields without defaults, sorted as controller-gen sorts them."""

    class Holder(KubeModel):
        zeta: int
        alpha: int
        beta: int = 0

    assert schema_for(Holder)["required"] == ["alpha", "zeta"]


def test_class_docstring_describes_the_object() -> None:
    """The class docstring is the object's description, like a Go type comment."""

    class Holder(KubeModel):
        """Holder holds things.

        Second line.
        """

        a: int = 0

    assert schema_for(Holder)["description"] == "Holder holds things.\n\nSecond line."


def test_attributes_section_describes_fields() -> None:
    """A Google-style Attributes section describes the fields and leaves the class text."""

    class Holder(KubeModel):
        """Holder holds things.

        Attributes:
            max_count: The largest count,
                continued here.
            name (str): The name.
        """

        max_count: int = 0
        name: str = ""

    schema = schema_for(Holder)
    assert schema["description"] == "Holder holds things."
    assert schema["properties"]["maxCount"]["description"] == "The largest count,\ncontinued here."
    assert schema["properties"]["name"]["description"] == "The name."


def test_field_description_beats_type_docstring() -> None:
    """A field's description replaces the docstring of the field's model type."""

    class Inner(KubeModel):
        """Inner is described here."""

        a: int = 0

    assert field_schema(Inner, default_factory=Inner)["description"] == "Inner is described here."
    assert (
        field_schema(Inner, default_factory=Inner, description="Field text.")["description"]
        == "Field text."
    )


def test_docstrings_are_not_inherited() -> None:
    """A subclass without a docstring has no description (as a Go type without comment)."""

    class Base(KubeModel):
        """Base text."""

    class Child(Base):
        a: int = 0

    assert "description" not in schema_for(Child)


def test_title_and_examples_are_ignored() -> None:
    """Field title and examples do not reach the schema."""
    assert field_schema(int, 1, title="T", examples=[1, 2]) == {"type": "integer", "default": 1}


def test_excluded_and_skipped_fields_are_left_out() -> None:
    """Fields never sent (exclude=True) or marked SkipJsonSchema are not in the schema."""

    class Holder(KubeModel):
        kept: int = 0
        cache: int = Field(default=0, exclude=True)
        internal: SkipJsonSchema[int] = 0

    assert list(schema_for(Holder)["properties"]) == ["kept"]


def test_nested_object_meta_keeps_labels_and_annotations() -> None:
    """ObjectMeta below the root renders as controller-gen's embedded ObjectMeta."""

    class Template(KubeModel):
        metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    metadata = field_schema(Template, default_factory=Template)["properties"]["metadata"]
    assert metadata == {
        "type": "object",
        "properties": {
            "annotations": {"additionalProperties": {"type": "string"}, "type": "object"},
            "finalizers": {"items": {"type": "string"}, "type": "array"},
            "labels": {"additionalProperties": {"type": "string"}, "type": "object"},
            "name": {"type": "string"},
            "namespace": {"type": "string"},
        },
        "default": {},
    }


def test_typed_dict_fields() -> None:
    """A TypedDict renders as an object; NotRequired keys are optional."""

    class Pair(TypedDict):
        key: str
        value: NotRequired[int]

    assert field_schema(Pair) == {
        "type": "object",
        "properties": {"key": {"type": "string"}, "value": {"type": "integer"}},
        "required": ["key"],
    }


def test_pydantic_dataclass_fields() -> None:
    """A pydantic dataclass renders as an object of its fields."""

    @pydantic_dataclass
    class Point:
        x: int
        y: int = 0

    assert field_schema(Point) == {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer", "default": 0}},
        "required": ["x"],
    }


def test_with_json_schema_overrides_the_type() -> None:
    """pydantic's WithJsonSchema replaces the generated schema verbatim."""
    assert field_schema(Annotated[int, WithJsonSchema({"type": "string", "format": "x"})]) == {
        "type": "string",
        "format": "x",
    }


def test_plain_base_model_fields_use_python_names() -> None:
    """A plain pydantic model (no alias generator) keeps its Python field names."""

    class Plain(BaseModel):
        snake_name: int = 0

    assert list(schema_for(Plain)["properties"]) == ["snake_name"]


def test_nullable_fields_are_never_required() -> None:
    """A required Optional field is not in required: pyctrl omits None values on the wire."""

    class Holder(KubeModel):
        must: int
        maybe: int | None

    assert schema_for(Holder)["required"] == ["must"]


PortNumber = Annotated[int, Field(ge=1, le=65535, description="A port number.")]


def test_outer_annotations_override_a_type_alias() -> None:
    """Constraints and descriptions written on the field override those of a type alias."""
    assert field_schema(PortNumber) == {
        "type": "integer",
        "minimum": 1,
        "maximum": 65535,
        "description": "A port number.",
    }
    assert field_schema(PortNumber | None, None, le=100, description="Admin port.") == {
        "type": "integer",
        "minimum": 1,
        "maximum": 100,
        "description": "Admin port.",
        "nullable": True,
    }
