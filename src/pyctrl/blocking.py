"""Blocking code in an asyncio operator: plain ``def`` reconcilers and their client.

A reconciler, a finalizer, a daemon, a webhook's defaulter or validator and a map
function may each be a plain ``def``: pyctrl runs it in a thread (a controller's bounded
pool of ``max_concurrent_reconciles`` threads), never on the event loop, so a call to
boto3, requests, psycopg or subprocess stalls nothing but itself. The thread has the
caller's context variables: log bindings, `pyctrl.controller.triggers`, the tracing span.

Blocking code talks to the cluster through `SyncClient`, which hands every call to the
operator's async `pyctrl.client.Client` on the event loop and waits for the answer::

    class Reconciler:
        def __init__(self, client: Client) -> None:
            self.client = SyncClient(client)

        def reconcile(self, request: Request) -> Result | None:
            bucket = self.client.get(Bucket, request.name, request.namespace)
            boto3.client("s3").create_bucket(Bucket=bucket.spec.name)  # blocks its thread only
            bucket.status.ready = True
            self.client.status().update(bucket)
            return None

Before handing a write to the loop, `SyncClient` checks, in the thread, the fences bound
to the work (the manager's leader Lease, a sharded key's slot): a write of a term that has
ended raises `pyctrl.errors.LeaseLostError` there, and the client checks again on the
loop. Once the task that waited for the thread gave up (a reconcile timeout, a lost Lease,
shutdown) every further call raises `concurrent.futures.CancelledError`: the thread
cannot be stopped, but it can no longer act.

`run` runs any other coroutine on the loop from such a thread (`run(cache.get(...))`).
Both work only in threads pyctrl started for blocking code; called on the event loop
they raise `RuntimeError` (they would deadlock it).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import TYPE_CHECKING, Any, TypeVar

from pyctrl import _executor
from pyctrl._fence import check_work_fences

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from pyctrl.client import Client, ObjectList, SubResourceClient

__all__ = ["SyncClient", "SyncSubResourceClient", "run"]

T = TypeVar("T")
_POLL = 0.5  # seconds between looks at whether the caller gave up


def _loop_for(what: str) -> asyncio.AbstractEventLoop:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError(
            f"{what} was called on the event loop, where it would deadlock: "
            "await the async client there instead"
        )
    loop = _executor.loop()
    if loop is None:
        raise RuntimeError(
            f"{what} works only in the threads pyctrl runs blocking code in "
            "(a plain def reconciler, finalizer, daemon, webhook or map function)"
        )
    return loop


def _check_live() -> None:
    if _executor.cancelled():
        raise concurrent.futures.CancelledError(
            "the work this thread runs for was cancelled (timeout, lost Lease or shutdown)"
        )


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the operator's event loop from a blocking thread; return its result.

    The coroutine runs in a copy of the thread's context (its log bindings and fences).

    Raises:
        RuntimeError: Not called from a thread pyctrl runs blocking code in.
        concurrent.futures.CancelledError: The work this thread runs for was cancelled.
    """
    try:
        loop = _loop_for("pyctrl.blocking.run()")
        _check_live()
    except BaseException:
        coro.close()
        raise
    # call_soon_threadsafe copies this thread's context, and the task inherits it.
    future = asyncio.run_coroutine_threadsafe(coro, loop)
    while True:
        try:
            return future.result(timeout=_POLL)
        except TimeoutError:
            if _executor.cancelled() or loop.is_closed():
                future.cancel()
                _check_live()
                raise RuntimeError("the event loop closed while waiting for it") from None


def _write(fn: Callable[..., Coroutine[Any, Any, T]], *args: Any, **kwargs: Any) -> T:
    """Check the work's fences in this thread, then run the write on the loop."""
    _check_live()
    check_work_fences()
    return run(fn(*args, **kwargs))


class _Writes:
    """The writes a client and its subresource clients share, blocking and fenced."""

    def __init__(self, target: Any) -> None:
        self._target = target

    def update(self, obj: T, **kwargs: Any) -> T:
        """Replace ``obj`` (or its subresource: ``status().update(obj)``)."""
        result: T = _write(self._target.update, obj, **kwargs)
        return result

    def patch(self, obj: T, patch: Any, **kwargs: Any) -> T:
        """Patch ``obj`` (or its subresource)."""
        result: T = _write(self._target.patch, obj, patch, **kwargs)
        return result

    def apply(self, obj: T, **kwargs: Any) -> T:
        """Server-side apply ``obj`` (or to its subresource)."""
        result: T = _write(self._target.apply, obj, **kwargs)
        return result


class SyncSubResourceClient(_Writes):
    """The blocking form of `pyctrl.client.SubResourceClient` (``status()``, ``scale``...)."""

    def __init__(self, target: SubResourceClient) -> None:
        super().__init__(target)

    def get(self, obj: Any, **kwargs: Any) -> Any:
        """Read the subresource of ``obj``."""
        return run(self._target.get(obj, **kwargs))

    def create(self, obj: Any, body: Any, **kwargs: Any) -> Any:
        """Create the subresource (an eviction, a token request)."""
        return _write(self._target.create, obj, body, **kwargs)


class SyncClient(_Writes):
    """A blocking facade over a `pyctrl.client.Client`, for plain ``def`` handlers.

    Each method takes the async client's arguments and blocks its thread until the call,
    run on the event loop, returns (`update`, `patch` and `apply` as well as those
    below); see the module documentation for fencing and cancellation. Build it anywhere
    (usually in the reconciler's ``__init__``); call it only from the threads pyctrl runs
    blocking code in.
    """

    def __init__(self, client: Client) -> None:
        super().__init__(client)
        self.client = client
        """The async client the calls go to."""

    def get(self, type_: type[T], name: str, namespace: str | None = None, **kwargs: Any) -> T:
        """`pyctrl.client.Client.get`, blocking."""
        return run(self.client.get(type_, name, namespace, **kwargs))

    def list(self, type_: type[T], **kwargs: Any) -> ObjectList[T]:
        """`pyctrl.client.Client.list`, blocking."""
        return run(self.client.list(type_, **kwargs))

    def create(self, obj: T, **kwargs: Any) -> T:
        """`pyctrl.client.Client.create`, blocking and fenced."""
        result: T = _write(self.client.create, obj, **kwargs)
        return result

    def delete(self, obj: Any, **kwargs: Any) -> None:
        """`pyctrl.client.Client.delete`, blocking and fenced."""
        _write(self.client.delete, obj, **kwargs)

    def delete_all_of(self, type_: type[Any], **kwargs: Any) -> None:
        """`pyctrl.client.Client.delete_all_of`, blocking and fenced."""
        _write(self.client.delete_all_of, type_, **kwargs)

    def status(self) -> SyncSubResourceClient:
        """The ``status`` subresource, blocking."""
        return SyncSubResourceClient(self.client.status())

    def subresource(self, name: str) -> SyncSubResourceClient:
        """The subresource ``name``, blocking."""
        return SyncSubResourceClient(self.client.subresource(name))
