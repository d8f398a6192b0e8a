"""Environment.install_webhooks: a local pyctrl webhook server behind the embedded API server."""

from __future__ import annotations

import asyncio
import base64
from typing import TYPE_CHECKING, Any

import orjson
import pytest

from pyctrl.certs import generate_ca, issue_serving_cert, write_cert_dir
from pyctrl.client import Client, RESTClient
from pyctrl.crd import crd_for
from pyctrl.envtest import Environment, EnvtestError
from pyctrl.errors import InvalidError, NotFoundError
from pyctrl.meta import ObjectMeta
from pyctrl.webhook import Server, register_conversion, register_defaulter, register_validator
from tests.webhook.conftest import (
    Checks,
    Defaults,
    MySrv,
    MySrvSpec,
    ThermostatSpecV1,
    ThermostatSpecV1alpha1,
    ThermostatV1,
    ThermostatV1alpha1,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path


ADMISSION = "/apis/admissionregistration.k8s.io/v1"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _server(cert_dir: Path) -> Server:
    server = Server(host="127.0.0.1", port=0, cert_dir=cert_dir)
    register_defaulter(server, MySrv, Defaults())
    register_validator(server, MySrv, Checks())
    register_conversion(server, ThermostatV1, [ThermostatV1alpha1])
    return server


@pytest.fixture
async def webhooked() -> AsyncIterator[tuple[Environment, Client]]:
    crds = [crd_for(MySrv), crd_for(ThermostatV1, ThermostatV1alpha1)]
    async with Environment(crds=crds) as env, asyncio.TaskGroup() as tg:
        # The certificate Environment generates, as WebhookInstallOptions does.
        server = _server(env.webhook_cert_dir)
        task = tg.create_task(server.start())
        configurations = await env.install_webhooks(server)
        assert {c["kind"] for c in configurations} == {
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
        }
        async with RESTClient(env.config) as rest:
            yield env, Client(rest)
        task.cancel()


async def _get(rest: RESTClient, path: str) -> dict[str, Any] | None:
    try:
        response = await rest.request("GET", path)
    except NotFoundError:
        return None
    result: dict[str, Any] = orjson.loads(response.body)
    return result


async def test_environment_generates_the_webhook_certificate() -> None:
    """webhook_cert_dir holds a pair signed by webhook_ca_bundle, which the configs carry."""
    env = Environment(crds=[crd_for(MySrv)])
    with pytest.raises(EnvtestError, match="not started"):
        _ = env.webhook_cert_dir
    async with env, asyncio.TaskGroup() as tg:
        directory = env.webhook_cert_dir
        assert sorted(p.name for p in directory.iterdir()) == ["ca.crt", "tls.crt", "tls.key"]
        assert env.webhook_cert_dir == directory  # generated once
        server = _server(directory)
        task = tg.create_task(server.start())
        configurations = await env.install_webhooks(server)
        bundles = {w["clientConfig"]["caBundle"] for c in configurations for w in c["webhooks"]}
        assert bundles == {base64.b64encode(env.webhook_ca_bundle).decode()}
        # The API server trusts the generated certificate: the validator is reached.
        with pytest.raises(InvalidError, match=r"spec\.name"):
            async with RESTClient(env.config) as rest:
                await Client(rest).create(
                    MySrv(metadata=ObjectMeta(name="bad", namespace="default"))
                )
        task.cancel()
    assert not directory.exists()


async def test_a_server_with_its_own_certificate_needs_a_ca_bundle(tmp_path: Path) -> None:
    """Without ca_bundle, a server serving another directory is refused, naming both."""
    ca = generate_ca()
    write_cert_dir(tmp_path, issue_serving_cert(ca))
    async with Environment(crds=[crd_for(MySrv)]) as env, asyncio.TaskGroup() as tg:
        server = _server(tmp_path)
        task = tg.create_task(server.start())
        with pytest.raises(EnvtestError, match=r"needs ca_bundle.*webhook_cert_dir"):
            await env.install_webhooks(server)
        configurations = await env.install_webhooks(server, ca_bundle=ca.cert_pem)
        assert len(configurations) == 2
        task.cancel()


async def test_stop_on_an_existing_cluster_undoes_install_webhooks() -> None:
    """Created configurations are deleted, replaced ones restored, CRD conversion put back."""
    thermostats = crd_for(ThermostatV1, ThermostatV1alpha1)
    validating = f"{ADMISSION}/validatingwebhookconfigurations"
    mutating = f"{ADMISSION}/mutatingwebhookconfigurations"
    theirs = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "validating-webhook-configuration"},
        "webhooks": [
            {
                "name": "theirs.example.com",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "clientConfig": {"url": "https://127.0.0.1:1/theirs"},
                "rules": [
                    {
                        "apiGroups": ["nothing.example.com"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["nothings"],
                    }
                ],
            }
        ],
    }
    async with Environment(crds=[thermostats]) as cluster, RESTClient(cluster.config) as rest:
        await rest.request("POST", validating, body=orjson.dumps(theirs))
        before = await _get(rest, f"{CRDS}/{thermostats['metadata']['name']}")
        assert before is not None
        async with (
            Environment(
                use_existing_cluster=True,
                kubeconfig=cluster.kubeconfig_path,
                crds=[crd_for(MySrv), thermostats],
            ) as env,
            asyncio.TaskGroup() as tg,
        ):
            server = _server(env.webhook_cert_dir)
            task = tg.create_task(server.start())
            await env.install_webhooks(server)
            replaced = await _get(rest, f"{validating}/validating-webhook-configuration")
            assert replaced is not None
            assert [w["name"] for w in replaced["webhooks"]] == [
                "vmysrv-v1alpha1.myapp.example.com"
            ]
            assert await _get(rest, f"{mutating}/mutating-webhook-configuration") is not None
            live = await _get(rest, f"{CRDS}/{thermostats['metadata']['name']}")
            assert live is not None
            assert live["spec"]["conversion"]["strategy"] == "Webhook"
            task.cancel()
        assert await _get(rest, f"{mutating}/mutating-webhook-configuration") is None
        restored = await _get(rest, f"{validating}/validating-webhook-configuration")
        assert restored is not None
        assert [w["name"] for w in restored["webhooks"]] == ["theirs.example.com"]
        after = await _get(rest, f"{CRDS}/{thermostats['metadata']['name']}")
        assert after is not None
        assert after["spec"]["conversion"] == before["spec"]["conversion"]
        assert await _get(rest, f"{CRDS}/mysrvs.myapp.example.com") is None


