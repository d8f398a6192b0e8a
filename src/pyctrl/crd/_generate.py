"""The structural OpenAPI v3 schema of a pydantic model, as controller-gen renders Go types.

The generator walks the model's fields and their type annotations itself (rather than
post-processing pydantic's JSON Schema) so that every rule of a structural schema holds
by construction: each node has a ``type`` (or is int-or-string, or preserves unknown
fields), models are inlined (no ``$ref``), ``Optional[X]`` is ``X`` with
``nullable: true``, and the only ``anyOf`` is the int-or-string one. Anything that cannot
be said that way raises `SchemaError` naming the class and field.
"""

from __future__ import annotations

import collections
import collections.abc
import copy
import dataclasses
import datetime
import enum
import ipaddress
import pathlib
import re
import types
import typing
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Annotated, Any, Final, Literal, Union, get_args, get_origin

import annotated_types
import typing_extensions
from pydantic import AnyUrl, BaseModel, SecretStr, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo
from pydantic.json_schema import SkipJsonSchema, WithJsonSchema
from pydantic_core import PydanticUndefined

from pyctrl.crd._builtin import builtin_schema, is_builtin_model
from pyctrl.crd._docs import class_docs
from pyctrl.crd._markers import (
    FIELD_NAMES_KEY,
    Description,
    IntOrStringMarker,
    Marker,
    NotNullable,
    Schemaless,
    class_markers,
)
from pyctrl.errors import SchemaError
from pyctrl.meta import Condition, ObjectMeta
from pyctrl.resource import CustomResource

__all__ = ["schema_for"]

_API_VERSION_DOC: Final = (
    "APIVersion defines the versioned schema of this representation of an object.\n"
    "Servers should convert recognized schemas to the latest internal value, and\n"
    "may reject unrecognized values.\n"
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#resources"
)
_KIND_DOC: Final = (
    "Kind is a string value representing the REST resource this object represents.\n"
    "Servers may infer this from the endpoint the client submits requests to.\n"
    "Cannot be updated.\n"
    "In CamelCase.\n"
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#types-kinds"
)


def _condition_schema() -> dict[str, Any]:
    # metav1.Condition exactly as controller-gen renders it from apimachinery's comments
    # and markers, so that pyctrl CRDs match those of Go operators.
    return {
        "description": (
            "Condition contains details for one aspect of the current state of this API Resource."
        ),
        "properties": {
            "lastTransitionTime": {
                "description": (
                    "lastTransitionTime is the last time the condition transitioned from one "
                    "status to another.\nThis should be when the underlying condition changed.  "
                    "If that is not known, then using the time when the API field changed is "
                    "acceptable."
                ),
                "format": "date-time",
                "type": "string",
            },
            "message": {
                "description": (
                    "message is a human readable message indicating details about the "
                    "transition.\nThis may be an empty string."
                ),
                "maxLength": 32768,
                "type": "string",
            },
            "observedGeneration": {
                "description": (
                    "observedGeneration represents the .metadata.generation that the condition "
                    "was set based upon.\nFor instance, if .metadata.generation is currently 12, "
                    "but the .status.conditions[x].observedGeneration is 9, the condition is out "
                    "of date\nwith respect to the current state of the instance."
                ),
                "format": "int64",
                "minimum": 0,
                "type": "integer",
            },
            "reason": {
                "description": (
                    "reason contains a programmatic identifier indicating the reason for the "
                    "condition's last transition.\nProducers of specific condition types may "
                    "define expected values and meanings for this field,\nand whether the values "
                    "are considered a guaranteed API.\nThe value should be a CamelCase string.\n"
                    "This field may not be empty."
                ),
                "maxLength": 1024,
                "minLength": 1,
                "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
                "type": "string",
            },
            "status": {
                "description": "status of the condition, one of True, False, Unknown.",
                "enum": ["True", "False", "Unknown"],
                "type": "string",
            },
            "type": {
                "description": "type of condition in CamelCase or in foo.example.com/CamelCase.",
                "maxLength": 316,
                "pattern": (
                    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
                ),
                "type": "string",
            },
        },
        "required": ["lastTransitionTime", "message", "reason", "status", "type"],
        "type": "object",
        FIELD_NAMES_KEY: {
            "last_transition_time": "lastTransitionTime",
            "observed_generation": "observedGeneration",
        },
    }


