"""What every command shares: the one-line error, and turning it into an exit status."""

from __future__ import annotations

import functools
import traceback
from typing import TYPE_CHECKING, ParamSpec, TypeVar

import click

if TYPE_CHECKING:
    from collections.abc import Callable

P = ParamSpec("P")
R = TypeVar("R")

# Set by the root ``--traceback`` option; read when an error is reported.
_state = {"traceback": False}


class CliError(Exception):
    """A problem the user can fix, reported as one ``error: ...`` line and exit status 1.

    The underlying exception, if any, is the ``__cause__``; ``pyctrl --traceback``
    prints it in full.
    """


def set_traceback(enabled: bool) -> None:
    """Print full tracebacks of reported errors (``pyctrl --traceback``)."""
    _state["traceback"] = enabled


def reports_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Wrap a command so that a `CliError` ends it with one line on stderr and exit 1."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except CliError as exc:
            if _state["traceback"] and exc.__cause__ is not None:
                traceback.print_exception(exc.__cause__)
            click.echo(f"error: {exc}", err=True)
            raise click.exceptions.Exit(1) from None

    return wrapper


def describe(exc: BaseException) -> str:
    """``Type: message (file:line)``: an exception in one line, where it was raised."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if not frame.filename.startswith("<frozen")
    ]
    if isinstance(exc, SyntaxError) or not frames:
        return text
    return f"{text} ({frames[-1].filename}:{frames[-1].lineno})"
