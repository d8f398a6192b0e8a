"""Fixtures for webhook tests: typed resources, certificates and a running server."""

from __future__ import annotations

import asyncio
import io
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Self

import aiohttp
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families
from pydantic import Field

from pyctrl.certs import (
    CertificateAuthority,
    generate_ca,
    issue_serving_cert,
    write_cert_dir,
)
from pyctrl.meta import KubeModel
from pyctrl.resource import CustomResource
from pyctrl.webhook import (
    AdmissionResponse,
    AdmissionReview,
    FieldError,
    InvalidObjectError,
    Server,
    UserInfo,
    current_request,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path


class MySrvSpec(KubeModel):
    name: str = ""
    port: Annotated[int, Field(ge=0, le=70000)] | None = None
    image: str | None = None


class MySrv(CustomResource, group="myapp.example.com", version="v1alpha1"):
    spec: MySrvSpec = Field(default_factory=MySrvSpec)


class Defaults:
    """Port defaults to 80; the image to nginx."""

    async def default(self, obj: MySrv) -> None:
        if obj.spec.port is None:
            obj.spec.port = 80
        if obj.spec.image is None:
            obj.spec.image = "nginx"


class Checks:
    """Port in 1..65535, name required and immutable; deletes of 'keep' refused."""

    seen: list[tuple[bool, UserInfo]]
    """dryRun and userInfo of each create, as current_request() showed them."""

    def __init__(self) -> None:
        self.seen = []

    async def validate_create(self, obj: MySrv) -> list[str] | None:
        request = current_request()
        # Not the whole request: the fuzz tests count every byte the server keeps.
        self.seen.append((request.dry_run, request.user_info))
        return self._check(obj)

    async def validate_update(self, old: MySrv, new: MySrv) -> list[str] | None:
        if old.spec.name != new.spec.name:
            raise InvalidObjectError(
                "spec.name is immutable", [FieldError("spec.name", "field is immutable")]
            )
        return self._check(new)

    async def validate_delete(self, obj: MySrv) -> list[str] | None:
        if obj.metadata.name == "keep":
            raise InvalidObjectError("this MySrv is protected")
        if obj.metadata.name == "crash":
            raise RuntimeError("validator bug")
        return None

    def _check(self, obj: MySrv) -> list[str] | None:
        errors = []
        if not obj.spec.name:
            errors.append(FieldError("spec.name", "Required value", "FieldValueRequired"))
        if obj.spec.port is not None and not 1 <= obj.spec.port <= 65535:
            errors.append(
                FieldError("spec.port", f"Invalid value: {obj.spec.port}: must be 1-65535")
            )
        if errors:
            raise InvalidObjectError("; ".join(f"{e.field}: {e.message}" for e in errors), errors)
        return ["port 8080 is often taken"] if obj.spec.port == 8080 else None


class ThermostatSpecV1(KubeModel):
    target_celsius: float
    mode: str = "cool"
    schedule: list[str] = Field(default_factory=list)


class ThermostatV1(CustomResource, group="climate.example.com", version="v1", kind="Thermostat"):
    spec: ThermostatSpecV1


class ThermostatSpecV1alpha1(KubeModel):
    target_fahrenheit: float


class ThermostatV1alpha1(
    CustomResource,
    group="climate.example.com",
    version="v1alpha1",
    kind="Thermostat",
    storage=False,
):
    spec: ThermostatSpecV1alpha1

    def to_hub(self) -> ThermostatV1:
        return ThermostatV1(
            metadata=self.metadata,
            spec=ThermostatSpecV1(
                target_celsius=round((self.spec.target_fahrenheit - 32) / 1.8, 2)
            ),
        )

    @classmethod
    def from_hub(cls, hub: ThermostatV1) -> Self:
        return cls(
            metadata=hub.metadata,
            spec=ThermostatSpecV1alpha1(
                target_fahrenheit=round(hub.spec.target_celsius * 1.8 + 32, 2)
            ),
        )


class GadgetSpec(KubeModel):
    size: int = 0


class GadgetV1(CustomResource, group="tools.example.com", version="v1", kind="Gadget"):
    spec: GadgetSpec = Field(default_factory=GadgetSpec)


class GadgetV1alpha1(
    CustomResource, group="tools.example.com", version="v1alpha1", kind="Gadget", storage=False
):
    """A spoke whose conversion code is broken."""

    spec: GadgetSpec = Field(default_factory=GadgetSpec)

    def to_hub(self) -> GadgetV1:
        raise RuntimeError("converter bug")

    @classmethod
    def from_hub(cls, hub: GadgetV1) -> Self:
        raise RuntimeError("converter bug")


def review(
    operation: str, obj: dict[str, Any] | None, old: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """An AdmissionReview request as the API server sends it."""
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "uid-1",
            "kind": {"group": "myapp.example.com", "version": "v1alpha1", "kind": "MySrv"},
            "resource": {"group": "myapp.example.com", "version": "v1alpha1", "resource": "mysrvs"},
            "name": "web",
            "namespace": "default",
            "operation": operation,
            "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
            "object": obj,
            "oldObject": old,
            "dryRun": False,
            **extra,
        },
    }


