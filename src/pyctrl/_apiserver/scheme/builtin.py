"""The schemas of built-in kinds, derived from kubernetes_asyncio's generated models.

kube-apiserver decodes a built-in object into its Go struct: a field the struct does not
declare is dropped and reported as an unknown field (a ``Warning`` header, or a 400 with
``fieldValidation=Strict``), and a value of the wrong JSON type fails the request (``json:
cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32``).
It publishes the same structs in its OpenAPI documents, which ``kubectl explain`` renders
and kubectl reads to compute strategic merge patches (``x-kubernetes-patch-merge-key``,
``x-kubernetes-patch-strategy``).

kubernetes_asyncio's model classes are generated from kube-apiserver's OpenAPI document:
each has ``openapi_types`` (attribute -> type: ``V1ObjectMeta``, ``list[V1Container]``,
``dict(str, str)``, ``int``, ``datetime``, ``object``) and ``attribute_map`` (attribute
-> JSON name), and its property docstrings carry the field descriptions. From them (and
small tables of what they do not tell: int64 integers, quantities, byte strings) this
module builds, once per kind and on first use:

* a tree of shapes that :func:`decode` walks to find (and drop) the fields an object has
  and its Go type does not, and the values Go's decoder would refuse; server-side apply's
  typed conversion walks the same tree (:func:`apply_errors`);
* OpenAPI definitions named after the Go types (:func:`openapi_definitions`), carrying the
  list and patch extensions of `_merge_keys`' tables.

``object`` attributes are IntOrString values (ports, ``maxSurge``...) or free-form JSON
(``RawExtension``, ``FieldsV1``, the values of a CRD's JSONSchemaProps): IntOrString takes
an int32 or a string, the others are kept as sent, except the nested schemas of
JSONSchemaProps (``items``, ``additionalProperties``...), which are schemas again (their
unknown fields are dropped, their types not checked). ``null`` fits any field, as Go
leaves the zero value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final

import orjson
from kubernetes_asyncio.client import models as _models

from pyctrl._apimachinery import merge_keys as _merge_keys
from pyctrl._apimachinery.gofmt import go_print, go_sharp, go_type
from pyctrl._apiserver.scheme.resources import builtin_types

__all__ = [
    "INT_OR_STRING",
    "MICRO_TIME",
    "Decoded",
    "apply_errors",
    "decode",
    "go_package",
    "has_go_type",
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


# --- shapes: what a decode into the Go struct keeps and accepts --------------------------------

# Fields whose Go type the models do not tell apart, from kube-apiserver's OpenAPI document
# (1.36): integers of format int64 (every other integer is an int32), resource.Quantity
# values (``str`` in the models) and []byte values (base64 strings), by model class and JSON
# name; a list or map field lists the type of its items.
_INT64_FIELDS: Final[dict[str, frozenset[str]]] = {
    "V1Condition": frozenset({"observedGeneration"}),
    "V1ContainerImage": frozenset({"sizeBytes"}),
    "V1ControllerRevision": frozenset({"revision"}),
    "V1CronJobSpec": frozenset({"startingDeadlineSeconds"}),
    "V1CustomResourceDefinitionCondition": frozenset({"observedGeneration"}),
    "V1CustomResourceDefinitionStatus": frozenset({"observedGeneration"}),
    "V1DaemonSetStatus": frozenset({"observedGeneration"}),
    "V1DeploymentStatus": frozenset({"observedGeneration"}),
    "V1JSONSchemaProps": frozenset(
        {"maxItems", "maxLength", "maxProperties", "minItems", "minLength", "minProperties"}
    ),
    "V1JobSpec": frozenset({"activeDeadlineSeconds"}),
    "V1LinuxContainerUser": frozenset({"gid", "supplementalGroups", "uid"}),
    "V1NodeSwapStatus": frozenset({"capacity"}),
    "V1ObjectMeta": frozenset({"deletionGracePeriodSeconds", "generation"}),
    "V1PodCondition": frozenset({"observedGeneration"}),
    "V1PodDisruptionBudgetStatus": frozenset({"observedGeneration"}),
    "V1PodSecurityContext": frozenset({"fsGroup", "runAsGroup", "runAsUser", "supplementalGroups"}),
    "V1PodSpec": frozenset({"activeDeadlineSeconds", "terminationGracePeriodSeconds"}),
    "V1PodStatus": frozenset({"observedGeneration"}),
    "V1Probe": frozenset({"terminationGracePeriodSeconds"}),
    "V1ReplicaSetStatus": frozenset({"observedGeneration"}),
    "V1ReplicationControllerStatus": frozenset({"observedGeneration"}),
    "V1SecurityContext": frozenset({"runAsGroup", "runAsUser"}),
    "V1ServiceAccountTokenProjection": frozenset({"expirationSeconds"}),
    "V1SleepAction": frozenset({"seconds"}),
    "V1StatefulSetStatus": frozenset({"observedGeneration"}),
    "V1Toleration": frozenset({"tolerationSeconds"}),
    "V2HorizontalPodAutoscalerStatus": frozenset({"observedGeneration"}),
}
_QUANTITY_FIELDS: Final[dict[str, frozenset[str]]] = {
    "V1ContainerStatus": frozenset({"allocatedResources"}),
    "V1EmptyDirVolumeSource": frozenset({"sizeLimit"}),
    "V1LimitRangeItem": frozenset(
        {"default", "defaultRequest", "max", "maxLimitRequestRatio", "min"}
    ),
    "V1NodeAllocatableResourceClaimStatus": frozenset({"resources"}),
    "V1NodeStatus": frozenset({"allocatable", "capacity"}),
    "V1PersistentVolumeClaimStatus": frozenset({"allocatedResources", "capacity"}),
    "V1PersistentVolumeSpec": frozenset({"capacity"}),
    "V1PodSpec": frozenset({"overhead"}),
    "V1PodStatus": frozenset({"allocatedResources"}),
    "V1ResourceFieldSelector": frozenset({"divisor"}),
    "V1ResourceQuotaSpec": frozenset({"hard"}),
    "V1ResourceQuotaStatus": frozenset({"hard", "used"}),
    "V1ResourceRequirements": frozenset({"limits", "requests"}),
    "V1VolumeResourceRequirements": frozenset({"limits", "requests"}),
    "V2HPAScalingRules": frozenset({"tolerance"}),
    "V2MetricTarget": frozenset({"averageValue", "value"}),
    "V2MetricValueStatus": frozenset({"averageValue", "value"}),
}
_BYTES_FIELDS: Final[dict[str, frozenset[str]]] = {
    "AdmissionregistrationV1WebhookClientConfig": frozenset({"caBundle"}),
    "ApiextensionsV1WebhookClientConfig": frozenset({"caBundle"}),
    "V1ConfigMap": frozenset({"binaryData"}),
    "V1Secret": frozenset({"data"}),
}

# The Python types a shape accepts without a look (its ``ok``). None is in none of them
# but a Time's: a null struct field is dropped (Go leaves the zero value, which its
# ``omitempty`` fields do not encode), except a Time (whose zero value Go encodes as null);
# null items and map values are kept.
_NO_TYPES: Final[frozenset[type]] = frozenset()
_SCALAR_TYPES: Final = frozenset({str, int, float, bool})
_ALL_TYPES: Final = frozenset({dict, list, str, int, float, bool})
_INT32_RANGE: Final = range(-(2**31), 2**31)
_INT64_RANGE: Final = range(-(2**63), 2**63)
_QUANTITY_FORMAT: Final = re.compile(r"[+-]?[0-9]*(?:\.[0-9]*)?[eEinumkKMGTP]*[+-]?[0-9]*")
_QUANTITY_SUFFIXES: Final = frozenset(
    {"", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
)
_DECIMAL_EXPONENT: Final = re.compile(r"[eE][+-]?[0-9]+")
_ERR_QUANTITY_FORMAT: Final = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
_ERR_QUANTITY_SUFFIX: Final = "unable to parse quantity's suffix"

_Found = list[tuple[dict[str, Any], str, str]]


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _json_kind(value: Any) -> str:
    """The kind of a JSON value as Go's decoder names it in an UnmarshalTypeError."""
    t = type(value)
    if t is str:
        return "string"
    if t is bool:
        return "bool"
    if t is dict:
        return "object"
    if t is list:
        return "array"
    return "number"


