"""Structural schema checks done on CRD create and update.

apiextensions' ``pkg/apiserver/schema`` and ``pkg/apis/apiextensions/validation``: every
node typed, value validations only under the composites, metadata restricted, list and
map extensions consistent, defaults valid and pruned, CEL rules compile.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any, Final

from pyctrl._apiextensions.cel.program import compile_rules
from pyctrl._apiextensions.cel_rules import cel_errors, valid_field_path
from pyctrl._apiextensions.goregex import compile_go_regex
from pyctrl._apiextensions.nodes import (
    META_FIELDS,
    Node,
    dict_field,
    dict_list,
    map_is_correlatable,
    properties_of,
    str_field,
)
from pyctrl._apiextensions.objectmeta import embedded_meta_errors
from pyctrl._apiextensions.openapi import openapi_errors
from pyctrl._apiextensions.pruning import prune_value
from pyctrl._apimachinery.field import (
    Cause,
    child,
    field_forbidden,
    field_invalid,
    field_not_supported,
    field_required,
    index,
    key_path,
)
from pyctrl._apimachinery.gofmt import GoLiteral, go_quote, go_value
from pyctrl._apimachinery.jsonvalue import deep_equal

# ---------------------------------------------------------------------------------------
# Schema checks done on CRD create/update (structural schema, OpenAPI restrictions,
# list/map extensions, defaults, CEL rule compilation).
# ---------------------------------------------------------------------------------------

OPENAPI_V3_TYPES: Final = ["array", "boolean", "integer", "number", "object", "string"]
_ROOT_LEVEL: Final = 0
_ITEM_LEVEL: Final = 1
_FIELD_LEVEL: Final = 2
_SUPPORTED_RULE_REASONS: Final = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
]


def _nonzero(value: Any) -> bool:
    return value not in (None, False, "", 0, [], {}) or value is True


def _is_int_or_string_any_of(any_of: Any) -> bool:
    if not isinstance(any_of, list) or len(any_of) != 2:
        return False
    wanted = ({"type": "integer"}, {"type": "string"})
    for got, want in zip(any_of, wanted, strict=True):
        if not isinstance(got, dict):
            return False
        if {k: v for k, v in got.items() if _nonzero(v)} != want:
            return False
    return True


def _is_int_or_string_all_of(raw: dict[str, Any]) -> bool:
    all_of = raw.get("allOf")
    if not isinstance(all_of, list) or not all_of or not isinstance(all_of[0], dict):
        return False
    return _is_int_or_string_any_of(all_of[0].get("anyOf"))


def _structural_invariants(s: dict[str, Any], lvl: int, path: str) -> list[Cause]:
    """validateStructuralInvariants of one node, then of its children."""
    errs = _structural_children(s, lvl, path)
    errs += _int_or_string_conflicts(s, path)
    errs += _value_validation_structure(
        s,
        skip_any_of=_is_int_or_string_any_of(s.get("anyOf")),
        skip_first_all_of_any_of=_is_int_or_string_all_of(s),
        lvl=lvl,
        path=path,
    )
    errs += _type_invariants(s, lvl, path)
    errs += _embedded_object_invariants(s, lvl, path)
    return errs


def _structural_children(s: dict[str, Any], lvl: int, path: str) -> list[Cause]:
    """Arrays have items; items, properties and additionalProperties are structural too."""
    errs: list[Cause] = []
    items = s.get("items")
    if str_field(s, "type") == "array" and items is None:
        errs.append(field_required(child(path, "items"), "must be specified"))
    if isinstance(items, dict):
        errs += _structural_invariants(items, _ITEM_LEVEL, child(path, "items"))
    for k, v in properties_of(s).items():
        errs += _structural_invariants(v, _FIELD_LEVEL, key_path(child(path, "properties"), k))
    addl = s.get("additionalProperties")
    if addl is not None:
        if lvl == _ROOT_LEVEL:
            errs.append(
                field_forbidden(child(path, "additionalProperties"), "must not be used at the root")
            )
        if isinstance(addl, dict):
            errs += _structural_invariants(addl, _FIELD_LEVEL, child(path, "additionalProperties"))
    return errs


def _int_or_string_conflicts(s: dict[str, Any], path: str) -> list[Cause]:
    """x-kubernetes-int-or-string excludes preserve-unknown-fields and embedded-resource."""
    if s.get("x-kubernetes-int-or-string") is not True:
        return []
    errs: list[Cause] = []
    for extension in ("x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource"):
        if s.get(extension) is True:
            errs.append(
                field_invalid(
                    child(path, extension),
                    True,
                    "must be false if x-kubernetes-int-or-string is true",
                )
            )
    return errs


def _type_invariants(s: dict[str, Any], lvl: int, path: str) -> list[Cause]:
    """The node's type: object for embedded resources and the root, otherwise not empty."""
    errs: list[Cause] = []
    typ = str_field(s, "type")
    embedded = s.get("x-kubernetes-embedded-resource") is True
    if embedded and typ != "object":
        if not typ:
            errs.append(
                field_required(
                    child(path, "type"), "must be object if x-kubernetes-embedded-resource is true"
                )
            )
        else:
            errs.append(
                field_invalid(
                    child(path, "type"),
                    typ,
                    "must be object if x-kubernetes-embedded-resource is true",
                )
            )
    elif (
        not typ
        and s.get("x-kubernetes-int-or-string") is not True
        and s.get("x-kubernetes-preserve-unknown-fields") is not True
    ):
        where = {
            _ROOT_LEVEL: "at the root",
            _ITEM_LEVEL: "for specified array items",
            _FIELD_LEVEL: "for specified object fields",
        }[lvl]
        errs.append(field_required(child(path, "type"), f"must not be empty {where}"))
    if embedded and s.get("additionalProperties") is not None:
        errs.append(
            field_forbidden(
                child(path, "additionalProperties"),
                "must not be used if x-kubernetes-embedded-resource is set",
            )
        )
    if lvl == _ROOT_LEVEL and typ and typ != "object":
        errs.append(field_invalid(child(path, "type"), typ, "must be object at the root"))
    return errs