def _embedded_object_meta_schema() -> dict[str, Any]:
    # What controller-gen emits for a nested ObjectMeta with generateEmbeddedObjectMeta=true:
    # without these properties the API server would prune labels and annotations of
    # templates silently.
    return {
        "properties": {
            "annotations": {"additionalProperties": {"type": "string"}, "type": "object"},
            "finalizers": {"items": {"type": "string"}, "type": "array"},
            "labels": {"additionalProperties": {"type": "string"}, "type": "object"},
            "name": {"type": "string"},
            "namespace": {"type": "string"},
        },
        "type": "object",
    }


# Plain classes with a fixed schema, checked in order with issubclass.
_SCALARS: Final[tuple[tuple[type, dict[str, Any]], ...]] = (
    (bool, {"type": "boolean"}),
    (int, {"type": "integer"}),
    (float, {"type": "number"}),
    (str, {"type": "string"}),
    # pydantic writes bytes as UTF-8 text by default, so no base64 "byte" format.
    (bytes, {"type": "string"}),
    (datetime.datetime, {"type": "string", "format": "date-time"}),
    (datetime.date, {"type": "string", "format": "date"}),
    (datetime.time, {"type": "string"}),
    # pydantic writes ISO 8601 durations (P1DT2H), not Go's "duration" format (1h30m).
    (datetime.timedelta, {"type": "string"}),
    (uuid.UUID, {"type": "string", "format": "uuid"}),
    (ipaddress.IPv4Address, {"type": "string", "format": "ipv4"}),
    (ipaddress.IPv6Address, {"type": "string", "format": "ipv6"}),
    (ipaddress.IPv4Network, {"type": "string", "format": "cidr"}),
    (ipaddress.IPv6Network, {"type": "string", "format": "cidr"}),
    (ipaddress.IPv4Interface, {"type": "string"}),
    (ipaddress.IPv6Interface, {"type": "string"}),
    (pathlib.PurePath, {"type": "string"}),
    (AnyUrl, {"type": "string", "format": "uri"}),
    (SecretStr, {"type": "string"}),
    (re.Pattern, {"type": "string"}),
)

_LIST_ORIGINS: Final = frozenset(
    {
        list,
        collections.abc.Sequence,
        collections.abc.MutableSequence,
        collections.abc.Iterable,
        collections.abc.Collection,
        collections.deque,
    }
)
_SET_ORIGINS: Final = frozenset({set, frozenset, collections.abc.Set, collections.abc.MutableSet})
_DICT_ORIGINS: Final = frozenset(
    {
        dict,
        collections.abc.Mapping,
        collections.abc.MutableMapping,
        collections.OrderedDict,
        collections.defaultdict,
    }
)
_REQUIRED_WRAPPERS: Final = frozenset(
    {
        typing.Required,
        typing.NotRequired,
        typing_extensions.Required,
        typing_extensions.NotRequired,
        typing_extensions.ReadOnly,
    }
)
_REQUIRED: Final = frozenset({typing.Required, typing_extensions.Required})
_NOT_REQUIRED: Final = frozenset({typing.NotRequired, typing_extensions.NotRequired})
_UNION_ORIGINS: Final = frozenset({Union, types.UnionType})
_NONE_TYPES: Final = (type(None), None)
# SkipJsonSchema is generic for type checkers but a plain class at runtime.
_SKIP_JSON_SCHEMA: Final[type] = SkipJsonSchema


def _is_type_alias(tp: Any) -> bool:
    alias_types: tuple[type, ...] = (typing_extensions.TypeAliasType,)
    native = getattr(typing, "TypeAliasType", None)
    if isinstance(native, type):
        alias_types += (native,)
    return isinstance(tp, alias_types)


def _type_name(tp: Any) -> str:
    if isinstance(tp, type) and get_origin(tp) is None:
        return tp.__name__
    return repr(tp).replace("typing.", "")


@dataclass(slots=True)
class _Context:
    """Where the walk is: for error messages and to detect recursion."""

    models: list[type] = field(default_factory=list)
    where: str = ""
    path: str = ""

    def at(self, where: str | None = None, path: str | None = None) -> _Context:
        return _Context(
            models=self.models,
            where=self.where if where is None else where,
            path=self.path if path is None else path,
        )

    def location(self) -> str:
        location = self.where or "the type"
        if self.path:
            location += f" (at {self.path})"
        return location

    def error(self, message: str) -> SchemaError:
        return SchemaError(f"{self.location()}: {message}")


