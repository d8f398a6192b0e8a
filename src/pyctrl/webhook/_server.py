"""The webhook HTTPS server: routing, body limits, review decoding, certificate reload."""

from __future__ import annotations

import asyncio
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

from pyctrl import metrics
from pyctrl.log import get_logger
from pyctrl.webhook._admission import (
    AdmissionResponse,
    AdmissionReview,
    BadReviewError,
    UserCodeError,
)

__all__ = ["CertWatcher", "ReviewHandler", "Server", "default_cert_dir"]

MAX_BODY_BYTES = 7 * 1024 * 1024
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
    inode) and re-read at least every 10 seconds, as controller-runtime's certwatcher
    does; new TLS handshakes use the new certificate, open connections are unaffected.
    A half-written pair (a rotation in progress) is kept out: the previous certificate
    stays in use until the new pair loads.
    """

    def __init__(self, cert_file: Path, key_file: Path, *, interval: float = 1.0) -> None:
        self.cert_file, self.key_file = cert_file, key_file
        self.interval = interval
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        self._stamp: tuple[Any, ...] | None = None
        self._loaded_at = 0.0
        self._changed: asyncio.Condition | None = None
        self.reloads = 0
        """How many times a certificate pair has been loaded."""

    def _file_stamp(self) -> tuple[Any, ...]:
        stats = [os.stat(p) for p in (self.cert_file, self.key_file)]
        return tuple((s.st_mtime_ns, s.st_size, s.st_ino) for s in stats)

    def load(self) -> None:
        """Load the certificate pair now.

        Raises:
            FileNotFoundError: a file is missing (the message names it).
            ssl.SSLError: the files do not hold a matching certificate and key.
        """
        for path in (self.cert_file, self.key_file):
            if not path.is_file():
                raise FileNotFoundError(f"webhook serving certificate file {path} does not exist")
        stamp = self._file_stamp()
        self.context.load_cert_chain(self.cert_file, self.key_file)
        self._stamp, self._loaded_at = stamp, time.monotonic()
        self.reloads += 1

    def maybe_reload(self) -> bool:
        """Reload if the files changed (or 10 s passed); return True if the files changed."""
        try:
            stamp = self._file_stamp()
            if stamp == self._stamp and time.monotonic() - self._loaded_at < 10.0:
                return False
            self.load()
        except (OSError, ssl.SSLError) as exc:
            _log.warning("keeping the previous webhook certificate", error=str(exc))
            return False
        return True

    async def wait_for_change(self, seen: int) -> int:
        """Wait until a rotated pair is loaded after ``seen`` loads; return the new count."""
        if self._changed is None:
            self._changed = asyncio.Condition()
        async with self._changed:
            await self._changed.wait_for(lambda: self.reloads > seen)
            return self.reloads

    async def watch(self) -> None:
        """Poll for changes until cancelled."""
        if self._changed is None:
            self._changed = asyncio.Condition()
        while True:
            await asyncio.sleep(self.interval)
            stamp = self._stamp
            if self.maybe_reload() and self._stamp != stamp:
                _log.info("webhook certificate reloaded", cert=str(self.cert_file))
                async with self._changed:
                    self._changed.notify_all()


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
    ) -> None:
        self.host, self.port = host, port
        self.cert_dir = Path(cert_dir) if cert_dir is not None else default_cert_dir()
        self.certs = CertWatcher(
            self.cert_dir / cert_name, self.cert_dir / key_name, interval=reload_interval
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
        """A readiness check: fails until the server is listening."""
        if not self._started.is_set():
            raise RuntimeError("webhook server is not serving yet")

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
        try:
            response = await self._answer(request, route.handler)
        finally:
            in_flight.dec()
            metrics.webhook_latency_seconds.labels(name).observe(time.perf_counter() - started)
        metrics.webhook_requests_total.labels(name, str(response.status)).inc()
        return response

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
