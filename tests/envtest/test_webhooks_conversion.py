"""Conversion webhooks through the embedded API server: a CRD stored at v1, served at v1alpha1."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

import aiohttp
import orjson
import pytest

from pyctrl._apiserver.options import install
from pyctrl.crd import crd_for
from pyctrl.envtest import Environment
from pyctrl.meta import KubeModel
from pyctrl.resource import CustomResource
from pyctrl.webhook import (
    ClientConfig,
    Server,
    conversion_stanza,
    register_conversion,
    register_defaulter,
    webhook_configurations,
)

from .test_webhooks_support import (
    GROUP,
    Certs,
    Rest,
    dead_url,
    make_certs,
    running,
    scripted_webhook,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path


class ThermostatSpecV1(KubeModel):
    target_celsius: float
    mode: str | None = None


class ThermostatV1(CustomResource, group=GROUP, version="v1", kind="Thermostat"):
    spec: ThermostatSpecV1


class ThermostatSpecV1alpha1(KubeModel):
    target_fahrenheit: float


class ThermostatV1alpha1(
    CustomResource, group=GROUP, version="v1alpha1", kind="Thermostat", storage=False
):
    spec: ThermostatSpecV1alpha1

    def to_hub(self) -> ThermostatV1:
        celsius = round((self.spec.target_fahrenheit - 32) / 1.8, 2)
        return ThermostatV1(metadata=self.metadata, spec=ThermostatSpecV1(target_celsius=celsius))

    @classmethod
    def from_hub(cls, hub: ThermostatV1) -> Self:
        fahrenheit = round(hub.spec.target_celsius * 1.8 + 32, 2)
        return cls(metadata=hub.metadata, spec=ThermostatSpecV1alpha1(target_fahrenheit=fahrenheit))


class ModeDefaults:
    """A thermostat's mode defaults to auto."""

    async def default(self, obj: ThermostatV1) -> None:
        if obj.spec.mode is None:
            obj.spec.mode = "auto"


V1 = f"/apis/{GROUP}/v1/namespaces/default/thermostats"
V1ALPHA1 = f"/apis/{GROUP}/v1alpha1/namespaces/default/thermostats"


def v1(name: str, celsius: float, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Thermostat",
        "metadata": {"name": name},
        "spec": {"targetCelsius": celsius, **spec},
    }


def v1alpha1(name: str, fahrenheit: float) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "Thermostat",
        "metadata": {"name": name},
        "spec": {"targetFahrenheit": fahrenheit},
    }


def thermostat_crd(url: str, certs: Certs | None) -> dict[str, Any]:
    """The two-version CRD converting through ``url`` + /convert."""
    client = ClientConfig(url=url, ca_bundle=certs.ca.cert_pem if certs else b"")
    return crd_for(ThermostatV1, ThermostatV1alpha1, conversion=conversion_stanza(client))


@contextlib.asynccontextmanager
async def api_server(crd: dict[str, Any]) -> AsyncIterator[Rest]:
    """An embedded API server with webhooks installed and ``crd`` created."""
    async with Environment(crds=[crd]) as env, aiohttp.ClientSession() as session:
        assert env.server is not None
        install(env.server)
        yield Rest(env, session)


@dataclass
class Stack:
    rest: Rest
    certs: Certs


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    """pyctrl's webhook server converting thermostats and defaulting their mode (at v1)."""
    certs = make_certs(tmp_path / "certs")
    server = Server(host="127.0.0.1", port=0, cert_dir=certs.directory)
    register_conversion(server, ThermostatV1, [ThermostatV1alpha1])
    register_defaulter(server, ThermostatV1, ModeDefaults())
    async with running(server) as url, api_server(thermostat_crd(url, certs)) as rest:
        client = ClientConfig(url=url, ca_bundle=certs.ca.cert_pem)
        await rest.install(*webhook_configurations(server, client))
        yield Stack(rest, certs)


async def test_an_object_created_at_v1alpha1_is_stored_at_v1(stack: Stack) -> None:
    """A write in the served version is converted to the storage version by the webhook."""
    created = await stack.rest.ok("POST", V1ALPHA1, v1alpha1("a", 68.0))
    assert created["apiVersion"] == f"{GROUP}/v1alpha1"
    assert created["spec"] == {"targetFahrenheit": 68.0}
    stored = await stack.rest.ok("GET", f"{V1}/a")
    assert stored["apiVersion"] == f"{GROUP}/v1"
    assert stored["spec"]["targetCelsius"] == 20.0


async def test_get_converts_to_the_requested_version(stack: Stack) -> None:
    """GET in either version returns the object converted to that version."""
    await stack.rest.ok("POST", V1, v1("a", 25.0, mode="heat"))
    old = await stack.rest.ok("GET", f"{V1ALPHA1}/a")
    assert old["apiVersion"] == f"{GROUP}/v1alpha1"
    assert old["spec"] == {"targetFahrenheit": 77.0}
    new = await stack.rest.ok("GET", f"{V1}/a")
    assert new["spec"] == {"targetCelsius": 25.0, "mode": "heat"}


