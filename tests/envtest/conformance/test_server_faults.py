"""Authentication, TLS, and the fault API: injected failures, latency, restarts."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING

import aiohttp
import pytest
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio import watch as k8s_watch

from pyctrl.envtest import Environment, Faults
from tests.envtest.conftest import Kube, anonymous_config

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


@contextlib.asynccontextmanager
async def client_of(config: k8s.Configuration) -> AsyncIterator[Kube]:
    async with k8s.ApiClient(config) as api:
        yield Kube(api)


async def test_wrong_token_is_401(env: Environment) -> None:
    """A request with an invalid bearer token (and no client certificate) answers 401."""
    async with client_of(anonymous_config(env, token="wrong")) as stranger:
        status, body, _ = await stranger.get("/api/v1/namespaces")
    assert status == 401
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401,
    }


@pytest.mark.needs_builtin_kinds
async def test_health_endpoints_need_no_credentials(env: Environment) -> None:
    """/healthz, /livez and /readyz answer ok without authentication."""
    async with client_of(anonymous_config(env)) as anonymous:
        for path in ("/healthz", "/livez", "/readyz"):
            status, body, _ = await anonymous.get(path)
            assert (status, body) == (200, "ok"), path


@pytest.mark.needs_builtin_kinds
async def test_serves_https_that_only_the_kubeconfig_ca_verifies(env: Environment) -> None:
    """The kubeconfig's server is HTTPS with its CA; a client without that CA is refused."""
    config = k8s.Configuration()
    await k8s_config.load_kube_config(
        config_file=str(env.kubeconfig_path), client_configuration=config, persist_config=False
    )
    host = str(config.host)
    assert host.startswith("https://")
    async with k8s.ApiClient(config) as api:
        default = await k8s.CoreV1Api(api).read_namespace("default")
    assert default.metadata.name == "default"
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await session.get(host + "/healthz")


@pytest.mark.embedded_only
async def test_fail_next_fails_matching_requests(env: Environment, kube: Kube, ns: str) -> None:
    """fail_next makes the next n matching requests fail, then requests succeed again."""
    env.faults.fail_next(2, verb="create", resource="configmaps", code=500)
    path = f"/api/v1/namespaces/{ns}/configmaps"
    body = {"metadata": {"name": "x"}}
    first, resp, _ = await kube.post(path, body)
    second, _, _ = await kube.post(path, body)
    third, _, _ = await kube.post(path, body)
    assert (first, second, third) == (500, 500, 201)
    assert resp["reason"] == "InternalError"


@pytest.mark.embedded_only
async def test_fail_next_with_429_sets_retry_after(env: Environment, kube: Kube, ns: str) -> None:
    """An injected 429 carries Retry-After as kube-apiserver's throttling does."""
    env.faults.fail_next(1, verb="list", code=429, retry_after=3)
    status, body, headers = await kube.get(f"/api/v1/namespaces/{ns}/configmaps")
    assert status == 429
    assert body["reason"] == "TooManyRequests"
    assert body["details"] == {"retryAfterSeconds": 3}
    assert headers["Retry-After"] == "3"


@pytest.mark.embedded_only
async def test_fail_next_only_matches_its_filter(env: Environment, kube: Kube, ns: str) -> None:
    """A failure for one resource leaves other resources alone."""
    env.faults.fail_next(1, resource="secrets")
    status, _, _ = await kube.get(f"/api/v1/namespaces/{ns}/configmaps")
    assert status == 200
    status, _, _ = await kube.get(f"/api/v1/namespaces/{ns}/secrets")
    assert status == 500


@pytest.mark.embedded_only
async def test_add_latency_delays_requests(env: Environment, kube: Kube, ns: str) -> None:
    """add_latency delays matching requests until clear()."""
    env.faults.add_latency(0.3, verb="get")
    start = time.monotonic()
    await kube.get(f"/api/v1/namespaces/{ns}")
    assert time.monotonic() - start >= 0.3
    env.faults.clear()
    start = time.monotonic()
    await kube.get(f"/api/v1/namespaces/{ns}")
    assert time.monotonic() - start < 0.3


async def _never_restart() -> None:
    raise AssertionError("not restarted by argument checks")


def test_fault_arguments_are_checked() -> None:
    """Bad fault arguments raise ValueError naming the problem."""
    faults = Faults(drop_watches=lambda: 0, compact=lambda: None, restart=_never_restart)
    with pytest.raises(ValueError, match="unknown verb"):
        faults.fail_next(1, verb="fetch")
    with pytest.raises(ValueError, match="n must be at least 1"):
        faults.fail_next(0)
    with pytest.raises(ValueError, match="HTTP error status"):
        faults.fail_next(1, code=200)
    with pytest.raises(ValueError, match="seconds must not be negative"):
        faults.add_latency(-1)


