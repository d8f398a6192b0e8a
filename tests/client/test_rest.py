"""pyctrl.client.RESTClient: auth, errors, retries, streaming, metrics."""

from __future__ import annotations

import asyncio
import base64
from typing import TYPE_CHECKING

import aiohttp
import pytest
import yaml
from aiohttp import web
from kubernetes_asyncio.client import Configuration
from structlog.testing import capture_logs

from pyctrl import metrics
from pyctrl.client import Response, RESTClient
from pyctrl.clock import FakeClock
from pyctrl.config import Config, get_config, load_kubeconfig
from pyctrl.errors import (
    APIError,
    ConfigError,
    GoneError,
    InternalError,
    NotFoundError,
    ServiceUnavailableError,
    TooManyRequestsError,
    UnauthorizedError,
)
from tests.client.conftest import (
    FakeServer,
    Handler,
    fake_configuration,
    json_response,
    status_response,
)

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import AsyncIterator
    from pathlib import Path

    from pyctrl.envtest import Environment


async def ok(_: web.Request) -> web.Response:
    return json_response({"kind": "Thing", "ok": True})


def throttled(code: int = 429, retry_after: str | None = "0") -> Handler:
    async def handler(_: web.Request) -> web.Response:
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        reason = "TooManyRequests" if code == 429 else "ServiceUnavailable"
        return status_response(code, reason, "slow down", **headers)

    return handler


# plain requests -------------------------------------------------------------------------


async def test_request_sends_token_accept_user_agent_and_body(
    fake_server: FakeServer, rest: RESTClient
) -> None:
    """A request carries the bearer token, Accept, User-Agent, Content-Type and body."""
    fake_server.handler = ok
    await rest.request(
        "post", "/api/v1/x", body=b'{"a":1}', content_type="application/merge-patch+json"
    )
    [seen] = fake_server.requests
    assert seen.method == "POST"
    assert seen.headers["Authorization"] == "Bearer secret"
    assert seen.headers["Accept"] == "application/json"
    assert seen.headers["User-Agent"].startswith("pyctrl/")
    assert seen.headers["Content-Type"] == "application/merge-patch+json"
    assert seen.body == b'{"a":1}'


async def test_request_returns_status_headers_and_decoded_body(
    fake_server: FakeServer, rest: RESTClient
) -> None:
    """A successful answer gives its status, headers and body, and decodes as JSON."""
    fake_server.handler = ok
    response = await rest.request("GET", "/api/v1/x")
    assert isinstance(response, Response)
    assert response.status == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == {"kind": "Thing", "ok": True}


async def test_query_sequences_repeat_the_parameter(
    fake_server: FakeServer, rest: RESTClient
) -> None:
    """A sequence query value is sent as a repeated parameter; selectors are encoded."""
    fake_server.handler = ok
    await rest.request(
        "GET",
        "/api/v1/x",
        query={"dryRun": ["All", "Other"], "labelSelector": "a in (x,y),!b", "limit": 5},
    )
    query = fake_server.requests[0].query
    assert query.getall("dryRun") == ["All", "Other"]
    assert query["labelSelector"] == "a in (x,y),!b"
    assert query["limit"] == "5"


async def test_no_authorization_header_without_credentials(fake_server: FakeServer) -> None:
    """A configuration without credentials sends no Authorization header."""
    fake_server.handler = ok
    async with RESTClient(Configuration(host=fake_server.url)) as rest:
        await rest.request("GET", "/version")
    assert "Authorization" not in fake_server.requests[0].headers


async def test_path_must_be_absolute(rest: RESTClient) -> None:
    """A path without a leading slash is refused before sending."""
    with pytest.raises(ValueError, match="must start with '/'"):
        await rest.request("GET", "api/v1")


async def test_server_address_must_be_http() -> None:
    """A configuration whose host is not an http(s) URL is refused, naming it."""
    with pytest.raises(ConfigError, match="'ftp://x' is not an http"):
        RESTClient(Configuration(host="ftp://x"))


