"""Serving HTTP with bounded connections: header, read and idle timeouts, a connection cap.

controller-runtime's ``pkg/internal/httpserver``: every server it runs (webhooks,
metrics, probes, pprof) is an ``http.Server`` with ``ReadHeaderTimeout`` 32 s (kube-
apiserver's own, just shy of its request timeout bound), ``IdleTimeout`` 90 s (Go's
``http.DefaultTransport`` keep-alive) and ``MaxHeaderBytes`` 1 MiB. aiohttp has no
header timeout, so a client that sends its headers a byte at a time keeps a connection
(and, over TLS, its buffers) for as long as it likes. `serve` puts a guard in front of
each connection (`Listener`) that applies `ServingOptions`:

- ``read_header_timeout``: from the connection's start (after the TLS handshake), or
  from the first byte of a following request, until the request's headers are read;
- ``read_timeout``: from the same start until the request's body is read (controller-
  runtime sets none; pyctrl bounds it because the API server gives up on a webhook after
  at most 30 s anyway);
- ``idle_timeout``: how long a keep-alive connection waits for its next request;
- ``tls_handshake_timeout``: the TLS handshake (Go uses the shortest of its read
  timeouts, as here by default);
- ``max_connections``: open connections beyond it are closed at once (and counted in
  `Listener.rejected`), so a flood of idle or slow clients cannot grow memory without
  bound.

A connection that runs out of time is closed; its handler, if one runs, sees the
connection lost. Time is read from a `pyctrl.clock.Clock` (a `FakeClock` in tests);
only the TLS handshake timeout is asyncio's own.
"""

from __future__ import annotations

import asyncio
import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web

from pyctrl.clock import Clock, RealClock
from pyctrl.log import get_logger

if TYPE_CHECKING:
    import ssl

    from pyctrl.clock import TimerHandle
    from pyctrl.filters import Handler

__all__ = ["Listener", "ServingOptions"]

_log = get_logger("pyctrl.httpserver")


@dataclass(frozen=True)
class ServingOptions:
    """How long a connection may take, and how many may be open.

    Attributes:
        read_header_timeout: Seconds to read a request's headers (32, controller-runtime's).
        read_timeout: Seconds to read a whole request, body included (60).
        idle_timeout: Seconds a keep-alive connection waits for its next request (90,
            controller-runtime's).
        tls_handshake_timeout: Seconds for the TLS handshake; None takes the shorter of
            the header and read timeouts, as Go's ``http.Server`` does.
        max_connections: Open connections at most; more are closed at once.
    """

    read_header_timeout: float = 32.0
    read_timeout: float = 60.0
    idle_timeout: float = 90.0
    tls_handshake_timeout: float | None = None
    max_connections: int = 1024

    def __post_init__(self) -> None:
        for name in ("read_header_timeout", "read_timeout", "idle_timeout"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)!r}")
        if self.tls_handshake_timeout is not None and not self.tls_handshake_timeout > 0:
            raise ValueError(
                f"tls_handshake_timeout must be positive, got {self.tls_handshake_timeout!r}"
            )
        if self.max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, got {self.max_connections!r}")

    @property
    def handshake_timeout(self) -> float:
        """The TLS handshake's timeout in seconds."""
        if self.tls_handshake_timeout is not None:
            return self.tls_handshake_timeout
        return min(self.read_header_timeout, self.read_timeout)


class _State(enum.Enum):
    HEADERS = "reading headers"
    BODY = "reading the body"
    HANDLING = "handling"
    IDLE = "idle"


