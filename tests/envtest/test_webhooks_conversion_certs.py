"""Self-managed certificates for a conversion webhook: the caBundle in a CRD's spec.conversion.

An `Operator(cert_mode="self-managed")` serves conversion between Thermostat v1 (the hub,
stored) and v1alpha1 from the pair a `SecretCertificates` keeps in its webhook server's
directory; its `CertRotator` publishes the CA bundle into the CRD's
``spec.conversion.webhook.clientConfig.caBundle``, the one place the API server reads it
from to check the webhook's certificate. While a client keeps writing and reading at
v1alpha1 (every call converted by the webhook), a `FakeClock` advanced past the CA's
rotation point rotates the CA and then the serving pair, and the old CA leaves the
bundle: no call fails.

It runs on the embedded server in `nox -s tests` and on the real CRD-only server in `nox
-s realserver`, where the caller of the webhook is apiextensions-apiserver itself (Go's
TLS checks against the CRD's caBundle). That server has no core group, so no Secrets:
there the Secret is kept by an embedded server beside it, reached by a client that sends
``/api/...`` there; the CRD, the objects and every conversion call are the real server's.
"""

from __future__ import annotations

import asyncio
import base64
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

import orjson
from cryptography import x509

from pyctrl.app import Operator, self_managed_certificates
from pyctrl.builder import webhook_managed_by
from pyctrl.client import Client, RESTClient
from pyctrl.clock import FakeClock
from pyctrl.envtest import Environment
from pyctrl.errors import NotFoundError
from pyctrl.manager import Manager, Options
from pyctrl.meta import KubeModel, ObjectMeta
from pyctrl.resource import CustomResource
from pyctrl.testing import eventually, running
from pyctrl.webhook import CertRotator, RotationOptions, SecretCertificates, Server
from tests.webhook.rotation import Traffic, passes, served_issuer

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from kubernetes_asyncio.client import Configuration

    from pyctrl.client import Response
    from pyctrl.config import Config

GROUP = "certconversion.pyctrl.dev"
CRD = f"thermostats.{GROUP}"
CRD_PATH = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD}"
SECRET = "thermo-webhook-server-cert"
HOSTS = ["localhost", "127.0.0.1"]
OPTIONS = RotationOptions(check_interval=600, sync_interval=30)
DAY = 86400.0


class ThermostatSpec(KubeModel):
    target_celsius: float


class Thermostat(CustomResource, group=GROUP, version="v1"):
    """The hub, stored."""

    spec: ThermostatSpec


class ThermostatSpecV1alpha1(KubeModel):
    target_fahrenheit: float


class ThermostatV1alpha1(
    CustomResource, group=GROUP, version="v1alpha1", kind="Thermostat", storage=False
):
    """The older version, served through the conversion webhook."""

    spec: ThermostatSpecV1alpha1

    def to_hub(self) -> Thermostat:
        celsius = round((self.spec.target_fahrenheit - 32) / 1.8, 2)
        return Thermostat(metadata=self.metadata, spec=ThermostatSpec(target_celsius=celsius))

    @classmethod
    def from_hub(cls, hub: Thermostat) -> Self:
        fahrenheit = round(hub.spec.target_celsius * 1.8 + 32, 2)
        return cls(metadata=hub.metadata, spec=ThermostatSpecV1alpha1(target_fahrenheit=fahrenheit))


def setup(manager: Manager) -> None:
    webhook_managed_by(manager).for_(Thermostat).with_conversion(ThermostatV1alpha1).complete()


OPERATOR = Operator(
    name="thermo", types=[Thermostat, ThermostatV1alpha1], setup=setup, cert_mode="self-managed"
)


class CoreElsewhere(RESTClient):
    """A client of the server under test whose core-group requests (``/api/``) go to ``core``."""

    def __init__(self, config: Config | Configuration, core: RESTClient) -> None:
        super().__init__(config)
        self.core = core

    async def request(self, method: str, path: str, *args: Any, **kwargs: Any) -> Response:
        if path.startswith("/api/"):
            return await self.core.request(method, path, *args, **kwargs)
        return await super().request(method, path, *args, **kwargs)


async def serves_secrets(rest: RESTClient) -> bool:
    try:
        await rest.request("GET", "/api/v1")
    except NotFoundError:
        return False
    return True


