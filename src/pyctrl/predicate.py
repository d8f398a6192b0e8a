"""Predicates: filters that decide which events reach a controller's handlers.

A `Predicate` has one method per event kind, each returning True to let the event
through. The ready-made ones mirror controller-runtime's ``pkg/predicate``:

- `GenerationChanged`: updates pass only when ``metadata.generation`` changed, which
  drops status-only and metadata-only updates of types with a status subresource;
- `ResourceVersionChanged`: updates pass only when the resourceVersion changed (drops
  resyncs);
- `LabelChanged`, `AnnotationChanged`: updates pass only when the labels (annotations)
  differ;
- `label_selector(selector)`: every event passes only for objects whose labels match;
- `FieldChanged("spec.replicas", "metadata.labels")`: updates pass only when one of
  the named fields changed (kopf's ``field=``);
- `FieldEquals(path, value)`, `FieldMatches(path, regex_or_function)`: every event
  passes only for objects whose field has that value (kopf's ``value=``).

The "changed" predicates filter updates only: create, delete and generic events pass.
Field paths are dotted wire names (``spec.replicas``, ``metadata.labels.app``,
``spec.containers.0.image``) and work alike on typed, unstructured and
kubernetes-asyncio objects; `field_value` reads one.
Combine with `and_`, `or_` and `not_`; adapt plain functions with `Funcs`.

The metadata predicates read ``event.meta`` (``meta_old``, ``meta_new``), so an event
from the cache is not decoded into a typed object for them. Neither is it for the field
predicates: they read the field from the cache's JSON (``event.cached_object.raw()``),
and give the answers they give on the typed object. Where the two could differ, the
object is decoded and the field read from it: where the JSON lacks a field that your
model gives a default (``mode: str = "fast"``), and for fields whose model value is not
their JSON value (a model, a timestamp, an enum, a field validator's, or one under a
model validator running before validation; a model validator running after validation
is taken to check the object, not to change it). A predicate of your own that only looks
at metadata does well to read ``event.meta``.
"""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Literal,
    Protocol,
    Union,
    get_args,
    get_origin,
    runtime_checkable,
)

from pydantic import BaseModel

from pyctrl.labels import Selector, from_label_selector, parse
from pyctrl.resource import CustomResource, ObjectAccessor, PartialObjectMetadata, Unstructured

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyctrl.cache import CachedObject
    from pyctrl.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent

__all__ = [
    "AnnotationChanged",
    "FieldChanged",
    "FieldEquals",
    "FieldMatches",
    "Funcs",
    "GenerationChanged",
    "LabelChanged",
    "Predicate",
    "ResourceVersionChanged",
    "and_",
    "field_value",
    "label_selector",
    "not_",
    "or_",
]


@runtime_checkable
class Predicate(Protocol):
    """Filters events before they reach an event handler: True lets the event through."""

    def create(self, event: CreateEvent[Any]) -> bool:
        """Whether a create event passes."""
        ...

    def update(self, event: UpdateEvent[Any]) -> bool:
        """Whether an update event passes."""
        ...

    def delete(self, event: DeleteEvent[Any]) -> bool:
        """Whether a delete event passes."""
        ...

    def generic(self, event: GenericEvent[Any]) -> bool:
        """Whether a generic event passes."""
        ...


@dataclass(frozen=True, slots=True)
class Funcs:
    """A Predicate from optional functions; an event kind without a function passes."""

    on_create: Callable[[CreateEvent[Any]], bool] | None = None
    on_update: Callable[[UpdateEvent[Any]], bool] | None = None
    on_delete: Callable[[DeleteEvent[Any]], bool] | None = None
    on_generic: Callable[[GenericEvent[Any]], bool] | None = None

    def create(self, event: CreateEvent[Any]) -> bool:
        """Call ``on_create``, or pass."""
        return self.on_create is None or self.on_create(event)

    def update(self, event: UpdateEvent[Any]) -> bool:
        """Call ``on_update``, or pass."""
        return self.on_update is None or self.on_update(event)

    def delete(self, event: DeleteEvent[Any]) -> bool:
        """Call ``on_delete``, or pass."""
        return self.on_delete is None or self.on_delete(event)

    def generic(self, event: GenericEvent[Any]) -> bool:
        """Call ``on_generic``, or pass."""
        return self.on_generic is None or self.on_generic(event)


class _UpdateFilter:
    """Base of the predicates that filter updates only."""

    __slots__ = ()

    def create(self, event: CreateEvent[Any]) -> bool:
        """Creates pass."""
        return True

    def delete(self, event: DeleteEvent[Any]) -> bool:
        """Deletes pass."""
        return True

    def generic(self, event: GenericEvent[Any]) -> bool:
        """Generic events pass."""
        return True

    def update(self, event: UpdateEvent[Any]) -> bool:
        """Whether the update passes."""
        raise NotImplementedError


