"""kubectl against the embedded API server with admission webhooks installed.

kubectl runs as an asyncio subprocess: the API server and the webhook servers are
served by this test's event loop, which a blocking ``subprocess.run`` would stall.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest

from pyctrl._apiserver.options import install
from pyctrl.crd import crd_for
from pyctrl.envtest import Environment
from pyctrl.webhook import (
    ClientConfig,
    Server,
    register_defaulter,
    register_validator,
    webhook_configurations,
)
from tests.kubectl import Kubectl, Run

from .test_webhooks_support import (
    Certs,
    Gadget,
    GadgetChecks,
    GadgetDefaults,
    Rest,
    allow,
    configuration,
    gadget,
    hook,
    make_certs,
    running,
    scripted_webhook,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

pytestmark = pytest.mark.kubectl


@dataclass
class Cluster:
    """An API server with webhooks installed, a client, and kubectl for it."""

    env: Environment
    rest: Rest
    certs: Certs
    runner: Kubectl

    async def kubectl(self, *args: str, stdin: Any = None) -> Run:
        """Run kubectl; the tests check the exit code themselves."""
        return await self.runner(*args, stdin=stdin, check=False)


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with Environment(crds=[crd_for(Gadget)]) as env, aiohttp.ClientSession() as session:
        assert env.server is not None
        install(env.server)
        runner = Kubectl(env.kubeconfig_path, tmp_path / "cache", "default")
        yield Cluster(env, Rest(env, session), make_certs(tmp_path / "certs"), runner)


@pytest.fixture
async def gadget_webhooks(cluster: Cluster) -> AsyncIterator[None]:
    """pyctrl's webhook server defaulting and validating gadgets, configured in the server."""
    server = Server(host="127.0.0.1", port=0, cert_dir=cluster.certs.directory)
    register_defaulter(server, Gadget, GadgetDefaults())
    register_validator(server, Gadget, GadgetChecks())
    async with running(server) as url:
        client = ClientConfig(url=url, ca_bundle=cluster.certs.ca.cert_pem)
        await cluster.rest.install(*webhook_configurations(server, client))
        yield


@pytest.mark.usefixtures("gadget_webhooks")
async def test_kubectl_apply_stores_the_defaulted_object(cluster: Cluster) -> None:
    """`kubectl apply` of a custom resource shows the mutating webhook's default in `get`."""
    applied = await cluster.kubectl("apply", "-f", "-", stdin=gadget("a", 4))
    assert applied.code == 0, applied.err
    assert applied.out.strip() == "gadget.hooks.pyctrl.dev/a created"
    got = await cluster.kubectl("get", "gadget", "a", "-o", "json")
    assert got.code == 0, got.err
    assert json.loads(got.out)["spec"] == {"size": 4, "color": "blue"}


@pytest.mark.usefixtures("gadget_webhooks")
async def test_kubectl_prints_the_webhook_denial(cluster: Cluster) -> None:
    """A denial with field causes fails `kubectl apply` and prints the causes."""
    applied = await cluster.kubectl("apply", "-f", "-", stdin=gadget("bad", -2))
    assert applied.code == 1
    # kubectl's wording for a 422 Invalid whose details name no kind: the causes.
    assert applied.err == "The request is invalid: spec.size: Invalid value: -2: must be >= 0\n"
    got = await cluster.kubectl("get", "gadget", "bad", "--ignore-not-found", "-o", "name")
    assert got.out == ""


@pytest.mark.usefixtures("gadget_webhooks")
async def test_kubectl_prints_the_webhook_denial_message(cluster: Cluster) -> None:
    """A denial without causes is printed by kubectl with the webhook's message."""
    assert (await cluster.kubectl("apply", "-f", "-", stdin=gadget("keep"))).code == 0
    deleted = await cluster.kubectl("delete", "gadget", "keep")
    assert deleted.code == 1
    assert deleted.err == (
        'The request is invalid: admission webhook "vgadget-v1.hooks.pyctrl.dev" denied the '
        "request: gadget keep is protected\n"
    )


async def test_kubectl_prints_webhook_warnings(cluster: Cluster) -> None:
    """Warnings from a webhook are printed by kubectl as ``Warning: <text>``."""

    async def deny(body: dict[str, Any]) -> Any:
        status = {"code": 403, "reason": "Forbidden", "message": "quota exhausted"}
        return allow(body, allowed=False, status=status, warnings=["gadgets are deprecated"])

    async with scripted_webhook(cluster.certs, deny) as script:
        await cluster.rest.install(
            configuration(
                "ValidatingWebhookConfiguration",
                "quota",
                hook("quota.test", script.url, cluster.certs),
            )
        )
        applied = await cluster.kubectl("apply", "-f", "-", stdin=gadget("a"))
    assert applied.code == 1
    lines = applied.err.splitlines()
    assert "Warning: gadgets are deprecated" in lines
    assert any(
        'admission webhook "quota.test" denied the request: quota exhausted' in line
        for line in lines
    )
