"""The informer's store: every cached object kept compactly, with its indexes.

Objects are kept as their JSON encoding (orjson bytes, after the informer's transform)
plus the few fields that reads filter on: resourceVersion, labels, and the values of
field indexes. A read decodes the bytes afresh, so every caller gets its own copy and
nothing a reconciler does to an object it was handed can reach the cache.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, TypeVar, cast

import orjson

from pyctrl.resource import PartialObjectMetadata, Unstructured

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

    from pyctrl.labels import Selector
    from pyctrl.meta import GroupVersionKind
    from pyctrl.scheme import Scheme

__all__ = ["Entry", "Key", "Store", "decode", "to_type"]

T = TypeVar("T")

Key = tuple[str, str]
"""(namespace, name); the namespace is ``""`` for cluster-scoped objects."""


class Entry:
    """One cached object: its encoding and the fields reads filter on. Never mutated."""

    __slots__ = ("data", "indexed", "labels", "resource_version")

    def __init__(
        self,
        data: bytes,
        resource_version: str,
        labels: dict[str, str] | None,
        indexed: tuple[tuple[str, tuple[str, ...]], ...] | None = None,
    ) -> None:
        self.data = data
        self.resource_version = resource_version
        self.labels = labels
        self.indexed = indexed

    def values_of(self, index: str) -> tuple[str, ...]:
        """The values the object is indexed under in ``index``."""
        for name, values in self.indexed or ():
            if name == index:
                return values
        return ()

    def __repr__(self) -> str:
        return f"<Entry rv={self.resource_version} {len(self.data)} bytes>"


def _interned_labels(labels: Any) -> dict[str, str] | None:
    if not labels or not isinstance(labels, dict):
        return None
    # Label keys and values repeat across thousands of objects: share one copy of each.
    return {sys.intern(str(k)): sys.intern(str(v)) for k, v in labels.items()}


class Store:
    """Cached objects by namespace and name, with a namespace index and field indexes.

    Mutations happen in plain synchronous calls: in asyncio nothing can read the store
    half-way through one, so every replace is atomic to readers.
    """

    __slots__ = ("_index", "_indexers", "_objects")

    def __init__(self) -> None:
        self._objects: dict[str, dict[str, Entry]] = {}
        self._indexers: dict[str, Callable[[dict[str, Any]], Iterable[str]]] = {}
        self._index: dict[str, dict[str, set[Key]]] = {}

    # building entries --------------------------------------------------------------------

    def encode(self, obj: dict[str, Any]) -> tuple[Key, Entry]:
        """Turn a (transformed) object into its key and a compact entry.

        Raises:
            ValueError: the object has no ``metadata.name``.
        """
        metadata = obj.get("metadata")
        if not isinstance(metadata, dict) or not metadata.get("name"):
            raise ValueError(f"object without metadata.name: {str(obj)[:200]}")
        key = (sys.intern(str(metadata.get("namespace") or "")), str(metadata["name"]))
        indexed = self._index_values(obj) if self._indexers else None
        entry = Entry(
            # orjson's result sits in a buffer of several KiB; a copy is sized to fit.
            bytes(memoryview(orjson.dumps(obj))),
            str(metadata.get("resourceVersion") or ""),
            _interned_labels(metadata.get("labels")),
            indexed,
        )
        return key, entry

    def _index_values(self, obj: dict[str, Any]) -> tuple[tuple[str, tuple[str, ...]], ...] | None:
        found = []
        for name, extract in self._indexers.items():
            values = tuple(sys.intern(str(v)) for v in extract(obj))
            if values:
                found.append((name, values))
        return tuple(found) or None

    # indexes -----------------------------------------------------------------------------

    def add_indexer(self, name: str, extract: Callable[[dict[str, Any]], Iterable[str]]) -> None:
        """Add a field index, computed at once for the objects already stored.

        Raises:
            ValueError: an index of that name exists already.
        """
        if name in self._indexers:
            raise ValueError(f"an index named {name!r} exists already")
        self._indexers[name] = extract
        index: dict[str, set[Key]] = {}
        self._index[name] = index
        for namespace, objects in self._objects.items():
            for obj_name, entry in list(objects.items()):
                new = Entry(
                    entry.data,
                    entry.resource_version,
                    entry.labels,
                    self._index_values(orjson.loads(entry.data)),
                )
                objects[obj_name] = new
                for value in new.values_of(name):
                    index.setdefault(value, set()).add((namespace, obj_name))

    def has_index(self, name: str) -> bool:
        """True if a field index of that name exists."""
        return name in self._indexers

    def by_index(self, name: str, value: str) -> set[Key]:
        """The keys of the objects indexed under ``value`` in index ``name``."""
        return self._index[name].get(value, set())

    def _unindex(self, key: Key, entry: Entry) -> None:
        for name, values in entry.indexed or ():
            index = self._index.get(name)
            if index is None:
                continue
            for value in values:
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]

    def _reindex(self, key: Key, entry: Entry) -> None:
        for name, values in entry.indexed or ():
            index = self._index.get(name)
            if index is not None:
                for value in values:
                    index.setdefault(value, set()).add(key)

    # reads -------------------------------------------------------------------------------

    def get(self, key: Key) -> Entry | None:
        """The entry for a key, or None."""
        objects = self._objects.get(key[0])
        return objects.get(key[1]) if objects is not None else None

    def items(self, namespace: str | None = None) -> Iterator[tuple[Key, Entry]]:
        """Every (key, entry), in one namespace or in all of them."""
        if namespace is not None:
            for name, entry in (self._objects.get(namespace) or {}).items():
                yield (namespace, name), entry
            return
        for ns, objects in self._objects.items():
            for name, entry in objects.items():
                yield (ns, name), entry

    def namespaces(self) -> list[str]:
        """The namespaces that hold at least one object."""
        return [ns for ns, objects in self._objects.items() if objects]

    def select(  # noqa: PLR0912 - one branch per selection option
        self,
        *,
        namespace: str | None,
        labels: Selector | None,
        fields: Sequence[tuple[str, str]],
        description: str,
    ) -> list[tuple[Key, Entry]]:
        """The objects matching a namespace, label selector and exact field matches, sorted.

        Fields are ``metadata.name``, ``metadata.namespace`` or field index names (as
        controller-runtime's cache reader serves them).

        Raises:
            ValueError: a field is neither of those; the message names ``description``.
        """
        candidates: set[Key] | None = None
        for name, value in fields:
            if name == "metadata.namespace":
                if namespace is not None and namespace != value:
                    return []
                namespace = value
            elif name != "metadata.name":
                if not self.has_index(name):
                    raise ValueError(
                        f"field selector {name!r} cannot be served by the cache for "
                        f"{description}: add a field index first with "
                        f"cache.index_field(type_, {name!r}, extract)"
                    )
                keys = self.by_index(name, value)
                candidates = set(keys) if candidates is None else candidates & keys
        names = {value for name, value in fields if name == "metadata.name"}
        if candidates is None:
            pairs = list(self.items(namespace))
        else:
            pairs = []
            for key in candidates:
                if namespace is not None and key[0] != namespace:
                    continue
                entry = self.get(key)
                if entry is not None:
                    pairs.append((key, entry))
        if len(names) > 1:
            return []
        if names:
            (only,) = names
            pairs = [(key, entry) for key, entry in pairs if key[1] == only]
        if labels is not None and not labels.empty:
            pairs = [(key, entry) for key, entry in pairs if labels.matches(entry.labels)]
        pairs.sort(key=lambda pair: pair[0])
        return pairs

    def __len__(self) -> int:
        return sum(len(objects) for objects in self._objects.values())

    # writes ------------------------------------------------------------------------------

    def upsert(self, key: Key, entry: Entry) -> Entry | None:
        """Store ``entry`` under ``key``; return the entry it replaced, if any."""
        objects = self._objects.get(key[0])
        if objects is None:
            objects = self._objects[key[0]] = {}
        old = objects.get(key[1])
        objects[key[1]] = entry
        if old is not None and old.indexed:
            self._unindex(key, old)
        if entry.indexed:
            self._reindex(key, entry)
        return old

    def remove(self, key: Key) -> Entry | None:
        """Remove the object under ``key``; return its last entry, if it was stored."""
        objects = self._objects.get(key[0])
        if objects is None:
            return None
        old = objects.pop(key[1], None)
        if not objects:
            del self._objects[key[0]]
        if old is not None and old.indexed:
            self._unindex(key, old)
        return old

    def replace(
        self, items: Iterable[tuple[Key, Entry]], namespace: str | None = None
    ) -> list[tuple[Key, Entry | None, Entry | None]]:
        """Make the store hold exactly ``items`` (in ``namespace``, or everywhere if None).

        Returns:
            The changes as (key, old, new): added objects have no old entry, vanished ones
            no new entry. Objects whose resourceVersion did not change are left as they
            were and not reported.
        """
        changes: list[tuple[Key, Entry | None, Entry | None]] = []
        previous = dict(self.items()) if namespace is None else dict(self.items(namespace))
        for key, entry in items:
            if namespace is not None and key[0] != namespace:
                continue
            old = previous.pop(key, None)
            if old is not None and old.resource_version == entry.resource_version:
                continue
            self.upsert(key, entry)
            changes.append((key, old, entry))
        for key, old in previous.items():
            self.remove(key)
            changes.append((key, old, None))
        return changes


def to_type(
    obj: dict[str, Any],
    type_: type[T],
    *,
    scheme: Scheme,
    gvk: GroupVersionKind | None = None,
    copy: bool = False,
) -> T:
    """Build an object of the caller's type from decoded JSON.

    Args:
        obj: The decoded object.
        type_: `Unstructured`, `PartialObjectMetadata`, ``dict``, a `CustomResource`
            subclass or a kubernetes-asyncio model.
        scheme: Converts to typed objects.
        gvk: The object's type, used to fill ``apiVersion``/``kind`` of metadata views.
        copy: Whether ``obj`` must be left untouched and unshared; when False the result
            may take ``obj`` itself (for `Unstructured` and ``dict``).
    """
    if copy:
        obj = orjson.loads(orjson.dumps(obj))
    if type_ is Unstructured:
        return cast("T", Unstructured(obj))
    if type_ is dict:
        return cast("T", obj)
    if type_ is PartialObjectMetadata:
        return cast(
            "T",
            PartialObjectMetadata.model_validate(
                {
                    "apiVersion": obj.get("apiVersion") or (gvk.api_version if gvk else ""),
                    "kind": obj.get("kind") or (gvk.kind if gvk else ""),
                    "metadata": obj.get("metadata") or {},
                }
            ),
        )
    return scheme.from_dict(obj, type_)


def decode(
    data: bytes, type_: type[T], *, scheme: Scheme, gvk: GroupVersionKind | None = None
) -> T:
    """Decode a stored object into a new object of the caller's type (see `to_type`)."""
    return to_type(orjson.loads(data), type_, scheme=scheme, gvk=gvk)