def _go_number(value: int | float) -> str:
    """A JSON number as its literal (Go names the literal of a number it cannot store)."""
    return str(value) if type(value) is int else repr(value)


_quantity_problems: dict[str, str] = {}


def _quantity_problem(text: str) -> str:
    """``resource.ParseQuantity``'s error for ``text`` (whitespace trimmed), or ''.

    Objects repeat the same few quantities: answers are kept (up to 4096 texts).
    """
    problem = _quantity_problems.get(text)
    if problem is None:
        problem = _parse_quantity_problem(text)
        if len(_quantity_problems) < 4096:
            _quantity_problems[text] = problem
    return problem


def _parse_quantity_problem(text: str) -> str:
    text = text.strip()
    if not text:
        return _ERR_QUANTITY_FORMAT
    if text == "0":
        return ""
    if _QUANTITY_FORMAT.fullmatch(text) is None:
        return _ERR_QUANTITY_FORMAT
    number = re.match(r"[+-]?[0-9]*(?:\.[0-9]*)?", text)
    assert number is not None
    suffix = text[number.end() :]
    if suffix in _QUANTITY_SUFFIXES or _DECIMAL_EXPONENT.fullmatch(suffix):
        return ""
    return _ERR_QUANTITY_SUFFIX


@dataclass(slots=True)
class _TypeError:
    """A value decoding cannot store: where it is, and how each decoder reports it.

    ``fatal`` is the error of a type's own unmarshaler (IntOrString, Time, Quantity), which
    ends decoding at once and names no field; other mismatches are UnmarshalTypeErrors,
    of which Go's decoder reports the first. ``json_only``: the unstructured converter
    (strategic merge patches) accepts the value (a whole float or an overflowing integer).
    """

    shape: _Scalar | _Struct | _List | _Map
    value: Any
    struct: str
    field: str
    fatal: str = ""
    json_only: bool = False


