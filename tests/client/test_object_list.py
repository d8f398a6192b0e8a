"""ObjectList compares like the list of items it iterates."""

from __future__ import annotations

from pyctrl.client import ObjectList


def test_an_empty_object_list_equals_an_empty_list() -> None:
    """``await client.list(...) == []`` holds when nothing is listed."""
    assert ObjectList(resource_version="12") == []
    assert [] == ObjectList(resource_version="12")  # noqa: SIM300 - the reflected comparison
    assert ObjectList(items=["a"]) != []


def test_an_object_list_equals_the_list_of_its_items() -> None:
    """Items in order, whatever the list metadata; another order is another list."""
    listed = ObjectList(items=["a", "b"], resource_version="7", continue_="next")
    assert listed == ["a", "b"]
    assert listed != ["b", "a"]
    assert listed != ("a", "b")  # a list compares equal to lists only


def test_two_object_lists_compare_items_and_list_metadata() -> None:
    """Two pages are equal when their items and where the list stands are."""
    assert ObjectList(items=["a"], resource_version="7") == ObjectList(
        items=["a"], resource_version="7"
    )
    assert ObjectList(items=["a"], resource_version="7") != ObjectList(
        items=["a"], resource_version="8"
    )