@pytest.mark.embedded_only
async def test_restart_keeps_data_and_address(env: Environment, kube: Kube, ns: str) -> None:
    """faults.restart() drops connections and serves the same data at the same address."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    created = await kube.create_ok(path, {"metadata": {"name": "kept"}})
    await env.faults.restart()
    obj = await kube.get_ok(f"{path}/kept")
    assert obj["metadata"]["uid"] == created["metadata"]["uid"]
    assert obj["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    later = await kube.create_ok(path, {"metadata": {"name": "later"}})
    assert int(later["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])


async def _read_to_end(response: aiohttp.ClientResponse) -> None:
    with contextlib.suppress(aiohttp.ClientPayloadError):
        async for _ in response.content:
            pass


@pytest.mark.embedded_only
async def test_restart_ends_watches_and_clients_relist_and_rewatch(env: Environment) -> None:
    """A kubeconfig client's watch ends at a restart; it re-lists and re-watches over TLS."""
    config = k8s.Configuration()
    await k8s_config.load_kube_config(
        config_file=str(env.kubeconfig_path), client_configuration=config, persist_config=False
    )

    def cm(name: str) -> k8s.V1ConfigMap:
        return k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name=name))

    async with k8s.ApiClient(config) as api:
        core = k8s.CoreV1Api(api)
        await core.create_namespaced_config_map("default", cm("before"))
        listed = await core.list_namespaced_config_map("default")
        await core.create_namespaced_config_map("default", cm("during"))
        seen: list[str] = []
        # With timeout_seconds the Watch ends at the end of the stream instead of resuming.
        async with asyncio.timeout(10), k8s_watch.Watch() as watch:
            async for event in watch.stream(
                core.list_namespaced_config_map,
                "default",
                resource_version=listed.metadata.resource_version,
                timeout_seconds=30,
            ):
                seen.append(event["object"].metadata.name)
                await env.faults.restart()
        assert seen == ["during"]
        relisted = await core.list_namespaced_config_map("default")
        assert [i.metadata.name for i in relisted.items] == ["before", "during"]
        assert relisted.items[0].metadata.uid == listed.items[0].metadata.uid
        await core.create_namespaced_config_map("default", cm("after"))
        async with asyncio.timeout(10), k8s_watch.Watch() as watch:
            async for event in watch.stream(
                core.list_namespaced_config_map,
                "default",
                resource_version=relisted.metadata.resource_version,
                timeout_seconds=30,
            ):
                resumed = (event["type"], event["object"].metadata.name)
                break
    assert resumed == ("ADDED", "after")


@pytest.mark.embedded_only
async def test_stop_is_bounded_with_open_watch() -> None:
    """Stopping the environment returns promptly even while a client holds a watch open."""
    env = Environment()
    await env.start()
    try:
        async with (
            k8s.ApiClient(env.config) as api,
            Kube(api).stream("/api/v1/namespaces/default/configmaps") as resp,
        ):
            start = time.monotonic()
            await env.stop()
            assert time.monotonic() - start < 3
            async with asyncio.timeout(5):
                await _read_to_end(resp)
    finally:
        await env.stop()


@pytest.mark.embedded_only
async def test_faults_reach_token_and_access_reviews(env: Environment, kube: Kube) -> None:
    """TokenReview and SubjectAccessReview meet injected failures, by resource or by verb."""
    review = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": "nope"},
    }
    access = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": "bob", "nonResourceAttributes": {"path": "/metrics", "verb": "get"}},
    }
    env.faults.fail_next(1, resource="tokenreviews", code=503)
    env.faults.fail_next(1, verb="create", resource="subjectaccessreviews.authorization.k8s.io")
    token_path = "/apis/authentication.k8s.io/v1/tokenreviews"
    access_path = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
    status, body, _ = await kube.post(token_path, review)
    assert (status, body["reason"]) == (503, "ServiceUnavailable")
    status, body, _ = await kube.post(access_path, access)
    assert (status, body["reason"]) == (500, "InternalError")
    assert (await kube.post(token_path, review))[0] == 201
    assert (await kube.post(access_path, access))[0] == 201


@pytest.mark.embedded_only
@pytest.mark.needs_builtin_kinds
async def test_faults_without_a_filter_reach_discovery_and_version(
    env: Environment, kube: Kube
) -> None:
    """An unfiltered failure reaches every request: discovery, OpenAPI and /version too."""
    env.faults.fail_next(4)
    for path in ("/version", "/api", "/apis", "/openapi/v2"):
        status, body, _ = await kube.get(path)
        assert (status, body["reason"]) == (500, "InternalError"), path
    status, body, _ = await kube.get("/version")
    assert status == 200
    assert "gitVersion" in body
    env.faults.fail_next(1, resource="configmaps")
    # A resource filter never matches a request for no resource.
    assert (await kube.get("/api"))[0] == 200
