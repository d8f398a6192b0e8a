"""The webhook server run by a Manager: builder paths, /readyz and /metrics."""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson
import pytest
from kubernetes_asyncio.client import Configuration

from pyctrl.builder import webhook_managed_by
from pyctrl.certs import generate_ca, issue_serving_cert
from pyctrl.envtest import Environment
from pyctrl.manager import Manager, Options
from pyctrl.testing import running
from pyctrl.webhook import ConversionReview, Server, mutate_path, validate_path

from .conftest import (
    Checks,
    Defaults,
    GadgetV1,
    GadgetV1alpha1,
    MySrv,
    ThermostatV1,
    ThermostatV1alpha1,
    metric,
    mysrv,
    review,
)

if TYPE_CHECKING:
    from pathlib import Path

VALIDATE = validate_path(MySrv)
PANICS = "controller_runtime_webhook_panics_total"
CONVERSION_PANICS = "controller_runtime_conversion_webhook_panics_total"
REQUESTS = "controller_runtime_webhook_requests_total"


def _manager() -> Manager:
    return Manager(Configuration(host="https://cluster.invalid"))


def test_builder_registers_every_webhook_of_a_type() -> None:
    """complete() registers the defaulter, validator and /convert, and returns their paths."""
    manager = _manager()
    paths = (
        webhook_managed_by(manager)
        .for_(MySrv)
        .with_defaulter(Defaults())
        .with_validator(Checks())
        .complete()
    )
    assert paths == [mutate_path(MySrv), VALIDATE]
    assert webhook_managed_by(manager).for_(ThermostatV1).with_conversion(
        ThermostatV1alpha1
    ).complete() == ["/convert"]
    # A second converted kind shares the one /convert endpoint.
    assert webhook_managed_by(manager).for_(GadgetV1).with_conversion(
        GadgetV1alpha1
    ).complete() == ["/convert"]
    assert manager.webhook_server.paths == ["/convert", mutate_path(MySrv), VALIDATE]


def test_builder_errors_name_what_is_missing() -> None:
    """No for_(), nothing to register, a spoke of another kind: each refused with the reason."""
    manager = _manager()
    with pytest.raises(ValueError, match=r"call for_\(\) first"):
        webhook_managed_by(manager).with_validator(Checks()).complete()
    with pytest.raises(ValueError, match="nothing to register"):
        webhook_managed_by(manager).for_(MySrv).complete()
    with pytest.raises(TypeError, match="GadgetV1alpha1 is not a version of climate"):
        webhook_managed_by(manager).for_(ThermostatV1).with_conversion(GadgetV1alpha1).complete()
    assert manager.webhook_server.paths == []


async def _get(session: aiohttp.ClientSession, url: str) -> tuple[int, str]:
    async with session.get(url) as resp:
        return resp.status, await resp.text()


async def _post(
    session: aiohttp.ClientSession, url: str, body: Any, context: ssl.SSLContext
) -> tuple[int, bytes]:
    headers = {"Content-Type": "application/json"}
    async with session.post(url, data=orjson.dumps(body), headers=headers, ssl=context) as resp:
        return resp.status, await resp.read()


async def test_manager_probes_and_counts_its_webhooks(tmp_path: Path) -> None:
    """/readyz does a TLS handshake with the webhook server; /metrics counts user-code panics."""
    async with Environment() as env:
        options = Options(
            metrics_bind_address="127.0.0.1:0",
            health_probe_bind_address="127.0.0.1:0",
            cache_sync_timeout=20,
            webhook_server=Server(host="127.0.0.1", port=0, cert_dir=env.webhook_cert_dir),
        )
        manager = Manager(env.config, options)
        webhook_managed_by(manager).for_(MySrv).with_validator(Checks()).complete()
        webhook_managed_by(manager).for_(GadgetV1).with_conversion(GadgetV1alpha1).complete()
        trust = ssl.create_default_context(cadata=env.webhook_ca_bundle.decode())
        async with running(manager), aiohttp.ClientSession() as session:
            assert manager.probe_server is not None
            assert manager.metrics_server is not None
            probes = f"http://127.0.0.1:{manager.probe_server.port}"
            scrape = f"http://127.0.0.1:{manager.metrics_server.port}/metrics"
            webhooks = f"https://127.0.0.1:{manager.webhook_server.port}"
            status, text = await _get(session, f"{probes}/readyz?verbose")
            assert (status, "[+]webhook ok" in text) == (200, True)

            _, before = await _get(session, scrape)
            crash = review("DELETE", None, old=mysrv("crash", name="a"))
            status, body = await _post(session, webhooks + VALIDATE, crash, trust)
            assert status == 200
            assert orjson.loads(body)["response"]["status"]["code"] == 500
            gadget = {
                "apiVersion": "tools.example.com/v1alpha1",
                "kind": "Gadget",
                "metadata": {"name": "g"},
            }
            conversion = {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "ConversionReview",
                "request": {
                    "uid": "c",
                    "desiredAPIVersion": "tools.example.com/v1",
                    "objects": [gadget],
                },
            }
            status, body = await _post(session, webhooks + "/convert", conversion, trust)
            answer = ConversionReview.model_validate_json(body).response
            assert status == 200
            assert answer is not None
            assert answer.result["status"] == "Failure"
            assert "RuntimeError: converter bug" in answer.result["message"]
            _, after = await _get(session, scrape)
            assert metric(after, PANICS) == metric(before, PANICS) + 1
            assert metric(after, CONVERSION_PANICS) == metric(before, CONVERSION_PANICS) + 1
            for path in (VALIDATE, "/convert"):
                labels = {"webhook": path, "code": "200"}
                assert metric(after, REQUESTS, **labels) == metric(before, REQUESTS, **labels) + 1

            # A certificate loaded without its key: the port listens, handshakes fail.
            ca = generate_ca()
            broken, other = issue_serving_cert(ca), issue_serving_cert(ca)
            (tmp_path / "c.pem").write_bytes(broken.cert_pem)
            (tmp_path / "k.pem").write_bytes(other.key_pem)
            with pytest.raises(ssl.SSLError):
                manager.webhook_server.certs.context.load_cert_chain(
                    tmp_path / "c.pem", tmp_path / "k.pem"
                )
            status, text = await _get(session, f"{probes}/readyz/webhook")
            assert status == 500
            assert "not reachable over TLS" in text
