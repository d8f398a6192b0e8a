"""pyctrl.crd: types with no structural schema raise SchemaError naming class and field."""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Annotated, Any, Literal

import pytest
from pydantic import Field
from pydantic.json_schema import WithJsonSchema

from pyctrl.crd import EmbeddedResource, ListType, MapType, Schemaless, schema_for
from pyctrl.errors import SchemaError
from pyctrl.meta import KubeModel


class Node(KubeModel):
    name: str = ""
    children: list[Node] = Field(default_factory=list)


class Ping(KubeModel):
    pong: Pong | None = None


class Pong(KubeModel):
    ping: Ping | None = None


Node.model_rebuild()
Ping.model_rebuild()


class Tree(KubeModel):
    root: Node = Field(default_factory=Node)


class First(KubeModel):
    a: int = 0


class Second(KubeModel):
    b: int = 0


def holder(annotation: Any, default: Any = ...) -> type[KubeModel]:
    """A model ``Holder`` with one field ``x`` of the given type."""
    namespace: dict[str, Any] = {"__annotations__": {"x": annotation}}
    if default is not ...:
        namespace["x"] = default
    return type("Holder", (KubeModel,), namespace)


def test_self_recursive_model() -> None:
    """A model containing itself is refused: CRD schemas cannot be recursive."""
    with pytest.raises(SchemaError, match=r"Node\.children .*Node is recursive \(Node -> Node\)"):
        schema_for(Tree)


def test_mutually_recursive_models() -> None:
    """A cycle through two models is refused, showing the cycle."""
    with pytest.raises(SchemaError, match=r"Ping is recursive \(Ping -> Pong -> Ping\)"):
        schema_for(Ping)


def test_same_model_twice_is_not_recursion() -> None:
    """Using one model in two sibling fields is fine; only cycles are refused."""

    class Twice(KubeModel):
        left: First = Field(default_factory=First)
        right: First = Field(default_factory=First)

    schema = schema_for(Twice)
    assert schema["properties"]["left"] == schema["properties"]["right"]


def test_union_of_models_names_class_and_field() -> None:
    """A union of two models is refused with the class, field and wire path."""

    class Spec(KubeModel):
        backend: First | Second

    with pytest.raises(
        SchemaError, match=r"^Spec\.backend \(at backend\): the union First \| Second"
    ):
        schema_for(Spec)


def test_plain_int_or_str_needs_int_or_string() -> None:
    """A bare int | str is refused with a pointer to IntOrString."""
    with pytest.raises(SchemaError, match=r"Holder\.x .*annotate it as pyctrl\.crd\.IntOrString"):
        schema_for(holder(int | str))


def test_optional_plain_int_or_str_is_refused() -> None:
    """int | str | None without IntOrString is refused too."""
    with pytest.raises(SchemaError, match="IntOrString"):
        schema_for(holder(int | str | None, None))


def test_other_scalar_unions_are_refused() -> None:
    """int | float is not structural."""
    with pytest.raises(SchemaError, match=r"the union int \| float is not structural"):
        schema_for(holder(int | float))


def test_error_path_of_nested_field() -> None:
    """Errors deep in nested models name the innermost class and the full wire path."""

    class Inner(KubeModel):
        bad_field: int | float = 0

    class Outer(KubeModel):
        items: list[Inner] = Field(default_factory=list)

    with pytest.raises(SchemaError, match=r"^Inner\.bad_field \(at items\[\*\]\.badField\)"):
        schema_for(Outer)


def test_decimal_is_refused() -> None:
    """Decimal has no exact CRD type and says what to use instead."""
    with pytest.raises(SchemaError, match="Decimal has no exact CRD type"):
        schema_for(holder(Decimal))


def test_non_string_dict_keys_are_refused() -> None:
    """dict keys must be strings."""
    with pytest.raises(SchemaError, match="dict keys must be strings"):
        schema_for(holder(dict[int, str]))


def test_mixed_tuple_is_refused() -> None:
    """A tuple of different item types is refused."""
    with pytest.raises(SchemaError, match=r"tuple\[int, str\] mixes item types"):
        schema_for(holder(tuple[int, str]))


def test_mixed_literal_is_refused() -> None:
    """A Literal mixing strings and numbers is refused."""
    with pytest.raises(SchemaError, match="mix types"):
        schema_for(holder(Literal["a", 1]))


def test_stdlib_dataclass_is_refused() -> None:
    """A standard-library dataclass field is refused with a suggestion."""

    @dataclasses.dataclass
    class Point:
        x: int = 0

    with pytest.raises(SchemaError, match="standard-library dataclass; use a KubeModel"):
        schema_for(holder(Point))


