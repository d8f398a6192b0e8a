"""Reconcilers: the code that drives what is toward what should be.

A Reconciler is handed a `Request` (the namespace and name of one object) and makes the
cluster match that object's desired state, reading the current state fresh each time. It
is level-triggered: it is not told what changed, only which object to look at, so it
must be idempotent. Controllers call it from their workers; one key is never reconciled
by two workers at once.

What the controller does with the outcome (see `pyctrl.controller`):

- the reconcile raises: the request is retried with per-key exponential backoff;
- it raises `TerminalError`: logged and counted, never retried;
- it returns ``Result(requeue_after=d)``: backoff is reset and the request comes back
  after ``d`` seconds;
- it returns ``Result(requeue=True)``: requeued through the rate limiter;
- ``Result(priority=p)`` requeues (either way) at priority ``p`` (higher goes first);
- otherwise (``Result()`` or ``None``): backoff is reset and nothing is requeued.

Any object with an ``async def reconcile(self, request) -> Result | None`` method is a
`Reconciler`; `Func` turns a plain coroutine function into one. A plain
``def reconcile(self, request)`` (a `SyncReconciler`) is run in a thread by its
controller, so blocking code never stalls the event loop (`pyctrl.blocking`).

An `ObjectReconciler` is handed the object itself rather than its key
(controller-runtime's ``reconcile.ObjectReconciler``, kube-rs' ``reconcile(Arc<K>)``):
``async def reconcile_object(self, obj: MySrv) -> Result | None``, typed by the object it
reconciles. `as_reconciler` adapts one to a `Reconciler` that reads the object first and
skips keys whose object is gone; the builder does that for you.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from pyctrl.errors import NotFoundError, TerminalError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = [
    "Func",
    "ObjectReconciler",
    "Reconciler",
    "Request",
    "Result",
    "SyncObjectReconciler",
    "SyncReconciler",
    "TerminalError",
    "as_reconciler",
]

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)


@dataclass(frozen=True, order=True, slots=True)
class Request:
    """The key of one object to reconcile: its namespace ("" when cluster-scoped) and name.

    Requests are hashable and ordered, so they serve as workqueue keys, and print as
    ``namespace/name`` (or just ``name``), as Kubernetes tools do.

    In a multi-cluster controller (`pyctrl.cluster`), ``cluster`` names the engaged
    cluster the object lives in (multicluster-runtime's ``mcreconcile.Request``); it is
    "" for the manager's own (local) cluster, so single-cluster code never sees it. A
    request of another cluster prints as ``cluster:namespace/name``.
    """

    namespace: str
    name: str
    cluster: str = ""

    def in_cluster(self, cluster: str) -> Request:
        """This request, for the object of the same key in ``cluster`` ("" the local one)."""
        return Request(self.namespace, self.name, cluster)

    @classmethod
    def parse(cls, key: str) -> Request:
        """Build a Request from ``namespace/name`` or ``name``, optionally ``cluster:`` first."""
        cluster, _, rest = key.rpartition(":")
        namespace, sep, name = rest.rpartition("/")
        if not name or (sep and not namespace) or (_ and not cluster):
            raise ValueError(
                f"invalid request key {key!r}: expected '[cluster:]namespace/name' or "
                "'[cluster:]name'"
            )
        return cls(namespace=namespace, name=name, cluster=cluster)

    def __str__(self) -> str:
        key = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.cluster}:{key}" if self.cluster else key


@dataclass(frozen=True, slots=True)
class Result:
    """What a reconcile asks of its controller after it returns.

    Attributes:
        requeue: Reconcile this request again, through the per-key rate limiter.
        requeue_after: Reconcile again after this many seconds (a ``timedelta`` is accepted);
            takes precedence over ``requeue``.
        priority: The workqueue priority of the requeue (higher goes first; default 0),
            as controller-runtime's ``Result.Priority``.
        max_retries: Overrides the controller's ``Options.max_retries`` for this requeue
            (``requeue=True``, or an ``on_error`` hook's choice): once the key was requeued
            through the rate limiter this many times in a row, it is dropped. None keeps
            the controller's budget.
    """

    requeue: bool = False
    requeue_after: float = 0.0
    priority: int = 0
    max_retries: int | None = None

    def __init__(
        self,
        requeue: bool = False,
        requeue_after: float | timedelta = 0.0,
        priority: int = 0,
        *,
        max_retries: int | None = None,
    ) -> None:
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise TypeError(f"priority must be an int, got {priority!r}")
        if max_retries is not None and (
            not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0
        ):
            raise ValueError(f"max_retries must be an int >= 0 or None, got {max_retries!r}")
        seconds = (
            requeue_after.total_seconds()
            if isinstance(requeue_after, timedelta)
            else float(requeue_after)
        )
        if seconds < 0:
            raise ValueError(f"requeue_after must not be negative, got {seconds}")
        object.__setattr__(self, "requeue", requeue)
        object.__setattr__(self, "requeue_after", seconds)
        object.__setattr__(self, "priority", priority)
        object.__setattr__(self, "max_retries", max_retries)

    @property
    def is_zero(self) -> bool:
        """True when the result asks for nothing more."""
        return not self.requeue and self.requeue_after == 0


@runtime_checkable
class Reconciler(Protocol):
    """The extension point a controller drives: one call per `Request` to reconcile.

    ``reconcile`` may return ``None`` for ``Result()``. See the module documentation for
    what each outcome does.
    """

    async def reconcile(self, request: Request) -> Result | None:
        """Make the cluster match the desired state of the object named by ``request``."""
        ...


@runtime_checkable
class SyncReconciler(Protocol):
    """A reconciler of blocking code: a plain ``def reconcile(self, request)``.

    The controller runs it in a thread of its own pool (``max_concurrent_reconciles``
    threads), never on the event loop; it reaches the cluster through
    `pyctrl.blocking.SyncClient`. See `pyctrl.blocking`.
    """

    def reconcile(self, request: Request) -> Result | None:
        """Make the cluster match the desired state of the object named by ``request``."""
        ...


class Func:
    """Adapts a coroutine function ``async def f(request) -> Result | None`` to `Reconciler`."""

    __slots__ = ("_fn",)

    def __init__(self, fn: Callable[[Request], Awaitable[Result | None]]) -> None:
        self._fn = fn

    async def reconcile(self, request: Request) -> Result | None:
        """Call the wrapped function."""
        return await self._fn(request)

    def __repr__(self) -> str:
        return f"Func({getattr(self._fn, '__qualname__', self._fn)!r})"


@runtime_checkable
class ObjectReconciler(Protocol[T_contra]):
    """A reconciler handed the object instead of its key, typed by the object's type."""

    async def reconcile_object(self, obj: T_contra) -> Result | None:
        """Reconcile ``obj`` (a fresh copy, as read for this reconcile)."""
        ...


@runtime_checkable
class SyncObjectReconciler(Protocol[T_contra]):
    """An `ObjectReconciler` of blocking code: a plain ``def reconcile_object(self, obj)``."""

    def reconcile_object(self, obj: T_contra) -> Result | None:
        """Reconcile ``obj`` (run in a thread; see `SyncReconciler`)."""
        ...


class ObjectReader(Protocol):
    """What `as_reconciler` reads objects with: a cache, a client (`pyctrl.client.Reader`)."""

    async def get(self, type_: type[T], name: str, namespace: str | None = None) -> T:
        """Read the object ``namespace/name`` of ``type_``; raise `NotFoundError` if absent."""
        ...


class _ObjectAdapter:
    """Reads the object of a request and hands it to an `ObjectReconciler`."""

    __slots__ = ("_reader", "_reconciler", "_type")

    def __init__(
        self, reader: ObjectReader, type_: type[Any], reconciler: ObjectReconciler[Any]
    ) -> None:
        self._reader, self._type, self._reconciler = reader, type_, reconciler

    async def reconcile(self, request: Request) -> Result | None:
        try:
            obj = await self._reader.get(self._type, request.name, request.namespace or None)
        except NotFoundError:
            return Result()
        return await self._reconciler.reconcile_object(obj)

    def __repr__(self) -> str:
        return f"as_reconciler({self._type.__name__}, {self._reconciler!r})"


def as_reconciler(
    reader: ObjectReader, type_: type[T], reconciler: ObjectReconciler[T]
) -> Reconciler:
    """Adapt an `ObjectReconciler` of ``type_`` to a `Reconciler` (``reconcile.AsReconciler``).

    Each reconcile reads the request's object from ``reader`` (the manager's cache, as the
    builder uses) and hands it over; a request whose object is gone is done at once.
    """
    return _ObjectAdapter(reader, type_, reconciler)
