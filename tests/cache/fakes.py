"""An in-memory API server for one resource type: a fake `TypeSource` for reflector tests.

It keeps objects, a resourceVersion counter and an event history, serves paginated lists
and watches that replay history then stream live changes, and can be broken on purpose:
failed requests, dropped or silent watches, compacted history, an unserved type.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyctrl.cache._reflector import ListPage
from pyctrl.errors import APIError, GoneError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

_CLOSE = object()


class NotServedError(Exception):
    """The fake's type is not served (its CRD is not installed)."""


@dataclass
class _Watch:
    namespace: str | None
    queue: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


class FakeCluster:
    """One resource type's objects, history and watches, with fault injection."""

    def __init__(
        self, *, api_version: str = "v1", kind: str = "ConfigMap", namespaced: bool = True
    ) -> None:
        self.api_version = api_version
        self.kind = kind
        self.is_namespaced = namespaced
        self.served = True
        self.rv = 100
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.history: list[tuple[int, str, dict[str, Any]]] = []
        self.compacted = 0
        self.watches: list[_Watch] = []
        self.failures: list[tuple[str, Exception]] = []
        self.list_calls: list[dict[str, Any]] = []
        self.watch_calls: list[dict[str, Any]] = []
        self.expire_continue = False
        self.gone_as_event = False
        self.watch_opened = asyncio.Event()
        self._watches_allowed = asyncio.Event()
        self._watches_allowed.set()

    # changes ---------------------------------------------------------------------------

    def _record(self, event_type: str, obj: dict[str, Any]) -> dict[str, Any]:
        self.history.append((self.rv, event_type, copy.deepcopy(obj)))
        for watch in self.watches:
            if watch.namespace is None or watch.namespace == obj["metadata"].get("namespace"):
                watch.queue.put_nowait({"type": event_type, "object": copy.deepcopy(obj)})
        return obj

    def put(
        self,
        name: str,
        namespace: str = "default",
        *,
        data: dict[str, str] | None = None,
        labels: dict[str, str] | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        """Create or replace an object; returns it with its new resourceVersion."""
        self.rv += 1
        ns = namespace if self.is_namespaced else ""
        key = (ns, name)
        event_type = "MODIFIED" if key in self.objects else "ADDED"
        metadata: dict[str, Any] = {"name": name, "resourceVersion": str(self.rv)}
        if ns:
            metadata["namespace"] = ns
        if labels:
            metadata["labels"] = dict(labels)
        metadata["managedFields"] = [{"manager": "test", "operation": "Update"}]
        obj: dict[str, Any] = {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "metadata": metadata,
            **fields,
        }
        if data is not None:
            obj["data"] = dict(data)
        self.objects[key] = obj
        return self._record(event_type, obj)

    def delete(self, name: str, namespace: str = "default") -> None:
        """Delete an object."""
        ns = namespace if self.is_namespaced else ""
        obj = self.objects.pop((ns, name))
        self.rv += 1
        obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self.rv)}}
        self._record("DELETED", obj)

    def bookmark(self) -> None:
        """Send a bookmark at the current resourceVersion to every watch."""
        for watch in self.watches:
            watch.queue.put_nowait(
                {
                    "type": "BOOKMARK",
                    "object": {
                        "apiVersion": self.api_version,
                        "kind": self.kind,
                        "metadata": {"resourceVersion": str(self.rv)},
                    },
                }
            )

    # faults ----------------------------------------------------------------------------

    def fail_next(self, verb: str, exc: Exception, times: int = 1) -> None:
        """Make the next ``times`` calls of ``verb`` (list, watch, resolve) raise ``exc``."""
        self.failures.extend((verb, exc) for _ in range(times))

    def _maybe_fail(self, verb: str) -> None:
        for i, (failing_verb, exc) in enumerate(self.failures):
            if failing_verb == verb:
                del self.failures[i]
                raise exc

    def drop_watches(self) -> int:
        """End every open watch normally."""
        for watch in self.watches:
            watch.queue.put_nowait(_CLOSE)
        return len(self.watches)

    def fail_watches(self, exc: BaseException) -> None:
        """Make every open watch raise ``exc`` (TimeoutError: the idle watchdog fired)."""
        for watch in self.watches:
            watch.queue.put_nowait(exc)

    def hold_watches(self) -> None:
        """Make new watches wait (as if the server were unreachable) until released."""
        self._watches_allowed.clear()

    def release_watches(self) -> None:
        """Let held watches proceed."""
        self._watches_allowed.set()

    def compact(self) -> None:
        """Forget the history: watches from older resourceVersions get 410."""
        self.compacted = self.rv
        self.history.clear()

    def send_error(self, code: int, reason: str, message: str) -> None:
        """Send an ERROR event with a Status to every watch."""
        for watch in self.watches:
            watch.queue.put_nowait({"type": "ERROR", "object": _status(code, reason, message)})

    # the TypeSource protocol -----------------------------------------------------------

    async def namespaced(self) -> bool:
        """Whether the type is namespaced; raises while the type is not served."""
        self._maybe_fail("resolve")
        if not self.served:
            raise NotServedError(f"no matches for kind {self.kind!r}")
        return self.is_namespaced

    async def list(
        self,
        *,
        namespace: str | None,
        limit: int | None,
        continue_: str | None,
        resource_version: str = "",
        resource_version_match: str | None = None,
    ) -> ListPage:
        """One page of objects, sorted by namespace and name (at the current version)."""
        self.list_calls.append(
            {
                "namespace": namespace,
                "limit": limit,
                "continue": continue_,
                "resource_version": resource_version,
                "resource_version_match": resource_version_match,
            }
        )
        self._maybe_fail("list")
        if continue_ is not None and self.expire_continue:
            raise APIError.from_status(410, _status(410, "Expired", "continue token expired"))
        if not self.served:
            raise APIError.from_status(404, _status(404, "NotFound", "not served"))
        keys = sorted(k for k in self.objects if namespace is None or k[0] == namespace)
        start = int(continue_.split(":")[0]) if continue_ else 0
        rv = continue_.split(":")[1] if continue_ else str(self.rv)
        stop = len(keys) if limit is None else start + limit
        items = [copy.deepcopy(self.objects[k]) for k in keys[start:stop]]
        for item in items:  # list items come without apiVersion and kind
            item.pop("apiVersion", None)
            item.pop("kind", None)
        more = f"{stop}:{rv}" if stop < len(keys) else None
        return ListPage(items=items, resource_version=rv, continue_=more)

    @contextlib.asynccontextmanager
    async def watch(
        self,
        *,
        namespace: str | None,
        resource_version: str,
        timeout_seconds: int,
        idle_timeout: float | None,
        send_initial_events: bool = False,
    ) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        """A watch from ``resource_version``: replayed history, then live events.

        Like kube-apiserver before 1.27, it refuses streaming lists (422).
        """
        self.watch_calls.append(
            {
                "namespace": namespace,
                "resource_version": resource_version,
                "timeout_seconds": timeout_seconds,
                "idle_timeout": idle_timeout,
                "send_initial_events": send_initial_events,
            }
        )
        if send_initial_events:
            message = "resourceVersionMatch is forbidden for watch"
            raise APIError.from_status(422, _status(422, "Invalid", message))
        await self._watches_allowed.wait()
        self._maybe_fail("watch")
        start = int(resource_version)
        gone = start < self.compacted
        if gone and not self.gone_as_event:
            raise GoneError(code=410, reason="Expired", message="too old resource version")
        watch = _Watch(namespace)
        if gone:
            watch.queue.put_nowait(
                {"type": "ERROR", "object": _status(410, "Expired", "too old resource version")}
            )
        else:
            for rv, event_type, obj in self.history:
                in_scope = namespace is None or obj["metadata"].get("namespace") == namespace
                if rv > start and in_scope:
                    watch.queue.put_nowait({"type": event_type, "object": copy.deepcopy(obj)})
        self.watches.append(watch)
        self.watch_opened.set()
        try:
            yield self._stream(watch)
        finally:
            self.watches.remove(watch)
            if not self.watches:
                self.watch_opened.clear()

    @staticmethod
    async def _stream(watch: _Watch) -> AsyncIterator[dict[str, Any]]:
        while True:
            item = await watch.queue.get()
            if item is _CLOSE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
