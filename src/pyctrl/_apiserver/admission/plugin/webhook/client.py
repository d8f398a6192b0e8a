"""The HTTPS client that calls admission and conversion webhooks, and its errors.

As ``k8s.io/apiserver/pkg/util/webhook``: a call's failure is worded as client-go words it;
the webhook's ``failurePolicy`` decides what it means.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import aiohttp
import orjson

from pyctrl._apimachinery.field import Cause
from pyctrl._apimachinery.gofmt import go_quote as _quote
from pyctrl._apiserver.apimachinery.errors import StatusError

if TYPE_CHECKING:
    from collections.abc import Mapping


__all__ = [
    "CONVERSION_TIMEOUT_SECONDS",
    "DEFAULT_TIMEOUT_SECONDS",
    "HEADERS",
    "CallFailedError",
    "CallingWebhookError",
    "Client",
    "Target",
    "denial",
    "host_port",
    "unexpected_status",
    "warning_header",
]

DEFAULT_TIMEOUT_SECONDS = 10
"""``timeoutSeconds`` of an admission webhook that does not set it."""

CONVERSION_TIMEOUT_SECONDS = 30
"""How long a conversion webhook may take (kube-apiserver's webhook client timeout)."""

HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, */*",
    "User-Agent": "kube-apiserver-admission",
}


# --- errors -------------------------------------------------------------------------------


class CallFailedError(Exception):
    """The HTTP exchange failed; the message is worded as client-go words it."""


class CallingWebhookError(Exception):
    """kube-apiserver's ``ErrCallingWebhook``: the webhook's ``failurePolicy`` decides."""

    def __init__(self, webhook: str, reason: str) -> None:
        super().__init__(f"failed calling webhook {_quote(webhook)}: {reason}")
        self.webhook = webhook


def warning_header(warnings: list[str]) -> str:
    return ", ".join(
        '299 - "' + w.replace("\\", "\\\\").replace('"', '\\"') + '"' for w in warnings
    )


def denial(webhook: str, status: Any) -> StatusError:
    """``webhookerrors.ToStatusErr``: the webhook's Status, its message prefixed."""
    result: dict[str, Any] = status if isinstance(status, dict) else {}
    try:
        code = int(result.get("code") or 0)
    except (TypeError, ValueError):
        code = 0
    # kube-apiserver never lets a rejection look like a success.
    code = max(code, 400)
    reason = str(result.get("reason") or "")
    message = str(result.get("message") or "")
    denied = f"admission webhook {_quote(webhook)} denied the request"
    if message:
        text = f"{denied}: {message}"
    elif reason:
        text = f"{denied}: {reason}"
    else:
        text = f"{denied} without explanation"
    details = result.get("details")
    details = details if isinstance(details, dict) else {}
    causes = [
        Cause(str(c.get("reason") or ""), str(c.get("message") or ""), str(c.get("field") or ""))
        for c in details.get("causes") or []
        if isinstance(c, dict)
    ]
    retry = details.get("retryAfterSeconds")
    return StatusError(
        code,
        reason,
        text,
        name=str(details.get("name") or ""),
        group=str(details.get("group") or ""),
        kind=str(details.get("kind") or ""),
        uid=str(details.get("uid") or ""),
        causes=causes,
        retry_after=retry if isinstance(retry, int) and not isinstance(retry, bool) else None,
        details=False,
    )


def unexpected_status(status: int, content_type: str, body: bytes) -> str:
    """client-go's error for a non-2xx answer (``NewGenericServerResponse``)."""
    try:
        decoded = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        decoded = None
    if isinstance(decoded, dict) and decoded.get("kind") == "Status":
        return str(decoded.get("message") or "")
    server_message = "unknown"
    if content_type == "text/plain":
        server_message = body[:1024].decode(errors="replace").strip()
    fixed = {
        400: "the server rejected our request for an unknown reason",
        401: "the server has asked for the client to provide credentials",
        404: "the server could not find the requested resource",
        405: "the server does not allow this method on the requested resource",
        409: "the server reported a conflict",
        422: "the server rejected our request due to an error in our request",
        429: "the server has received too many requests and has asked us to try again later",
        503: "the server is currently unable to handle the request",
        504: "the server was unable to return a response in the time allotted, but may still "
        "be processing the request",
    }
    if status in fixed:
        return fixed[status]
    if status in (403, 415):
        return server_message
    if status >= 500:
        return (
            f"an error on the server ({_quote(server_message)}) has prevented the request "
            "from succeeding"
        )
    return f"the server responded with the status code {status} but did not return more information"


# --- HTTPS client -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """Where one call goes: the URL shown in errors, the URL dialled, TLS settings."""

    shown_url: str
    dial_url: str
    host_port: str
    ssl: ssl.SSLContext
    server_hostname: str | None
    unresolved: str = ""
    """Set when the host cannot be reached at all (an unmapped Service)."""


def host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class Client:
    """Posts reviews over HTTPS, verifying the server with the configuration's caBundle."""

    def __init__(self, services: Mapping[str, str] | None) -> None:
        self.services: dict[str, str] = dict(services or {})
        self._contexts: dict[str, ssl.SSLContext] = {}

    def _context(self, ca_bundle: Any) -> ssl.SSLContext:
        key = ca_bundle if isinstance(ca_bundle, str) else ""
        context = self._contexts.get(key)
        if context is not None:
            return context
        if not key:
            context = ssl.create_default_context()
        else:
            try:
                pem = base64.b64decode(key, validate=True).decode()
            except (binascii.Error, UnicodeDecodeError) as exc:
                raise ValueError(f"caBundle is not base64-encoded PEM: {exc}") from None
            try:
                context = ssl.create_default_context(cadata=pem)
            except (ssl.SSLError, ValueError) as exc:
                raise ValueError(f"unable to load root certificates: {exc}") from None
        self._contexts[key] = context
        return context

    def target(self, client_config: Any, timeout: int) -> Target:
        """Resolve a ``clientConfig``; ValueError (worded for the user) when it is unusable."""
        if not isinstance(client_config, dict):
            raise ValueError("clientConfig must be an object with url or service")
        context = self._context(client_config.get("caBundle"))
        query = f"?timeout={timeout}s"
        url = client_config.get("url")
        service = client_config.get("service")
        if isinstance(url, str) and url:
            parts = urlsplit(url)
            if parts.scheme != "https":
                raise ValueError(f"webhook url {_quote(url)} must use the https scheme")
            if not parts.hostname:
                raise ValueError(f"webhook url {_quote(url)} has no host")
            if parts.query or parts.fragment:
                raise ValueError(f"webhook url {_quote(url)} may not have a query or a fragment")
            port = parts.port or 443
            full = url + query
            return Target(full, full, host_port(parts.hostname, port), context, None)
        if isinstance(service, dict):
            name = str(service.get("name") or "")
            namespace = str(service.get("namespace") or "")
            if not name or not namespace:
                raise ValueError("clientConfig.service needs a name and a namespace")
            path = str(service.get("path") or "")
            port = int(service.get("port") or 443)
            host = f"{name}.{namespace}.svc"
            shown = f"https://{host}:{port}{path}{query}"
            base = self.services.get(f"{namespace}/{name}")
            if base is None:
                return Target(
                    shown,
                    shown,
                    host_port(host, port),
                    context,
                    host,
                    unresolved=(
                        f"dial tcp: lookup {host}: no such host (the embedded API server "
                        "cannot resolve Service names: use clientConfig.url, or map the "
                        f'Service with install(server, services={{"{namespace}/{name}": '
                        '"https://127.0.0.1:<port>"}))'
                    ),
                )
            dial = base.rstrip("/") + path + query
            dial_parts = urlsplit(dial)
            return Target(
                shown,
                dial,
                host_port(dial_parts.hostname or "", dial_parts.port or 443),
                context,
                host,
            )
        raise ValueError("clientConfig must set url or service")

    async def post(self, target: Target, body: Any, seconds: float) -> Any:
        """POST ``body`` as JSON; return the decoded answer or raise `CallFailedError`."""
        shown = f"Post {_quote(target.shown_url)}"
        if target.unresolved:
            raise CallFailedError(f"{shown}: {target.unresolved}")
        data = orjson.dumps(body)
        try:
            async with asyncio.timeout(seconds):
                connector = aiohttp.TCPConnector(ssl=target.ssl, force_close=True)
                async with (
                    aiohttp.ClientSession(
                        connector=connector, timeout=aiohttp.ClientTimeout(total=None)
                    ) as session,
                    session.post(
                        target.dial_url,
                        data=data,
                        headers=HEADERS,
                        server_hostname=target.server_hostname,
                    ) as response,
                ):
                    raw = await response.read()
                    status, content_type = response.status, response.content_type
        except TimeoutError:
            raise CallFailedError(f"{shown}: context deadline exceeded") from None
        except aiohttp.ClientError as exc:
            raise CallFailedError(f"{shown}: {self._describe(exc, target)}") from None
        if not 200 <= status <= 206:
            raise CallFailedError(unexpected_status(status, content_type, raw))
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise CallFailedError(f"couldn't get version/kind; json parse error: {exc}") from None

    @staticmethod
    def _describe(exc: aiohttp.ClientError, target: Target) -> str:  # noqa: PLR0911 - one message per client error, as the webhook client words them
        """The transport error as Go's net/http and crypto/tls word it."""
        if isinstance(exc, aiohttp.ClientConnectorCertificateError):
            cert_error = exc.certificate_error
            text = str(getattr(cert_error, "verify_message", "") or cert_error)
            if "mismatch" in text.lower():
                host = target.server_hostname or target.host_port.rsplit(":", 1)[0].strip("[]")
                return (
                    f"tls: failed to verify certificate: x509: certificate is not valid for {host}"
                )
            if "local issuer" in text or "self-signed" in text or "self signed" in text:
                return (
                    "tls: failed to verify certificate: x509: certificate signed by unknown "
                    "authority"
                )
            return f"tls: failed to verify certificate: {text}"
        if isinstance(exc, aiohttp.ClientSSLError):
            return f"remote error: tls: {exc}"
        if isinstance(exc, aiohttp.ClientConnectorDNSError):
            return f"dial tcp: lookup {target.host_port.rsplit(':', 1)[0]}: no such host"
        if isinstance(exc, aiohttp.ClientConnectorError):
            os_error = exc.os_error
            if isinstance(os_error, ConnectionRefusedError):
                return f"dial tcp {target.host_port}: connect: connection refused"
            return f"dial tcp {target.host_port}: {os_error.strerror or os_error}"
        if isinstance(exc, aiohttp.ServerDisconnectedError):
            return "EOF"
        return str(exc) or type(exc).__name__
