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
from pyctrl.webhook import (
    CertRotator,
    ClientConfig,
    LocalWebhooks,
    RotationOptions,
    SecretCertificates,
    converted_kinds,
    webhook_configurations,
    write_local_certs,
)

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from pyctrl._kubernetes import Configuration
    from pyctrl.app._spec import OperatorSpec
    from pyctrl.clock import Clock
    from pyctrl.webhook import Server

__all__ = [
    "create_manager",
    "local_webhooks",
    "published_names",
    "run",
    "self_managed_certificates",
    "webhook_service_hosts",
]


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
    secret = getattr(args, "webhook_cert_secret", "")
    if secret and manager.webhook_server.paths:
        namespace, _, name = secret.rpartition("/")
        op.self_managed_certificates(manager, namespace or op.namespace, name)
    return manager


def webhook_service_hosts(op: OperatorSpec, namespace: str) -> list[str]:
    """The DNS names of the operator's webhook Service in ``namespace``."""
    service = f"{op.name}-webhook-service"
    return [f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local"]


def published_names(op: OperatorSpec, server: Server) -> tuple[list[str], list[str], list[str]]:
    """The names of the operator's Mutating and ValidatingWebhookConfigurations and converted CRDs.

    The objects whose ``caBundle`` self-managed certificates keep current.
    """
    configurations = webhook_configurations(server, ClientConfig(), name_prefix=f"{op.name}-")
    converted = converted_kinds(server)
    crds = {
        f"{info.plural}.{info.group}"
        for info in (t.resource_info() for t in op.types)
        if (info.group, info.kind) in converted
    }
    return (
        [c["metadata"]["name"] for c in configurations if c["kind"].startswith("Mutating")],
        [c["metadata"]["name"] for c in configurations if c["kind"].startswith("Validating")],
        sorted(crds),
    )


def self_managed_certificates(
    op: OperatorSpec,
    manager: Manager,
    namespace: str,
    secret: str,
    *,
    hosts: Sequence[str] | None = None,
    options: RotationOptions | None = None,
    clock: Clock | None = None,
) -> CertRotator:
    """Serve ``manager``'s webhooks from the Secret ``namespace/secret``, managed in-process.

    Every replica's webhook server gets a `SecretCertificates` provider; the returned
    `CertRotator` (added to the manager, run by the leader) keeps the ``caBundle`` of the
    operator's webhook configurations (``<name>-mutating-webhook-configuration`` and
    validating) and converted CRDs current and rotates the certificates.

    Args:
        op: The operator.
        manager: Its manager, after ``setup`` (the webhooks decide what is published).
        namespace: The Secret's (and the webhook Service's) namespace.
        secret: The Secret's name.
        hosts: The serving certificate's names (default: the webhook Service's).
        options: Lifetimes and intervals.
        clock: Where time is read (a `FakeClock` in tests).
    """
    server = manager.webhook_server
    names = hosts if hosts is not None else webhook_service_hosts(op, namespace)
    server.cert_provider = SecretCertificates(
        manager.rest, namespace, secret, names, options=options, clock=clock
    )
    mutating, validating, crds = published_names(op, server)
    rotator = CertRotator(
        manager.rest,
        namespace,
        secret,
        names,
        mutating=mutating,
        validating=validating,
        crds=crds,
        options=options,
        clock=clock,
    )
    manager.add(rotator)
    return rotator


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
