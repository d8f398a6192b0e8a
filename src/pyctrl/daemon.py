"""Daemons: one long-running coroutine per object, for as long as the object lives.

A `Daemon` is kopf's ``@kopf.daemon`` for pyctrl: for each object of a type it runs
``fn(context)``, a coroutine that may poll an external system, hold a connection or
watch something the API server cannot, for the object's whole life. It is a
`pyctrl.source.Source` of its controller, so the controller owns it: its tasks live in a
TaskGroup inside the controller's, they run only where the controller runs (on the
leader), and an error never vanishes.

Declare one on the builder::

    async def poll(ctx: DaemonContext[MySrv]) -> None:
        while not await ctx.sleep(10):       # True once asked to stop
            await check(ctx.object.spec.url)  # always the latest object

    controller_managed_by(manager).for_(MySrv).daemon(poll).complete(reconciler)

Life cycle, per object:

- **Start**: when the object appears, including every existing object when the
  controller starts (after ``initial_delay``, if given), and only while ``when(obj)``
  (if given) accepts it.
- **Latest object**: `DaemonContext.object` is replaced on every change. The daemon
  reads the cache's entries undecoded: its bookkeeping looks at metadata only, and the
  typed object is built when ``when`` (if given) looks at it, or when the daemon first
  reads `DaemonContext.object` after a change. A daemon that never reads its object
  costs no decoding, however often the object changes.
- **Stop**: when the object gets a ``deletionTimestamp`` or is deleted, when ``when``
  stops accepting it, when `Daemon.stop` is called (the hook for losing an object's
  shard), and when the controller stops (shutdown, or leadership lost). Stopping sets
  the stop signal (`DaemonContext.stopping`, `DaemonContext.sleep` and
  `DaemonContext.wait_stopping` see it); a daemon still running ``stop_timeout`` seconds
  later is cancelled. On shutdown the controller gives its daemons at most its graceful
  shutdown timeout; on lost leadership they are cancelled at once.
- **Finalizers**: a reconciler that holds a finalizer for the object calls
  ``await daemon.stop(request)`` before removing it, so the daemon has finished before
  the object may go; or registers the daemon itself (a `pyctrl.controllerutil.Finalizer`)
  in its `pyctrl.controllerutil.Finalizers`.
- **Crashes**: an exception restarts the daemon after a backoff (``backoff`` seconds,
  doubling up to ``max_backoff``; reset once a run lasted longer than ``max_backoff``),
  with the latest object, and is logged and counted in
  ``pyctrl_daemon_crashes_total{daemon}``. A `pyctrl.errors.TerminalError` is logged and
  counted but not retried. A daemon that returns is done for that object until the
  operator restarts (as in kopf).

``pyctrl_daemons_running{daemon}`` tells how many run.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar

from pyctrl import _executor, metrics
from pyctrl.cache import CachedObject
from pyctrl.clock import RealClock
from pyctrl.controllerutil import FinalizerResult
from pyctrl.errors import TerminalError
from pyctrl.log import bound_context, get_logger
from pyctrl.reconcile import Request
from pyctrl.resource import ObjectAccessor, accessor

if TYPE_CHECKING:
    from pyctrl.cache import Cache, HandlerRegistration
    from pyctrl.cache import Informer as CacheInformer
    from pyctrl.clock import Clock, TimerHandle
    from pyctrl.handler import Queue

__all__ = ["Daemon", "DaemonContext", "DaemonFunc"]

T = TypeVar("T")
_log = get_logger("pyctrl.daemon")


class DaemonContext(Generic[T]):
    """What a daemon is given: its object (kept current), and the stop signal."""

    def __init__(self, request: Request, obj: T, clock: Clock) -> None:
        self.request = request
        """The object's namespace and name."""
        # The latest object, or the cache's entry of it (decoded on first read); one
        # attribute, so that a blocking daemon's thread reads either the old or the new.
        self._latest: T | CachedObject[T] = obj
        self._stop = asyncio.Event()
        self._stop_seen = threading.Event()  # the stop signal, for a blocking daemon's thread
        self._changed = asyncio.Event()
        self._clock = clock

    @property
    def object(self) -> T:
        """The latest version of the object seen by the cache (do not modify it).

        Built from the cache's entry when first read after a change, then the same object
        until the next change.
        """
        latest = self._latest
        return latest.object if isinstance(latest, CachedObject) else latest

    @property
    def stopping(self) -> bool:
        """True once the daemon was asked to stop: it should return soon."""
        return self._stop.is_set()

    async def wait_stopping(self) -> None:
        """Wait until the daemon is asked to stop."""
        await self._stop.wait()

    async def sleep(self, seconds: float) -> bool:
        """Sleep ``seconds``, or less if asked to stop; return whether asked to stop.

        So a polling daemon reads ``while not await ctx.sleep(10): ...``.
        """
        if self._stop.is_set():
            return True
        with contextlib.suppress(TimeoutError):
            async with self._clock.timeout_at(self._clock.now() + seconds):
                await self._stop.wait()
        return self._stop.is_set()

    def sleep_blocking(self, seconds: float) -> bool:
        """`sleep` for a plain ``def`` daemon, in its thread: blocks; True once asked to stop.

        So a blocking daemon reads ``while not ctx.sleep_blocking(10): ...``.
        """
        return self._stop_seen.wait(seconds)

    async def wait_changed(self) -> None:
        """Wait until the object changed since this last returned (or a stop is asked).

        A change that came while the daemon was busy is not lost: the next call returns
        at once.
        """
        await self._changed.wait()
        self._changed.clear()

    def _set_object(self, obj: T | CachedObject[T]) -> None:
        self._latest = obj
        self._changed.set()

    def _request_stop(self) -> None:
        self._stop.set()
        self._stop_seen.set()
        self._changed.set()


