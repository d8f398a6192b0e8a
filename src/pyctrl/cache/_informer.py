"""Shared informers: one store and one set of reflectors per type, many event handlers.

A `SharedInformer` owns the store for one GroupVersionKind (full objects, or metadata
only), the reflectors that fill it (one for all namespaces, or one per watched
namespace), and the event handlers registered on it. The namespaces it watches may
change while it runs (`SharedInformer.set_scope`): a namespace added gets a reflector of
its own, and the objects of a namespace dropped leave the store with a delete to each
handler. Each handler gets its own queue and its own task (``_processor.py``, client-go's
sharedProcessor), so a slow handler delays only itself, and a failing one is logged and
counted without stopping anything. `Informer` is the typed view of a shared
informer that users hold: the objects it hands to handlers are of the view's type.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from pyctrl import metrics
from pyctrl.cache._backoff import Backoff, BackoffPolicy
from pyctrl.cache._processor import (
    ADD,
    DELETE,
    SYNCED,
    UPDATE,
    CachedEventHandler,
    Listener,
    Processor,
    ResourceEventHandler,
    handler_name,
)
from pyctrl.cache._reflector import ListerWatcher, Reflector
from pyctrl.cache._store import Entry, Key, Store, decode
from pyctrl.errors import CacheSyncTimeoutError
from pyctrl.log import get_logger

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from pyctrl.cache._options import CacheOptions
    from pyctrl.clock import Clock, TimerHandle
    from pyctrl.labels import Selector
    from pyctrl.meta import GroupVersionKind
    from pyctrl.scheme import Scheme

__all__ = [
    "HandlerRegistration",
    "Informer",
    "InformerConfig",
    "InformerStatus",
    "SharedInformer",
    "TypeSource",
]

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)

_log = get_logger("pyctrl.cache")


class TypeSource(ListerWatcher, Protocol):
    """A `ListerWatcher` that also knows whether its type is namespaced."""

    async def namespaced(self) -> bool:
        """Resolve the type on the server; raise if the server does not serve it (yet)."""
        ...


@dataclass(frozen=True, slots=True)
class InformerConfig:
    """How one shared informer lists, watches, stores and recovers.

    Attributes:
        namespaces: Namespaces to watch at start; empty for all. Ignored for cluster-scoped
            types. `SharedInformer.set_scope` changes them while it runs.
        transform: Applied to every object (as decoded JSON) before it is stored.
        metadata_only: Keep only ``apiVersion``, ``kind`` and ``metadata``.
        resync_period: Base seconds between resyncs (jittered by [0.9, 1.1)); None: never.
        backoff: Retry policy for failed lists and watches.
        page_size: Objects per list page.
        watch_list: List by streaming (``sendInitialEvents``) when the server supports it.
        min_watch_timeout: Watches last a random time in [min, 2*min) seconds.
        idle_timeout: Seconds of silence after which a watch is presumed dead.
        unhealthy_after: Seconds of continuous failure after which it reports unhealthy.
    """

    namespaces: tuple[str, ...] = ()
    transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    metadata_only: bool = False
    resync_period: float | None = 36000.0
    backoff: BackoffPolicy = field(default_factory=BackoffPolicy)
    page_size: int | None = 500
    watch_list: bool = True
    min_watch_timeout: float = 300.0
    idle_timeout: float | None = 330.0
    unhealthy_after: float = 30.0

    @classmethod
    def for_cache(
        cls,
        options: CacheOptions,
        *,
        transform: Callable[[dict[str, Any]], dict[str, Any]] | None,
        metadata_only: bool = False,
        namespaces: tuple[str, ...] = (),
        resync_period: float | None = None,
    ) -> InformerConfig:
        """The config of an informer of the cache: its list and watch options, and these.

        The cache's own informers (namespaces, served kinds) do not resync.
        """
        return cls(
            namespaces=namespaces,
            metadata_only=metadata_only,
            transform=transform,
            resync_period=resync_period,
            backoff=options.backoff,
            page_size=options.page_size,
            watch_list=options.watch_list,
            min_watch_timeout=options.min_watch_timeout,
            idle_timeout=options.watch_idle_timeout,
            unhealthy_after=options.unhealthy_after,
        )


@dataclass(frozen=True, slots=True)
class InformerStatus:
    """A snapshot of an informer's health, for readiness checks, metrics and humans.

    Attributes:
        gvk: The type.
        metadata_only: Whether only metadata is cached.
        state: ``inactive`` (an optional kind not served now), ``pending`` (not started),
            ``resolving`` (finding the type on the server),
            ``listing``, ``connecting`` (opening a watch), ``watching`` (every watch
            open), ``backoff`` (waiting to retry) or ``stopped``.
        synced: Every reflector has completed its first list.
        healthy: No reflector has been failing for longer than ``unhealthy_after``.
        objects: How many objects the store holds.
        last_error: The most recent failure, or None if none happened.
        last_error_time: Clock time of that failure.
        last_sync_time: Clock time of the last completed (re-)list.
        reconnects: Watches re-established (after timeouts, drops and failures).
        relists: Lists after the first one (410 Gone, errors).
        handler_errors: Exceptions raised by event handlers.
        resource_version: The last resourceVersion seen (one reflector only).
    """

    gvk: GroupVersionKind
    metadata_only: bool
    state: str
    synced: bool
    healthy: bool
    objects: int
    last_error: str | None
    last_error_time: float | None
    last_sync_time: float | None
    reconnects: int
    relists: int
    handler_errors: int
    resource_version: str


class HandlerRegistration:
    """Returned by `Informer.add_event_handler`: the handler's sync state, and removal."""

    def __init__(self, informer: SharedInformer, listener: Listener) -> None:
        self._informer = informer
        self._listener = listener

    def synced(self) -> bool:
        """True once the handler has been given every object of the informer's first list."""
        return self._listener.synced.is_set()

    async def wait_synced(self) -> None:
        """Wait until `synced` is true."""
        await self._listener.synced.wait()

    @property
    def errors(self) -> int:
        """How many times the handler raised."""
        return self._listener.errors

    @property
    def backlog(self) -> int:
        """Notifications waiting for the handler."""
        return self._listener.backlog

    def remove(self) -> None:
        """Stop delivering to the handler (pending notifications are dropped)."""
        self._informer.remove_listener(self._listener)


