"""The raw HTTP door to the API server: one aiohttp session, auth, retries, streaming."""

from __future__ import annotations

import contextlib
import contextvars
import os
import ssl
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

import aiohttp
import orjson
from yarl import URL

from pyctrl._fence import work_fences
from pyctrl._kubernetes import Configuration
from pyctrl.clock import Clock, RealClock
from pyctrl.config import Config
from pyctrl.errors import (
    APIError,
    ConfigError,
    ConnectionCheckError,
    LeaseLostError,
    UnauthorizedError,
)
from pyctrl.log import get_logger
from pyctrl.metrics import lease_fenced_writes_total, rest_client_requests_total

if TYPE_CHECKING:
    from types import TracebackType

    from prometheus_client import Counter

    from pyctrl._fence import LeaseFence

__all__ = ["RESTClient", "RequestObserver", "Response"]

_log = get_logger("pyctrl.client")

RequestObserver = Callable[[str, str, str, float], None]
"""Called after every HTTP request with (method, code, host, latency seconds).

``code`` is the status code as a string, or ``"<error>"`` when no response came.
"""

QueryValue = str | int | bool | Sequence[str]

# Large objects (an etcd value may be 1.5 MiB) arrive in one watch line.
_READ_BUFSIZE = 2**21
_MAX_WARNINGS_REMEMBERED = 1024


@dataclass(frozen=True, slots=True)
class Response:
    """A successful (status < 400) answer from the API server.

    Attributes:
        status: The HTTP status code.
        headers: The response headers (case-insensitive).
        body: The raw body.
    """

    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        """The body decoded as JSON (with orjson)."""
        return orjson.loads(self.body)


_write_fence: contextvars.ContextVar[tuple[LeaseFence, ...]] = contextvars.ContextVar(
    "pyctrl_write_fence", default=()
)
_READS = frozenset({"GET", "HEAD"})


def _fences(method: str, fence: LeaseFence | None) -> tuple[LeaseFence, ...]:
    """The request's fence, and for a write those bound to the work sending it (a slot's)."""
    bound = () if method in _READS else work_fences()
    return bound if fence is None else (fence, *bound)


def _check_fence(fences: tuple[LeaseFence, ...], method: str) -> None:
    try:
        for fence in fences:
            fence.raise_if_lost()
    except LeaseLostError:
        lease_fenced_writes_total.labels(method).inc()
        raise


class _FencedRequest(aiohttp.ClientRequest):
    """Checks the request's Lease fence in the very step that writes the body.

    aiohttp writes a request's body (with its buffered headers) from a task of its own,
    scheduled when the request is sent: a process paused in between would otherwise
    send, on resume, a write checked before the pause. The fence travels in a context
    variable, which the task inherits.
    """

    async def write_bytes(self, writer: Any, conn: Any, *args: Any, **kwargs: Any) -> None:
        fences = _write_fence.get()
        if fences:
            try:
                _check_fence(fences, self.method)
            except LeaseLostError as exc:
                # Nothing was sent (headers wait for the body): fail the response instead.
                if conn.protocol is not None:
                    conn.protocol.set_exception(exc)
                conn.close()
                return
        await super().write_bytes(writer, conn, *args, **kwargs)


def _ssl_context(config: Config) -> ssl.SSLContext:
    configuration = config.configuration
    try:
        context = ssl.create_default_context(cafile=configuration.ssl_ca_cert or None)
        if configuration.cert_file:
            context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    except (OSError, ssl.SSLError) as exc:
        # The files may be temporary copies of inline data: name the kubeconfig they came from.
        raise ConfigError(
            f"{config.source}: cannot set up TLS for {configuration.host}: {exc} "
            f"(CA {configuration.ssl_ca_cert!r}, client certificate {configuration.cert_file!r})"
        ) from exc
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _env_proxy(url: URL) -> tuple[URL | None, aiohttp.BasicAuth | None]:
    """The proxy HTTPS_PROXY / HTTP_PROXY / NO_PROXY name for ``url``, as client-go honours."""
    from aiohttp.helpers import get_env_proxy_for_url

    try:
        return get_env_proxy_for_url(url)
    except LookupError:
        return None, None


