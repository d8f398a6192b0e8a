"""The webhook HTTPS server: routing, body limits, review decoding, certificate reload."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import orjson
from aiohttp import web
from pydantic import ValidationError

from pyctrl import metrics, tracing
from pyctrl.certwatcher import CertWatcher
from pyctrl.clock import Clock
from pyctrl.httpserver import Listener, ServingOptions
from pyctrl.log import get_logger
from pyctrl.webhook._admission import (
    AdmissionResponse,
    AdmissionReview,
    BadReviewError,
    UserCodeError,
)

if TYPE_CHECKING:
    import os

    from pyctrl.clock import Clock
    from pyctrl.webhook._config import Registration

__all__ = ["CertProvider", "CertWatcher", "ReviewHandler", "Server", "default_cert_dir"]

MAX_BODY_BYTES = 7 * 1024 * 1024
MAX_OBJECT_DEPTH = 100
"""Objects nested deeper are refused (400) before any handler walks them recursively."""
# Below the probe server's own 10 s limit, so a hung handshake is reported as such.
_CHECK_TIMEOUT = 5.0
# Where the readiness check connects when the server listens on every interface.
_LOOPBACK = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}
_log = get_logger("pyctrl.webhook")


def default_cert_dir() -> Path:
    """``$TMPDIR/k8s-webhook-server/serving-certs``, controller-runtime's default."""
    return Path(tempfile.gettempdir()) / "k8s-webhook-server" / "serving-certs"


class ReviewHandler(Protocol):
    """Anything that answers a decoded review body: admission or conversion handlers."""

    name: str

    async def review(self, body: Any) -> web.Response:
        """Answer one decoded JSON request body."""
        ...


class CertProvider(Protocol):
    """Puts the serving certificate into the server's directory, and keeps it current.

    `pyctrl.webhook.SecretCertificates` (self-managed certificates) is one.
    """

    async def provide(self, cert_dir: Path, ready: asyncio.Event) -> None:
        """Write ``tls.crt`` and ``tls.key`` into ``cert_dir``, set ``ready``, keep them current.

        Runs for the server's life (cancelled when it stops).
        """
        ...


@dataclass
class _Route:
    path: str
    handler: ReviewHandler


class Server:
    """Serves admission and conversion webhooks over HTTPS.

    Args:
        host: Address to bind ("" for all interfaces).
        port: Port; 9443 by default, 0 for a free one (see `port` after start).
        cert_dir: Directory holding the serving certificate and key.
        cert_name: Certificate file name in ``cert_dir``.
        key_name: Key file name in ``cert_dir``.
        reload_interval: How often to look for rotated certificate files.
        clock: Where the certificate watcher and the connection timeouts read time.
        serving: Header, read and idle timeouts and the connection cap
            (`pyctrl.httpserver.ServingOptions`; controller-runtime's values by default).
        cert_provider: Writes the certificate into ``cert_dir`` before the server
            loads it and keeps it current (self-managed certificates); None: the files
            come from elsewhere (a mounted Secret, cert-manager).
    """

    def __init__(
        self,
        *,
        host: str = "",
        port: int = 9443,
        cert_dir: str | os.PathLike[str] | None = None,
        cert_name: str = "tls.crt",
        key_name: str = "tls.key",
        reload_interval: float = 1.0,
        clock: Clock | None = None,
        serving: ServingOptions | None = None,
        cert_provider: CertProvider | None = None,
    ) -> None:
        self.host, self.port = host, port
        self.cert_provider = cert_provider
        self.cert_dir = Path(cert_dir) if cert_dir is not None else default_cert_dir()
        self.certs = CertWatcher(
            self.cert_dir / cert_name,
            self.cert_dir / key_name,
            interval=reload_interval,
            clock=clock,
        )
        self.listener = Listener("webhook", serving, clock)
        """The listening socket: open connections, timeouts, rejections."""
        self._routes: dict[str, _Route] = {}
        self._started = asyncio.Event()

    def register(self, path: str, handler: ReviewHandler) -> None:
        """Serve ``handler`` at ``path``; registering a path twice is an error."""
        if not path.startswith("/"):
            raise ValueError(f"webhook path {path!r} must start with '/'")
        if path in self._routes:
            raise ValueError(f"a webhook is already registered at {path}")
        self._routes[path] = _Route(path, handler)

    @property
    def paths(self) -> list[str]:
        """The registered paths."""
        return sorted(self._routes)

    def handler_at(self, path: str) -> ReviewHandler | None:
        """The handler registered at ``path``, if any."""
        route = self._routes.get(path)
        return route.handler if route else None

    @property
    def address(self) -> str | None:
        """``host:port`` this server listens on (the bound port), or None until it listens.

        The host is as given (``0.0.0.0`` or empty for every interface; an IPv6 host in
        brackets). Bind port 0 and read the port here.
        """
        if not self._started.is_set():
            return None
        host = self.host
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"

    async def wait_started(self) -> None:
        """Wait until the server listens (`port` is then the bound port)."""
        await self._started.wait()

    async def check_started(self) -> None:
        """A readiness check: a TLS handshake with the server, as controller-runtime's.

        Fails until the server listens, and whenever a client cannot complete a TLS
        handshake with it (the certificate is not usable, the port does not answer).
        The certificate is not verified: the check is about serving, not trust.

        Raises:
            RuntimeError: not started, or not reachable over TLS (the message says why).
        """
        if not self._started.is_set():
            raise RuntimeError("webhook server has not been started yet")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        host = _LOOPBACK.get(self.host, self.host)
        try:
            async with asyncio.timeout(_CHECK_TIMEOUT):
                _, writer = await asyncio.open_connection(host, self.port, ssl=context)
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()
        except (OSError, TimeoutError) as exc:
            reason = str(exc) or type(exc).__name__
            raise RuntimeError(
                f"webhook server is not reachable over TLS at {host}:{self.port}: {reason}"
            ) from exc

    def _app(self) -> web.Application:
        app = web.Application(
            client_max_size=MAX_BODY_BYTES, middlewares=[self.listener.middleware]
        )
        for path in self._routes:
            app.router.add_post(path, self._serve)
        return app

    async def _serve(self, request: web.Request) -> web.Response:
        route = self._routes[request.path]
        name = route.path
        in_flight = metrics.webhook_requests_in_flight.labels(name)
        in_flight.inc()
        started = time.perf_counter()
        # Counted even if answering fails (a cancelled request is counted as a 500).
        code = "500"
        try:
            tracer = tracing.tracer()
            if tracer is None:
                response = await self._answer(request, route.handler)
            else:
                with tracing.server_span(tracer, f"webhook {name}", request.headers) as span:
                    response = await self._answer(request, route.handler)
                    tracing.set_status_code(span, response.status)
            code = str(response.status)
            return response
        finally:
            in_flight.dec()
            metrics.webhook_latency_seconds.labels(name).observe(time.perf_counter() - started)
            metrics.webhook_requests_total.labels(name, code).inc()

    async def _answer(self, request: web.Request, handler: ReviewHandler) -> web.Response:  # noqa: PLR0911 - one answer per admission outcome
        content_type = request.content_type
        if content_type != "application/json":
            return _plain(400, f"contentType={content_type}, expected application/json")
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return _plain(413, f"request body is larger than {MAX_BODY_BYTES} bytes")
        if not raw:
            return _plain(400, "request body is empty")
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            return _plain(400, f"request body is not valid JSON: {exc}")
        try:
            return await handler.review(body)
        except BadReviewError as exc:
            return _plain(400, str(exc))
        except Exception as exc:
            # Handlers answer user-code failures themselves; this is a bug in pyctrl.
            metrics.webhook_panics_total.inc()
            _log.exception("webhook handler failed", webhook=handler.name)
            return _plain(500, f"internal error: {type(exc).__name__}: {exc}")

    async def start(self) -> None:
        """Serve until cancelled; certificate files are reloaded when they change.

        With a ``cert_provider``, it runs beside the server, which starts once the
        provider has written the certificate.
        """
        provider = self.cert_provider
        if provider is None:
            await self._listen()
            return
        ready = asyncio.Event()
        async with asyncio.TaskGroup() as group:
            group.create_task(provider.provide(self.cert_dir, ready), name="webhook-certificates")
            await ready.wait()
            await self._listen()

    async def _listen(self) -> None:
        self.certs.load()
        # All interfaces: both address families on the given port. With port 0 each
        # family would get a different free port, so bind IPv4 alone and report it.
        host = self.host or ("0.0.0.0" if self.port == 0 else None)
        runner = await self.listener.start(self._app(), host, self.port, self.certs.context)
        try:
            self.port = self.listener.port
            _log.info("serving webhooks", port=self.port, paths=self.paths)
            self._started.set()
            await self.certs.watch()
        finally:
            self._started.clear()
            await self.listener.close()
            await runner.cleanup()


