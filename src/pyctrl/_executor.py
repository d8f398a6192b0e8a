"""Blocking user code runs in threads, never on the event loop.

Python operators call boto3, requests, psycopg and subprocess. One such call made on the
event loop stops everything the loop runs: Lease renewals, probes, webhooks, every other
controller. So wherever pyctrl calls user code (a reconciler, a finalizer, a daemon, a
webhook's defaulter or validator, a map function) it accepts a plain ``def`` as well as an
``async def``, and runs the plain one in a thread (as kopf runs sync handlers):

- `invoke` calls a function: a coroutine function is awaited on the loop, anything else
  is run by `offload`;
- `offload` runs a function in the executor bound to the running work (`Pool.bound`: a
  controller binds its own, sized by ``max_concurrent_reconciles``) or, outside any
  controller, in a shared pool (so do calls made by coroutines that blocking code sent
  back to the loop: their own thread is waiting, and must not wait for itself); the
  thread gets a copy of the caller's context variables (log bindings,
  `pyctrl.controller.triggers`, the tracing span, the fences bound to the work), and
  knows the loop to hand coroutines back to (`loop`, used by `pyctrl.blocking`);
- when the awaiting task is cancelled (a reconcile timeout, a lost Lease) the thread
  cannot be stopped, but it is told: `cancelled` turns true in it, and `pyctrl.blocking`
  refuses any further call it makes.

A function that returns an awaitable from its thread (a lambda around a coroutine
function) has the awaitable awaited on the loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import functools
import inspect
import os
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = [
    "Offloaded",
    "Pool",
    "cancelled",
    "invoke",
    "is_async",
    "loop",
    "offload",
]


class _Call:
    """One offloaded call, as its thread sees it."""

    __slots__ = ("cancelled", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.cancelled = threading.Event()


_pool: contextvars.ContextVar[Pool | None] = contextvars.ContextVar("pyctrl_pool", default=None)
_call: contextvars.ContextVar[_Call | None] = contextvars.ContextVar("pyctrl_call", default=None)


class Pool:
    """A bounded thread pool, started on first use (an async-only controller starts none).

    Args:
        name: Names the threads (``pyctrl-<name>_0``...).
        max_workers: At most this many calls run at once; more wait for a thread.
    """

    def __init__(self, name: str, max_workers: int) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}")
        self.name, self.max_workers = name, max_workers
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def executor(self) -> concurrent.futures.ThreadPoolExecutor:
        """The pool's executor, started now if it was not."""
        with self._lock:
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    self.max_workers, thread_name_prefix=f"pyctrl-{self.name}"
                )
            return self._executor

    @contextlib.contextmanager
    def bound(self) -> Iterator[None]:
        """Make `offload` in this context use this pool."""
        token = _pool.set(self)
        try:
            yield
        finally:
            _pool.reset(token)

    def shutdown(self) -> None:
        """Stop taking calls and let the threads end once their call returns (no wait).

        Calls still queued are cancelled; a thread blocked in user code cannot be stopped,
        and ends when that code returns.
        """
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    def __repr__(self) -> str:
        return f"Pool({self.name!r}, max_workers={self.max_workers})"


_shared = Pool("shared", min(32, (os.cpu_count() or 1) + 4))


def is_async(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` is a coroutine function (or an object whose ``__call__`` is one)."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004  # the method, not callable()
    )


async def offload(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Run ``fn(*args, **kwargs)`` in a thread of the bound pool; return what it returns.

    The thread runs in a copy of the caller's context. If the call returns an awaitable,
    that is awaited here, on the loop.
    """
    running = asyncio.get_running_loop()
    # Sent to the loop by a thread of the bound pool, which waits for it: offloading into
    # that pool again could wait for its own thread, so nested calls use the shared one.
    pool = _shared if _call.get() is not None else (_pool.get() or _shared)
    context = contextvars.copy_context()
    call = _Call(running)
    context.run(_call.set, call)
    future = running.run_in_executor(
        pool.executor(), functools.partial(context.run, fn, *args, **kwargs)
    )
    try:
        result = await future
    except asyncio.CancelledError:
        call.cancelled.set()
        raise
    if inspect.isawaitable(result):
        result = await result
    return result


async def invoke(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Await ``fn(*args, **kwargs)`` if ``fn`` is a coroutine function, else `offload` it."""
    if is_async(fn):
        return await fn(*args, **kwargs)
    return await offload(fn, *args, **kwargs)


def loop() -> asyncio.AbstractEventLoop | None:
    """In a thread `offload` runs: the event loop that offloaded the call; else None."""
    call = _call.get()
    return None if call is None else call.loop


def cancelled() -> bool:
    """In a thread `offload` runs: whether the task awaiting the call was cancelled."""
    call = _call.get()
    return call is not None and call.cancelled.is_set()


class Offloaded:
    """A reconciler of blocking code made async: its plain ``def`` methods run offloaded.

    Wraps a ``def reconcile(request)`` or a ``def reconcile_object(obj)``; the one the
    wrapped object has is the one to call.
    """

    __slots__ = ("reconciler",)

    def __init__(self, reconciler: Any) -> None:
        self.reconciler = reconciler

    async def reconcile(self, request: Any) -> Any:
        """Run the wrapped ``reconcile`` in a thread of the bound pool."""
        return await offload(self.reconciler.reconcile, request)

    async def reconcile_object(self, obj: Any) -> Any:
        """Run the wrapped ``reconcile_object`` in a thread of the bound pool."""
        return await offload(self.reconciler.reconcile_object, obj)

    def __repr__(self) -> str:
        return f"Offloaded({self.reconciler!r})"
