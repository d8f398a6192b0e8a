"""Secure metrics and debug endpoints: HTTPS, TokenReview and SubjectAccessReview, end to end.

A Manager against the embedded API server serves ``/metrics`` and ``/debug`` with
``secure_serving`` and `with_authentication_and_authorization`; callers are users and
ServiceAccounts of that API server, so every answer comes from its own tokens and RBAC.
"""

from __future__ import annotations

import asyncio
import ssl
import tracemalloc
import warnings
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson
import pytest
from kubernetes_asyncio.client import Configuration, V1ConfigMap

from pyctrl.builder import controller_managed_by
from pyctrl.certs import generate_ca, issue_serving_cert, write_cert_dir
from pyctrl.client import RESTClient
from pyctrl.clock import FakeClock
from pyctrl.envtest import Environment
from pyctrl.filters import Filter, with_authentication_and_authorization
from pyctrl.manager import Manager
from pyctrl.metricsserver import Options as MetricsServerOptions
from pyctrl.reconcile import Request, Result
from pyctrl.testing import running
from tests.kubectl import Kubectl

from .conftest import options

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from aiohttp import web

    from pyctrl.certs import CertificateAuthority


READER = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRole",
    "metadata": {"name": "metrics-reader"},
    "rules": [
        {"nonResourceURLs": ["/metrics", "/metrics/*", "/debug", "/debug/*"], "verbs": ["get"]}
    ],
}


def _binding(name: str, subject: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "metrics-reader",
        },
        "subjects": [subject],
    }


class Counting:
    """An extra metrics handler that counts the requests reaching it."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, request: web.Request) -> web.StreamResponse:
        from aiohttp import web

        self.calls += 1
        return web.Response(text="reached\n")


class Noop:
    """A reconciler that does nothing (the controller gives /debug a work queue)."""

    async def reconcile(self, request: Request) -> Result:
        return Result()


@dataclass
class Served:
    """The environment, the running manager and where its servers are."""

    env: Environment
    manager: Manager
    counting: Counting
    clock: FakeClock
    reviews: list[Filter]

    @property
    def metrics(self) -> str:
        assert self.manager.metrics_server is not None
        return f"https://127.0.0.1:{self.manager.metrics_server.port}"

    @property
    def debug(self) -> str:
        assert self.manager.debug_server is not None
        return f"https://127.0.0.1:{self.manager.debug_server.port}"


def _insecure() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


async def get(
    url: str, token: str | None = None, context: ssl.SSLContext | None = None
) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with (
        aiohttp.ClientSession() as session,
        session.get(url, headers=headers, ssl=context or _insecure()) as resp,
    ):
        return resp.status, await resp.text()


@asynccontextmanager
async def serve(
    env: Environment, metrics: MetricsServerOptions | None = None
) -> AsyncIterator[Served]:
    clock = FakeClock()
    counting = Counting()
    filters: list[Filter] = []

    def provider(rest: RESTClient) -> Filter:
        made = with_authentication_and_authorization(rest, clock=clock)
        filters.append(made)
        return made

    metrics = metrics or MetricsServerOptions(secure_serving=True)
    metrics = MetricsServerOptions(
        bind_address=metrics.bind_address,
        secure_serving=metrics.secure_serving,
        cert_dir=metrics.cert_dir,
        filter_provider=provider,
        extra_handlers={"/metrics/probe": counting},
    )
    manager = Manager(env.config, options(metrics=metrics, debug_bind_address="127.0.0.1:0"))
    controller_managed_by(manager).for_(V1ConfigMap).named("configmaps").complete(Noop())
    async with running(manager):
        assert manager.metrics_server is not None
        assert manager.debug_server is not None
        await manager.metrics_server.started.wait()
        await manager.debug_server.started.wait()
        yield Served(env, manager, counting, clock, filters)


@pytest.fixture
async def env() -> AsyncIterator[Environment]:
    async with Environment() as environment:
        yield environment


@pytest.fixture
async def served(env: Environment) -> AsyncIterator[Served]:
    async with serve(env) as result:
        yield result


async def _create(env: Environment, obj: dict[str, Any]) -> None:
    group = "rbac.authorization.k8s.io/v1"
    plural = obj["kind"].lower() + "s"
    async with RESTClient(env.config) as rest:
        await rest.request("POST", f"/apis/{group}/{plural}", body=orjson.dumps(obj))


async def test_no_token_is_401_and_never_reaches_the_handler(served: Served) -> None:
    """Without a token, or with a wrong one, /metrics and /debug answer 401 before any handler."""
    for url in (
        served.metrics + "/metrics",
        served.metrics + "/metrics/probe",
        served.debug + "/debug/tasks",
        served.debug + "/debug/threads",
    ):
        assert await get(url) == (401, "Unauthorized\n")
        assert await get(url, "not-a-token") == (401, "Unauthorized\n")
        assert (await get(url, ""))[0] == 401
    assert served.counting.calls == 0


async def test_a_token_without_the_role_is_403(served: Served) -> None:
    """A known user without get on /metrics is refused with controller-runtime's message."""
    token = served.env.add_user("stranger")
    assert await get(served.metrics + "/metrics/probe", token) == (
        403,
        "Authorization denied for user stranger\n",
    )
    status, _ = await get(served.debug + "/debug/tasks", token)
    assert status == 403
    assert served.counting.calls == 0


