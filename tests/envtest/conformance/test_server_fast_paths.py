"""The server's faster paths keep kube-apiserver's semantics.

Lists come in etcd key order (``namespace/name``), which paginated lists rely on to find
where the next page starts; no-op updates are detected without copying objects; merge
patches can work on the update loop's private copy; request IDs are version-4 UUIDs.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyctrl._apiserver.fieldmanager import patch as _patch
from pyctrl._apiserver.registry import writes as _api
from tests.envtest.conftest import unique

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.envtest.conftest import Kube


class Order:
    """Three namespaces whose names sort differently as keys than as strings."""

    def __init__(self) -> None:
        prefix = unique("ord")
        self.labels = {"app": prefix}
        self.label = f"app={prefix}"
        self.namespaces = (f"{prefix}-a", f"{prefix}-a-b", f"{prefix}-ab")
        a, a_b, ab = self.namespaces
        # etcd keys are ".../<namespace>/<name>": "-" sorts before "/", and "/" before "b".
        self.key_order = [(ns, name) for ns in (a_b, a, ab) for name in ("x", "y")]


@pytest.fixture
async def order(kube: Kube) -> AsyncIterator[Order]:
    """Two ConfigMaps, created in reverse order, in each of the `Order` namespaces."""
    made = Order()
    for ns in made.namespaces:
        await kube.create_ok("/api/v1/namespaces", {"metadata": {"name": ns}})
        for name in ("y", "x"):
            body = {"metadata": {"name": name, "labels": made.labels}}
            await kube.create_ok(f"/api/v1/namespaces/{ns}/configmaps", body)
    yield made
    for ns in made.namespaces:
        await kube.delete(f"/api/v1/namespaces/{ns}")


def _keys(items: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in items]


async def _pages(kube: Kube, label: str) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    token = ""
    while True:
        query = {"limit": "1", "labelSelector": label}
        if token:
            query["continue"] = token
        page = await kube.get_ok("/api/v1/configmaps", params=query)
        seen.extend(_keys(page["items"]))
        token = page["metadata"].get("continue", "")
        if not token:
            return seen


@pytest.mark.needs_builtin_kinds
async def test_list_across_namespaces_is_in_etcd_key_order(kube: Kube, order: Order) -> None:
    """A list of all namespaces is ordered by namespace/name as etcd orders its keys."""
    listed = await kube.get_ok("/api/v1/configmaps", params={"labelSelector": order.label})
    assert _keys(listed["items"]) == order.key_order


@pytest.mark.needs_builtin_kinds
async def test_paginated_list_across_namespaces_returns_each_object_once(
    kube: Kube, order: Order
) -> None:
    """Pages of one item each walk every namespace in key order, missing and repeating none."""
    assert await _pages(kube, order.label) == order.key_order


@pytest.mark.needs_builtin_kinds
async def test_paginated_list_pages_come_from_the_first_pages_snapshot(
    kube: Kube, order: Order
) -> None:
    """Objects created after the first page are not in later pages of the same list."""
    first = await kube.get_ok(
        "/api/v1/configmaps", params={"limit": "2", "labelSelector": order.label}
    )
    late = {"metadata": {"name": "late", "labels": order.labels}}
    await kube.create_ok(f"/api/v1/namespaces/{order.namespaces[0]}/configmaps", late)
    rest = await kube.get_ok(
        "/api/v1/configmaps",
        params={"continue": first["metadata"]["continue"], "labelSelector": order.label},
    )
    assert _keys(first["items"]) + _keys(rest["items"]) == order.key_order


def _reference_noop(new: dict[str, Any], old: dict[str, Any]) -> bool:
    return new == old or _api.strip_managed_times(new) == _api.strip_managed_times(old)


MANAGED = st.lists(
    st.fixed_dictionaries(
        {"manager": st.sampled_from(["a", "b"]), "time": st.sampled_from(["t1", "t2"])}
    ),
    max_size=2,
)
OBJECTS = st.fixed_dictionaries(
    {"metadata": st.fixed_dictionaries({"name": st.just("n"), "managedFields": MANAGED})},
    optional={
        "spec": st.dictionaries(st.sampled_from("ab"), st.integers(0, 2) | st.booleans()),
        "status": st.dictionaries(st.sampled_from("ab"), st.integers(0, 2)),
    },
)


@settings(max_examples=300, deadline=None)
@given(OBJECTS, OBJECTS)
def test_noop_detection_matches_full_comparison(new: dict[str, Any], old: dict[str, Any]) -> None:
    """An update is a no-op exactly when the objects are equal but for managedFields times."""
    assert _api.is_noop(new, old) == _reference_noop(new, old)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=2),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from("abc"), children, max_size=3)
    ),
    max_leaves=15,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from("abc"), JSON), st.dictionaries(st.sampled_from("abc"), JSON))
def test_merge_patch_in_place_equals_merge_patch_of_a_copy(
    original: dict[str, Any], patch: dict[str, Any]
) -> None:
    """Patching in place gives the same object; patching a copy leaves the original alone."""
    kept = copy.deepcopy(original)
    result = _patch.json_merge_patch(original, patch)
    assert original == kept
    assert _patch.json_merge_patch(copy.deepcopy(original), patch, in_place=True) == result