class _Scalar:
    """A JSON scalar of one Go type; ``ok`` are the Python types accepted without a look."""

    __slots__ = ("go_type", "kind", "ok")

    def __init__(self, kind: str, go_type: str, ok: frozenset[type]) -> None:
        self.kind = kind
        self.go_type = go_type
        self.ok = ok

    def problem(self, value: Any) -> _TypeError | None:  # noqa: PLR0911 - one return per declared type of a built-in field
        """Why ``value`` (of a type not in ``ok``) cannot be stored, or None."""
        if value is None:
            return None
        kind = self.kind
        t = type(value)
        if kind in ("int32", "int64"):
            if t is int:
                if value in (_INT32_RANGE if kind == "int32" else _INT64_RANGE):
                    return None
                return _TypeError(self, value, "", "", json_only=True)
            if t is float:
                return _TypeError(self, value, "", "", json_only=value.is_integer())
        elif kind == "intstr":
            if t is int and value in _INT32_RANGE:
                return None
            what = _json_kind(value)
            if t is int or t is float:
                what = f"number {_go_number(value)}"
            fatal = f"json: cannot unmarshal {what} into Go value of type int32"
            return _TypeError(
                self, value, "", "", fatal, json_only=t is float and value.is_integer()
            )
        elif kind == "quantity":
            problem = _quantity_problem(value) if t is str else _ERR_QUANTITY_FORMAT
            return _TypeError(self, value, "", "", problem) if problem else None
        elif kind == "time":
            fatal = f"json: cannot unmarshal {_json_kind(value)} into Go value of type string"
            return _TypeError(self, value, "", "", fatal)
        return _TypeError(self, value, "", "")

    def scan(self, value: Any, found: _Found) -> bool:
        if type(value) is str and self.kind == "quantity":
            return bool(_quantity_problem(value))
        return self.problem(value) is not None

    def detail(self, value: Any, path: str, field: str, struct: str, w: _Walk) -> None:
        error = self.problem(value)
        if error is not None:
            error.struct = struct
            error.field = field
            w.errors.append(error)


class _Struct:
    """A Go struct: its fields by JSON name, each with the shape of its value."""

    __slots__ = ("accept", "fields", "go_name", "go_type")

    ok: Final = _NO_TYPES

    def __init__(self, go_name: str = "", go_type: str = "") -> None:
        self.fields: dict[str, _Shape] = {}
        # Each field's ``ok``: the walk's one lookup for a value of the right type.
        self.accept: dict[str, frozenset[type]] = {}
        self.go_name = go_name
        self.go_type = go_type

    def scan(self, value: Any, found: _Found) -> bool:
        """Collect the undeclared fields of ``value``; true when a value has a wrong type."""
        if type(value) is not dict:
            return value is not None
        accept = self.accept
        bad = False
        for key, sub in value.items():
            ok = accept.get(key)
            if ok is None:
                found.append((value, key, ""))
            elif type(sub) not in ok:
                if sub is None:
                    # Dropped unsaid: `detail` tells it from an undeclared field.
                    found.append((value, key, ""))
                    continue
                # Integers are checked here: a call for each would double the walk's cost.
                if type(sub) is int and (
                    (ok is _INT32_OK and -0x80000000 <= sub <= 0x7FFFFFFF)
                    or (ok is _INT64_OK and -0x8000000000000000 <= sub <= 0x7FFFFFFFFFFFFFFF)
                ):
                    continue
                if self.fields[key].scan(sub, found):
                    bad = True
        return bad

    def detail(self, value: Any, path: str, field: str, struct: str, w: _Walk) -> None:
        """As `scan`, naming each undeclared field and each value of a wrong type."""
        if type(value) is not dict:
            if value is not None:
                w.errors.append(_TypeError(self, value, struct, field))
            return
        fields = self.fields
        name = self.go_name
        for key, sub in value.items():
            shape = fields.get(key)
            if shape is None:
                w.found.append((value, key, _join(path, key)))
            elif type(sub) not in shape.ok:
                if sub is None:
                    w.found.append((value, key, ""))
                    continue
                shape.detail(sub, _join(path, key), _join(field, key), name, w)