def mysrv(obj_name: str = "web", **spec: Any) -> dict[str, Any]:
    """A MySrv named ``obj_name`` in wire form, with ``spec`` as given."""
    return {
        "apiVersion": "myapp.example.com/v1alpha1",
        "kind": "MySrv",
        "metadata": {"name": obj_name, "namespace": "default"},
        "spec": spec,
    }


@dataclass
class Served:
    """A running webhook server and how to reach it."""

    server: Server
    url: str
    ca: CertificateAuthority
    cert_dir: Path
    ssl: ssl.SSLContext
    checks: Checks

    async def post(
        self, path: str, body: bytes, content_type: str = "application/json"
    ) -> tuple[int, bytes]:
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                self.url + path,
                data=io.BytesIO(body),
                headers={"Content-Type": content_type},
                ssl=self.ssl,
            ) as resp,
        ):
            return resp.status, await resp.read()

    async def admit(self, path: str, body: dict[str, Any]) -> AdmissionResponse:
        """POST an AdmissionReview; the 200 answer's response, checked against the model."""
        status, answer = await self.post(path, orjson.dumps(body))
        assert status == 200, answer
        response = AdmissionReview.model_validate_json(answer).response
        assert response is not None
        return response


def metric(text: str, name: str, **labels: str) -> float:
    """The value of sample ``name`` with ``labels`` in Prometheus text ``text`` (0 if absent)."""
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    return 0.0


@pytest.fixture
def cert_dir(tmp_path: Path) -> tuple[Path, CertificateAuthority]:
    ca = generate_ca()
    write_cert_dir(tmp_path / "certs", issue_serving_cert(ca))
    return tmp_path / "certs", ca


@pytest.fixture
async def served(cert_dir: tuple[Path, CertificateAuthority]) -> AsyncIterator[Served]:
    from pyctrl.webhook import register_conversion, register_defaulter, register_validator

    directory, ca = cert_dir
    server = Server(host="127.0.0.1", port=0, cert_dir=directory, reload_interval=0.05)
    register_defaulter(server, MySrv, Defaults())
    checks = Checks()
    register_validator(server, MySrv, checks)
    register_conversion(server, ThermostatV1, [ThermostatV1alpha1])
    register_conversion(server, GadgetV1, [GadgetV1alpha1])
    client_ssl = ssl.create_default_context(cadata=ca.cert_pem.decode())
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(server.start())
        async with asyncio.timeout(10):
            await server.wait_started()
        yield Served(server, f"https://127.0.0.1:{server.port}", ca, directory, client_ssl, checks)
        task.cancel()