class GenerationChanged(_UpdateFilter):
    """Updates pass only when ``metadata.generation`` changed."""

    __slots__ = ()

    def update(self, event: UpdateEvent[Any]) -> bool:
        """True if the generation differs between old and new."""
        return event.meta_old.generation != event.meta_new.generation


class ResourceVersionChanged(_UpdateFilter):
    """Updates pass only when the resourceVersion changed (resyncs are dropped)."""

    __slots__ = ()

    def update(self, event: UpdateEvent[Any]) -> bool:
        """True if the resourceVersion differs between old and new."""
        return event.meta_old.resource_version != event.meta_new.resource_version


class LabelChanged(_UpdateFilter):
    """Updates pass only when the labels changed."""

    __slots__ = ()

    def update(self, event: UpdateEvent[Any]) -> bool:
        """True if the label maps differ."""
        return event.meta_old.labels != event.meta_new.labels


class AnnotationChanged(_UpdateFilter):
    """Updates pass only when the annotations changed."""

    __slots__ = ()

    def update(self, event: UpdateEvent[Any]) -> bool:
        """True if the annotation maps differ."""
        return event.meta_old.annotations != event.meta_new.annotations


@dataclass(frozen=True, slots=True)
class _Selected:
    selector: Selector

    def _matches(self, meta: ObjectAccessor) -> bool:
        return self.selector.matches(meta.labels)

    def create(self, event: CreateEvent[Any]) -> bool:
        return self._matches(event.meta)

    def update(self, event: UpdateEvent[Any]) -> bool:
        return self._matches(event.meta_new)

    def delete(self, event: DeleteEvent[Any]) -> bool:
        return self._matches(event.meta)

    def generic(self, event: GenericEvent[Any]) -> bool:
        return self._matches(event.meta)


def label_selector(selector: str | Mapping[str, Any] | Selector) -> Predicate:
    """A Predicate passing events of objects whose labels match ``selector``.

    Args:
        selector: A selector string (``"app=web,tier in (a,b)"``), a
            ``metav1.LabelSelector`` dict (``{"matchLabels": ...}``), or a `Selector`.
    """
    if isinstance(selector, Selector):
        parsed = selector
    elif isinstance(selector, str):
        parsed = parse(selector)
    else:
        parsed = from_label_selector(selector)
    return _Selected(parsed)


@dataclass(frozen=True, slots=True)
class _All:
    predicates: tuple[Predicate, ...]

    def create(self, event: CreateEvent[Any]) -> bool:
        return all(p.create(event) for p in self.predicates)

    def update(self, event: UpdateEvent[Any]) -> bool:
        return all(p.update(event) for p in self.predicates)

    def delete(self, event: DeleteEvent[Any]) -> bool:
        return all(p.delete(event) for p in self.predicates)

    def generic(self, event: GenericEvent[Any]) -> bool:
        return all(p.generic(event) for p in self.predicates)


@dataclass(frozen=True, slots=True)
class _Any:
    predicates: tuple[Predicate, ...]

    def create(self, event: CreateEvent[Any]) -> bool:
        return any(p.create(event) for p in self.predicates)

    def update(self, event: UpdateEvent[Any]) -> bool:
        return any(p.update(event) for p in self.predicates)

    def delete(self, event: DeleteEvent[Any]) -> bool:
        return any(p.delete(event) for p in self.predicates)

    def generic(self, event: GenericEvent[Any]) -> bool:
        return any(p.generic(event) for p in self.predicates)


@dataclass(frozen=True, slots=True)
class _Not:
    predicate: Predicate

    def create(self, event: CreateEvent[Any]) -> bool:
        return not self.predicate.create(event)

    def update(self, event: UpdateEvent[Any]) -> bool:
        return not self.predicate.update(event)

    def delete(self, event: DeleteEvent[Any]) -> bool:
        return not self.predicate.delete(event)

    def generic(self, event: GenericEvent[Any]) -> bool:
        return not self.predicate.generic(event)


def and_(*predicates: Predicate) -> Predicate:
    """Passes an event only if every predicate passes it (an empty ``and_`` passes all)."""
    return _All(predicates)


def or_(*predicates: Predicate) -> Predicate:
    """Passes an event if any predicate passes it (an empty ``or_`` passes none)."""
    return _Any(predicates)


def not_(predicate: Predicate) -> Predicate:
    """Passes exactly the events ``predicate`` drops."""
    return _Not(predicate)


