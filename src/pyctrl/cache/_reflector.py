"""The reflector: keeps a store in step with the API server by list and watch.

A reflector is an explicit state machine (the shape kube-rs gives its watcher), one
transition per `Reflector.step`:

- `Listing`: list every object and replace the store with the result (deletes for
  vanished objects included); then watch from the list's resourceVersion. With
  streaming lists on (and the server supporting them), the list is a watch with
  ``sendInitialEvents=true`` whose initial ADDED events end with a bookmark annotated
  ``k8s.io/initial-events-end``; the same stream then goes on as the watch. Otherwise
  the list is paged, and which version it asks for follows client-go's
  ``relistResourceVersion``: ``"0"`` (any version, from the API server's watch cache)
  the first time, the last version seen (``NotOlderThan``) after that, and ``""`` (a
  consistent read, page by page from etcd) once the server has said it cannot serve
  that version (410 Expired, or a resourceVersion too large).
- `Watching`: watch from a resourceVersion with bookmarks on and a jittered server-side
  timeout; apply each event to the store. A normal end of the watch watches again from
  the last resourceVersion seen; ``410 Gone`` (the version is too old) lists again.
- `BackingOff`: after a failure, wait (exponential backoff with jitter), then retry the
  step that failed. Connection errors, throttling and server errors retry the watch
  from where it was; other errors list again.

A reflector never stops on its own: only cancellation ends `Reflector.run`. Every
failure is logged, recorded (`Reflector.last_error`, `Reflector.failing_since`) and
retried, so that its informer can report itself unhealthy instead of dying silently.
A failure counts as over only when the reflector has shown it works again: a list
completed, or a watch delivered an event or bookmark, or stayed open for a second.
Merely opening a watch is not enough, so a server that accepts every watch and drops
it at once still turns the informer unhealthy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pyctrl.cache._backoff import Backoff, BackoffPolicy
from pyctrl.errors import APIError, GoneError, ServerTimeoutError
from pyctrl.log import get_logger

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from contextlib import AbstractAsyncContextManager

    from pyctrl.cache._store import Entry, Key
    from pyctrl.clock import Clock, TimerHandle

__all__ = [
    "BackingOff",
    "ListPage",
    "ListStream",
    "ListerWatcher",
    "Listing",
    "Reflector",
    "ReflectorSink",
    "State",
    "StreamingLister",
    "Watching",
]

_log = get_logger("pyctrl.cache")

# A watch that ends this quickly with no event is a broken watch, not a server timeout
# (client-go's "very short watch"): back off rather than spin on it. By the same bar, a
# watch open this long without an error proves the reflector has recovered.
_SHORT_WATCH = 1.0
_RETRY_WATCH_CODES = frozenset({429, 500, 502, 503, 504})
# How an API server that does not know streaming lists refuses them: kube-apiserver before
# 1.27 rejects resourceVersionMatch on a watch (422), later ones with the WatchList gate
# off reject sendInitialEvents (422); some aggregated servers answer 400.
_WATCH_LIST_REFUSED = frozenset({400, 422})
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
"""The annotation of the bookmark that ends a streaming list's initial events."""


@dataclass(frozen=True, slots=True)
class ListPage:
    """One page of a list response.

    Attributes:
        items: The objects, as decoded JSON.
        resource_version: The list's ``metadata.resourceVersion``.
        continue_: The token for the next page, or None on the last page.
    """

    items: list[dict[str, Any]]
    resource_version: str
    continue_: str | None = None


class ListerWatcher(Protocol):
    """Lists and watches one resource type for a reflector (an extension point).

    pyctrl's implementation talks to the API server through `pyctrl.client.RESTClient`;
    tests use in-memory fakes.
    """

    async def list(
        self,
        *,
        namespace: str | None,
        limit: int | None,
        continue_: str | None,
        resource_version: str = "",
        resource_version_match: str | None = None,
    ) -> ListPage:
        """Return one page of objects; raise `pyctrl.errors.APIError` on a failure status.

        ``resource_version`` and ``resource_version_match`` are sent as given when not
        empty (``"0"``: any version; ``""``: a consistent read).
        """
        ...

    def watch(
        self,
        *,
        namespace: str | None,
        resource_version: str,
        timeout_seconds: int,
        idle_timeout: float | None,
        send_initial_events: bool = False,
    ) -> AbstractAsyncContextManager[AsyncIterator[dict[str, Any]]]:
        """Open a watch; the iterator yields decoded events (``type`` and ``object``).

        With ``send_initial_events`` it is a streaming list (``sendInitialEvents=true``,
        ``resourceVersionMatch=NotOlderThan``): every object first, as ADDED, then a
        bookmark annotated `INITIAL_EVENTS_END`, then the changes. Entering the context
        raises `pyctrl.errors.APIError` if the server refuses the watch. Iteration ends
        when the server closes the watch, and raises `TimeoutError` if nothing arrives
        for ``idle_timeout`` seconds.
        """
        ...