@dataclass(slots=True)
class _Meta:
    """The Annotated metadata that applies to one type, sorted by what it does."""

    constraints: list[Any] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    description: str | None = None
    override: dict[str, Any] | None = None
    schemaless: bool = False
    int_or_string: bool = False
    skip: bool = False

    @classmethod
    def of(cls, items: list[Any]) -> _Meta:
        """Sort ``items``; later items (outer annotations) override earlier ones."""
        meta = cls()
        for item in items:
            meta._add(item)
        return meta

    def _add(self, item: Any) -> None:  # noqa: PLR0912 - dispatch on the constraint's kind
        if item is None:
            return
        if isinstance(item, FieldInfo):
            if item.description:
                self.description = item.description
            for sub in item.metadata:
                self._add(sub)
        elif isinstance(item, IntOrStringMarker):
            self.int_or_string = True
            self.markers.append(item)
        elif isinstance(item, Schemaless):
            self.schemaless = True
        elif isinstance(item, Marker):
            self.markers.append(item)
        elif isinstance(item, WithJsonSchema):
            if item.mode in (None, "validation") and item.json_schema is not None:
                self.override = dict(item.json_schema)
        elif isinstance(item, _SKIP_JSON_SCHEMA):
            self.skip = True
        elif isinstance(item, annotated_types.GroupedMetadata):
            for sub in item:
                self._add(sub)
        elif isinstance(item, annotated_types.DocInfo):
            self.description = item.documentation
        else:
            # Constraints are sorted out once the type of the node is known; anything
            # else (validators, serializers, Strict...) has no schema form and is ignored.
            self.constraints.append(item)


def _unwrap(tp: Any, items: list[Any] | None = None) -> tuple[Any, list[Any]]:
    """Peel Annotated, NewType and type aliases off ``tp``.

    Returns the bare type and its metadata, the innermost first so that what is written
    closer to the field (outer) applies last and wins.
    """
    items = list(items or ())
    while True:
        if get_origin(tp) is Annotated:
            base, *extra = get_args(tp)
            items = [*extra, *items]
            tp = base
        elif _is_type_alias(tp):
            tp = tp.__value__
        elif isinstance(tp, typing.NewType):
            tp = tp.__supertype__
        else:
            return tp, items


def _apply_constraints(schema: dict[str, Any], constraints: list[Any], ctx: _Context) -> None:  # noqa: PLR0912 - dispatch on the constraint's kind
    kind = schema.get("type")
    int_or_string = bool(schema.get("x-kubernetes-int-or-string"))
    numeric = kind in ("integer", "number") or int_or_string
    for item in constraints:
        if isinstance(item, annotated_types.Gt | annotated_types.Ge):
            if not numeric:
                raise ctx.error(f"{item!r} applies to numbers, not {kind or 'this type'}")
            if isinstance(item, annotated_types.Gt):
                schema["minimum"] = item.gt
                schema["exclusiveMinimum"] = True
            else:
                schema["minimum"] = item.ge
                schema.pop("exclusiveMinimum", None)
        elif isinstance(item, annotated_types.Lt | annotated_types.Le):
            if not numeric:
                raise ctx.error(f"{item!r} applies to numbers, not {kind or 'this type'}")
            if isinstance(item, annotated_types.Lt):
                schema["maximum"] = item.lt
                schema["exclusiveMaximum"] = True
            else:
                schema["maximum"] = item.le
                schema.pop("exclusiveMaximum", None)
        elif isinstance(item, annotated_types.MultipleOf):
            if not numeric:
                raise ctx.error(f"{item!r} applies to numbers, not {kind or 'this type'}")
            schema["multipleOf"] = item.multiple_of
        elif isinstance(item, annotated_types.MinLen | annotated_types.MaxLen):
            suffix = {"string": "Length", "array": "Items", "object": "Properties"}.get(
                str(kind), "Length" if int_or_string else ""
            )
            if not suffix:
                raise ctx.error(f"{item!r} applies to strings, lists and dicts, not {kind}")
            if isinstance(item, annotated_types.MinLen):
                schema[f"min{suffix}"] = item.min_length
            else:
                schema[f"max{suffix}"] = item.max_length
        else:
            pattern = getattr(item, "pattern", None) if _is_general_metadata(item) else None
            if pattern is not None:
                if kind != "string" and not int_or_string:
                    raise ctx.error(f"pattern applies to strings, not {kind}")
                schema["pattern"] = pattern if isinstance(pattern, str) else pattern.pattern


