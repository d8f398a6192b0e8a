"""Controllers: workers that drain a queue of requests into a Reconciler.

A `Controller` owns a `pyctrl.workqueue.WorkQueue` of `pyctrl.reconcile.Request` keys,
the sources that fill it (`pyctrl.source`), and ``max_concurrent_reconciles`` workers
(default 1) that take keys and call the reconciler. It mirrors controller-runtime's
``pkg/internal/controller``:

- the same key is never reconciled by two workers at once, and bursts of events for
  one key collapse into one reconcile (the queue guarantees both);
- an exception from the reconciler requeues the key with per-key exponential backoff
  (5 ms doubling to 1000 s) and is counted in ``controller_runtime_reconcile_errors_total``;
  exceptions that are not pyctrl, OS or timeout errors are bugs, and are also counted in
  ``controller_runtime_reconcile_panics_total``; either way the worker lives on;
- `pyctrl.errors.TerminalError` is logged and counted, never retried;
- ``Result(requeue_after=d)`` resets the backoff and requeues after ``d`` seconds;
  ``Result(requeue=True)`` requeues through the rate limiter; anything else resets the
  backoff;
- every reconcile runs with a fresh ``reconcile_id`` and the controller, kind,
  namespace and name bound into the structlog context, so the reconciler's own log
  lines carry them;
- an optional ``reconcile_timeout`` bounds each reconcile.

``start()`` blocks until cancelled: it starts the sources, waits (up to
``cache_sync_timeout``) for the syncing ones, then runs the workers. When cancelled it
stops taking new work, lets in-flight reconciles finish for up to
``graceful_shutdown_timeout`` seconds, then cancels what is left; `Controller.force_stop`
cuts that wait short at any moment (the manager's second signal). Every task it starts
lives in its TaskGroup.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pyctrl import metrics
from pyctrl._ids import fast_uuid4
from pyctrl.clock import Clock, RealClock
from pyctrl.errors import CacheSyncTimeoutError, PyctrlError, TerminalError
from pyctrl.log import bound_context, get_logger
from pyctrl.reconcile import Reconciler, Request, Result
from pyctrl.source import Source, SyncingSource
from pyctrl.workqueue import RateLimiter, ShutDownError, WorkQueue

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

__all__ = ["Controller", "Options", "ReconcileGate"]

_log = get_logger("pyctrl.controller")
_EXPECTED_ERRORS = (PyctrlError, OSError, TimeoutError)


@dataclass(frozen=True)
class Options:
    """How a controller runs (controller-runtime's ``controller.Options``).

    Attributes:
        max_concurrent_reconciles: Number of workers.
        reconcile_timeout: Seconds after which a reconcile is cancelled and retried; None
            for no limit.
        rate_limiter: Per-key requeue limiter; default per-key backoff 5 ms to 1000 s.
        cache_sync_timeout: Seconds to wait for syncing sources before failing.
        graceful_shutdown_timeout: Seconds in-flight reconciles get to finish on stop.
        need_leader_election: Run only while the manager leads (the default).
        starvation_timeout: Passed to the workqueue (see `pyctrl.workqueue.WorkQueue`).
    """

    max_concurrent_reconciles: int = 1
    reconcile_timeout: float | None = None
    rate_limiter: RateLimiter[Request] | None = None
    cache_sync_timeout: float = 120.0
    graceful_shutdown_timeout: float = 30.0
    need_leader_election: bool = True
    starvation_timeout: float | None = 300.0

    def __post_init__(self) -> None:
        if self.max_concurrent_reconciles < 1:
            raise ValueError(
                "max_concurrent_reconciles must be at least 1, "
                f"got {self.max_concurrent_reconciles}"
            )


class ReconcileGate(Protocol):
    """Decides which keys this process may reconcile now (sharding: `pyctrl.shardelection`).

    The controller asks `admits` before each reconcile; a key not admitted is forgotten
    (another replica reconciles it). The reconcile runs inside `fence`, which may cancel it
    (raising) when the right to reconcile the key ends meanwhile.
    """

    def admits(self, request: Request) -> bool:
        """Whether ``request`` may be reconciled here now."""
        ...

    def fence(self, request: Request) -> AbstractAsyncContextManager[None]:
        """Bound a reconcile of ``request`` by the right to reconcile it."""
        ...


@dataclass
class _State:
    started: bool = False
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    forced: asyncio.Event = field(default_factory=asyncio.Event)
    group: asyncio.TaskGroup | None = None


class Controller:
    """Reconciles the requests its sources produce.

    Args:
        name: Unique name; labels metrics and logs (the builder uses the lowercase kind).
        reconciler: What to call for each request.
        options: See `Options`.
        kind: The kind reconciled, for the log context.
        clock: Time source for the queue (tests pass a FakeClock).
        gate: Decides which keys this replica reconciles (sharding); None for all.
    """

    def __init__(
        self,
        name: str,
        reconciler: Reconciler,
        *,
        options: Options | None = None,
        kind: str = "",
        clock: Clock | None = None,
        gate: ReconcileGate | None = None,
    ) -> None:
        self.name = name
        self.gate = gate
        """Admits keys (sharded controllers); None admits every key."""
        self.reconciler = reconciler
        self.options = options or Options()
        self.kind = kind
        self.queue: WorkQueue[Request] = WorkQueue(
            name=name,
            clock=clock or RealClock(),
            rate_limiter=self.options.rate_limiter,
            metrics=metrics.WorkqueueMetrics(name),
            starvation_timeout=self.options.starvation_timeout,
        )
        self.graceful_shutdown_timeout = self.options.graceful_shutdown_timeout
        """Seconds in-flight reconciles get on stop (the manager caps it at its own)."""
        self._sources: list[Source] = []
        self._state = _State()
        self._metrics = metrics.ReconcileMetrics(name, self.options.max_concurrent_reconciles)

    @property
    def need_leader_election(self) -> bool:
        """Whether the manager runs this controller only while leading."""
        return self.options.need_leader_election

    def watch(self, source: Source) -> None:
        """Add a source; one added after start begins at once."""
        self._sources.append(source)
        if self._state.group is not None:
            # A fresh context: a source added from inside a reconcile must not log as it.
            self._state.group.create_task(
                source.start(self.queue), name=f"{self.name}-source", context=contextvars.Context()
            )

    @property
    def sources(self) -> tuple[Source, ...]:
        """The sources this controller watches, in the order added (a read-only view)."""
        return tuple(self._sources)

    async def wait_started(self) -> None:
        """Wait until the sources synced and the workers run."""
        await self._state.ready.wait()

    def force_stop(self) -> None:
        """Cancel in-flight reconciles now instead of waiting for them on stop.

        The manager calls it on a second SIGTERM/SIGINT and when the Lease is lost. It
        takes effect whether the graceful wait is already under way or not.
        """
        self._state.forced.set()

    async def start(self) -> None:
        """Run until cancelled (see the module documentation)."""
        if self._state.started:
            raise RuntimeError(f"controller {self.name} was already started")
        self._state.started = True
        _log.info("starting controller", controller=self.name, kind=self.kind)
        async with asyncio.TaskGroup() as group:
            self._state.group = group
            sources = [
                group.create_task(s.start(self.queue), name=f"{self.name}-source")
                for s in self._sources
            ]
            workers: list[asyncio.Task[None]] = []
            try:
                await self._wait_for_sync()
                workers.extend(
                    group.create_task(self._worker(), name=f"{self.name}-worker-{i}")
                    for i in range(self.options.max_concurrent_reconciles)
                )
                self._state.ready.set()
                _log.info(
                    "starting workers",
                    controller=self.name,
                    workers=self.options.max_concurrent_reconciles,
                )
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                await self._drain(group, sources, workers)
                raise

    async def _wait_for_sync(self) -> None:
        syncing = [s for s in self._sources if isinstance(s, SyncingSource)]
        try:
            async with asyncio.timeout(self.options.cache_sync_timeout):
                await asyncio.gather(*(s.wait_for_sync() for s in syncing))
        except TimeoutError:
            raise CacheSyncTimeoutError(
                f"controller {self.name}: timed out after {self.options.cache_sync_timeout:g}s "
                "waiting for caches to sync"
            ) from None

    async def _drain(
        self,
        group: asyncio.TaskGroup,
        sources: list[asyncio.Task[None]],
        workers: list[asyncio.Task[None]],
    ) -> None:
        """Stop intake, then give in-flight reconciles the graceful timeout to finish.

        `force_stop` ends the wait early: a second cancel of the task that owns the
        manager cannot, because a TaskGroup already shutting down ignores it.
        """
        for task in sources:
            task.cancel()
        self.queue.shut_down()
        if self.graceful_shutdown_timeout <= 0 or self._state.forced.is_set():
            return  # forced: the TaskGroup cancels the workers now
        # Sources stopping gracefully (daemons: pyctrl.daemon) share the workers' deadline.
        pending: set[asyncio.Task[Any]] = {t for t in (*workers, *sources) if not t.done()}
        await asyncio.sleep(0)  # let cancelled sources that have nothing to stop finish
        pending = {t for t in pending if not t.done()}
        if not pending:
            return
        _log.info("waiting for in-flight reconciles", controller=self.name)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.graceful_shutdown_timeout
        forced = group.create_task(self._state.forced.wait(), name=f"{self.name}-force")
        try:
            while pending and not forced.done() and loop.time() < deadline:
                _done, pending = await asyncio.wait(
                    {*pending, forced},
                    timeout=deadline - loop.time(),
                    return_when=asyncio.FIRST_COMPLETED,
                )
                pending.discard(forced)
        finally:
            forced.cancel()
        if pending:
            _log.warning(
                "shutdown forced; cancelling reconciles"
                if self._state.forced.is_set()
                else "graceful shutdown timed out; cancelling reconciles",
                controller=self.name,
                cancelled=len(pending),
            )

    async def _worker(self) -> None:
        while True:
            try:
                request = await self.queue.get()
            except ShutDownError:
                return
            try:
                if self.gate is None or self.gate.admits(request):
                    await self._reconcile(request)
                else:
                    self.queue.forget(request)  # another replica's key
            finally:
                self.queue.done(request)

    async def _reconcile(self, request: Request) -> None:
        reconcile_id = fast_uuid4()
        context = {
            "controller": self.name,
            "kind": self.kind,
            "namespace": request.namespace,
            "name": request.name,
            "reconcile_id": reconcile_id,
        }
        with bound_context(**context):
            self._metrics.worker_started()
            started = time.perf_counter()
            try:
                result = await self._call(request)
            except TerminalError as exc:
                self.queue.forget(request)
                self._metrics.result("error")
                self._metrics.error(terminal=True)
                _log.error("terminal reconcile error, not retrying", error=str(exc))
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                panic = not isinstance(exc, _EXPECTED_ERRORS)
                self.queue.add_rate_limited(request)
                self._metrics.result("error")
                self._metrics.error(panic=panic)
                _log.error(
                    "reconcile failed, retrying with backoff",
                    error=f"{type(exc).__name__}: {exc}",
                    requeues=self.queue.num_requeues(request),
                    exc_info=panic,
                )
                return
            finally:
                self._metrics.worker_finished(time.perf_counter() - started)
            self._handle_result(request, result)

    async def _call(self, request: Request) -> Result:
        timeout = self.options.reconcile_timeout
        async with asyncio.timeout(timeout):
            if self.gate is None:
                result: Any = await self.reconciler.reconcile(request)
            else:
                async with self.gate.fence(request):
                    result = await self.reconciler.reconcile(request)
        if result is None:
            return Result()
        if not isinstance(result, Result):
            raise TypeError(f"reconcile returned {type(result).__name__}, expected Result or None")
        return result

    def _handle_result(self, request: Request, result: Result) -> None:
        if result.requeue_after > 0:
            self.queue.forget(request)
            self.queue.add_after(request, result.requeue_after)
            self._metrics.result("requeue_after")
        elif result.requeue:
            self.queue.add_rate_limited(request)
            self._metrics.result("requeue")
        else:
            self.queue.forget(request)
            self._metrics.result("success")
