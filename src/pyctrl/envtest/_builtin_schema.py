"""The schemas of built-in kinds, derived from kubernetes_asyncio's generated models.

kube-apiserver decodes a built-in object into its Go struct: a field the struct does not
declare is dropped and reported as an unknown field (a ``Warning`` header, or a 400 with
``fieldValidation=Strict``). It publishes the same structs in its OpenAPI documents, which
``kubectl explain`` renders and kubectl reads to compute strategic merge patches
(``x-kubernetes-patch-merge-key``, ``x-kubernetes-patch-strategy``).

kubernetes_asyncio's model classes are generated from kube-apiserver's OpenAPI document:
each has ``openapi_types`` (attribute -> type: ``V1ObjectMeta``, ``list[V1Container]``,
``dict(str, str)``, ``int``, ``datetime``, ``object``) and ``attribute_map`` (attribute
-> JSON name), and its property docstrings carry the field descriptions. From them this
module builds, once per kind and on first use:

* a tree of shapes that :func:`find_unknown` walks to find (and drop) the fields an object
  has and its Go type does not;
* OpenAPI definitions named after the Go types (:func:`openapi_definitions`), carrying the
  list and patch extensions of `_merge_keys`' tables.

``object`` attributes are IntOrString values (ports, ``maxSurge``...) or free-form JSON
(``RawExtension``, ``FieldsV1``, the values of a CRD's JSONSchemaProps): their content is
kept as sent, except the nested schemas of JSONSchemaProps (``items``,
``additionalProperties``...), which are schemas again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final

import orjson
from kubernetes_asyncio.client import models as _models

from pyctrl.envtest import _merge_keys
from pyctrl.envtest._resources import builtin_types

__all__ = [
    "INT_OR_STRING",
    "MICRO_TIME",
    "UnknownFields",
    "apply_errors",
    "find_unknown",
    "go_package",
    "openapi_definitions",
]

_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1"
INT_OR_STRING: Final = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
"""Definition name of IntOrString."""
MICRO_TIME: Final = f"{_META}.MicroTime"
"""Definition name of MicroTime."""
_TIME: Final = f"{_META}.Time"

# Group name -> Go package prefix of built-in types whose package is not
# io.k8s.api.<first label of the group>.
_SPECIAL_PACKAGES: Final = {
    "": "io.k8s.api.core",
    "apiextensions.k8s.io": "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions",
    "apiregistration.k8s.io": "io.k8s.kube-aggregator.pkg.apis.apiregistration",
    "internal.apiserver.k8s.io": "io.k8s.api.apiserverinternal",
}

# Model classes of k8s.io/apimachinery's meta/v1 package.
_META_CLASSES: Final = frozenset(
    {
        "V1Condition",
        "V1FieldSelectorRequirement",
        "V1LabelSelector",
        "V1LabelSelectorRequirement",
        "V1ListMeta",
        "V1ManagedFieldsEntry",
        "V1ObjectMeta",
        "V1OwnerReference",
    }
)
# core/v1 types that only other groups' kinds use (so would otherwise take their package).
_CORE_CLASSES: Final = frozenset({"V1TopologySelectorTerm", "V1TopologySelectorLabelRequirement"})

# ``object`` attributes holding an IntOrString, by JSON name.
_INT_OR_STRING_FIELDS: Final = frozenset(
    {"port", "targetPort", "maxSurge", "maxUnavailable", "minAvailable"}
)
# ``datetime`` attributes that are metav1.MicroTime rather than metav1.Time.
_MICRO_TIME_FIELDS: Final = frozenset(
    {
        ("CoreV1Event", "eventTime"),
        ("EventsV1Event", "eventTime"),
        ("CoreV1EventSeries", "lastObservedTime"),
        ("EventsV1EventSeries", "lastObservedTime"),
        ("V1LeaseSpec", "acquireTime"),
        ("V1LeaseSpec", "renewTime"),
    }
)
_MAX_STRICT_ERRORS: Final = 100
_SCALARS: Final = frozenset({"str", "int", "bool", "float", "datetime", "date"})
_VERSIONED_CLASS: Final = re.compile(
    r"(?P<prefix>[A-Z][A-Za-z0-9]*?)??V\d+(?:alpha\d+|beta\d+)?(?P<name>[A-Z]\w*)"
)


def go_package(group: str, version: str) -> str:
    """The OpenAPI name prefix of a built-in group version's Go package.

    Args:
        group: The API group ("" for core).
        version: The version.

    Returns:
        E.g. ``io.k8s.api.apps.v1``, ``io.k8s.api.core.v1``.
    """
    prefix = _SPECIAL_PACKAGES.get(group)
    if prefix is None:
        prefix = "io.k8s.api." + group.split(".", maxsplit=1)[0]
    return f"{prefix}.{version}"


def _model_class_name(group: str, version: str, kind: str) -> str | None:
    """The kubernetes_asyncio class of a kind: ``V1Deployment``, ``CoreV1Event``..."""
    label = group.split(".", maxsplit=1)[0]
    prefix = label[:1].upper() + label[1:] if label else "Core"
    versioned = version[:1].upper() + version[1:] + kind
    for name in (prefix + versioned, versioned):
        if isinstance(getattr(_models, name, None), type):
            return name
    return None


def _model(name: str) -> Any:
    return getattr(_models, name)


def _split_type(typ: str) -> tuple[str, str]:
    """(``list``/``dict``/``""``, inner type) of an ``openapi_types`` entry."""
    if typ.startswith("list[") and typ.endswith("]"):
        return "list", typ[5:-1]
    if typ.startswith("dict(") and typ.endswith(")"):
        return "dict", typ[typ.index(",") + 1 : -1].strip()
    return "", typ


# --- shapes: what a decode into the Go struct keeps --------------------------------------------

_Found = list[tuple[dict[str, Any], str, str]]


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class _Struct:
    """A Go struct: its fields by JSON name, each with the shape of its value (None: kept)."""

    __slots__ = ("fields",)

    def __init__(self) -> None:
        self.fields: dict[str, _Shape | None] = {}

    def walk(self, value: Any, path: str | None, found: _Found) -> None:
        if type(value) is not dict:
            return
        fields = self.fields
        for key, sub in value.items():
            shape = fields.get(key, _UNDECLARED)
            if shape is None:
                continue
            if shape is _UNDECLARED:
                found.append((value, key, _join(path, key) if path is not None else ""))
            elif type(sub) is dict or type(sub) is list:
                shape.walk(sub, _join(path, key) if path is not None else None, found)


class _List:
    __slots__ = ("item",)

    def __init__(self, item: _Shape) -> None:
        self.item = item

    def walk(self, value: Any, path: str | None, found: _Found) -> None:
        if type(value) is not list:
            return
        item = self.item
        if path is None:
            for sub in value:
                if type(sub) is dict or type(sub) is list:
                    item.walk(sub, None, found)
            return
        for i, sub in enumerate(value):
            if type(sub) is dict or type(sub) is list:
                item.walk(sub, f"{path}[{i}]", found)


class _Map:
    __slots__ = ("value",)

    def __init__(self, value: _Shape) -> None:
        self.value = value

    def walk(self, value: Any, path: str | None, found: _Found) -> None:
        if type(value) is not dict:
            return
        shape = self.value
        for key, sub in value.items():
            if type(sub) is dict or type(sub) is list:
                shape.walk(sub, _join(path, key) if path is not None else None, found)


class _OneOrMany:
    """JSONSchemaPropsOrArray: one schema, or a list of schemas."""

    __slots__ = ("item",)

    def __init__(self, item: _Struct) -> None:
        self.item = item

    def walk(self, value: Any, path: str | None, found: _Found) -> None:
        if type(value) is list:
            for i, sub in enumerate(value):
                self.item.walk(sub, f"{path}[{i}]" if path is not None else None, found)
        else:
            self.item.walk(value, path, found)


class _Silent:
    """A value Go decodes with a custom, non-strict unmarshaler: unknown fields dropped unsaid.

    JSONSchemaProps' ``items``, ``additionalProperties``, ``additionalItems`` and
    ``dependencies`` are such values.
    """

    __slots__ = ("shape",)

    def __init__(self, shape: _Shape) -> None:
        self.shape = shape

    def walk(self, value: Any, path: str | None, found: _Found) -> None:
        inner: _Found = []
        self.shape.walk(value, None, inner)
        found.extend((parent, key, "") for parent, key, _ in inner)


_Shape = _Struct | _List | _Map | _OneOrMany | _Silent
_UNDECLARED: Final = _Struct()

_structs: dict[str, _Struct] = {}
_kinds: dict[tuple[str, str, str], _Struct | None] = {}


def _object_shape(owner: str, json_name: str) -> _Shape | None:
    """The shape of an ``object`` attribute: None unless it holds nested schemas."""
    if owner == "V1JSONSchemaProps":
        if json_name == "items":
            return _Silent(_OneOrMany(_struct_shape("V1JSONSchemaProps")))
        if json_name in ("additionalProperties", "additionalItems", "dependencies"):
            # JSONSchemaPropsOrBool / OrStringArray: a bool or a list is kept as is.
            return _Silent(_struct_shape("V1JSONSchemaProps"))
    if (owner, json_name) == ("V1CustomResourceSubresources", "status"):
        return _Struct()  # CustomResourceSubresourceStatus has no fields.
    return None


def _type_shape(typ: str, owner: str, json_name: str) -> _Shape | None:
    container, inner = _split_type(typ)
    if container:
        shape = _type_shape(inner, owner, json_name)
        if shape is None:
            return None
        return _List(shape) if container == "list" else _Map(shape)
    if inner in _SCALARS:
        return None
    if inner == "object":
        return _object_shape(owner, json_name)
    return _struct_shape(inner)


def _struct_shape(name: str) -> _Struct:
    shape = _structs.get(name)
    if shape is not None:
        return shape
    shape = _Struct()
    # Registered before its fields are filled: recursive types (JSONSchemaProps) refer to it.
    _structs[name] = shape
    cls = _model(name)
    for attr, typ in cls.openapi_types.items():
        json_name = cls.attribute_map[attr]
        shape.fields[json_name] = _type_shape(typ, name, json_name)
    return shape


def _kind_shape(group: str, version: str, kind: str) -> _Struct | None:
    key = (group, version, kind)
    try:
        return _kinds[key]
    except KeyError:
        pass
    name = _model_class_name(group, version, kind)
    shape = _struct_shape(name) if name is not None else None
    _kinds[key] = shape
    return shape


@dataclass
class UnknownFields:
    """The fields of an object its kind does not declare, found by :func:`find_unknown`.

    Attributes:
        paths: Each field's path (``spec.bogus``,
            ``spec.template.spec.containers[0].bogus``) in the order of a depth-first walk
            of the object, as kube-apiserver's strict decoding reports them (at most 100;
            fields under JSONSchemaProps' non-strict values are dropped unreported).
    """

    paths: list[str]
    _where: list[tuple[dict[str, Any], str]] = field(default_factory=list, repr=False)

    def drop(self) -> None:
        """Remove the fields from the object, as decoding into the Go struct does."""
        for parent, key in self._where:
            parent.pop(key, None)


def find_unknown(group: str, version: str, kind: str, obj: dict[str, Any]) -> UnknownFields | None:
    """Find the fields of a built-in object that its Go type does not declare.

    The kind's shape is built on first use and kept; the walk visits only the objects and
    lists of ``obj``.

    Args:
        group: The kind's API group ("" for core).
        version: The version the object is written in.
        kind: The kind.
        obj: The decoded object (not modified).

    Returns:
        The unknown fields (possibly none), or None when the kind has no known Go type.
    """
    shape = _kind_shape(group, version, kind)
    if shape is None:
        return None
    found: _Found = []
    # A first walk without paths: objects seldom have unknown fields, and paths cost.
    shape.walk(obj, None, found)
    if not found:
        return UnknownFields([])
    found = []
    shape.walk(obj, "", found)
    # The strict decoder keeps at most 100 errors.
    paths = [f[2] for f in found if f[2]][:_MAX_STRICT_ERRORS]
    return UnknownFields(paths, [(f[0], f[1]) for f in found])


def _json_value(value: Any) -> str:
    return orjson.dumps(value).decode()


def _item_element(node: _merge_keys.Node, item: Any, index: int) -> str:
    """structured-merge-diff's path element of a list item: by key, by value or by index."""
    if node.kind == _merge_keys.LIST and node.list_type == "map" and isinstance(item, dict):
        parts = []
        for key in sorted(node.keys):
            value = item.get(key, node.key_defaults.get(key))
            parts.append(f"{key}={_json_value(value)}")
        return "[" + ",".join(parts) + "]"
    if node.kind == _merge_keys.LIST and node.list_type == "set":
        return f"[={_json_value(item)}]"
    return f"[{index}]"


