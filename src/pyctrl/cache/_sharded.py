"""Sharded informers: list and watch only the objects in this replica's slots (KEP-5866).

A type sharded with `pyctrl.cache.Cache.shard` is listed and watched through a
`ShardedSource`: every list and watch carries the ``shardSelector`` of the slots the
replica holds at that moment (`pyctrl.sharding.SlotAssignment`), so the API server sends
only those objects. When the held slots change, the open watch ends at once and the
informer lists again with the new selector: the store is replaced, objects of slots
gained arrive as adds, objects of slots lost leave as deletes.

A server that applied the selector echoes it in the list's ``metadata.shardInfo`` (in a
streaming list, in the bookmark that ends its initial events). One that does not (a
server before Kubernetes 1.36, or with the ``ShardedListAndWatch`` gate off) ignores the
parameter and sends everything: the source then filters by itself, which is just as
correct, only less efficient. Which of the two happens is logged when it
changes and published as ``pyctrl_shard_server_filtering{gvk}`` (1: the server
filters; 0: this process does). Objects outside the slots are dropped either way.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from prometheus_client import Gauge

from pyctrl import metrics
from pyctrl.cache._listwatch import RESTSource
from pyctrl.cache._reflector import INITIAL_EVENTS_END, ListPage
from pyctrl.errors import GoneError
from pyctrl.log import get_logger
from pyctrl.reconcile import Request
from pyctrl.sharding import FIELD_UID

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable

    from pyctrl.cache._informer import Informer
    from pyctrl.sharding import ShardSelector, SlotAssignment

__all__ = [
    "UID_INDEX",
    "ShardedSource",
    "ShardsChangedError",
    "cached_in_slots",
    "cached_uid",
    "keys_in_slots",
]

_log = get_logger("pyctrl.cache")
T = TypeVar("T")

UID_INDEX = "pyctrl.io/uid"
"""The store index a sharded informer keeps of each object's uid."""

server_filtering = Gauge(
    "pyctrl_shard_server_filtering",
    "1 while the API server filters a sharded type by shardSelector (KEP-5866), "
    "0 while this process filters it by itself (the server ignored the selector).",
    ["gvk"],
    registry=metrics.registry,
)
shard_objects = Gauge(
    "pyctrl_shard_objects",
    "Objects of a sharded type in this replica's cache (its share).",
    ["gvk"],
    registry=metrics.registry,
)


class ShardsChangedError(GoneError):
    """The replica's slots changed: the watch ends and the informer lists again."""


@dataclass(frozen=True, slots=True)
class _Snapshot:
    version: int
    selector: ShardSelector | None