class _Resolution:
    """An informer's lookup of its type on the API server, retried with backoff until found.

    A type the server does not serve yet (a CRD not installed) is looked up again and
    again; the failures count against the informer's health.
    """

    def __init__(
        self,
        source: TypeSource,
        *,
        policy: BackoffPolicy,
        clock: Clock,
        random: Callable[[], float],
        description: str,
        log: Any,
    ) -> None:
        self._source = source
        self._policy = policy
        self._clock = clock
        self._random = random
        self._description = description
        self._log = log
        self.resolving = False
        self.error: str | None = None
        self.error_time: float | None = None
        self.failing_since: float | None = None

    async def resolve(self, failed: Callable[[], None]) -> bool:
        """Whether the type is namespaced, once the server serves it; ``failed`` after each miss."""
        backoff = Backoff(self._policy, self._clock, self._random)
        self.resolving = True
        try:
            while True:
                try:
                    namespaced = await self._source.namespaced()
                except Exception as exc:
                    now = self._clock.now()
                    delay = backoff.next_delay()
                    self.error = (
                        f"cannot find {self._description} on the API server: "
                        f"{type(exc).__name__}: {exc}"
                    )
                    self.error_time = now
                    if self.failing_since is None:
                        self.failing_since = now
                    self._log.warning(
                        "no REST mapping for type; retrying",
                        error=self.error,
                        retry_in=round(delay, 3),
                    )
                    failed()
                    await self._clock.sleep(delay)
                else:
                    self.failing_since = None
                    return namespaced
        finally:
            self.resolving = False


