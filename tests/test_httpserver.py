"""The servers' connection guards: header, body and idle timeouts, and the connection cap.

The metrics server (plain HTTP) and the webhook server (HTTPS) run on a `FakeClock`:
a client that stalls is cut off exactly when the clock passes its deadline, not before,
and without any test waiting for real time.
"""

from __future__ import annotations

import asyncio
import ssl
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import pytest

from pyctrl.certs import generate_ca, issue_serving_cert, write_cert_dir
from pyctrl.clock import FakeClock
from pyctrl.httpserver import Listener, ServingOptions
from pyctrl.metricsserver import Options as MetricsServerOptions
from pyctrl.metricsserver import Server as MetricsServer
from pyctrl.testing import eventually
from pyctrl.webhook import Server as WebhookServer

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from aiohttp import web

REQUEST = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"


@asynccontextmanager
async def metrics_server(
    clock: FakeClock, serving: ServingOptions | None = None
) -> AsyncIterator[MetricsServer]:
    server = MetricsServer(
        "127.0.0.1", 0, MetricsServerOptions(serving=serving or ServingOptions()), clock=clock
    )
    task = asyncio.create_task(server.start())
    try:
        async with asyncio.timeout(10):
            await server.started.wait()
        yield server
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def connect(server: MetricsServer) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    return reader, writer


async def connected(listener: Listener, count: int) -> None:
    async def check() -> bool:
        return len(listener.connections) == count

    await eventually(check, message=f"{count} open connections")


async def closed(reader: asyncio.StreamReader) -> bool:
    """Whether the server closed the connection (EOF or reset), reading what is left."""
    try:
        async with asyncio.timeout(10):
            while await reader.read(65536):
                pass
    except ConnectionResetError:
        pass
    return True


async def answer(reader: asyncio.StreamReader) -> bytes:
    """One response's status line and headers."""
    async with asyncio.timeout(10):
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        )
        await reader.readexactly(length)
    return head


async def test_headers_sent_slowly_are_cut_off_at_the_header_timeout() -> None:
    """Byte by byte, a request's headers get 32 s in all: every byte does not buy more."""
    clock = FakeClock()
    async with metrics_server(clock) as server:
        reader, writer = await connect(server)
        await connected(server.listener, 1)
        for byte in REQUEST[:20]:
            writer.write(bytes([byte]))
            await writer.drain()
            clock.advance(1.5)  # 30 s in all: still within 32 s
        assert len(server.listener.connections) == 1
        clock.advance(2.5)
        assert await closed(reader)
        await connected(server.listener, 0)
        assert server.listener.timed_out == {"reading headers": 1}
        writer.close()


async def test_a_connection_sending_nothing_is_closed() -> None:
    """A connection that never sends a request is closed at the header timeout too."""
    clock = FakeClock()
    async with metrics_server(clock, ServingOptions(read_header_timeout=5)) as server:
        reader, writer = await connect(server)
        await connected(server.listener, 1)
        clock.advance(4.9)
        assert len(server.listener.connections) == 1
        clock.advance(0.2)
        assert await closed(reader)
        writer.close()


async def test_an_idle_keep_alive_connection_is_closed_after_90_s() -> None:
    """After an answer, a keep-alive connection may wait 90 s for its next request."""
    clock = FakeClock()
    async with metrics_server(clock) as server:
        reader, writer = await connect(server)
        writer.write(REQUEST)
        assert b"200 OK" in await answer(reader)
        clock.advance(89)
        writer.write(REQUEST)  # still open: a second request is answered
        assert b"200 OK" in await answer(reader)
        clock.advance(89)
        assert len(server.listener.connections) == 1
        clock.advance(2)
        assert await closed(reader)
        assert server.listener.timed_out == {"idle": 1}
        writer.close()


