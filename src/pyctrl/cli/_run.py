"""``pyctrl run``: run an Operator from its module, like kubebuilder's ``make run``.

Everything after ``MODULE[:ATTRIBUTE]`` goes to the operator's own flags
(`pyctrl.app.Operator.parser`), so ``pyctrl run mysrv.__main__:operator --help`` shows
them. The operator runs in the foreground until SIGINT or SIGTERM.

``--webhook-host ADDRESS`` (before ``MODULE``) is the local webhook development loop: the
webhook server serves a certificate generated for ``ADDRESS`` and the cluster gets
webhook configurations pointing at it, removed again on exit
(`pyctrl.app.Operator.run`).
"""

from __future__ import annotations

import click

from pyctrl.cli._common import CliError, reports_errors
from pyctrl.cli._load import Target, load_operator

CONTEXT = {
    "allow_extra_args": True,
    "ignore_unknown_options": True,
    # After MODULE[:ATTRIBUTE] every argument, --help included, is the operator's.
    "allow_interspersed_args": False,
}


@click.command("run", context_settings=CONTEXT)
@click.option(
    "--webhook-host",
    metavar="ADDRESS",
    help="Develop webhooks against a real cluster: serve them with a fresh certificate for "
    "ADDRESS (this machine, as the cluster reaches it, e.g. host.k3d.internal), register "
    "webhook configurations pointing at it, and remove them on exit.",
)
@click.argument("target", metavar="MODULE[:ATTRIBUTE]")
@click.pass_context
@reports_errors
def run(ctx: click.Context, target: str, webhook_host: str | None) -> None:
    """Run an Operator in the foreground, with its own flags.

    Everything after MODULE[:ATTRIBUTE] goes to the operator (--kubeconfig, --context,
    --leader-elect, --log-format console, ...; see: pyctrl run MODULE:ATTRIBUTE --help).
    """
    from pyctrl.errors import PyctrlError

    operator = load_operator(Target.parse(target))
    try:
        operator.main(ctx.args, webhook_host=webhook_host)
    except PyctrlError as exc:
        # Configuration problems (no kubeconfig, a broken one) are the user's to fix.
        raise CliError(str(exc)) from exc
    except KeyboardInterrupt:
        # Ctrl-C before the manager installed its signal handlers: a normal way to stop.
        raise click.exceptions.Exit(130) from None
