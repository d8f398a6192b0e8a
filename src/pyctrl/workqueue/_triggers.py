"""Provenance: why a key was queued, kept per key by the queue until it is handed out."""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

__all__ = ["KEPT_FIRST", "KEPT_LAST", "Trigger", "TriggerKind", "Triggers"]

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


@dataclass(frozen=True, slots=True)
class Trigger:
    """One reason a key was queued.

    Attributes:
        kind: What happened: one of `TriggerKind`'s names, or a name of your own.
        source: Which watch or mechanism: ``"Deployment.apps"`` for a watch of that kind,
            ``"channel"``, ``"controller"`` for requeues, a timer's name...
        object: ``kind namespace/name`` of the object the event was about: the child's,
            for owner and map-function handlers; empty for requeues.
        resource_version: That object's resourceVersion, when known.
        span_context: The OpenTelemetry span context of the event, which the reconcile's
            span links to (only set while tracing).
    """

    kind: str
    source: str = ""
    object: str = ""
    resource_version: str = ""
    span_context: Any = None

    def __post_init__(self) -> None:
        if self.kind not in _VALID_KINDS:
            if not isinstance(self.kind, str) or not _KIND.fullmatch(self.kind):
                raise ValueError(
                    f"trigger kind must be a lowercase name ([a-z][a-z0-9_]*), got {self.kind!r}"
                )
            _VALID_KINDS.add(self.kind)

    def __str__(self) -> str:
        text = self.kind
        if self.object:
            text += f" {self.object}"
        if self.resource_version:
            text += f"@{self.resource_version}"
        if self.source and not self.object:
            text += f" via {self.source}"
        return text


class _Log:
    """The triggers recorded for one queued key: first and last few, and counts."""

    __slots__ = ("count", "first", "kinds", "last")

    def __init__(self) -> None:
        self.first: list[Trigger] = []
        self.last: deque[Trigger] | None = None
        self.count = 0
        self.kinds: dict[str, int] = {}

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

    def snapshot(self) -> Triggers:
        return Triggers(
            tuple(self.first),
            tuple(self.last or ()),
            self.count,
            MappingProxyType(self.kinds),
        )


class Triggers:
    """The triggers that collapsed into one reconcile, bounded.

    Iterating gives the kept triggers in order: the first `KEPT_FIRST` and the last
    `KEPT_LAST`; `count` says how many there were in all and `by_kind` counts every
    one of them by kind. ``str()`` is the compact summary the reconcile's log lines
    carry, e.g.
    ``update Deployment default/web@812 (5 triggers: update=4 retry=1)``.

    Attributes:
        first: The first triggers, in order.
        last: The last triggers, in order (none if all fit in ``first``).
        count: How many triggers were recorded in all.
        by_kind: How many of each kind.
    """

    __slots__ = ("by_kind", "count", "first", "last")

    def __init__(
        self,
        first: tuple[Trigger, ...] = (),
        last: tuple[Trigger, ...] = (),
        count: int = 0,
        by_kind: Mapping[str, int] | None = None,
    ) -> None:
        self.first = first
        self.last = last
        self.count = count
        self.by_kind: Mapping[str, int] = by_kind if by_kind is not None else MappingProxyType({})

    @property
    def kind(self) -> str:
        """The kind of the first trigger: what queued the key (`TriggerKind.UNKNOWN` if none)."""
        return self.first[0].kind if self.first else TriggerKind.UNKNOWN

    @property
    def omitted(self) -> int:
        """How many triggers between the first and the last ones were only counted."""
        return self.count - len(self.first) - len(self.last)

    def __iter__(self) -> Iterator[Trigger]:
        yield from self.first
        yield from self.last

    def __len__(self) -> int:
        return len(self.first) + len(self.last)

    def __bool__(self) -> bool:
        return self.count > 0

    def __str__(self) -> str:
        if not self.first:
            return TriggerKind.UNKNOWN
        text = str(self.first[0])
        if self.count > 1:
            kinds = " ".join(f"{kind}={n}" for kind, n in self.by_kind.items())
            text += f" ({self.count} triggers: {kinds})"
        return text

    # Log renderers write repr() of values: a bound Triggers renders as its summary, and
    # the summary is only built for lines actually written.
    __repr__ = __str__

    def __structlog__(self) -> str:
        """What structlog's JSON renderer writes: the summary."""
        return str(self)


EMPTY: Final = Triggers()
"""The triggers of a key queued without any."""
