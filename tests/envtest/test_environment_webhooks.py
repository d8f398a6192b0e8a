"""Environment.install_webhooks: a local pyctrl webhook server behind the embedded API server."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import orjson
import pytest

from pyctrl.certs import generate_ca, issue_serving_cert, write_cert_dir
from pyctrl.client import Client, RESTClient
from pyctrl.crd import crd_for
from pyctrl.envtest import Environment
from pyctrl.errors import InvalidError
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


@pytest.fixture
async def webhooked(tmp_path: Path) -> AsyncIterator[tuple[Environment, Client]]:
    ca = generate_ca()
    write_cert_dir(tmp_path, issue_serving_cert(ca))
    server = Server(host="127.0.0.1", port=0, cert_dir=tmp_path)
    register_defaulter(server, MySrv, Defaults())
    register_validator(server, MySrv, Checks())
    register_conversion(server, ThermostatV1, [ThermostatV1alpha1])
    crds = [crd_for(MySrv), crd_for(ThermostatV1, ThermostatV1alpha1)]
    async with Environment(crds=crds) as env, asyncio.TaskGroup() as tg:
        task = tg.create_task(server.start())
        configurations = await env.install_webhooks(server, ca_bundle=ca.cert_pem)
        assert {c["kind"] for c in configurations} == {
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
        }
        async with RESTClient(env.config) as rest:
            yield env, Client(rest)
        task.cancel()


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
