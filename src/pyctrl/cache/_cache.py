"""The Cache: shared informers for every type a manager reads, and reads served from them."""

from __future__ import annotations

import asyncio
import base64
import bisect
import contextvars
import random as _random
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from pyctrl.cache._errors import CacheNotReadyError, CacheNotStartedError
from pyctrl.cache._informer import Informer, InformerConfig, InformerStatus, SharedInformer
from pyctrl.cache._listwatch import RESTSource
from pyctrl.cache._options import (
    ByObject,
    CacheOptions,
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
    asked for after the start begin at once.

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
                for shared in self._informers.values():
                    self._run(shared)
                self._started.set()
                _log.info("cache started", informers=len(self._informers))
                await asyncio.Event().wait()
        finally:
            self._tg = None
            self._stopped = True

    def _run(self, shared: SharedInformer) -> None:
        assert self._tg is not None
        # A fresh context: an informer asked for inside a reconcile must not log as it.
        self._tg.create_task(
            shared.run(), name=f"informer {shared.description}", context=contextvars.Context()
        )

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
                while pending := [s for s in self._informers.values() if not s.synced()]:
                    for shared in pending:
                        await shared.wait_synced()
        except TimeoutError:
            if not self._started.is_set():
                raise CacheSyncTimeoutError(
                    f"cache did not start within {timeout:g}s: is Cache.start running?"
                ) from None
            unsynced = [
                s.description + (f" (last error: {s.last_error()})" if s.last_error() else "")
                for s in self._informers.values()
                if not s.synced()
            ]
            raise CacheSyncTimeoutError(
                f"informers not synced within {timeout:g}s: {'; '.join(unsynced)}"
            ) from None

    def synced(self) -> bool:
        """True if the cache runs and every informer has completed its first list."""
        return self.started and all(s.synced() for s in self._informers.values())

    def healthy(self) -> bool:
        """True if the cache runs and no informer has been failing for too long."""
        return self.started and all(s.healthy() for s in self._informers.values())

    def check_ready(self) -> None:
        """A readiness check (`pyctrl.healthz.Checker`): synced and healthy, or raise.

        Raises:
            CacheNotReadyError: names each informer not synced or not healthy, and why.
        """
        if not self.started:
            raise CacheNotReadyError("cache not started")
        problems = []
        for shared in self._informers.values():
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
        return [shared.status() for shared in self._informers.values()]

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
        config = InformerConfig(
            namespaces=tuple(
                by_type.namespaces if by_type.namespaces is not None else options.namespaces
            ),
            transform=by_type.transform or options.default_transform,
            metadata_only=metadata_only,
            resync_period=options.sync_period,
            backoff=options.backoff,
            page_size=options.page_size,
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
        self._informers[key] = shared
        self._sources[key] = source
        if self._tg is not None:
            self._run(shared)
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

    async def _ready(self, type_: type[Any], gvk: GroupVersionKind | None) -> SharedInformer:
        if not self.started:
            raise CacheNotStartedError(
                "the cache is not running: reads must wait until Cache.start is running "
                "(the Manager starts it)"
            )
        shared = self._shared(*self._key(type_, gvk, None))
        # Bounded, so that a read of a type the operator may not list (403) or that the
        # server does not serve fails with the reason instead of hanging its reconcile.
        await shared.wait_synced(self.options.sync_timeout)
        return shared

    def _check_namespace(self, shared: SharedInformer, namespace: str) -> None:
        watched = shared.config.namespaces
        if watched and namespace not in watched:
            raise ValueError(
                f"namespace {namespace!r} is not cached for {shared.description}: "
                f"the cache watches only {', '.join(watched)}"
            )

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
        shared = await self._ready(type_, gvk)
        ns = ""
        if shared.namespaced:
            if not namespace:
                raise ValueError(f"{shared.description} is namespaced: get() needs a namespace")
            self._check_namespace(shared, namespace)
            ns = namespace
        entry = shared.store.get((ns, name))
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
        shared = await self._ready(type_, gvk)
        scope: str | None = None
        if shared.namespaced and namespace:
            self._check_namespace(shared, namespace)
            scope = namespace
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
