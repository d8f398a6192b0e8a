"""The read side of a client: the `Reader` protocol and `ObjectList`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from pyctrl.labels import Selector
    from pyctrl.meta import GroupVersionKind

__all__ = ["ObjectList", "Reader", "WriteObserver"]

T = TypeVar("T")


@dataclass(eq=False)
class ObjectList(Generic[T]):  # noqa: PLW1641 - __eq__ without __hash__: unhashable, as a list
    """One page of a list: the items and where the list stands.

    Iterating an ObjectList iterates its items, and it compares like them: equal to a
    ``list`` holding the same items (``await client.list(...) == []``), and to another
    ObjectList with the same items and list metadata.

    Attributes:
        items: The objects, of the type the caller asked for.
        resource_version: The list's ``metadata.resourceVersion``: start a watch here.
        continue_: The token to pass as ``continue_=`` for the next page, or None on the
            last page.
        remaining_item_count: How many more items the server estimates, when it says.
    """

    items: list[T] = field(default_factory=list)
    resource_version: str = ""
    continue_: str | None = None
    remaining_item_count: int | None = None

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list):
            return self.items == other
        if isinstance(other, ObjectList):
            return (
                self.items,
                self.resource_version,
                self.continue_,
                self.remaining_item_count,
            ) == (
                other.items,
                other.resource_version,
                other.continue_,
                other.remaining_item_count,
            )
        return NotImplemented


@runtime_checkable
class Reader(Protocol):
    """Reads objects by type (an extension point; controller-runtime's ``client.Reader``).

    `pyctrl.client.Client` implements it against the API server (or its cache), and
    `pyctrl.cache.Cache` against informers. ``type_`` is a `CustomResource` subclass, a
    kubernetes-asyncio model class (``V1Pod``), `Unstructured` or `PartialObjectMetadata`;
    for the last two the kind is given as ``gvk=``. Returned objects are new: callers
    may change them freely.
    """

    async def get(
        self,
        type_: type[T],
        name: str,
        namespace: str | None = None,
        *,
        gvk: GroupVersionKind | None = None,
    ) -> T:
        """Return the object ``namespace/name`` of ``type_``.

        Raises:
            pyctrl.errors.NotFoundError: It does not exist.
        """
        ...

    async def list(
        self,
        type_: type[T],
        *,
        namespace: str | None = None,
        labels: str | Mapping[str, str] | Selector | None = None,
        fields: str | Mapping[str, str] | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        gvk: GroupVersionKind | None = None,
    ) -> ObjectList[T]:
        """Return the objects of ``type_`` in ``namespace`` (all namespaces if None).

        ``labels`` and ``fields`` filter by selector; ``limit`` and ``continue_`` page.
        """
        ...


@runtime_checkable
class WriteObserver(Protocol):
    """Told of every write a `pyctrl.client.Client` makes (an extension point).

    `pyctrl.cache.Cache` implements it, so that its reads never go behind the client's
    own writes: a `Client` whose ``cache`` is a WriteObserver reports each successful
    write (not dry runs) with the resourceVersion the server returned, and each delete.
    """

    def note_write(
        self, gvk: GroupVersionKind, namespace: str, name: str, resource_version: str
    ) -> None:
        """``namespace/name`` of ``gvk`` was written and is now at ``resource_version``."""
        ...

    def note_delete(self, gvk: GroupVersionKind, namespace: str, name: str, uid: str) -> None:
        """``namespace/name`` of ``gvk`` (of ``uid``, "" if unknown) was deleted."""
        ...
