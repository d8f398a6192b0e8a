"""What the command line, the assembly and the manifests read of an `Operator`.

`Operator` ties together three concerns kept in their own modules (`_flags`,
`_assembly`, `_manifests`). Each of them takes the operator as an `OperatorSpec`, the
attributes and overridable methods it reads, so the modules depend on this floor and
not on `Operator` itself: no import circle, and a subclass's overrides are still what
runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

if TYPE_CHECKING:
    import argparse
    from collections.abc import Awaitable, Callable, Sequence

    from pyctrl._kubernetes import Configuration
    from pyctrl.config import Config
    from pyctrl.manager import Manager
    from pyctrl.policy import MutatingPolicy, ValidatingPolicy
    from pyctrl.resource import CustomResource
    from pyctrl.webhook import CertRotator, LocalWebhooks

Setup: TypeAlias = "Callable[[Manager], Awaitable[None] | None]"
"""What ``setup`` is: a function given the Manager, plain or a coroutine function."""


@dataclass(frozen=True)
class PolicyRule:
    """One RBAC rule: API groups, resources and verbs (``rbac.authorization.k8s.io/v1``)."""

    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """The wire form."""
        return {
            "apiGroups": list(self.api_groups),
            "resources": list(self.resources),
            "verbs": list(self.verbs),
        }


class OperatorSpec(Protocol):
    """The parts of an `Operator` its flags, assembly and manifests use."""

    @property
    def name(self) -> str:
        """Short name, prefixing every generated object."""

    @property
    def types(self) -> Sequence[type[CustomResource]]:
        """Custom resource types whose CRDs it owns."""

    @property
    def setup(self) -> Setup:
        """Registers controllers and webhooks on a Manager."""

    @property
    def namespace(self) -> str:
        """Where the operator runs."""

    @property
    def image(self) -> str:
        """The container image of the manager."""

    @property
    def extra_rules(self) -> Sequence[PolicyRule]:
        """RBAC rules beyond those derived from ``setup``."""

    @property
    def leader_election_id(self) -> str:
        """The Lease name."""

    @property
    def replicas(self) -> int:
        """Replicas of the generated Deployment."""

    @property
    def cert_mode(self) -> str:
        """Where webhook certificates come from: ``cert-manager`` or ``self-managed``."""

    @property
    def policies(self) -> Sequence[ValidatingPolicy | MutatingPolicy]:
        """Admission policies installed with the operator."""

    @property
    def command_name(self) -> str:
        """The program name on the command line."""

    def parser(self) -> argparse.ArgumentParser:
        """The command line parser."""

    async def create_manager(
        self, config: Config | Configuration, args: argparse.Namespace | None = None
    ) -> Manager:
        """A Manager set up from ``args``."""

    def local_webhooks(self, manager: Manager, host: str, ca_bundle: bytes) -> LocalWebhooks:
        """The local-development webhook registrations."""

    def self_managed_certificates(
        self, manager: Manager, namespace: str, secret: str
    ) -> CertRotator:
        """Serve the webhooks from a Secret the operator manages itself."""

    def rbac_rules(self, manager: Manager) -> list[PolicyRule]:
        """The RBAC rules the manager needs."""

    async def manifests(self) -> dict[str, list[dict[str, Any]]]:
        """The deployment manifests, by file."""

    async def render_manifests(self) -> dict[str, str]:
        """The manifests as YAML, by file."""
