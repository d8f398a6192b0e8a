"""pyctrl.event: events built by hand are immutable values, matched by their fields."""

from __future__ import annotations

import dataclasses

import pytest

from pyctrl.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent
from pyctrl.resource import Unstructured


def _obj(name: str, rv: str = "1") -> Unstructured:
    return Unstructured({"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}})


def test_events_compare_by_kind_and_fields() -> None:
    """Two events of the same kind, objects and flags are equal; other kinds are not."""
    a = _obj("a")
    assert CreateEvent(a, True) == CreateEvent(a, True)
    assert CreateEvent(a, True) != CreateEvent(a, False)
    assert CreateEvent(a) != GenericEvent(a)
    assert UpdateEvent(a, a) == UpdateEvent(a, a)
    assert repr(DeleteEvent("x", True)) == "DeleteEvent(object='x', delete_state_unknown=True)"


def test_events_are_immutable() -> None:
    """Assigning a field of an event raises, as with the frozen dataclasses they were."""
    event = CreateEvent(_obj("a"))
    with pytest.raises(dataclasses.FrozenInstanceError, match="events are immutable"):
        event.is_in_initial_list = True
    with pytest.raises(dataclasses.FrozenInstanceError):
        GenericEvent(1).object = 2  # type: ignore[misc]


def test_events_match_by_position_and_name() -> None:
    """match/case takes events apart by their fields."""
    old, new = _obj("a", "1"), _obj("a", "2")
    match UpdateEvent(old, new):
        case UpdateEvent(before, after):
            assert (before, after) == (old, new)
    match DeleteEvent(old, delete_state_unknown=True):
        case DeleteEvent(object=obj, delete_state_unknown=True):
            assert obj is old


def test_meta_reads_a_given_objects_metadata() -> None:
    """meta (meta_old, meta_new) is the object's accessor; a non-Kubernetes object has none."""
    old, new = _obj("a", "1"), _obj("a", "2")
    event = UpdateEvent(old, new)
    assert (event.meta_old.resource_version, event.meta_new.resource_version) == ("1", "2")
    assert CreateEvent(old).meta.name == "a"
    with pytest.raises(TypeError, match="not a Kubernetes object"):
        _ = GenericEvent(42).meta