async def test_list_converts_every_item(stack: Stack) -> None:
    """LIST in the served version converts each item; in the storage version none."""
    await stack.rest.ok("POST", V1, v1("a", 0.0))
    await stack.rest.ok("POST", V1ALPHA1, v1alpha1("b", 212.0))
    old = await stack.rest.ok("GET", V1ALPHA1)
    assert [(i["apiVersion"], i["spec"]) for i in old["items"]] == [
        (f"{GROUP}/v1alpha1", {"targetFahrenheit": 32.0}),
        (f"{GROUP}/v1alpha1", {"targetFahrenheit": 212.0}),
    ]
    new = await stack.rest.ok("GET", V1)
    assert [i["spec"]["targetCelsius"] for i in new["items"]] == [0.0, 100.0]


async def test_update_at_v1alpha1_keeps_v1_only_fields(stack: Stack) -> None:
    """An update through v1alpha1 round-trips through the webhook without losing v1 fields."""
    await stack.rest.ok("POST", V1, v1("a", 20.0, mode="heat"))
    old = await stack.rest.ok("GET", f"{V1ALPHA1}/a")
    old["spec"]["targetFahrenheit"] = 86.0
    await stack.rest.ok("PUT", f"{V1ALPHA1}/a", old)
    new = await stack.rest.ok("GET", f"{V1}/a")
    assert new["spec"] == {"targetCelsius": 30.0, "mode": "heat"}


async def test_watch_in_the_storage_version_sees_converted_writes(stack: Stack) -> None:
    """A watch at v1 receives objects written at v1alpha1, converted to v1."""
    rest = stack.rest
    async with rest.session.get(
        rest.base + V1, params={"watch": "1"}, headers=rest.headers, ssl=rest.ssl
    ) as stream:
        assert stream.status == 200
        await rest.ok("POST", V1ALPHA1, v1alpha1("a", 50.0))
        async with asyncio.timeout(10):
            line = await stream.content.readline()
    event = orjson.loads(line)
    assert event["type"] == "ADDED"
    assert event["object"]["apiVersion"] == f"{GROUP}/v1"
    assert event["object"]["spec"]["targetCelsius"] == 10.0


async def test_watch_in_a_served_version_converts_every_event(stack: Stack) -> None:
    """A watch at v1alpha1 gets initial, new and deleted objects, each converted once."""
    rest = stack.rest
    await rest.ok("POST", V1, v1("a", 20.0))
    events: list[dict[str, Any]] = []
    async with rest.session.get(
        rest.base + V1ALPHA1, params={"watch": "1"}, headers=rest.headers, ssl=rest.ssl
    ) as stream:
        assert stream.status == 200
        async with asyncio.timeout(10):
            events.append(orjson.loads(await stream.content.readline()))
            await rest.ok("POST", V1, v1("b", 30.0))
            events.append(orjson.loads(await stream.content.readline()))
            await rest.ok("DELETE", f"{V1}/a")
            events.append(orjson.loads(await stream.content.readline()))
    assert [
        (e["type"], e["object"]["apiVersion"], e["object"]["metadata"]["name"], e["object"]["spec"])
        for e in events
    ] == [
        ("ADDED", f"{GROUP}/v1alpha1", "a", {"targetFahrenheit": 68.0}),
        ("ADDED", f"{GROUP}/v1alpha1", "b", {"targetFahrenheit": 86.0}),
        ("DELETED", f"{GROUP}/v1alpha1", "a", {"targetFahrenheit": 68.0}),
    ]


async def test_defaulting_at_v1_applies_to_requests_at_v1alpha1(stack: Stack) -> None:
    """A v1 mutating webhook also defaults v1alpha1 writes, through conversion both ways."""
    await stack.rest.ok("POST", V1ALPHA1, v1alpha1("a", 68.0))
    stored = await stack.rest.ok("GET", f"{V1}/a")
    assert stored["spec"] == {"targetCelsius": 20.0, "mode": "auto"}


async def test_a_dead_conversion_webhook_fails_reads_of_the_other_version() -> None:
    """Without its conversion webhook the served version fails with 500; storage still reads."""
    async with api_server(thermostat_crd(dead_url(), None)) as rest:
        crd = await rest.ok(
            "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/thermostats.{GROUP}"
        )
        url = crd["spec"]["conversion"]["webhook"]["clientConfig"]["url"]
        port = url.split(":")[2].split("/")[0]
        await rest.ok("POST", V1, v1("a", 1.0))
        response = await rest.request("GET", f"{V1ALPHA1}/a")
        assert response.status == 500
        assert response.body == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": (
                f"conversion webhook for {GROUP}/v1, Kind=Thermostat failed: Post "
                f'"{url}?timeout=30s": dial tcp 127.0.0.1:{port}: connect: connection refused'
            ),
            "code": 500,
        }
        assert (await rest.request("POST", V1ALPHA1, v1alpha1("b", 1.0))).status == 500
        assert (await rest.request("GET", f"{V1}/a")).status == 200