class SharedInformer:
    """The store, reflectors and handlers of one type: see the module documentation.

    Args:
        gvk: The type.
        source: Resolves, lists and watches the type.
        config: Options.
        scheme: Decodes objects into typed ones for handlers and reads.
        clock: Times backoff, resyncs and health.
        random: Jitter source, floats in [0, 1).
        description: Names it in logs, metrics and errors (default: the type).
    """

    def __init__(
        self,
        *,
        gvk: GroupVersionKind,
        source: TypeSource,
        config: InformerConfig,
        scheme: Scheme,
        clock: Clock,
        random: Callable[[], float],
        description: str | None = None,
    ) -> None:
        self.gvk = gvk
        self.config = config
        self.store = Store()
        self._source = source
        self._scheme = scheme
        self._clock = clock
        self._random = random
        self.description = description or f"{gvk.api_version}/{gvk.kind}" + (
            " (metadata)" if config.metadata_only else ""
        )
        self._label = self.description
        self._log = _log.bind(type=self.description)
        self._processor = Processor(self.description, self.decode_as, self._log)
        # By namespace (None: all namespaces), with the task that runs each.
        self._reflectors: dict[str | None, Reflector] = {}
        self._reflector_tasks: dict[str | None, asyncio.Task[None]] = {}
        self._scope: tuple[str, ...] | None = config.namespaces or None
        self._resolved = False
        # Counts of reflectors stopped by a change of scope, so totals never go down.
        self._retired_reconnects = 0
        self._retired_relists = 0
        self._progress: asyncio.Event | None = None
        self._tg: asyncio.TaskGroup | None = None
        self._synced = asyncio.Event()
        self._running = False
        self._stopped = False
        self._resolution = _Resolution(
            source,
            policy=config.backoff,
            clock=clock,
            random=random,
            description=self.description,
            log=self._log,
        )
        self.namespaced: bool | None = None
        self._health_timer: TimerHandle | None = None
        self._published_reconnects = 0
        self.optional = False
        """Runs only while its kind is served (``get_informer(..., optional=True)``)."""
        self.served = True
        """False while an optional informer's kind is not served: it does not run then."""

    def reset(self) -> None:
        """Make a stopped informer runnable again, empty (an optional kind gone away).

        Every stored object leaves, each with a delete (``delete_state_unknown``) queued
        for every handler, delivered once it runs again.
        """
        if self._tg is not None:
            raise RuntimeError(f"informer for {self.description} is still running")
        for key, entry in list(self.store.items()):
            self.store.remove(key)
            self._processor.notify((DELETE, key, None, entry, True))
        for reflector in self._reflectors.values():
            self._retired_reconnects += reflector.reconnects
            self._retired_relists += reflector.relists
        self._reflectors.clear()
        self._reflector_tasks.clear()
        self._running = self._stopped = self._resolved = False
        self._synced.clear()
        self.namespaced = None
        self._resolution.error = self._resolution.error_time = None
        self._resolution.failing_since = None

    # running -----------------------------------------------------------------------------

    async def run(self) -> None:
        """Resolve the type, then list and watch it until cancelled."""
        if self._running:
            raise RuntimeError(f"informer for {self.description} is running already")
        self._running = True
        self._publish()
        try:
            async with asyncio.TaskGroup() as tg:
                self._tg = tg
                for listener in self._processor.listeners:
                    self._processor.start(tg, listener)
                if self.config.resync_period:
                    tg.create_task(self._resync_loop(), name=f"resync {self.description}")
                self.namespaced = await self._resolution.resolve(self._publish)
                self._resolved = True
                self._apply_scope()
                self.status_changed(None)
                # Run until cancelled, even while no namespace is watched (an empty scope).
                await asyncio.Event().wait()
        finally:
            self._tg = None
            self._stopped = True
            if self._health_timer is not None:
                self._health_timer.cancel()
            metrics.informer_synced.labels(self._label).set(0)
            metrics.informer_healthy.labels(self._label).set(0)

    # scope -------------------------------------------------------------------------------

    @property
    def scope(self) -> tuple[str, ...] | None:
        """The namespaces watched now; None for all of them."""
        return self._scope

    def set_scope(self, namespaces: Iterable[str] | None) -> None:
        """Watch these namespaces from now on (None: all of them; empty: none).

        A namespace added gets its own reflector, which lists it and then watches it; the
        objects of a namespace dropped leave the store at once, each with a delete to every
        handler. Cluster-scoped types ignore the scope.
        """
        scope = None if namespaces is None else tuple(dict.fromkeys(namespaces))
        if scope == self._scope:
            return
        self._scope = scope
        if self._resolved and self._tg is not None:
            self._apply_scope()
            self.status_changed(None)

    def _wanted(self) -> list[str | None]:
        if not self.namespaced or self._scope is None:
            return [None]
        return list(self._scope)

    def _apply_scope(self) -> None:
        wanted = self._wanted()
        for namespace in [ns for ns in self._reflectors if ns not in wanted]:
            self._stop_reflector(namespace)
        if None not in wanted:
            keep = set(wanted)
            for namespace in self.store.namespaces():
                if namespace not in keep:
                    self._purge(namespace)
        for namespace in wanted:
            if namespace not in self._reflectors:
                self._start_reflector(namespace)

    def _start_reflector(self, namespace: str | None) -> None:
        assert self._tg is not None
        reflector = Reflector(
            source=self._source,
            sink=self,
            prepare=self.prepare,
            clock=self._clock,
            random=self._random,
            namespace=namespace,
            description=self.description,
            backoff=self.config.backoff,
            page_size=self.config.page_size,
            min_watch_timeout=self.config.min_watch_timeout,
            idle_timeout=self.config.idle_timeout,
            watch_list=self.config.watch_list,
        )
        self._reflectors[namespace] = reflector
        self._reflector_tasks[namespace] = self._tg.create_task(
            reflector.run(), name=f"reflector {self.description} {namespace or '*'}"
        )
        if namespace is not None and self._synced.is_set():
            self._log.info("watching namespace", namespace=namespace)

    def _stop_reflector(self, namespace: str | None) -> None:
        reflector = self._reflectors.pop(namespace)
        self._retired_reconnects += reflector.reconnects
        self._retired_relists += reflector.relists
        self._reflector_tasks.pop(namespace).cancel()
        if namespace is not None:
            self._log.info("stopped watching namespace", namespace=namespace)

    def _purge(self, namespace: str) -> None:
        """Drop a namespace's objects, telling every handler they are gone."""
        for key, entry in list(self.store.items(namespace)):
            self.store.remove(key)
            self._processor.notify((DELETE, key, None, entry, False))

    def namespace_synced(self, namespace: str | None) -> bool:
        """Whether the reflector covering ``namespace`` (each, for None) has listed.

        True for a namespace no reflector covers. A namespace added to the scope is not
        synced until its first list is complete.
        """
        every = self._reflectors.get(None)
        if every is not None:
            return every.listed
        if namespace is None:
            return all(r.listed for r in self._reflectors.values())
        reflector = self._reflectors.get(namespace)
        return reflector is None or reflector.listed

    def reflector_for(self, namespace: str) -> Reflector | None:
        """The reflector whose watch covers ``namespace`` ("" for cluster-scoped objects)."""
        return self._reflectors.get(None) or self._reflectors.get(namespace or None)

    # progress ----------------------------------------------------------------------------

    def _progressed(self) -> None:
        event = self._progress
        if event is not None:
            self._progress = None
            event.set()

    async def wait_progress(self) -> None:
        """Return after the next change, list, bookmark or change of state of the store."""
        if self._progress is None:
            self._progress = asyncio.Event()
        await self._progress.wait()

    async def _resync_loop(self) -> None:
        period = self.config.resync_period
        assert period
        while True:
            await self._clock.sleep(period * (0.9 + 0.2 * self._random()))
            if not self._synced.is_set():
                continue
            entries = list(self.store.items())
            self._log.debug("resync", objects=len(entries))
            for listener in self._processor.listeners:
                for key, entry in entries:
                    listener.push((UPDATE, key, entry, entry, False))

    # store and notifications ---------------------------------------------------------------

    def prepare(self, obj: dict[str, Any]) -> tuple[Key, Entry]:
        """Normalise, transform and encode an object from the server for the store."""
        gvk = self.gvk
        if self.config.metadata_only:
            obj = {
                "apiVersion": gvk.api_version,
                "kind": gvk.kind,
                "metadata": obj.get("metadata") or {},
            }
        elif obj.get("kind") != gvk.kind or obj.get("apiVersion") != gvk.api_version:
            # Items of typed lists come without apiVersion and kind.
            obj["apiVersion"] = gvk.api_version
            obj["kind"] = gvk.kind
        transform = self.config.transform
        if transform is not None:
            obj = transform(obj)
        return self.store.encode(obj)

    def _current(self, reflector: Reflector) -> bool:
        # A reflector stopped by a change of scope may not touch the store any more.
        return self._reflectors.get(reflector.namespace) is reflector

    def replaced(self, reflector: Reflector, items: list[tuple[Key, Entry]]) -> None:
        """Apply a completed list from ``reflector``; see `ReflectorSink`."""
        if not self._current(reflector):
            return
        self._progressed()
        initial = not reflector.listed and not self._synced.is_set()
        for key, old, new in self.store.replace(items, reflector.namespace):
            if old is None:
                assert new is not None
                self._processor.notify((ADD, key, None, new, initial))
            elif new is None:
                self._processor.notify((DELETE, key, None, old, True))
            else:
                self._processor.notify((UPDATE, key, old, new, False))

    def changed(self, reflector: Reflector, event_type: str, key: Key, entry: Entry) -> None:
        """Apply a watch event from ``reflector``; see `ReflectorSink`."""
        if not self._current(reflector):
            return
        self._progressed()
        if event_type == "DELETED":
            if self.store.remove(key) is not None:
                self._processor.notify((DELETE, key, None, entry, False))
            return
        old = self.store.upsert(key, entry)
        if old is None:
            self._processor.notify((ADD, key, None, entry, False))
        elif old.resource_version != entry.resource_version:
            self._processor.notify((UPDATE, key, old, entry, False))

    def progressed(self, reflector: Reflector) -> None:
        """Note a bookmark; see `ReflectorSink`."""
        self._progressed()

    def status_changed(self, reflector: Reflector | None) -> None:
        """Note a reflector's progress (or a change of scope); see `ReflectorSink`."""
        self._progressed()
        if (
            not self._synced.is_set()
            and self._resolved
            and all(r.listed for r in self._reflectors.values())
        ):
            self._synced.set()
            self._log.info("informer synced", objects=len(self.store))
            for listener in self._processor.listeners:
                if not listener.synced.is_set():
                    listener.push((SYNCED, None, None, None, False))
        self._publish()

    def decode_as(self, entry: Entry, type_: type[T]) -> T:
        """A new object of ``type_`` from a stored entry."""
        return decode(entry.data, type_, scheme=self._scheme, gvk=self.gvk)

    # handlers ------------------------------------------------------------------------------

    def add_listener(self, handler: ResourceEventHandler[Any], type_: type[Any]) -> Listener:
        """Register a handler; it is first given every object already stored."""
        return self._listen(handler, type_, cached=False)

    def add_cached_listener(self, handler: CachedEventHandler[Any], type_: type[Any]) -> Listener:
        """Register a handler given undecoded `CachedObject` s, as `add_listener`."""
        return self._listen(handler, type_, cached=True)

    def _listen(
        self,
        handler: ResourceEventHandler[Any] | CachedEventHandler[Any],
        type_: type[Any],
        *,
        cached: bool,
    ) -> Listener:
        listener = self._processor.add(
            handler, type_, self.store.items(), self._synced.is_set(), cached=cached
        )
        if self._tg is not None:
            self._processor.start(self._tg, listener)
        return listener

    def remove_listener(self, listener: Listener) -> None:
        """Unregister a handler and stop its task."""
        self._processor.remove(listener)

    # indexes -------------------------------------------------------------------------------

    def add_index(self, name: str, extract: Callable[[dict[str, Any]], Iterable[str]]) -> None:
        """Add a field index over the stored objects (as decoded JSON)."""
        self.store.add_indexer(name, extract)

    def has_index(self, name: str) -> bool:
        """True if a field index of that name exists."""
        return self.store.has_index(name)

    def select(
        self,
        *,
        namespace: str | None,
        labels: Selector | None,
        fields: Sequence[tuple[str, str]],
    ) -> list[tuple[Key, Entry]]:
        """The stored objects matching a namespace, label selector and exact field matches.

        Fields are ``metadata.name``, ``metadata.namespace`` or field index names.

        Raises:
            ValueError: a field is neither of those.
        """
        return self.store.select(
            namespace=namespace, labels=labels, fields=fields, description=self.description
        )

    # health --------------------------------------------------------------------------------

    def synced(self) -> bool:
        """True once every reflector has completed its first list."""
        return self._synced.is_set()

    async def wait_synced(
        self,
        timeout: float | None = None,  # noqa: ASYNC109 - measured on the informer's clock
    ) -> None:
        """Wait until synced.

        Raises:
            CacheSyncTimeoutError: not synced within ``timeout`` seconds (clock time).
        """
        if self._synced.is_set():
            return
        deadline = None if timeout is None else self._clock.now() + timeout
        try:
            async with self._clock.timeout_at(deadline):
                await self._synced.wait()
        except TimeoutError:
            raise CacheSyncTimeoutError(
                f"informer for {self.description} did not sync within {timeout:g}s"
                + (f"; last error: {self.last_error()}" if self.last_error() else "")
            ) from None

    def _failing_since(self) -> float | None:
        times = [r.failing_since for r in self._reflectors.values() if r.failing_since is not None]
        if self._resolution.failing_since is not None:
            times.append(self._resolution.failing_since)
        return min(times) if times else None

    def healthy(self) -> bool:
        """False once a list, watch or type lookup has failed for ``unhealthy_after`` seconds."""
        if self._stopped:
            return False
        since = self._failing_since()
        return since is None or self._clock.now() - since < self.config.unhealthy_after

    def last_error(self) -> str | None:
        """The most recent failure message, if any."""
        errors = [
            (r.last_error_time, r.last_error)
            for r in self._reflectors.values()
            if r.last_error is not None and r.last_error_time is not None
        ]
        resolution = self._resolution
        if resolution.error is not None and resolution.error_time is not None:
            errors.append((resolution.error_time, resolution.error))
        return max(errors)[1] if errors else None

    def _state(self) -> str:  # noqa: PLR0911 - one answer per informer state
        if not self.served:
            return "inactive"
        if self._stopped:
            return "stopped"
        if not self._running:
            return "pending"
        if self._resolution.resolving or not self._resolved:
            return "resolving"
        states = {type(r.state).__name__ for r in self._reflectors.values()}
        if "BackingOff" in states:
            return "backoff"
        if "Listing" in states:
            return "listing"
        if not all(r.watching for r in self._reflectors.values()):
            return "connecting"
        return "watching"

    def status(self) -> InformerStatus:
        """A snapshot of the informer's state and health."""
        last_error = self.last_error()
        reflectors = list(self._reflectors.values())
        error_times = [r.last_error_time for r in reflectors if r.last_error_time]
        if self._resolution.error_time is not None:
            error_times.append(self._resolution.error_time)
        sync_times = [r.last_sync_time for r in reflectors if r.last_sync_time is not None]
        return InformerStatus(
            gvk=self.gvk,
            metadata_only=self.config.metadata_only,
            state=self._state(),
            synced=self.synced(),
            healthy=self.healthy(),
            objects=len(self.store),
            last_error=last_error,
            last_error_time=max(error_times) if error_times else None,
            last_sync_time=max(sync_times) if sync_times else None,
            reconnects=self._retired_reconnects + sum(r.reconnects for r in reflectors),
            relists=self._retired_relists + sum(r.relists for r in reflectors),
            handler_errors=self._processor.errors,
            resource_version=(reflectors[0].resource_version if len(reflectors) == 1 else ""),
        )

    def _publish(self) -> None:
        """Update the metrics and arm a timer for the moment health runs out."""
        reconnects = (
            self._retired_reconnects
            + self._retired_relists
            + sum(r.reconnects + r.relists for r in self._reflectors.values())
        )
        counter = metrics.informer_reconnects_total.labels(self._label)
        if reconnects > self._published_reconnects:
            counter.inc(reconnects - self._published_reconnects)
        self._published_reconnects = reconnects
        metrics.informer_synced.labels(self._label).set(1 if self.synced() else 0)
        metrics.informer_healthy.labels(self._label).set(1 if self.healthy() else 0)
        if self._health_timer is not None:
            self._health_timer.cancel()
            self._health_timer = None
        since = self._failing_since()
        if since is not None and self.healthy() and self._running and not self._stopped:
            self._health_timer = self._clock.call_at(
                since + self.config.unhealthy_after, self._publish
            )


