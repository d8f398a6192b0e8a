"""Self-managed webhook certificates on the embedded API server: no cert-manager anywhere.

An `Operator(cert_mode="self-managed")`'s generated manifests are applied as `pyctrl
deploy` would (the webhook configurations pointed at a URL: the embedded server has no
cluster DNS), the operator runs as its ServiceAccount with the generated RBAC, and:
the Secret is made, the caBundle published, objects are admitted and defaulted; a
`FakeClock` advanced past the CA's rotation point rotates while a client keeps creating
objects, none refused; two replicas converge on one Secret.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from cryptography import x509

from pyctrl.app import Operator, self_managed_certificates
from pyctrl.builder import webhook_managed_by
from pyctrl.client import Client, RESTClient
from pyctrl.clock import FakeClock
from pyctrl.crd import crd_for
from pyctrl.envtest import Environment
from pyctrl.errors import NotFoundError
from pyctrl.manager import Manager, Options
from pyctrl.meta import ObjectMeta
from pyctrl.testing import eventually, running
from pyctrl.webhook import CertRotator, RotationOptions, Server
from tests.kubectl import Kubectl

from .conftest import Checks, Defaults, MySrv, MySrvSpec
from .rotation import Traffic, passes, served_issuer

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from kubernetes_asyncio.client import Configuration

NAMESPACE = "demo-system"
SECRET = "demo-webhook-server-cert"
HOSTS = ["localhost", "127.0.0.1"]
OPTIONS = RotationOptions(check_interval=600, sync_interval=30)
DAY = 86400.0


def setup(manager: Manager) -> None:
    webhook_managed_by(manager).for_(MySrv).with_defaulter(Defaults()).with_validator(
        Checks()
    ).complete()


OPERATOR = Operator(name="demo", types=[MySrv], setup=setup, cert_mode="self-managed")


async def _post(rest: RESTClient, obj: dict[str, Any]) -> None:
    group, _, version = obj["apiVersion"].rpartition("/")
    base = f"/apis/{group}/{version}" if group else f"/api/{version}"
    namespace = obj["metadata"].get("namespace")
    where = f"{base}/namespaces/{namespace}" if namespace else base
    plural = obj["kind"].lower() + ("es" if obj["kind"].endswith("s") else "s")
    await rest.request("POST", f"{where}/{plural}", body=orjson.dumps(obj))


async def deploy_like(env: Environment, tmp_path: Path) -> Configuration:
    """Apply the generated Namespace, RBAC and ServiceAccount; return the SA's config."""
    files = await OPERATOR.manifests()
    assert not any(
        obj["apiVersion"].startswith("cert-manager.io") for objs in files.values() for obj in objs
    )
    async with RESTClient(env.config) as rest:
        [namespace, _deployment] = files["manager/manager.yaml"]
        await _post(rest, namespace)
        for name in (
            "rbac/service_account.yaml",
            "rbac/role.yaml",
            "rbac/role_binding.yaml",
            "rbac/leader_election_role.yaml",
            "rbac/webhook_cert_role.yaml",
        ):
            for obj in files[name]:
                await _post(rest, obj)
    kubectl = Kubectl(env.kubeconfig_path, tmp_path / "kubectl-cache", NAMESPACE)
    token = (await kubectl("create", "token", "demo-controller-manager")).out.strip()
    from kubernetes_asyncio.client import Configuration

    config = Configuration(host=env.config.host)
    config.ssl_ca_cert = env.config.ssl_ca_cert
    config.api_key = {"BearerToken": f"Bearer {token}"}
    return config


async def apply_configurations(env: Environment, port: int) -> None:
    """The generated webhook configurations, their Service reference replaced by a URL."""
    files = await OPERATOR.manifests()
    async with RESTClient(env.config) as rest:
        for obj in files["webhook/manifests.yaml"]:
            if obj["kind"] == "Service":
                continue
            for webhook in obj["webhooks"]:
                path = webhook["clientConfig"].pop("service")["path"]
                assert "caBundle" not in webhook["clientConfig"]
                webhook["clientConfig"]["url"] = f"https://127.0.0.1:{port}{path}"
            await _post(rest, obj)


@dataclass
class Replica:
    manager: Manager
    rotator: CertRotator
    cert_dir: Path

    @property
    def server(self) -> Server:
        return self.manager.webhook_server


