"""Objects as the cache holds them, handed to a controller's sources undecoded.

A `CachedObject` is one stored entry (the object's JSON encoding and the fields reads
filter on) with its key: what an informer gives a `CachedEventHandler`. Nothing is
decoded until asked for: ``namespace``, ``name`` and ``resource_version`` come from the
store for free; `CachedObject.meta` reads the metadata from the JSON (no typed model is
built), `CachedObject.raw` the whole JSON; `CachedObject.object` builds the typed object
once, on first use. A controller's
watch whose predicates and handler only look at metadata (the default ``for_`` watch)
so never builds the typed object of an event: its reconcile reads a fresh one anyway.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

import orjson

from pyctrl.resource import ObjectAccessor

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyctrl.cache._store import Entry, Key

__all__ = ["CachedObject"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

_UNSET: Any = object()


class CachedObject(Generic[T_co]):
    """One object of an informer's store, decoded into its type only when first asked for.

    Each handler gets its own, so the object it decodes is its own copy, as with
    `pyctrl.cache.ResourceEventHandler`.

    Args:
        key: ``(namespace, name)``.
        entry: The stored entry.
        type_: The type `object` decodes into.
        decode_as: Builds an object of a type from an entry (the informer's).
    """

    __slots__ = ("_decode_as", "_entry", "_key", "_metadata", "_object", "_raw", "_type")

    def __init__(
        self,
        key: Key,
        entry: Entry,
        type_: type[T_co],
        decode_as: Callable[[Entry, type[T_co]], T_co],
    ) -> None:
        self._key, self._entry, self._type, self._decode_as = key, entry, type_, decode_as
        self._object: T_co = _UNSET
        self._metadata: dict[str, Any] | None = None
        self._raw: dict[str, Any] | None = None

    @property
    def namespace(self) -> str:
        """``metadata.namespace`` ("" when cluster-scoped), without decoding."""
        return self._key[0]

    @property
    def name(self) -> str:
        """``metadata.name``, without decoding."""
        return self._key[1]

    @property
    def resource_version(self) -> str:
        """``metadata.resourceVersion``, without decoding."""
        return self._entry.resource_version

    @property
    def type(self) -> type[T_co]:
        """The type `object` decodes into (the handler's)."""
        return self._type

    @property
    def decoded(self) -> bool:
        """Whether `object` was built already."""
        return self._object is not _UNSET

    @property
    def object(self) -> T_co:
        """The typed object: decoded on first use, the same object afterwards."""
        obj = self._object
        if obj is _UNSET:
            obj = self._object = self._decode_as(self._entry, self._type)
        return obj

    def metadata(self) -> dict[str, Any]:
        """``metadata`` as decoded JSON (read once; no typed model is built)."""
        found = self._metadata
        if found is None:
            raw = self._raw if self._raw is not None else orjson.loads(self._entry.data)
            found = self._metadata = raw.get("metadata") or {}
        return found

    def raw(self) -> dict[str, Any]:
        """The whole object as decoded JSON, as the cache holds it (no typed model is built).

        Read once, and shared by every caller of this `CachedObject`: read it, do not
        change it.
        """
        found = self._raw
        if found is None:
            found = self._raw = orjson.loads(self._entry.data)
        return found

    def meta(self) -> ObjectAccessor:
        """A metadata accessor: over `object` once decoded, else read-only over the JSON."""
        if self._object is not _UNSET:
            return ObjectAccessor(self._object)
        return CachedMeta(self)

    def __repr__(self) -> str:
        namespace, name = self._key
        described = f"{namespace}/{name}" if namespace else name
        return f"<CachedObject {self._type.__qualname__} {described} rv={self.resource_version}>"


class CachedMeta(ObjectAccessor):
    """A read-only `pyctrl.resource.ObjectAccessor` over a `CachedObject`'s metadata.

    Namespace, name and resourceVersion come from the store; the rest from the JSON, read
    on first use. Setting a field raises: the cache's copy is not the handler's to change.
    """

    __slots__ = ("_cached",)

    def __init__(self, cached: CachedObject[Any]) -> None:
        # Not ObjectAccessor's __init__, which looks at an object: this one reads lazily.
        self._cached = cached
        self._kind = "dict"

    def _get(self, attr: str, key: str) -> Any:
        return self._cached.metadata().get(key)

    def _set(self, attr: str, key: str, value: Any) -> None:
        raise AttributeError(
            f"metadata.{key} of an event's cached object is read-only: "
            "change the event's .object instead"
        )

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return self._cached.name

    @property
    def namespace(self) -> str:
        """``metadata.namespace`` ("" when cluster-scoped)."""
        return self._cached.namespace

    @property
    def resource_version(self) -> str:
        """``metadata.resourceVersion``."""
        return self._cached.resource_version
