"""The reflector: keeps a store in step with the API server by list and watch.

A reflector is an explicit state machine (the shape kube-rs gives its watcher), one
transition per `Reflector.step`:

- `Listing`: list every object, page by page, and replace the store with the result
  (deletes for vanished objects included); then watch from the list's resourceVersion.
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
from typing import TYPE_CHECKING, Any, Protocol

from pyctrl.cache._backoff import Backoff, BackoffPolicy
from pyctrl.errors import APIError, GoneError
from pyctrl.log import get_logger

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from contextlib import AbstractAsyncContextManager

    from pyctrl.cache._store import Entry, Key
    from pyctrl.clock import Clock, TimerHandle

__all__ = [
    "BackingOff",
    "ListPage",
    "ListerWatcher",
    "Listing",
    "Reflector",
    "ReflectorSink",
    "State",
    "Watching",
]

_log = get_logger("pyctrl.cache")

# A watch that ends this quickly with no event is a broken watch, not a server timeout
# (client-go's "very short watch"): back off rather than spin on it. By the same bar, a
# watch open this long without an error proves the reflector has recovered.
_SHORT_WATCH = 1.0
_RETRY_WATCH_CODES = frozenset({429, 500, 502, 503, 504})


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
        self, *, namespace: str | None, limit: int | None, continue_: str | None
    ) -> ListPage:
        """Return one page of objects; raise `pyctrl.errors.APIError` on a failure status."""
        ...

    def watch(
        self,
        *,
        namespace: str | None,
        resource_version: str,
        timeout_seconds: int,
        idle_timeout: float | None,
    ) -> AbstractAsyncContextManager[AsyncIterator[dict[str, Any]]]:
        """Open a watch; the iterator yields decoded events (``type`` and ``object``).

        Entering the context raises `pyctrl.errors.APIError` if the server refuses the
        watch. Iteration ends when the server closes the watch, and raises
        `TimeoutError` if nothing arrives for ``idle_timeout`` seconds.
        """
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

    async def _list(self) -> State:
        if self.listed:
            self.relists += 1
        try:
            items, resource_version = await self._list_all(self._page_size)
        except GoneError:
            # The continue token expired mid-way (the server compacted): as client-go's
            # pager does, fall back to one unpaginated list.
            self._log.info("list continuation expired; listing without pages")
            try:
                items, resource_version = await self._list_all(None)
            except Exception as exc:
                return self._failed(exc, Listing(), "list")
        except Exception as exc:
            return self._failed(exc, Listing(), "list")
        first = not self.listed
        self._sink.replaced(self, items)
        self.listed = True
        self.resource_version = resource_version
        self.last_sync_time = self._clock.now()
        self.failing_since = None
        if first:
            self._log.debug("listed", objects=len(items), resource_version=resource_version)
        else:
            self._log.info("re-listed", objects=len(items), resource_version=resource_version)
        return Watching(resource_version)

    async def _list_all(self, limit: int | None) -> tuple[list[tuple[Key, Entry]], str]:
        items: list[tuple[Key, Entry]] = []
        continue_: str | None = None
        while True:
            page = await self._source.list(
                namespace=self.namespace, limit=limit, continue_=continue_
            )
            # Encode page by page so a big list never holds all its decoded JSON at once,
            # and let go of a page before asking for the next.
            items.extend(self._prepare(obj) for obj in page.items)
            continue_, resource_version = page.continue_, page.resource_version
            del page
            if not continue_:
                return items, resource_version

    # watching ------------------------------------------------------------------------

    async def _watch(self, resource_version: str) -> State:
        if self._watched_once:
            self.reconnects += 1
        self._watched_once = True
        timeout = int(self._min_watch_timeout * (1.0 + self._random()))
        started = self._clock.now()
        events = 0
        opened = False
        try:
            async with self._source.watch(
                namespace=self.namespace,
                resource_version=resource_version,
                timeout_seconds=max(timeout, 1),
                idle_timeout=self._idle_timeout,
            ) as stream:
                opened = True
                self._established()
                async for event in stream:
                    events += 1
                    resource_version = self._apply(event, resource_version)
                    if self.failing_since is not None:
                        self._recovered()
        except GoneError:
            self._log.info("watch expired (410); re-listing", resource_version=resource_version)
            self.watching = False
            return Listing()
        except TimeoutError as exc:
            self.watching = False
            if opened:
                self._log.info(
                    "watch idle; reconnecting", idle_seconds=self._idle_timeout, events=events
                )
                return Watching(resource_version)
            return self._failed(exc, Watching(resource_version), "watch")
        except Exception as exc:
            self.watching = False
            retry_watch = not isinstance(exc, APIError) or exc.code in _RETRY_WATCH_CODES
            if isinstance(exc, ValueError | TypeError | KeyError):
                retry_watch = False  # a bad object or a bug in a transform: start afresh
            then: Listing | Watching = Watching(resource_version) if retry_watch else Listing()
            return self._failed(exc, then, "watch")
        finally:
            if self._proving is not None:
                self._proving.cancel()
                self._proving = None
        self.watching = False
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

    def _apply(self, event: dict[str, Any], resource_version: str) -> str:
        event_type = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, dict):
            raise ValueError(f"watch event without an object: {str(event)[:200]}")
        if event_type == "BOOKMARK":
            metadata = obj.get("metadata") or {}
            self.resource_version = str(metadata.get("resourceVersion") or resource_version)
            return self.resource_version
        if event_type == "ERROR":
            raise APIError.from_status(int(obj.get("code") or 500), obj)
        if event_type not in ("ADDED", "MODIFIED", "DELETED"):
            raise ValueError(f"unknown watch event type {event_type!r}")
        key, entry = self._prepare(obj)
        self._sink.changed(self, event_type, key, entry)
        self.resource_version = entry.resource_version or resource_version
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
