"""The metrics server: ``/metrics`` over HTTP, or over HTTPS behind authn/authz.

controller-runtime's ``pkg/metrics/server``. The Manager runs one `Server` for
``/metrics`` (``Options(bind_address=":8080")``; ``"0"`` disables it) and, when asked,
one for ``/debug`` (see `pyctrl.debug`) with the same `Options`:

- ``secure_serving=True`` serves HTTPS (TLS 1.2 or newer). With ``cert_dir`` the
  certificate is ``cert_dir/cert_name`` and ``cert_dir/key_name`` (``tls.crt``,
  ``tls.key``), reloaded when the files change (`pyctrl.certwatcher.CertWatcher`, as the
  webhook server does); without it a self-signed certificate is made at start, as
  controller-runtime does.
- ``filter_provider`` (e.g. `pyctrl.filters.with_authentication_and_authorization`)
  builds a `pyctrl.filters.Filter` from the manager's REST client; every request passes
  it before any handler runs, so a request with a bad token never reaches one.
- ``extra_handlers`` serves more paths (``{"/custom": handler}``) on the same server,
  behind the same filter.

Kubebuilder's scaffold (v4) runs with ``secure_serving=True`` and the authn/authz filter
on ``:8443``; the generated manifests then include the Service, the roles and a
ServiceMonitor (``pyctrl generate``).
"""

from __future__ import annotations

import asyncio
import ipaddress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from aiohttp import web

from pyctrl import metrics
from pyctrl.certs import generate_ca, issue_serving_cert, server_ssl_context
from pyctrl.certwatcher import CertWatcher
from pyctrl.errors import ConfigError
from pyctrl.httpserver import Listener, ServingOptions
from pyctrl.log import get_logger

if TYPE_CHECKING:
    import ssl
    from collections.abc import Mapping

    from pyctrl.client import RESTClient
    from pyctrl.clock import Clock
    from pyctrl.filters import Filter, FilterProvider, Handler

__all__ = ["Options", "Server", "check_debug_exposure", "is_loopback", "parse_address"]

_log = get_logger("pyctrl.metricsserver")


def parse_address(address: str) -> tuple[str, int] | None:
    """Parse ``host:port``, ``:port`` or ``"0"`` (disabled, returns None)."""
    if address in ("", "0"):
        return None
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"invalid bind address {address!r}: expected host:port or :port")
    return (host or "0.0.0.0", int(port))


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a bind address's host) is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_debug_exposure(
    address: str, options: Options | None, *, allow_unauthenticated: bool = False
) -> None:
    """Refuse to serve `pyctrl.debug` unauthenticated beyond loopback.

    The debug endpoints show every task's stack and the operator's source paths. They
    are served with the metrics server's options: with a ``filter_provider`` they are
    behind the API server's authentication and authorization, like secure metrics;
    without one they may listen on a loopback address only (``127.0.0.1:8082``, reached
    with ``kubectl port-forward``), unless ``allow_unauthenticated`` says otherwise, which
    is logged as a warning.

    Args:
        address: The debug bind address (``""`` or ``"0"``: disabled).
        options: The metrics server's options.
        allow_unauthenticated: Serve without authentication on any address anyway.

    Raises:
        ConfigError: unauthenticated on a non-loopback address, not allowed.
    """
    bound = parse_address(address)
    if bound is None or (options is not None and options.filter_provider is not None):
        return
    if is_loopback(bound[0]):
        return
    if allow_unauthenticated:
        _log.warning(
            "serving /debug without authentication: anyone who reaches "
            f"{address} reads every task's stack and the operator's source paths"
        )
        return
    raise ConfigError(
        f"debug bind address {address!r} would show every task's stack and source path to "
        "anyone who reaches it: serve metrics securely (--metrics-secure, or a "
        "filter_provider such as with_authentication_and_authorization), bind /debug to "
        "loopback (127.0.0.1:8082, then kubectl port-forward), or allow it explicitly "
        "(--debug-allow-unauthenticated, Options.debug_allow_unauthenticated)"
    )


