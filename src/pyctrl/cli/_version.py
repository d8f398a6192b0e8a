"""``pyctrl version``: which pyctrl, on which Python."""

from __future__ import annotations

import platform

import click

import pyctrl


@click.command("version")
def version() -> None:
    """Print the pyctrl version."""
    click.echo(f"pyctrl {pyctrl.__version__} (Python {platform.python_version()})")
