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
  namespace and name (and ``cluster``, for a request of an engaged cluster: see
  `pyctrl.cluster`) bound into the structlog context, so the reconciler's own log
  lines carry them;
- an optional ``reconcile_timeout`` bounds each reconcile; when it fires, the reconcile
  is retried as failed and counted in ``controller_runtime_reconcile_timeouts_total``;
- ``on_error`` is called with the request and the exception after a failed reconcile,
  before the requeue, and may choose it (kube-rs's ``error_policy``);
- the queue records why each key was queued (``record_triggers``, on by default): the
  reconciler reads the triggers that collapsed into its reconcile with `triggers`, its
  log lines carry their summary as ``triggers`` (`pyctrl.log.merge_triggers`), and
  ``controller_runtime_reconcile_triggers_total`` counts reconciles by the kind of the
  first one; requeues are triggers too (``requeue``, ``requeue_after``, ``retry``);
- ``new_queue`` replaces the workqueue (controller-runtime's ``Options.NewQueue``);
- ``max_retries`` bounds the rate-limited retries of a key: past it the key is dropped
  (``pyctrl_reconcile_retries_exhausted_total``, a ``RetriesExhausted`` event, ``on_error``
  told with `pyctrl.errors.RetriesExhaustedError`) until its next event;
- a plain ``def reconcile`` runs in a thread of the controller's pool
  (``max_concurrent_reconciles`` threads; `pyctrl.blocking`), with the context copied.

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
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from prometheus_client import Counter

from pyctrl import _executor, metrics, tracing
from pyctrl._fence import fenced_by
from pyctrl._ids import fast_uuid4
from pyctrl.clock import Clock, RealClock
from pyctrl.errors import (
    CacheSyncTimeoutError,
    PyctrlError,
    RetriesExhaustedError,
    TerminalError,
)
from pyctrl.log import bound_context, get_logger, reconcile_triggers
from pyctrl.reconcile import Reconciler, Request, Result, SyncReconciler
from pyctrl.source import Source, SyncingSource
from pyctrl.workqueue import RateLimiter, ShutDownError, Trigger, TriggerKind, Triggers, WorkQueue
from pyctrl.workqueue._queue import check_delay
from pyctrl.workqueue._triggers import EMPTY

__all__ = [
    "Controller",
    "ErrorHandler",
    "NewQueue",
    "Notify",
    "Options",
    "ReconcileGate",
    "triggers",
]

ErrorHandler = Callable[[Request, Exception], Awaitable[Result | None]]
"""``async def on_error(request, exc) -> Result | None``: see `Options.on_error`."""

NewQueue = Callable[[str, RateLimiter[Request] | None], WorkQueue[Request]]
"""``new_queue(controller_name, rate_limiter) -> WorkQueue``: see `Options.new_queue`."""

Notify = Callable[[Request, str, str], Awaitable[None]]
"""``async def notify(request, reason, message)``: records a Warning event on the object."""

retries_exhausted_total = Counter(
    "pyctrl_reconcile_retries_exhausted_total",
    "Keys dropped after their retry budget (Options.max_retries) was spent.",
    ["controller"],
    registry=metrics.registry,
)

_REQUEUE = Trigger(TriggerKind.REQUEUE)
_REQUEUE_AFTER = Trigger(TriggerKind.REQUEUE_AFTER)
_RETRY = Trigger(TriggerKind.RETRY)


def triggers() -> Triggers:
    """The triggers that collapsed into the reconcile running in this task.

    The reconciler calls it (like controller-runtime's ``ReconcileIDFromContext``, the
    request context being the task's context) to learn why it runs::

        async def reconcile(self, request):
            log.info("reconciling", triggers=str(triggers()))
            if triggers().by_kind.keys() == {"resync"}:
                ...

    Empty when the controller does not record triggers (``record_triggers=False``).

    Raises:
        RuntimeError: Called outside a reconcile.
    """
    found: Triggers | None = reconcile_triggers.get()
    if found is None:
        raise RuntimeError("triggers() is only available inside a reconcile")
    return found


if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager
    from datetime import timedelta

    from pyctrl._fence import LeaseFence
    from pyctrl.handler import RateLimitingQueue

_log = get_logger("pyctrl.controller")
_EXPECTED_ERRORS = (PyctrlError, OSError, TimeoutError)


def _nothing() -> None:
    pass


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
        record_triggers: Keep why each key was queued (see `triggers`).
        on_error: Called with the request and the exception after a failed reconcile
            (TerminalError included), before the requeue; typically writes a status
            condition. It returns None for the default rate-limited retry,
            ``Result(requeue_after=d)`` to retry after ``d`` seconds, ``Result()`` not
            to retry. A terminal error is never retried, and a hook that raises is
            logged and the default applies.
        max_retries: The retry budget: once a key was requeued through the rate limiter
            (a failed reconcile, ``Result(requeue=True)``) this many times in a row, it is
            dropped instead: logged, counted in
            ``pyctrl_reconcile_retries_exhausted_total``, a ``RetriesExhausted`` Warning
            event recorded on the object (controllers built by the builder), and
            ``on_error`` called with a `pyctrl.errors.RetriesExhaustedError`. A success or
            a drop resets it, so the next event of the object starts a fresh budget.
            ``Result(max_retries=n)`` overrides it per requeue. None (the default)
            retries forever, as controller-runtime does.
        debounce: Seconds to hold a key after a source's event before it is reconciled, so
            a burst of events for one key (a rollout's dozen status updates) makes one
            reconcile (kube-rs' ``debounce``). The first event of a quiet key starts the
            wait; later ones within it collapse into it; so does a requeue due sooner. Each
            debounced add counts in ``workqueue_retries_total`` (it is a delayed add).
            0 (the default) queues at once.
        new_queue: Builds the workqueue from the controller's name and ``rate_limiter``
            (controller-runtime's ``NewQueue``); default a `pyctrl.workqueue.WorkQueue`.
            The queue it returns decides about provenance (``record_triggers=True``
            keeps it), clock and metrics; ``record_triggers`` and
            ``starvation_timeout`` above apply only to the default queue.
        fairness_key: Makes the workqueue fair (see `pyctrl.workqueue.WorkQueue`): a
            function of the request naming its group, e.g.
            `pyctrl.workqueue.by_namespace`, so one namespace's flood cannot starve
            another's key. ``None`` (the default): first come, first served, except in
            a multi-cluster controller, whose queue is fair across clusters
            (`pyctrl.workqueue.by_cluster`) unless this says otherwise.
    """

    max_concurrent_reconciles: int = 1
    reconcile_timeout: float | None = None
    rate_limiter: RateLimiter[Request] | None = None
    cache_sync_timeout: float = 120.0
    graceful_shutdown_timeout: float = 30.0
    need_leader_election: bool = True
    starvation_timeout: float | None = 300.0
    record_triggers: bool = True
    on_error: ErrorHandler | None = None
    new_queue: NewQueue | None = None
    fairness_key: Callable[[Request], Hashable] | None = None
    max_retries: int | None = None
    debounce: float = 0.0

    def __post_init__(self) -> None:
        if self.max_concurrent_reconciles < 1:
            raise ValueError(
                "max_concurrent_reconciles must be at least 1, "
                f"got {self.max_concurrent_reconciles}"
            )
        if not self.debounce >= 0:
            raise ValueError(f"debounce must be a number of seconds >= 0, got {self.debounce!r}")
        if self.max_retries is not None and self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0 or None, got {self.max_retries}")


class ReconcileGate(Protocol):
    """Decides which keys this process may reconcile now (sharding: `pyctrl.shardelection`).

    The controller asks `admits` before each reconcile; a key not admitted is forgotten
    (another replica reconciles it). The reconcile runs inside `fence`, which may cancel it
    (raising) when the right to reconcile the key ends meanwhile. A gate that queues keys
    itself is also a `pyctrl.source.Source` (a `pyctrl.shardelection.ShardGate` queues the
    keys of slots that arrive): the controller starts it with its sources.
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
        reconciler: What to call for each request; a plain ``def reconcile`` runs in a
            thread of the controller's `pool` (`pyctrl.blocking`).
        options: See `Options`.
        kind: The kind reconciled, for the log context.
        clock: Time source for the queue (tests pass a FakeClock).
        gate: Decides which keys this replica reconciles (sharding); None for all.
        fence: The manager's `pyctrl.leaderelection.LeaseFence` (``manager.fence``) for a
            controller that runs while the manager leads: once its term ends, no
            reconcile starts and in-flight ones are cancelled. A manager with leader
            election refuses a leader-only controller without it.
        notify: Records an event on a request's object (``notify(request, reason,
            message)``), to report a key dropped after its retry budget; the builder
            gives one that records on the ``for_`` object.
    """

    def __init__(
        self,
        name: str,
        reconciler: Reconciler | SyncReconciler,
        *,
        options: Options | None = None,
        kind: str = "",
        clock: Clock | None = None,
        gate: ReconcileGate | None = None,
        fence: LeaseFence | None = None,
        notify: Notify | None = None,
    ) -> None:
        self.name = name
        self.gate = gate
        """Admits keys (sharded controllers); None admits every key."""
        self.fence = fence
        """Under leader election, the manager's fence (see the ``fence`` argument)."""
        self.notify = notify
        """Records an event on a request's object (see the ``notify`` argument)."""
        self.options = options or Options()
        self.pool = _executor.Pool(name, self.options.max_concurrent_reconciles)
        """Runs a plain ``def reconcile`` (`pyctrl.blocking`): one thread per worker."""
        if not callable(getattr(reconciler, "reconcile", None)):
            raise TypeError(f"{type(reconciler).__name__} has no reconcile(request) method")
        if not _executor.is_async(reconciler.reconcile):
            reconciler = cast("Reconciler", _executor.Offloaded(reconciler))
        self.reconciler = cast("Reconciler", reconciler)
        self.kind = kind
        if self.options.new_queue is not None:
            self.queue: WorkQueue[Request] = self.options.new_queue(name, self.options.rate_limiter)
        else:
            self.queue = WorkQueue(
                name=name,
                clock=clock or RealClock(),
                rate_limiter=self.options.rate_limiter,
                metrics=metrics.WorkqueueMetrics(name),
                starvation_timeout=self.options.starvation_timeout,
                record_triggers=self.options.record_triggers,
                fairness_key=self.options.fairness_key,
            )
        self.intake: RateLimitingQueue = (
            _Debounced(self.queue, self.options.debounce) if self.options.debounce else self.queue
        )
        """What the sources add to: the queue, or its debouncing front (`Options.debounce`)."""
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
                source.start(self.intake), name=f"{self.name}-source", context=contextvars.Context()
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
                group.create_task(s.start(self.intake), name=f"{self.name}-source")
                for s in self._sources
            ]
            gate: object = self.gate
            if isinstance(gate, Source):  # a gate that queues keys itself (ShardGate)
                sources.append(group.create_task(gate.start(self.intake), name=f"{self.name}-gate"))
            workers: list[asyncio.Task[None]] = []
            unfence: Callable[[], None] = _nothing
            try:
                await self._wait_for_sync()
                workers.extend(
                    group.create_task(self._worker(), name=f"{self.name}-worker-{i}")
                    for i in range(self.options.max_concurrent_reconciles)
                )
                if self.fence is not None:
                    unfence = self.fence.on_lost(lambda: self._fenced(workers))
                self._state.ready.set()
                _log.info(
                    "starting workers",
                    controller=self.name,
                    workers=self.options.max_concurrent_reconciles,
                )
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                await self._drain(group, sources, workers)
                unfence()  # the Lease released after a normal stop is no loss
                raise
            finally:
                self.pool.shutdown()

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

    def _fenced(self, workers: list[asyncio.Task[None]]) -> None:
        """The Lease's hold ended: cancel in-flight reconciles before they take a step."""
        _log.warning("leader lease lost: cancelling reconciles", controller=self.name)
        self.force_stop()
        for task in workers:
            task.cancel()

    async def _worker(self) -> None:
        while True:
            try:
                request = await self.queue.get()
            except ShutDownError:
                return
            if self.fence is not None and self.fence.lost:
                self.queue.add(request)  # not reconciled: keep it for whoever runs next
                self.queue.done(request)
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
        found = self.queue.triggers(request) if self.queue.records_triggers else EMPTY
        context = {
            "controller": self.name,
            "kind": self.kind,
            "namespace": request.namespace,
            "name": request.name,
            "reconcile_id": reconcile_id,
        }
        if request.cluster:
            context["cluster"] = request.cluster
            metrics.cluster_reconcile_total.labels(self.name, request.cluster).inc()
        if found:
            self._metrics.triggered(found.kind)
        # Not bound into the context: pyctrl.log.merge_triggers adds it to lines written.
        token = reconcile_triggers.set(found)
        try:
            with (
                self.pool.bound(),
                fenced_by(self.fence),
                bound_context(**context),
                tracing.reconcile_span(
                    self.name,
                    kind=self.kind,
                    namespace=request.namespace,
                    name=request.name,
                    reconcile_id=reconcile_id,
                    links=(trigger.span_context for trigger in found),
                    cluster=request.cluster,
                ),
            ):
                await self._run(request)
        finally:
            reconcile_triggers.reset(token)

    async def _run(self, request: Request) -> None:
        self._metrics.worker_started()
        started = time.perf_counter()
        try:
            result = await self._call(request)
        except asyncio.CancelledError:
            self._metrics.worker_finished(time.perf_counter() - started)
            raise
        except Exception as exc:
            self._metrics.worker_finished(time.perf_counter() - started)
            await self._failed(request, exc)
            return
        self._metrics.worker_finished(time.perf_counter() - started)
        if result.requeue and not result.requeue_after > 0 and self._exhausted(request, result):
            await self._give_up(request, None)
            return
        self._handle_result(request, result)

    def _exhausted(self, request: Request, chosen: Result | None) -> bool:
        """Whether the next rate-limited requeue of ``request`` is past its budget."""
        limit = self.options.max_retries
        if chosen is not None and chosen.max_retries is not None:
            limit = chosen.max_retries
        return limit is not None and self.queue.num_requeues(request) >= limit

    async def _give_up(self, request: Request, exc: Exception | None) -> None:
        """Drop a key past its retry budget: log, count, record an event, tell on_error."""
        retries = self.queue.num_requeues(request)
        self.queue.forget(request)
        retries_exhausted_total.labels(self.name).inc()
        last = _describe(exc) if exc is not None else "it kept asking to requeue"
        message = f"gave up after {retries} retries: {last}"
        _log.error("retry budget exhausted; dropping the key", retries=retries, error=last)
        error = RetriesExhaustedError(f"{request}: {message}", retries)
        error.__cause__ = exc
        if self.notify is not None:
            try:
                await self.notify(request, "RetriesExhausted", message)
            except Exception:
                _log.exception("could not record the RetriesExhausted event")
        if self.options.on_error is not None:
            await self._on_error(request, error)

    async def _failed(self, request: Request, exc: Exception) -> None:
        """Count and log a failed reconcile, let ``on_error`` choose, then requeue."""
        terminal = isinstance(exc, TerminalError)
        panic = not terminal and not isinstance(exc, _EXPECTED_ERRORS)
        self._metrics.result("error")
        self._metrics.error(terminal=terminal, panic=panic)
        tracing.record_error(exc)
        chosen = await self._on_error(request, exc)
        if terminal:
            self.queue.forget(request)
            _log.error("terminal reconcile error, not retrying", error=str(exc))
        elif chosen is not None and not chosen.requeue_after and not chosen.requeue:
            self.queue.forget(request)
            _log.error("reconcile failed; on_error chose not to retry", error=_describe(exc))
        elif chosen is not None and chosen.requeue_after:
            self.queue.add_after(
                request, chosen.requeue_after, priority=chosen.priority, trigger=_RETRY
            )
            _log.error(
                "reconcile failed, retrying after the delay on_error chose",
                error=_describe(exc),
                seconds=chosen.requeue_after,
            )
        elif self._exhausted(request, chosen):
            await self._give_up(request, exc)
        else:
            priority = chosen.priority if chosen is not None else 0
            self.queue.add_rate_limited(request, priority=priority, trigger=_RETRY)
            _log.error(
                "reconcile failed, retrying with backoff",
                error=_describe(exc),
                requeues=self.queue.num_requeues(request),
                exc_info=panic,
            )

    async def _on_error(self, request: Request, exc: Exception) -> Result | None:
        hook = self.options.on_error
        if hook is None:
            return None
        try:
            chosen: Any = await hook(request, exc)
        except Exception:
            _log.exception("on_error hook raised; retrying with backoff")
            return None
        if chosen is not None and not isinstance(chosen, Result):
            _log.error(
                "on_error hook returned neither a Result nor None; retrying with backoff",
                returned=type(chosen).__name__,
            )
            return None
        return chosen

    async def _call(self, request: Request) -> Result:
        timeout = self.options.reconcile_timeout
        scope = asyncio.timeout(timeout)
        try:
            async with scope:
                if self.gate is None:
                    result: Any = await self.reconciler.reconcile(request)
                else:
                    async with self.gate.fence(request):
                        result = await self.reconciler.reconcile(request)
        except TimeoutError:
            if scope.expired():
                self._metrics.timed_out()
                _log.warning("reconcile timed out", timeout=timeout)
            raise
        if result is None:
            return Result()
        if not isinstance(result, Result):
            raise TypeError(f"reconcile returned {type(result).__name__}, expected Result or None")
        return result

    def _handle_result(self, request: Request, result: Result) -> None:
        if result.requeue_after > 0:
            self.queue.forget(request)
            self.queue.add_after(
                request, result.requeue_after, priority=result.priority, trigger=_REQUEUE_AFTER
            )
            self._metrics.result("requeue_after")
        elif result.requeue:
            self.queue.add_rate_limited(request, priority=result.priority, trigger=_REQUEUE)
            self._metrics.result("requeue")
        else:
            self.queue.forget(request)
            self._metrics.result("success")


class _Debounced:
    """The sources' side of a debounced queue: every add waits ``seconds`` first."""

    __slots__ = ("_queue", "_seconds")

    def __init__(self, queue: WorkQueue[Request], seconds: float) -> None:
        self._queue, self._seconds = queue, seconds

    @property
    def records_triggers(self) -> bool:
        """Whether the queue keeps triggers (sources then hand theirs over)."""
        return self._queue.records_triggers

    def add(self, item: Request, *, priority: int = 0, trigger: Trigger | None = None) -> None:
        """Queue ``item`` once the debounce time has passed (earlier if already due)."""
        self._queue.add_after(item, self._seconds, priority=priority, trigger=trigger)

    def add_after(
        self,
        item: Request,
        delay: float | timedelta,
        *,
        priority: int = 0,
        trigger: Trigger | None = None,
    ) -> None:
        """Queue ``item`` after ``delay``, and no sooner than the debounce time."""
        seconds = max(check_delay(delay), self._seconds)
        self._queue.add_after(item, seconds, priority=priority, trigger=trigger)

    def add_rate_limited(
        self, item: Request, *, priority: int = 0, trigger: Trigger | None = None
    ) -> None:
        """Queue ``item`` after the rate limiter's delay (a retry is not debounced)."""
        self._queue.add_rate_limited(item, priority=priority, trigger=trigger)


def _describe(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"
