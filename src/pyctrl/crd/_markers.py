"""Markers: ``typing.Annotated`` metadata that shape a field's CRD schema.

They play the part of controller-gen's ``// +kubebuilder:...`` comments. A marker is an
object with an ``apply(schema)`` method that edits the schema generated for the type it
annotates; the generator calls it after the type, its constraints and its description
have been rendered. Some markers also decorate classes (object-level rules).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, TypeVar

from pydantic import AfterValidator

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "ClassMarker",
    "Default",
    "Description",
    "EmbeddedResource",
    "Format",
    "Int32",
    "Int64",
    "IntOrString",
    "ListType",
    "MapType",
    "Marker",
    "NotNullable",
    "Omittable",
    "PreserveUnknownFields",
    "Quantity",
    "SchemaExtra",
    "Schemaless",
    "XValidation",
    "class_markers",
]

_C = TypeVar("_C", bound=type)

# Holds, on a decorated class, the markers declared on that very class (not its bases).
_CLASS_MARKERS_ATTR: Final = "__pyctrl_crd_markers__"

# Private schema key: the Python name -> wire name map of an object's properties, so
# that list-map keys may be given by either name. Stripped before the schema is returned.
FIELD_NAMES_KEY: Final = "x-pyctrl-field-names"


class Marker:
    """Base of schema markers: metadata that edits the schema of the type it annotates.

    Subclass it to write your own marker; ``apply`` receives the generated schema node
    (a dict, with ``type`` and everything else already filled in) and edits it in place.
    Raise ValueError when the marker does not fit the node: the generator turns it into
    a `pyctrl.errors.SchemaError` naming the class and field.
    """

    def apply(self, schema: dict[str, Any]) -> None:
        """Edit ``schema`` in place.

        Args:
            schema: The schema node of the annotated type.

        Raises:
            ValueError: The marker cannot apply to this node.
        """


class ClassMarker(Marker):
    """A marker that may also decorate a model class, applying to the class's object schema.

    Used as a decorator, the marker is recorded on the class and applied every time the
    class (or a subclass) is rendered::

        @XValidation("self.min <= self.max", message="min must not exceed max")
        class Range(KubeModel):
            min: int
            max: int
    """

    def __call__(self, cls: _C) -> _C:
        """Record this marker on ``cls`` and return ``cls`` unchanged.

        Args:
            cls: A pydantic model class.

        Returns:
            The same class.

        Raises:
            TypeError: ``cls`` is not a class.
        """
        if not isinstance(cls, type):
            raise TypeError(f"{type(self).__name__} decorates classes, not {cls!r}")
        own: tuple[Marker, ...] = cls.__dict__.get(_CLASS_MARKERS_ATTR, ())
        # Decorators run bottom-up; prepend so the markers keep their source order.
        setattr(cls, _CLASS_MARKERS_ATTR, (self, *own))
        return cls


def class_markers(cls: type) -> tuple[Marker, ...]:
    """Return the class markers of ``cls`` and of its bases, base classes first.

    Args:
        cls: A class, decorated or not.

    Returns:
        The markers in the order they apply.
    """
    found: list[Marker] = []
    for klass in reversed(cls.__mro__):
        found.extend(klass.__dict__.get(_CLASS_MARKERS_ATTR, ()))
    return tuple(found)


def _is_nullable(schema: dict[str, Any]) -> bool:
    return schema.get("nullable") is True


@dataclass(frozen=True, slots=True)
class ListType(Marker):
    """``x-kubernetes-list-type``: how a list merges (server-side apply) and what it allows.

    ``atomic`` (the default of every list) replaces the list as a whole; ``set`` makes its
    scalar items unique; ``map`` makes the items objects identified by ``keys`` (Python
    or wire names of the item fields), like ``+listType=map`` with ``+listMapKey``::

        ports: Annotated[list[Port], ListType("map", keys=("name",))] = Field(default_factory=list)

    Attributes:
        type: ``atomic``, ``set`` or ``map``.
        keys: The item fields that identify an item; required with ``map``, else empty.
    """

    type: Literal["atomic", "set", "map"]
    keys: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.type not in ("atomic", "set", "map"):
            raise ValueError(f"ListType: type must be atomic, set or map, not {self.type!r}")
        keys: Any = self.keys
        if isinstance(keys, str):
            raise ValueError(f"ListType: keys must be a tuple of names, e.g. ({self.keys!r},)")
        object.__setattr__(self, "keys", tuple(self.keys))
        if self.type == "map" and not self.keys:
            raise ValueError("ListType('map') needs keys=(...) naming the item fields")
        if self.type != "map" and self.keys:
            raise ValueError(f"ListType({self.type!r}) takes no keys; only 'map' lists have keys")
        if len(set(self.keys)) != len(self.keys):
            raise ValueError(f"ListType: keys {self.keys} repeat a name")

    def apply(self, schema: dict[str, Any]) -> None:
        """Set the list type (and map keys), checking the items fit it."""
        if schema.get("type") != "array":
            raise ValueError(f"ListType({self.type!r}) applies to lists, not {_kind(schema)}")
        items = schema.get("items", {})
        if self.type in ("set", "map") and _is_nullable(items):
            raise ValueError(f"a list of type {self.type} cannot have nullable (Optional) items")
        if self.type == "set" and items.get("type") in ("object", "array"):
            atomic = items.get("x-kubernetes-map-type") == "atomic" or (
                items.get("type") == "array"
                and items.get("x-kubernetes-list-type", "atomic") == "atomic"
            )
            if not atomic:
                raise ValueError(
                    "a list of type set needs scalar items (or items marked MapType('atomic'))"
                )
        schema["x-kubernetes-list-type"] = self.type
        schema.pop("x-kubernetes-list-map-keys", None)
        if self.type == "map":
            schema["x-kubernetes-list-map-keys"] = list(self._wire_keys(items))

    def _wire_keys(self, items: dict[str, Any]) -> list[str]:
        if items.get("type") != "object" or "properties" not in items:
            raise ValueError("a list of type map needs object items with fields")
        props: dict[str, Any] = items["properties"]
        names: dict[str, str] = items.get(FIELD_NAMES_KEY, {})
        required = set(items.get("required", ()))
        wire: list[str] = []
        for key in self.keys:
            name = key if key in props else names.get(key, key)
            if name not in props:
                raise ValueError(
                    f"list map key {key!r} is not a field of the items "
                    f"(fields: {', '.join(sorted(props))})"
                )
            prop = props[name]
            if prop.get("type") in ("object", "array") or "type" not in prop:
                raise ValueError(f"list map key {key!r} must be a scalar field (string, number...)")
            if _is_nullable(prop):
                raise ValueError(f"list map key {key!r} cannot be Optional")
            if name not in required and prop.get("default") is None:
                raise ValueError(f"list map key {key!r} must be a required field or have a default")
            wire.append(name)
        return wire


@dataclass(frozen=True, slots=True)
class MapType(ClassMarker):
    """``x-kubernetes-map-type``: whether an object merges field by field or as a whole.

    ``granular`` (the default) merges per key; ``atomic`` replaces the whole object, like
    ``+mapType=atomic`` (or ``+structType=atomic`` on a class, when used as a decorator).

    Attributes:
        type: ``atomic`` or ``granular``.
    """

    type: Literal["atomic", "granular"]

    def __post_init__(self) -> None:
        if self.type not in ("atomic", "granular"):
            raise ValueError(f"MapType: type must be atomic or granular, not {self.type!r}")

    def apply(self, schema: dict[str, Any]) -> None:
        """Set the map type; objects only."""
        if schema.get("type") != "object":
            raise ValueError(f"MapType applies to objects and dicts, not {_kind(schema)}")
        schema["x-kubernetes-map-type"] = self.type


@dataclass(frozen=True, slots=True)
class PreserveUnknownFields(ClassMarker):
    """``x-kubernetes-preserve-unknown-fields``: the API server keeps fields the schema lacks.

    Like ``+kubebuilder:pruning:PreserveUnknownFields``. On a field of a model type the
    declared fields are still validated; unknown ones are kept instead of pruned.
    """

    def apply(self, schema: dict[str, Any]) -> None:
        """Mark the node as preserving unknown fields."""
        schema["x-kubernetes-preserve-unknown-fields"] = True


@dataclass(frozen=True, slots=True)
class EmbeddedResource(Marker):
    """``x-kubernetes-embedded-resource``: the value is a whole Kubernetes object.

    Like ``+kubebuilder:validation:EmbeddedResource``: the API server checks its
    ``apiVersion``, ``kind`` and ``metadata`` and keeps them through pruning. Use it on
    a model with those fields, or on ``dict[str, Any]`` for any object.
    """

    def apply(self, schema: dict[str, Any]) -> None:
        """Mark the node as an embedded resource (an object)."""
        if schema.get("type", "object") != "object":
            raise ValueError(f"EmbeddedResource applies to objects, not {_kind(schema)}")
        schema["type"] = "object"
        schema["x-kubernetes-embedded-resource"] = True


_RULE_REASONS: Final = frozenset(
    {"FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate"}
)


@dataclass(frozen=True, slots=True)
class XValidation(ClassMarker):
    """A CEL validation rule (``x-kubernetes-validations``), like controller-gen's XValidation.

    On a field it constrains that field's value; as a class decorator it constrains the
    whole object, so rules may relate fields (``self`` is the object, ``oldSelf`` its
    previous value on update)::

        @XValidation("self.minReplicas <= self.maxReplicas", message="min exceeds max")
        class Scaling(KubeModel):
            min_replicas: int
            max_replicas: int

        name: Annotated[str, XValidation("self == oldSelf", message="name is immutable")]

    Rules see wire (camelCase) field names. Several rules may be stacked.

    Attributes:
        rule: The CEL expression; true means valid.
        message: Message returned when the rule fails.
        message_expression: CEL expression producing the message instead.
        reason: ``FieldValueInvalid`` (the default), ``FieldValueForbidden``,
            ``FieldValueRequired`` or ``FieldValueDuplicate``.
        field_path: JSON path (``.spec.x``) of the field the failure is reported on,
            relative to the node the rule sits on.
        optional_old_self: Run the transition rule also on create, with ``oldSelf`` unset.
    """

    rule: str
    message: str | None = None
    message_expression: str | None = None
    reason: (
        Literal[
            "FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate"
        ]
        | None
    ) = None
    field_path: str | None = None
    optional_old_self: bool | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.rule, str) or not self.rule.strip():
            raise ValueError("XValidation: rule must be a non-empty CEL expression")
        if self.reason is not None and self.reason not in _RULE_REASONS:
            raise ValueError(
                f"XValidation: reason {self.reason!r} is not one of "
                f"{', '.join(sorted(_RULE_REASONS))}"
            )
        if self.message is not None and ("\n" in self.message or "\r" in self.message):
            raise ValueError("XValidation: message must not contain line breaks")

    def to_dict(self) -> dict[str, Any]:
        """The rule's wire form, an item of ``x-kubernetes-validations``."""
        out: dict[str, Any] = {"rule": self.rule}
        if self.message is not None:
            out["message"] = self.message
        if self.message_expression is not None:
            out["messageExpression"] = self.message_expression
        if self.reason is not None:
            out["reason"] = self.reason
        if self.field_path is not None:
            out["fieldPath"] = self.field_path
        if self.optional_old_self is not None:
            out["optionalOldSelf"] = self.optional_old_self
        return out

    def apply(self, schema: dict[str, Any]) -> None:
        """Append the rule to the node's ``x-kubernetes-validations``."""
        rules: list[dict[str, Any]] = schema.setdefault("x-kubernetes-validations", [])
        rules.append(self.to_dict())