async def generated_crd(port: int) -> dict[str, Any]:
    """The operator's generated CRD, its webhook Service replaced by a URL of this machine."""
    files = await OPERATOR.manifests()
    [crd] = [obj for objs in files.values() for obj in objs if obj["metadata"]["name"] == CRD]
    assert "cert-manager.io/inject-ca-from" not in crd["metadata"].get("annotations", {})
    client = crd["spec"]["conversion"]["webhook"]["clientConfig"]
    assert "caBundle" not in client
    client["url"] = f"https://127.0.0.1:{port}{client.pop('service')['path']}"
    return dict(crd)


async def crd_bundle(rest: RESTClient) -> bytes:
    crd = (await rest.request("GET", CRD_PATH)).json()
    encoded = crd["spec"]["conversion"]["webhook"]["clientConfig"].get("caBundle", "")
    return base64.b64decode(encoded)


async def secret_data(rest: RESTClient, namespace: str) -> dict[str, bytes]:
    path = f"/api/v1/namespaces/{namespace}/secrets/{SECRET}"
    obj = (await rest.request("GET", path)).json()
    return {k: base64.b64decode(v) for k, v in obj["data"].items()}


async def serving_the_current_crd(rest: RESTClient, namespace: str, mark: str) -> None:
    """Wait until the API server serves the thermostats from the CRD as it is now.

    The API server rebuilds what serves a custom resource (conversion webhook client and
    its CA bundle included) from the CRD after each change, as its informer sees it; a
    real rotator leaves a check interval (10 minutes) for that before it swaps the serving
    pair, time the FakeClock skips. The witness: a deprecation warning set on v1alpha1
    after the bundle was published comes back in the answers, so what serves them was
    built from a CRD no older than the bundle.
    """
    patch = [
        {"op": "add", "path": "/spec/versions/1/deprecated", "value": True},
        {"op": "add", "path": "/spec/versions/1/deprecationWarning", "value": mark},
    ]
    await rest.request(
        "PATCH", CRD_PATH, body=orjson.dumps(patch), content_type="application/json-patch+json"
    )

    async def warned() -> bool:
        path = f"/apis/{GROUP}/v1alpha1/namespaces/{namespace}/thermostats"
        return mark in (await rest.request("GET", path)).headers.get("Warning", "")

    await eventually(warned, message=f"the warning {mark!r} in answers at v1alpha1")


class Converter(Traffic):
    """Writes at v1alpha1 and reads back at v1alpha1 until stopped, keeping the failures.

    Each write is converted to v1 for storage, each read back to v1alpha1: two webhook
    calls a round.
    """

    def __init__(self, config: Configuration, namespace: str) -> None:
        super().__init__()
        self.config, self.namespace = config, namespace

    async def run(self) -> None:
        async with Client.from_config(self.config) as client:
            while not self.stop.is_set():
                name = f"t-{self.made}"
                fahrenheit = 50.0 + 9 * (self.made % 10)  # whole Celsius: exact both ways
                made = ThermostatV1alpha1(
                    metadata=ObjectMeta(name=name, namespace=self.namespace),
                    spec=ThermostatSpecV1alpha1(target_fahrenheit=fahrenheit),
                )
                try:
                    await client.create(made)
                    read = await client.get(ThermostatV1alpha1, name, self.namespace)
                    if read.spec.target_fahrenheit != fahrenheit:
                        self.failures.append(f"{name}: read back {read.spec}")
                except Exception as exc:
                    self.failures.append(f"{name}: {exc}")
                self.made += 1


def certificates(
    manager: Manager, rest: RESTClient, namespace: str, clock: FakeClock
) -> CertRotator:
    """What ``--webhook-cert-secret`` sets up, with ``rest`` reaching the Secret."""
    if rest is manager.rest:
        return self_managed_certificates(
            OPERATOR, manager, namespace, SECRET, hosts=HOSTS, options=OPTIONS, clock=clock
        )
    manager.webhook_server.cert_provider = SecretCertificates(
        rest, namespace, SECRET, HOSTS, options=OPTIONS, clock=clock
    )
    rotator = CertRotator(rest, namespace, SECRET, HOSTS, crds=[CRD], options=OPTIONS, clock=clock)
    manager.add(rotator)
    return rotator


