"""The Cache: shared informers for every type a manager reads, and reads served from them."""

from __future__ import annotations

import asyncio
import base64
import bisect
import contextvars
import random as _random
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from pyctrl import metrics
from pyctrl.cache._consistency import OwnWrites, PendingWrite
from pyctrl.cache._errors import CacheNotReadyError, CacheNotStartedError, ResourceNotCachedError
from pyctrl.cache._informer import Informer, InformerConfig, InformerStatus, SharedInformer
from pyctrl.cache._listwatch import RESTSource
from pyctrl.cache._namespaces import NamespaceFollower
from pyctrl.cache._options import (
    ByObject,
    CacheOptions,
    check_namespaces,
    field_requirements,
    field_selector_string,
    selector_string,
)
from pyctrl.cache._sharded import UID_INDEX, ShardedSource, shard_objects
from pyctrl.cache._store import Key, to_type
from pyctrl.client import ObjectList, RESTClient, RESTMapper
from pyctrl.clock import RealClock
from pyctrl.errors import CacheSyncTimeoutError, NotFoundError
from pyctrl.labels import Selector
from pyctrl.labels import parse as parse_labels
from pyctrl.log import get_logger
from pyctrl.meta import GroupVersionKind
from pyctrl.resource import PartialObjectMetadata, Unstructured
from pyctrl.scheme import Scheme, default_scheme

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from pyctrl.clock import Clock
    from pyctrl.sharding import SlotAssignment

__all__ = ["Cache"]

T = TypeVar("T")

_log = get_logger("pyctrl.cache")
_UNTYPED: tuple[type[Any], ...] = (Unstructured, PartialObjectMetadata, dict)