def _embedded_object_invariants(s: dict[str, Any], lvl: int, path: str) -> list[Cause]:
    """kind, apiVersion and metadata of the root and of embedded resources."""
    errs: list[Cause] = []
    embedded = s.get("x-kubernetes-embedded-resource") is True
    check_metadata = lvl == _ROOT_LEVEL or embedded
    props = properties_of(s)
    props_path = child(path, "properties")
    for meta_field in ("kind", "apiVersion"):
        if meta_field in props and check_metadata:
            sub_type = str_field(props[meta_field], "type")
            if sub_type != "string":
                errs.append(
                    field_invalid(
                        child(key_path(props_path, meta_field), "type"), sub_type, "must be string"
                    )
                )
    if "metadata" in props:
        errs += _metadata_invariants(
            props["metadata"], check_metadata, lvl, key_path(props_path, "metadata")
        )
    if embedded and s.get("x-kubernetes-preserve-unknown-fields") is not True and not props:
        errs.append(
            field_required(
                props_path,
                "must not be empty if x-kubernetes-embedded-resource is true without "
                "x-kubernetes-preserve-unknown-fields",
            )
        )
    return errs


# Keys of a JSONSchemaProps that do not survive conversion to a structural schema.
_NON_STRUCTURAL_KEYS: Final = frozenset(("example", "externalDocs"))


def _metadata_invariants(
    s: dict[str, Any], check_metadata: bool, lvl: int, path: str
) -> list[Cause]:
    errs: list[Cause] = []
    typ = str_field(s, "type")
    if check_metadata and typ != "object":
        errs.append(field_invalid(child(path, "type"), typ, "must be object"))
    if lvl == _ROOT_LEVEL:
        rest = {k: v for k, v in s.items() if k not in _NON_STRUCTURAL_KEYS and _nonzero(v)}
        rest.pop("type", None)
        rest.pop("default", None)
        props = properties_of(s)
        names = set(props)
        if names and names <= {"name", "generateName"}:
            rest.pop("properties", None)
        if rest:
            errs.append(
                field_forbidden(
                    path,
                    "must not specify anything other than name and generateName, but metadata is "
                    "implicitly specified",
                )
            )
    return errs


def _value_validation_structure(
    v: dict[str, Any], *, skip_any_of: bool, skip_first_all_of_any_of: bool, lvl: int, path: str
) -> list[Cause]:
    errs: list[Cause] = []
    if not skip_any_of:
        for i, sub in enumerate(dict_list(v, "anyOf")):
            errs += _nested_structure(sub, False, lvl, index(child(path, "anyOf"), i))
    for i, sub in enumerate(dict_list(v, "allOf")):
        skip = skip_first_all_of_any_of and i == 0
        errs += _nested_structure(sub, skip, lvl, index(child(path, "allOf"), i))
    for i, sub in enumerate(dict_list(v, "oneOf")):
        errs += _nested_structure(sub, False, lvl, index(child(path, "oneOf"), i))
    not_ = dict_field(v, "not")
    if not_ is not None:
        errs += _nested_structure(not_, False, lvl, child(path, "not"))
    pattern = str_field(v, "pattern")
    if pattern:
        try:
            compile_go_regex(pattern)
        except ValueError as e:
            errs.append(
                field_invalid(
                    child(path, "pattern"),
                    pattern,
                    f"must be a valid regular expression, but isn't: {e}",
                )
            )
    return errs