@dataclass(frozen=True, slots=True)
class Format(Marker):
    """An OpenAPI ``format``, e.g. ``Format("int32")`` or ``Format("hostname")``.

    The API server checks string formats it knows (``date-time``, ``uuid``, ``ipv4``,
    ``hostname``...); integer formats are documentation.

    Attributes:
        format: The format name.
    """

    format: str

    def apply(self, schema: dict[str, Any]) -> None:
        """Set ``format``."""
        schema["format"] = self.format


@dataclass(frozen=True, slots=True)
class Description(Marker):
    """Overrides the description of a field.

    Without it the description comes from ``Field(description=...)``, else the class
    docstring's ``Attributes:`` section, else the docstring of the field's type.

    Attributes:
        text: The description.
    """

    text: str

    def apply(self, schema: dict[str, Any]) -> None:
        """Set ``description`` (an empty text removes it)."""
        if self.text:
            schema["description"] = self.text
        else:
            schema.pop("description", None)


@dataclass(frozen=True, slots=True, eq=False)  # the value may be a list: hash by identity
class Default(Marker):
    """A default the API server fills in, like controller-gen's ``+default`` marker.

    Unlike a Python default, the value lives only in the schema: the model leaves the
    field unset (usually ``Omittable``) and the API server writes the default when it
    stores the object. Generated models of CRDs you did not write use it, so that an
    object read and written back is unchanged.

    Attributes:
        value: The default in wire (JSON) form.
    """

    value: Any

    def apply(self, schema: dict[str, Any]) -> None:
        """Set ``default``."""
        schema["default"] = copy.deepcopy(self.value)


