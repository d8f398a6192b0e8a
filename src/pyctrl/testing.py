"""Helpers for testing operators: run a manager for a block, wait on what the server holds.

An operator's tests run its manager against an API server (`pyctrl.envtest`'s embedded
one, or a real cluster) and then wait for the state they expect. The state lives in the
API server, out of reach of an asyncio event, so waiting means asking again until the
answer is right or a deadline passes: controller-runtime's tests use Gomega's
``Eventually`` and ``komega`` for that; pyctrl's are these.

- `running` runs a `Manager` for the length of an ``async with`` block: the block starts
  once the manager has started and its caches have synced, and a manager that fails
  while starting fails the block with its error. On exit the manager is stopped and
  awaited.
- `eventually` waits until a check (a plain or an async function) returns true.
- `object_eventually` waits until an object exists and satisfies a predicate, and returns
  it; `gone_eventually` waits until it no longer exists. Both read from a reader, or
  from a `pyctrl.cluster.Cluster`'s API server, or from a manager's cluster named by
  ``cluster=`` ("" the local one) for multi-cluster operators.
- `wait_ready` waits until an object is ready by `pyctrl.status.ready` (kstatus' rules),
  and fails with the reason it last was not.

Each waiter fails with an `AssertionError` naming what it waited for, so a test's failure
reads as the expectation that did not come true::

    async with running(manager):
        await manager.client.create(sample)
        ready = await object_eventually(
            manager.api_reader, MySrv, "sample", "default", lambda s: s.status.ready
        )
"""

from __future__ import annotations

import asyncio
import inspect
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from pyctrl.errors import ClusterNotFoundError, NotFoundError, leaf_errors

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from pyctrl.client import Reader
    from pyctrl.cluster import Cluster
    from pyctrl.manager import Manager

__all__ = ["eventually", "gone_eventually", "object_eventually", "running", "wait_ready"]

_T = TypeVar("_T")


def _reader(where: Reader | Cluster | Manager, cluster: str | None) -> Reader:
    """What the waiters read from: a reader, a cluster's API server, a manager's cluster."""
    get_cluster = getattr(where, "get_cluster", None)
    if get_cluster is not None:  # a Manager
        return get_cluster(cluster or "").api_reader  # type: ignore[no-any-return]
    if cluster is not None:
        raise TypeError("cluster= needs a Manager to find the cluster in")
    api_reader = getattr(where, "api_reader", None)
    if api_reader is not None and not hasattr(where, "get"):  # a Cluster
        return api_reader  # type: ignore[no-any-return]
    return where  # type: ignore[return-value]


#: How often the waiters ask again, in seconds.
POLL_INTERVAL = 0.05


@asynccontextmanager
async def running(manager: Manager, *, start_timeout: float = 20.0) -> AsyncIterator[Manager]:
    """Run ``manager`` for the block: started and synced on entry, stopped on exit.

    The manager runs in a task owned by the block. If it fails while starting, the block
    is not entered and its error propagates; if it fails later, the error propagates when
    the block ends. An error is raised as itself (a failed assertion of the block shows
    its message), not wrapped in an `ExceptionGroup`: when the block and the manager
    both failed, the block's error (a waiter's message) is raised, with the manager's
    named in its notes.

    Args:
        manager: The manager to run.
        start_timeout: Seconds to wait for the manager to start (and its caches to sync).

    Yields:
        The manager, started.
    """
    in_block: list[BaseException] = []
    try:
        async with asyncio.TaskGroup() as tg:
            task = tg.create_task(manager.start())
            waiter = tg.create_task(manager.wait_started())
            async with asyncio.timeout(start_timeout):
                await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
            if task.done():
                waiter.cancel()
                task.result()
            try:
                yield manager
            except BaseException as exc:
                in_block.append(exc)
                raise
            task.cancel()
    except BaseExceptionGroup as group:
        raise _first_error(group, in_block) from None


def _first_error(
    group: BaseExceptionGroup[BaseException], preferred: list[BaseException]
) -> BaseException:
    """The group's first error (one of ``preferred`` if any), the others in its notes.

    Cancellations are left out: they are how the group stopped the other tasks.
    """
    leaves = leaf_errors(group)
    if not leaves:
        return group
    leaves.sort(key=lambda exc: exc not in preferred)
    first, *rest = leaves
    for other in rest:
        first.add_note(f"also raised: {type(other).__name__}: {other}")
    return first