class _Guard(asyncio.Protocol):
    """Stands in front of aiohttp's protocol for one connection and times it out."""

    def __init__(self, listener: Listener, inner: Any) -> None:
        self._listener, self._inner = listener, inner
        self._transport: asyncio.BaseTransport | None = None
        self._timer: TimerHandle | None = None
        self._state = _State.HEADERS
        self._request_started = 0.0
        self._counted = False

    @property
    def state(self) -> str:
        """What the connection is doing: reading headers, reading the body, handling, idle."""
        return self._state.value

    # -- asyncio.Protocol, forwarded to aiohttp's RequestHandler ----------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport
        listener = self._listener
        if len(listener.connections) >= listener.options.max_connections:
            listener.rejected += 1
            if listener.rejected == 1 or listener.rejected % 100 == 0:
                _log.warning(
                    f"{listener.name} server: too many connections, closing new ones",
                    max_connections=listener.options.max_connections,
                    rejected=listener.rejected,
                )
            transport.abort()  # type: ignore[attr-defined]
            return
        self._counted = True
        listener.connections.add(self)
        listener.guards[self._inner] = self
        self._expect_request(listener.options.read_header_timeout)
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self._state is _State.IDLE:
            self._expect_request(self._listener.options.read_header_timeout)
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        result: bool | None = self._inner.eof_received()
        return result

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timer()
        if not self._counted:
            return
        self._listener.connections.discard(self)
        self._listener.guards.pop(self._inner, None)
        self._inner.connection_lost(exc)

    # -- the request's progress, told by the listener's middleware ----------------------

    def headers_read(self, request: web.BaseRequest) -> None:
        """The request's headers are in: its body has until the read deadline."""
        if self._state is not _State.HEADERS:
            return
        self._state = _State.BODY
        deadline = self._request_started + self._listener.options.read_timeout
        self._arm(deadline)
        request.content.on_eof(self._body_read)

    def _body_read(self) -> None:
        if self._state is _State.BODY:
            self._state = _State.HANDLING
            self._cancel_timer()

    def response_done(self) -> None:
        """The handler answered: wait for the next request, at most the idle timeout."""
        self._state = _State.IDLE
        self._arm(self._listener.clock.now() + self._listener.options.idle_timeout)

    # -- timers -------------------------------------------------------------------------

    def _expect_request(self, header_timeout: float) -> None:
        self._state = _State.HEADERS
        self._request_started = self._listener.clock.now()
        self._arm(self._request_started + header_timeout)

    def _arm(self, deadline: float) -> None:
        self._cancel_timer()
        self._timer = self._listener.clock.call_at(deadline, self._expire)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self) -> None:
        self._timer = None
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        self._listener.timed_out[self._state.value] = (
            self._listener.timed_out.get(self._state.value, 0) + 1
        )
        _log.debug(f"{self._listener.name} server: closing a connection {self._state.value}")
        if self._state is _State.IDLE:
            transport.close()
        else:
            transport.abort()  # type: ignore[attr-defined]


class Listener:
    """Serves an aiohttp application through per-connection guards.

    Build the application with `middleware` first (it tells each connection's guard
    when a request's headers are read and when it was answered), then `start`::

        listener = Listener("metrics", ServingOptions(), clock)
        app = web.Application(middlewares=[listener.middleware])
        runner = await listener.start(app, "0.0.0.0", 8443, ssl_context)
        ...
        await listener.close()
        await runner.cleanup()

    Args:
        name: What is served, for logs.
        options: The timeouts and the connection cap.
        clock: Where the timeouts read time.

    Attributes:
        port: The bound port, once started.
        connections: The open connections.
        rejected: Connections closed because `ServingOptions.max_connections` were open.
        timed_out: Connections closed for a timeout, by what they were doing
            (``reading headers``, ``reading the body``, ``idle``).
        guards: Each open connection's guard, by aiohttp's protocol object.
    """

    def __init__(
        self, name: str, options: ServingOptions | None = None, clock: Clock | None = None
    ) -> None:
        self.name = name
        self.options = options or ServingOptions()
        self.clock: Clock = clock or RealClock()
        self.port = 0
        self.connections: set[_Guard] = set()
        self.rejected = 0
        self.timed_out: dict[str, int] = {}
        self.guards: dict[Any, _Guard] = {}
        self._server: asyncio.Server | None = None

    async def start(
        self,
        app: web.Application,
        host: str | None,
        port: int,
        ssl_context: ssl.SSLContext | None = None,
    ) -> web.AppRunner:
        """Listen on ``host:port`` (None: every interface; port 0: a free one).

        Returns:
            The runner: clean it up after `close`.
        """
        # aiohttp's own keep-alive timer stays as a backstop, at the same value.
        runner = web.AppRunner(app, access_log=None, keepalive_timeout=self.options.idle_timeout)
        await runner.setup()
        server = runner.server
        assert server is not None  # set up above

        def guarded() -> _Guard:
            return _Guard(self, server())

        try:
            self._server = await asyncio.get_running_loop().create_server(
                guarded,
                host,
                port,
                ssl=ssl_context,
                ssl_handshake_timeout=self.options.handshake_timeout if ssl_context else None,
            )
        except BaseException:
            await runner.cleanup()
            raise
        self.port = int(self._server.sockets[0].getsockname()[1])
        return runner

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """An aiohttp middleware: reports each request's progress to its connection's guard."""
        guard = self.guards.get(request.protocol)
        if guard is None:
            return await handler(request)
        guard.headers_read(request)
        try:
            return await handler(request)
        finally:
            guard.response_done()

    async def close(self) -> None:
        """Stop listening (the runner's cleanup then ends the open connections)."""
        if self._server is not None:
            self._server.close()
            self._server = None