class _List:
    __slots__ = ("go_type", "item")

    ok: Final = _NO_TYPES

    def __init__(self, item: _Shape) -> None:
        self.item = item
        self.go_type: str = "[]" + item.go_type

    def scan(self, value: Any, found: _Found) -> bool:
        if type(value) is not list:
            return value is not None
        item = self.item
        ok = item.ok
        bad = False
        for sub in value:
            if type(sub) not in ok and item.scan(sub, found):
                bad = True
        return bad

    def detail(self, value: Any, path: str, field: str, struct: str, w: _Walk) -> None:
        if type(value) is not list:
            if value is not None:
                w.errors.append(_TypeError(self, value, struct, field))
            return
        item = self.item
        for i, sub in enumerate(value):
            if type(sub) not in item.ok:
                item.detail(sub, f"{path}[{i}]", field, struct, w)


class _Map:
    __slots__ = ("go_type", "value")

    ok: Final = _NO_TYPES

    def __init__(self, value: _Shape) -> None:
        self.value = value
        # The maps of quantities are core/v1's ResourceList.
        quantities = value is _QUANTITY
        self.go_type: str = "v1.ResourceList" if quantities else "map[string]" + value.go_type

    def scan(self, value: Any, found: _Found) -> bool:
        if type(value) is not dict:
            return value is not None
        shape = self.value
        ok = shape.ok
        bad = False
        for sub in value.values():
            if type(sub) not in ok and shape.scan(sub, found):
                bad = True
        return bad

    def detail(self, value: Any, path: str, field: str, struct: str, w: _Walk) -> None:
        if type(value) is not dict:
            if value is not None:
                w.errors.append(_TypeError(self, value, struct, field))
            return
        shape = self.value
        for key, sub in value.items():
            if type(sub) not in shape.ok:
                shape.detail(sub, _join(path, key), field, struct, w)


class _OneOrMany:
    """JSONSchemaPropsOrArray: one schema, or a list of schemas."""

    __slots__ = ("item",)

    ok: Final = _SCALAR_TYPES
    go_type: Final = "v1.JSONSchemaPropsOrArray"

    def __init__(self, item: _Struct) -> None:
        self.item = item

    def scan(self, value: Any, found: _Found) -> bool:
        for sub in value if type(value) is list else (value,):
            if type(sub) is dict:
                self.item.scan(sub, found)
        return False

    def detail(self, value: Any, path: str, field: str, struct: str, w: _Walk) -> None:
        self.scan(value, w.found)


class _Silent:
    """A value Go decodes with a custom, non-strict unmarshaler: unknown fields dropped unsaid.

    JSONSchemaProps' ``items``, ``additionalProperties``, ``additionalItems`` and
    ``dependencies`` are such values; their content is not type-checked.
    """

    __slots__ = ("go_type", "shape")

    ok: Final = _SCALAR_TYPES

    def __init__(self, shape: _Struct | _OneOrMany, go_type: str) -> None:
        self.shape = shape
        self.go_type = go_type

    def scan(self, value: Any, found: _Found) -> bool:
        self.shape.scan(value, found)
        return False

    def detail(self, value: Any, path: str, field: str, struct: str, w: _Walk) -> None:
        self.shape.scan(value, w.found)


class _Any:
    """A free-form value (RawExtension, FieldsV1, JSON): anything is kept as sent."""

    __slots__ = ()

    ok: Final = _ALL_TYPES
    go_type: Final = ""

    def scan(self, value: Any, found: _Found) -> bool:
        return False

    def detail(self, value: Any, path: str, field: str, struct: str, w: _Walk) -> None:
        pass


_Shape = _Scalar | _Struct | _List | _Map | _OneOrMany | _Silent | _Any


