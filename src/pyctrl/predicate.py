"""Predicates: filters that decide which events reach a controller's handlers.

A `Predicate` has one method per event kind, each returning True to let the event
through. The ready-made ones mirror controller-runtime's ``pkg/predicate``:

- `GenerationChanged`: updates pass only when ``metadata.generation`` changed, which
  drops status-only and metadata-only updates of types with a status subresource;
- `ResourceVersionChanged`: updates pass only when the resourceVersion changed (drops
  resyncs);
- `LabelChanged`, `AnnotationChanged`: updates pass only when the labels (annotations)
  differ;
- `label_selector(selector)`: every event passes only for objects whose labels match.

The "changed" predicates filter updates only: create, delete and generic events pass.
Combine with `and_`, `or_` and `not_`; adapt plain functions with `Funcs`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pyctrl.labels import Selector, from_label_selector, parse
from pyctrl.resource import accessor

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from pyctrl.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent

__all__ = [
    "AnnotationChanged",
    "Funcs",
    "GenerationChanged",
    "LabelChanged",
    "Predicate",
    "ResourceVersionChanged",
    "and_",
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
        return accessor(event.object_old).generation != accessor(event.object_new).generation


class ResourceVersionChanged(_UpdateFilter):
    """Updates pass only when the resourceVersion changed (resyncs are dropped)."""

    __slots__ = ()

    def update(self, event: UpdateEvent[Any]) -> bool:
        """True if the resourceVersion differs between old and new."""
        old, new = accessor(event.object_old), accessor(event.object_new)
        return old.resource_version != new.resource_version


class LabelChanged(_UpdateFilter):
    """Updates pass only when the labels changed."""

    __slots__ = ()

    def update(self, event: UpdateEvent[Any]) -> bool:
        """True if the label maps differ."""
        return accessor(event.object_old).labels != accessor(event.object_new).labels


class AnnotationChanged(_UpdateFilter):
    """Updates pass only when the annotations changed."""

    __slots__ = ()

    def update(self, event: UpdateEvent[Any]) -> bool:
        """True if the annotation maps differ."""
        old, new = accessor(event.object_old), accessor(event.object_new)
        return old.annotations != new.annotations


@dataclass(frozen=True, slots=True)
class _Selected:
    selector: Selector

    def _matches(self, obj: Any) -> bool:
        return self.selector.matches(accessor(obj).labels)

    def create(self, event: CreateEvent[Any]) -> bool:
        return self._matches(event.object)

    def update(self, event: UpdateEvent[Any]) -> bool:
        return self._matches(event.object_new)

    def delete(self, event: DeleteEvent[Any]) -> bool:
        return self._matches(event.object)

    def generic(self, event: GenericEvent[Any]) -> bool:
        return self._matches(event.object)


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
