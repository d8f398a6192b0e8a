"""`Operator`: one object gives an operator's process entry point and its manifests."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyctrl.app import _assembly, _flags, _manifests, _packaging
from pyctrl.app._spec import PolicyRule, Setup
from pyctrl.errors import ConfigError

if TYPE_CHECKING:
    import argparse
    import os
    from collections.abc import Sequence
    from pathlib import Path

    from pyctrl._kubernetes import Configuration
    from pyctrl.config import Config
    from pyctrl.manager import Manager
    from pyctrl.policy import MutatingPolicy, ValidatingPolicy
    from pyctrl.resource import CustomResource
    from pyctrl.webhook import CertRotator, LocalWebhooks

__all__ = ["CERT_MODES", "Operator", "Setup"]

CERT_MODES = ("cert-manager", "self-managed")
"""Where an operator's webhook certificates come from (`Operator.cert_mode`)."""


@dataclass
class Operator:
    """An operator: its types, its setup, and how it is deployed.

    Attributes:
        name: Short name, e.g. ``mysrv``; prefixes every generated object.
        types: Custom resource types (every version) whose CRDs it owns.
        setup: Registers controllers and webhooks on a Manager (plain or coroutine).
        namespace: Where the operator runs (``<name>-system``).
        image: The container image of the manager.
        extra_rules: RBAC rules beyond what is derived from ``setup``.
        leader_election_id: The Lease name (``<name>.pyctrl.dev``).
        replicas: Replicas of the generated Deployment. Above 1 they run sharded
            (``--shard-ring=<name>``, `pyctrl.shardelection`): every replica reconciles its
            share of the objects, instead of one leader and idle standbys.
        cert_mode: Where the webhooks' certificates come from in the cluster:
            ``cert-manager`` (an Issuer and a Certificate; cert-manager must be
            installed) or ``self-managed`` (the operator keeps them in a Secret and
            rotates them, `pyctrl.webhook.CertRotator`; nothing else needed).
        policies: Admission policies (`pyctrl.policy`) installed with the operator:
            ``config/policy/``, type-checked when the manifests are made.
    """

    name: str
    types: Sequence[type[CustomResource]]
    setup: Setup
    namespace: str = ""
    image: str = ""
    extra_rules: Sequence[PolicyRule] = ()
    leader_election_id: str = ""
    replicas: int = 1
    cert_mode: str = "cert-manager"
    policies: Sequence[ValidatingPolicy | MutatingPolicy] = ()
    _parser: argparse.ArgumentParser | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.namespace = self.namespace or f"{self.name}-system"
        self.image = self.image or f"{self.command_name}:latest"
        self.leader_election_id = self.leader_election_id or f"{self.name}.pyctrl.dev"
        if self.cert_mode not in CERT_MODES:
            raise ValueError(
                f"cert_mode {self.cert_mode!r} is not one of {', '.join(map(repr, CERT_MODES))}"
            )

    @property
    def command_name(self) -> str:
        """The program's name: ``<name>-operator``, or the name if it ends in ``-operator``.

        It names the image, the field manager and ``--help``'s usage line.
        """
        return self.name if self.name.endswith("-operator") else f"{self.name}-operator"

    # -- the command line and the manager (`pyctrl.app._flags`, `_assembly`) ----------

    def parser(self) -> argparse.ArgumentParser:
        """The command-line flags (controller-runtime's usual ones)."""
        return _flags.parser(self)

    async def create_manager(
        self, config: Config | Configuration, args: argparse.Namespace | None = None
    ) -> Manager:
        """Build the Manager from flags and run ``setup`` (see `_assembly.create_manager`).

        Without ``args`` (a manager built in a test), the flags' defaults apply, except
        that metrics and health probes are not served.

        Raises:
            ConfigError: ``--leader-elect`` outside a cluster without
                ``--leader-election-namespace``.
        """
        return await _assembly.create_manager(self, config, args)

    async def run(
        self, argv: Sequence[str] | None = None, *, webhook_host: str | None = None
    ) -> None:
        """Parse flags, build the manager and run it until SIGTERM/SIGINT.

        Args:
            argv: The operator's flags (default: the process's).
            webhook_host: Local webhook development (``pyctrl run --webhook-host``): serve
                the webhooks with a fresh certificate for this address of the machine, and
                register configurations pointing at it while running (`local_webhooks`).
        """
        await _assembly.run(self, argv, webhook_host=webhook_host)

    def local_webhooks(self, manager: Manager, host: str, ca_bundle: bytes) -> LocalWebhooks:
        """The runnable registering ``manager``'s webhooks at ``host`` while it runs.

        The configurations are named ``<name>-dev-mutating-webhook-configuration`` (and
        validating), apart from the deployed operator's.
        """
        return _assembly.local_webhooks(self, manager, host, ca_bundle)

    def self_managed_certificates(
        self, manager: Manager, namespace: str, secret: str
    ) -> CertRotator:
        """Serve ``manager``'s webhooks from the Secret ``namespace/secret``, managed in-process.

        What ``--webhook-cert-secret`` does (`_assembly.self_managed_certificates`); a
        subclass may override it to change hosts, lifetimes or the clock.
        """
        return _assembly.self_managed_certificates(self, manager, namespace, secret)

    def main(self, argv: Sequence[str] | None = None, *, webhook_host: str | None = None) -> None:
        """The process entry point (``python -m your_operator``).

        A configuration problem (no or a broken kubeconfig; ``--leader-elect`` outside a
        cluster without ``--leader-election-namespace``) is one line on stderr and exit
        status 1, not a traceback. ``webhook_host``: see `run`.
        """
        try:
            asyncio.run(self.run(argv, webhook_host=webhook_host))
        except ConfigError as exc:
            print(f"error: {exc}", file=sys.stderr)
            raise SystemExit(1) from None

    # -- manifests (`pyctrl.app._manifests`) -------------------------------------------

    def rbac_rules(self, manager: Manager) -> list[PolicyRule]:
        """Least-privilege rules for what ``setup`` registered on ``manager``."""
        return _manifests.rbac_rules(self, manager)

    async def manifests(self) -> dict[str, list[dict[str, Any]]]:
        """Every manifest, by file name under ``config/``.

        crd/, rbac/ (with the metrics auth and reader roles), manager/ (with the metrics
        Service), webhook/, policy/ (admission policies) and prometheus/ (a
        ServiceMonitor).
        """
        return await _manifests.manifests(self)

    async def render_manifests(self) -> dict[str, str]:
        """The manifests as YAML text, by relative file name (what `write_manifests` writes)."""
        return await _manifests.render_manifests(self)

    async def render_installer(self) -> dict[str, str]:
        """``install.yaml``: every object ``config/default`` installs, in one file."""
        return await _packaging.installer(self)

    async def render_chart(self) -> dict[str, str]:
        """A Helm chart of the manifests (`pyctrl.app._packaging.chart`), by path."""
        return await _packaging.chart(self)

    async def write_manifests(self, directory: str | os.PathLike[str]) -> list[Path]:
        """Write every manifest under ``directory`` (``config/``); return the files written.

        Files of the generated subdirectories that are no longer produced are removed, so
        the directory always matches the Python types.
        """
        return await _manifests.write_manifests(self, directory)