def _is_general_metadata(item: Any) -> bool:
    # pydantic keeps Field(pattern=...) in a private metadata class; match it by name
    # rather than import a private module.
    return type(item).__name__ == "_PydanticGeneralMetadata"


class _Generator:
    """Turns Python types into schema nodes."""

    def type_schema(
        self, tp: Any, items: list[Any], ctx: _Context, description: str | None = None
    ) -> dict[str, Any]:
        """The schema of ``tp`` with its metadata ``items``.

        ``description`` (from the field) wins over descriptions in the type's metadata
        and over its class docstring; a `Description` marker wins over everything.
        """
        tp, items = _unwrap(tp, items)
        origin = get_origin(tp)
        if origin in _UNION_ORIGINS or origin is Literal:
            members = get_args(tp)
            present = [m for m in members if m not in _NONE_TYPES]
            if len(present) < len(members):
                return self._nullable(present, origin, items, ctx, description)
        meta = _Meta.of(items)
        if meta.override is not None:
            schema = copy.deepcopy(meta.override)
        elif meta.schemaless:
            schema = {}
        else:
            schema = self._base_schema(tp, meta, ctx)
        _apply_constraints(schema, meta.constraints, ctx)
        if description or meta.description:
            schema["description"] = description or meta.description
        self.apply_markers(schema, meta.markers, ctx)
        return schema

    def apply_markers(self, schema: dict[str, Any], markers: list[Marker], ctx: _Context) -> None:
        # Description markers override whatever description the type or field gave.
        ordered = [m for m in markers if not isinstance(m, Description)] + [
            m for m in markers if isinstance(m, Description)
        ]
        for marker in ordered:
            try:
                marker.apply(schema)
            except ValueError as exc:
                raise ctx.error(str(exc)) from None

    def _nullable(
        self,
        present: list[Any],
        origin: Any,
        items: list[Any],
        ctx: _Context,
        description: str | None,
    ) -> dict[str, Any]:
        if not present:
            raise ctx.error("a field cannot be only None")
        if origin is Literal:
            inner: Any = Literal[tuple(present)]
        elif len(present) == 1:
            inner = present[0]
        else:
            inner = Union[tuple(present)]  # noqa: UP007 - built from a runtime tuple
        schema = self.type_schema(inner, items, ctx, description)
        if not any(isinstance(m, NotNullable) for m in _Meta.of(items).markers):
            schema["nullable"] = True
        return schema

    def _base_schema(self, tp: Any, meta: _Meta, ctx: _Context) -> dict[str, Any]:  # noqa: PLR0911, PLR0912 - dispatch on the annotation
        origin = get_origin(tp)
        args = get_args(tp)
        if tp is Any or tp is object:
            return {"x-kubernetes-preserve-unknown-fields": True}
        if origin is Literal:
            return _enum_schema(list(args), ctx)
        if origin in _UNION_ORIGINS:
            return self._union_schema(list(args), meta, ctx)
        if origin is tuple or tp is tuple:
            return self._tuple_schema(args, ctx)
        if origin in _LIST_ORIGINS or tp in (list, collections.deque):
            item = args[0] if args else Any
            schema = {"type": "array", "items": self._item_schema(item, ctx)}
            if _unwrap(item)[0] is Condition:
                # As Go operators declare metav1.Condition lists (+listType=map,
                # +listMapKey=type); a ListType marker on the field still overrides it.
                schema["x-kubernetes-list-type"] = "map"
                schema["x-kubernetes-list-map-keys"] = ["type"]
            return schema
        if origin in _SET_ORIGINS or tp in (set, frozenset):
            item = args[0] if args else Any
            return {
                "type": "array",
                "items": self._item_schema(item, ctx),
                "x-kubernetes-list-type": "set",
            }
        if origin in _DICT_ORIGINS or tp is dict:
            return self._dict_schema(args, ctx)
        if origin is not None:
            raise ctx.error(f"{_type_name(tp)} has no CRD schema")
        if isinstance(tp, str | typing.ForwardRef):
            raise ctx.error(f"the forward reference {tp!r} is not resolved")
        if not isinstance(tp, type):
            raise ctx.error(f"{tp!r} is not a type")
        if issubclass(tp, enum.Enum):
            return _enum_schema([member.value for member in tp], ctx)
        if is_builtin_model(tp):
            return builtin_schema(tp, _embedded_object_meta_schema, ctx.location())
        if issubclass(tp, BaseModel):
            return self.model_schema(tp, ctx)
        if typing_extensions.is_typeddict(tp):
            return self._typed_dict_schema(tp, ctx)
        if dataclasses.is_dataclass(tp):
            if hasattr(tp, "__pydantic_fields__"):
                return self._object_schema(tp, tp.__pydantic_fields__, ctx)
            raise ctx.error(
                f"{tp.__name__} is a standard-library dataclass; use a KubeModel "
                "(or a pydantic dataclass) so its fields can be read"
            )
        if issubclass(tp, Decimal):
            raise ctx.error(
                "Decimal has no exact CRD type; use float, int, str or pyctrl.crd.Quantity"
            )
        for klass, schema in _SCALARS:
            if issubclass(tp, klass):
                return dict(schema)
        raise ctx.error(f"{tp.__name__} has no CRD schema")

    def _item_schema(self, item: Any, ctx: _Context) -> dict[str, Any]:
        """The schema of list items or dict values: values pyctrl sends even when None."""
        item_ctx = ctx.at(path=f"{ctx.path}[*]")
        schema = self.type_schema(item, [], item_ctx)
        if schema.get("nullable") and "enum" in schema:
            # kube-openapi checks enums before nullable, so null never passes an enum;
            # None fields are left out of the wire form, but None items are sent.
            raise item_ctx.error(
                "the API server rejects null for an enum, so enum items of a list or dict "
                "cannot be Optional"
            )
        return schema

    def _tuple_schema(self, args: tuple[Any, ...], ctx: _Context) -> dict[str, Any]:
        if not args or (len(args) == 2 and args[1] is Ellipsis):
            item = args[0] if args else Any
            return {"type": "array", "items": self._item_schema(item, ctx)}
        schemas = [self._item_schema(a, ctx) for a in args]
        if any(s != schemas[0] for s in schemas[1:]):
            raise ctx.error(
                f"tuple[{', '.join(_type_name(a) for a in args)}] mixes item types; "
                "a CRD list has one item schema"
            )
        return {"type": "array", "items": schemas[0], "minItems": len(args), "maxItems": len(args)}

    def _dict_schema(self, args: tuple[Any, ...], ctx: _Context) -> dict[str, Any]:
        key, value = args if args else (str, Any)
        self._check_key(key, ctx)
        value_type, value_items = _unwrap(value)
        if (value_type is Any or value_type is object) and not _Meta.of(value_items).markers:
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        return {
            "type": "object",
            "additionalProperties": self._item_schema(value, ctx),
        }

    def _check_key(self, key: Any, ctx: _Context) -> None:
        key, _ = _unwrap(key)
        if key is str or (isinstance(key, type) and issubclass(key, str)):
            return
        if get_origin(key) is Literal and all(isinstance(a, str) for a in get_args(key)):
            return
        raise ctx.error(f"dict keys must be strings in JSON, not {_type_name(key)}")

    def _union_schema(self, members: list[Any], meta: _Meta, ctx: _Context) -> dict[str, Any]:
        bases = {_unwrap(m)[0] for m in members}
        if bases == {int, str}:
            if meta.int_or_string:
                return {
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                    "x-kubernetes-int-or-string": True,
                }
            raise ctx.error(
                "int | str is Kubernetes' IntOrString: annotate it as pyctrl.crd.IntOrString"
            )
        names = " | ".join(_type_name(m) for m in members)
        raise ctx.error(
            f"the union {names} is not structural: a CRD field has exactly one type "
            "(only Optional[X] and IntOrString are allowed); use one model with optional "
            "fields instead"
        )

    def model_schema(self, cls: type[BaseModel], ctx: _Context) -> dict[str, Any]:
        if cls is Condition:
            return _condition_schema()
        if issubclass(cls, ObjectMeta):
            return _embedded_object_meta_schema()
        _ensure_complete(cls, ctx)
        return self._object_schema(cls, cls.__pydantic_fields__, ctx)

    def _object_schema(
        self, cls: type, fields: dict[str, FieldInfo], ctx: _Context
    ) -> dict[str, Any]:
        if cls in ctx.models:
            chain = " -> ".join(c.__name__ for c in [*ctx.models[ctx.models.index(cls) :], cls])
            raise ctx.error(
                f"{cls.__name__} is recursive ({chain}); CRD schemas cannot be recursive: "
                "cut the cycle with dict[str, Any] and PreserveUnknownFields()"
            )
        ctx.models.append(cls)
        try:
            description, attribute_docs = class_docs(cls)
            properties: dict[str, Any] = {}
            names: dict[str, str] = {}
            required: list[str] = []
            for name, info in fields.items():
                if info.exclude is True:
                    continue
                wire = _wire_name(name, info)
                if wire in properties:
                    raise ctx.at(where=f"{cls.__name__}.{name}").error(
                        f"two fields are named {wire!r} on the wire"
                    )
                field_ctx = ctx.at(
                    where=f"{cls.__name__}.{name}",
                    path=f"{ctx.path}.{wire}" if ctx.path else wire,
                )
                prop = self.field_schema(info, attribute_docs.get(name), field_ctx)
                if prop is None:
                    continue
                properties[wire] = prop
                names[name] = wire
                # pyctrl leaves None out of the wire form (KubeModel.to_dict), so a
                # nullable field may be absent on the wire even when Python requires it.
                if info.is_required() and not prop.get("nullable"):
                    required.append(wire)
            schema: dict[str, Any] = {"type": "object"}
            if description:
                schema["description"] = description
            if properties:
                schema["properties"] = properties
                schema[FIELD_NAMES_KEY] = names
            if required:
                schema["required"] = sorted(required)
            self.apply_markers(schema, list(class_markers(cls)), ctx.at(where=cls.__name__))
            return schema
        finally:
            ctx.models.pop()

    def _typed_dict_schema(self, cls: type, ctx: _Context) -> dict[str, Any]:
        hints = typing.get_type_hints(cls, include_extras=True)
        fields: dict[str, FieldInfo] = {}
        for name, declared in hints.items():
            hint = declared
            # Read Required/NotRequired from the hints: __required_keys__ cannot see them
            # when annotations are strings (from __future__ import annotations).
            required = bool(getattr(cls, "__total__", True))
            while get_origin(hint) in _REQUIRED_WRAPPERS:
                if get_origin(hint) in _NOT_REQUIRED:
                    required = False
                elif get_origin(hint) in _REQUIRED:
                    required = True
                hint = get_args(hint)[0]
            info = FieldInfo.from_annotation(hint)
            if not required:
                info.default = None
            fields[name] = info
        return self._object_schema(cls, fields, ctx)

    def field_schema(
        self, info: FieldInfo, doc: str | None, ctx: _Context
    ) -> dict[str, Any] | None:
        items = list(info.metadata)
        if _Meta.of(_unwrap(info.annotation, items)[1]).skip:
            return None
        # Field descriptions win over the type's (its class docstring), as in Go.
        schema = self.type_schema(info.annotation, items, ctx, info.description or doc)
        default = _wire_default(info, ctx)
        if default is not None and schema.get("x-kubernetes-embedded-resource"):
            # An embedded object must have apiVersion and kind, so an empty container from
            # a factory (the usual dict/model default) is no valid default for it.
            complete = isinstance(default, dict) and "apiVersion" in default and "kind" in default
            if not complete:
                if info.default_factory is not None:
                    return schema
                raise ctx.error("the default of an embedded resource must have apiVersion and kind")
        if default is not None:
            schema["default"] = default
        return schema