async def test_a_token_with_the_role_reads_metrics_and_debug(served: Served) -> None:
    """A user bound to the reader role gets 200 on /metrics and every /debug page."""
    token = served.env.add_user("prometheus", ["monitoring"])
    await _create(served.env, READER)
    await _create(served.env, _binding("scrapers", {"kind": "Group", "name": "monitoring"}))
    status, text = await get(served.metrics + "/metrics", token)
    assert status == 200
    assert "controller_runtime_reconcile_total" in text or "workqueue_depth" in text
    assert await get(served.metrics + "/metrics/probe", token) == (200, "reached\n")
    assert served.counting.calls == 1
    status, tasks = await get(served.debug + "/debug/tasks", token)
    assert status == 200
    assert "task 'metrics-server'" in tasks
    assert "task 'configmaps" in tasks or "configmaps" in tasks
    status, queues = await get(served.debug + "/debug/workqueues", token)
    assert status == 200
    assert set(orjson.loads(queues)["configmaps"]) >= {"depth", "processing", "delayed"}
    status, informers = await get(served.debug + "/debug/informers", token)
    states = orjson.loads(informers)
    assert [(i["gvk"]["kind"], i["state"], i["synced"]) for i in states] == [
        ("ConfigMap", "watching", True)
    ]
    status, threads = await get(served.debug + "/debug/threads", token)
    assert status == 200
    assert "thread 'MainThread'" in threads


async def test_reviews_are_cached_and_denials_expire(served: Served) -> None:
    """Repeated scrapes reuse cached reviews; a cached denial is re-checked after 30 s."""
    token = served.env.add_user("late")
    url = served.metrics + "/metrics/probe"
    assert (await get(url, token))[0] == 403
    await _create(served.env, READER)
    await _create(served.env, _binding("late", {"kind": "User", "name": "late"}))
    filter_ = served.reviews[0]  # the metrics server's (the debug server has its own)
    sent = filter_.reviews  # type: ignore[attr-defined]
    # Within the deny TTL the cached denial stands, with no new review.
    assert (await get(url, token))[0] == 403
    assert filter_.reviews == sent  # type: ignore[attr-defined]
    served.clock.advance(31)
    assert (await get(url, token))[0] == 200
    after = filter_.reviews  # type: ignore[attr-defined]
    for _ in range(3):
        assert (await get(url, token))[0] == 200
    assert filter_.reviews == after  # type: ignore[attr-defined]