async def test_admission_runs_through_the_api_server(webhooked: tuple[Environment, Client]) -> None:
    """Creating through the API server applies the defaulter and the validator."""
    _, client = webhooked
    created = await client.create(
        MySrv(metadata=ObjectMeta(name="web", namespace="default"), spec=MySrvSpec(name="web"))
    )
    assert created.spec.port == 80
    assert created.spec.image == "nginx"
    with pytest.raises(InvalidError) as denied:
        await client.create(
            MySrv(metadata=ObjectMeta(name="bad", namespace="default"), spec=MySrvSpec(port=0))
        )
    assert "spec.name" in str(denied.value)


async def test_conversion_runs_through_the_api_server(
    webhooked: tuple[Environment, Client],
) -> None:
    """An object written at v1alpha1 is stored at v1 by the conversion webhook and read back."""
    _, client = webhooked
    await client.create(
        ThermostatV1alpha1(
            metadata=ObjectMeta(name="t", namespace="default"),
            spec=ThermostatSpecV1alpha1(target_fahrenheit=68.0),
        )
    )
    stored = await client.get(ThermostatV1, "t", "default")
    assert stored.spec.target_celsius == 20.0
    again = await client.get(ThermostatV1alpha1, "t", "default")
    assert again.spec.target_fahrenheit == 68.0


async def test_watch_in_a_spoke_version_is_converted(webhooked: tuple[Environment, Client]) -> None:
    """A watch at v1alpha1 delivers objects the conversion webhook converted from v1."""
    _, client = webhooked
    path = "/apis/climate.example.com/v1alpha1/namespaces/default/thermostats"
    async with client.rest.stream(path, query={"watch": "1"}, read_timeout=30) as lines:
        await client.create(
            ThermostatV1(
                metadata=ObjectMeta(name="w", namespace="default"),
                spec=ThermostatSpecV1(target_celsius=25.0),
            )
        )
        async with asyncio.timeout(15):
            async for line in lines:
                event = orjson.loads(line)
                break
    assert event["type"] == "ADDED"
    assert event["object"]["apiVersion"] == "climate.example.com/v1alpha1"
    assert event["object"]["spec"] == {"targetFahrenheit": 77.0}
