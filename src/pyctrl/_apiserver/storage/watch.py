"""Watch fan-out: one stored change, encoded once, delivered to every interested watcher.

Each open watch request is a :class:`Watcher`: a filter (namespace, label selector, field
selector, KEP-5866 shard selector), a :class:`View` (how objects are rendered: full JSON at
some API version, PartialObjectMetadata or Table) and a bounded queue of encoded event lines. The
:class:`WatchHub` is a store listener: for every committed event it asks each watcher of that
resource whether the event concerns it, and which type it has for it. Like kube-apiserver's
cacher, an object that starts matching a selector arrives as ADDED and one that stops matching
as DELETED (with its previous content at the new resourceVersion).

The bytes of an event are computed once per (view, type) and cached on the event, so a
thousand watchers of one resource cost one encoding. Writers never wait for watchers: a
watcher whose queue overflows (a client not reading) is closed, as kube-apiserver closes
unresponsive watchers; its client re-lists and watches again.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import orjson

from pyctrl.clock import RealClock

if TYPE_CHECKING:
    from pyctrl._apiserver.apimachinery.fields import FieldSelector, LabelSelector
    from pyctrl._apiserver.storage.store import StorageKey, StoreEvent
    from pyctrl.clock import Clock, TimerHandle


class View(Protocol):
    """How a watcher renders objects (API version and representation)."""

    cache_key: Hashable
    """Equal for views that render identically, so encodings are shared."""

    def render(self, obj: dict[str, Any]) -> Any:
        """The JSON-able value sent as an event's ``object``."""


class PendingEvent(NamedTuple):
    """An event queued unencoded, for a view that converts objects before encoding them."""

    type: str
    obj: dict[str, Any]


Chunk = bytes | PendingEvent
"""What a watcher queues: an encoded event line, or an event its view encodes later."""


def encode_event(type_: str, value: Any) -> bytes:
    """One newline-terminated watch event line."""
    return b'{"type":"' + type_.encode() + b'","object":' + orjson.dumps(value) + b"}\n"


FieldsOf = Callable[[dict[str, Any]], dict[str, str]]


def _at_rv(obj: dict[str, Any], rv: int) -> dict[str, Any]:
    out = dict(obj)
    out["metadata"] = dict(obj.get("metadata") or {}, resourceVersion=str(rv))
    return out