@dataclass(frozen=True, slots=True)
class NotNullable(Marker):
    """On ``X | None``: None means absent, so the schema is ``X`` without ``nullable``.

    pyctrl leaves None fields out of what it sends, so an optional field need not
    accept ``null`` on the wire; `Omittable` is the usual spelling.
    """


@dataclass(frozen=True, slots=True, eq=False)  # the value may be a list: hash by identity
class SchemaExtra(Marker):
    """Schema keywords with no Python form, merged into the node as given.

    For what CRDs say that pydantic cannot: ``uniqueItems``, value validations in
    ``anyOf``/``oneOf``/``allOf``/``not``, a ``pattern`` on an int-or-string. The
    result must still be structural (see `structural_errors`).

    Attributes:
        values: The keywords and their values.
    """

    values: Mapping[str, Any]

    def apply(self, schema: dict[str, Any]) -> None:
        """Merge the keywords into ``schema``."""
        schema.update(copy.deepcopy(dict(self.values)))


@dataclass(frozen=True, slots=True)
class Schemaless(Marker):
    """Emit no schema for the type, like ``+kubebuilder:validation:Schemaless``.

    Only the description and the other markers remain, so combine it with
    `PreserveUnknownFields` (and usually `EmbeddedResource`), or the schema is not
    structural.
    """