class ShardedSource(RESTSource):
    """A `RESTSource` that asks for, and keeps, only the objects in the held slots.

    Args:
        *args: As for `RESTSource`.
        assignment: The slots held, read at each list and watched for changes.
        **kwargs: As for `RESTSource`.
    """

    def __init__(self, *args: Any, assignment: SlotAssignment, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.assignment = assignment
        self.server_side: bool | None = None
        """Whether the server applied the selector on the last list; None before one."""
        self._label = f"{self._gvk.api_version}/{self._gvk.kind}"
        self._snapshots: dict[str | None, _Snapshot] = {}
        self._sending: ShardSelector | None = None

    def _selectors(self) -> dict[str, str]:
        query = super()._selectors()
        if self._sending is not None:
            query["shardSelector"] = str(self._sending)
        return query

    async def list(self, **kwargs: Any) -> ListPage:
        """One page, of the slots held when the list began (filtered here if need be)."""
        namespace = kwargs.get("namespace")
        snapshot = self._snapshots.get(namespace)
        if kwargs.get("continue_") is None or snapshot is None:
            snapshot = _Snapshot(self.assignment.version, self.assignment.selector())
            self._snapshots[namespace] = snapshot
        selector = snapshot.selector
        if selector is None:
            # No slot: nothing to list, and the watch waits for a slot to arrive.
            return ListPage(items=[], resource_version="")
        self._sending = selector
        try:
            page = await super().list(**kwargs)
        finally:
            self._sending = None
        if kwargs.get("continue_") is None:
            echoed = (self.list_metadata.get("shardInfo") or {}).get("selector")
            self._note_mode(echoed == str(selector))
        kept = [item for item in page.items if selector.matches(item)]
        return ListPage(
            items=kept, resource_version=page.resource_version, continue_=page.continue_
        )

    def _note_mode(self, server_side: bool) -> None:
        if server_side == self.server_side:
            return
        self.server_side = server_side
        server_filtering.labels(self._label).set(1 if server_side else 0)
        if server_side:
            _log.info("the API server filters this sharded type (shardSelector)", type=self._label)
        else:
            _log.warning(
                "the API server ignored shardSelector (no metadata.shardInfo: older than "
                "Kubernetes 1.36, or the ShardedListAndWatch gate is off); filtering here",
                type=self._label,
            )

    @contextlib.asynccontextmanager
    async def watch(self, **kwargs: Any) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        """A watch of the slots the last list was made for; ends when they change.

        A streaming list (``send_initial_events``) is a list: it is made for the slots
        held now, and its closing bookmark says whether the server applied the selector.
        """
        namespace = kwargs.get("namespace")
        initial = bool(kwargs.get("send_initial_events"))
        if initial:
            snapshot = _Snapshot(self.assignment.version, self.assignment.selector())
            self._snapshots[namespace] = snapshot
        else:
            found = self._snapshots.get(namespace)
            if found is None or found.version != self.assignment.version:
                raise ShardsChangedError(410, "Gone", "this replica's shard slots changed")
            snapshot = found
        if snapshot.selector is None:
            yield self._until_changed(snapshot, initial=initial)
            return
        self._sending = snapshot.selector
        try:
            # The query is built as the watch opens, before its first await.
            async with super().watch(**kwargs) as stream:
                self._sending = None
                yield self._filtered(stream, snapshot)
        finally:
            self._sending = None

    async def _until_changed(
        self, snapshot: _Snapshot, *, initial: bool
    ) -> AsyncIterator[dict[str, Any]]:
        if initial:  # an empty streaming list: only its closing bookmark
            yield {
                "type": "BOOKMARK",
                "object": {"metadata": {"annotations": {INITIAL_EVENTS_END: "true"}}},
            }
        changed = asyncio.Event()
        remove = self.assignment.add_listener(changed.set)
        try:
            while self.assignment.version == snapshot.version:
                await changed.wait()
                changed.clear()
                if self.assignment.version == snapshot.version:
                    yield {"type": "BOOKMARK", "object": {"metadata": {}}}  # pragma: no cover
        finally:
            remove()
        raise ShardsChangedError(410, "Gone", "this replica's shard slots changed")

    async def _filtered(
        self, stream: AsyncIterator[dict[str, Any]], snapshot: _Snapshot
    ) -> AsyncIterator[dict[str, Any]]:
        selector = snapshot.selector
        assert selector is not None
        loop = asyncio.get_running_loop()
        waiting: asyncio.Timeout | None = None

        def on_change() -> None:
            # Only interrupt a read in progress: between events, the check below sees it.
            # Two changes before the read wakes: the first already made it expire, and an
            # expiring Timeout refuses to be rescheduled.
            if waiting is not None and not waiting.expired():
                waiting.reschedule(loop.time())

        remove = self.assignment.add_listener(on_change)
        events = aiter(stream)
        try:
            while True:
                if self.assignment.version != snapshot.version:
                    raise ShardsChangedError(410, "Gone", "this replica's shard slots changed")
                try:
                    async with asyncio.timeout(None) as waiting:
                        event = await anext(events)
                except StopAsyncIteration:
                    return
                except TimeoutError:
                    if self.assignment.version != snapshot.version:
                        raise ShardsChangedError(
                            410, "Gone", "this replica's shard slots changed"
                        ) from None
                    raise
                finally:
                    waiting = None
                obj = event.get("object")
                kind = event.get("type")
                if kind == "BOOKMARK" and isinstance(obj, dict):
                    metadata = obj.get("metadata") or {}
                    if (metadata.get("annotations") or {}).get(INITIAL_EVENTS_END) == "true":
                        echoed = (metadata.get("shardInfo") or {}).get("selector")
                        self._note_mode(echoed == str(selector))
                elif (
                    kind in ("ADDED", "MODIFIED", "DELETED")
                    and isinstance(obj, dict)
                    and not selector.matches(obj)
                ):
                    continue
                yield event
        finally:
            remove()


def cached_uid(informer: Informer[Any], namespace: str, name: str) -> str | None:
    """The uid of a cached object of a sharded informer, or None if it is not cached."""
    shared = informer._shared
    entry = shared.store.get((namespace, name))
    if entry is None:
        return None
    values = entry.values_of(UID_INDEX)
    return values[0] if values else None


def keys_in_slots(
    informer: Informer[Any], assignment: SlotAssignment, slots: Iterable[int]
) -> list[Request]:
    """The requests of the cached objects (of a sharded informer) in ``slots``."""
    wanted = set(slots)
    shared = informer._shared
    by_namespace = assignment.field != FIELD_UID
    out: list[Request] = []
    for (namespace, name), entry in shared.store.items():
        values = entry.values_of(UID_INDEX)
        value = namespace if by_namespace else (values[0] if values else None)
        if value is not None and assignment.slot_of_value(value) in wanted:
            out.append(Request(namespace, name))
    return out


def cached_in_slots(
    informer: Informer[T], assignment: SlotAssignment, slots: Iterable[int]
) -> list[T]:
    """The cached objects (of a sharded informer, as the informer's type) in ``slots``."""
    shared = informer._shared
    out: list[T] = []
    for request in keys_in_slots(informer, assignment, slots):
        entry = shared.store.get((request.namespace or "", request.name))
        if entry is not None:
            out.append(shared.decode_as(entry, informer.type_))
    return out