def _typed_errors(
    value: Any, shape: _Shape, node: _merge_keys.Node, path: str, errors: list[str]
) -> None:
    if isinstance(shape, _Struct):
        if type(value) is not dict:
            return
        for key, sub in value.items():
            child = shape.fields.get(key, _UNDECLARED)
            if child is _UNDECLARED:
                errors.append(f"{path}.{key}: field not declared in schema")
                # The validating walk stops at a map's first undeclared field.
                return
            if child is not None and (type(sub) is dict or type(sub) is list):
                sub_node = node.child(key) if node.kind == _merge_keys.STRUCT else node.elem
                _typed_errors(sub, child, sub_node, f"{path}.{key}", errors)
    elif isinstance(shape, _List):
        if type(value) is not list:
            return
        item_node = node.elem if node.kind == _merge_keys.LIST else _merge_keys.BUILTIN_ANY
        for i, sub in enumerate(value):
            if type(sub) is dict or type(sub) is list:
                element = _item_element(node, sub, i)
                _typed_errors(sub, shape.item, item_node, path + element, errors)
    elif isinstance(shape, _Map):
        if type(value) is not dict:
            return
        value_node = node.elem if node.kind == _merge_keys.MAP else _merge_keys.BUILTIN_ANY
        for key, sub in value.items():
            if type(sub) is dict or type(sub) is list:
                _typed_errors(sub, shape.value, value_node, f"{path}.{key}", errors)
    elif isinstance(shape, _OneOrMany):
        for i, sub in enumerate(value if type(value) is list else [value]):
            where = f"{path}[{i}]" if type(value) is list else path
            _typed_errors(sub, shape.item, _merge_keys.BUILTIN_ANY, where, errors)


