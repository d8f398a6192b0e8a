"""Provenance: why a key was queued, kept per key by the queue until it is handed out."""

from __future__ import annotations

import re
from collections import deque
from contextvars import ContextVar
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

__all__ = ["KEPT_FIRST", "KEPT_LAST", "Trigger", "TriggerKind", "Triggers", "event_trigger"]

KEPT_FIRST: Final = 3
"""How many of a key's first triggers are kept."""

KEPT_LAST: Final = 3
"""How many of a key's last triggers are kept (the ones between are only counted)."""

_KIND = re.compile(r"[a-z][a-z0-9_]*")
_VALID_KINDS: set[str] = set()  # kinds already checked: a Trigger is built per event


class TriggerKind:
    """The trigger kinds pyctrl itself records; any other lowercase name may be used.

    A kind labels ``controller_runtime_reconcile_triggers_total``, so it should be one of
    a few fixed names (``[a-z][a-z0-9_]*``), never an object's name.
    """

    CREATE: Final = "create"
    """A watch saw the object created."""
    UPDATE: Final = "update"
    """A watch saw the object change (its resourceVersion moved)."""
    DELETE: Final = "delete"
    """A watch saw the object deleted."""
    GENERIC: Final = "generic"
    """A generic event (`pyctrl.source.Func`, a custom source)."""
    INITIAL_LIST: Final = "initial_list"
    """The informer's first list (a start or restart) found the object."""
    RESYNC: Final = "resync"
    """A periodic resync: an update whose old and new resourceVersion are equal."""
    CHANNEL: Final = "channel"
    """An object sent to a `pyctrl.source.Channel`."""
    REQUEUE: Final = "requeue"
    """The previous reconcile returned ``Result(requeue=True)``."""
    REQUEUE_AFTER: Final = "requeue_after"
    """The previous reconcile returned ``Result(requeue_after=...)``."""
    RETRY: Final = "retry"
    """The previous reconcile failed: a rate-limited retry."""
    TIMER: Final = "timer"
    """A per-object timer fired."""
    UNKNOWN: Final = "unknown"
    """Added without a trigger (code that calls ``queue.add(key)`` bare)."""


class Trigger:
    """One reason a key was queued (immutable).

    Attributes:
        kind: What happened: one of `TriggerKind`'s names, or a name of your own.
        source: Which watch or mechanism: ``"Deployment.apps"`` for a watch of that kind,
            ``"channel"``, a timer's name...; empty for the controller's requeues.
        object: ``Kind namespace/name`` of the object the event was about: the child's,
            for owner and map-function handlers; empty for requeues.
        resource_version: That object's resourceVersion, when known.
        span_context: The OpenTelemetry span context of the event, which the reconcile's
            span links to (only set while tracing).

    Raises:
        ValueError: ``kind`` is not a lowercase name (``[a-z][a-z0-9_]*``).
    """

    # Private slots behind read-only properties: one Trigger is built per event, and
    # plain slot stores are several times cheaper than a frozen dataclass's.
    __slots__ = ("_kind", "_object", "_resource_version", "_source", "_span_context")

    def __init__(
        self,
        kind: str,
        source: str = "",
        object: str = "",
        resource_version: str = "",
        span_context: Any = None,
    ) -> None:
        if kind not in _VALID_KINDS:
            _check_kind(kind)
        self._kind = kind
        self._source = source
        self._object = object
        self._resource_version = resource_version
        self._span_context = span_context

    @property
    def kind(self) -> str:
        """What happened."""
        return self._kind

    @property
    def source(self) -> str:
        """Which watch or mechanism."""
        return self._source

    @property
    def object(self) -> str:
        """``Kind namespace/name`` of the object the event was about."""
        return self._object

    @property
    def resource_version(self) -> str:
        """The object's resourceVersion."""
        return self._resource_version

    @property
    def span_context(self) -> Any:
        """The event's OpenTelemetry span context, or None."""
        return self._span_context

    def _key(self) -> tuple[Any, ...]:
        return (self.kind, self.source, self.object, self.resource_version, self.span_context)

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, Trigger):
            return NotImplemented
        return bool(self._key() == other._key())

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (
            f"Trigger(kind={self.kind!r}, source={self.source!r}, object={self.object!r}, "
            f"resource_version={self.resource_version!r})"
        )

    def __str__(self) -> str:
        text = self.kind
        if self.object:
            text += f" {self.object}"
        if self.resource_version:
            text += f"@{self.resource_version}"
        if self.source and not self.object:
            text += f" via {self.source}"
        return text


