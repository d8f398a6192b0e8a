"""Event recorders: tell people what a controller did, as Kubernetes Events.

``kubectl describe`` shows an object's Events; operators record them for the decisions
people care about ("created Deployment web", "port 8080 is taken"). An `EventRecorder`
(from ``manager.get_event_recorder_for(name)``) writes ``events.k8s.io/v1`` Events,
falling back to ``core/v1`` Events on servers that do not serve the newer API.

Recording never blocks a reconcile and never fails it: `EventRecorder.event` puts the
event in a bounded buffer (1000 by default; beyond that events are dropped and counted)
and the recorder, a runnable owned by the Manager, writes them. The same event repeated
(same object, type, reason, action and message) within ten minutes is not written
again: the existing Event's ``series`` (core/v1: ``count``) is increased instead, as
client-go's recorder does.
"""

from __future__ import annotations

import asyncio
import socket
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pyctrl.client import Client, MergePatch, NoKindMatchError
from pyctrl.errors import APIError, NotFoundError
from pyctrl.log import get_logger
from pyctrl.meta import GroupVersionKind, format_time
from pyctrl.resource import Unstructured, accessor
from pyctrl.scheme import Scheme, default_scheme

__all__ = ["EventRecorder", "EventType"]

EventType = Literal["Normal", "Warning"]
_log = get_logger("pyctrl.recorder")
_SERIES_WINDOW = 600.0
_EVENTS_V1 = GroupVersionKind("events.k8s.io", "v1", "Event")
_CORE_V1 = GroupVersionKind("", "v1", "Event")


@dataclass(frozen=True, slots=True)
class _Key:
    uid: str
    kind: str
    namespace: str
    name: str
    type: str
    reason: str
    action: str
    note: str


@dataclass(slots=True)
class _Series:
    event: Unstructured
    count: int
    last_seen: float


class EventRecorder:
    """Records Events about objects on behalf of one controller.

    Args:
        client: Writes the Events.
        controller: The reporting controller's name (``reportingController``).
        scheme: Finds objects' kinds.
        instance: The reporting instance; the host name by default.
        buffer: How many events may wait to be written.
    """

    def __init__(
        self,
        client: Client,
        controller: str,
        *,
        scheme: Scheme | None = None,
        instance: str | None = None,
        buffer: int = 1000,
    ) -> None:
        self.client = client
        self.controller = controller
        self.instance = instance or socket.gethostname()
        self._scheme = scheme or default_scheme()
        self._queue: asyncio.Queue[tuple[_Key, dict[str, Any], float]] = asyncio.Queue(buffer)
        self._series: dict[_Key, _Series] = {}
        self._gvk = _EVENTS_V1
        self._idle = asyncio.Event()
        self._idle.set()
        self.dropped = 0
        """Events dropped because the buffer was full."""

    def event(
        self,
        obj: Any,
        type_: EventType,
        reason: str,
        message: str,
        *,
        action: str = "",
    ) -> None:
        """Record an event about ``obj`` (never blocks, never raises for API problems).

        Args:
            obj: The object the event is about (any object form with metadata).
            type_: ``"Normal"`` or ``"Warning"``.
            reason: A short CamelCase machine-readable reason, e.g. ``Created``.
            message: A human-readable message (truncated to 1 KiB).
            action: What was done (``events.k8s.io/v1``'s ``action``); defaults to reason.
        """
        if type_ not in ("Normal", "Warning"):
            raise ValueError(f"event type must be 'Normal' or 'Warning', got {type_!r}")
        meta = accessor(obj)
        gvk = self._scheme.gvk_for(obj)
        regarding = {
            "apiVersion": gvk.api_version,
            "kind": gvk.kind,
            "name": meta.name,
            "uid": meta.uid,
            "resourceVersion": meta.resource_version,
        }
        if meta.namespace:
            regarding["namespace"] = meta.namespace
        key = _Key(
            meta.uid,
            gvk.kind,
            meta.namespace,
            meta.name,
            type_,
            reason,
            action or reason,
            message[:1024],
        )
        try:
            self._queue.put_nowait((key, regarding, time.monotonic()))
            self._idle.clear()
        except asyncio.QueueFull:
            self.dropped += 1
            _log.warning("event buffer full, dropping event", reason=reason, object=meta.name)

    async def wait_idle(self) -> None:
        """Wait until every recorded event has been written (for tests and shutdown)."""
        await self._idle.wait()

    async def start(self) -> None:
        """Write recorded events until cancelled."""
        while True:
            key, regarding, seen = await self._queue.get()
            try:
                await self._write(key, regarding, seen)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                _log.warning("could not write event", reason=key.reason, error=str(exc))
            finally:
                if self._queue.empty():
                    self._idle.set()

    async def _write(self, key: _Key, regarding: dict[str, Any], seen: float) -> None:
        series = self._series.get(key)
        if series is not None and seen - series.last_seen < _SERIES_WINDOW:
            series.count += 1
            series.last_seen = seen
            try:
                series.event = await self.client.patch(
                    series.event, MergePatch(self._repeat(series.count))
                )
                return
            except NotFoundError:
                del self._series[key]
        event = self._new_event(key, regarding)
        try:
            created = await self.client.create(event)
        except (NoKindMatchError, NotFoundError) as exc:
            if self._gvk != _EVENTS_V1:
                raise
            _log.info("events.k8s.io/v1 not served, falling back to core/v1 events", error=str(exc))
            self._gvk = _CORE_V1
            created = await self.client.create(self._new_event(key, regarding))
        except APIError:
            raise
        self._series[key] = _Series(created, 1, seen)
        if len(self._series) > 4096:
            oldest = min(self._series, key=lambda k: self._series[k].last_seen)
            del self._series[oldest]

    def _now(self) -> str:
        return format_time(datetime.now(UTC), micro=self._gvk == _EVENTS_V1)

    def _repeat(self, count: int) -> dict[str, Any]:
        if self._gvk == _EVENTS_V1:
            return {"series": {"count": count, "lastObservedTime": self._now()}}
        return {"count": count, "lastTimestamp": self._now()}

    def _new_event(self, key: _Key, regarding: dict[str, Any]) -> Unstructured:
        namespace = key.namespace or "default"
        name = f"{key.name or 'object'}.{time.time_ns():x}"
        metadata = {"name": name, "namespace": namespace}
        if self._gvk == _EVENTS_V1:
            return Unstructured(
                {
                    "apiVersion": "events.k8s.io/v1",
                    "kind": "Event",
                    "metadata": metadata,
                    "eventTime": self._now(),
                    "reportingController": self.controller,
                    "reportingInstance": self.instance,
                    "action": key.action,
                    "reason": key.reason,
                    "note": key.note,
                    "type": key.type,
                    "regarding": regarding,
                }
            )
        now = format_time(datetime.now(UTC))
        return Unstructured(
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": metadata,
                "involvedObject": regarding,
                "reason": key.reason,
                "message": key.note,
                "type": key.type,
                "action": key.action,
                "count": 1,
                "firstTimestamp": now,
                "lastTimestamp": now,
                "source": {"component": self.controller, "host": self.instance},
                "reportingComponent": self.controller,
                "reportingInstance": self.instance,
            }
        )