DaemonFunc: TypeAlias = Callable[[DaemonContext[Any]], Awaitable[None] | None]
"""The daemon's function: ``async def fn(ctx: DaemonContext[T]) -> None``, or a plain
``def`` that blocks, run in a thread of the daemon's pool (`pyctrl.blocking`)."""


@dataclass(eq=False)
class _Slot:
    context: DaemonContext[Any]
    task: asyncio.Task[None] | None = None
    kill: TimerHandle | None = None
    finished: asyncio.Event = field(default_factory=asyncio.Event)


def _meta(obj: CachedObject[Any] | Any) -> ObjectAccessor:
    """The metadata of a cached entry (undecoded) or of a typed object."""
    return obj.meta() if isinstance(obj, CachedObject) else accessor(obj)


def _typed(obj: CachedObject[Any] | Any) -> Any:
    """The typed object of a cached entry (decoded once), or the object itself."""
    return obj.object if isinstance(obj, CachedObject) else obj


def _check_seconds(name: str, value: float) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) or not value >= 0:
        raise ValueError(f"{name} must be a number of seconds >= 0, got {value!r}")
    return float(value)


class Daemon:
    """Runs ``fn`` for every object of ``type_`` while it lives (see the module docs).

    Args:
        cache: The shared informer cache.
        type_: The type whose objects get a daemon (the controller's ``for_`` type).
        fn: ``async def fn(ctx: DaemonContext[T]) -> None``; a plain ``def`` runs in a
            thread of the daemon's own pool (it waits with `DaemonContext.sleep_blocking`).
        name: Names the daemon in logs and metrics (default: ``fn``'s name).
        when: Run only for objects this accepts (checked on every change).
        initial_delay: Seconds between an object's appearance and its daemon's start.
        stop_timeout: Seconds a daemon gets to return once asked to stop, before it is
            cancelled (kopf's ``cancellation_timeout``).
        backoff: Seconds before the first restart after a crash; doubles per crash.
        max_backoff: The longest wait between restarts.
        clock: Time source (tests pass a `pyctrl.clock.FakeClock`).
        threads: At most this many plain ``def`` daemons run at once (one thread each);
            more wait for a thread.
    """

    def __init__(
        self,
        cache: Cache,
        type_: type[Any],
        fn: DaemonFunc,
        *,
        name: str = "",
        when: Callable[[Any], bool] | None = None,
        initial_delay: float = 0.0,
        stop_timeout: float = 5.0,
        backoff: float = 1.0,
        max_backoff: float = 300.0,
        clock: Clock | None = None,
        threads: int = 32,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"a daemon needs a coroutine function, got {fn!r}")
        self.fn = fn
        self.type = type_
        self.name = name or getattr(fn, "__qualname__", type(fn).__name__)
        self.when = when
        self.initial_delay = _check_seconds("initial_delay", initial_delay)
        self.stop_timeout = _check_seconds("stop_timeout", stop_timeout)
        self.backoff = _check_seconds("backoff", backoff)
        self.max_backoff = _check_seconds("max_backoff", max_backoff)
        self._clock: Clock = clock or RealClock()
        self._informer: CacheInformer[Any] = cache.get_informer(type_)
        self._registration: HandlerRegistration | None = None
        self._registered = asyncio.Event()
        self._group: asyncio.TaskGroup | None = None
        self._slots: dict[Request, _Slot] = {}
        self._done: set[Request] = set()  # returned or failed terminally: not restarted
        self._running = metrics.daemons_running.labels(self.name)
        self._crashes = metrics.daemon_crashes_total.labels(self.name)
        self._pool = _executor.Pool(f"daemon-{self.name}", threads)

    # -- the Source protocol ----------------------------------------------------------

    async def start(self, queue: Queue) -> None:
        """Run daemons until cancelled; then stop them all (see the module docs).

        ``queue`` is not used: a daemon does not enqueue anything by itself.
        """
        if self._group is not None:
            raise RuntimeError(f"daemon {self.name} was already started")
        async with asyncio.TaskGroup() as group:
            self._group = group
            self._registration = self._informer.add_cached_event_handler(self)
            self._registered.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                # A second cancel (forced shutdown) interrupts this and the group
                # cancels what is left at once.
                self._registration.remove()
                await self._stop_all()
                raise
            finally:
                self._pool.shutdown()

    async def wait_for_sync(self) -> None:
        """Return once every existing object has been seen (and its daemon started)."""
        await self._registered.wait()
        assert self._registration is not None
        await self._registration.wait_synced()

    # -- control ----------------------------------------------------------------------

    def running(self, request: Request) -> bool:
        """Whether a daemon runs (or is stopping) for ``request``."""
        return request in self._slots

    def stop_nowait(self, request: Request) -> None:
        """Ask ``request``'s daemon to stop; cancel it ``stop_timeout`` seconds later.

        The sharding layer calls it when this replica loses the object's shard (and stops
        delivering the object's events here). The daemon starts again on the object's
        next change seen here, if it should still run.
        """
        slot = self._slots.get(request)
        if slot is None or slot.context.stopping:
            return
        slot.context._request_stop()
        task = slot.task
        if task is not None:
            slot.kill = self._clock.call_at(self._clock.now() + self.stop_timeout, task.cancel)

    async def stop(self, request: Request) -> None:
        """Stop ``request``'s daemon and wait until it has finished.

        A reconciler calls it before it removes the object's finalizer. It returns within
        ``stop_timeout`` (plus what the daemon's own cancellation handling takes).
        """
        slot = self._slots.get(request)
        if slot is None:
            return
        self.stop_nowait(request)
        await slot.finished.wait()

    async def finalize(self, obj: Any) -> FinalizerResult:
        """Stop ``obj``'s daemon and wait for it: a `pyctrl.controllerutil.Finalizer`.

        Register the daemon in a `pyctrl.controllerutil.Finalizers` registry and the
        object is not released for deletion before its daemon has finished.
        """
        meta = accessor(obj)
        await self.stop(Request(meta.namespace, meta.name))
        return FinalizerResult()

    async def _stop_all(self) -> None:
        slots = list(self._slots.values())
        for request in list(self._slots):
            self.stop_nowait(request)
        for slot in slots:
            await slot.finished.wait()

    # -- informer notifications -------------------------------------------------------

    # A `pyctrl.cache.CachedEventHandler`: only ``when`` and the daemon's own reads of
    # its context's object decode. (The sharding layer hands over typed objects of the
    # slots that arrive: those are taken as they are.)

    def add(self, obj: CachedObject[Any], is_in_initial_list: bool) -> None:
        """An object appeared: start its daemon."""
        self._seen(obj)

    def update(self, old: CachedObject[Any], new: CachedObject[Any]) -> None:
        """An object changed: hand over the new version, or stop the daemon."""
        self._seen(new)

    def delete(self, obj: CachedObject[Any], delete_state_unknown: bool) -> None:
        """An object is gone: stop its daemon."""
        meta = _meta(obj)
        request = Request(meta.namespace, meta.name)
        self._done.discard(request)
        self.stop_nowait(request)

    def _seen(self, obj: CachedObject[Any]) -> None:
        meta = _meta(obj)
        request = Request(meta.namespace, meta.name)
        live = meta.deletion_timestamp is None and (self.when is None or self.when(_typed(obj)))
        slot = self._slots.get(request)
        if slot is not None:
            slot.context._set_object(obj)
            if not live:
                self.stop_nowait(request)
        elif live and self._group is not None and request not in self._done:
            slot = self._slots[request] = _Slot(DaemonContext(request, obj, self._clock))
            slot.task = self._group.create_task(
                self._supervise(slot),
                name=f"daemon-{self.name}-{request}",
                context=contextvars.Context(),  # not the informer's logging context
            )

    # -- one object's daemon ----------------------------------------------------------

    async def _supervise(self, slot: _Slot) -> None:
        context = slot.context
        request = context.request
        self._running.inc()
        try:
            with bound_context(daemon=self.name, namespace=request.namespace, name=request.name):
                if self.initial_delay and await context.sleep(self.initial_delay):
                    return
                if await self._run(context):
                    self._done.add(request)
        finally:
            self._running.dec()
            if slot.kill is not None:
                slot.kill.cancel()
            if self._slots.get(request) is slot:
                del self._slots[request]
            slot.finished.set()

    async def _run(self, context: DaemonContext[Any]) -> bool:
        """Run and restart the daemon; True if it is done for good (returned, or terminal)."""
        crashes = 0
        while not context.stopping:
            started = self._clock.now()
            try:
                with self._pool.bound():
                    await _executor.invoke(self.fn, context)
            except TerminalError as exc:
                self._crashes.inc()
                _log.error("daemon failed with a terminal error, not restarting", error=str(exc))
                return not context.stopping
            except Exception as exc:
                self._crashes.inc()
                if context._stop.is_set():  # (the property would read as narrowed)
                    _log.error("daemon failed while stopping", exc_info=True)
                    return False
                crashes = 1 if self._clock.now() - started > self.max_backoff else crashes + 1
                delay = min(self.backoff * 2 ** (crashes - 1), self.max_backoff)
                _log.error(
                    "daemon crashed, restarting",
                    error=f"{type(exc).__name__}: {exc}",
                    restart_in=delay,
                    exc_info=True,
                )
                if await context.sleep(delay):
                    return False
            else:
                _log.info("daemon returned", stopping=context.stopping)
                return not context.stopping
        return False

    def __repr__(self) -> str:
        return f"Daemon({self.name!r}, running={len(self._slots)})"
