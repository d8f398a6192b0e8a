"""Reads that never go behind your own writes: the client's writes the cache has not shown yet.

After a write through the manager's client returns resourceVersion R, a cached read of
that object (and the next reconcile of its key) waits until the cache holds R or newer;
after a delete returns, until the cache no longer holds the object. The wait is bounded
(`pyctrl.cache.CacheOptions.own_writes_timeout`): past it the read goes on with what the
cache has, logs a warning and counts ``pyctrl_cache_own_write_waits_total{result="timeout"}``.

Comparing versions. Resource versions are opaque strings to clients, except that since
Kubernetes 1.35 (KEP-5504, a conformance requirement) the API server promises that the
resource versions of one resource type are decimal integers that grow with every write,
and client-go compares them with ``CompareResourceVersion``: digits only, no leading
zero, longer is larger, else compare digit by digit. The rule used here:

- the cache has caught up with a write at R when the cached object's resourceVersion is
  R, or both are comparable and it is greater, or the informer's watch (the reflector
  covering the object's namespace) has delivered an event or bookmark at a comparable
  version not older than R: every event up to R has then been applied, so the object is
  at R or newer, or gone, or no longer selected;
- when either version is not comparable (a server that does not follow KEP-5504), only
  an equal resourceVersion counts, and the wait may run to its timeout;
- a delete is caught up when the cache has no object of that name, or one with another
  UID (a re-created namesake).

controller-runtime's read-your-own-writes client (PR #3472/#3473) compares parsed
integers the same way; the Java Operator SDK (5.3) keeps the written object in a
temporary cache until an event at that resourceVersion or a later one arrives.

Pending writes live until caught up or until their deadline; nothing is kept longer.
Waiting happens only in readers (reads and reconciles), never on the watch path: the
informer only wakes waiters when its store or version moves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import orjson

from pyctrl import metrics
from pyctrl.log import get_logger

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pyctrl.cache._informer import SharedInformer
    from pyctrl.cache._options import CacheOptions
    from pyctrl.cache._store import Key
    from pyctrl.clock import Clock
    from pyctrl.meta import GroupVersionKind

__all__ = ["OwnWrites", "PendingWrite", "ReadYourWrites", "compare_resource_versions"]

_log = get_logger("pyctrl.cache")


def _comparable(version: str) -> bool:
    return version.isdigit() and version.isascii() and (version == "0" or version[0] != "0")


def compare_resource_versions(a: str, b: str) -> int | None:
    """Compare two resourceVersions as KEP-5504 allows: -1, 0 or 1; None if not comparable.

    Both must be decimal integers without leading zeros (what kube-apiserver promises for
    one resource type since 1.35); anything else is opaque and cannot be ordered.
    """
    if not (_comparable(a) and _comparable(b)):
        return None
    if len(a) != len(b):
        return -1 if len(a) < len(b) else 1
    return (a > b) - (a < b)


@dataclass(slots=True)
class PendingWrite:
    """A write the cache has not shown yet.

    Attributes:
        resource_version: The version the write returned; for a delete, "".
        deleted: The write was a delete that removed the object.
        uid: For a delete, the deleted object's UID, when known.
        deadline: Clock time after which reads stop waiting for it.
    """

    resource_version: str
    deleted: bool
    uid: str
    deadline: float

    def caught_up(self, shared: SharedInformer, key: Key) -> bool:  # noqa: PLR0911 - one answer per case of KEP-5504's comparison
        """Whether ``shared``'s store shows this write (see the module documentation)."""
        entry = shared.store.get(key)
        if self.deleted:
            if entry is None:
                return True
            if not self.uid:
                return False
            metadata = orjson.loads(entry.data).get("metadata") or {}
            return bool(metadata.get("uid")) and metadata.get("uid") != self.uid
        written = self.resource_version
        if entry is not None:
            if entry.resource_version == written:
                return True
            order = compare_resource_versions(entry.resource_version, written)
            if order is not None and order > 0:
                return True
        reflector = shared.reflector_for(key[0])
        if reflector is None:
            return True  # the namespace is not watched: nothing will ever show it
        if not reflector.listed:
            return False
        order = compare_resource_versions(reflector.resource_version, written)
        return order is not None and order >= 0


