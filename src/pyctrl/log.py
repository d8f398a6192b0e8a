"""Structured logging for operators, with structlog.

pyctrl logs through structlog with key-value context: every reconcile binds
``controller``, ``kind``, ``namespace``, ``name`` and ``reconcile_id`` into the context
of everything logged while it runs (through `contextvars`), so a user's
``log.info("creating deployment")`` inside a reconciler carries them too.

`configure` sets the output once per process, with one switch:

- ``development=False`` (production): one JSON object per line, ISO timestamps, for
  log collectors;
- ``development=True``: aligned, coloured console lines for people.

`get_logger(name)` returns a bound logger; `bind_context` and `reset_context` manage
the per-task context.

The lines logged during a reconcile also carry ``triggers``, the summary of why it runs
(see `pyctrl.controller.triggers`), added by the `merge_triggers` processor, which
`configure` installs: a structlog configuration of your own should list it after
``merge_contextvars``. It is rendered only for lines actually written.
"""

from __future__ import annotations

import contextvars
import io
import logging
import sys
from typing import TYPE_CHECKING, Any, TextIO, cast

import structlog
from structlog.contextvars import bind_contextvars, bound_contextvars, clear_contextvars

if TYPE_CHECKING:
    from collections.abc import MutableMapping

__all__ = [
    "bind_context",
    "bound_context",
    "configure",
    "debug_enabled",
    "get_logger",
    "merge_triggers",
    "reset_context",
]

reconcile_triggers: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "pyctrl_reconcile_triggers", default=None
)
"""The triggers of the reconcile running in this task (set by the controller)."""


def merge_triggers(
    logger: Any, method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """A structlog processor: add the running reconcile's ``triggers`` to the line.

    A per-line lookup instead of a bound context value: binding costs every reconcile,
    this only the lines written.
    """
    found = reconcile_triggers.get()
    if found and "triggers" not in event_dict:
        event_dict["triggers"] = found
    return event_dict


bind_context = bind_contextvars
"""Bind key-values into the logging context of the current task."""

bound_context = bound_contextvars
"""Context manager binding key-values for the duration of a block."""

reset_context = clear_contextvars
"""Clear the logging context of the current task."""


def configure(
    *,
    development: bool = False,
    level: int | str = logging.INFO,
    stream: TextIO | None = None,
) -> None:
    """Configure structlog (and the standard library's root logger) for the process.

    Args:
        development: Human-readable console output when True; JSON lines when False.
        level: The minimum level to emit, as a number or name (``"DEBUG"``).
        stream: Where to write; standard error by default.
    """
    if isinstance(level, str):
        numeric = logging.getLevelName(level.upper())
        if not isinstance(numeric, int):
            raise ValueError(f"unknown log level {level!r}")
        level = numeric
    out = stream or cast("TextIO", _Stderr())
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        merge_triggers,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]
    renderer: Any
    if development:
        # Tracebacks without local variables: rendering the locals of every frame of a
        # deep recursion (or of frames holding huge objects) can take minutes.
        renderer = structlog.dev.ConsoleRenderer(
            colors=stream is None and sys.stderr.isatty(),
            exception_formatter=structlog.dev.plain_traceback,
        )
    else:
        shared.append(
            structlog.processors.ExceptionRenderer(
                structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
            )
        )
        renderer = structlog.processors.JSONRenderer()
    structlog.configure(
        processors=[*shared, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(out),
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def debug_enabled() -> bool:
    """Whether debug lines are written: a cheap check before building a costly one."""
    check = structlog.get_config()["wrapper_class"].__dict__.get("is_enabled_for")
    return True if check is None else bool(check(None, logging.DEBUG))


def get_logger(name: str | None = None, **initial: Any) -> Any:
    """Return a structlog logger, bound to ``logger=name`` and any initial key-values.

    The logger stays lazy: modules create theirs at import time, and `configure` called
    later still decides how they write.
    """
    if name:
        initial = {"logger": name, **initial}
    return _Lazy(initial)


class _Stderr(io.TextIOBase):
    """Writes to whatever ``sys.stderr`` is at the time of writing.

    A stream captured at configure time may be closed later (test runners swap
    ``sys.stderr`` per test); resolving it on each write keeps logging working.
    """

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


class _Lazy:
    """Binds its initial values to the logger of the configuration current at call time."""

    __slots__ = ("_initial",)

    def __init__(self, initial: dict[str, Any]) -> None:
        self._initial = initial

    def bind(self, **values: Any) -> _Lazy:
        return _Lazy({**self._initial, **values})

    def __getattr__(self, method: str) -> Any:
        return getattr(structlog.get_logger().bind(**self._initial), method)