@dataclass(frozen=True, slots=True)
class IntOrStringMarker(Marker):
    """Marks ``int | str`` as Kubernetes' IntOrString."""


@dataclass(frozen=True, slots=True)
class _Pattern(Marker):
    """A string pattern for types pydantic cannot carry one on (int-or-string)."""

    pattern: str

    def apply(self, schema: dict[str, Any]) -> None:
        schema["pattern"] = self.pattern


_INT32: Final = (-(2**31), 2**31 - 1)
_INT64: Final = (-(2**63), 2**63 - 1)


def _range_check(bits: int, bounds: tuple[int, int]) -> Any:
    def check(value: int) -> int:
        if not bounds[0] <= value <= bounds[1]:
            raise ValueError(f"{value} does not fit in {bits} bits")
        return value

    return check


# The API server's resource.Quantity syntax (k8s.io/apimachinery/pkg/api/resource).
QUANTITY_PATTERN: Final = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]"
    r"|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_QUANTITY_RE: Final = re.compile(QUANTITY_PATTERN)


def _check_quantity(value: int | str) -> int | str:
    if isinstance(value, str) and not _QUANTITY_RE.match(value):
        raise ValueError(f"{value!r} is not a quantity (e.g. 100m, 1.5, 2Gi)")
    return value


IntOrString = Annotated[int | str, IntOrStringMarker()]
"""``intstr.IntOrString``: an integer or a string (``8080`` or ``"http"``, ``3`` or ``"25%"``)."""

Quantity = Annotated[
    int | str, IntOrStringMarker(), _Pattern(QUANTITY_PATTERN), AfterValidator(_check_quantity)
]
"""``resource.Quantity``: ``2``, ``"500m"``, ``"1.5Gi"``; an int-or-string with its pattern."""

Int32 = Annotated[int, Format("int32"), AfterValidator(_range_check(32, _INT32))]
"""A Go ``int32``: ``format: int32`` in the schema, range-checked in Python."""

Int64 = Annotated[int, Format("int64"), AfterValidator(_range_check(64, _INT64))]
"""A Go ``int64``: ``format: int64`` in the schema, range-checked in Python."""

_T = TypeVar("_T")
Omittable = Annotated[_T | None, NotNullable()]
"""``Omittable[X]``: an optional field that is absent rather than ``null`` on the wire.

In Python it is ``X | None`` (None when unset); in the schema it is ``X``, not
nullable and not required, as a Go ``omitempty`` field.
"""


def _kind(schema: dict[str, Any]) -> str:
    if schema.get("x-kubernetes-int-or-string"):
        return "int-or-string"
    return str(schema.get("type", "an untyped value"))
