"""Fault injection for the embedded API server.

Tests of an operator's resilience need an API server that misbehaves on demand: the next few
requests fail with 500 or 429, some requests are slow, watch events arrive late (a watch
cache lagging behind storage), every watch is cut, the event history is compacted so
resuming watches get 410 Expired and must re-list, the server refuses streaming lists as
one older than Kubernetes 1.27 does, or the server restarts (every connection dropped, the
data kept). :class:`Faults` is that switchboard
(``server.faults``, ``Environment.faults``); ``clear()`` turns the failures and latency off.

Verbs are kube-apiserver's request verbs: get, list, watch, create, update, patch, delete,
deletecollection. A resource filter matches the plural (``configmaps``) or the plural with its
group (``deployments.apps``); subresource requests match ``deployments/status`` too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyctrl._apiserver.apimachinery.errors import StatusError
from pyctrl.clock import Clock, RealClock

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

VERBS = frozenset(
    {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
)

_REASONS = {
    400: ("BadRequest", "bad request"),
    401: ("Unauthorized", "Unauthorized"),
    403: ("Forbidden", "forbidden"),
    404: ("NotFound", "the server could not find the requested resource"),
    409: (
        "Conflict",
        "the object has been modified; please apply your changes to the latest version "
        "and try again",
    ),
    410: ("Expired", "the resource version is too old"),
    429: ("TooManyRequests", "Too many requests, please try again later."),
    500: ("InternalError", "Internal error occurred: injected fault"),
    503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    504: ("Timeout", "the server was unable to return a response in the time allotted"),
}


def _check(verb: str | None, resource: str | None) -> None:
    if verb is not None and verb not in VERBS:
        raise ValueError(f"unknown verb {verb!r}; expected one of {sorted(VERBS)}")
    if resource is not None and not resource:
        raise ValueError("resource must be a non-empty plural name or None")


def _matches(
    want_verb: str | None, want_resource: str | None, verb: str, names: tuple[str, ...]
) -> bool:
    if want_verb is not None and want_verb != verb:
        return False
    return want_resource is None or want_resource in names


@dataclass
class _Failure:
    remaining: int
    verb: str | None
    resource: str | None
    code: int
    retry_after: int | None


@dataclass
class _Latency:
    seconds: float
    verb: str | None
    resource: str | None


class Faults:
    """Injected failures, latency, dropped watches, compaction and restarts (``server.faults``)."""

    def __init__(
        self,
        *,
        drop_watches: Callable[[], int],
        compact: Callable[[], None],
        restart: Callable[[], Awaitable[None]],
        clock: Clock | None = None,
    ) -> None:
        self.clock: Clock = clock or RealClock()
        """The clock injected latency and watch delays are measured on."""
        self._drop_watches = drop_watches
        self._compact = compact
        self._restart = restart
        self._failures: list[_Failure] = []
        self._latencies: list[_Latency] = []
        self._watch_delays: list[_Latency] = []
        self.refuses_watch_list = False
        """Whether streaming lists are refused (see `refuse_watch_list`)."""

    def drop_watches(self) -> int:
        """Close every open watch stream now; returns how many were open."""
        return self._drop_watches()

    def fail_next(
        self,
        n: int,
        *,
        verb: str | None = None,
        resource: str | None = None,
        code: int = 500,
        retry_after: int | None = None,
    ) -> None:
        """Fail the next ``n`` matching requests with ``code`` (and ``Retry-After``)."""
        if n < 1:
            raise ValueError(f"n must be at least 1, got {n}")
        if not 400 <= code <= 599:
            raise ValueError(f"code must be an HTTP error status (400-599), got {code}")
        _check(verb, resource)
        self._failures.append(_Failure(n, verb, resource, code, retry_after))

    def add_latency(
        self, seconds: float, *, verb: str | None = None, resource: str | None = None
    ) -> None:
        """Delay every matching request by ``seconds`` until :meth:`clear`."""
        if seconds < 0:
            raise ValueError(f"seconds must not be negative, got {seconds}")
        _check(verb, resource)
        self._latencies.append(_Latency(seconds, verb, resource))

    def delay_watch_events(self, seconds: float, *, resource: str | None = None) -> None:
        """Deliver every watch event ``seconds`` after its change was committed, until `clear`.

        Like a kube-apiserver whose watch cache lags behind etcd: writes answer at once,
        watchers (informers) see them late, in order; bookmarks never run ahead of the
        events held back. Applies to open watches too.
        """
        if seconds < 0:
            raise ValueError(f"seconds must not be negative, got {seconds}")
        _check(None, resource)
        self._watch_delays.append(_Latency(seconds, "watch", resource))

    def watch_delay_for(self, names: tuple[str, ...]) -> float:
        """The injected delay of watch events of a resource."""
        if not self._watch_delays:
            return 0.0
        return sum(
            d.seconds for d in self._watch_delays if _matches(None, d.resource, "watch", names)
        )

    def refuse_watch_list(self, refuse: bool = True) -> None:
        """Refuse streaming lists as kube-apiserver before 1.27 does, until `clear`.

        Such a server does not know ``sendInitialEvents`` and rejects the
        ``resourceVersionMatch`` that comes with it on a watch: 422 Invalid,
        "resourceVersionMatch is forbidden for watch". Clients fall back to list and watch.
        """
        self.refuses_watch_list = refuse

    def compact(self) -> None:
        """Forget the event history: watches resuming from an older version get 410 Expired."""
        self._compact()

    async def restart(self) -> None:
        """Restart the server: every connection and watch is dropped, the data is kept.

        The server listens again on the same address before this returns, with the same
        objects and resourceVersions, as kube-apiserver comes back with etcd's data:
        clients see their watches end, then re-list or re-watch. The event history is kept,
        so watches may resume where they were; a real kube-apiserver starts with an empty
        watch cache instead, which `compact` after the restart reproduces (resuming watches
        get 410 Expired and must re-list). Injected failures and latency stay.

        Raises:
            RuntimeError: If the server is not running.
        """
        await self._restart()

    def clear(self) -> None:
        """Remove every injected failure, latency and watch delay; accept streaming lists."""
        self._failures.clear()
        self._latencies.clear()
        self._watch_delays.clear()
        self.refuses_watch_list = False

    @property
    def active(self) -> bool:
        """Whether any failure or latency is configured (watch delays aside)."""
        return bool(self._failures or self._latencies)

    def latency_for(self, verb: str, names: tuple[str, ...]) -> float:
        """Total injected delay for a request."""
        return sum(
            lat.seconds for lat in self._latencies if _matches(lat.verb, lat.resource, verb, names)
        )

    def failure_for(self, verb: str, names: tuple[str, ...]) -> StatusError | None:
        """The injected failure for a request, consuming one use of it."""
        for failure in self._failures:
            if _matches(failure.verb, failure.resource, verb, names):
                failure.remaining -= 1
                if failure.remaining <= 0:
                    self._failures.remove(failure)
                reason, message = _REASONS.get(failure.code, ("InternalError", "injected fault"))
                headers = {}
                if failure.retry_after is not None:
                    headers["Retry-After"] = str(failure.retry_after)
                return StatusError(
                    failure.code,
                    reason,
                    message,
                    retry_after=failure.retry_after,
                    headers=headers,
                    details=False,
                )
        return None