class Watcher:
    """One open watch: its filter, its view and its queue of encoded event lines."""

    def __init__(
        self,
        *,
        key: StorageKey,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        fields_of: FieldsOf,
        view: View,
        max_queue: int,
        render_first: Callable[[str, dict[str, Any]], bytes] | None = None,
        shard: Callable[[dict[str, Any]], bool] | None = None,
        event_delay: Callable[[], float] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.key = key
        self._clock: Clock = clock or RealClock()
        self.shard = shard
        self.namespace = namespace
        self.labels = labels
        self.fields = fields
        self.fields_of = fields_of
        self.view = view
        self.max_queue = max_queue
        self._render_first = render_first
        self._filtered = not labels.empty or not fields.empty or shard is not None
        self._queue: deque[Any] = deque()
        # A view that converts (a conversion webhook) takes events unencoded, in batches.
        self._deferred: bool = getattr(view, "deferred", False)
        self._waiter: asyncio.Future[None] | None = None
        # Injected latency (Faults.delay_watch_events): events held until they are due.
        self._event_delay = event_delay
        self._delayed: deque[tuple[float, StoreEvent]] = deque()
        self._release_handle: TimerHandle | None = None
        self.closed = False
        self.close_reason = ""
        self.hub: WatchHub | None = None

    def _matches(self, obj: dict[str, Any]) -> bool:
        if self.shard is not None and not self.shard(obj):
            return False
        if not self.labels.empty and not self.labels.matches(
            (obj.get("metadata") or {}).get("labels")
        ):
            return False
        return self.fields.empty or self.fields.matches(self.fields_of(obj))

    def offer(self, event: StoreEvent) -> None:
        """Queue ``event`` if it concerns this watcher, typed as this watcher sees it.

        Under an injected delay the event is held back and queued once due; events keep
        their order.
        """
        if self.closed:
            return
        delay = self._event_delay() if self._event_delay is not None else 0.0
        if delay > 0 or self._delayed:
            self._delayed.append((self._clock.now() + delay, event))
            if self._release_handle is None:
                self._release_handle = self._clock.call_at(self._delayed[0][0], self._release)
            return
        self._offer_now(event)

    def _release(self) -> None:
        self._release_handle = None
        now = self._clock.now()
        while self._delayed and self._delayed[0][0] <= now and not self.closed:
            self._offer_now(self._delayed.popleft()[1])
        if self._delayed and not self.closed:
            self._release_handle = self._clock.call_at(self._delayed[0][0], self._release)

    def bookmark_rv(self, current: int) -> int:
        """The version a bookmark may carry now: none past an event still held back."""
        if self._delayed:
            return min(current, self._delayed[0][1].rv - 1)
        return current

    def _offer_now(self, event: StoreEvent) -> None:
        if self.closed:
            return
        if self.namespace is not None and event.namespace != self.namespace:
            return
        if not self._filtered:
            self._push_event(event, event.type, "obj")
            return
        new_ok = event.type != "DELETED" and self._matches(event.obj)
        old_ok = event.prev is not None and self._matches(event.prev)
        if new_ok:
            self._push_event(event, "MODIFIED" if old_ok else "ADDED", "obj")
        elif old_ok:
            self._push_event(event, "DELETED", "obj" if event.type == "DELETED" else "prev")

    def _push_event(self, event: StoreEvent, type_: str, which: str) -> None:
        if self._render_first is not None:
            obj = event.obj if which == "obj" else _at_rv(event.prev or {}, event.rv)
            first = self._render_first(type_, obj)
            self._render_first = None
            self.push(first)
            return
        if self._deferred:
            obj = event.obj if which == "obj" else _at_rv(event.prev or {}, event.rv)
            self.push(PendingEvent(type_, obj))
            return
        ck = (self.view.cache_key, type_, which)
        data = event.cache.get(ck)
        if data is None:
            obj = event.obj if which == "obj" else _at_rv(event.prev or {}, event.rv)
            data = encode_event(type_, self.view.render(obj))
            event.cache[ck] = data
        self.push(data)

    def push_initial_end(self, data: bytes) -> None:
        """Queue the bookmark that ends the initial events: part of them, never dropped."""
        self._queue.append(data)
        self._wake()

    def push_object(self, type_: str, obj: dict[str, Any]) -> None:
        """Queue a synthetic event (initial ADDED events) for ``obj``."""
        data: Chunk
        if self._render_first is not None:
            data = self._render_first(type_, obj)
            self._render_first = None
        elif self._deferred:
            data = PendingEvent(type_, obj)
        else:
            data = encode_event(type_, self.view.render(obj))
        self._queue.append(data)
        self._wake()

    def push(self, data: Chunk) -> None:
        """Queue an event; close the watcher when it has fallen too far behind."""
        if self.closed:
            return
        if len(self._queue) >= self.max_queue:
            self.close("watcher fell too far behind")
            return
        self._queue.append(data)
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def matches_object(self, obj: dict[str, Any]) -> bool:
        """Whether a current object passes this watcher's filter."""
        meta = obj.get("metadata") or {}
        if self.namespace is not None and (meta.get("namespace") or "") != self.namespace:
            return False
        return self._matches(obj)

    def drain(self) -> list[bytes]:
        """Take every queued event line (a watcher whose view encodes as it queues)."""
        items = list(self._queue)
        self._queue.clear()
        return items

    def drain_chunks(self) -> list[Chunk]:
        """Take every queued event, encoded or pending (a view that converts first)."""
        items = list(self._queue)
        self._queue.clear()
        return items

    @property
    def pending(self) -> int:
        """How many event lines wait to be written."""
        return len(self._queue)

    async def wait(self, deadline: float | None) -> None:
        """Return when events are queued, the watcher closes, or the clock reaches ``deadline``."""
        if self._queue or self.closed:
            return
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            async with self._clock.timeout_at(deadline):
                await self._waiter
        except TimeoutError:
            pass
        finally:
            self._waiter = None

    def close(self, reason: str = "") -> None:
        """Stop the watch: no more events are queued; the stream ends after the queued ones."""
        if self.closed:
            return
        self.closed = True
        self.close_reason = reason
        if self._release_handle is not None:
            self._release_handle.cancel()
            self._release_handle = None
        self._delayed.clear()
        if self.hub is not None:
            self.hub.unregister(self)
        self._wake()


class WatchHub:
    """Routes committed store events to the watchers of their resource."""

    def __init__(self) -> None:
        self._watchers: dict[StorageKey, set[Watcher]] = {}

    def register(self, watcher: Watcher) -> None:
        """Start delivering events of ``watcher.key`` to ``watcher``."""
        watcher.hub = self
        self._watchers.setdefault(watcher.key, set()).add(watcher)

    def unregister(self, watcher: Watcher) -> None:
        """Stop delivering events to ``watcher``."""
        watchers = self._watchers.get(watcher.key)
        if watchers is not None:
            watchers.discard(watcher)

    def dispatch(self, event: StoreEvent) -> None:
        """Store listener: offer ``event`` to every watcher of its resource."""
        watchers = self._watchers.get(event.key)
        if watchers:
            for watcher in list(watchers):
                watcher.offer(event)

    def close_all(self, reason: str = "") -> int:
        """Close every watcher; returns how many were open."""
        count = 0
        for watchers in list(self._watchers.values()):
            for watcher in list(watchers):
                watcher.close(reason)
                count += 1
        return count

    def close_key(self, key: StorageKey, reason: str = "") -> int:
        """Close the watchers of one resource; returns how many were open."""
        watchers = list(self._watchers.get(key, ()))
        for watcher in watchers:
            watcher.close(reason)
        return len(watchers)

    def count(self) -> int:
        """How many watchers are open."""
        return sum(len(w) for w in self._watchers.values())
