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

Events carry typed objects: the Python type the watch was set up with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["CreateEvent", "DeleteEvent", "Event", "GenericEvent", "UpdateEvent"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CreateEvent(Generic[T]):
    """An object was created, or listed when an informer started."""

    object: T
    is_in_initial_list: bool = False


@dataclass(frozen=True, slots=True)
class UpdateEvent(Generic[T]):
    """An object changed from ``object_old`` to ``object_new``."""

    object_old: T
    object_new: T


@dataclass(frozen=True, slots=True)
class DeleteEvent(Generic[T]):
    """An object was deleted; ``delete_state_unknown`` if the delete was inferred."""

    object: T
    delete_state_unknown: bool = False


@dataclass(frozen=True, slots=True)
class GenericEvent(Generic[T]):
    """An event from outside the cluster's watches, about ``object``."""

    object: T


Event = CreateEvent[T] | UpdateEvent[T] | DeleteEvent[T] | GenericEvent[T]
"""Any of the four events."""