def _check_kind(kind: str) -> None:
    if not isinstance(kind, str) or not _KIND.fullmatch(kind):
        raise ValueError(f"trigger kind must be a lowercase name ([a-z][a-z0-9_]*), got {kind!r}")
    _VALID_KINDS.add(kind)


event_trigger: ContextVar[Trigger | None] = ContextVar("pyctrl_event_trigger", default=None)
"""The trigger of the event an event handler is handling in this task.

`pyctrl.source.dispatch` sets it around each handler call, so that every add a handler
makes without a trigger of its own (``queue.add(request)``) records the event's; adds
outside a handler record `TriggerKind.UNKNOWN`.
"""


class Log:
    """The triggers recorded for one queued key: first and last few, and counts.

    Once its key is handed out, the queue records into a new log: this one is frozen
    and `Triggers` reads it directly.
    """

    __slots__ = ("count", "first", "kinds", "last")

    def __init__(self, trigger: Trigger) -> None:
        self.first: list[Trigger] = [trigger]
        self.last: deque[Trigger] | None = None
        self.count = 1
        self.kinds: dict[str, int] = {trigger.kind: 1}

    def record(self, trigger: Trigger) -> None:
        self.count += 1
        kinds = self.kinds
        kinds[trigger.kind] = kinds.get(trigger.kind, 0) + 1
        if len(self.first) < KEPT_FIRST:
            self.first.append(trigger)
            return
        if self.last is None:
            self.last = deque(maxlen=KEPT_LAST)
        self.last.append(trigger)


class Triggers:
    """The triggers that collapsed into one reconcile, bounded.

    Iterating gives the kept triggers in order: the first `KEPT_FIRST` and the last
    `KEPT_LAST`; `count` says how many there were in all and `by_kind` counts every
    one of them by kind. ``str()`` (and ``repr()``, which log renderers use) is the
    compact summary the reconcile's log lines carry, e.g.
    ``update Deployment default/web@812 (5 triggers: update=4 retry=1)``.
    """

    __slots__ = ("_log",)

    def __init__(self, log: Log | None = None) -> None:
        self._log = log

    @property
    def first(self) -> tuple[Trigger, ...]:
        """The first triggers, in order."""
        return tuple(self._log.first) if self._log is not None else ()

    @property
    def last(self) -> tuple[Trigger, ...]:
        """The last triggers, in order (none if all fit in `first`)."""
        return tuple(self._log.last or ()) if self._log is not None else ()

    @property
    def count(self) -> int:
        """How many triggers were recorded in all."""
        return self._log.count if self._log is not None else 0

    @property
    def by_kind(self) -> Mapping[str, int]:
        """How many triggers of each kind."""
        return MappingProxyType(self._log.kinds if self._log is not None else {})

    @property
    def kind(self) -> str:
        """The kind of the first trigger: what queued the key (`TriggerKind.UNKNOWN` if none)."""
        return self._log.first[0].kind if self._log is not None else TriggerKind.UNKNOWN

    @property
    def omitted(self) -> int:
        """How many triggers between the first and the last ones were only counted."""
        return self.count - len(self)

    def __iter__(self) -> Iterator[Trigger]:
        if self._log is not None:
            yield from self._log.first
            yield from self._log.last or ()

    def __len__(self) -> int:
        log = self._log
        return 0 if log is None else len(log.first) + len(log.last or ())

    def __bool__(self) -> bool:
        return self._log is not None

    def __str__(self) -> str:
        log = self._log
        if log is None:
            return TriggerKind.UNKNOWN
        text = str(log.first[0])
        if log.count > 1:
            kinds = " ".join(f"{kind}={n}" for kind, n in log.kinds.items())
            text += f" ({log.count} triggers: {kinds})"
        return text

    # Log renderers write repr() of values: a bound Triggers renders as its summary, and
    # the summary is only built for lines actually written.
    __repr__ = __str__

    def __structlog__(self) -> str:
        """What structlog's JSON renderer writes: the summary."""
        return str(self)


EMPTY: Final = Triggers()
"""The triggers of a key queued without any."""