_NESTED_FORBIDDEN: Final = (
    ("type", "must be empty to be structural"),
    ("additionalProperties", "must be undefined to be structural"),
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    ("externalDocs", "must be undefined to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
)


def _nested_structure(v: dict[str, Any], skip_any_of: bool, lvl: int, path: str) -> list[Cause]:
    errs = _value_validation_structure(
        v, skip_any_of=skip_any_of, skip_first_all_of_any_of=False, lvl=lvl, path=path
    )
    items = dict_field(v, "items")
    if items is not None:
        errs += _nested_structure(items, False, lvl, child(path, "items"))
    props = properties_of(v)
    for k, sub in props.items():
        errs += _nested_structure(sub, False, _FIELD_LEVEL, key_path(child(path, "properties"), k))
    for key, detail in _NESTED_FORBIDDEN:
        value = v.get(key)
        present = (
            value is not None
            if key
            in (
                "additionalProperties",
                "default",
                "externalDocs",
                "x-kubernetes-list-type",
                "x-kubernetes-map-type",
            )
            else _nonzero(value)
        )
        if present:
            errs.append(field_forbidden(child(path, key), detail))
    if "metadata" in props:
        errs.append(
            field_forbidden(
                key_path(child(path, "properties"), "metadata"),
                "must not be specified in a nested context",
            )
        )
    return errs


def _completeness(s: dict[str, Any], path: str) -> list[Cause]:
    return _vv_completeness(s, s, path, path)


def _vv_completeness(
    v: dict[str, Any], s: dict[str, Any] | None, s_path: str, v_path: str
) -> list[Cause]:
    if s is None:
        return [field_required(s_path, f"because it is defined in {v_path}")]
    errs: list[Cause] = []
    not_ = dict_field(v, "not")
    if not_ is not None:
        errs += _nested_completeness(not_, s, s_path, child(v_path, "not"))
    for name in ("allOf", "anyOf", "oneOf"):
        for i, sub in enumerate(dict_list(v, name)):
            errs += _nested_completeness(sub, s, s_path, index(child(v_path, name), i))
    return errs


def _nested_completeness(
    v: dict[str, Any], s: dict[str, Any] | None, s_path: str, v_path: str
) -> list[Cause]:
    if s is None:
        return [field_required(s_path, f"because it is defined in {v_path}")]
    errs = _vv_completeness(v, s, s_path, v_path)
    items = dict_field(v, "items")
    if items is not None:
        errs += _nested_completeness(
            items, dict_field(s, "items"), child(s_path, "items"), child(v_path, "items")
        )
    s_props = properties_of(s)
    for k, sub in properties_of(v).items():
        sp = key_path(child(s_path, "properties"), k)
        vp = key_path(child(v_path, "properties"), k)
        if k not in s_props:
            errs.append(field_required(sp, f"because it is defined in {vp}"))
        else:
            errs += _nested_completeness(sub, s_props[k], sp, vp)
    return errs


def validate_structural(schema: dict[str, Any], path: str) -> list[Cause]:
    errs = _structural_invariants(schema, _ROOT_LEVEL, path) + _completeness(schema, path)
    return sorted(errs, key=str)


_UNSUPPORTED_FIELDS: Final = (
    ("id", "OpenAPIV3Schema 'id' is not supported"),
    ("$schema", "OpenAPIV3Schema 'schema' is not supported"),
    ("$ref", "OpenAPIV3Schema '$ref' is not supported"),
    ("patternProperties", "OpenAPIV3Schema 'patternProperties' is not supported"),
    ("dependencies", "OpenAPIV3Schema 'dependencies' is not supported"),
    ("additionalItems", "OpenAPIV3Schema 'additionalItems' is not supported"),
    ("definitions", "OpenAPIV3Schema 'definitions' is not supported"),
)


def new_structural_error(s: dict[str, Any]) -> str | None:
    """The error NewStructural returns, or None if the schema converts."""
    for key, message in _UNSUPPORTED_FIELDS:
        if _nonzero(s.get(key)):
            return message
    if s.get("x-kubernetes-preserve-unknown-fields") is False:
        return "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
    items = s.get("items")
    if isinstance(items, list):
        return "OpenAPIV3Schema 'items' must be a schema, but is an array"
    subs: list[Any] = []
    if isinstance(items, dict):
        subs.append(items)
    subs.extend(properties_of(s).values())
    for name in ("allOf", "anyOf", "oneOf"):
        subs.extend(dict_list(s, name))
    for name in ("not", "additionalProperties"):
        sub = dict_field(s, name)
        if sub is not None:
            subs.append(sub)
    for sub in subs:
        err = new_structural_error(sub)
        if err is not None:
            return err
    return None


@dataclass(frozen=True, slots=True)
class SchemaOpts:
    """validationOptions of apiextensions' CRD validation that affect schemas."""

    allow_defaults: bool = True
    require_valid_property_type: bool = True
    require_pruned_defaults: bool = True
    require_atomic_set_type: bool = True
    require_map_list_keys_map_set_validation: bool = True


@dataclass(frozen=True, slots=True)
class _Ssv:
    """specStandardValidatorV3 state carried down the schema walk."""

    allow_defaults: bool = True
    disallow_defaults_reason: str = ""
    inside_meta: bool = False
    require_valid_property_type: bool = True
    forbid_old_self: str | None = None

    def forbidden_defaults(self, reason: str) -> _Ssv:
        return _Ssv(
            False, reason, self.inside_meta, self.require_valid_property_type, self.forbid_old_self
        )

    def meta(self) -> _Ssv:
        return _Ssv(
            self.allow_defaults,
            self.disallow_defaults_reason,
            True,
            self.require_valid_property_type,
            self.forbid_old_self,
        )

    def no_old_self(self, path: str) -> _Ssv:
        if self.forbid_old_self is not None:
            return self
        return _Ssv(
            self.allow_defaults,
            self.disallow_defaults_reason,
            self.inside_meta,
            self.require_valid_property_type,
            path,
        )


def _ssv_validate(ssv: _Ssv, s: dict[str, Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    typ = s.get("type")
    if (
        ssv.require_valid_property_type
        and isinstance(typ, str)
        and typ
        and typ not in OPENAPI_V3_TYPES
    ):
        errs.append(field_not_supported(child(path, "type"), typ, OPENAPI_V3_TYPES))
    if s.get("default") is not None and not ssv.allow_defaults:
        detail = "must not be set"
        if ssv.disallow_defaults_reason:
            detail += " " + ssv.disallow_defaults_reason
        errs.append(field_forbidden(child(path, "default"), detail))
    checks = (
        ("id", _nonzero(s.get("id")), "id is not supported"),
        (
            "additionalItems",
            s.get("additionalItems") is not None,
            "additionalItems is not supported",
        ),
        (
            "patternProperties",
            _nonzero(s.get("patternProperties")),
            "patternProperties is not supported",
        ),
        ("definitions", _nonzero(s.get("definitions")), "definitions is not supported"),
        ("dependencies", s.get("dependencies") is not None, "dependencies is not supported"),
        ("$ref", s.get("$ref") is not None, "$ref is not supported"),
    )
    for key, bad, detail in checks:
        if bad:
            errs.append(field_forbidden(child(path, key), detail))
    if typ == "null":
        errs.append(
            field_forbidden(
                child(path, "type"), "type cannot be set to null, use nullable as an alternative"
            )
        )
    items = s.get("items")
    if isinstance(items, list) and items:
        errs.append(
            field_forbidden(child(path, "items"), "items must be a schema object and not an array")
        )
    if ssv.inside_meta and s.get("x-kubernetes-embedded-resource") is True:
        errs.append(
            field_forbidden(
                child(path, "x-kubernetes-embedded-resource"),
                "must not be used inside of resource meta",
            )
        )
    return errs


def go_string_slice(values: list[Any]) -> GoLiteral:
    return GoLiteral("[]string{" + ", ".join(go_quote(str(v)) for v in values) + "}")


def _go_rule_struct(rule: dict[str, Any]) -> GoLiteral:
    """%#v of an apiextensions.ValidationRule, pointers rendered without their address."""

    def ptr(name: str, typ: str) -> str:
        value = rule.get(name)
        if value is None:
            return f"(*{typ})(nil)"
        return f"(*{typ})({go_value(value)})"

    return GoLiteral(
        "apiextensions.ValidationRule{"
        f"Rule:{go_quote(str_field(rule, 'rule'))}, "
        f"Message:{go_quote(str_field(rule, 'message'))}, "
        f"MessageExpression:{go_quote(str_field(rule, 'messageExpression'))}, "
        f"Reason:{ptr('reason', 'apiextensions.FieldValueErrorReason')}, "
        f"FieldPath:{go_quote(str_field(rule, 'fieldPath'))}, "
        f"OptionalOldSelf:{ptr('optionalOldSelf', 'bool')}}}"
    )


class _SchemaErrs:
    """OpenAPISchemaErrorList: schema errors first, CEL errors after them."""

    __slots__ = ("cel", "schema")

    def __init__(self) -> None:
        self.schema: list[Cause] = []
        self.cel: list[Cause] = []

    def extend(self, other: _SchemaErrs) -> None:
        self.schema += other.schema
        self.cel += other.cel


def _openapi_schema_errors(
    s: dict[str, Any] | None,
    path: str,
    ssv: _Ssv,
    opts: SchemaOpts,
    *,
    is_root: bool = False,
    cel_root: bool | None = None,
) -> _SchemaErrs:
    """ValidateCustomResourceDefinitionOpenAPISchema.

    ``cel_root`` is None when CEL rules are not compiled at this node (invalid structure,
    or under a junctor), else whether the node is a resource root for CEL typing.
    """
    out = _SchemaErrs()
    if s is None:
        return out
    out.schema += _ssv_validate(ssv, s, path)
    if s.get("uniqueItems") is True:
        out.schema.append(
            field_forbidden(
                child(path, "uniqueItems"),
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            )
        )
    out.extend(_additional_properties_errors(s, path, ssv, opts, cel_root))
    out.extend(_properties_errors(s, path, ssv, opts, is_root=is_root, cel_root=cel_root))
    out.extend(_junctor_errors(s, path, ssv, opts))
    out.extend(_items_errors(s, path, ssv, opts, cel_root))
    out.extend(_named_subschema_errors(s, "dependencies", path, ssv, opts))
    out.schema += _extension_errors(s, path, opts)
    if opts.require_map_list_keys_map_set_validation:
        out.schema += map_list_keys_map_set_errors(s, path)
    rules = s.get("x-kubernetes-validations")
    if isinstance(rules, list) and rules:
        out.schema += _rule_shape_errors(s, rules, path)
        if not out.schema and cel_root is not None:
            out.cel += _rule_compile_errors(s, rules, path, ssv, is_root or cel_root)
    return out


def _child_cel_root(cel_root: bool | None, sub: dict[str, Any]) -> bool | None:
    """A child's ``cel_root``: compiled where the parent is, a root if embedded."""
    return None if cel_root is None else sub.get("x-kubernetes-embedded-resource") is True


def _additional_properties_errors(
    s: dict[str, Any], path: str, ssv: _Ssv, opts: SchemaOpts, cel_root: bool | None
) -> _SchemaErrs:
    """additionalProperties: exclusive with properties; its schema validated below."""
    out = _SchemaErrs()
    addl = s.get("additionalProperties")
    if addl is None:
        return out
    if properties_of(s) and (addl is False or isinstance(addl, dict)):
        out.schema.append(
            field_forbidden(
                child(path, "additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            )
        )
    sub_ssv = ssv
    if ssv.inside_meta:
        sub_ssv = ssv.forbidden_defaults("inside additionalProperties applying to object metadata")
    if isinstance(addl, dict):
        out.extend(
            _openapi_schema_errors(
                addl,
                child(path, "additionalProperties"),
                sub_ssv,
                opts,
                cel_root=_child_cel_root(cel_root, addl),
            )
        )
    return out


def _properties_errors(
    s: dict[str, Any],
    path: str,
    ssv: _Ssv,
    opts: SchemaOpts,
    *,
    is_root: bool,
    cel_root: bool | None,
) -> _SchemaErrs:
    """Each property's schema; metadata of the root and of embedded resources is special."""
    out = _SchemaErrs()
    embedded = s.get("x-kubernetes-embedded-resource") is True
    for prop, sub in properties_of(s).items():
        sub_ssv = ssv
        if not map_is_correlatable(s.get("x-kubernetes-map-type")):
            sub_ssv = sub_ssv.no_old_self(path)
        if (is_root or embedded) and prop in META_FIELDS:
            sub_ssv = sub_ssv.meta()
            if is_root:
                sub_ssv = sub_ssv.forbidden_defaults(f"in top-level {prop}")
        out.extend(
            _openapi_schema_errors(
                sub,
                key_path(child(path, "properties"), prop),
                sub_ssv,
                opts,
                cel_root=_child_cel_root(cel_root, sub),
            )
        )
    return out


def _junctor_errors(s: dict[str, Any], path: str, ssv: _Ssv, opts: SchemaOpts) -> _SchemaErrs:
    """not, allOf, oneOf, anyOf and definitions: validated, without CEL compilation."""
    out = _openapi_schema_errors(dict_field(s, "not"), child(path, "not"), ssv, opts, cel_root=None)
    for name in ("allOf", "oneOf", "anyOf"):
        for i, sub in enumerate(dict_list(s, name)):
            out.extend(
                _openapi_schema_errors(sub, index(child(path, name), i), ssv, opts, cel_root=None)
            )
    out.extend(_named_subschema_errors(s, "definitions", path, ssv, opts))
    return out


def _named_subschema_errors(
    s: dict[str, Any], field: str, path: str, ssv: _Ssv, opts: SchemaOpts
) -> _SchemaErrs:
    """The schemas of a name -> schema map (definitions, dependencies), without CEL."""
    out = _SchemaErrs()
    named = s.get(field)
    if isinstance(named, dict):
        for k, sub in named.items():
            if isinstance(sub, dict):
                out.extend(
                    _openapi_schema_errors(
                        sub, key_path(child(path, field), k), ssv, opts, cel_root=None
                    )
                )
    return out


def _items_errors(
    s: dict[str, Any], path: str, ssv: _Ssv, opts: SchemaOpts, cel_root: bool | None
) -> _SchemaErrs:
    """The items' schema (or schemas); oldSelf only reaches into items of map lists."""
    out = _SchemaErrs()
    items = s.get("items")
    if items is None:
        return out
    sub_ssv = ssv if s.get("x-kubernetes-list-type") == "map" else ssv.no_old_self(path)
    if isinstance(items, dict):
        out.extend(
            _openapi_schema_errors(
                items,
                child(path, "items"),
                sub_ssv,
                opts,
                cel_root=_child_cel_root(cel_root, items),
            )
        )
    elif isinstance(items, list):
        for i, sub in enumerate(items):
            if isinstance(sub, dict):
                out.extend(
                    _openapi_schema_errors(
                        sub, index(child(path, "items"), i), sub_ssv, opts, cel_root=None
                    )
                )
    return out


def _extension_errors(s: dict[str, Any], path: str, opts: SchemaOpts) -> list[Cause]:
    """The x-kubernetes-* extensions of one node: preserve-unknown-fields, map and list types."""
    errs: list[Cause] = []
    if s.get("x-kubernetes-preserve-unknown-fields") is False:
        errs.append(
            field_invalid(
                child(path, "x-kubernetes-preserve-unknown-fields"),
                False,
                "must be true or undefined",
            )
        )
    errs += _map_type_errors(s, path)
    errs += _list_type_errors(s, path, opts)
    if s.get("x-kubernetes-list-type") == "map":
        errs += _map_list_errors(s, path)
    return errs


def _map_type_errors(s: dict[str, Any], path: str) -> list[Cause]:
    """x-kubernetes-map-type: only on objects, atomic or granular."""
    errs: list[Cause] = []
    typ = str_field(s, "type")
    map_type = s.get("x-kubernetes-map-type")
    if map_type is not None and typ != "object":
        detail = "must be object if x-kubernetes-map-type is specified"
        errs.append(
            field_required(child(path, "type"), detail)
            if not typ
            else field_invalid(child(path, "type"), typ, detail)
        )
    if map_type is not None and map_type not in ("atomic", "granular"):
        errs.append(
            field_not_supported(
                child(path, "x-kubernetes-map-type"), map_type, ["atomic", "granular"]
            )
        )
    return errs


def _list_type_errors(s: dict[str, Any], path: str, opts: SchemaOpts) -> list[Cause]:
    """x-kubernetes-list-type: only on arrays, a known type, map when keys are given."""
    errs: list[Cause] = []
    typ = str_field(s, "type")
    list_type = s.get("x-kubernetes-list-type")
    items = s.get("items")
    if list_type is not None and typ != "array":
        detail = "must be array if x-kubernetes-list-type is specified"
        errs.append(
            field_required(child(path, "type"), detail)
            if not typ
            else field_invalid(child(path, "type"), typ, detail)
        )
    elif opts.require_atomic_set_type and list_type == "set" and isinstance(items, dict):
        item_type = str_field(items, "type")
        detail = "must be atomic as item of a list with x-kubernetes-list-type=set"
        item_list_type = items.get("x-kubernetes-list-type")
        if item_type == "array" and item_list_type is not None and item_list_type != "atomic":
            errs.append(
                field_invalid(
                    child(path, "items", "x-kubernetes-list-type"), item_list_type, detail
                )
            )
        elif item_type == "object" and items.get("x-kubernetes-map-type") != "atomic":
            # apiextensions reports the items' list type here, usually unset.
            errs.append(
                field_invalid(child(path, "items", "x-kubernetes-map-type"), item_list_type, detail)
            )
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        errs.append(
            field_not_supported(
                child(path, "x-kubernetes-list-type"), list_type, ["atomic", "set", "map"]
            )
        )
    keys = s.get("x-kubernetes-list-map-keys")
    if isinstance(keys, list) and keys:
        detail = "must be map if x-kubernetes-list-map-keys is non-empty"
        if list_type is None:
            errs.append(field_required(child(path, "x-kubernetes-list-type"), detail))
        elif list_type != "map":
            errs.append(field_invalid(child(path, "x-kubernetes-list-type"), list_type, detail))
    return errs


def _map_list_errors(s: dict[str, Any], path: str) -> list[Cause]:
    """A map list has keys and one object item schema."""
    errs: list[Cause] = []
    keys = s.get("x-kubernetes-list-map-keys")
    keys_list = keys if isinstance(keys, list) else []
    items = s.get("items")
    if not keys_list:
        errs.append(
            field_required(
                child(path, "x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            )
        )
    if items is None:
        errs.append(
            field_required(
                child(path, "items"), "must have a schema if x-kubernetes-list-type is map"
            )
        )
    elif isinstance(items, list):
        errs.append(
            field_invalid(
                child(path, "items"),
                items,
                "must only have a single schema if x-kubernetes-list-type is map",
            )
        )
    elif isinstance(items, dict):
        item_type = str_field(items, "type")
        if item_type != "object":
            errs.append(
                field_invalid(
                    child(path, "items", "type"),
                    item_type,
                    "must be object if parent array's x-kubernetes-list-type is map",
                )
            )
        else:
            errs += _map_list_key_errors(items, keys_list, path)
    return errs


def _map_list_key_errors(items: dict[str, Any], keys_list: list[Any], path: str) -> list[Cause]:
    """Each map key names a scalar property of the items, once."""
    errs: list[Cause] = []
    item_type = str_field(items, "type")
    item_props = properties_of(items)
    seen: set[str] = set()
    for raw_key in keys_list:
        k = str(raw_key)
        if k in item_props:
            if str_field(item_props[k], "type") in ("array", "object"):
                errs.append(
                    field_invalid(
                        child(key_path(child(path, "items", "properties"), k), "type"),
                        item_type,
                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                    )
                )
        else:
            errs.append(
                field_invalid(
                    child(path, "x-kubernetes-list-map-keys"),
                    go_string_slice(keys_list),
                    "entries must all be names of item properties",
                )
            )
        if k in seen:
            errs.append(
                field_invalid(
                    child(path, "x-kubernetes-list-map-keys"),
                    go_string_slice(keys_list),
                    "must not contain duplicate entries",
                )
            )
        seen.add(k)
    return errs


def map_list_keys_map_set_errors(s: dict[str, Any], path: str) -> list[Cause]:
    items = s.get("items")
    list_type = s.get("x-kubernetes-list-type")
    if not isinstance(items, dict) or list_type not in ("set", "map"):
        return []
    errs: list[Cause] = []
    if items.get("nullable") is True:
        errs.append(
            field_forbidden(
                child(path, "items", "nullable"),
                f"cannot be nullable when x-kubernetes-list-type is {list_type}",
            )
        )
    if list_type == "map":
        required = items.get("required")
        required_set = set(required) if isinstance(required, list) else set()
        item_props = properties_of(items)
        keys = s.get("x-kubernetes-list-map-keys")
        for k in keys if isinstance(keys, list) else []:
            prop = item_props.get(str(k))
            if prop is None:
                continue
            prop_path = key_path(child(path, "items", "properties"), str(k))
            if k not in required_set and prop.get("default") is None:
                errs.append(
                    field_required(
                        child(prop_path, "default"),
                        "this property is in x-kubernetes-list-map-keys, so it must have a "
                        "default or be a "
                        "required property",
                    )
                )
            if prop.get("nullable") is True:
                errs.append(
                    field_forbidden(
                        child(prop_path, "nullable"),
                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                    )
                )
    return errs


_NEWLINES: Final = re.compile(r"[\n\r]+")


def _rule_shape_errors(s: dict[str, Any], rules: list[Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    for i, raw_rule in enumerate(rules):
        rule = raw_rule if isinstance(raw_rule, dict) else {}
        rp = index(child(path, "x-kubernetes-validations"), i)
        text = str_field(rule, "rule")
        message = str_field(rule, "message")
        trimmed_rule = text.strip()
        trimmed_msg = message.strip()
        if not trimmed_rule:
            errs.append(field_required(child(rp, "rule"), "rule is not specified"))
        elif message and not trimmed_msg:
            errs.append(
                field_invalid(
                    child(rp, "message"), message, "message must be non-empty if specified"
                )
            )
        elif _NEWLINES.search(trimmed_msg):
            errs.append(
                field_invalid(child(rp, "message"), message, "message must not contain line breaks")
            )
        elif _NEWLINES.search(trimmed_rule) and not trimmed_msg:
            errs.append(
                field_required(
                    child(rp, "message"), "message must be specified if rule contains line breaks"
                )
            )
        message_expression = str_field(rule, "messageExpression")
        if message_expression and not message_expression.strip():
            errs.append(
                field_required(
                    child(rp, "messageExpression"),
                    "messageExpression must be non-empty if specified",
                )
            )
        reason = rule.get("reason")
        if reason is not None and reason not in _SUPPORTED_RULE_REASONS:
            errs.append(field_not_supported(child(rp, "reason"), reason, _SUPPORTED_RULE_REASONS))
        field_path = str_field(rule, "fieldPath")
        if field_path and not field_path.strip():
            errs.append(
                field_invalid(
                    child(rp, "fieldPath"), field_path, "fieldPath must be non-empty if specified"
                )
            )
        if _NEWLINES.search(field_path):
            errs.append(
                field_invalid(
                    child(rp, "fieldPath"), field_path, "fieldPath must not contain line breaks"
                )
            )
        if field_path:
            try:
                valid_field_path(field_path, s)
            except ValueError:
                errs.append(
                    field_invalid(
                        child(rp, "fieldPath"), field_path, "fieldPath must be a valid path"
                    )
                )
    return errs


def _rule_compile_errors(
    s: dict[str, Any], rules: list[Any], path: str, ssv: _Ssv, is_resource_root: bool
) -> list[Cause]:
    errs: list[Cause] = []
    compiled = compile_rules(s, is_resource_root=is_resource_root)
    for i, (raw_rule, result) in enumerate(zip(rules, compiled, strict=True)):
        rule = raw_rule if isinstance(raw_rule, dict) else {}
        rp = index(child(path, "x-kubernetes-validations"), i)
        if result.error is not None:
            if result.error_required:
                errs.append(field_required(child(rp, "rule"), result.error))
            else:
                errs.append(field_invalid(child(rp, "rule"), _go_rule_struct(rule), result.error))
        if result.message_error is not None:
            errs.append(
                field_invalid(
                    child(rp, "messageExpression"), _go_rule_struct(rule), result.message_error
                )
            )
        if result.uses_old_self:
            if ssv.forbid_old_self is not None:
                errs.append(
                    field_invalid(
                        child(rp, "rule"),
                        str_field(rule, "rule"),
                        f"oldSelf cannot be used on the uncorrelatable portion of the schema "
                        "within "
                        f"{ssv.forbid_old_self}",
                    )
                )
        elif rule.get("optionalOldSelf") is not None:
            errs.append(
                field_invalid(
                    child(rp, "optionalOldSelf"),
                    rule.get("optionalOldSelf"),
                    "may not be set if oldSelf is not used in rule",
                )
            )
    return errs


def _validate_defaults(
    node: Node, path: str, require_pruned: bool, inside_meta: bool = False
) -> list[Cause]:
    """structuraldefaulting.ValidateDefaults: defaults must validate and be pruned."""
    errs: list[Cause] = []
    if node.has_default:
        dpath = child(path, "default")
        value = node.default
        if not inside_meta and require_pruned:
            pruned = copy.deepcopy(value)
            prune_value(pruned, node, node.embedded, None, "")
            if not deep_equal(pruned, value):
                errs.append(field_invalid(dpath, value, "must not have unknown fields"))
        meta_errs = [] if inside_meta else embedded_meta_errors(value, node, dpath, node.embedded)
        if meta_errs:
            errs += meta_errs
        else:
            value_errs = openapi_errors(node, value, dpath)
            if value_errs:
                errs += value_errs
            elif node.has_cel:
                errs += cel_errors(
                    node, value, value, True, dpath, is_resource_root=node.embedded, unchanged=None
                )
    if node.items is not None:
        errs += _validate_defaults(node.items, child(path, "items"), require_pruned, inside_meta)
    for name, sub in (node.properties or {}).items():
        sub_meta = (
            False if sub.embedded else (inside_meta or (node.embedded and name in META_FIELDS))
        )
        errs += _validate_defaults(
            sub, key_path(child(path, "properties"), name), require_pruned, sub_meta
        )
    return errs


_ROOT_ALLOWED_WITH_STATUS: Final = {
    "description": "Description",
    "type": "Type",
    "format": "Format",
    "title": "Title",
    "maximum": "Maximum",
    "exclusiveMaximum": "ExclusiveMaximum",
    "minimum": "Minimum",
    "exclusiveMinimum": "ExclusiveMinimum",
    "maxLength": "MaxLength",
    "minLength": "MinLength",
    "pattern": "Pattern",
    "maxItems": "MaxItems",
    "minItems": "MinItems",
    "uniqueItems": "UniqueItems",
    "multipleOf": "MultipleOf",
    "required": "Required",
    "items": "Items",
    "properties": "Properties",
    "externalDocs": "ExternalDocs",
    "example": "Example",
    "x-kubernetes-preserve-unknown-fields": "XPreserveUnknownFields",
    "x-kubernetes-validations": "XValidations",
}


def schema_validation_errors(  # noqa: PLR0912 - the schema validation of CRD schemas, one branch per keyword
    schema: dict[str, Any], path: str, *, status_enabled: bool, opts: SchemaOpts
) -> list[Cause]:
    """validateCustomResourceDefinitionValidation for one ``openAPIV3Schema``."""
    errs: list[Cause] = []
    if status_enabled:
        for key, value in schema.items():
            if value is None or value is False or value == "":
                continue
            if key == "type":
                if value != "object":
                    errs.append(
                        field_invalid(
                            child(path, "type"),
                            value,
                            'only "object" is allowed as the type at the root of the schema if the '
                            "status subresource is enabled",
                        )
                    )
                    break
                continue
            if key not in _ROOT_ALLOWED_WITH_STATUS:
                allowed = " ".join(_ROOT_ALLOWED_WITH_STATUS.values())
                errs.append(
                    field_invalid(
                        path,
                        schema,
                        f"only [{allowed}] fields are allowed at the root of the schema if the "
                        "status subresource is enabled",
                    )
                )
                break
    if schema.get("nullable") is True:
        errs.append(field_forbidden(child(path, "nullable"), "nullable cannot be true at the root"))
    ssv = _Ssv(
        allow_defaults=opts.allow_defaults,
        require_valid_property_type=opts.require_valid_property_type,
    )
    init_error = new_structural_error(schema)
    cel_root: bool | None = None
    if init_error is None:
        structural = validate_structural(schema, path)
        if structural:
            errs += structural
        else:
            node = Node(schema)
            default_errs = _validate_defaults(node, path, opts.require_pruned_defaults, False)
            if default_errs:
                errs += default_errs
            else:
                cel_root = True
    schema_errs = _openapi_schema_errors(schema, path, ssv, opts, is_root=True, cel_root=cel_root)
    errs += schema_errs.schema + schema_errs.cel
    if not errs and init_error is not None:
        errs.append(field_invalid(path, "", init_error))
    return errs


def structural_errors(
    schema: dict[str, Any], path: str = "spec.validation.openAPIV3Schema"
) -> list[Cause]:
    """Check a CRD's ``openAPIV3Schema`` the way kube-apiserver does on CRD create.

    This covers what apiextensions checks of one schema: the OpenAPI restrictions
    (no ``$ref``, ``definitions``, ``patternProperties``, array ``items``..., no
    ``uniqueItems``, ``properties`` and ``additionalProperties`` mutually exclusive),
    structurality (every node typed unless ``x-kubernetes-int-or-string`` or
    ``x-kubernetes-preserve-unknown-fields``; ``anyOf``/``allOf``/``oneOf``/``not`` only
    with value validations, and only about fields specified outside them; metadata at
    the root restricted to ``name`` and ``generateName``; embedded resources typed
    ``object``), list/map extensions, defaults (valid, pruned, not in root metadata) and
    the compilation of ``x-kubernetes-validations`` rules.

    Args:
        schema: The ``openAPIV3Schema`` dict.
        path: Field path of the schema in the CRD, used as the prefix of every cause.

    Returns:
        The causes, in kube-apiserver's order (structural errors sorted as it sorts them).
    """
    return schema_validation_errors(schema, path, status_enabled=False, opts=SchemaOpts())