@contextlib.asynccontextmanager
async def scripted_stack(
    tmp_path: Path, respond: Any
) -> AsyncIterator[tuple[Rest, list[dict[str, Any]]]]:
    """An API server whose CRD converts through a hand-written webhook answer."""
    certs = make_certs(tmp_path / "certs")
    async with (
        scripted_webhook(certs, respond) as script,
        api_server(thermostat_crd(script.url, certs)) as rest,
    ):
        yield rest, script.received


def converted(body: dict[str, Any], objects: list[dict[str, Any]]) -> dict[str, Any]:
    """A successful ConversionReview answer to ``body``."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "response": {
            "uid": body["request"]["uid"],
            "convertedObjects": objects,
            "result": {"status": "Success"},
        },
    }


def relabel(obj: dict[str, Any], version: str) -> dict[str, Any]:
    """``obj`` at ``version`` with its spec kept, a label added and its metadata tampered."""
    out: dict[str, Any] = orjson.loads(orjson.dumps(obj))
    out["apiVersion"] = f"{GROUP}/{version}"
    out["metadata"]["labels"] = {"converted": "yes"}
    out["metadata"]["resourceVersion"] = "999999"
    return out


async def test_conversion_keeps_metadata_except_labels_and_annotations(tmp_path: Path) -> None:
    """Converted objects keep the stored metadata; only labels and annotations may change."""

    async def respond(body: dict[str, Any]) -> Any:
        desired = body["request"]["desiredAPIVersion"].split("/")[1]
        return converted(body, [relabel(o, desired) for o in body["request"]["objects"]])

    async with scripted_stack(tmp_path, respond) as (rest, received):
        created = await rest.ok("POST", V1, v1("a", 1.0))
        old = await rest.ok("GET", f"{V1ALPHA1}/a")
    assert old["apiVersion"] == f"{GROUP}/v1alpha1"
    assert old["metadata"]["labels"] == {"converted": "yes"}
    assert old["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    request = received[0]["request"]
    assert received[0]["apiVersion"] == "apiextensions.k8s.io/v1"
    assert request["desiredAPIVersion"] == f"{GROUP}/v1alpha1"
    assert [o["metadata"]["name"] for o in request["objects"]] == ["a"]
    assert received[0]["query"] == {"timeout": "30s"}


async def test_a_conversion_answer_must_keep_the_object_s_identity(tmp_path: Path) -> None:
    """A converted object with another name is refused with kube-apiserver's message."""

    async def respond(body: dict[str, Any]) -> Any:
        objects = [relabel(o, "v1alpha1") for o in body["request"]["objects"]]
        objects[0]["metadata"]["name"] = "other"
        return converted(body, objects)

    async with scripted_stack(tmp_path, respond) as (rest, _):
        await rest.ok("POST", V1, v1("a", 1.0))
        response = await rest.request("GET", f"{V1ALPHA1}/a")
    assert response.status == 500
    assert response.body["message"] == (
        f"conversion webhook for {GROUP}/v1, Kind=Thermostat returned invalid object: "
        "must have the same name: a != other"
    )


async def test_a_conversion_answer_must_convert_every_object(tmp_path: Path) -> None:
    """An answer with fewer objects than asked for fails the request."""

    async def respond(body: dict[str, Any]) -> Any:
        return converted(body, [])

    async with scripted_stack(tmp_path, respond) as (rest, _):
        await rest.ok("POST", V1, v1("a", 1.0))
        response = await rest.request("GET", V1ALPHA1)
    assert response.status == 500
    assert response.body["message"] == (
        f"conversion webhook for {GROUP}/v1, Kind=Thermostat returned 0 objects, expected 1"
    )


async def test_a_failed_conversion_result_is_reported(tmp_path: Path) -> None:
    """A ConversionReview answering Failure fails the request with its message."""

    async def respond(body: dict[str, Any]) -> Any:
        answer = converted(body, [])
        answer["response"]["result"] = {"status": "Failure", "message": "cannot go back in time"}
        return answer

    async with scripted_stack(tmp_path, respond) as (rest, _):
        await rest.ok("POST", V1, v1("a", 1.0))
        response = await rest.request("GET", f"{V1ALPHA1}/a")
    assert response.body["message"] == (
        f"conversion webhook for {GROUP}/v1, Kind=Thermostat failed: cannot go back in time"
    )
