"""Debug endpoints: what a running operator is doing, Go's pprof the Python way.

Off unless the Manager gets ``debug_bind_address`` (controller-runtime's
``PprofBindAddress``); it is then served by a `pyctrl.metricsserver.Server` with the
metrics server's options (HTTPS and the authn/authz filter when those are on: scrapers
then need ``get`` on ``/debug/*``). Every endpoint answers GET and is read-only:

- ``/debug``: this list (text);
- ``/debug/tasks``: every asyncio task: its name, state, the chain of coroutines it is
  suspended in and what it awaits (text; ``?format=json`` adds each task's stack);
- ``/debug/threads``: every thread's stack (text);
- ``/debug/tracemalloc``: the top ``?limit=`` (25) allocation sites when
  ``tracemalloc`` is tracing (``PYTHONTRACEMALLOC=1``), else 404 (text);
- ``/debug/workqueues``: each controller's queue: depth, delayed, processing, retries
  (JSON);
- ``/debug/informers``: each informer's state (listing, watching, backoff), object count
  and last error (JSON).

Task names say who owns a task: the Manager names each runnable's task after it
(``metrics-server``, ``cache``, a controller's name), controllers name their workers
``<controller>-worker-<n>``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import threading
import traceback
import tracemalloc
from typing import TYPE_CHECKING, Any, Protocol

import orjson
from aiohttp import web

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from pyctrl.filters import Handler

__all__ = ["DebugSource", "handlers", "task_report", "thread_report", "tracemalloc_report"]

_INDEX = """pyctrl debug endpoints:
/debug/tasks         asyncio tasks with their stacks (?format=json)
/debug/threads       thread stacks
/debug/tracemalloc   top allocation sites (?limit=N) when tracemalloc is tracing
/debug/workqueues    controllers' work queues
/debug/informers     informers' states
"""
_MAX_LIMIT = 1000


class DebugSource(Protocol):
    """What the debug endpoints read from the Manager."""

    def queues(self) -> dict[str, Any]:
        """Each controller's queue statistics, by controller name."""
        ...

    def informers(self) -> list[Any]:
        """Each informer's status (a dataclass)."""
        ...


def _awaiting(coro: Any) -> list[str]:
    """The chain of coroutines a task's coroutine is suspended in, innermost last."""
    chain: list[str] = []
    seen = 0
    while coro is not None and seen < 100:
        seen += 1
        name = getattr(coro, "__qualname__", None) or type(coro).__name__
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        where = f" ({frame.f_code.co_filename}:{frame.f_lineno})" if frame is not None else ""
        chain.append(f"{name}{where}")
        inner = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
        if inner is None:
            break
        if not (hasattr(inner, "cr_await") or hasattr(inner, "gi_yieldfrom")):
            chain.append(f"waiting on {_short_repr(inner)}")
            break
        coro = inner
    return chain


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def _task_info(task: asyncio.Task[Any]) -> dict[str, Any]:
    state = "done" if task.done() else "pending"
    if task.cancelled():
        state = "cancelled"
    waiter = getattr(task, "_fut_waiter", None)
    stack = [
        f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"
        for frame in task.get_stack()
    ]
    return {
        "name": task.get_name(),
        "state": state,
        "coroutine": getattr(task.get_coro(), "__qualname__", repr(task.get_coro())),
        "awaiting": _awaiting(task.get_coro()) if not task.done() else [],
        "waiter": _short_repr(waiter) if waiter is not None else None,
        "stack": stack,
    }


def task_report(tasks: Iterable[asyncio.Task[Any]] | None = None) -> list[dict[str, Any]]:
    """Every task of the running loop (or ``tasks``), sorted by name."""
    chosen = list(tasks) if tasks is not None else list(asyncio.all_tasks())
    return sorted((_task_info(t) for t in chosen), key=lambda info: info["name"])


def _tasks_text(report: list[dict[str, Any]]) -> str:
    lines = [f"{len(report)} asyncio tasks"]
    for info in report:
        lines.append("")
        lines.append(f"task {info['name']!r} [{info['state']}] {info['coroutine']}")
        for step in info["awaiting"]:
            lines.append(f"  -> {step}")
        if info["waiter"]:
            lines.append(f"  waiter: {info['waiter']}")
    return "\n".join(lines) + "\n"


def thread_report() -> str:
    """Every thread's name and stack, as text."""
    frames = sys._current_frames()
    lines = []
    for thread in threading.enumerate():
        frame = frames.get(thread.ident) if thread.ident is not None else None
        lines.append(f"thread {thread.name!r} (id {thread.ident}, daemon={thread.daemon})")
        if frame is not None:
            lines.extend("  " + line.rstrip() for line in traceback.format_stack(frame))
        lines.append("")
    return "\n".join(lines)


def tracemalloc_report(limit: int = 25) -> str | None:
    """The top ``limit`` allocation sites by size, or None when tracemalloc is off."""
    if not tracemalloc.is_tracing():
        return None
    snapshot = tracemalloc.take_snapshot().filter_traces(
        [tracemalloc.Filter(False, tracemalloc.__file__)]
    )
    stats = snapshot.statistics("lineno")
    total = sum(s.size for s in stats)
    current, peak = tracemalloc.get_traced_memory()
    lines = [
        f"traced: {current} bytes now, {peak} bytes peak; {total} bytes in {len(stats)} sites",
        f"top {min(limit, len(stats))} by size:",
    ]
    lines.extend(f"{s.size:>12} B {s.count:>8} blocks  {s.traceback}" for s in stats[:limit])
    return "\n".join(lines) + "\n"


def _json(value: Any) -> web.Response:
    return web.Response(
        body=orjson.dumps(value, default=_encode, option=orjson.OPT_INDENT_2),
        content_type="application/json",
    )


def _encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return str(value)


def handlers(source: DebugSource) -> dict[str, Handler]:
    """The debug endpoints, by path, reading ``source`` (the Manager)."""

    async def index(request: web.Request) -> web.StreamResponse:
        del request
        return web.Response(text=_INDEX)

    async def tasks(request: web.Request) -> web.StreamResponse:
        report = task_report()
        if request.query.get("format") == "json":
            return _json(report)
        return web.Response(text=_tasks_text(report))

    async def threads(request: web.Request) -> web.StreamResponse:
        del request
        return web.Response(text=thread_report())

    async def memory(request: web.Request) -> web.StreamResponse:
        raw = request.query.get("limit", "25")
        if not raw.isdigit() or not 1 <= int(raw) <= _MAX_LIMIT:
            return web.Response(status=400, text=f"limit must be 1..{_MAX_LIMIT}, got {raw!r}\n")
        # A snapshot walks every traced block: keep it off the event loop's thread.
        text = await asyncio.to_thread(tracemalloc_report, int(raw))
        if text is None:
            return web.Response(
                status=404,
                text="tracemalloc is not tracing: start the operator with "
                "PYTHONTRACEMALLOC=1 (or call tracemalloc.start())\n",
            )
        return web.Response(text=text)

    async def queues(request: web.Request) -> web.StreamResponse:
        del request
        return _json(source.queues())

    async def informers(request: web.Request) -> web.StreamResponse:
        del request
        return _json(source.informers())

    routes: dict[str, Callable[[web.Request], Any]] = {
        "/debug": index,
        "/debug/tasks": tasks,
        "/debug/threads": threads,
        "/debug/tracemalloc": memory,
        "/debug/workqueues": queues,
        "/debug/informers": informers,
    }
    return routes