class ListStream(Protocol):
    """A list response read as it arrives: its items, then its metadata."""

    def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        """The items, each as soon as it is decoded."""
        ...

    @property
    def resource_version(self) -> str:
        """The list's ``metadata.resourceVersion`` (once the items are read)."""
        ...

    @property
    def continue_(self) -> str | None:
        """The token for the next page, or None on the last (once the items are read)."""
        ...


@runtime_checkable
class StreamingLister(Protocol):
    """A `ListerWatcher` that can also decode a list as it arrives (an optional extension).

    A reflector lists through `list_stream` when its source has it, so that a list the
    server answers in one response (``resourceVersion=0``, from the watch cache, which
    ignores ``limit``) never holds the whole body and every decoded object at once.
    """

    def list_stream(
        self,
        *,
        namespace: str | None,
        limit: int | None,
        continue_: str | None,
        resource_version: str = "",
        resource_version_match: str | None = None,
    ) -> AbstractAsyncContextManager[ListStream]:
        """Like `ListerWatcher.list`, but the items are decoded as the body arrives."""
        ...


class ReflectorSink(Protocol):
    """Where a reflector puts what it learns: the informer that owns it."""

    def replaced(self, reflector: Reflector, items: list[tuple[Key, Entry]]) -> None:
        """A list completed: make the reflector's part of the store hold exactly ``items``."""
        ...

    def changed(self, reflector: Reflector, event_type: str, key: Key, entry: Entry) -> None:
        """A watch event: ``ADDED``, ``MODIFIED`` or ``DELETED``."""
        ...

    def status_changed(self, reflector: Reflector) -> None:
        """The reflector's state, health or error changed."""
        ...

    def progressed(self, reflector: Reflector) -> None:
        """The reflector's resourceVersion moved on without a change (a bookmark)."""
        ...


@dataclass(frozen=True, slots=True)
class Listing:
    """Next: list every object and replace the store."""


@dataclass(frozen=True, slots=True)
class Watching:
    """Next: watch from ``resource_version``."""

    resource_version: str


@dataclass(frozen=True, slots=True)
class BackingOff:
    """Next: wait ``delay`` seconds after ``error``, then go on with ``then``."""

    delay: float
    then: Listing | Watching
    error: str


State = Listing | Watching | BackingOff
"""A reflector state."""


class ShortWatchError(Exception):
    """The server ended a watch at once without sending anything."""


class _ContinueExpiredError(Exception):
    """A list's continue token expired between two pages."""


class InitialEventsError(Exception):
    """A streaming list ended before the bookmark that closes its initial events."""


def resource_version_unavailable(exc: BaseException) -> bool:
    """Whether the server said it cannot serve the resourceVersion asked for.

    410 Expired (older than its history), or kube-apiserver's 504 with the cause
    ``ResourceVersionTooLarge`` (newer than it has seen): client-go's
    ``isExpiredError`` and ``isTooLargeResourceVersionError``.
    """
    if isinstance(exc, GoneError):
        return True
    return isinstance(exc, ServerTimeoutError) and any(
        cause.reason == "ResourceVersionTooLarge" for cause in exc.causes
    )


