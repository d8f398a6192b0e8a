"""``pyctrl envtest``: serve the embedded API server for kubectl and a local operator.

The same command line as ``python -m pyctrl.envtest`` (`pyctrl.envtest.__main__.run`):
``--crds PATH...``, ``--host``, ``--port``, ``--kubeconfig-out``. It prints the
kubeconfig path and serves until Ctrl-C.
"""

from __future__ import annotations

import click

CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True}


@click.command("envtest", context_settings=CONTEXT, add_help_option=False)
@click.pass_context
def envtest(ctx: click.Context) -> None:
    """Serve the embedded API server until Ctrl-C.

    The flags are those of python -m pyctrl.envtest (pyctrl envtest --help lists them).
    """
    from pyctrl.envtest.__main__ import run

    raise click.exceptions.Exit(run(ctx.args, prog=ctx.command_path))
