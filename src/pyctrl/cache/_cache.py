"""The Cache: shared informers for every type a manager reads, and reads served from them."""

from __future__ import annotations

import asyncio
import base64
import bisect
import random as _random
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from pyctrl.cache._consistency import ReadYourWrites
from pyctrl.cache._errors import CacheNotReadyError, CacheNotStartedError, ResourceNotCachedError
from pyctrl.cache._informer import Informer, InformerStatus, SharedInformer
from pyctrl.cache._informers import Informers
from pyctrl.cache._namespaces import NamespaceScope
from pyctrl.cache._options import (
    CacheOptions,
    check_namespaces,
    field_requirements,
)
from pyctrl.cache._store import Key, to_type
from pyctrl.client import ObjectList, RESTClient, RESTMapper
from pyctrl.clock import RealClock
from pyctrl.errors import CacheSyncTimeoutError, NotFoundError
from pyctrl.labels import Selector
from pyctrl.labels import parse as parse_labels
from pyctrl.log import get_logger
from pyctrl.scheme import Scheme, default_scheme

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from pyctrl.clock import Clock
    from pyctrl.meta import GroupVersionKind
    from pyctrl.sharding import SlotAssignment

__all__ = ["Cache"]

T = TypeVar("T")

_log = get_logger("pyctrl.cache")