@dataclass(frozen=True)
class Options:
    """How the metrics (and debug) server is served (``metricsserver.Options``).

    Attributes:
        bind_address: ``host:port``; None takes the Manager's ``metrics_bind_address``.
        secure_serving: HTTPS instead of HTTP.
        filter_provider: Builds the filter every request passes (authn/authz).
        cert_dir: Directory of the serving certificate; None makes a self-signed one.
        cert_name: Certificate file in ``cert_dir``.
        key_name: Key file in ``cert_dir``.
        extra_handlers: More paths to serve (GET), behind the same filter.
        serving: Header, read and idle timeouts and the connection cap
            (`pyctrl.httpserver.ServingOptions`; controller-runtime's values by default).
    """

    bind_address: str | None = None
    secure_serving: bool = False
    filter_provider: FilterProvider | None = None
    cert_dir: str | Path | None = None
    cert_name: str = "tls.crt"
    key_name: str = "tls.key"
    extra_handlers: Mapping[str, Handler] = field(default_factory=dict)
    serving: ServingOptions = field(default_factory=ServingOptions)

    def __post_init__(self) -> None:
        if self.bind_address is not None:
            parse_address(self.bind_address)
        for path in self.extra_handlers:
            if not path.startswith("/"):
                raise ValueError(f"extra handler path {path!r} must start with '/'")


async def _serve_metrics(request: web.Request) -> web.Response:
    del request
    return web.Response(
        body=metrics.exposition(), headers={"Content-Type": metrics.CONTENT_TYPE_LATEST}
    )


class Server:
    """Serves ``/metrics`` (or other handlers) as `Options` say; a Manager runnable.

    Args:
        host: Address to bind.
        port: Port (0 for a free one; `port` is the bound one after `started`).
        options: Secure serving, the filter, certificates, extra handlers.
        rest: The manager's client, for the filter provider.
        handlers: The paths to serve; ``{"/metrics": ...}`` by default.
        name: What it serves, for logs (``metrics``, ``debug``).
        clock: Where the connection timeouts read time.
    """

    def __init__(
        self,
        host: str,
        port: int,
        options: Options | None = None,
        *,
        rest: RESTClient | None = None,
        handlers: Mapping[str, Handler] | None = None,
        name: str = "metrics",
        clock: Clock | None = None,
    ) -> None:
        self.host, self.port = host, port
        self.options = options or Options()
        self.name = name
        self.handlers: dict[str, Handler] = dict(
            handlers if handlers is not None else {"/metrics": _serve_metrics}
        )
        self.handlers.update(self.options.extra_handlers)
        self.filter: Filter | None = None
        if self.options.filter_provider is not None:
            if rest is None:
                raise ValueError("a filter provider needs the manager's REST client")
            self.filter = self.options.filter_provider(rest)
        self.certs: CertWatcher | None = None
        self.listener = Listener(name, self.options.serving, clock)
        """The listening socket: open connections, timeouts, rejections."""
        self.started = asyncio.Event()

    @property
    def address(self) -> str | None:
        """``host:port`` this server listens on (the bound port), or None until it listens.

        The host is as given (``0.0.0.0`` or empty for every interface; an IPv6 host in
        brackets). Bind port 0 and read the port here.
        """
        if not self.started.is_set():
            return None
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def scheme(self) -> str:
        """``https`` with secure serving, else ``http``."""
        return "https" if self.options.secure_serving else "http"

    def _ssl_context(self) -> ssl.SSLContext | None:
        options = self.options
        if not options.secure_serving:
            return None
        if options.cert_dir is None:
            _log.info(f"serving {self.name} with a self-signed certificate")
            ca = generate_ca(f"pyctrl-{self.name}-ca")
            return server_ssl_context(issue_serving_cert(ca, ["localhost", "127.0.0.1"]))
        directory = Path(options.cert_dir)
        self.certs = CertWatcher(
            directory / options.cert_name,
            directory / options.key_name,
            what=f"{self.name} serving certificate",
        )
        self.certs.load()
        return self.certs.context

    def _wrap(self, handler: Handler) -> Handler:
        filter_ = self.filter
        if filter_ is None:
            return handler

        async def filtered(request: web.Request) -> web.StreamResponse:
            return await filter_(request, handler)

        return filtered

    async def start(self) -> None:
        """Serve until cancelled (certificate files are watched for rotation)."""
        context = self._ssl_context()
        app = web.Application(middlewares=[self.listener.middleware])
        for path, handler in self.handlers.items():
            app.router.add_get(path, self._wrap(handler))
        runner = await self.listener.start(app, self.host, self.port, context)
        try:
            self.port = self.listener.port
            _log.info(
                f"serving {self.name}",
                host=self.host,
                port=self.port,
                secure=self.options.secure_serving,
                filtered=self.filter is not None,
            )
            self.started.set()
            if self.certs is not None:
                await self.certs.watch()
            else:
                await asyncio.Event().wait()
        finally:
            self.started.clear()
            await self.listener.close()
            await runner.cleanup()