# ---------------------------------------------------------------------------------------
# Field predicates (kopf's ``field=`` and ``value=`` filters)

_MISSING: Any = object()
_aliases: dict[type[Any], dict[str, str]] = {}


def _parse_path(path: str) -> tuple[str, ...]:
    if not isinstance(path, str) or not path or any(not part for part in path.split(".")):
        raise ValueError(
            f"invalid field path {path!r}: expected dotted wire names such as 'spec.replicas'"
        )
    return tuple(path.split("."))


def _wire_names(cls: type[Any]) -> dict[str, str]:
    """Wire (camelCase) name to Python attribute, for a pydantic or kubernetes-asyncio model."""
    names = _aliases.get(cls)
    if names is None:
        if issubclass(cls, BaseModel):
            names = {info.alias or attr: attr for attr, info in cls.model_fields.items()}
            names.update({attr: attr for attr in cls.model_fields})
        else:
            attribute_map: Mapping[str, str] = getattr(cls, "attribute_map", {})
            names = {wire: attr for attr, wire in attribute_map.items()}
        _aliases[cls] = names
    return names


def _child(value: Any, part: str) -> Any:
    if isinstance(value, Unstructured):
        value = value.object
    if isinstance(value, Mapping):
        return value.get(part, _MISSING)
    if isinstance(value, list | tuple):
        index = int(part) if part.isdigit() else len(value)
        return value[index] if index < len(value) else _MISSING
    if isinstance(value, BaseModel):
        attr = _wire_names(type(value)).get(part)
        if attr is not None:
            return getattr(value, attr)
        return (value.model_extra or {}).get(part, _MISSING)
    attr = _wire_names(type(value)).get(part)
    return _MISSING if attr is None else getattr(value, attr, _MISSING)