class Cache:
    """Shared informers, one per type (and per metadata-only view), and reads from them.

    It implements `pyctrl.client.Reader`: ``get`` and ``list`` are answered from the
    informers' stores, never from the API server. The first read of a type starts its
    informer and waits for it to sync, as controller-runtime's cache does, for at most
    `CacheOptions.sync_timeout`.

    The cache is a runnable: `start` runs every informer until cancelled. Informers
    asked for after the start begin at once; `remove_informer` stops one.

    The namespaces it watches may change while it runs: `set_namespaces`, or
    `CacheOptions.namespace_selector` to follow the namespaces a label selector picks.

    It implements `pyctrl.client.WriteObserver`: the `pyctrl.client.Client` that reads
    through it tells it of every write, and reads of a written object wait until the
    cache shows that write (see `CacheOptions.read_your_own_writes`).

    Args:
        rest: The `pyctrl.client.RESTClient` to list and watch through.
        mapper: Maps kinds to resources; a new `pyctrl.client.RESTMapper` over ``rest``
            when None.
        scheme: Converts between Python types and JSON; `default_scheme()` when None.
        options: What to cache and how; `CacheOptions()` when None.
        clock: Times backoff, resyncs and health; the event loop's clock when None.
        random: Source of jitter, floats in [0, 1); `random.random` when None.
    """

    def __init__(
        self,
        rest: RESTClient,
        *,
        mapper: RESTMapper | None = None,
        scheme: Scheme | None = None,
        options: CacheOptions | None = None,
        clock: Clock | None = None,
        random: Callable[[], float] | None = None,
    ) -> None:
        if mapper is None:
            mapper = RESTMapper(rest)
        self._scheme = scheme or default_scheme()
        self.options = options or CacheOptions()
        self._clock: Clock = clock or RealClock()
        random = random or _random.random
        self._scope = NamespaceScope(
            self.options,
            on_change=self._set_scope,
            rest=rest,
            mapper=mapper,
            scheme=self._scheme,
            clock=self._clock,
            random=random,
        )
        self._informers = Informers(
            rest,
            mapper,
            self._scheme,
            self.options,
            clock=self._clock,
            random=random,
            scope=self._scope,
        )
        self._own_writes = ReadYourWrites(self._clock, self.options)
        self._started = asyncio.Event()
        self._ran = False
        self._stopped = False

    # running ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Run every informer until cancelled; returns only by cancellation or an error.

        Raises:
            RuntimeError: the cache was started before (a cache runs once).
        """
        if self._ran:
            raise RuntimeError("Cache.start: this cache has been started already")
        self._ran = True
        try:
            async with asyncio.TaskGroup() as tg:
                self._informers.start(tg)
                self._started.set()
                _log.info("cache started", informers=len(self._informers.informers))
                await asyncio.Event().wait()
        finally:
            self._informers.stop()
            self._stopped = True

    # namespaces ------------------------------------------------------------------------

    @property
    def namespaces(self) -> tuple[str, ...] | None:
        """The namespaces namespaced types are cached in now; None for all of them.

        Types given namespaces of their own (`ByObject.namespaces`) keep those.
        """
        return self._scope.namespaces

    def set_namespaces(self, namespaces: Iterable[str] | None) -> None:
        """Cache namespaced types in these namespaces from now on (None: all; empty: none).

        Takes effect at once, also while the cache runs: each informer starts watching
        the namespaces added (a list, then a watch, per namespace) and drops the objects
        of the namespaces removed, telling its handlers with a delete for each. Reads
        of a namespace no longer cached find nothing. Types with `ByObject.namespaces`
        of their own are not affected.

        Raises:
            ValueError: a name is empty, or the cache follows
                `CacheOptions.namespace_selector` (which sets the namespaces itself).
            TypeError: ``namespaces`` is a single string.
        """
        if self._scope.follower is not None:
            raise ValueError(
                "Cache.set_namespaces: this cache follows the namespace selector "
                f"{self._scope.follower.selector!r}; it chooses the namespaces itself"
            )
        scope = None if namespaces is None else check_namespaces("Cache.set_namespaces", namespaces)
        self._scope.dynamic = True
        self._set_scope(scope)

    def _set_scope(self, scope: tuple[str, ...] | None) -> None:
        if self._scope.set(scope):
            self._informers.rescope(scope)

    async def wait_started(self) -> None:
        """Wait until `start` is running."""
        await self._started.wait()

    @property
    def started(self) -> bool:
        """True once `start` is running (and until it ends)."""
        return self._started.is_set() and not self._stopped

    async def wait_for_cache_sync(
        self,
        timeout: float | None = 120.0,  # noqa: ASYNC109 - measured on the cache's clock
    ) -> None:
        """Wait until the cache runs and every informer has completed its first list.

        Raises:
            CacheSyncTimeoutError: not done within ``timeout`` seconds; the message names
                each informer not synced and its last error.
        """
        deadline = None if timeout is None else self._clock.now() + timeout
        try:
            async with self._clock.timeout_at(deadline):
                await self._started.wait()
                while pending := [s for s in self._informers.every() if not s.synced()]:
                    for shared in pending:
                        await shared.wait_synced()
        except TimeoutError:
            if not self._started.is_set():
                raise CacheSyncTimeoutError(
                    f"cache did not start within {timeout:g}s: is Cache.start running?"
                ) from None
            unsynced = self._informers.unsynced()
            raise CacheSyncTimeoutError(
                f"informers not synced within {timeout:g}s: {'; '.join(unsynced)}"
            ) from None

    def synced(self) -> bool:
        """True if the cache runs and every informer has completed its first list."""
        return self.started and all(s.synced() for s in self._informers.every())

    def healthy(self) -> bool:
        """True if the cache runs and no informer has been failing for too long."""
        return self.started and all(s.healthy() for s in self._informers.every())

    def check_ready(self) -> None:
        """A readiness check (`pyctrl.healthz.Checker`): synced and healthy, or raise.

        Raises:
            CacheNotReadyError: names each informer not synced or not healthy, and why.
        """
        if not self.started:
            raise CacheNotReadyError("cache not started")
        problems = self._informers.problems()
        if problems:
            raise CacheNotReadyError("; ".join(problems))

    def status(self) -> list[InformerStatus]:
        """The status of every informer (optional ones not served now as ``inactive``)."""
        informers = (*self._informers.every(), *self._informers.inactive())
        return [shared.status() for shared in informers]

    # informers -------------------------------------------------------------------------

    def shard(self, type_: type[Any] | GroupVersionKind, assignment: SlotAssignment) -> None:
        """Cache only the objects of ``type_`` in ``assignment``'s slots (KEP-5866).

        The type's informers list and watch with the ``shardSelector`` of the slots held,
        and list again whenever they change; a server that ignores the selector is
        filtered for here. `pyctrl.shardelection` calls it for a sharded controller's type.

        Raises:
            RuntimeError: an informer for the type exists already (unsharded).
        """
        self._informers.shard(self._informers.gvk_of(type_), assignment)

    def remove_informer(
        self,
        type_: type[Any],
        *,
        gvk: GroupVersionKind | None = None,
        metadata_only: bool | None = None,
    ) -> bool:
        """Stop the informer of a type and forget it (controller-runtime's ``RemoveInformer``).

        Its watches close, its handlers stop, its objects are dropped. A later read or
        `get_informer` of the type starts a new one (unless
        `CacheOptions.reader_fail_on_missing_informer`).

        Returns:
            Whether there was such an informer.
        """
        return self._informers.remove(self._informers.key(type_, gvk, metadata_only)) is not None

    def get_informer(
        self,
        type_: type[T],
        *,
        gvk: GroupVersionKind | None = None,
        metadata_only: bool | None = None,
        optional: bool = False,
    ) -> Informer[T]:
        """The informer for a type, created (and started, if the cache runs) on first use.

        Args:
            type_: The Python type handlers receive: a model class, a `CustomResource`,
                `Unstructured` or `PartialObjectMetadata` (the last two with ``gvk``).
            gvk: The kind, for untyped ``type_``.
            metadata_only: Cache only metadata. By default: when ``type_`` is
                `PartialObjectMetadata` or the options say so for the kind.
            optional: The kind's CRD may not be installed: a new informer runs only while
                the kind is served (`is_served`), starting when its CRD becomes
                Established and stopping when it goes; meanwhile it is not waited for
                and does not fail readiness. An informer that exists keeps what it is.

        Raises:
            TypeError: ``type_`` is untyped and no ``gvk`` was given.
            pyctrl.errors.SchemeError: ``type_`` is not a known Kubernetes type.
        """
        key = self._informers.key(type_, gvk, metadata_only)
        return Informer(self._informers.get(*key, optional=optional), type_)

    def is_served(self, type_: type[Any], *, gvk: GroupVersionKind | None = None) -> bool:
        """Whether the API server serves ``type_``'s kind now, for reconcilers of optional kinds.

        For a kind watched with ``optional=True``: whether its CRD is Established and
        serves its version (the informer runs). For any other kind: True (the cache
        waits for required kinds).
        """
        key = self._informers.key(type_, gvk, None)
        served = self._informers.is_served(key[0])
        return True if served is None else served

    def index_field(
        self,
        type_: type[T],
        field: str,
        extract: Callable[[T], Iterable[str] | str],
        *,
        gvk: GroupVersionKind | None = None,
    ) -> None:
        """Index objects of a type by a computed field, for ``list(..., fields={field: v})``.

        Like controller-runtime's ``IndexField``: ``extract`` receives each object (a copy,
        of ``type_``) and returns the values to index it under (a string is one value).

        Raises:
            ValueError: the field name is empty or already indexed for the type.
        """
        if not isinstance(field, str) or not field:
            raise ValueError(f"index_field: the field name must be a non-empty string: {field!r}")
        if not callable(extract):
            raise TypeError(f"index_field: extract must be callable, got {extract!r}")
        shared = self._informers.get(*self._informers.key(type_, gvk, None))

        def values(obj: dict[str, Any]) -> Iterable[str]:
            result = extract(to_type(obj, type_, scheme=self._scheme, gvk=shared.gvk, copy=True))
            return (result,) if isinstance(result, str) else result

        shared.add_index(field, values)

    # reads -----------------------------------------------------------------------------

    async def _ready(
        self, type_: type[Any], gvk: GroupVersionKind | None, namespace: str | None = None
    ) -> SharedInformer:
        if not self.started:
            raise CacheNotStartedError(
                "the cache is not running: reads must wait until Cache.start is running "
                "(the Manager starts it)"
            )
        key = self._informers.key(type_, gvk, None)
        if self.options.reader_fail_on_missing_informer and key not in self._informers.informers:
            raise ResourceNotCachedError(
                f"{key[0]}{' (metadata only)' if key[1] else ''} has no informer in the cache "
                "and reader_fail_on_missing_informer is set: start one with "
                "Cache.get_informer first, or read it from the API server"
            )
        shared = self._informers.get(*key)
        if not shared.served:
            raise CacheNotReadyError(
                f"{shared.description} is not served (is its CustomResourceDefinition "
                "installed?): its optional informer is inactive; check Cache.is_served first"
            )
        # Bounded, so that a read of a type the operator may not list (403) or that the
        # server does not serve fails with the reason instead of hanging its reconcile.
        await shared.wait_synced(self.options.sync_timeout)
        if shared.namespaced and not shared.namespace_synced(namespace or None):
            await self._scope.wait_listed(shared, namespace or None)
        return shared

    # own writes ------------------------------------------------------------------------

    def _tracks(self, gvk: GroupVersionKind) -> bool:
        informers = self._informers.informers
        return self.options.read_your_own_writes and any(key[0] == gvk for key in informers)

    def note_write(
        self, gvk: GroupVersionKind, namespace: str, name: str, resource_version: str
    ) -> None:
        """Remember that the client wrote ``namespace/name`` and got ``resource_version``.

        Reads of that object wait until the cache shows it (`CacheOptions.read_your_own_writes`).
        Types without an informer are not tracked.
        """
        if not resource_version or not self._tracks(gvk):
            return
        self._own_writes.record(gvk, (namespace, name), resource_version, False, "")

    def note_delete(self, gvk: GroupVersionKind, namespace: str, name: str, uid: str) -> None:
        """Remember that the client deleted ``namespace/name`` (of ``uid``, when known).

        Reads of that name wait until it has left the cache.
        """
        if not self._tracks(gvk):
            return
        self._own_writes.record(gvk, (namespace, name), "", True, uid)

    async def wait_for_own_writes(
        self,
        type_: type[Any],
        name: str | None = None,
        namespace: str | None = None,
        *,
        gvk: GroupVersionKind | None = None,
    ) -> bool:
        """Wait until the cache shows the client's writes of one object (or of a type).

        With ``name``, the object ``namespace/name``; without, every object of the type
        (in ``namespace``, or everywhere). Controllers call it before each reconcile of
        a key. Does nothing for a type with no informer.

        Returns:
            False if a wait timed out (the cache may still be behind), else True.
        """
        key = self._informers.key(type_, gvk, None)
        shared = self._informers.informers.get(key)
        if shared is None or not len(self._own_writes):
            return True
        return await self._own_writes.caught_up(shared, namespace, name)

    async def get(
        self,
        type_: type[T],
        name: str,
        namespace: str | None = None,
        *,
        gvk: GroupVersionKind | None = None,
    ) -> T:
        """Return a copy of the cached object ``namespace/name``.

        Raises:
            pyctrl.errors.NotFoundError: the cache has no such object.
            CacheNotStartedError: the cache is not running.
            pyctrl.errors.CacheSyncTimeoutError: the type's informer did not sync within
                `CacheOptions.sync_timeout`; the message gives its last error.
            ValueError: a namespaced type was asked for without a namespace, or for a
                namespace the cache does not watch.
        """
        if not name:
            raise ValueError("Cache.get: name must not be empty")
        shared = await self._ready(type_, gvk, namespace)
        ns = ""
        cached = True
        if shared.namespaced:
            if not namespace:
                raise ValueError(f"{shared.description} is namespaced: get() needs a namespace")
            cached = self._scope.check(shared, namespace)
            ns = namespace
        if cached and len(self._own_writes):
            await self._own_writes.caught_up(shared, ns, name)
        entry = shared.store.get((ns, name)) if cached else None
        if entry is None:
            source = self._informers.sources.get((shared.gvk, shared.config.metadata_only))
            plural = (source.plural if source else None) or shared.gvk.kind.lower()
            raise NotFoundError(
                code=404,
                reason="NotFound",
                message=f"{plural}{'.' + shared.gvk.group if shared.gvk.group else ''} "
                f'"{name}" not found',
                details={"name": name, "group": shared.gvk.group, "kind": plural},
            )
        return shared.decode_as(entry, type_)

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
        """Return copies of the cached objects that match, sorted by namespace and name.

        Args:
            type_: The type to return.
            namespace: Only this namespace; all cached namespaces when None.
            labels: A label selector.
            fields: Exact matches on ``metadata.name``, ``metadata.namespace`` or a field
                added with `index_field`.
            limit: At most this many items; ``continue_`` of the result gets the rest.
            continue_: The token from a previous page.
            gvk: The kind, for untyped ``type_``.

        Raises:
            ValueError: a field is not indexed, a token is invalid, or the namespace is
                not cached.
            CacheNotStartedError: the cache is not running.
            pyctrl.errors.CacheSyncTimeoutError: the type's informer did not sync within
                `CacheOptions.sync_timeout`; the message gives its last error.
        """
        if limit is not None and limit <= 0:
            raise ValueError(f"Cache.list: limit must be > 0, got {limit}")
        selector = labels if isinstance(labels, Selector) else parse_labels(labels)
        requirements = field_requirements(fields)
        shared = await self._ready(type_, gvk, namespace)
        scope: str | None = None
        if shared.namespaced and namespace:
            if not self._scope.check(shared, namespace):
                return ObjectList(resource_version=shared.status().resource_version)
            scope = namespace
        if len(self._own_writes):
            await self._own_writes.caught_up(shared, scope, None)
        pairs = shared.select(namespace=scope, labels=selector, fields=requirements)
        start = 0
        if continue_:
            start = bisect.bisect_right([key for key, _ in pairs], _decode_token(continue_))
        end = len(pairs) if limit is None else min(len(pairs), start + limit)
        more = end < len(pairs)
        return ObjectList(
            items=[shared.decode_as(entry, type_) for _, entry in pairs[start:end]],
            resource_version=shared.status().resource_version,
            continue_=_encode_token(pairs[end - 1][0]) if more else None,
            remaining_item_count=len(pairs) - end if more else None,
        )

    def __repr__(self) -> str:
        state = "running" if self.started else ("stopped" if self._stopped else "new")
        return f"<Cache {state}, {len(self._informers.informers)} informers>"


def _encode_token(key: Key) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(list(key))).decode()


def _decode_token(token: str) -> Key:
    try:
        namespace, name = orjson.loads(base64.urlsafe_b64decode(token.encode()))
    except (ValueError, TypeError, orjson.JSONDecodeError):
        raise ValueError(
            f"invalid continue token {token!r}: pass the one a list returned"
        ) from None
    return (str(namespace), str(name))