def _uid_of(obj: dict[str, Any]) -> list[str]:
    uid = (obj.get("metadata") or {}).get("uid")
    return [uid] if uid else []


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
        self._rest = rest
        self._mapper = mapper
        self._scheme = scheme or default_scheme()
        self.options = options or CacheOptions()
        self._clock: Clock = clock or RealClock()
        self._random = random or _random.random
        self._by_type: dict[GroupVersionKind, ByObject] = {
            self._gvk_of(key): value for key, value in self.options.by_type.items()
        }
        self._metadata_only = {self._gvk_of(key) for key in self.options.metadata_only}
        self._informers: dict[tuple[GroupVersionKind, bool], SharedInformer] = {}
        self._shards: dict[GroupVersionKind, SlotAssignment] = {}
        self._sources: dict[tuple[GroupVersionKind, bool], RESTSource] = {}
        self._tasks: dict[tuple[GroupVersionKind, bool], asyncio.Task[None]] = {}
        # Informers that follow the cache-wide namespaces (no ByObject namespaces of their own).
        self._followers: set[tuple[GroupVersionKind, bool]] = set()
        self._scope: tuple[str, ...] | None = tuple(self.options.namespaces) or None
        self._dynamic = False
        self._own_writes = OwnWrites()
        self._selector: NamespaceFollower | None = None
        if self.options.namespace_selector is not None:
            self._selector = NamespaceFollower(
                selector_string(self.options.namespace_selector) or "",
                self._selected,
                rest=rest,
                mapper=mapper,
                scheme=self._scheme,
                options=self.options,
                clock=self._clock,
                random=self._random,
            )
            self._scope = ()
        self._tg: asyncio.TaskGroup | None = None
        self._started = asyncio.Event()
        self._ran = False
        self._stopped = False

    def _gvk_of(self, key: type[Any] | GroupVersionKind) -> GroupVersionKind:
        if isinstance(key, GroupVersionKind):
            return key
        return self._scheme.gvk_for(key)

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
                self._tg = tg
                if self._selector is not None:
                    tg.create_task(
                        self._selector.run(),
                        name=f"informer {self._selector.informer.description}",
                        context=contextvars.Context(),
                    )
                for key, shared in self._informers.items():
                    self._run(key, shared)
                self._started.set()
                _log.info("cache started", informers=len(self._informers))
                await asyncio.Event().wait()
        finally:
            self._tg = None
            self._stopped = True

    def _run(self, key: tuple[GroupVersionKind, bool], shared: SharedInformer) -> None:
        assert self._tg is not None
        # A fresh context: an informer asked for inside a reconcile must not log as it.
        self._tasks[key] = self._tg.create_task(
            self._informer_main(key, shared),
            name=f"informer {shared.description}",
            context=contextvars.Context(),
        )

    async def _informer_main(
        self, key: tuple[GroupVersionKind, bool], shared: SharedInformer
    ) -> None:
        if self._selector is not None and key in self._followers:
            # Which namespaces to watch is not known before the selected ones are listed.
            await self._selector.known.wait()
            shared.set_scope(self._scope)
        await shared.run()

    def _every(self) -> list[SharedInformer]:
        every = list(self._informers.values())
        if self._selector is not None:
            every.append(self._selector.informer)
        return every

    # namespaces ------------------------------------------------------------------------

    @property
    def namespaces(self) -> tuple[str, ...] | None:
        """The namespaces namespaced types are cached in now; None for all of them.

        Types given namespaces of their own (`ByObject.namespaces`) keep those.
        """
        return self._scope

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
        if self._selector is not None:
            raise ValueError(
                "Cache.set_namespaces: this cache follows the namespace selector "
                f"{self._selector.selector!r}; it chooses the namespaces itself"
            )
        scope = None if namespaces is None else check_namespaces("Cache.set_namespaces", namespaces)
        self._dynamic = True
        self._set_scope(scope)

    def _selected(self, names: tuple[str, ...]) -> None:
        self._set_scope(names)

    def _set_scope(self, scope: tuple[str, ...] | None) -> None:
        if scope == self._scope:
            return
        _log.info("cached namespaces changed", namespaces=list(scope) if scope else scope)
        self._scope = scope
        for key in self._followers:
            shared = self._informers.get(key)
            if shared is not None:
                shared.set_scope(scope)

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
                while pending := [s for s in self._every() if not s.synced()]:
                    for shared in pending:
                        await shared.wait_synced()
        except TimeoutError:
            if not self._started.is_set():
                raise CacheSyncTimeoutError(
                    f"cache did not start within {timeout:g}s: is Cache.start running?"
                ) from None
            unsynced = [
                s.description + (f" (last error: {s.last_error()})" if s.last_error() else "")
                for s in self._every()
                if not s.synced()
            ]
            raise CacheSyncTimeoutError(
                f"informers not synced within {timeout:g}s: {'; '.join(unsynced)}"
            ) from None

    def synced(self) -> bool:
        """True if the cache runs and every informer has completed its first list."""
        return self.started and all(s.synced() for s in self._every())

    def healthy(self) -> bool:
        """True if the cache runs and no informer has been failing for too long."""
        return self.started and all(s.healthy() for s in self._every())

    def check_ready(self) -> None:
        """A readiness check (`pyctrl.healthz.Checker`): synced and healthy, or raise.

        Raises:
            CacheNotReadyError: names each informer not synced or not healthy, and why.
        """
        if not self.started:
            raise CacheNotReadyError("cache not started")
        problems = []
        for shared in self._every():
            synced, healthy = shared.synced(), shared.healthy()
            if synced and healthy:
                continue
            what = " and ".join(
                word for word, bad in (("not synced", not synced), ("failing", not healthy)) if bad
            )
            error = shared.last_error()
            problems.append(f"{shared.description}: {what}" + (f" ({error})" if error else ""))
        if problems:
            raise CacheNotReadyError("; ".join(problems))

    def status(self) -> list[InformerStatus]:
        """The status of every informer."""
        return [shared.status() for shared in self._every()]

    # informers -------------------------------------------------------------------------

    def _key(
        self, type_: type[Any], gvk: GroupVersionKind | None, metadata_only: bool | None
    ) -> tuple[GroupVersionKind, bool]:
        if not isinstance(type_, type):
            raise TypeError(f"expected a type (e.g. V1Pod or Unstructured), got {type_!r}")
        if type_ in _UNTYPED:
            if gvk is None:
                raise TypeError(
                    f"{type_.__name__} does not say which kind it is: "
                    "pass gvk=GroupVersionKind(...)"
                )
        else:
            own = self._scheme.gvk_for(type_)
            if gvk is not None and gvk != own:
                raise ValueError(f"gvk={gvk} does not match {type_.__qualname__}, which is {own}")
            gvk = own
        if metadata_only is None:
            by_type = self._by_type.get(gvk)
            metadata_only = (
                type_ is PartialObjectMetadata
                or gvk in self._metadata_only
                or bool(by_type and by_type.metadata_only)
            )
        return gvk, metadata_only

    def _shared(self, gvk: GroupVersionKind, metadata_only: bool) -> SharedInformer:
        key = (gvk, metadata_only)
        shared = self._informers.get(key)
        if shared is not None:
            return shared
        options = self.options
        by_type = self._by_type.get(gvk) or ByObject()
        source_args: dict[str, Any] = {
            "label_selector": selector_string(by_type.labels),
            "field_selector": field_selector_string(by_type.fields),
            "metadata_only": metadata_only,
        }
        assignment = self._shards.get(gvk)
        source = (
            RESTSource(self._rest, self._mapper, gvk, **source_args)
            if assignment is None
            else ShardedSource(self._rest, self._mapper, gvk, assignment=assignment, **source_args)
        )
        follows = by_type.namespaces is None
        config = InformerConfig(
            namespaces=tuple(by_type.namespaces or ()) if not follows else self._scope or (),
            transform=by_type.transform or options.default_transform,
            metadata_only=metadata_only,
            resync_period=options.sync_period,
            backoff=options.backoff,
            page_size=options.page_size,
            watch_list=options.watch_list,
            min_watch_timeout=options.min_watch_timeout,
            idle_timeout=options.watch_idle_timeout,
            unhealthy_after=options.unhealthy_after,
        )
        shared = SharedInformer(
            gvk=gvk,
            source=source,
            config=config,
            scheme=self._scheme,
            clock=self._clock,
            random=self._random,
        )
        if assignment is not None:
            shared.add_index(UID_INDEX, _uid_of)
            shard_objects.labels(shared.description).set_function(lambda: len(shared.store))
        if follows:
            self._followers.add(key)
            shared.set_scope(self._scope)
        self._informers[key] = shared
        self._sources[key] = source
        if self._tg is not None:
            self._run(key, shared)
        return shared

    def shard(self, type_: type[Any] | GroupVersionKind, assignment: SlotAssignment) -> None:
        """Cache only the objects of ``type_`` in ``assignment``'s slots (KEP-5866).

        The type's informers list and watch with the ``shardSelector`` of the slots held,
        and list again whenever they change; a server that ignores the selector is
        filtered for here. `pyctrl.shardelection` calls it for a sharded controller's type.

        Raises:
            RuntimeError: an informer for the type exists already (unsharded).
        """
        gvk = self._gvk_of(type_)
        if self._shards.get(gvk) is assignment:
            return
        if any(key[0] == gvk for key in self._informers):
            raise RuntimeError(
                f"Cache.shard({gvk.kind}): an informer for it exists already; "
                "shard a type before anything reads or watches it"
            )
        self._shards[gvk] = assignment

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
        key = self._key(type_, gvk, metadata_only)
        shared = self._informers.pop(key, None)
        if shared is None:
            return False
        self._sources.pop(key, None)
        self._followers.discard(key)
        task = self._tasks.pop(key, None)
        if task is not None:
            task.cancel()
        _log.info("informer removed", type=shared.description)
        return True

    def get_informer(
        self,
        type_: type[T],
        *,
        gvk: GroupVersionKind | None = None,
        metadata_only: bool | None = None,
    ) -> Informer[T]:
        """The informer for a type, created (and started, if the cache runs) on first use.

        Args:
            type_: The Python type handlers receive: a model class, a `CustomResource`,
                `Unstructured` or `PartialObjectMetadata` (the last two with ``gvk``).
            gvk: The kind, for untyped ``type_``.
            metadata_only: Cache only metadata. By default: when ``type_`` is
                `PartialObjectMetadata` or the options say so for the kind.

        Raises:
            TypeError: ``type_`` is untyped and no ``gvk`` was given.
            pyctrl.errors.SchemeError: ``type_`` is not a known Kubernetes type.
        """
        key = self._key(type_, gvk, metadata_only)
        return Informer(self._shared(*key), type_)

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
        shared = self._shared(*self._key(type_, gvk, None))

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
        key = self._key(type_, gvk, None)
        if self.options.reader_fail_on_missing_informer and key not in self._informers:
            raise ResourceNotCachedError(
                f"{key[0]}{' (metadata only)' if key[1] else ''} has no informer in the cache "
                "and reader_fail_on_missing_informer is set: start one with "
                "Cache.get_informer first, or read it from the API server"
            )
        shared = self._shared(*key)
        # Bounded, so that a read of a type the operator may not list (403) or that the
        # server does not serve fails with the reason instead of hanging its reconcile.
        await shared.wait_synced(self.options.sync_timeout)
        if shared.namespaced and not shared.namespace_synced(namespace or None):
            await self._wait_namespace(shared, namespace or None)
        return shared

    async def _wait_namespace(self, shared: SharedInformer, namespace: str | None) -> None:
        """Wait until a namespace added at run time (each, for None) has been listed."""
        timeout = self.options.sync_timeout
        deadline = None if timeout is None else self._clock.now() + timeout
        try:
            async with self._clock.timeout_at(deadline):
                while not shared.namespace_synced(namespace):
                    await shared.wait_progress()
        except TimeoutError:
            error = shared.last_error()
            raise CacheSyncTimeoutError(
                f"namespace {namespace or '(all)'!r} of {shared.description} was not listed within "
                f"{timeout:g}s" + (f"; last error: {error}" if error else "")
            ) from None

    def _check_namespace(self, shared: SharedInformer, namespace: str) -> bool:
        """Whether ``namespace`` is cached; raise if it never was meant to be."""
        watched = shared.scope
        if watched is None or namespace in watched:
            return True
        if self._dynamic or self._selector is not None:
            return False  # not cached now: its objects are not in the cache
        raise ValueError(
            f"namespace {namespace!r} is not cached for {shared.description}: "
            f"the cache watches only {', '.join(watched)}"
        )

    # own writes ------------------------------------------------------------------------

    def _tracks(self, gvk: GroupVersionKind) -> bool:
        return self.options.read_your_own_writes and any(key[0] == gvk for key in self._informers)

    def note_write(
        self, gvk: GroupVersionKind, namespace: str, name: str, resource_version: str
    ) -> None:
        """Remember that the client wrote ``namespace/name`` and got ``resource_version``.

        Reads of that object wait until the cache shows it (`CacheOptions.read_your_own_writes`).
        Types without an informer are not tracked.
        """
        if not resource_version or not self._tracks(gvk):
            return
        now = self._clock.now()
        write = PendingWrite(resource_version, False, "", now + self.options.own_writes_timeout)
        self._own_writes.record(gvk, (namespace, name), write, now)

    def note_delete(self, gvk: GroupVersionKind, namespace: str, name: str, uid: str) -> None:
        """Remember that the client deleted ``namespace/name`` (of ``uid``, when known).

        Reads of that name wait until it has left the cache.
        """
        if not self._tracks(gvk):
            return
        now = self._clock.now()
        write = PendingWrite("", True, uid, now + self.options.own_writes_timeout)
        self._own_writes.record(gvk, (namespace, name), write, now)

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
        key = self._key(type_, gvk, None)
        shared = self._informers.get(key)
        if shared is None or not len(self._own_writes):
            return True
        return await self._caught_up(shared, namespace, name)

    async def _caught_up(
        self, shared: SharedInformer, namespace: str | None, name: str | None
    ) -> bool:
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
                timeout=self.options.own_writes_timeout,
            )
            return False
        metrics.cache_own_write_waits_total.labels(label, "caught_up").inc()
        return True

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
            cached = self._check_namespace(shared, namespace)
            ns = namespace
        if cached and len(self._own_writes):
            await self._caught_up(shared, ns, name)
        entry = shared.store.get((ns, name)) if cached else None
        if entry is None:
            source = self._sources.get((shared.gvk, shared.config.metadata_only))
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
            if not self._check_namespace(shared, namespace):
                return ObjectList(resource_version=shared.status().resource_version)
            scope = namespace
        if len(self._own_writes):
            await self._caught_up(shared, scope, None)
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
        return f"<Cache {state}, {len(self._informers)} informers>"


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
