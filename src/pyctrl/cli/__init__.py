"""The ``pyctrl`` command: what kubebuilder and operator-sdk do, for pyctrl operators.

::

    pyctrl init DIRECTORY [--name --domain --group --version --kind]   # new project
    pyctrl generate [all|crd|rbac|manager|webhook] MODULE[:ATTR] [--out config] [--check]
    pyctrl run MODULE[:ATTR] [operator flags...]                      # like `make run`
    pyctrl envtest [--crds PATH...]                                  # an API server
    pyctrl version

``init`` scaffolds a project that passes its own tests and ``mypy --strict``;
``generate`` writes an `pyctrl.app.Operator`'s manifests under ``config/`` (or, with
``--check``, fails listing the stale ones, for CI); ``run`` runs the Operator's
``main`` with the remaining arguments; ``envtest`` serves the embedded API server (the
command line of ``python -m pyctrl.envtest``).

Problems the user can fix (a module that does not import, an attribute that is not an
Operator, a directory that cannot be written) end the command with one ``error: ...``
line on stderr and exit status 1; ``pyctrl --traceback ...`` shows the underlying
traceback. Usage errors exit with status 2.
"""

from __future__ import annotations

from typing import Annotated

import typer

from pyctrl.cli import _envtest, _generate, _init, _run, _version
from pyctrl.cli._common import set_traceback

__all__ = ["app", "main"]

app = typer.Typer(
    name="pyctrl",
    help="Scaffold, generate manifests for, and run pyctrl operators.",
    no_args_is_help=True,
    add_completion=False,
    # Errors are reported as one line; a traceback only on request (--traceback).
    pretty_exceptions_enable=False,
    # Plain click output: usage errors stay on a few greppable lines, not in boxes.
    rich_markup_mode=None,
)
"""The Typer application (for embedding, and for ``typer.testing.CliRunner``)."""


@app.callback()
def _root(
    traceback: Annotated[
        bool,
        typer.Option("--traceback", help="Print the full traceback behind an error."),
    ] = False,
) -> None:
    set_traceback(traceback)


app.command("init")(_init.init)
app.command("generate")(_generate.generate)
app.command("run", context_settings=_run.CONTEXT)(_run.run)
app.command("envtest", context_settings=_envtest.CONTEXT, add_help_option=False)(_envtest.envtest)
app.command("version")(_version.version)


def main() -> None:
    """Entry point of the ``pyctrl`` console script."""
    app()
