"""Events: what a Source tells a controller about an object.

There are four, as in controller-runtime's ``pkg/event``:

- `CreateEvent`: an object appeared. ``is_in_initial_list`` is True when it was seen
  in the first list of an informer (a restart), not created just now.
- `UpdateEvent`: an object changed; both versions are given. Resyncs deliver updates
  whose old and new resourceVersion are equal.
- `DeleteEvent`: an object is gone. ``delete_state_unknown`` is True when the delete
  itself was missed (the watch was down) and found by a re-list: the object given is the
  last state the cache knew.
- `GenericEvent`: anything else, from an external source (a `Channel`, a timer).

Events carry typed objects: the Python type the watch was set up with. An event from the
cache (`pyctrl.source.Kind`) holds the cached entry and decodes it on first use of
``.object`` (``object_old``, ``object_new``), so an event that a predicate drops, or whose
handler only needs the object's key, is never decoded. ``meta`` (``meta_old``,
``meta_new``) reads the metadata without decoding the object: an
`pyctrl.resource.ObjectAccessor` that predicates and handlers use to look at names,
labels, annotations, the generation or owner references (read-only for a cached event).
``cached_object`` (``cached_old``, ``cached_new``) is the cache's entry itself (a
`pyctrl.cache.CachedObject`, whose ``raw()`` is the object's JSON), or None for an event
built from an object: what the field predicates read fields from without decoding.

Events are immutable and compare equal when their kind, objects and flags are equal.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from typing import TYPE_CHECKING, Any, Generic, NoReturn, TypeVar

from pyctrl.resource import ObjectAccessor

if TYPE_CHECKING:
    from typing import Self

    from pyctrl.cache import CachedObject

__all__ = ["CreateEvent", "DeleteEvent", "Event", "GenericEvent", "UpdateEvent"]

T = TypeVar("T")


_set_slot = object.__setattr__  # the events' own __setattr__ refuses: they are immutable


class _Frozen:
    """Immutability, equality and repr of the four events (their slots are set once)."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise FrozenInstanceError(f"cannot assign to field {name!r}: events are immutable")

    def __delattr__(self, name: str) -> NoReturn:
        raise FrozenInstanceError(f"cannot delete field {name!r}: events are immutable")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, _Frozen)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash((self.__class__, *self._values()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({fields})"


class _OfOne(_Frozen, Generic[T]):
    """An event about one object: given, or held cached and decoded on first use."""

    __slots__ = ("_cached", "_held")

    _cached: CachedObject[T] | None
    _held: T

    def _hold(self, obj: T | None, cached: CachedObject[T] | None) -> None:
        _set_slot(self, "_cached", cached)
        _set_slot(self, "_held", obj)

    @property
    def object(self) -> T:
        """The object (decoded on first use, for an event from the cache)."""
        cached = self._cached
        return self._held if cached is None else cached.object

    @property
    def cached_object(self) -> CachedObject[T] | None:
        """The cache's entry of the object (undecoded), or None for an event built from one."""
        return self._cached

    @property
    def meta(self) -> ObjectAccessor:
        """The object's metadata, without decoding an event's cached object.

        Raises:
            TypeError: the object is not a Kubernetes object (what a `Channel` may carry).
        """
        cached = self._cached
        return ObjectAccessor(self._held) if cached is None else cached.meta()


class CreateEvent(_OfOne[T]):
    """An object was created, or listed when an informer started."""

    __slots__ = ("is_in_initial_list",)
    __match_args__ = ("object", "is_in_initial_list")
    _fields = __match_args__

    is_in_initial_list: bool

    def __init__(self, object: T, is_in_initial_list: bool = False) -> None:
        self._hold(object, None)
        _set_slot(self, "is_in_initial_list", is_in_initial_list)

    @classmethod
    def cached(cls, obj: CachedObject[T], is_in_initial_list: bool = False) -> Self:
        """The event of a cached object, decoded when ``object`` is first read."""
        event = cls.__new__(cls)
        event._hold(None, obj)
        _set_slot(event, "is_in_initial_list", is_in_initial_list)
        return event


class UpdateEvent(_Frozen, Generic[T]):
    """An object changed from ``object_old`` to ``object_new``."""

    __slots__ = ("_cached_new", "_cached_old", "_new", "_old")
    __match_args__ = ("object_old", "object_new")
    _fields = __match_args__

    _cached_old: CachedObject[T] | None
    _cached_new: CachedObject[T] | None
    _old: T
    _new: T

    def __init__(self, object_old: T, object_new: T) -> None:
        _set_slot(self, "_cached_old", None)
        _set_slot(self, "_cached_new", None)
        _set_slot(self, "_old", object_old)
        _set_slot(self, "_new", object_new)

    @classmethod
    def cached(cls, old: CachedObject[T], new: CachedObject[T]) -> Self:
        """The event of a cached object's change, decoded when the objects are first read."""
        event = cls.__new__(cls)
        _set_slot(event, "_cached_old", old)
        _set_slot(event, "_cached_new", new)
        return event

    @property
    def object_old(self) -> T:
        """The object before the change."""
        cached = self._cached_old
        return self._old if cached is None else cached.object

    @property
    def object_new(self) -> T:
        """The object after the change."""
        cached = self._cached_new
        return self._new if cached is None else cached.object

    @property
    def cached_old(self) -> CachedObject[T] | None:
        """The cache's entry of the old object (undecoded), or None for an event built from one."""
        return self._cached_old

    @property
    def cached_new(self) -> CachedObject[T] | None:
        """The cache's entry of the new object (undecoded), or None for an event built from one."""
        return self._cached_new

    @property
    def meta_old(self) -> ObjectAccessor:
        """The old object's metadata, without decoding a cached object."""
        cached = self._cached_old
        return ObjectAccessor(self._old) if cached is None else cached.meta()

    @property
    def meta_new(self) -> ObjectAccessor:
        """The new object's metadata, without decoding a cached object."""
        cached = self._cached_new
        return ObjectAccessor(self._new) if cached is None else cached.meta()


class DeleteEvent(_OfOne[T]):
    """An object was deleted; ``delete_state_unknown`` if the delete was inferred."""

    __slots__ = ("delete_state_unknown",)
    __match_args__ = ("object", "delete_state_unknown")
    _fields = __match_args__

    delete_state_unknown: bool

    def __init__(self, object: T, delete_state_unknown: bool = False) -> None:
        self._hold(object, None)
        _set_slot(self, "delete_state_unknown", delete_state_unknown)

    @classmethod
    def cached(cls, obj: CachedObject[T], delete_state_unknown: bool = False) -> Self:
        """The event of a cached object's delete, decoded when ``object`` is first read."""
        event = cls.__new__(cls)
        event._hold(None, obj)
        _set_slot(event, "delete_state_unknown", delete_state_unknown)
        return event


class GenericEvent(_OfOne[T]):
    """An event from outside the cluster's watches, about ``object``."""

    __slots__ = ()
    __match_args__ = ("object",)
    _fields = __match_args__

    def __init__(self, object: T) -> None:
        self._hold(object, None)


Event = CreateEvent[T] | UpdateEvent[T] | DeleteEvent[T] | GenericEvent[T]
"""Any of the four events."""