async def test_a_service_account_token_from_kubectl_scrapes(
    env: Environment, tmp_path: Path
) -> None:
    """kubectl applies the generated reader role, binds a ServiceAccount, and its token scrapes."""
    from examples.mysrv import operator

    kubectl = Kubectl(env.kubeconfig_path, tmp_path / "cache", "default")
    manifests = await operator.manifests()
    [reader] = manifests["rbac/metrics_reader_role.yaml"]
    await kubectl("apply", "-f", "-", stdin=reader)
    await kubectl("create", "serviceaccount", "prometheus")
    binding = _binding(
        "prometheus-metrics",
        {"kind": "ServiceAccount", "name": "prometheus", "namespace": "default"},
    )
    binding["roleRef"]["name"] = reader["metadata"]["name"]
    await kubectl("apply", "-f", "-", stdin=binding)
    token = (await kubectl("create", "token", "prometheus")).out.strip()
    async with serve(env) as served:
        status, text = await get(served.metrics + "/metrics", token)
        assert status == 200
        assert "# TYPE" in text


def _cert_dir(path: Path, ca: CertificateAuthority, host: str) -> Path:
    write_cert_dir(path, issue_serving_cert(ca, [host, "127.0.0.1"]))
    return path


async def _peer_name(url: str, ca: CertificateAuthority) -> str:
    context = ssl.create_default_context(cadata=ca.cert_pem.decode())
    host, port = url.removeprefix("https://").split(":")
    _, writer = await asyncio.open_connection(
        host, int(port), ssl=context, server_hostname="127.0.0.1"
    )
    cert = writer.get_extra_info("peercert")
    writer.close()
    return str(dict(x[0] for x in cert["subject"])["commonName"])


async def test_the_certificate_comes_from_files_and_rotates(
    env: Environment, tmp_path: Path
) -> None:
    """With cert_dir the served certificate is the one on disk, and a rotated pair is picked up."""
    ca = generate_ca()
    directory = _cert_dir(tmp_path / "certs", ca, "first.example")
    opts = MetricsServerOptions(secure_serving=True, cert_dir=directory)
    async with serve(env, opts) as served:
        assert await _peer_name(served.metrics, ca) == "first.example"
        watcher = served.manager.metrics_server.certs  # type: ignore[union-attr]
        assert watcher is not None
        seen = watcher.reloads
        _cert_dir(directory, ca, "second.example")
        async with asyncio.timeout(30):
            while await _peer_name(served.metrics, ca) != "second.example":
                await watcher.wait_for_change(seen)
                seen = watcher.reloads


async def test_tls_below_1_2_is_refused(served: Served) -> None:
    """A client limited to TLS 1.1 cannot complete a handshake."""
    context = _insecure()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # TLS 1.1 is deprecated: the point
        context.minimum_version = ssl.TLSVersion.TLSv1_1
        context.maximum_version = ssl.TLSVersion.TLSv1_1
    with pytest.raises((ssl.SSLError, aiohttp.ClientError)):
        await get(served.metrics + "/metrics", "x", context)


async def test_a_self_signed_certificate_is_not_trusted_by_default(served: Served) -> None:
    """Without cert_dir the certificate is self-signed: a verifying client refuses it."""
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        await get(served.metrics + "/metrics", "x", ssl.create_default_context())


async def test_tracemalloc_top_sites_when_tracing(served: Served) -> None:
    """/debug/tracemalloc is 404 with the hint when off, and lists the top sites when on."""
    token = served.env.add_user("admin2", ["system:masters"])
    status, text = await get(served.debug + "/debug/tracemalloc", token)
    assert status == 404
    assert "PYTHONTRACEMALLOC=1" in text
    tracemalloc.start()
    try:
        status, text = await get(served.debug + "/debug/tracemalloc?limit=3", token)
    finally:
        tracemalloc.stop()
    assert status == 200
    assert text.splitlines()[1] == "top 3 by size:"
    assert len(text.splitlines()) == 5
    assert (await get(served.debug + "/debug/tracemalloc?limit=0", token))[0] == 400