async def eventually(
    check: Callable[[], Awaitable[bool] | bool],
    *,
    within: float = 15.0,
    message: str | None = None,
) -> None:
    """Wait until ``check()`` returns true.

    Args:
        check: A function asked again every `POLL_INTERVAL` seconds: a plain one
            (``lambda: len(seen) == 2``) or an async one (awaited).
        within: Seconds before giving up.
        message: What was expected, for the failure message (the check's name otherwise).

    Raises:
        AssertionError: ``check`` was still false after ``within`` seconds.
    """
    try:
        async with asyncio.timeout(within):
            while not await _ask(check):  # noqa: ASYNC110 - no event to wait on across HTTP
                await asyncio.sleep(POLL_INTERVAL)
    except TimeoutError:
        what = message or f"{getattr(check, '__name__', repr(check))}()"
        raise AssertionError(f"{what} was still false after {within} s") from None


async def _ask(check: Callable[[], Awaitable[bool] | bool]) -> bool:
    result = check()
    if inspect.isawaitable(result):
        result = await result
    return bool(result)


async def object_eventually(
    reader: Reader | Cluster | Manager,
    type_: type[_T],
    name: str,
    namespace: str | None = None,
    predicate: Callable[[_T], bool] | None = None,
    *,
    within: float = 15.0,
    cluster: str | None = None,
) -> _T:
    """Wait until the object exists and satisfies ``predicate``; return it.

    Args:
        reader: Where to read it: ``manager.api_reader`` reads the server itself,
            ``manager.client`` the manager's cache.
        type_: The object's type (a `CustomResource`, a kubernetes-asyncio model, ...).
        name: Its name.
        namespace: Its namespace; None for a cluster-scoped object.
        predicate: What must hold; None waits only for the object to exist.
        within: Seconds before giving up.
        cluster: With a Manager as ``reader``: the engaged cluster to read ("" or None
            the local one), from its API server; one not engaged yet counts as the
            object not found yet.

    Returns:
        The object as last read, satisfying ``predicate``.

    Raises:
        AssertionError: it did not exist, or did not satisfy ``predicate``, in time; the
            message says which and shows the last state seen.
    """
    last: list[Any] = []

    async def holds() -> bool:
        try:
            obj = await _reader(reader, cluster).get(type_, name, namespace)
        except (NotFoundError, ClusterNotFoundError):  # a cluster not engaged yet, too
            last[:] = []
            return False
        last[:] = [obj]
        return predicate is None or predicate(obj)

    where = f"{namespace}/{name}" if namespace else name
    try:
        await eventually(holds, within=within)
    except AssertionError:
        kind = type_.__name__
        if not last:
            raise AssertionError(f"{kind} {where} was never found within {within} s") from None
        condition = getattr(predicate, "__name__", "the predicate")
        raise AssertionError(
            f"{kind} {where} did not satisfy {condition} within {within} s; last seen: {last[0]!r}"
        ) from None
    return last[0]  # type: ignore[no-any-return]


async def gone_eventually(
    reader: Reader | Cluster | Manager,
    type_: type[Any],
    name: str,
    namespace: str | None = None,
    *,
    within: float = 15.0,
    cluster: str | None = None,
) -> None:
    """Wait until the object no longer exists (its finalizers done, its deletion complete).

    ``reader`` and ``cluster`` are as for `object_eventually`.

    Raises:
        AssertionError: it still existed after ``within`` seconds.
    """
    _reader(reader, cluster)  # a wrong argument fails now, not as a timeout

    async def gone() -> bool:
        try:
            await _reader(reader, cluster).get(type_, name, namespace)
        except NotFoundError:
            return True
        return False

    where = f"{namespace}/{name}" if namespace else name
    await eventually(gone, within=within, message=f"{type_.__name__} {where} being gone")


async def wait_ready(
    reader: Reader,
    type_: type[_T],
    name: str,
    namespace: str | None = None,
    *,
    within: float = 15.0,
) -> _T:
    """Wait until the object exists and `pyctrl.status.ready` says it is ready; return it.

    Raises:
        AssertionError: it was not ready in time; the message gives the last reason.
    """
    from pyctrl.status import ready

    why: list[str] = []

    def is_ready(obj: Any) -> bool:
        readiness = ready(obj)
        why[:] = [f"{readiness.status}: {readiness.reason}: {readiness.message}"]
        return bool(readiness)

    try:
        return await object_eventually(reader, type_, name, namespace, is_ready, within=within)
    except AssertionError:
        where = f"{namespace}/{name}" if namespace else name
        last = why[0] if why else "never found"
        raise AssertionError(
            f"{type_.__name__} {where} was not ready within {within} s ({last})"
        ) from None