@dataclass
class Deployed:
    """The operator running, its CRD installed with the caBundle published."""

    rest: RESTClient  # of the server under test
    secrets: RESTClient  # where the Secret is
    secret_ns: str
    server: Server
    rotator: CertRotator
    clock: FakeClock


@asynccontextmanager
async def deployed(env: Environment, ns: str, tmp_path: Path) -> AsyncIterator[Deployed]:
    """Start the operator, install its generated CRD, and let the rotator publish into it."""
    clock = FakeClock()
    async with AsyncExitStack() as stack:
        rest = await stack.enter_async_context(RESTClient(env.config))
        server = Server(host="127.0.0.1", port=0, cert_dir=tmp_path / "certs")
        manager = Manager(env.config, Options(metrics_bind_address="0", webhook_server=server))
        OPERATOR.setup(manager)
        if await serves_secrets(rest):
            secrets, secret_ns = manager.rest, ns
        else:  # the CRD-only server: the Secret on an embedded server beside it
            beside = await stack.enter_async_context(Environment(mode="embedded"))
            core = await stack.enter_async_context(RESTClient(beside.config))
            secrets = await stack.enter_async_context(CoreElsewhere(env.config, core))
            secret_ns = "default"
        rotator = certificates(manager, secrets, secret_ns, clock)
        assert rotator.targets == [CRD_PATH]
        await stack.enter_async_context(running(manager))
        await server.wait_started()
        async with asyncio.timeout(30):
            await rotator.checked.wait()  # its first pass: the Secret made, no CRD yet
        await env.install_crds([await generated_crd(server.port)])
        await passes(rotator, clock, OPTIONS.check_interval)  # publishes into the CRD
        yield Deployed(rest, secrets, secret_ns, server, rotator, clock)


async def test_conversion_keeps_working_through_a_ca_rotation(
    env: Environment, ns: str, tmp_path: Path
) -> None:
    """The rotator keeps the CRD's caBundle current: no conversion fails while the CA turns."""
    async with deployed(env, ns, tmp_path) as op:
        rest, server, rotator, clock = op.rest, op.server, op.rotator, op.clock
        secrets, secret_ns = op.secrets, op.secret_ns
        first = await secret_data(secrets, secret_ns)
        assert await crd_bundle(rest) == first["ca.crt"]
        old_issuer = await served_issuer(server.port)
        converter = Converter(env.config, ns)
        async with asyncio.TaskGroup() as group:
            group.create_task(converter.run())
            await converter.made_more()
            # 276 days on, the CA is due: the new one joins the bundle, published to the CRD.
            await passes(rotator, clock, 276 * DAY)
            assert rotator.rotations == ["ca"]
            rotated = await secret_data(secrets, secret_ns)
            bundle = x509.load_pem_x509_certificates(rotated["ca.crt"])
            assert len(bundle) == 2
            assert rotated["tls.crt"] == first["tls.crt"]
            assert await crd_bundle(rest) == rotated["ca.crt"]
            await serving_the_current_crd(rest, ns, "bundle of two CAs published")
            await converter.made_more()
            # A check interval later: a serving pair signed by the new CA, then served.
            await passes(rotator, clock, OPTIONS.check_interval)
            assert rotator.rotations == ["ca", "certificate"]

            async def serves_new() -> bool:
                clock.advance(OPTIONS.sync_interval)  # the replica reads the Secret again
                return await served_issuer(server.port) == bundle[0].subject.rfc4514_string()

            await eventually(serves_new)
            assert old_issuer == bundle[1].subject.rfc4514_string()
            await converter.made_more()
            # Past the old CA's expiry it leaves the CRD's bundle; conversions go on.
            await passes(rotator, clock, 90 * DAY)
            pruned = x509.load_pem_x509_certificates(await crd_bundle(rest))
            assert pruned == bundle[:1]
            await converter.made_more()
            converter.stop.set()
        assert converter.failures == []
        assert converter.made > 12
        # Written at v1alpha1, stored at v1: converted by the webhook.
        async with Client.from_config(env.config) as client:
            stored = await client.get(Thermostat, "t-0", ns)
        assert stored.spec.target_celsius == 10.0