def apply_errors(group: str, version: str, kind: str, obj: dict[str, Any]) -> list[str]:
    """The typed-conversion errors of a server-side apply patch's undeclared fields.

    Server-side apply converts the patch to the kind's typed value
    (structured-merge-diff), which rejects fields the type does not declare, naming
    them by structured-merge-diff's paths
    (``.spec.template.spec.containers[name="app"].bogus: field not declared in schema``);
    its walk stops at the first undeclared field of each object.

    Args:
        group: The kind's API group ("" for core).
        version: The version.
        kind: The kind.
        obj: The apply patch (not modified).

    Returns:
        One message per undeclared field found (none for kinds without a known type).
    """
    shape = _kind_shape(group, version, kind)
    if shape is None:
        return []
    errors: list[str] = []
    _typed_errors(obj, shape, _merge_keys.builtin_root(group, kind), "", errors)
    return errors


# --- OpenAPI definitions -----------------------------------------------------------------------


@dataclass
class _Catalog:
    """Definition names and merge extensions of every type the built-in kinds reach."""

    names: dict[str, str] = field(default_factory=dict)
    extensions: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    atomic: set[str] = field(default_factory=set)


_catalog: _Catalog | None = None
_definitions: dict[tuple[str, str, str, bool], dict[str, dict[str, Any]] | None] = {}