class _Ints(frozenset[type]):
    """The ``ok`` of an integer field: empty, and told apart by identity (`_Struct.scan`)."""


_INT32_OK: Final = _Ints()
_INT64_OK: Final = _Ints()

_STRING: Final = _Scalar("string", "string", frozenset({str}))
_BYTES: Final = _Scalar("bytes", "[]uint8", frozenset({str, list}))
_INT32: Final = _Scalar("int32", "int32", _INT32_OK)
_INT64: Final = _Scalar("int64", "int64", _INT64_OK)
_BOOL: Final = _Scalar("bool", "bool", frozenset({bool}))
_FLOAT64: Final = _Scalar("float64", "float64", frozenset({int, float}))
_DATE_TIME: Final = _Scalar("time", "v1.Time", frozenset({str, type(None)}))
_QUANTITY: Final = _Scalar("quantity", "resource.Quantity", frozenset({int, float}))
_INTSTR: Final = _Scalar("intstr", "intstr.IntOrString", frozenset({str}))
_ANY: Final = _Any()


class _Walk:
    """What a detailed walk found: undeclared fields and values of a wrong type."""

    __slots__ = ("errors", "found")

    def __init__(self) -> None:
        self.found: _Found = []
        self.errors: list[_TypeError] = []


_structs: dict[str, _Struct] = {}
_kinds: dict[tuple[str, str, str], _Struct | None] = {}


def _go_names(name: str) -> tuple[str, str]:
    """(Go type name, Go type as ``%v`` prints it) of a model class: ``v1.DeploymentSpec``."""
    match = _VERSIONED_CLASS.fullmatch(name)
    if match is None:
        return name, name
    go_name = match.group("name")
    prefix = match.group("prefix") or ""
    version = name[len(prefix) : len(name) - len(go_name)].lower()
    return go_name, f"{version}.{go_name}"


def _object_shape(owner: str, json_name: str) -> _Shape:
    """The shape of an ``object`` attribute: IntOrString, nested schemas, or free-form."""
    if owner == "V1JSONSchemaProps":
        if json_name == "items":
            return _Silent(
                _OneOrMany(_struct_shape("V1JSONSchemaProps")), "v1.JSONSchemaPropsOrArray"
            )
        if json_name in ("additionalProperties", "additionalItems"):
            # JSONSchemaPropsOrBool: a bool is kept as is.
            return _Silent(_struct_shape("V1JSONSchemaProps"), "v1.JSONSchemaPropsOrBool")
        if json_name == "dependencies":
            # JSONSchemaPropsOrStringArray: a list of strings is kept as is.
            return _Silent(_struct_shape("V1JSONSchemaProps"), "v1.JSONSchemaPropsOrStringArray")
    if (owner, json_name) == ("V1CustomResourceSubresources", "status"):
        # CustomResourceSubresourceStatus has no fields.
        return _Struct("CustomResourceSubresourceStatus", "v1.CustomResourceSubresourceStatus")
    if json_name in _INT_OR_STRING_FIELDS:
        return _INTSTR
    return _ANY


def _scalar_shape(typ: str, owner: str, json_name: str) -> _Shape:  # noqa: PLR0911 - one return per OpenAPI scalar type
    if typ == "str":
        if json_name in _QUANTITY_FIELDS.get(owner, ()):
            return _QUANTITY
        if json_name in _BYTES_FIELDS.get(owner, ()):
            return _BYTES
        return _STRING
    if typ == "int":
        return _INT64 if json_name in _INT64_FIELDS.get(owner, ()) else _INT32
    if typ == "bool":
        return _BOOL
    if typ == "float":
        return _FLOAT64
    return _DATE_TIME  # datetime, date


def _type_shape(typ: str, owner: str, json_name: str) -> _Shape:
    container, inner = _split_type(typ)
    if container:
        shape = _type_shape(inner, owner, json_name)
        if shape is _ANY:
            return _ANY
        return _List(shape) if container == "list" else _Map(shape)
    if inner in _SCALARS:
        return _scalar_shape(inner, owner, json_name)
    if inner == "object":
        return _object_shape(owner, json_name)
    return _struct_shape(inner)


def _struct_shape(name: str) -> _Struct:
    shape = _structs.get(name)
    if shape is not None:
        return shape
    shape = _Struct(*_go_names(name))
    # Registered before its fields are filled: recursive types (JSONSchemaProps) refer to it.
    _structs[name] = shape
    cls = _model(name)
    for attr, typ in cls.openapi_types.items():
        json_name = cls.attribute_map[attr]
        field_shape = _type_shape(typ, name, json_name)
        shape.fields[json_name] = field_shape
        shape.accept[json_name] = field_shape.ok
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


