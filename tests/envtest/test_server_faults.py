"""Authentication, TLS, restart and fault injection of the embedded API server."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING

import aiohttp
import pytest

from pyctrl.envtest._server import APIServer
from tests.envtest.conftest import TOKEN, Kube

if TYPE_CHECKING:
    import ssl


async def test_missing_token_is_401(kube: Kube) -> None:
    """A request without a valid bearer token answers 401 Unauthorized."""
    bad = Kube(kube.session, kube.base, token="wrong")
    status, body, _ = await bad.get("/api/v1/namespaces")
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


async def test_health_endpoints_need_no_token(server: APIServer) -> None:
    """/healthz, /livez and /readyz answer ok without authentication."""
    async with aiohttp.ClientSession() as session:
        for path in ("/healthz", "/livez", "/readyz"):
            async with session.get(server.url + path) as resp:
                assert resp.status == 200
                assert await resp.text() == "ok"


async def test_serves_over_tls(tls_server: tuple[APIServer, ssl.SSLContext]) -> None:
    """With an SSL context the server speaks HTTPS and its URL says so."""
    server, client_ctx = tls_server
    assert server.url.startswith("https://")
    async with (
        aiohttp.ClientSession() as session,
        session.get(
            server.url + "/api/v1/namespaces/default",
            headers={"Authorization": f"Bearer {TOKEN}"},
            ssl=client_ctx,
        ) as resp,
    ):
        assert resp.status == 200
        body = await resp.json()
    assert body["metadata"]["name"] == "default"


async def test_fail_next_fails_matching_requests(server: APIServer, kube: Kube, ns: str) -> None:
    """fail_next makes the next n matching requests fail, then requests succeed again."""
    server.faults.fail_next(2, verb="create", resource="configmaps", code=500)
    path = f"/api/v1/namespaces/{ns}/configmaps"
    body = {"metadata": {"name": "x"}}
    first, resp, _ = await kube.post(path, body)
    second, _, _ = await kube.post(path, body)
    third, _, _ = await kube.post(path, body)
    assert (first, second, third) == (500, 500, 201)
    assert resp["reason"] == "InternalError"


async def test_fail_next_with_429_sets_retry_after(server: APIServer, kube: Kube, ns: str) -> None:
    """An injected 429 carries Retry-After as kube-apiserver's throttling does."""
    server.faults.fail_next(1, verb="list", code=429, retry_after=3)
    status, body, headers = await kube.get(f"/api/v1/namespaces/{ns}/configmaps")
    assert status == 429
    assert body["reason"] == "TooManyRequests"
    assert body["details"] == {"retryAfterSeconds": 3}
    assert headers["Retry-After"] == "3"


async def test_fail_next_only_matches_its_filter(server: APIServer, kube: Kube, ns: str) -> None:
    """A failure for one resource leaves other resources alone."""
    server.faults.fail_next(1, resource="secrets")
    status, _, _ = await kube.get(f"/api/v1/namespaces/{ns}/configmaps")
    assert status == 200
    status, _, _ = await kube.get(f"/api/v1/namespaces/{ns}/secrets")
    assert status == 500


async def test_add_latency_delays_requests(server: APIServer, kube: Kube, ns: str) -> None:
    """add_latency delays matching requests until clear()."""
    server.faults.add_latency(0.3, verb="get")
    start = time.monotonic()
    await kube.get(f"/api/v1/namespaces/{ns}")
    assert time.monotonic() - start >= 0.3
    server.faults.clear()
    start = time.monotonic()
    await kube.get(f"/api/v1/namespaces/{ns}")
    assert time.monotonic() - start < 0.3


def test_fault_arguments_are_checked() -> None:
    """Bad fault arguments raise ValueError naming the problem."""
    server = APIServer(tokens=[TOKEN], ssl_context=None)
    with pytest.raises(ValueError, match="unknown verb"):
        server.faults.fail_next(1, verb="fetch")
    with pytest.raises(ValueError, match="n must be at least 1"):
        server.faults.fail_next(0)
    with pytest.raises(ValueError, match="HTTP error status"):
        server.faults.fail_next(1, code=200)


async def test_restart_keeps_data_and_port(server: APIServer, kube: Kube, ns: str) -> None:
    """restart() drops connections and serves the same data on the same port."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    created = await kube.create_ok(path, {"metadata": {"name": "kept"}})
    url = server.url
    await server.restart()
    assert server.url == url
    async with aiohttp.ClientSession() as session:
        again = Kube(session, server.url)
        obj = await again.get_ok(f"{path}/kept")
    assert obj["metadata"]["uid"] == created["metadata"]["uid"]


async def _read_to_end(response: aiohttp.ClientResponse) -> None:
    with contextlib.suppress(aiohttp.ClientPayloadError):
        async for _ in response.content:
            pass


async def test_restart_ends_open_watches(server: APIServer, kube: Kube, ns: str) -> None:
    """Open watches end when the server restarts."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with kube.session.get(kube.base + path, params={"watch": "1"}, headers=headers) as resp:
        assert resp.status == 200
        assert server.hub.count() == 1
        await server.restart()
        async with asyncio.timeout(5):
            await _read_to_end(resp)
    assert server.hub.count() == 0


async def test_aclose_is_bounded_with_open_watch() -> None:
    """aclose() returns promptly even while a client holds a watch open."""
    srv = APIServer(tokens=[TOKEN], ssl_context=None)
    await srv.start()
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        aiohttp.ClientSession() as session,
        session.get(
            srv.url + "/api/v1/namespaces/default/configmaps",
            params={"watch": "1"},
            headers=headers,
        ) as resp,
    ):
        assert resp.status == 200
        start = time.monotonic()
        await srv.aclose()
        assert time.monotonic() - start < 3
        async with asyncio.timeout(5):
            await _read_to_end(resp)