def _referenced(typ: str) -> str | None:
    container, inner = _split_type(typ)
    if container:
        return _referenced(inner)
    return None if inner in _SCALARS or inner == "object" else inner


def _definition_name(name: str, package: str) -> str:
    match = _VERSIONED_CLASS.fullmatch(name)
    if match is None:
        return f"{package}.{name}"
    go_name = match.group("name")
    prefix = match.group("prefix")
    version = name[len(prefix or "") :][: -len(go_name)].lower()
    if name in _META_CLASSES:
        return f"{_META}.{go_name}"
    if prefix:
        group = "" if prefix == "Core" else prefix.lower()
        if group == "apiextensions":
            group = "apiextensions.k8s.io"
        elif group == "apiregistration":
            group = "apiregistration.k8s.io"
        return f"{go_package(group, version)}.{go_name}"
    if name in _CORE_CLASSES:
        return f"{go_package('', version)}.{go_name}"
    return f"{package}.{go_name}"


def _merge_extensions(node: _merge_keys.Node) -> dict[str, Any]:
    """The OpenAPI extensions of a field whose merge semantics are ``node``."""
    out: dict[str, Any] = {}
    if node.kind == _merge_keys.LIST:
        out["x-kubernetes-list-type"] = node.list_type
        if node.list_type == "map":
            out["x-kubernetes-list-map-keys"] = list(node.keys)
    elif node.kind == _merge_keys.MAP and node.atomic:
        out["x-kubernetes-map-type"] = "atomic"
    if node.merge_key:
        out["x-kubernetes-patch-merge-key"] = node.merge_key
    if node.strategy:
        out["x-kubernetes-patch-strategy"] = node.strategy
    return out


