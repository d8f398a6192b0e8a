"""Manager assembly: build an operator's Manager from its flags, run ``setup``, run it.

The functions call the `Operator`'s own methods (``parser``, ``create_manager``,
``local_webhooks``), so an operator subclass that adds flags is obeyed.
"""

from __future__ import annotations

import inspect
import tempfile
from typing import TYPE_CHECKING

from pyctrl.app._flags import manager_options
from pyctrl.config import Config, get_config
from pyctrl.log import configure
from pyctrl.manager import Manager
from pyctrl.webhook import LocalWebhooks, write_local_certs

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from pyctrl._kubernetes import Configuration
    from pyctrl.app._spec import OperatorSpec

__all__ = ["create_manager", "local_webhooks", "run"]


async def create_manager(
    op: OperatorSpec, config: Config | Configuration, args: argparse.Namespace | None = None
) -> Manager:
    """Build the Manager from flags and run ``setup``.

    Without ``args`` (a manager built in a test), the flags' defaults apply, except
    that metrics and health probes are not served: managers of tests running side by
    side would otherwise all bind ``:8080`` and ``:8081``.

    Raises:
        ConfigError: ``--leader-elect`` outside a cluster without
            ``--leader-election-namespace``.
    """
    if args is None:
        args = op.parser().parse_args(["--metrics-bind-address=0", "--health-probe-bind-address=0"])
    options = manager_options(op, args)
    manager = Manager(config, options)
    result = op.setup(manager)
    if inspect.isawaitable(result):
        await result
    return manager


async def run(
    op: OperatorSpec, argv: Sequence[str] | None = None, *, webhook_host: str | None = None
) -> None:
    """Parse flags, build the manager and run it until SIGTERM/SIGINT.

    Args:
        op: The operator.
        argv: The operator's flags (default: the process's).
        webhook_host: Local webhook development (``pyctrl run --webhook-host``): serve
            the webhooks with a fresh certificate for this address of the machine, and
            register configurations pointing at it while running (`local_webhooks`).
    """
    args = op.parser().parse_args(argv)
    configure(development=args.log_format == "console", level=args.log_level)
    config = await get_config(kubeconfig=args.kubeconfig, context=args.context)
    with tempfile.TemporaryDirectory(prefix=f"{op.name}-webhook-certs-") as certs:
        ca_bundle = b""
        if webhook_host:
            ca_bundle = write_local_certs(webhook_host, certs)
            args.webhook_cert_dir = certs
        manager = await op.create_manager(config, args)
        if webhook_host:
            manager.add(op.local_webhooks(manager, webhook_host, ca_bundle))
        await manager.run()


def local_webhooks(
    op: OperatorSpec, manager: Manager, host: str, ca_bundle: bytes
) -> LocalWebhooks:
    """The runnable registering ``manager``'s webhooks at ``host`` while it runs.

    The configurations are named ``<name>-dev-mutating-webhook-configuration`` (and
    validating), apart from the deployed operator's.
    """
    return LocalWebhooks(
        manager.rest,
        manager.webhook_server,
        host=host,
        ca_bundle=ca_bundle,
        name_prefix=f"{op.name}-dev-",
    )