def _ensure_complete(cls: type[BaseModel], ctx: _Context) -> None:
    if cls.__pydantic_complete__:
        return
    try:
        cls.model_rebuild()
    except Exception as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ctx.error(
            f"model {cls.__name__} is not fully defined ({reason}); define the types it names "
            f"and call {cls.__name__}.model_rebuild()"
        ) from None


def _wire_name(name: str, info: FieldInfo) -> str:
    return info.serialization_alias or info.alias or name


def _enum_schema(values: list[Any], ctx: _Context) -> dict[str, Any]:
    plain = [v.value if isinstance(v, enum.Enum) else v for v in values]
    if not plain:
        raise ctx.error("an enum needs at least one value")
    if all(isinstance(v, bool) for v in plain):
        kind = "boolean"
    elif all(isinstance(v, int) and not isinstance(v, bool) for v in plain):
        kind = "integer"
    elif all(isinstance(v, int | float) and not isinstance(v, bool) for v in plain):
        kind = "number"
    elif all(isinstance(v, str) for v in plain):
        kind = "string"
    else:
        raise ctx.error(f"the values {plain!r} mix types; a CRD enum holds values of one type")
    return {"type": kind, "enum": plain}


def _wire_default(info: FieldInfo, ctx: _Context) -> Any:
    """The default in wire form, or None when the schema should carry none.

    A static default is validated and serialised the way the object would be sent
    (camelCase, None fields left out). Nested fields at their own defaults are written
    too: the API server validates a default (CEL rules included) before it applies the
    nested defaults, so ``{}`` would fail a rule such as ``self.min <= self.max``. A
    default factory is called once; its value is used only if it is a list or an object,
    since a factory of scalars is usually meant to differ per object (timestamps, random
    names).
    """
    factory = info.default_factory
    if factory is not None:
        if info.default_factory_takes_validated_data:
            return None
        value = factory()  # type: ignore[call-arg]
    else:
        value = info.default
    if value is PydanticUndefined or value is None:
        return None
    adapter: TypeAdapter[Any] = TypeAdapter(info.rebuild_annotation())
    try:
        valid = adapter.validate_python(value)
    except ValidationError as exc:
        raise ctx.error(f"the default {value!r} is not valid for the field: {exc}") from None
    wire = adapter.dump_python(valid, mode="json", by_alias=True, exclude_none=True)
    if factory is not None and not isinstance(wire, dict | list):
        return None
    return wire