class Informer(Generic[T]):
    """A typed view of a shared informer: what `pyctrl.cache.Cache.get_informer` returns.

    Several views of different Python types (a model class, `Unstructured`,
    `PartialObjectMetadata`...) may share one informer; each hands its handlers objects
    of its own type.
    """

    __slots__ = ("_shared", "_type")

    def __init__(self, shared: SharedInformer, type_: type[T]) -> None:
        self._shared = shared
        self._type = type_

    @property
    def gvk(self) -> GroupVersionKind:
        """The GroupVersionKind the informer watches."""
        return self._shared.gvk

    @property
    def type_(self) -> type[T]:
        """The Python type handlers of this view receive."""
        return self._type

    @property
    def metadata_only(self) -> bool:
        """Whether only metadata is cached."""
        return self._shared.config.metadata_only

    def add_event_handler(self, handler: ResourceEventHandler[T]) -> HandlerRegistration:
        """Register a handler: every object already cached, then every change, in order.

        Objects cached before the handler was added come as adds flagged
        ``is_in_initial_list``.

        Returns:
            The registration, to check its sync state or to remove it.
        """
        _check_handler(handler, "ResourceEventHandler")
        return HandlerRegistration(self._shared, self._shared.add_listener(handler, self._type))

    def add_cached_event_handler(self, handler: CachedEventHandler[T]) -> HandlerRegistration:
        """Register a handler given `pyctrl.cache.CachedObject` s: decoded only if it asks.

        As `add_event_handler` otherwise. A controller's `pyctrl.source.Kind` registers
        one, so that events whose predicates and handler read only metadata are never
        decoded into typed objects.
        """
        _check_handler(handler, "CachedEventHandler")
        return HandlerRegistration(
            self._shared, self._shared.add_cached_listener(handler, self._type)
        )

    def remove_event_handler(self, registration: HandlerRegistration) -> None:
        """Unregister a handler."""
        registration.remove()

    def synced(self) -> bool:
        """True once the informer has completed its first list."""
        return self._shared.synced()

    @property
    def served(self) -> bool:
        """False while an optional informer's kind is not served (it does not run then)."""
        return self._shared.served

    def healthy(self) -> bool:
        """False while the informer has been failing for longer than allowed."""
        return self._shared.healthy()

    def status(self) -> InformerStatus:
        """A snapshot of the informer's state and health."""
        return self._shared.status()

    async def wait_synced(
        self,
        timeout: float | None = None,  # noqa: ASYNC109 - measured on the informer's clock
    ) -> None:
        """Wait until the first list is complete.

        Raises:
            CacheSyncTimeoutError: not synced within ``timeout`` seconds.
        """
        await self._shared.wait_synced(timeout)

    def __repr__(self) -> str:
        return f"<Informer {self._shared.description} as {self._type.__qualname__}>"


def _check_handler(handler: object, protocol: str) -> None:
    for method in ("add", "update", "delete"):
        if not callable(getattr(handler, method, None)):
            raise TypeError(
                f"{handler_name(handler)} is not a {protocol}: it has no {method}() "
                "method (use ResourceEventHandlerFuncs for plain functions)"
            )