@asynccontextmanager
async def replica(
    config: Configuration, cert_dir: Path, clock: FakeClock
) -> AsyncIterator[Replica]:
    server = Server(host="127.0.0.1", port=0, cert_dir=cert_dir)
    manager = Manager(config, Options(metrics_bind_address="0", webhook_server=server))
    OPERATOR.setup(manager)
    rotator = self_managed_certificates(
        OPERATOR, manager, NAMESPACE, SECRET, hosts=HOSTS, options=OPTIONS, clock=clock
    )
    async with running(manager):
        await server.wait_started()
        async with asyncio.timeout(30):
            await rotator.checked.wait()  # its first pass, at start
        yield Replica(manager, rotator, cert_dir)


async def secret_data(env: Environment) -> dict[str, bytes]:
    async with RESTClient(env.config) as rest:
        obj = (await rest.request("GET", f"/api/v1/namespaces/{NAMESPACE}/secrets/{SECRET}")).json()
    assert obj["type"] == "kubernetes.io/tls"
    return {k: base64.b64decode(v) for k, v in obj["data"].items()}


async def published_bundles(env: Environment) -> set[bytes]:
    async with RESTClient(env.config) as rest:
        found = set()
        for kind in ("mutating", "validating"):
            path = (
                f"/apis/admissionregistration.k8s.io/v1/{kind}webhookconfigurations/"
                f"demo-{kind}-webhook-configuration"
            )
            obj = (await rest.request("GET", path)).json()
            found |= {
                base64.b64decode(w["clientConfig"].get("caBundle", "")) for w in obj["webhooks"]
            }
        return found


class Creator(Traffic):
    """Creates MySrv objects one after another until stopped, keeping the failures."""

    def __init__(self, env: Environment) -> None:
        super().__init__()
        self.env = env

    async def run(self) -> None:
        async with Client.from_config(self.env.config) as client:
            while not self.stop.is_set():
                name = f"obj-{self.made}"
                meta = ObjectMeta(name=name, namespace="default")
                try:
                    await client.create(MySrv(metadata=meta, spec=MySrvSpec(name=name)))
                except Exception as exc:
                    self.failures.append(f"{name}: {exc}")
                self.made += 1


@asynccontextmanager
async def deployed(env: Environment, tmp_path: Path) -> AsyncIterator[tuple[Replica, FakeClock]]:
    """One replica running as deployed, its configurations applied and given the caBundle."""
    config = await deploy_like(env, tmp_path)
    clock = FakeClock()
    async with replica(config, tmp_path / "certs", clock) as one:
        await apply_configurations(env, one.server.port)
        await passes(one.rotator, clock, OPTIONS.check_interval)  # publishes to them
        yield one, clock


@pytest.fixture
async def env() -> AsyncIterator[Environment]:
    async with Environment(crds=[crd_for(MySrv)]) as environment:
        yield environment


async def test_a_deployed_operator_without_cert_manager_admits_and_defaults(
    env: Environment, tmp_path: Path
) -> None:
    """The Secret is made, the caBundle published, and a created object comes back defaulted."""
    async with deployed(env, tmp_path) as (one, _clock):
        data = await secret_data(env)
        assert await published_bundles(env) == {data["ca.crt"]}
        assert (one.cert_dir / "tls.crt").read_bytes() == data["tls.crt"]
        async with Client.from_config(env.config) as client:
            made = await client.create(
                MySrv(metadata=ObjectMeta(name="a", namespace="default"), spec=MySrvSpec(name="a"))
            )
        assert made.spec.port == 80
        assert made.spec.image == "nginx"


async def test_rotation_past_the_ca_rotation_point_refuses_no_admission_call(
    env: Environment, tmp_path: Path
) -> None:
    """While a client keeps creating objects, the CA and the serving pair rotate: none fails."""
    async with deployed(env, tmp_path) as (one, clock):
        first = await secret_data(env)
        old_issuer = await served_issuer(one.server.port)
        creator = Creator(env)
        async with asyncio.TaskGroup() as group:
            group.create_task(creator.run())
            await creator.made_more()
            # 276 days on: the CA is due (90 days before its 365). Step 1 and 2: the new
            # CA joins the bundle and is published; the old pair is still served.
            await passes(one.rotator, clock, 276 * DAY)
            rotated = await secret_data(env)
            assert one.rotator.rotations == ["ca"]
            bundle = x509.load_pem_x509_certificates(rotated["ca.crt"])
            assert len(bundle) == 2
            assert rotated["tls.crt"] == first["tls.crt"]
            assert await published_bundles(env) == {rotated["ca.crt"]}
            await creator.made_more()
            # Step 3, a check interval later: a serving pair signed by the new CA.
            await passes(one.rotator, clock, OPTIONS.check_interval)
            assert one.rotator.rotations == ["ca", "certificate"]
            swapped = await secret_data(env)
            assert swapped["tls.crt"] != first["tls.crt"]

            async def serves_new() -> bool:
                clock.advance(OPTIONS.sync_interval)  # the replica reads the Secret again
                issuer = await served_issuer(one.server.port)
                return issuer == bundle[0].subject.rfc4514_string()

            await eventually(serves_new)
            assert old_issuer == bundle[1].subject.rfc4514_string()
            await creator.made_more()
            # Past the old CA's expiry it leaves the bundle; calls keep succeeding.
            await passes(one.rotator, clock, 90 * DAY)
            pruned = (await secret_data(env))["ca.crt"]
            assert len(x509.load_pem_x509_certificates(pruned)) == 1
            await creator.made_more()
            creator.stop.set()
        assert creator.failures == []
        assert creator.made > 12