def _strip_private(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: _strip_private(v)
            for k, v in node.items()
            if not (isinstance(k, str) and k.startswith("x-pyctrl-"))
        }
    if isinstance(node, list):
        return [_strip_private(v) for v in node]
    return node


def _check_structural(schema: dict[str, Any], path: str, cls: type) -> None:
    """Refuse what only overrides (Schemaless, WithJsonSchema) can introduce."""
    for key in ("$ref", "definitions", "$defs"):
        if key in schema:
            raise SchemaError(f"{cls.__name__} (at {path}): {key} is not allowed in a CRD schema")
    int_or_string = schema.get("x-kubernetes-int-or-string") is True
    if "anyOf" in schema and not int_or_string:
        raise SchemaError(f"{cls.__name__} (at {path}): anyOf is only allowed for int-or-string")
    if (
        "type" not in schema
        and not int_or_string
        and schema.get("x-kubernetes-preserve-unknown-fields") is not True
    ):
        raise SchemaError(
            f"{cls.__name__} (at {path}): the schema has no type; a structural schema needs "
            "one (or PreserveUnknownFields())"
        )
    for name, prop in schema.get("properties", {}).items():
        _check_structural(prop, f"{path}.{name}", cls)
    items = schema.get("items")
    if isinstance(items, dict):
        _check_structural(items, f"{path}[*]", cls)
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict):
        _check_structural(additional, f"{path}[*]", cls)