def _annotate(
    catalog: _Catalog, name: str, node: _merge_keys.Node, seen: set[tuple[str, int]]
) -> None:
    """Record the merge extensions of class ``name``'s fields, walking `_merge_keys`' node."""
    if (name, id(node)) in seen:
        return
    seen.add((name, id(node)))
    if node.kind == _merge_keys.STRUCT and node.atomic:
        catalog.atomic.add(name)
    cls = _model(name)
    for attr, typ in cls.openapi_types.items():
        json_name = cls.attribute_map[attr]
        child = node.child(json_name) if node.kind == _merge_keys.STRUCT else node.elem
        extensions = _merge_extensions(child)
        if extensions:
            catalog.extensions.setdefault((name, json_name), extensions)
        ref = _referenced(typ)
        if ref is None:
            continue
        container, _ = _split_type(typ)
        if container == "list":
            child = child.elem if child.kind == _merge_keys.LIST else _merge_keys.BUILTIN_ANY
        elif container == "dict":
            child = child.elem if child.kind == _merge_keys.MAP else _merge_keys.BUILTIN_ANY
        elif child.kind not in (_merge_keys.STRUCT, _merge_keys.MAP):
            child = _merge_keys.BUILTIN_ANY
        _annotate(catalog, ref, child, seen)


def _build_catalog() -> _Catalog:
    catalog = _Catalog()
    seen: set[tuple[str, int]] = set()
    for rt in builtin_types():
        root = _model_class_name(rt.group, rt.version, rt.kind)
        if root is None:
            continue
        package = go_package(rt.group, rt.version)
        catalog.names.setdefault(root, f"{package}.{rt.kind}")
        pending = [root]
        while pending:
            name = pending.pop()
            cls = _model(name)
            for typ in cls.openapi_types.values():
                ref = _referenced(typ)
                if ref is not None and ref not in catalog.names:
                    catalog.names[ref] = _definition_name(ref, package)
                    pending.append(ref)
        _annotate(catalog, root, _merge_keys.builtin_root(rt.group, rt.kind), seen)
    return catalog


def _get_catalog() -> _Catalog:
    global _catalog  # noqa: PLW0603 - built once, on first use
    if _catalog is None:
        _catalog = _build_catalog()
    return _catalog


def _description(cls: Any, attr: str) -> str:
    prop = cls.__dict__.get(attr)
    doc = getattr(getattr(prop, "fget", None), "__doc__", None) or ""
    lines: list[str] = []
    for line in doc.splitlines()[1:]:
        text = line.strip().removesuffix("# noqa: E501").rstrip()
        if text.startswith((":return:", ":rtype:")):
            break
        lines.append(text)
    return "\n".join(lines).strip()


def _required(cls: Any, attr: str) -> bool:
    # The generated setter of a required field refuses None with this message.
    prop = cls.__dict__.get(attr)
    setter = getattr(prop, "fset", None)
    code = getattr(setter, "__code__", None)
    if code is None:
        return False
    marker = f"Invalid value for `{attr}`, must not be `None`"
    return any(isinstance(c, str) and c.startswith(marker) for c in code.co_consts)