class Reflector:
    """Lists and watches one resource type in one namespace (or all) into a sink.

    Args:
        source: Lists and watches.
        sink: Receives lists, events and status changes.
        prepare: Turns a decoded object into its store key and entry (transform,
            normalisation, encoding). Its exceptions count as failures of the step.
        clock: Times backoff and watch lifetimes.
        random: Returns floats in [0, 1) for jitter.
        namespace: The namespace to list and watch, or None for all.
        description: Names the type in logs and errors, e.g. ``v1/ConfigMap``.
        backoff: The retry policy.
        page_size: Objects per list page (``limit``); None lists in one request.
        min_watch_timeout: Each watch asks the server to end it after a random time in
            [min, 2*min) seconds, spreading reconnects out.
        idle_timeout: A watch from which nothing arrives for this long is presumed dead
            and re-established; None disables the check.
        watch_list: List by streaming (``sendInitialEvents``) while the server supports
            it; a server that refuses it is listed page by page from then on.

    Attributes:
        state: The state being executed (or next, between steps).
        listed: Whether a list has completed at least once.
        watching: Whether a watch is open right now.
        resource_version: The last resourceVersion seen.
        last_error: The last failure, as logged; None if none happened.
        last_error_time: Clock time of the last failure.
        failing_since: Clock time of the first failure since the reflector last proved
            to work (a completed list, a watch event or bookmark, or a watch that stayed
            open for a second), or None.
        last_sync_time: Clock time of the last completed list.
        reconnects: Watches opened after the first one.
        relists: Lists after the first one.
        watch_list_supported: False once the server refused a streaming list; None until
            one was tried.
    """

    def __init__(
        self,
        *,
        source: ListerWatcher,
        sink: ReflectorSink,
        prepare: Callable[[dict[str, Any]], tuple[Key, Entry]],
        clock: Clock,
        random: Callable[[], float],
        namespace: str | None = None,
        description: str = "",
        backoff: BackoffPolicy | None = None,
        page_size: int | None = 500,
        min_watch_timeout: float = 300.0,
        idle_timeout: float | None = 330.0,
        watch_list: bool = False,
    ) -> None:
        self._source = source
        self._sink = sink
        self._prepare = prepare
        self._clock = clock
        self._random = random
        self._backoff = Backoff(backoff or BackoffPolicy(), clock, random)
        self._page_size = page_size
        self._min_watch_timeout = min_watch_timeout
        self._idle_timeout = idle_timeout
        self.namespace = namespace
        self.description = description
        self._log = _log.bind(type=description, namespace=namespace or "*")
        self.state: State = Listing()
        self.listed = False
        self.resource_version = ""
        self.last_error: str | None = None
        self.last_error_time: float | None = None
        self.failing_since: float | None = None
        self.last_sync_time: float | None = None
        self.watching = False
        self.reconnects = 0
        self.relists = 0
        self._watched_once = False
        self._proving: TimerHandle | None = None
        self._watch_list = watch_list
        self.watch_list_supported: bool | None = None
        # client-go's isLastSyncResourceVersionUnavailable and paginatedResult.
        self._version_unavailable = False
        self._paginated = False
        self._watch_list_fallback = False

    async def run(self) -> None:
        """List, watch and recover forever; returns only by cancellation."""
        state: State = Listing()
        while True:
            state = await self.step(state)

    async def step(self, state: State) -> State:
        """Perform one transition from ``state`` and return the next state."""
        self.state = state
        if isinstance(state, Listing):
            next_state = await self._list()
        elif isinstance(state, Watching):
            next_state = await self._watch(state.resource_version)
        else:
            await self._clock.sleep(state.delay)
            next_state = state.then
        self.state = next_state
        self._sink.status_changed(self)
        return next_state

    # listing -------------------------------------------------------------------------

    def relist_resource_version(self) -> str:
        """The resourceVersion the next list asks for (client-go's ``relistResourceVersion``).

        ``""`` (consistent) once the server said it cannot serve the last one; ``"0"``
        (any, from the watch cache) before anything was seen; else the last one seen.
        """
        if self._version_unavailable:
            return ""
        return self.resource_version or "0"

    async def _list(self) -> State:
        fallback, self._watch_list_fallback = self._watch_list_fallback, False
        if self.listed and not fallback:
            self.relists += 1
        if self._watch_list and self.watch_list_supported is not False and not fallback:
            # An empty version asks for a consistent snapshot, as client-go's watch-list.
            return await self._watch(
                "" if self._version_unavailable else self.resource_version, initial=True
            )
        version = self.relist_resource_version()
        try:
            items, resource_version = await self._list_all(version)
        except Exception as exc:
            if not (version and resource_version_unavailable(exc)):
                return self._failed(exc, Listing(), "list")
            # The server cannot list at that version: list consistently, at once.
            self._log.info("list version unavailable; listing consistently", version=version)
            self._version_unavailable = True
            try:
                items, resource_version = await self._list_all("")
            except Exception as exc:
                return self._failed(exc, Listing(), "list")
        self._listed(items, resource_version)
        return Watching(resource_version)

    def _listed(self, items: list[tuple[Key, Entry]], resource_version: str) -> None:
        first = not self.listed
        self._sink.replaced(self, items)
        self.listed = True
        self._version_unavailable = False
        self.resource_version = resource_version
        self.last_sync_time = self._clock.now()
        self.failing_since = None
        how = (
            "decoded as it arrived"
            if isinstance(self._source, StreamingLister)
            else "decoded page by page"
        )
        if first:
            self._log.debug(
                "listed", objects=len(items), resource_version=resource_version, how=how
            )
        else:
            self._log.info(
                "re-listed", objects=len(items), resource_version=resource_version, how=how
            )

    async def _list_all(self, version: str) -> tuple[list[tuple[Key, Entry]], str]:
        limit = self._page_size
        if version not in ("", "0") and not self._paginated:
            # As client-go: a list at a version is served whole from the watch cache,
            # which ignores limit; paging would only push it to etcd.
            limit = None
        try:
            return await self._pages(limit, version)
        except _ContinueExpiredError:
            # The continue token expired mid-way (the server compacted): as client-go's
            # pager does, fall back to one unpaginated list.
            self._log.info("list continuation expired; listing without pages")
            return await self._pages(None, version)

    async def _pages(self, limit: int | None, version: str) -> tuple[list[tuple[Key, Entry]], str]:
        items: list[tuple[Key, Entry]] = []
        continue_: str | None = None
        while True:
            query: dict[str, Any] = {"namespace": self.namespace, "limit": limit}
            if continue_:
                query["continue_"] = continue_
            else:
                query.update(
                    continue_=None,
                    resource_version=version,
                    resource_version_match=("NotOlderThan" if version not in ("", "0") else None),
                )
            try:
                continue_, resource_version = await self._page(query, items)
            except GoneError as exc:
                if not query["continue_"]:
                    raise
                raise _ContinueExpiredError(str(exc)) from exc
            if not continue_:
                return items, resource_version
            self._paginated = True

    async def _page(
        self, query: dict[str, Any], items: list[tuple[Key, Entry]]
    ) -> tuple[str | None, str]:
        """List one page into ``items``; return its continue token and resourceVersion."""
        source = self._source
        if isinstance(source, StreamingLister):
            # Each object is encoded for the store as soon as it is decoded: a list the
            # server answers in one response never holds its whole body, nor all its
            # decoded JSON, at once.
            async with source.list_stream(**query) as listed:
                async for obj in listed:
                    items.append(self._prepare(obj))
                return listed.continue_, listed.resource_version
        # Encode page by page, and let go of a page before asking for the next.
        page = await source.list(**query)
        items.extend(self._prepare(obj) for obj in page.items)
        return page.continue_, page.resource_version

    # watching ------------------------------------------------------------------------

    async def _watch(self, resource_version: str, *, initial: bool = False) -> State:  # noqa: PLR0912 - client-go's watch loop, event by event
        """Watch from ``resource_version``; with ``initial``, as a streaming list."""
        if not initial:
            if self._watched_once:
                self.reconnects += 1
            self._watched_once = True
        timeout = int(self._min_watch_timeout * (1.0 + self._random()))
        started = self._clock.now()
        events = 0
        opened = False
        # The streaming list's objects, until the bookmark that ends them.
        pending: dict[Key, Entry] | None = {} if initial else None
        try:
            async with self._source.watch(
                namespace=self.namespace,
                resource_version=resource_version,
                timeout_seconds=max(timeout, 1),
                idle_timeout=self._idle_timeout,
                send_initial_events=initial,
            ) as stream:
                opened = True
                if not initial:
                    self._established()
                async for event in stream:
                    events += 1
                    if pending is not None:
                        end = self._initial_event(event, pending)
                        if end is None:
                            continue
                        self._listed(list(pending.items()), end)
                        pending = None
                        resource_version = end
                        self.watch_list_supported = True
                        self._watched_once = True
                        self.state = Watching(end)
                        self._sink.status_changed(self)
                        self._established()
                        continue
                    resource_version = self._apply(event, resource_version)
                    if self.failing_since is not None:
                        self._recovered()
        except Exception as exc:
            self.watching = False
            if pending is not None:
                return self._watch_list_failed(exc, resource_version)
            return self._watch_failed(exc, resource_version, opened=opened, events=events)
        finally:
            if self._proving is not None:
                self._proving.cancel()
                self._proving = None
        self.watching = False
        if pending is not None:
            return self._watch_list_failed(
                InitialEventsError(
                    f"streaming list ended after {events} events, before the bookmark "
                    "that ends the initial events"
                ),
                resource_version,
            )
        self.resource_version = resource_version
        elapsed = self._clock.now() - started
        if events == 0 and elapsed < _SHORT_WATCH:
            return self._failed(
                ShortWatchError(f"watch closed after {elapsed:.3f}s without sending anything"),
                Watching(resource_version),
                "watch",
            )
        if self.failing_since is not None:
            self._recovered()  # it lasted: the server works again
        self._log.debug("watch ended; watching again", events=events)
        return Watching(resource_version)

    def _watch_failed(
        self, exc: Exception, resource_version: str, *, opened: bool, events: int
    ) -> State:
        if isinstance(exc, GoneError):
            # As client-go, the last version is not marked unavailable: a list at it
            # returns data at least that fresh, from the watch cache.
            self._log.info("watch expired (410); re-listing", resource_version=resource_version)
            return Listing()
        if isinstance(exc, TimeoutError) and opened:
            self._log.info(
                "watch idle; reconnecting", idle_seconds=self._idle_timeout, events=events
            )
            return Watching(resource_version)
        retry_watch = not isinstance(exc, APIError) or exc.code in _RETRY_WATCH_CODES
        if isinstance(exc, ValueError | TypeError | KeyError):
            retry_watch = False  # a bad object or a bug in a transform: start afresh
        then: Listing | Watching = Watching(resource_version) if retry_watch else Listing()
        return self._failed(exc, then, "watch")

    def _initial_event(self, event: dict[str, Any], pending: dict[Key, Entry]) -> str | None:
        """Take one event of a streaming list; return the version once it has ended."""
        event_type = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, dict):
            raise ValueError(f"watch event without an object: {str(event)[:200]}")
        if event_type == "BOOKMARK":
            metadata = obj.get("metadata") or {}
            annotations = metadata.get("annotations") or {}
            version = str(metadata.get("resourceVersion") or "")
            if annotations.get(INITIAL_EVENTS_END) == "true":
                return version
            return None
        if event_type == "ERROR":
            raise APIError.from_status(int(obj.get("code") or 500), obj)
        if event_type not in ("ADDED", "MODIFIED", "DELETED"):
            raise ValueError(f"unknown watch event type {event_type!r}")
        key, entry = self._prepare(obj)
        if event_type == "DELETED":
            pending.pop(key, None)
        else:
            pending[key] = entry
        return None

    def _watch_list_failed(self, exc: Exception, resource_version: str) -> State:
        """A streaming list failed before its end: list page by page instead.

        A server that refuses it (400, 422) is listed page by page from now on; any other
        failure falls back for this list only, at once, as client-go does ("making
        progress is better than deadlocking").
        """
        if isinstance(exc, APIError) and exc.code in _WATCH_LIST_REFUSED:
            self.watch_list_supported = False
            self._log.info("the API server does not stream lists; listing page by page")
        elif resource_version and resource_version_unavailable(exc):
            self._version_unavailable = True
            self._log.info("streaming list version unavailable; listing consistently")
            return Listing()
        else:
            self._log.info(
                "streaming list failed; listing page by page this time", error=_describe(exc)
            )
        self._watch_list_fallback = True
        return Listing()

    def _apply(self, event: dict[str, Any], resource_version: str) -> str:
        event_type = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, dict):
            raise ValueError(f"watch event without an object: {str(event)[:200]}")
        if event_type == "BOOKMARK":
            metadata = obj.get("metadata") or {}
            self.resource_version = str(metadata.get("resourceVersion") or resource_version)
            self._sink.progressed(self)
            return self.resource_version
        if event_type == "ERROR":
            raise APIError.from_status(int(obj.get("code") or 500), obj)
        if event_type not in ("ADDED", "MODIFIED", "DELETED"):
            raise ValueError(f"unknown watch event type {event_type!r}")
        key, entry = self._prepare(obj)
        self.resource_version = entry.resource_version or resource_version
        self._sink.changed(self, event_type, key, entry)
        return self.resource_version

    def _established(self) -> None:
        self.watching = True
        if self.failing_since is not None:
            # An open watch is not yet a working one: a flapping server accepts watches and
            # drops them at once. Recovery needs an event, or the watch staying open.
            self._proving = self._clock.call_at(self._clock.now() + _SHORT_WATCH, self._recovered)
        self._sink.status_changed(self)

    def _recovered(self) -> None:
        if self._proving is not None:
            self._proving.cancel()
            self._proving = None
        self.failing_since = None
        self._sink.status_changed(self)

    # failures ------------------------------------------------------------------------

    def _failed(self, exc: Exception, then: Listing | Watching, verb: str) -> BackingOff:
        now = self._clock.now()
        message = f"{verb} {self.description or 'objects'}: {_describe(exc)}"
        delay = self._backoff.next_delay()
        if isinstance(exc, APIError) and exc.retry_after is not None:
            delay = max(delay, exc.retry_after)
        self.last_error = message
        self.last_error_time = now
        if self.failing_since is None:
            self.failing_since = now
        self._log.warning(
            "informer failed; retrying",
            error=message,
            retry_in=round(delay, 3),
            then="watch" if isinstance(then, Watching) else "list",
        )
        return BackingOff(delay, then, message)


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