def test_unsupported_class_is_refused() -> None:
    """A class with no CRD form is refused by name."""

    class Opaque:
        pass

    model = type(
        "Holder",
        (KubeModel,),
        {"__annotations__": {"x": Opaque}, "model_config": {"arbitrary_types_allowed": True}},
    )
    with pytest.raises(SchemaError, match="Opaque has no CRD schema"):
        schema_for(model)


def test_list_type_on_non_list() -> None:
    """ListType on a string is refused, naming the field."""
    with pytest.raises(
        SchemaError, match=r"Holder\.x .*ListType\('set'\) applies to lists, not string"
    ):
        schema_for(holder(Annotated[str, ListType("set")]))


def test_list_map_key_must_be_a_field() -> None:
    """A list-map key that is not an item field is refused, listing the fields."""
    with pytest.raises(
        SchemaError, match=r"list map key 'id' is not a field of the items \(fields: a\)"
    ):
        schema_for(holder(Annotated[list[First], ListType("map", keys=("id",))]))


def test_list_map_key_must_be_required_or_defaulted() -> None:
    """A list-map key that may be missing (not required, no schema default) is refused."""

    class Item(KubeModel):
        name: str = Field(default_factory=lambda: "generated")

    with pytest.raises(SchemaError, match="must be a required field or have a default"):
        schema_for(holder(Annotated[list[Item], ListType("map", keys=("name",))]))


def test_list_map_key_cannot_be_optional() -> None:
    """A nullable list-map key is refused."""

    class Item(KubeModel):
        name: str | None = None

    with pytest.raises(SchemaError, match="cannot be Optional"):
        schema_for(holder(Annotated[list[Item], ListType("map", keys=("name",))]))


def test_list_set_of_objects_is_refused() -> None:
    """A set-type list of (non-atomic) objects is refused."""
    with pytest.raises(SchemaError, match="list of type set needs scalar items"):
        schema_for(holder(Annotated[list[First], ListType("set")]))


def test_list_set_with_nullable_items_is_refused() -> None:
    """A set-type list of Optional items is refused."""
    with pytest.raises(SchemaError, match="cannot have nullable"):
        schema_for(holder(Annotated[list[str | None], ListType("set")]))


def test_optional_enum_items_are_refused() -> None:
    """Optional enum values in a dict are refused: the API server rejects null for enums."""
    with pytest.raises(SchemaError, match=r"at x\[\*\]\): the API server rejects null for an enum"):
        schema_for(holder(dict[str, Literal["a", "b"] | None]))


def test_map_type_on_list_is_refused() -> None:
    """MapType on a list is refused."""
    with pytest.raises(SchemaError, match="MapType applies to objects and dicts, not array"):
        schema_for(holder(Annotated[list[str], MapType("atomic")]))


def test_incomplete_embedded_resource_default_is_refused() -> None:
    """A static default without apiVersion and kind on an embedded resource is refused."""
    annotation = Annotated[dict[str, Any], EmbeddedResource()]
    with pytest.raises(SchemaError, match="must have apiVersion and kind"):
        schema_for(holder(annotation, {"metadata": {}}))


def test_invalid_default_is_refused() -> None:
    """A default the field's own type rejects is refused, naming the field."""
    with pytest.raises(SchemaError, match=r"Holder\.x .*the default 'c' is not valid"):
        schema_for(holder(Literal["a", "b"], "c"))


def test_schemaless_alone_is_not_structural() -> None:
    """Schemaless without PreserveUnknownFields leaves an untyped node, which is refused."""
    with pytest.raises(SchemaError, match=r"at <root>\.x\): the schema has no type"):
        schema_for(holder(Annotated[dict[str, Any], Schemaless()]))


def test_ref_in_override_is_refused() -> None:
    """A WithJsonSchema override containing $ref is refused."""
    with pytest.raises(SchemaError, match=r"\$ref is not allowed"):
        schema_for(holder(Annotated[int, WithJsonSchema({"$ref": "#/x"})]))


def test_undefined_forward_reference_is_reported() -> None:
    """A model naming a type that does not exist is refused with a hint to rebuild it."""

    class Dangling(KubeModel):
        child: Missing | None = None  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(SchemaError, match=r"Dangling is not fully defined .*model_rebuild\(\)"):
        schema_for(Dangling)


def test_schema_for_needs_a_model() -> None:
    """schema_for refuses anything that is not a pydantic model class."""
    with pytest.raises(SchemaError, match="is not a pydantic model class"):
        schema_for(dict)  # type: ignore[arg-type]