class _Writer:
    """Renders the definitions of one dialect (Swagger 2.0 or OpenAPI 3.0)."""

    def __init__(self, catalog: _Catalog, *, v3: bool) -> None:
        self.catalog = catalog
        self.v3 = v3
        self.prefix = "#/components/schemas/" if v3 else "#/definitions/"
        self.out: dict[str, dict[str, Any]] = {}

    def ref(self, target: str, description: str) -> dict[str, Any]:
        result: dict[str, Any] = {"$ref": self.prefix + target}
        if description:
            result["description"] = description
        return result

    def value(self, typ: str, owner: str, json_name: str, description: str) -> dict[str, Any]:
        container, inner = _split_type(typ)
        if container:
            item = self.value(inner, owner, json_name, "")
            key = "items" if container == "list" else "additionalProperties"
            result: dict[str, Any] = {"type": "array" if container == "list" else "object"}
            if description:
                result["description"] = description
            result[key] = item
            return result
        if inner == "datetime":
            micro = (owner, json_name) in _MICRO_TIME_FIELDS
            target = MICRO_TIME if micro else _TIME
            self.extra(target)
            return self.ref(target, description)
        if inner == "object":
            if json_name in _INT_OR_STRING_FIELDS:
                self.extra(INT_OR_STRING)
                return self.ref(INT_OR_STRING, description)
            scalar: dict[str, Any] = {"type": "object"}
        elif inner in _SCALARS:
            kinds = {"str": "string", "int": "integer", "bool": "boolean", "float": "number"}
            scalar = {"type": kinds.get(inner, "string")}
            if inner == "float":
                scalar["format"] = "double"
        else:
            self.add(inner)
            return self.ref(self.catalog.names[inner], description)
        if description:
            scalar = {"description": description, **scalar}
        return scalar

    def extra(self, name: str) -> None:
        if name in self.out:
            return
        if name == INT_OR_STRING:
            definition: dict[str, Any] = {
                "description": "IntOrString is a type that can hold an int32 or a string. When "
                "used in JSON or YAML marshalling and unmarshalling, it produces or consumes "
                "the inner type.",
                "format": "int-or-string",
            }
            # As kube-openapi: a oneOf in OpenAPI 3.0, a string in Swagger 2.0.
            if self.v3:
                definition["oneOf"] = [{"type": "integer"}, {"type": "string"}]
            else:
                definition["type"] = "string"
            self.out[name] = definition
        elif name == MICRO_TIME:
            self.out[name] = {
                "description": "MicroTime is version of Time with microsecond level precision.",
                "type": "string",
                "format": "date-time",
            }

    def add(self, name: str) -> None:
        target = self.catalog.names[name]
        if target in self.out:
            return
        definition: dict[str, Any] = {"type": "object"}
        self.out[target] = definition
        cls = _model(name)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for attr, typ in sorted(cls.openapi_types.items(), key=lambda a: cls.attribute_map[a[0]]):
            json_name = cls.attribute_map[attr]
            schema = self.value(typ, name, json_name, _description(cls, attr))
            schema.update(self.catalog.extensions.get((name, json_name), {}))
            if self.v3 and "$ref" in schema and len(schema) > 1:
                # OpenAPI 3.0 ignores the siblings of a $ref: kube-openapi wraps it.
                schema = {"allOf": [{"$ref": schema.pop("$ref")}], **schema}
            properties[json_name] = schema
            if _required(cls, attr):
                required.append(json_name)
        definition["properties"] = properties
        if required:
            definition["required"] = required
        if name in self.catalog.atomic:
            definition["x-kubernetes-map-type"] = "atomic"


def openapi_definitions(
    group: str, version: str, kind: str, *, v3: bool
) -> dict[str, dict[str, Any]] | None:
    """The OpenAPI definitions of a built-in kind and of every type it refers to.

    The kind's own definition is named ``go_package(group, version) + "." + kind``; the
    others after their Go packages (``io.k8s.api.core.v1.Container``,
    ``io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta``). Field descriptions come from the
    models' docstrings; list and map fields carry ``x-kubernetes-list-type``,
    ``x-kubernetes-list-map-keys``, ``x-kubernetes-patch-merge-key`` and
    ``x-kubernetes-patch-strategy`` as kube-apiserver publishes them. Computed once per
    kind and dialect; callers must not modify the result.

    Args:
        group: The API group ("" for core).
        version: The version.
        kind: The kind.
        v3: OpenAPI 3.0 (references under ``#/components/schemas/``, wrapped in
            ``allOf`` when the field has a description) rather than Swagger 2.0.

    Returns:
        Definitions by name, or None when the kind has no known Go type.
    """
    key = (group, version, kind, v3)
    if key in _definitions:
        return _definitions[key]
    name = _model_class_name(group, version, kind)
    result: dict[str, dict[str, Any]] | None = None
    if name is not None:
        writer = _Writer(_get_catalog(), v3=v3)
        writer.add(name)
        result = writer.out
    _definitions[key] = result
    return result