def schema_for(model: type[BaseModel]) -> dict[str, Any]:
    """Return the structural ``openAPIV3Schema`` of a model.

    For a `CustomResource` this is the schema of a CRD version: the object root with
    ``apiVersion``, ``kind``, ``metadata`` (``type: object``, as the API server checks
    metadata itself) and the class's own fields. For any other model it is the schema
    of that object.

    Args:
        model: A pydantic model class.

    Returns:
        The schema, a JSON-ready dict.

    Raises:
        SchemaError: The type has no structural schema (recursion, a union, an
            unsupported type, a marker that does not fit); the message names the class
            and field.
    """
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise SchemaError(f"{model!r} is not a pydantic model class")
    generator = _Generator()
    ctx = _Context(where=model.__name__)
    _ensure_complete(model, ctx)
    if issubclass(model, CustomResource):
        fields = {
            name: info
            for name, info in model.__pydantic_fields__.items()
            if name not in ("api_version", "kind", "metadata")
        }
        schema = generator._object_schema(model, fields, ctx)
        properties = {
            "apiVersion": {"description": _API_VERSION_DOC, "type": "string"},
            "kind": {"description": _KIND_DOC, "type": "string"},
            "metadata": {"type": "object"},
            **schema.get("properties", {}),
        }
        schema["properties"] = properties
    else:
        schema = generator.model_schema(model, ctx)
    schema = dict(_strip_private(schema))
    _check_structural(schema, "<root>", model)
    return schema
