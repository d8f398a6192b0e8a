"""``pyctrl envtest``: serve the embedded API server for kubectl and a local operator.

The same command line as ``python -m pyctrl.envtest`` (`pyctrl.envtest.__main__.run`):
``--crds PATH...``, ``--host``, ``--port``, ``--kubeconfig-out``. It prints the
kubeconfig path and serves until Ctrl-C.
"""

from __future__ import annotations

import typer

CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True}


def envtest(ctx: typer.Context) -> None:
    """Serve the embedded API server until Ctrl-C.

    The flags are those of python -m pyctrl.envtest (pyctrl envtest --help lists them).
    """
    from pyctrl.envtest.__main__ import run

    raise typer.Exit(run(ctx.args))