def _plain(value: Any) -> Any:
    """A value in its JSON form, so that typed and unstructured objects compare alike."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    names = getattr(type(value), "attribute_map", None)
    if names is not None:
        return {
            wire: _plain(getattr(value, attr))
            for attr, wire in names.items()
            if getattr(value, attr) is not None
        }
    return value


def field_value(obj: Any, path: str) -> Any:
    """The value at ``path`` (dotted wire names, e.g. ``"spec.replicas"``) in ``obj``.

    Works on custom resources, kubernetes-asyncio models, `pyctrl.resource.Unstructured`
    and plain dicts; list items are reached by index (``"spec.containers.0.image"``).
    Values come back in their JSON form (models as dicts); a missing field, or a null
    one, is None.
    """
    value = obj
    for part in _parse_path(path):
        if value is None or value is _MISSING:
            return None
        value = _child(value, part)
    return None if value is _MISSING else _plain(value)


# ---------------------------------------------------------------------------------------
# Reading a field of an event from the cache: from the JSON, when it tells what the typed
# object would. A plan, per (type, path), says for each part of the path whether the type
# supplies a value where the JSON has none (a default): then only the object can tell.

_UNKNOWN: Any = object()
_Plan = tuple[bool, ...]
_plans: dict[tuple[type[Any], tuple[str, ...]], _Plan | None] = {}
_SCALARS: tuple[Any, ...] = (str, int, float, bool, type(None))
_K8S_SCALARS = frozenset({"str", "int", "float", "bool", "object"})
_K8S_LIST = re.compile(r"^list\[(.+)\]$")
_K8S_DICT = re.compile(r"^dict\(str, (.+)\)$")
_TYPE_FIELDS = frozenset({"apiVersion", "kind"})
_K8S_MODELS = "kubernetes_asyncio.client.models"
# CustomResource's own validator, which only fills in apiVersion and kind.
_fill_type_fields = getattr(
    CustomResource.__pydantic_decorators__.model_validators["_fill_type_fields"].func,
    "__func__",
    None,
)


def _arms(annotation: Any) -> list[Any] | None:
    """The non-None arms of an annotation, or None if a validator sits in an ``Annotated``."""
    origin = get_origin(annotation)
    if origin is Annotated:
        metadata = getattr(annotation, "__metadata__", ())
        if any(type(m).__module__ == "pydantic.functional_validators" for m in metadata):
            return None
        return _arms(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        arms: list[Any] = []
        for arg in get_args(annotation):
            found = _arms(arg)
            if found is None:
                return None
            arms += found
        return arms
    return [] if annotation is type(None) or annotation is None else [annotation]


def _plain_type(annotation: Any) -> bool:
    """Whether values of ``annotation`` are their JSON form on a typed object."""
    if isinstance(annotation, str):  # a kubernetes-asyncio type name
        if annotation in _K8S_SCALARS:
            return True
        match = _K8S_LIST.match(annotation) or _K8S_DICT.match(annotation)
        return match is not None and _plain_type(match.group(1))
    arms = _arms(annotation)
    if arms is None:
        return False
    for arm in arms:
        origin = get_origin(arm)
        args = get_args(arm)
        if arm is Any or arm is object or arm in _SCALARS or arm in (dict, list):
            continue
        if origin is Literal and all(type(a) in _SCALARS for a in args):
            continue
        if origin in (dict, Mapping) and len(args) == 2 and _plain_type(args[1]):
            continue
        if origin in (list, Sequence) and len(args) == 1 and _plain_type(args[0]):
            continue
        return False
    return True


def _model_step(model: type[BaseModel], part: str) -> tuple[Any, bool] | None:
    decorators = model.__pydantic_decorators__
    if decorators.validators or decorators.root_validators:
        return None
    for model_validator in decorators.model_validators.values():
        own = getattr(model_validator.func, "__func__", None)
        if model_validator.info.mode != "after" and (own is None or own is not _fill_type_fields):
            return None
    names = {info.alias or attr: attr for attr, info in model.model_fields.items()}
    attr = names.get(part)
    if attr is None:
        if part in model.model_fields or model.model_config.get("extra") != "allow":
            return None  # a Python name, or a field the model drops
        return Any, False
    for validator in decorators.field_validators.values():
        if attr in validator.info.fields or "*" in validator.info.fields:
            return None
    info = model.model_fields[attr]
    defaulted = info.default_factory is not None or (
        not info.is_required() and info.default is not None
    )
    return info.annotation, defaulted


def _k8s_step(cls: Any, part: str) -> tuple[Any, bool] | None:
    attr = next((a for a, wire in cls.attribute_map.items() if wire == part), None)
    if attr is None:
        return None
    type_name: str = cls.openapi_types[attr]
    return type_name, False


def _k8s_name_step(type_name: str, part: str) -> tuple[Any, bool] | None:
    if match := _K8S_LIST.match(type_name):
        return (match.group(1), False) if part.isdigit() else None
    if match := _K8S_DICT.match(type_name):
        return match.group(1), False
    if type_name == "object":
        return Any, False
    model = getattr(sys.modules.get(_K8S_MODELS), type_name, None)
    return None if model is None else _k8s_step(model, part)


def _step(annotation: Any, part: str) -> tuple[Any, bool] | None:
    """The annotation of ``part`` inside ``annotation``, and whether it has a default."""
    if isinstance(annotation, str):  # a kubernetes-asyncio type name
        return _k8s_name_step(annotation, part)
    arms = _arms(annotation)
    if arms is None or len(arms) != 1:
        return None
    (arm,) = arms
    if isinstance(arm, type) and issubclass(arm, BaseModel):
        return _model_step(arm, part)
    if isinstance(arm, type) and hasattr(arm, "openapi_types"):
        return _k8s_step(arm, part)
    return _container_step(arm, part)


def _container_step(arm: Any, part: str) -> tuple[Any, bool] | None:
    origin, args = get_origin(arm), get_args(arm)
    if arm is Any or arm is object:
        return Any, False
    if arm is dict or origin in (dict, Mapping):
        return (args[1] if len(args) == 2 else Any), False
    if (arm is list or origin in (list, Sequence)) and part.isdigit():
        return (args[0] if args else Any), False
    return None


def _plan(type_: type[Any], parts: tuple[str, ...]) -> _Plan | None:
    """How to read ``parts`` of a ``type_`` object from its JSON; None if it cannot be."""
    if type_ is Unstructured or type_ is dict:
        return (False,) * len(parts)  # the object is its JSON
    view = isinstance(type_, type) and issubclass(type_, PartialObjectMetadata)
    if view and parts[0] not in _TYPE_FIELDS | {"metadata"}:
        return None  # the typed object has only its type and metadata
    annotation: Any = type_
    defaulted: list[bool] = []
    for part in parts:
        step = _step(annotation, part)
        if step is None:
            return None
        annotation, has_default = step
        defaulted.append(has_default)
    if parts[0] in _TYPE_FIELDS:
        defaulted[0] = True  # decoding fills in the type's apiVersion and kind
    return tuple(defaulted) if _plain_type(annotation) else None


def _cached_value(cached: CachedObject[Any], parts: tuple[str, ...]) -> Any:
    """The field's value read from the cache's JSON, or _UNKNOWN if only the object tells."""
    key = (cached.type, parts)
    if key in _plans:
        plan = _plans[key]
    else:
        plan = _plans[key] = _plan(cached.type, parts)
    if plan is None:
        return _UNKNOWN
    value: Any = cached.raw()
    for part, has_default in zip(parts, plan, strict=True):
        if value is None:
            return None
        value = _child(value, part)
        if has_default and (value is _MISSING or value is None):
            return _UNKNOWN
        if value is _MISSING:
            return None
    return _plain(value)


def _field_of(cached: CachedObject[Any] | None, obj: Any, path: str, parts: tuple[str, ...]) -> Any:
    """A field of an event's object: ``obj`` when ``cached`` is None, else ``cached``."""
    if cached is None:
        return field_value(obj, path)
    value = _cached_value(cached, parts)
    return field_value(cached.object, path) if value is _UNKNOWN else value