def has_go_type(group: str, version: str, kind: str) -> bool:
    """Whether a built-in kind has a known Go type (so is decoded by :func:`decode`).

    Args:
        group: The kind's API group ("" for core).
        version: The version.
        kind: The kind.

    Returns:
        True when :func:`decode` checks objects of the kind.
    """
    return _kind_shape(group, version, kind) is not None


def _unstructured_kind(value: Any) -> str:
    """The Go kind of an unstructured value, as the unstructured converter names it."""
    t = type(value)
    if t is str:
        return "string"
    if t is bool:
        return "bool"
    if t is int:
        return "int64"
    if t is float:
        return "float64"
    return "slice" if t is list else "map"


def _converter_message(error: _TypeError) -> str:  # noqa: PLR0911 - one message per kind of decoding error, as the converter words them
    """The unstructured converter's error (``runtime.DefaultUnstructuredConverter``)."""
    if error.fatal:
        return error.fatal
    shape = error.shape
    source = _unstructured_kind(error.value)
    if isinstance(shape, _Struct):
        return f"cannot restore struct from: {source}"
    if isinstance(shape, _Map):
        return f"cannot restore map from {source}"
    if isinstance(shape, _List) or shape.kind == "bytes":
        return f"cannot restore slice from {source}"
    target = shape.go_type
    if source == "float64" and target in ("int32", "int64"):
        return f"cannot convert float64 to {target}"
    if source == "int64" and target == "string":
        return "cannot convert int64 to string"
    return f"unrecognized type: {target}"


@dataclass
class Decoded:
    """What decoding a built-in object into its Go struct finds, by :func:`decode`.

    Attributes:
        paths: The fields the Go type does not declare (``spec.bogus``,
            ``spec.template.spec.containers[0].bogus``) in the order of a depth-first walk
            of the object, as kube-apiserver's strict decoding reports them (at most 100;
            fields under JSONSchemaProps' non-strict values are dropped unreported, as are
            null fields).
    """

    paths: list[str]
    _where: list[tuple[dict[str, Any], str]] = field(default_factory=list, repr=False)
    _errors: list[_TypeError] = field(default_factory=list, repr=False)

    def drop(self) -> None:
        """Remove the undeclared and the null fields, as decoding into the Go struct does."""
        for parent, key in self._where:
            parent.pop(key, None)

    def type_error(self, *, unstructured: bool = False) -> str:
        """The decoding error of a value of the wrong type, or '' when every value fits.

        Args:
            unstructured: Report it as the unstructured converter does (strategic merge
                patches convert the patched map to the Go struct), rather than as Go's
                JSON decoder does (request bodies, JSON and merge patches).

        Returns:
            E.g. ``json: cannot unmarshal string into Go struct field
            DeploymentSpec.spec.replicas of type int32``: the JSON decoder reports the
            error of a type's own unmarshaler (``json: cannot unmarshal bool into Go value
            of type int32`` for an IntOrString) if there is one, else its first type
            error; the converter reports the first error it meets (``unrecognized type:
            int32``).
        """
        errors = self._errors
        if not errors:
            return ""
        if unstructured:
            for error in errors:
                if not error.json_only:
                    return _converter_message(error)
            return ""
        for error in errors:
            if error.fatal:
                return error.fatal
        error = errors[0]
        what = _json_kind(error.value)
        if what == "number" and error.shape.go_type in ("int32", "int64"):
            what = f"number {_go_number(error.value)}"
        return (
            f"json: cannot unmarshal {what} into Go struct field {error.struct}.{error.field} "
            f"of type {error.shape.go_type}"
        )


def decode(group: str, version: str, kind: str, obj: dict[str, Any]) -> Decoded | None:
    """Check a built-in object against its Go type, as decoding it into the Go struct does.

    Finds the fields the type does not declare and the values of a wrong JSON type (a
    string where an int32 is declared, a number in a map of strings, a bool for an
    IntOrString). The kind's shape is built on first use and kept; the walk visits the
    objects and lists of ``obj`` and looks at a scalar only when its Python type is not one
    its field accepts outright.

    Args:
        group: The kind's API group ("" for core).
        version: The version the object is written in.
        kind: The kind.
        obj: The decoded object (not modified).

    Returns:
        What decoding finds (possibly nothing), or None when the kind has no known Go type.
    """
    shape = _kind_shape(group, version, kind)
    if shape is None:
        return None
    found: _Found = []
    # A first walk without paths: objects seldom have unknown fields or wrong types, and
    # paths cost.
    bad = shape.scan(obj, found)
    if not found and not bad:
        return Decoded([])
    walk = _Walk()
    shape.detail(obj, "", "", shape.go_name, walk)
    # The strict decoder keeps at most 100 errors.
    paths = [f[2] for f in walk.found if f[2]][:_MAX_STRICT_ERRORS]
    return Decoded(paths, [(f[0], f[1]) for f in walk.found], walk.errors)