def _query_items(query: Mapping[str, QueryValue] | None) -> list[tuple[str, str]]:
    items: list[tuple[str, str]] = []
    for key, value in (query or {}).items():
        if isinstance(value, bool):
            items.append((key, "true" if value else "false"))
        elif isinstance(value, str | int):
            items.append((key, str(value)))
        else:
            items.extend((key, str(v)) for v in value)
    return items


def _retry_after(status: int, headers: Mapping[str, str]) -> float | None:
    """Seconds to wait before retrying, if the answer says to retry (as client-go's checkWait)."""
    if status != 429 and status < 500:
        return None
    value = headers.get("Retry-After")
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return max(seconds, 0.0)


class RESTClient:
    """The HTTP client every pyctrl request goes through (one aiohttp session).

    It adds the ``Authorization`` header from the `pyctrl.config.Config` on every
    request (so rotated tokens are used at once) and renews the credentials once on a
    401. Answers of 429, or 5xx with a ``Retry-After`` header, are waited out and
    retried up to ``retries`` times, as client-go does; GET requests whose connection
    the server dropped are retried too. There is no client-side rate limit. Failures
    raise the `pyctrl.errors.APIError` subclass for the answer; network failures raise
    ``aiohttp.ClientError`` or `TimeoutError`.

    The sessions are created on first use, inside the running event loop, and closed by
    `aclose` (or leaving ``async with``).

    Args:
        config: A `pyctrl.config.Config`, or a kubernetes-asyncio ``Configuration``.
        user_agent: The ``User-Agent`` header.
        max_connections: Most connections open at once for ordinary requests; 0 for no
            limit (the default). Streams (watches) have a separate pool without a limit,
            so they never starve requests of connections.
        retries: How many times a retryable answer is retried.
        max_retry_wait: The longest ``Retry-After`` to wait out; a longer one raises at
            once (the error's ``retry_after`` says how long the server asked for).
        on_request: Called after every request with (method, code, host, latency);
            pyctrl's ``rest_client_requests_total`` metric is counted in any case.
        clock: The clock that times retry waits.
    """

    def __init__(
        self,
        config: Config | Configuration,
        *,
        user_agent: str | None = None,
        max_connections: int = 0,
        retries: int = 3,
        max_retry_wait: float = 60.0,
        on_request: RequestObserver | None = None,
        clock: Clock | None = None,
    ) -> None:
        if isinstance(config, Configuration):
            config = Config.from_configuration(config)
        if not isinstance(config, Config):
            raise TypeError(
                f"RESTClient needs a pyctrl.config.Config or a kubernetes_asyncio "
                f"Configuration, not {type(config).__qualname__}"
            )
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        if max_connections < 0:
            raise ValueError(f"max_connections must be >= 0, got {max_connections}")
        host = config.host
        if not host.startswith(("http://", "https://")):
            raise ConfigError(f"{config.source}: server address {host!r} is not an http(s) URL")
        self.config = config
        self._base = host
        self._host_label = URL(host).host_port_subcomponent or host
        if user_agent is None:
            from pyctrl._version import __version__

            user_agent = f"pyctrl/{__version__}"
        self._user_agent = user_agent
        self._max_connections = max_connections
        self._retries = retries
        self._max_retry_wait = max_retry_wait
        self._on_request = on_request
        self._clock = clock or RealClock()
        self._session: aiohttp.ClientSession | None = None
        self._stream_session: aiohttp.ClientSession | None = None
        self._closed = False
        self._warnings_seen: set[str] = set()
        self._request_counters: dict[tuple[str, str], Counter] = {}
        configuration = config.configuration
        self._proxy: URL | None = URL(configuration.proxy) if configuration.proxy else None
        self._proxy_auth: aiohttp.BasicAuth | None = None
        if self._proxy is None:
            self._proxy, self._proxy_auth = _env_proxy(URL(host))
        self._proxy_headers: Mapping[str, str] | None = configuration.proxy_headers or None
        self._server_hostname: str | None = configuration.tls_server_name or None
        self._ssl: ssl.SSLContext | None = (
            _ssl_context(config) if host.startswith("https://") else None
        )

    @property
    def host(self) -> str:
        """The API server URL."""
        return self._base

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the sessions and every connection (watch streams included)."""
        self._closed = True
        sessions = (self._session, self._stream_session)
        self._session = self._stream_session = None
        for session in sessions:
            if session is not None:
                await session.close()

    def _new_session(self, limit: int) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(limit=limit, limit_per_host=0, ssl=self._ssl or True)
        return aiohttp.ClientSession(
            connector=connector,
            request_class=_FencedRequest,
            read_bufsize=_READ_BUFSIZE,
            # The environment's proxy was resolved once, in __init__: trust_env would
            # look it (and ~/.netrc) up again in a thread on every request.
            trust_env=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            timeout=aiohttp.ClientTimeout(total=None),
            skip_auto_headers=("Content-Type",),
        )

    def _get_session(self, *, streaming: bool) -> aiohttp.ClientSession:
        if self._closed:
            raise RuntimeError("RESTClient is closed")
        # Watches hold their connection for minutes: they get their own unlimited pool,
        # so that no number of watches can starve ordinary requests of connections.
        if streaming:
            if self._stream_session is None:
                self._stream_session = self._new_session(0)
            return self._stream_session
        if self._session is None:
            self._session = self._new_session(self._max_connections)
        return self._session

    def _observe(self, method: str, code: str, started: float) -> None:
        latency = time.perf_counter() - started
        counter = self._request_counters.get((code, method))
        if counter is None:
            # A labels() lookup takes a lock and builds a key: resolve each child once.
            counter = rest_client_requests_total.labels(
                code=code, method=method, host=self._host_label
            )
            self._request_counters[(code, method)] = counter
        counter.inc()
        if self._on_request is not None:
            self._on_request(method, code, self._host_label, latency)

    def _log_warnings(self, response: aiohttp.ClientResponse) -> None:
        for header in response.headers.getall("Warning", ()):
            # `299 - "message"`: log each message once, like client-go's deduplicating handler.
            text = (
                header.split(" ", 2)[-1].strip().strip('"') if header.startswith("299") else header
            )
            if text in self._warnings_seen:
                continue
            if len(self._warnings_seen) < _MAX_WARNINGS_REMEMBERED:
                self._warnings_seen.add(text)
            _log.warning("API server warning", warning=text, url=str(response.url))

    async def _send(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, QueryValue] | None,
        body: bytes | None,
        content_type: str | None,
        accept: str,
        client_timeout: aiohttp.ClientTimeout,
        streaming: bool = False,
        fence: LeaseFence | None = None,
    ) -> aiohttp.ClientResponse:
        """Send with auth and retries; return the open response of a success (< 400)."""
        if not path.startswith("/"):
            raise ValueError(f"request path must start with '/': {path!r}")
        session = self._get_session(streaming=streaming)
        url = URL(self._base + path)
        params = _query_items(query)
        headers = {"Accept": accept, "User-Agent": self._user_agent}
        if content_type is not None:
            headers["Content-Type"] = content_type
        refreshed = False
        attempt = 0
        while True:
            try:
                response = await self._attempt(
                    session,
                    method,
                    url,
                    params=params,
                    body=body,
                    headers=headers,
                    client_timeout=client_timeout,
                    fence=fence,
                )
            except (aiohttp.ServerDisconnectedError, aiohttp.ClientConnectionResetError):
                # A pooled connection the server had closed: safe to resend a read.
                if method == "GET" and attempt < self._retries:
                    attempt += 1
                    continue
                raise
            status = response.status
            if status < 400:
                return response
            try:
                error_body = await response.read()
            finally:
                response.release()
            if status == 401 and not refreshed:
                refreshed = True
                if await self.config.refresh_credentials(force=True):
                    continue
            wait = _retry_after(status, response.headers)
            if wait is not None and attempt < self._retries and wait <= self._max_retry_wait:
                attempt += 1
                _log.debug(
                    "retrying after server asked to wait",
                    method=method,
                    path=path,
                    status=status,
                    seconds=wait,
                    attempt=attempt,
                )
                await self._clock.sleep(wait)
                continue
            raise APIError.from_status(status, error_body, response.headers.get("Retry-After"))

    async def _attempt(
        self,
        session: aiohttp.ClientSession,
        method: str,
        url: URL,
        *,
        params: list[tuple[str, str]],
        body: bytes | None,
        headers: dict[str, str],
        client_timeout: aiohttp.ClientTimeout,
        fence: LeaseFence | None,
    ) -> aiohttp.ClientResponse:
        """One try: fresh credentials, the fence checked, the request sent and counted."""
        authorization = await self.config.authorization()
        if authorization:
            headers["Authorization"] = authorization
        else:
            headers.pop("Authorization", None)
        fences = _fences(method, fence)
        if fences:
            # Checked before every attempt, and again as the body is written.
            _check_fence(fences, method)
        started = time.perf_counter()
        fence_token = _write_fence.set(fences)
        try:
            response = await session.request(
                method,
                url,
                params=params,
                data=body,
                headers=headers,
                timeout=client_timeout,
                proxy=self._proxy,
                proxy_auth=self._proxy_auth,
                proxy_headers=self._proxy_headers,
                server_hostname=self._server_hostname,
            )
        except (aiohttp.ClientError, TimeoutError):
            self._observe(method, "<error>", started)
            raise
        finally:
            _write_fence.reset(fence_token)
        self._observe(method, str(response.status), started)
        if "Warning" in response.headers:
            self._log_warnings(response)
        return response

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, QueryValue] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
        accept: str = "application/json",
        timeout: float = 60.0,  # noqa: ASYNC109  # per attempt: retry waits are not counted
        fence: LeaseFence | None = None,
    ) -> Response:
        """Send one request and read the whole answer.

        Args:
            method: ``GET``, ``POST``, ``PUT``, ``PATCH`` or ``DELETE``.
            path: The URL path, e.g. ``/api/v1/namespaces/default/pods``.
            query: Query parameters; a sequence value repeats the parameter.
            body: The encoded request body.
            content_type: The body's media type (``application/merge-patch+json``...).
            accept: The media types accepted in the answer.
            timeout: Seconds allowed for each attempt, connection included.
            fence: A `pyctrl.leaderelection.LeaseFence` checked before every attempt: once
                its hold on the Lease has ended the request is not sent (the client's
                writes pass the manager's fence when leader election is on). A write
                also passes the fences bound to the work sending it
                (`pyctrl._fence.fenced_by`: a sharded reconcile's slot).

        Returns:
            The answer, when its status is below 400.

        Raises:
            pyctrl.errors.LeaseLostError: ``fence`` says the hold on the Lease ended; the
                request was not sent (counted in ``pyctrl_lease_fenced_writes_total``).
            pyctrl.errors.APIError: The server refused the request (the subclass says why),
                after any retries.
            aiohttp.ClientError: The connection failed.
            TimeoutError: The attempt took longer than ``timeout``.
        """
        response = await self._send(
            method.upper(),
            path,
            query=query,
            body=body,
            content_type=content_type,
            accept=accept,
            client_timeout=aiohttp.ClientTimeout(total=timeout),
            fence=fence,
        )
        try:
            data = await response.read()
        finally:
            response.release()
        return Response(status=response.status, headers=response.headers, body=data)

    async def check_connection(
        self,
        *,
        timeout: float = 10.0,  # noqa: ASYNC109
        group_version: tuple[str, str] | None = None,
    ) -> None:
        """Make two discovery requests and say in one line why they failed.

        The Manager calls it once at start-up, as controller-runtime's REST mapper makes
        discovery calls when it is built, so that a wrong CA, wrong credentials or a wrong
        address end the process at once instead of in retries. It asks what every
        conformant API server serves, and what the client will use:

        1. ``GET /version``: the address answers, TLS verifies, the credentials are
           accepted (kube-apiserver refuses a token it does not know on every path);
        2. the discovery document of ``group_version`` (the first watched kind's,
           ``/apis/<group>/<version>``, or ``/api/v1``), else the group list ``/apis``,
           which needs an authenticated user. A 404 there passes: a server may serve
           neither the core group nor a group whose CRD is not installed yet (a
           CRD-only server answers ``GET /api`` with 404, which client-go's discovery
           tolerates too); the informers retry until the kind appears.

        An answer of 429 or 5xx passes: the server is there, and later requests retry
        as usual.

        Raises:
            pyctrl.errors.ConnectionCheckError: TLS verification failed, the server
                answered 401 Unauthorized or 403 Forbidden (or 404 for ``/version``),
                nothing answered at the address (connection refused, unknown host), or
                no answer came within ``timeout`` seconds.
        """
        await self._check("/version", timeout, missing_fails=True)
        if group_version is None:
            await self._check("/apis", timeout, missing_fails=False)
        else:
            group, version = group_version
            path = f"/apis/{group}/{version}" if group else f"/api/{version}"
            await self._check(path, timeout, missing_fails=False)

    async def _check(self, path: str, within: float, *, missing_fails: bool) -> None:
        where = f"the API server at {self._base}"
        source = self.config.source
        try:
            await self.request("GET", path, timeout=within)
        except aiohttp.ClientConnectorCertificateError as exc:
            reason = getattr(exc.certificate_error, "verify_message", "") or str(
                exc.certificate_error
            )
            raise ConnectionCheckError(
                f"{where}: TLS verification failed: {reason} "
                f"(check the certificate authority of {source})"
            ) from exc
        except aiohttp.ClientConnectorSSLError as exc:
            raise ConnectionCheckError(f"{where}: TLS handshake failed: {exc.os_error}") from exc
        except aiohttp.ClientConnectorError as exc:
            errno = exc.os_error.errno
            cause = os.strerror(errno) if errno else str(exc.os_error)
            raise ConnectionCheckError(
                f"cannot connect to the API server: {cause.lower()} at {exc.host}:{exc.port} "
                f"(server of {source})"
            ) from exc
        except TimeoutError as exc:
            raise ConnectionCheckError(f"no answer from {where} within {within:g}s") from exc
        except UnauthorizedError as exc:
            raise ConnectionCheckError(
                f"{where} answered 401 Unauthorized: it did not accept the credentials of {source}"
            ) from exc
        except APIError as exc:
            if exc.code == 403 or (exc.code == 404 and missing_fails):
                raise ConnectionCheckError(
                    f"{where} refused discovery (GET {path}): {exc.code} {exc.reason}: "
                    f"{exc.message}"
                ) from exc
            if exc.code == 404:
                _log.debug("API server does not serve this discovery path yet", path=path)
                return
            _log.warning("API server check failed; continuing", path=path, error=str(exc))

    @contextlib.asynccontextmanager
    async def stream(
        self,
        path: str,
        *,
        query: Mapping[str, QueryValue] | None = None,
        accept: str = "application/json",
        read_timeout: float,
        connect_timeout: float = 30.0,
    ) -> AsyncIterator[AsyncIterator[bytes]]:
        """Open a streaming GET (a watch) and iterate its lines.

        Use as ``async with rest.stream(path, query=..., read_timeout=...) as lines:``;
        ``async for line in lines`` yields each non-empty line (one JSON watch event) as
        bytes, until the server ends the stream. Leaving the block closes the connection.

        Args:
            path: The URL path.
            query: Query parameters (``watch=true``, ``resourceVersion``...).
            accept: The media types accepted.
            read_timeout: Seconds without any data after which the stream is considered
                dead; set it above the server's ``timeoutSeconds`` and bookmark interval.
            connect_timeout: Seconds allowed to connect.

        Raises:
            pyctrl.errors.APIError: The server answered with a failure (raised on entry).
            TimeoutError: No data arrived for ``read_timeout`` seconds (raised while
                iterating).
        """
        response = await self._send(
            "GET",
            path,
            query=query,
            body=None,
            content_type=None,
            accept=accept,
            client_timeout=aiohttp.ClientTimeout(
                total=None, sock_connect=connect_timeout, sock_read=read_timeout
            ),
            streaming=True,
        )
        try:
            yield _lines(response, read_timeout)
        finally:
            # Never hand a half-read stream back to the pool.
            response.close()


async def _lines(response: aiohttp.ClientResponse, read_timeout: float) -> AsyncIterator[bytes]:
    buffer = bytearray()
    content = response.content
    while True:
        try:
            chunk = await content.readany()
        except TimeoutError as exc:
            raise TimeoutError(
                f"no data from {response.url.path} for {read_timeout} s: the stream is stalled"
            ) from exc
        if not chunk:
            break
        buffer += chunk
        start = 0
        while (end := buffer.find(b"\n", start)) >= 0:
            line = bytes(buffer[start:end]).strip()
            start = end + 1
            if line:
                yield line
        del buffer[:start]
    rest = bytes(buffer).strip()
    if rest:
        yield rest