class FieldChanged(_UpdateFilter):
    """Updates pass only when one of the given fields changed (kopf's ``field=``).

    Args:
        *paths: Dotted wire names, e.g. ``"spec.replicas"``, ``"metadata.labels"``; at
            least one. A field appearing, vanishing or changing value counts as a change.
    """

    __slots__ = ("_parts", "paths")

    def __init__(self, *paths: str) -> None:
        if not paths:
            raise ValueError("FieldChanged needs at least one field path")
        self._parts = [(path, _parse_path(path)) for path in paths]
        self.paths = paths

    def update(self, event: UpdateEvent[Any]) -> bool:
        """True if any of the fields differs between old and new."""
        old, new = event.cached_old, event.cached_new
        old_obj = event.object_old if old is None else None
        new_obj = event.object_new if new is None else None
        return any(
            _field_of(old, old_obj, path, parts) != _field_of(new, new_obj, path, parts)
            for path, parts in self._parts
        )

    def __repr__(self) -> str:
        return f"FieldChanged({', '.join(map(repr, self.paths))})"


class _FieldTest:
    """Base of the predicates testing a field's value on every event (the new object's)."""

    __slots__ = ("_parts", "path")

    def __init__(self, path: str) -> None:
        self._parts = _parse_path(path)
        self.path = path

    def _test(self, value: Any) -> bool:
        raise NotImplementedError

    def _passes(self, event: CreateEvent[Any] | DeleteEvent[Any] | GenericEvent[Any]) -> bool:
        cached = event.cached_object
        obj = event.object if cached is None else None
        return self._test(_field_of(cached, obj, self.path, self._parts))

    def create(self, event: CreateEvent[Any]) -> bool:
        """Whether the created object's field passes."""
        return self._passes(event)

    def update(self, event: UpdateEvent[Any]) -> bool:
        """Whether the new object's field passes."""
        cached = event.cached_new
        obj = event.object_new if cached is None else None
        return self._test(_field_of(cached, obj, self.path, self._parts))

    def delete(self, event: DeleteEvent[Any]) -> bool:
        """Whether the deleted object's field passes."""
        return self._passes(event)

    def generic(self, event: GenericEvent[Any]) -> bool:
        """Whether the object's field passes."""
        return self._passes(event)


class FieldEquals(_FieldTest):
    """Events pass only for objects whose field equals ``value`` (kopf's ``value=``).

    Args:
        path: Dotted wire names, e.g. ``"spec.mode"``.
        value: The JSON value to compare with (None matches a missing field).
    """

    __slots__ = ("value",)

    def __init__(self, path: str, value: Any) -> None:
        super().__init__(path)
        self.value = _plain(value)

    def _test(self, value: Any) -> bool:
        return bool(value == self.value)

    def __repr__(self) -> str:
        return f"FieldEquals({self.path!r}, {self.value!r})"


class FieldMatches(_FieldTest):
    """Events pass only for objects whose field matches a pattern or a test.

    Args:
        path: Dotted wire names, e.g. ``"metadata.labels.tier"``.
        test: A regular expression (string or compiled) that must match the whole of a
            string field, or a function of the field's JSON value (None when missing)
            returning True to pass.
    """

    __slots__ = ("_check", "test")

    def __init__(self, path: str, test: str | re.Pattern[str] | Callable[[Any], bool]) -> None:
        super().__init__(path)
        self.test = test
        if isinstance(test, str | re.Pattern):
            pattern = re.compile(test)
            self._check: Callable[[Any], bool] = lambda value: (
                isinstance(value, str) and pattern.fullmatch(value) is not None
            )
        elif callable(test):
            self._check = test
        else:
            raise TypeError(f"FieldMatches takes a regular expression or a function, got {test!r}")

    def _test(self, value: Any) -> bool:
        return bool(self._check(value))

    def __repr__(self) -> str:
        return f"FieldMatches({self.path!r}, {self.test!r})"