def _plain(status: int, message: str) -> web.Response:
    return web.Response(status=status, text=message + "\n")


class AdmissionEndpoint:
    """Adapts an admission handler (`DefaultingHandler`, `ValidatingHandler`) to the server.

    Args:
        handler: Anything with ``name`` and ``async handle(AdmissionRequest)``.
        registration: How the webhook is configured (rules, options), for
            `pyctrl.webhook.webhook_configurations`; None leaves it out of them.
    """

    def __init__(self, handler: Any, registration: Registration | None = None) -> None:
        self.handler = handler
        self.name: str = handler.name
        self.registration = registration

    async def review(self, body: Any) -> web.Response:
        """Decode an AdmissionReview, run the handler, encode the response."""
        if not isinstance(body, dict):
            raise BadReviewError("request body is not a JSON object")
        if body.get("kind") != "AdmissionReview" or body.get("apiVersion") != "admission.k8s.io/v1":
            raise BadReviewError(
                f"expected apiVersion admission.k8s.io/v1, kind AdmissionReview; got "
                f"apiVersion {body.get('apiVersion')!r}, kind {body.get('kind')!r}"
            )
        try:
            review = AdmissionReview.model_validate(body)
        except ValidationError as exc:
            raise BadReviewError(f"malformed AdmissionReview: {_first_error(exc)}") from None
        if review.request is None:
            raise BadReviewError("AdmissionReview has no request")
        for what, value in (
            ("object", review.request.object),
            ("oldObject", review.request.old_object),
        ):
            if _deeper_than(value, MAX_OBJECT_DEPTH):
                raise BadReviewError(
                    f"request.{what} is nested deeper than {MAX_OBJECT_DEPTH} levels"
                )
        try:
            response = await self.handler.handle(review.request)
        except UserCodeError as exc:
            metrics.webhook_panics_total.inc()
            response = AdmissionResponse(
                uid=review.request.uid,
                allowed=False,
                status={
                    "status": "Failure",
                    "code": 500,
                    "reason": "InternalError",
                    "message": str(exc),
                },
            )
        out = AdmissionReview(response=response)
        return web.Response(
            body=orjson.dumps(out.model_dump(mode="json", by_alias=True, exclude_none=True)),
            content_type="application/json",
        )


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether JSON ``value`` nests more than ``limit`` levels (checked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    return f"{where}: {err['msg']}"