async def test_missing_ca_file_is_a_config_error() -> None:
    """An https configuration naming a CA file that does not exist fails with the file named."""
    configuration = Configuration(host="https://127.0.0.1:1")
    configuration.ssl_ca_cert = "/nonexistent/ca.crt"
    with pytest.raises(ConfigError, match=r"cannot set up TLS .*/nonexistent/ca\.crt"):
        RESTClient(configuration)


def tls_kubeconfig(directory: Path, **files: str) -> Path:
    """A kubeconfig for an https server; ``files`` are cluster or user keys, by section."""
    cluster = {"server": "https://127.0.0.1:1"}
    user = {"token": "t"}
    for name, value in files.items():
        key = name.replace("_", "-")
        (cluster if key.startswith("certificate-authority") else user)[key] = value
    path = directory / "kc"
    path.write_text(
        yaml.safe_dump(
            {
                "clusters": [{"name": "c", "cluster": cluster}],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


async def test_a_garbage_ca_file_is_traced_to_its_kubeconfig(tmp_path: Path) -> None:
    """A CA file that is not a certificate fails with the kubeconfig that names it."""
    (tmp_path / "ca.crt").write_text("not a certificate")
    config = await load_kubeconfig(tls_kubeconfig(tmp_path, certificate_authority="ca.crt"))
    with pytest.raises(ConfigError, match=r"^kubeconfig '.*/kc': cannot set up TLS .*ca\.crt"):
        RESTClient(config)


async def test_garbage_inline_tls_data_is_traced_to_its_kubeconfig(tmp_path: Path) -> None:
    """Inline CA or client-certificate data that is no PEM fails naming the kubeconfig.

    It fails as the kubeconfig is loaded, naming the field: the temporary file that
    kubernetes-asyncio copies the data to is gone by the time TLS is set up.
    """
    garbage = base64.b64encode(b"garbage").decode()
    for files, field in (
        ({"certificate_authority_data": garbage}, "certificate-authority-data"),
        (
            {"client_certificate_data": garbage, "client_key_data": garbage},
            "client-certificate-data",
        ),
    ):
        with pytest.raises(ConfigError, match=rf"^kubeconfig '.*/kc': .*: {field} does not hold"):
            await load_kubeconfig(tls_kubeconfig(tmp_path, **files))


async def test_closed_client_refuses_requests(fake_server: FakeServer) -> None:
    """After aclose, requests fail instead of opening a new session."""
    rest = RESTClient(fake_configuration(fake_server.url))
    await rest.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        await rest.request("GET", "/version")


# errors -----------------------------------------------------------------------------------


async def test_failure_status_becomes_the_matching_error(
    fake_server: FakeServer, rest: RESTClient
) -> None:
    """A 404 Status raises NotFoundError with the server's message and reason."""
    fake_server.handler = lambda _: _status(404, "NotFound", 'pods "x" not found')
    with pytest.raises(NotFoundError) as info:
        await rest.request("GET", "/api/v1/namespaces/d/pods/x")
    assert info.value.code == 404
    assert info.value.message == 'pods "x" not found'


async def _status(code: int, reason: str, message: str) -> web.Response:
    return status_response(code, reason, message)


async def test_non_status_error_body_becomes_the_message(
    fake_server: FakeServer, rest: RESTClient
) -> None:
    """An error answer that is not a Status still raises, with its text as the message."""

    async def bad_gateway(_: web.Request) -> web.Response:
        return web.Response(status=502, text="upstream exploded")

    fake_server.handler = bad_gateway
    with pytest.raises(APIError) as info:
        await rest.request("GET", "/x")
    assert (info.value.code, info.value.message) == (502, "upstream exploded")


# retries ----------------------------------------------------------------------------------


async def test_429_with_retry_after_is_retried_until_success(
    fake_server: FakeServer, rest: RESTClient
) -> None:
    """429 answers with Retry-After are retried, and the eventual success is returned."""
    fake_server.script = [throttled(), throttled()]
    fake_server.handler = ok
    response = await rest.request("GET", "/x")
    assert response.json()["ok"] is True
    assert len(fake_server.requests) == 3


async def test_retries_are_bounded(fake_server: FakeServer) -> None:
    """A server that keeps answering 429 is retried `retries` times, then the error raises."""
    fake_server.handler = throttled(retry_after="0")
    async with RESTClient(fake_configuration(fake_server.url), retries=2) as rest:
        with pytest.raises(TooManyRequestsError) as info:
            await rest.request("GET", "/x")
    assert len(fake_server.requests) == 3
    assert info.value.retry_after == 0


async def test_writes_are_retried_after_429_too(fake_server: FakeServer, rest: RESTClient) -> None:
    """A POST refused with 429 was not processed, so it is sent again with the same body."""
    fake_server.script = [throttled()]
    fake_server.handler = ok
    await rest.request("POST", "/x", body=b"{}", content_type="application/json")
    assert [r.method for r in fake_server.requests] == ["POST", "POST"]
    assert fake_server.requests[1].body == b"{}"


async def test_503_retry_after_is_waited_out(fake_server: FakeServer) -> None:
    """A 503 with Retry-After: 5 waits five seconds (on the client's clock) before retrying."""
    fake_server.script = [throttled(503, "5")]
    fake_server.handler = ok
    clock = FakeClock()
    async with RESTClient(fake_configuration(fake_server.url), clock=clock) as rest:
        async with asyncio.timeout(10), asyncio.TaskGroup() as tg:
            task = tg.create_task(rest.request("GET", "/x"))
            await clock.wait_for_timers()
            assert clock.next_deadline == 5
            assert len(fake_server.requests) == 1
            clock.advance(5)
        assert task.result().status == 200
    assert len(fake_server.requests) == 2


async def test_5xx_without_retry_after_is_not_retried(
    fake_server: FakeServer, rest: RESTClient
) -> None:
    """A 500 or 503 without Retry-After raises at once."""
    fake_server.handler = lambda _: _status(500, "InternalError", "boom")
    with pytest.raises(InternalError):
        await rest.request("GET", "/x")
    fake_server.handler = throttled(503, None)
    with pytest.raises(ServiceUnavailableError):
        await rest.request("GET", "/x")
    assert len(fake_server.requests) == 2


async def test_429_without_retry_after_is_not_retried(
    fake_server: FakeServer, rest: RESTClient
) -> None:
    """A 429 without Retry-After raises at once, as client-go does."""
    fake_server.handler = throttled(429, None)
    with pytest.raises(TooManyRequestsError):
        await rest.request("GET", "/x")
    assert len(fake_server.requests) == 1


async def test_retry_after_beyond_the_limit_raises_at_once(fake_server: FakeServer) -> None:
    """A Retry-After longer than max_retry_wait is not waited out; the error says how long."""
    fake_server.handler = throttled(429, "120")
    async with RESTClient(fake_configuration(fake_server.url), max_retry_wait=60) as rest:
        with pytest.raises(TooManyRequestsError) as info:
            await rest.request("GET", "/x")
    assert info.value.retry_after == 120
    assert len(fake_server.requests) == 1


async def test_get_is_resent_when_the_server_drops_the_connection() -> None:
    """A GET whose connection the server closed without answering is sent again."""
    connections = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        await reader.readuntil(b"\r\n\r\n")
        if connections == 1:
            writer.close()
            return
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with RESTClient(fake_configuration(f"http://127.0.0.1:{port}")) as rest:
            assert (await rest.request("GET", "/x")).json() == {}
            connections = 0
            with pytest.raises(aiohttp.ServerDisconnectedError):
                await rest.request("POST", "/x", body=b"{}")
    finally:
        server.close()
        await server.wait_closed()
    assert connections == 1


# authentication ---------------------------------------------------------------------------


class RotatingCredentials:
    """Credentials that hand out token-<n> and move to the next token on refresh."""

    def __init__(self, *, can_renew: bool = True) -> None:
        self.number = 1
        self.can_renew = can_renew
        self.forced = 0

    async def authorization(self) -> str | None:
        return f"Bearer token-{self.number}"

    async def refresh(self, *, force: bool) -> bool:
        self.forced += force
        if self.can_renew:
            self.number += 1
        return self.can_renew

    def renew_at(self) -> dt.datetime | None:
        return None


async def test_401_renews_the_credentials_and_retries_once(fake_server: FakeServer) -> None:
    """After a 401 the credentials are renewed and the request is sent with the new token."""
    fake_server.script = [lambda _: _status(401, "Unauthorized", "token expired")]
    fake_server.handler = ok
    credentials = RotatingCredentials()
    config = Config(Configuration(host=fake_server.url), credentials=credentials)
    async with RESTClient(config) as rest:
        await rest.request("GET", "/x")
    assert [r.headers["Authorization"] for r in fake_server.requests] == [
        "Bearer token-1",
        "Bearer token-2",
    ]
    assert credentials.forced == 1


async def test_401_that_persists_raises_unauthorized(fake_server: FakeServer) -> None:
    """A 401 after renewing, or when nothing could be renewed, raises UnauthorizedError."""
    fake_server.handler = lambda _: _status(401, "Unauthorized", "no")
    for can_renew, expected_requests in ((True, 2), (False, 1)):
        fake_server.requests.clear()
        config = Config(
            Configuration(host=fake_server.url),
            credentials=RotatingCredentials(can_renew=can_renew),
        )
        async with RESTClient(config) as rest:
            with pytest.raises(UnauthorizedError):
                await rest.request("GET", "/x")
        assert len(fake_server.requests) == expected_requests


# observation ------------------------------------------------------------------------------


async def test_every_request_is_observed_and_counted(fake_server: FakeServer) -> None:
    """Each request reaches the observer and the rest_client_requests_total metric."""
    fake_server.script = [throttled()]
    fake_server.handler = ok
    seen: list[tuple[str, str, str, float]] = []
    host = fake_server.url.removeprefix("http://")
    labels = {"code": "429", "method": "GET", "host": host}
    before = metrics.registry.get_sample_value("rest_client_requests_total", labels) or 0.0
    async with RESTClient(
        fake_configuration(fake_server.url),
        on_request=lambda *args: seen.append(args),
    ) as rest:
        await rest.request("GET", "/x")
    assert [(m, c, h) for m, c, h, _ in seen] == [("GET", "429", host), ("GET", "200", host)]
    assert all(latency >= 0 for *_, latency in seen)
    assert metrics.registry.get_sample_value("rest_client_requests_total", labels) == before + 1


async def test_server_warnings_are_logged_once(fake_server: FakeServer, rest: RESTClient) -> None:
    """A Warning header is logged, and the same warning only once."""

    async def deprecated(_: web.Request) -> web.Response:
        return web.Response(
            body=b"{}",
            content_type="application/json",
            headers={"Warning": '299 - "v1beta1 Thing is deprecated"'},
        )

    fake_server.handler = deprecated
    with capture_logs() as logs:
        await rest.request("GET", "/x")
        await rest.request("GET", "/x")
    warnings = [e for e in logs if e.get("event") == "API server warning"]
    assert [w["warning"] for w in warnings] == ["v1beta1 Thing is deprecated"]


# streaming --------------------------------------------------------------------------------


def streaming(chunks: list[bytes], *, hang_until: asyncio.Event | None = None) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.content_type = "application/json"
        await response.prepare(request)
        for chunk in chunks:
            await response.write(chunk)
        if hang_until is not None:
            await hang_until.wait()
        return response

    return handler


async def read_stream(rest: RESTClient, *, read_timeout: float, into: list[bytes]) -> None:
    async with rest.stream("/api/v1/pods", read_timeout=read_timeout) as lines:
        async for line in lines:
            into.append(line)


async def collect(lines: AsyncIterator[bytes]) -> list[bytes]:
    return [line async for line in lines]


async def test_stream_yields_one_line_per_event_across_chunks(
    fake_server: FakeServer, rest: RESTClient
) -> None:
    """Lines split across chunks, several per chunk, and a final unterminated one all arrive."""
    fake_server.handler = streaming(
        [b'{"type":"ADDED",', b'"n":1}\n{"type":"MODIFIED"}\n\n{"ty', b'pe":"DELETED"}']
    )
    async with rest.stream("/api/v1/pods", query={"watch": "true"}, read_timeout=5) as lines:
        received = await collect(lines)
    assert received == [b'{"type":"ADDED","n":1}', b'{"type":"MODIFIED"}', b'{"type":"DELETED"}']
    assert fake_server.requests[0].query["watch"] == "true"


async def test_stream_failure_raises_before_yielding(
    fake_server: FakeServer, rest: RESTClient
) -> None:
    """A watch answered with 410 raises GoneError on entering the stream."""
    fake_server.handler = lambda _: _status(410, "Expired", "too old resource version")
    with pytest.raises(GoneError):
        async with rest.stream("/api/v1/pods", read_timeout=5):
            pytest.fail("the stream must not open")


async def test_stalled_stream_raises_timeout(fake_server: FakeServer, rest: RESTClient) -> None:
    """A stream with no data for read_timeout seconds raises TimeoutError while iterating."""
    fake_server.handler = streaming([b'{"type":"ADDED"}\n'], hang_until=fake_server.closing)
    received: list[bytes] = []
    async with asyncio.timeout(10):
        with pytest.raises(TimeoutError, match="stalled"):
            await read_stream(rest, read_timeout=0.2, into=received)
    assert received == [b'{"type":"ADDED"}']


async def test_leaving_the_stream_closes_the_connection(
    fake_server: FakeServer, rest: RESTClient
) -> None:
    """Leaving the stream early closes its connection: the server sees the client go."""
    gone = asyncio.Event()

    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        try:
            while True:
                await response.write(b'{"type":"BOOKMARK"}\n')
                await asyncio.sleep(0.01)
        except (ConnectionError, asyncio.CancelledError):
            gone.set()
            raise

    fake_server.handler = endless
    async with rest.stream("/api/v1/pods", read_timeout=5) as lines:
        async for _ in lines:
            break
    async with asyncio.timeout(5):
        await gone.wait()


async def test_open_streams_do_not_take_request_connections(fake_server: FakeServer) -> None:
    """With max_connections=1, requests still go through while a watch stream is open."""
    stream_open = asyncio.Event()

    async def route(request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") == "true":
            response = web.StreamResponse()
            await response.prepare(request)
            await response.write(b'{"type":"ADDED"}\n')
            await fake_server.closing.wait()
        return json_response({"ok": True})

    fake_server.handler = route
    rest = RESTClient(fake_configuration(fake_server.url), max_connections=1)
    async with rest, rest.stream("/w", query={"watch": "true"}, read_timeout=5) as lines:
        async for _ in lines:
            stream_open.set()
            break
        async with asyncio.timeout(5):
            for _ in range(3):
                assert (await rest.request("GET", "/x")).json() == {"ok": True}
    assert stream_open.is_set()


# TLS against the embedded API server --------------------------------------------------------


async def test_kubeconfig_of_the_test_server_reaches_it(env: Environment) -> None:
    """A Config loaded from a real kubeconfig (CA data, token) authenticates over TLS."""
    config = await get_config(kubeconfig=env.kubeconfig_path, environ={})
    async with RESTClient(config) as rest:
        response = await rest.request("GET", "/api/v1/namespaces/default")
    assert response.json()["metadata"]["name"] == "default"


async def test_server_is_not_trusted_without_its_ca(env: Environment) -> None:
    """Without the CA the server's certificate is refused, unless verification is off."""
    configuration = Configuration(host=env.config.host)
    configuration.api_key = dict(env.config.api_key)
    async with RESTClient(configuration) as rest:
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await rest.request("GET", "/version")
    configuration.verify_ssl = False
    async with RESTClient(configuration) as rest:
        assert (await rest.request("GET", "/version")).status == 200