async def test_the_cap_closes_connections_beyond_it_and_others_are_still_answered() -> None:
    """With max_connections open, a new connection is closed at once; a freed slot is reused."""
    clock = FakeClock()
    async with metrics_server(clock, ServingOptions(max_connections=2)) as server:
        stalled = [await connect(server) for _ in range(2)]
        await connected(server.listener, 2)
        reader, writer = await connect(server)
        assert await closed(reader)
        writer.close()
        assert server.listener.rejected == 1
        stalled[0][1].close()
        await connected(server.listener, 1)
        reader, writer = await connect(server)
        writer.write(REQUEST)
        assert b"200 OK" in await answer(reader)
        writer.close()
        for _, other in stalled[1:]:
            other.close()


class Echo:
    """A review handler that reads nothing: the server reads the body before calling it."""

    name = "echo"

    async def review(self, body: object) -> web.Response:
        from aiohttp import web

        return web.json_response(body)


@asynccontextmanager
async def webhook_server(clock: FakeClock, tmp_path: Path) -> AsyncIterator[WebhookServer]:
    ca = generate_ca()
    write_cert_dir(tmp_path, issue_serving_cert(ca))
    server = WebhookServer(host="127.0.0.1", port=0, cert_dir=tmp_path, clock=clock)
    server.register("/echo", Echo())
    task = asyncio.create_task(server.start())
    try:
        async with asyncio.timeout(10):
            await server.wait_started()
        yield server
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


def _client_context() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


async def tls_connect(
    server: WebhookServer,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", server.port, ssl=_client_context())


def _post(body: bytes, length: int | None = None) -> bytes:
    """A POST to /echo whose Content-Length is ``length`` (default: the body's)."""
    head = (
        "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body) if length is None else length}\r\n\r\n"
    )
    return head.encode() + body


async def test_tls_headers_sent_slowly_are_cut_off(tmp_path: Path) -> None:
    """Over TLS too, headers trickling in are cut off at the header timeout."""
    clock = FakeClock()
    async with webhook_server(clock, tmp_path) as server:
        reader, writer = await tls_connect(server)
        await connected(server.listener, 1)
        writer.write(b"POST /echo HTTP/1.1\r\nHo")
        await writer.drain()
        clock.advance(31)
        assert len(server.listener.connections) == 1
        clock.advance(2)
        assert await closed(reader)
        assert server.listener.timed_out == {"reading headers": 1}
        writer.close()


async def test_a_body_sent_slowly_is_cut_off_at_the_read_timeout(tmp_path: Path) -> None:
    """Headers in time, but a body that does not arrive in 60 s from the start: closed."""
    clock = FakeClock()
    async with webhook_server(clock, tmp_path) as server:
        reader, writer = await tls_connect(server)
        writer.write(_post(b"[1,", length=100))
        await writer.drain()

        async def reading_body() -> bool:
            return any(g.state == "reading the body" for g in server.listener.connections)

        await eventually(reading_body)
        clock.advance(59)
        assert len(server.listener.connections) == 1
        clock.advance(2)
        assert await closed(reader)
        assert server.listener.timed_out == {"reading the body": 1}
        writer.close()


async def test_a_whole_request_is_answered_over_tls(tmp_path: Path) -> None:
    """The guards let an ordinary request through."""
    clock = FakeClock()
    async with webhook_server(clock, tmp_path) as server:
        reader, writer = await tls_connect(server)
        writer.write(_post(b"[1,2]"))
        assert b"200 OK" in await answer(reader)
        clock.advance(61)  # past the read timeout: answered requests are not cut off
        assert len(server.listener.connections) == 1
        writer.close()


def test_options_are_checked() -> None:
    """Timeouts must be positive and the cap at least 1; the handshake takes the shorter."""
    with pytest.raises(ValueError, match="read_header_timeout must be positive"):
        ServingOptions(read_header_timeout=0)
    with pytest.raises(ValueError, match="max_connections must be at least 1"):
        ServingOptions(max_connections=0)
    assert ServingOptions().handshake_timeout == 32.0
    assert ServingOptions(read_timeout=10).handshake_timeout == 10.0