# --- server-side apply: the typed conversion of structured-merge-diff --------------------------


def _json_value(value: Any) -> str:
    return orjson.dumps(value).decode()


def _smd_scalar_error(shape: _Scalar, value: Any) -> str:
    """structured-merge-diff's validation error of a scalar field's value, or ''."""
    t = type(value)
    kind = shape.kind
    if kind in ("string", "bytes"):
        if t is not str:
            return f"expected string, got &value.valueUnstructured{{Value:{go_sharp(value)}}}"
    elif kind in ("int32", "int64", "float64"):
        if t is not int and t is not float:
            return f"expected numeric (int or float), got {go_type(value)}"
    elif kind == "bool":
        if t is not bool:
            return f"expected boolean, got &{{{go_print(value)}}}"
    elif t is dict or t is list:
        # IntOrString, Quantity, Time: "untyped" scalars.
        return f"expected any scalar, got &{{{go_print(value)}}}"
    return ""


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


def _list_item_error(node: _merge_keys.Node, item: Any, index: int) -> str:
    """Why structured-merge-diff's walk of a list ends at ``item``, or ''.

    An associative list cannot index an item that is not a map (with keys) or that is a
    map, a list or null (without keys, a set).
    """
    if node.kind != _merge_keys.LIST:
        return ""
    if node.list_type == "map" and type(item) is not dict:
        what = "a null element" if item is None else "non-map elements"
        return f"element {index}: associative list with keys may not have {what}"
    problem = _set_item_error(item) if node.list_type == "set" else ""
    return f"element {index}: {problem}" if problem else ""


def _set_item_error(item: Any) -> str:
    """Why an item cannot be in a set (an associative list without keys), or ''."""
    if type(item) is dict:
        return "associative list without keys has an element that's a map type"
    if type(item) is list:
        return "not supported: associative list with lists as elements"
    if item is None:
        return "associative list without keys has an element that's an explicit null"
    return ""


def _typed_errors(  # noqa: PLR0912 - the typed decoding walk, one branch per field shape
    value: Any, shape: _Shape, node: _merge_keys.Node, path: str, errors: list[str]
) -> None:
    if value is None:
        return
    if isinstance(shape, _Scalar):
        message = _smd_scalar_error(shape, value)
        if message:
            errors.append(f"{path}: {message}")
    elif isinstance(shape, _Struct):
        if type(value) is not dict:
            errors.append(f"{path}: expected map, got &{{{go_print(value)}}}")
            return
        for key, sub in value.items():
            child = shape.fields.get(key)
            if child is None:
                errors.append(f"{path}.{key}: field not declared in schema")
                # The validating walk stops at a map's first undeclared field.
                return
            if type(sub) in child.ok and child is not _BYTES:
                continue
            sub_node = node.child(key) if node.kind == _merge_keys.STRUCT else node.elem
            _typed_errors(sub, child, sub_node, f"{path}.{key}", errors)
    elif isinstance(shape, _List):
        if type(value) is not list:
            errors.append(f"{path}: expected list, got &{{{go_print(value)}}}")
            return
        item = shape.item
        item_node = node.elem if node.kind == _merge_keys.LIST else _merge_keys.BUILTIN_ANY
        for i, sub in enumerate(value):
            problem = _list_item_error(node, sub, i)
            if problem:
                errors.append(f"{path}: {problem}")
                return
            if type(sub) in item.ok and item is not _BYTES:
                continue
            _typed_errors(sub, item, item_node, path + _item_element(node, sub, i), errors)
    elif isinstance(shape, _Map):
        if type(value) is not dict:
            errors.append(f"{path}: expected map, got &{{{go_print(value)}}}")
            return
        value_node = node.elem if node.kind == _merge_keys.MAP else _merge_keys.BUILTIN_ANY
        child = shape.value
        for key, sub in value.items():
            if type(sub) in child.ok and child is not _BYTES:
                continue
            _typed_errors(sub, child, value_node, f"{path}.{key}", errors)
    # JSONSchemaProps' nested schemas and free-form values are deduced: anything goes.