async def test_the_generated_auth_role_is_what_the_filter_needs(env: Environment) -> None:
    """The operator's identity without the generated metrics-auth role answers 500; with it, 200."""
    from examples.mysrv import operator

    manifests = await operator.manifests()
    role, binding = manifests["rbac/metrics_auth_role.yaml"]
    token = env.add_user("system:serviceaccount:mysrv-system:mysrv-controller-manager")
    config = Configuration(host=env.config.host)
    config.ssl_ca_cert = env.config.ssl_ca_cert
    config.api_key = {"BearerToken": f"Bearer {token}"}
    scraper = env.add_user("scraper", ["system:masters"])
    manager = Manager(
        config,
        options(
            metrics=MetricsServerOptions(
                secure_serving=True, filter_provider=with_authentication_and_authorization
            )
        ),
    )
    async with running(manager):
        assert manager.metrics_server is not None
        await manager.metrics_server.started.wait()
        url = f"https://127.0.0.1:{manager.metrics_server.port}/metrics"
        assert await get(url, scraper) == (500, "Authentication failed\n")
        await _create(env, role)
        # The generated binding names the manager's ServiceAccount: this user is its name.
        await _create(env, binding)
        status, _ = await get(url, scraper)
        assert status == 200


async def test_an_unreachable_api_server_is_500_and_not_cached(served: Served) -> None:
    """TokenReview or SubjectAccessReview failing at the API server answers 500, uncached."""
    token = served.env.add_user("prometheus", ["monitoring"])
    await _create(served.env, READER)
    await _create(served.env, _binding("scrapers", {"kind": "Group", "name": "monitoring"}))
    url = served.metrics + "/metrics/probe"
    served.env.faults.fail_next(100, resource="tokenreviews", code=503, retry_after=0)
    assert await get(url, token) == (500, "Authentication failed\n")
    served.env.faults.clear()
    served.env.faults.fail_next(100, resource="subjectaccessreviews", code=503, retry_after=0)
    assert await get(url, token) == (500, "Authorization for user prometheus failed\n")
    served.env.faults.clear()
    assert await get(url, token) == (200, "reached\n")
    assert served.counting.calls == 1


async def test_unknown_tokens_are_rate_limited_per_address(served: Served) -> None:
    """Fresh bad tokens from one address cost 20 TokenReviews, then 429 until the bucket refills."""
    filter_ = served.reviews[0]
    url = served.metrics + "/metrics"
    sent = filter_.reviews  # type: ignore[attr-defined]
    for n in range(20):
        assert (await get(url, f"bad-{n}"))[0] == 401
    assert filter_.reviews == sent + 20  # type: ignore[attr-defined]
    async with (
        aiohttp.ClientSession() as session,
        session.get(url, headers={"Authorization": "Bearer bad-x"}, ssl=_insecure()) as resp,
    ):
        assert resp.status == 429
        assert resp.headers["Retry-After"] == "1"
    assert filter_.reviews == sent + 20  # type: ignore[attr-defined]
    # A bad token already reviewed is answered from its cache, without a review or a token.
    assert (await get(url, "bad-0"))[0] == 401
    served.clock.advance(0.2)  # 5 reviews a second: one more after 0.2 s
    assert (await get(url, "bad-y"))[0] == 401
    assert (await get(url, "bad-z"))[0] == 429
    assert filter_.reviews == sent + 21  # type: ignore[attr-defined]


async def test_bad_tokens_do_not_push_a_valid_one_out_of_the_cache(env: Environment) -> None:
    """Unknown tokens have a cache of their own: a flood of them leaves valid tokens cached."""
    await _create(env, READER)
    await _create(env, _binding("scraper", {"kind": "User", "name": "scraper"}))
    token = env.add_user("scraper")
    made: list[Filter] = []

    def provider(rest: RESTClient) -> Filter:
        made.append(
            with_authentication_and_authorization(
                rest, clock=FakeClock(), max_entries=4, reviews_per_second=1000, review_burst=1000
            )
        )
        return made[-1]

    metrics = MetricsServerOptions(secure_serving=True, filter_provider=provider)
    manager = Manager(env.config, options(metrics=metrics))
    async with running(manager):
        assert manager.metrics_server is not None
        await manager.metrics_server.started.wait()
        url = f"https://127.0.0.1:{manager.metrics_server.port}/metrics"
        assert (await get(url, token))[0] == 200
        sent = made[0].reviews  # type: ignore[attr-defined]
        for n in range(10):
            assert (await get(url, f"bad-{n}"))[0] == 401
        assert made[0].reviews == sent + 10  # type: ignore[attr-defined]
        assert (await get(url, token))[0] == 200
        assert made[0].reviews == sent + 10  # type: ignore[attr-defined]