async def test_two_replicas_converge_on_one_secret(env: Environment, tmp_path: Path) -> None:
    """Two replicas starting together make one Secret and serve one pair, after rotation too."""
    config = await deploy_like(env, tmp_path)
    clock = FakeClock()
    async with AsyncExitStack() as stack:
        replicas = await asyncio.gather(
            stack.enter_async_context(replica(config, tmp_path / "a", clock)),
            stack.enter_async_context(replica(config, tmp_path / "b", clock)),
        )
        data = await secret_data(env)
        for each in replicas:
            assert (each.cert_dir / "tls.crt").read_bytes() == data["tls.crt"]
        # Both rotators run (no leader election here): each pass converges on the Secret.
        for days in (276, 0.01):
            for each in replicas:
                each.rotator.checked.clear()
            clock.advance(days * DAY)
            for each in replicas:
                async with asyncio.timeout(30):
                    await each.rotator.checked.wait()
        final = await secret_data(env)
        assert len(x509.load_pem_x509_certificates(final["ca.crt"])) == 2

        async def both_serve_it() -> bool:
            clock.advance(OPTIONS.sync_interval)  # the replicas read the Secret again
            return all((r.cert_dir / "tls.crt").read_bytes() == final["tls.crt"] for r in replicas)

        await eventually(both_serve_it)
        everything = [r.rotator.rotations for r in replicas]
        assert sorted(everything[0] + everything[1]) == ["ca", "certificate"]


def test_rotation_options_are_checked() -> None:
    """Rotation points inside the lifetimes, and a certificate that fits in a CA's life."""
    with pytest.raises(ValueError, match="ca_rotate_before"):
        RotationOptions(ca_rotate_before=datetime.timedelta(days=400))
    with pytest.raises(ValueError, match="cert_validity must fit"):
        RotationOptions(cert_validity=datetime.timedelta(days=300))


async def test_a_missing_secret_is_not_found_before_the_operator_runs(env: Environment) -> None:
    """Nothing makes the Secret but the operator (generate writes none)."""
    with pytest.raises(NotFoundError):
        await secret_data(env)


async def test_the_flag_sets_it_up_as_the_deployment_runs_it() -> None:
    """--webhook-cert-secret gives the webhook server its provider and adds the rotator."""
    from kubernetes_asyncio.client import Configuration

    from pyctrl.webhook import SecretCertificates

    args = OPERATOR.parser().parse_args(
        [
            "--metrics-bind-address=0",
            "--health-probe-bind-address=0",
            f"--webhook-cert-secret={NAMESPACE}/{SECRET}",
        ]
    )
    manager = await OPERATOR.create_manager(Configuration(host="https://cluster.invalid"), args)
    provider = manager.webhook_server.cert_provider
    assert isinstance(provider, SecretCertificates)
    service = f"demo-webhook-service.{NAMESPACE}.svc"
    assert provider.store.hosts == [service, f"{service}.cluster.local"]
    [rotator] = [r for r in manager.runnables if isinstance(r, CertRotator)]
    assert [t.rsplit("/", 2)[-2:] for t in rotator.targets] == [
        ["mutatingwebhookconfigurations", "demo-mutating-webhook-configuration"],
        ["validatingwebhookconfigurations", "demo-validating-webhook-configuration"],
    ]
    plain = await OPERATOR.create_manager(
        Configuration(host="https://cluster.invalid"),
        OPERATOR.parser().parse_args(["--metrics-bind-address=0"]),
    )
    assert plain.webhook_server.cert_provider is None
