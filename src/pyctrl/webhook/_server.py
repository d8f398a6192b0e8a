"""The webhook HTTPS server: routing, body limits, review decoding, certificate reload."""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson
from aiohttp import web
from pydantic import ValidationError

from pyctrl import metrics, tracing
from pyctrl.clock import Clock, RealClock
from pyctrl.log import get_logger
from pyctrl.webhook._admission import (
    AdmissionResponse,
    AdmissionReview,
    BadReviewError,
    UserCodeError,
)

__all__ = ["CertWatcher", "ReviewHandler", "Server", "default_cert_dir"]

MAX_BODY_BYTES = 7 * 1024 * 1024
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


class CertWatcher:
    """Keeps an SSL context's certificate in step with the files on disk.

    The files are checked every `interval` seconds (by modification time, size and
    inode) and re-read at least every 10 seconds even when they look unchanged, as
    controller-runtime's certwatcher does; new TLS handshakes use the new certificate,
    open connections are unaffected. A pair that does not load (a rotation half done,
    with the certificate replaced and the key not yet) is kept out: the previous
    certificate stays in use until a matching pair is on disk.

    Args:
        cert_file: The certificate (PEM, with any intermediates after it).
        key_file: Its private key (PEM).
        interval: Seconds between checks of the files.
        clock: Where time is read and waited for (a `pyctrl.clock.FakeClock` in tests).
    """

    FORCED_RELOAD_SECONDS = 10.0
    """The files are re-read this long after the last load even if they look unchanged."""

    def __init__(
        self,
        cert_file: Path,
        key_file: Path,
        *,
        interval: float = 1.0,
        clock: Clock | None = None,
    ) -> None:
        self.cert_file, self.key_file = cert_file, key_file
        self.interval = interval
        self.clock: Clock = clock or RealClock()
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        self._stamp: tuple[Any, ...] | None = None
        self._loaded_at = 0.0
        self._changed: asyncio.Condition | None = None
        self.reloads = 0
        """How many times a certificate pair has been loaded."""
        self.read_errors = 0
        """How many reloads failed (files missing or not a matching pair)."""

    def _file_stamp(self) -> tuple[Any, ...]:
        stats = [os.stat(p) for p in (self.cert_file, self.key_file)]
        return tuple((s.st_mtime_ns, s.st_size, s.st_ino) for s in stats)

    def load(self) -> None:
        """Load the certificate pair now; on failure the previous pair stays in use.

        Raises:
            FileNotFoundError: a file is missing (the message names it).
            ssl.SSLError: the files do not hold a matching certificate and key.
        """
        for path in (self.cert_file, self.key_file):
            if not path.is_file():
                raise FileNotFoundError(f"webhook serving certificate file {path} does not exist")
        stamp = self._file_stamp()
        cert_pem, key_pem = self.cert_file.read_bytes(), self.key_file.read_bytes()
        # load_cert_chain reads paths only, and both loads below must see the same bytes
        # even if the files are replaced in between: copy them to a private directory.
        with tempfile.TemporaryDirectory(prefix="pyctrl-webhook-tls-") as tmp:
            cert, key = Path(tmp, "tls.crt"), Path(tmp, "tls.key")
            cert.write_bytes(cert_pem)
            key.write_bytes(key_pem)
            # A failed load_cert_chain leaves its context half updated (the new
            # certificate without a key: every handshake fails), so the live context
            # only gets a pair that a scratch context accepted.
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert, key)
            self.context.load_cert_chain(cert, key)
        self._stamp, self._loaded_at = stamp, self.clock.now()
        self.reloads += 1

    def maybe_reload(self) -> bool:
        """Reload if the files changed or 10 s passed since the last load; True if loaded."""
        try:
            stamp = self._file_stamp()
            if (
                stamp == self._stamp
                and self.clock.now() - self._loaded_at < self.FORCED_RELOAD_SECONDS
            ):
                return False
            self.load()
        except OSError as exc:  # ssl.SSLError is an OSError
            self.read_errors += 1
            _log.warning("keeping the previous webhook certificate", error=str(exc))
            return False
        return True

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    async def wait_for_change(self, seen: int) -> int:
        """Wait until more than ``seen`` pairs were loaded (`reloads`); return the count."""
        changed = self._condition()
        async with changed:
            await changed.wait_for(lambda: self.reloads > seen)
            return self.reloads

    async def wait_for_error(self, seen: int) -> int:
        """Wait until more than ``seen`` reloads failed (`read_errors`); return the count."""
        changed = self._condition()
        async with changed:
            await changed.wait_for(lambda: self.read_errors > seen)
            return self.read_errors

    async def watch(self) -> None:
        """Poll for changes until cancelled."""
        changed = self._condition()
        while True:
            await self.clock.sleep(self.interval)
            stamp = self._stamp
            if self.maybe_reload() and self._stamp != stamp:
                _log.info("webhook certificate reloaded", cert=str(self.cert_file))
            # Every check wakes the waiters; each re-checks its own count.
            async with changed:
                changed.notify_all()


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
        clock: Where the certificate watcher reads and waits for time.
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
    ) -> None:
        self.host, self.port = host, port
        self.cert_dir = Path(cert_dir) if cert_dir is not None else default_cert_dir()
        self.certs = CertWatcher(
            self.cert_dir / cert_name,
            self.cert_dir / key_name,
            interval=reload_interval,
            clock=clock,
        )
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
        app = web.Application(client_max_size=MAX_BODY_BYTES)
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

    async def _answer(self, request: web.Request, handler: ReviewHandler) -> web.Response:
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
        """Serve until cancelled; certificate files are reloaded when they change."""
        self.certs.load()
        runner = web.AppRunner(self._app(), access_log=None)
        await runner.setup()
        try:
            # All interfaces: both address families on the given port. With port 0 each
            # family would get a different free port, so bind IPv4 alone and report it.
            host = self.host or ("0.0.0.0" if self.port == 0 else None)
            site = web.TCPSite(runner, host, self.port, ssl_context=self.certs.context)
            await site.start()
            self.port = int(runner.addresses[0][1])
            _log.info("serving webhooks", port=self.port, paths=self.paths)
            self._started.set()
            await self.certs.watch()
        finally:
            self._started.clear()
            await runner.cleanup()


def _plain(status: int, message: str) -> web.Response:
    return web.Response(status=status, text=message + "\n")


class AdmissionEndpoint:
    """Adapts an admission handler (`DefaultingHandler`, `ValidatingHandler`) to the server."""

    def __init__(self, handler: Any) -> None:
        self.handler = handler
        self.name: str = handler.name

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


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    return f"{where}: {err['msg']}"