def apply_errors(group: str, version: str, kind: str, obj: dict[str, Any]) -> list[str]:
    """The typed-conversion errors of a server-side apply patch.

    Server-side apply converts the patch to the kind's typed value
    (structured-merge-diff), which rejects fields the type does not declare and values of
    the wrong JSON type, naming them by structured-merge-diff's paths
    (``.spec.template.spec.containers[name="app"].bogus: field not declared in schema``,
    ``.spec.replicas: expected numeric (int or float), got string``); its walk stops at
    the first undeclared field of each object.

    Args:
        group: The kind's API group ("" for core).
        version: The version.
        kind: The kind.
        obj: The apply patch (not modified).

    Returns:
        One message per problem found (none for kinds without a known type).
    """
    shape = _kind_shape(group, version, kind)
    if shape is None:
        return []
    errors: list[str] = []
    _typed_errors(obj, shape, _merge_keys.builtin_root(group, kind), "", errors)
    return errors


def custom_resource_apply_errors(schema: dict[str, Any], obj: dict[str, Any]) -> list[str]:
    """The typed-conversion errors of a custom resource's server-side apply patch.

    As for built-in kinds (`apply_errors`), structured-merge-diff converts the patch to
    the type built from the CRD version's structural schema: a field the schema does not
    declare (outside ``x-kubernetes-preserve-unknown-fields``) ends the walk of its
    object, a value of the wrong JSON type is named, and list items are named by their
    keys (``.spec.ports[name="http"].bogus``). ``apiVersion``, ``kind`` and ``metadata``
    of the root are the standard fields and are not checked here.

    Args:
        schema: The version's ``openAPIV3Schema``.
        obj: The apply patch (not modified).

    Returns:
        One message per problem found, in the order of the walk.
    """
    errors: list[str] = []
    rest = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    _schema_errors(rest, schema, _merge_keys.schema_root(schema), "", errors)
    return errors


_SCHEMA_SCALARS: Final[dict[str, _Scalar]] = {
    "integer": _FLOAT64,
    "number": _FLOAT64,
    "string": _STRING,
    "boolean": _BOOL,
}
"""structured-merge-diff's scalar of each JSON schema type: numeric, string, boolean."""


def _schema_errors(  # noqa: PLR0911, PLR0912 - the apply schema walk, one branch per node kind
    value: Any, schema: Any, node: _merge_keys.Node, path: str, errors: list[str]
) -> None:
    if value is None or not isinstance(schema, dict):
        return
    typ = schema.get("type")
    if schema.get("x-kubernetes-int-or-string") is True:
        scalar: _Scalar | None = _INTSTR
    else:
        scalar = _SCHEMA_SCALARS.get(typ) if isinstance(typ, str) else None
    if scalar is not None:
        message = _smd_scalar_error(scalar, value)
        if message:
            errors.append(f"{path}: {message}")
        return
    if typ == "array":
        if type(value) is not list:
            errors.append(f"{path}: expected list, got &{{{go_print(value)}}}")
            return
        for i, sub in enumerate(value):
            problem = _list_item_error(node, sub, i)
            if problem:
                errors.append(f"{path}: {problem}")
                return
            element = path + _item_element(node, sub, i)
            _schema_errors(sub, schema.get("items"), node.elem, element, errors)
        return
    props = schema.get("properties")
    additional = schema.get("additionalProperties")
    if typ != "object" and not isinstance(props, dict) and not isinstance(additional, dict):
        return  # no type: anything goes
    if type(value) is not dict:
        errors.append(f"{path}: expected map, got &{{{go_print(value)}}}")
        return
    open_ = schema.get("x-kubernetes-preserve-unknown-fields") is True
    if isinstance(props, dict) and props:
        embedded = schema.get("x-kubernetes-embedded-resource") is True
        for key, sub in value.items():
            sub_schema = props.get(key)
            if sub_schema is None:
                if open_ or (embedded and key in ("apiVersion", "kind", "metadata")):
                    continue
                errors.append(f"{path}.{key}: field not declared in schema")
                # The validating walk stops at a map's first undeclared field.
                return
            _schema_errors(sub, sub_schema, node.child(key), f"{path}.{key}", errors)
    elif isinstance(additional, dict):
        for key, sub in value.items():
            _schema_errors(sub, additional, node.elem, f"{path}.{key}", errors)
    elif not open_ and value:
        errors.append(f"{path}.{next(iter(value))}: field not declared in schema")


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
