"""Shared fixtures for the example operators' end-to-end tests.

Everything here is generic; each example's tests bring their own CRDs and operator:

- ``crds`` (override it in a test module) lists the CRDs the ``env`` fixture installs:
  dicts, YAML files or directories, e.g. ``[EXAMPLES / "mysrv" / "config" / "crd"]``.
- ``env`` is a started embedded API server (`pyctrl.envtest.Environment`) with them.
- ``kubectl`` runs the real kubectl against ``env`` in the ``default`` namespace, with
  ``tests.kubectl.Kubectl`` (asynchronously: a blocking subprocess call would stall the
  event loop that serves the API); ``Kubectl.json`` decodes ``-o json`` output.
- `operator_running` builds an `pyctrl.app.Operator`'s manager from command-line flags
  (test defaults: free loopback ports for metrics, probes and webhooks) and runs it for
  a block.
- `running` runs any Manager for a block; `eventually` waits for a condition that lives
  in the API server, polling with a deadline.
- ``webhook_certs`` writes a CA-signed serving certificate for 127.0.0.1 into a
  directory, for ``--webhook-cert-dir``, and gives the CA; with
  ``await env.install_webhooks(manager.webhook_server, ca_bundle=webhook_certs.ca_pem)``
  the API server then calls the operator's webhooks.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pyctrl.certs import generate_ca, issue_serving_cert, write_cert_dir
from pyctrl.envtest import Environment
from pyctrl.testing import eventually, running

from ..kubectl import Kubectl

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    from pyctrl.app import Operator
    from pyctrl.manager import Manager

__all__ = [
    "EXAMPLES",
    "REPO",
    "TEST_FLAGS",
    "Kubectl",
    "WebhookCerts",
    "eventually",
    "operator_running",
    "running",
]

REPO = Path(__file__).resolve().parents[2]
"""The repository root (where ``python -m examples.<name>`` runs from)."""

EXAMPLES = REPO / "examples"
"""The examples directory."""


@pytest.fixture
def crds() -> Sequence[Any]:
    """The CRDs ``env`` installs; override in a test module (default: none)."""
    return []


@pytest.fixture
async def env(crds: Sequence[Any]) -> AsyncIterator[Environment]:
    """A started API server with ``crds`` installed and Established (embedded by default)."""
    async with Environment(crds=list(crds)) as environment:
        yield environment


@pytest.fixture
def kubectl(env: Environment, tmp_path: Path) -> Kubectl:
    """kubectl for ``env``, in the ``default`` namespace."""
    return Kubectl(env.kubeconfig_path, tmp_path / "kube-cache", "default")


@dataclass(frozen=True)
class WebhookCerts:
    """A serving certificate directory for a webhook server on 127.0.0.1, and its CA."""

    cert_dir: Path
    ca_pem: bytes


@pytest.fixture
def webhook_certs(tmp_path: Path) -> WebhookCerts:
    """A fresh CA and a serving certificate for localhost/127.0.0.1 in ``tls.crt``/``tls.key``."""
    ca = generate_ca("examples-webhook-ca")
    written = write_cert_dir(tmp_path / "webhook-certs", issue_serving_cert(ca))
    return WebhookCerts(written.directory, ca.cert_pem)


TEST_FLAGS = (
    "--metrics-bind-address=127.0.0.1:0",
    "--health-probe-bind-address=127.0.0.1:0",
    "--webhook-port=0",
)
"""Flags `operator_running` passes before the caller's: free ports, nothing fixed."""


@asynccontextmanager
async def operator_running(
    operator: Operator, env: Environment, *flags: str
) -> AsyncIterator[Manager]:
    """Build ``operator``'s manager for ``env`` from its flags and run it for the block.

    Args:
        operator: The operator (its ``setup`` registers controllers and webhooks).
        env: The API server to run against.
        flags: Command-line flags after `TEST_FLAGS` (later ones win), e.g.
            ``--webhook-cert-dir=...``.
    """
    args = operator.parser().parse_args([*TEST_FLAGS, *flags])
    manager = await operator.create_manager(env.config, args)
    # On all interfaces, port 0 gives IPv4 and IPv6 different ports and the server reports
    # only one of them; on loopback there is one socket, one port.
    manager.webhook_server.host = "127.0.0.1"
    async with running(manager):
        yield manager
