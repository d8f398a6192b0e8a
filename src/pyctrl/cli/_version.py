"""``pyctrl version``: which pyctrl, on which Python."""

from __future__ import annotations

import platform

import typer

import pyctrl


def version() -> None:
    """Print the pyctrl version."""
    typer.echo(f"pyctrl {pyctrl.__version__} (Python {platform.python_version()})")