class OwnWrites:
    """The client's pending writes, by type and object, oldest first."""

    def __init__(self) -> None:
        self._pending: dict[tuple[GroupVersionKind, Key], PendingWrite] = {}

    def __len__(self) -> int:
        return len(self._pending)

    def record(self, gvk: GroupVersionKind, key: Key, write: PendingWrite, now: float) -> None:
        """Remember a write (replacing an older one of the same object); prune expired ones."""
        self._pending.pop((gvk, key), None)
        self._pending[(gvk, key)] = write
        # Deadlines grow with insertion order (one timeout for all): the expired are first.
        while self._pending:
            oldest = next(iter(self._pending))
            if self._pending[oldest].deadline > now:
                break
            del self._pending[oldest]

    def get(self, gvk: GroupVersionKind, key: Key) -> PendingWrite | None:
        """The pending write of one object, if any."""
        return self._pending.get((gvk, key))

    def of_type(self, gvk: GroupVersionKind, namespace: str | None) -> Iterator[Key]:
        """The keys of the pending writes of a type (in one namespace, or all)."""
        for kind, key in list(self._pending):
            if kind == gvk and (namespace is None or key[0] == namespace):
                yield key

    def discard(self, gvk: GroupVersionKind, key: Key, write: PendingWrite) -> None:
        """Forget ``write`` if it is still the object's pending write."""
        if self._pending.get((gvk, key)) is write:
            del self._pending[(gvk, key)]

    def types(self) -> set[GroupVersionKind]:
        """The types with pending writes."""
        return {gvk for gvk, _ in self._pending}


class ReadYourWrites:
    """The client's writes a cache has not shown yet, and the reads that wait for them.

    Args:
        clock: The cache's clock (deadlines and waits).
        options: The cache's options (``own_writes_timeout``).
    """

    def __init__(self, clock: Clock, options: CacheOptions) -> None:
        self._clock = clock
        self._options = options
        self._own_writes = OwnWrites()

    def __len__(self) -> int:
        return len(self._own_writes)

    def record(
        self, gvk: GroupVersionKind, key: Key, resource_version: str, deleted: bool, uid: str
    ) -> None:
        """Remember a write (or a delete) the client made, due by ``own_writes_timeout``."""
        now = self._clock.now()
        write = PendingWrite(resource_version, deleted, uid, now + self._options.own_writes_timeout)
        self._own_writes.record(gvk, key, write, now)

    async def caught_up(
        self, shared: SharedInformer, namespace: str | None, name: str | None
    ) -> bool:
        """Wait until ``shared`` shows the pending writes of one object (or of its type).

        Returns:
            False if a wait timed out, else True.
        """
        gvk = shared.gvk
        if not shared.namespaced:
            namespace = ""
        if name is not None:
            keys = [(namespace or "", name)]
        else:
            keys = list(self._own_writes.of_type(gvk, namespace or None))
        caught_up = True
        for key in keys:
            write = self._own_writes.get(gvk, key)
            if write is None:
                continue
            if not write.caught_up(shared, key):
                caught_up = await self._wait_write(shared, key, write) and caught_up
            self._own_writes.discard(gvk, key, write)
        return caught_up

    async def _wait_write(self, shared: SharedInformer, key: Key, write: PendingWrite) -> bool:
        label = f"{shared.gvk.api_version}/{shared.gvk.kind}"
        try:
            async with self._clock.timeout_at(write.deadline):
                while not write.caught_up(shared, key):
                    await shared.wait_progress()
        except TimeoutError:
            metrics.cache_own_write_waits_total.labels(label, "timeout").inc()
            _log.warning(
                "cache did not show the client's own write in time; reading what it has",
                type=shared.description,
                namespace=key[0],
                name=key[1],
                written=write.resource_version or "deleted",
                timeout=self._options.own_writes_timeout,
            )
            return False
        metrics.cache_own_write_waits_total.labels(label, "caught_up").inc()
        return True
