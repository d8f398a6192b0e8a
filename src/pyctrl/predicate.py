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
from the cache is not decoded into a typed object for them; the field predicates read the
object. A predicate of your own that only looks at metadata does well to do the same.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel

from pyctrl.labels import Selector, from_label_selector, parse
from pyctrl.resource import ObjectAccessor, Unstructured

if TYPE_CHECKING:
    from collections.abc import Callable

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


class FieldChanged(_UpdateFilter):
    """Updates pass only when one of the given fields changed (kopf's ``field=``).

    Args:
        *paths: Dotted wire names, e.g. ``"spec.replicas"``, ``"metadata.labels"``; at
            least one. A field appearing, vanishing or changing value counts as a change.
    """

    __slots__ = ("paths",)

    def __init__(self, *paths: str) -> None:
        if not paths:
            raise ValueError("FieldChanged needs at least one field path")
        for path in paths:
            _parse_path(path)
        self.paths = paths

    def update(self, event: UpdateEvent[Any]) -> bool:
        """True if any of the fields differs between old and new."""
        old, new = event.object_old, event.object_new
        return any(field_value(old, p) != field_value(new, p) for p in self.paths)

    def __repr__(self) -> str:
        return f"FieldChanged({', '.join(map(repr, self.paths))})"


class _FieldTest:
    """Base of the predicates testing a field's value on every event (the new object's)."""

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        _parse_path(path)
        self.path = path

    def _test(self, value: Any) -> bool:
        raise NotImplementedError

    def _passes(self, obj: Any) -> bool:
        return self._test(field_value(obj, self.path))

    def create(self, event: CreateEvent[Any]) -> bool:
        """Whether the created object's field passes."""
        return self._passes(event.object)

    def update(self, event: UpdateEvent[Any]) -> bool:
        """Whether the new object's field passes."""
        return self._passes(event.object_new)

    def delete(self, event: DeleteEvent[Any]) -> bool:
        """Whether the deleted object's field passes."""
        return self._passes(event.object)

    def generic(self, event: GenericEvent[Any]) -> bool:
        """Whether the object's field passes."""
        return self._passes(event.object)


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
