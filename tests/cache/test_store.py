from __future__ import annotations

from typing import Any

import orjson
import pytest
from kubernetes_asyncio.client import V1ConfigMap

from pyctrl.cache._store import Store, decode
from pyctrl.meta import GroupVersionKind
from pyctrl.resource import PartialObjectMetadata, Unstructured
from pyctrl.scheme import default_scheme

CONFIGMAP = GroupVersionKind("", "v1", "ConfigMap")


def cm(name: str, rv: str = "1", namespace: str = "default", **labels: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "resourceVersion": rv}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"k": name}}


def fill(store: Store, *objs: dict[str, Any]) -> None:
    for obj in objs:
        store.upsert(*store.encode(obj))


def test_reads_decode_a_fresh_copy_each_time() -> None:
    """Changing an object read from the store does not change what the store holds."""
    store = Store()
    fill(store, cm("a"))
    entry = store.get(("default", "a"))
    assert entry is not None
    first = decode(entry.data, dict, scheme=default_scheme())
    first["data"]["k"] = "changed"
    second = decode(entry.data, dict, scheme=default_scheme())
    assert second["data"] == {"k": "a"}
    assert first is not second


def test_decode_builds_each_supported_type() -> None:
    """Entries decode into models, Unstructured and metadata-only views."""
    store = Store()
    fill(store, cm("a", app="web"))
    entry = store.get(("default", "a"))
    assert entry is not None
    scheme = default_scheme()
    model = decode(entry.data, V1ConfigMap, scheme=scheme)
    assert model.data == {"k": "a"}
    assert model.metadata.labels == {"app": "web"}
    assert decode(entry.data, Unstructured, scheme=scheme).name == "a"
    meta = decode(entry.data, PartialObjectMetadata, scheme=scheme, gvk=CONFIGMAP)
    assert meta.kind == "ConfigMap"
    assert meta.metadata.name == "a"
    assert "data" not in meta.model_dump()


def test_entries_keep_rv_and_labels_for_filtering() -> None:
    """An entry carries the resourceVersion and labels without decoding."""
    store = Store()
    key, entry = store.encode(cm("a", rv="42", app="web"))
    assert key == ("default", "a")
    assert entry.resource_version == "42"
    assert entry.labels == {"app": "web"}
    assert orjson.loads(entry.data)["data"] == {"k": "a"}


def test_encode_refuses_objects_without_a_name() -> None:
    """An object with no metadata.name cannot be stored; the error says so."""
    with pytest.raises(ValueError, match=r"metadata\.name"):
        Store().encode({"metadata": {"namespace": "x"}})


def test_replace_reports_adds_updates_and_deletes_only() -> None:
    """Replace returns added, changed and vanished objects, not unchanged ones."""
    store = Store()
    fill(store, cm("same", "1"), cm("changed", "1"), cm("gone", "1"))
    new = [store.encode(obj) for obj in (cm("same", "1"), cm("changed", "2"), cm("new", "3"))]
    changes = {key[1]: (old, entry) for key, old, entry in store.replace(new)}
    assert set(changes) == {"changed", "new", "gone"}
    assert changes["new"][0] is None
    assert changes["gone"][1] is None
    old, entry = changes["changed"]
    assert old is not None
    assert entry is not None
    assert (old.resource_version, entry.resource_version) == ("1", "2")
    assert sorted(key[1] for key, _ in store.items()) == ["changed", "new", "same"]


def test_replace_in_a_namespace_leaves_other_namespaces_alone() -> None:
    """A namespace-scoped replace neither deletes nor adds outside its namespace."""
    store = Store()
    fill(store, cm("a", namespace="one"), cm("b", namespace="two"))
    changes = store.replace([store.encode(cm("c", namespace="one"))], namespace="one")
    assert {(key, old is None, new is None) for key, old, new in changes} == {
        (("one", "c"), True, False),
        (("one", "a"), False, True),
    }
    assert store.get(("two", "b")) is not None
    assert sorted(store.namespaces()) == ["one", "two"]


def test_field_index_follows_upserts_and_removals() -> None:
    """Index lookups reflect the current value of every object, added before or after."""
    store = Store()
    fill(store, cm("a"), cm("b"))
    store.add_indexer("data.k", lambda obj: [obj["data"]["k"]])
    assert store.by_index("data.k", "a") == {("default", "a")}
    fill(store, {**cm("a", "2"), "data": {"k": "z"}}, cm("c"))
    assert store.by_index("data.k", "a") == set()
    assert store.by_index("data.k", "z") == {("default", "a")}
    assert store.by_index("data.k", "c") == {("default", "c")}
    store.remove(("default", "c"))
    assert store.by_index("data.k", "c") == set()


def test_a_second_index_with_the_same_name_is_refused() -> None:
    """Adding an index twice under one name raises ValueError naming it."""
    store = Store()
    store.add_indexer("x", lambda obj: [])
    with pytest.raises(ValueError, match="'x'"):
        store.add_indexer("x", lambda obj: [])


def test_label_strings_are_shared_between_objects() -> None:
    """Equal label keys and values of different objects are one string in memory."""
    store = Store()
    _, first = store.encode(cm("a", app="".join(["w", "eb"])))
    _, second = store.encode(cm("b", app="".join(["we", "b"])))
    assert first.labels is not None
    assert second.labels is not None
    assert first.labels["app"] is second.labels["app"]
