"""Every error pyctrl raises, under one base class.

The tree::

    PyctrlError
    ├── ConfigError                 a kubeconfig or in-cluster configuration is missing or broken
    │   └── ConnectionCheckError    the start-up check could not reach or log in to the API server
    ├── SchemeError                 a type is not registered, or an object does not fit its type
    ├── SchemaError                 a Python type cannot become a structural CRD schema
    ├── TerminalError               a reconcile failure that retrying cannot fix (never requeued)
    ├── CacheSyncTimeoutError       informers did not sync within the timeout
    ├── LeaseLostError              a write or a reconcile was refused: the Lease's hold ended
    └── APIError                    the API server answered with a failure ``Status``
        ├── BadRequestError             400 BadRequest
        ├── UnauthorizedError           401 Unauthorized
        ├── ForbiddenError              403 Forbidden
        ├── NotFoundError               404 NotFound
        ├── MethodNotAllowedError       405 MethodNotAllowed
        ├── NotAcceptableError          406 NotAcceptable
        ├── ConflictError               409 Conflict (stale resourceVersion, apply conflicts)
        │   └── AlreadyExistsError      409 AlreadyExists
        ├── GoneError                   410 Gone / Expired (resourceVersion too old)
        ├── RequestEntityTooLargeError  413 RequestEntityTooLarge
        ├── UnsupportedMediaTypeError   415 UnsupportedMediaType
        ├── InvalidError                422 Invalid, with field causes
        ├── TooManyRequestsError        429 TooManyRequests, with retry_after
        ├── InternalError               500 InternalError
        ├── ServiceUnavailableError     503 ServiceUnavailable, with retry_after
        └── ServerTimeoutError          504 or reason ServerTimeout / Timeout

Modules add their own errors under `PyctrlError`, next to the code that raises them:
``pyctrl.workqueue.ShutDownError``, ``pyctrl.cache.CacheNotReadyError`` and
``CacheNotStartedError``,
``pyctrl.client.NoKindMatchError`` and ``PatchError``,
``pyctrl.leaderelection.LeaderElectionLostError``,
``pyctrl.controllerutil.AlreadyOwnedError``, ``pyctrl.webhook.InvalidObjectError``,
``pyctrl.policy.PolicyError``,
``pyctrl.envtest.EnvtestError`` (with ``CRDInstallError``, ``ControlPlaneError`` and
``BinariesNotFoundError``).

`APIError.from_status` builds the right subclass from the ``Status`` body the API server
sent, so callers catch by meaning (``except NotFoundError``) rather than by number.
`ignore_not_found` and `ignore_already_exists` are the Python spelling of
controller-runtime's ``client.IgnoreNotFound``.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, ClassVar

import orjson

__all__ = [
    "APIError",
    "AlreadyExistsError",
    "BadRequestError",
    "CacheSyncTimeoutError",
    "ClusterNotFoundError",
    "ConfigError",
    "ConflictError",
    "ConnectionCheckError",
    "ForbiddenError",
    "GoneError",
    "InternalError",
    "InvalidError",
    "LeaseLostError",
    "MethodNotAllowedError",
    "NotAcceptableError",
    "NotFoundError",
    "PyctrlError",
    "RequestEntityTooLargeError",
    "RetriesExhaustedError",
    "SchemaError",
    "SchemeError",
    "ServerTimeoutError",
    "ServiceUnavailableError",
    "StatusCause",
    "TerminalError",
    "TooManyRequestsError",
    "UnauthorizedError",
    "UnsupportedMediaTypeError",
    "ignore_already_exists",
    "ignore_not_found",
    "leaf_errors",
]


class PyctrlError(Exception):
    """Base class of every error pyctrl raises."""


class ConfigError(PyctrlError):
    """The client configuration could not be loaded: names the source and the problem."""


class ConnectionCheckError(ConfigError):
    """The start-up check of the API server failed; the message names the cause.

    `pyctrl.client.RESTClient.check_connection` raises it (the Manager calls it before
    starting anything): TLS verification failed, the credentials were refused (401), or
    nothing answered at the server's address.
    """


class SchemeError(PyctrlError):
    """A type is not registered in the Scheme, or an object does not match its type."""


class SchemaError(PyctrlError):
    """A Python type cannot be expressed as a structural CRD schema."""


class CacheSyncTimeoutError(PyctrlError):
    """The informers named in the message did not sync within the allowed time."""


class ClusterNotFoundError(PyctrlError, LookupError):
    """No engaged cluster has the name asked for (`pyctrl.cluster`): never engaged, or gone."""


class LeaseLostError(PyctrlError):
    """Lease-held work was refused because the hold on the Lease ended.

    Raised by `pyctrl.client.Client` writes (and `pyctrl.leaderelection.LeaseFence.
    raise_if_lost`) once the local clock says the Lease was not renewed within the renew
    deadline, or was released: another replica may hold it now. Counted in
    ``pyctrl_lease_fenced_writes_total``. Never retried; the manager stops.
    """


class TerminalError(PyctrlError):
    """A reconcile error that retrying cannot fix.

    Raised from ``Reconciler.reconcile``, it is logged and counted in
    ``controller_runtime_terminal_reconcile_errors_total`` but the request is not requeued.
    Wrap the underlying cause: ``raise TerminalError("spec.port is taken") from exc``.
    """


class RetriesExhaustedError(PyctrlError):
    """A key was dropped: it was retried its whole budget (``Options.max_retries``).

    The controller hands it to its ``on_error`` hook (whose answer is then ignored) as it
    drops the key; ``__cause__`` is the last reconcile error, if the last attempt failed
    (a ``Result(requeue=True)`` loop has none). The next event of the object brings the
    key back with a fresh budget.
    """

    def __init__(self, message: str, retries: int) -> None:
        super().__init__(message)
        self.retries = retries
        """How many times the key was retried before it was dropped."""


@dataclass(frozen=True, slots=True)
class StatusCause:
    """One cause of a failure ``Status``: typically a field that failed validation."""

    reason: str = ""
    message: str = ""
    field: str = ""


@dataclass(eq=False)
class APIError(PyctrlError):
    """The API server answered a request with a failure ``Status``.

    Attributes:
        code: The HTTP status code.
        reason: The ``Status`` reason (``NotFound``, ``Conflict``, ...), or "" if none was given.
        message: The human-readable message from the server.
        details: The ``Status`` details (name, group, kind, causes, retryAfterSeconds).
        causes: The field causes from ``details.causes``.
        retry_after: Seconds the server asked the client to wait, if it said.
    """

    code: int
    reason: str = ""
    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    causes: tuple[StatusCause, ...] = ()
    retry_after: float | None = None

    status_code: ClassVar[int | None] = None
    status_reasons: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        super().__init__(self.__str__())

    def __str__(self) -> str:
        text = self.message or self.reason or "request failed"
        return f"{text} (HTTP {self.code}{', ' + self.reason if self.reason else ''})"

    @property
    def name(self) -> str:
        """The object name the failure is about, when the server said."""
        return str(self.details.get("name", ""))

    @property
    def kind(self) -> str:
        """The kind (for most errors, the resource) the failure is about, when the server said."""
        return str(self.details.get("kind", ""))

    @staticmethod
    def from_status(
        code: int, body: bytes | str | dict[str, Any] | None, retry_after: str | None = None
    ) -> APIError:
        """Build the `APIError` subclass that matches a failed response.

        Args:
            code: The HTTP status code of the response.
            body: The response body: a ``Status`` object (decoded or raw), or anything else
                the server sent, which becomes the message.
            retry_after: The ``Retry-After`` header, if present.

        Returns:
            The most specific subclass for the ``Status`` reason, or failing that, the code.
        """
        status: dict[str, Any] = {}
        message = ""
        if isinstance(body, dict):
            status = body
        elif body:
            try:
                decoded = orjson.loads(body)
            except orjson.JSONDecodeError:
                decoded = None
            if isinstance(decoded, dict) and decoded.get("kind") == "Status":
                status = decoded
            else:
                raw = body if isinstance(body, str) else body.decode("utf-8", "replace")
                message = raw.strip()[:2000]
        reason = str(status.get("reason", "") or "")
        message = str(status.get("message", "") or message)
        details = status.get("details") or {}
        if not isinstance(details, dict):
            details = {}
        causes = tuple(
            StatusCause(
                reason=str(c.get("reason", "")),
                message=str(c.get("message", "")),
                field=str(c.get("field", "")),
            )
            for c in details.get("causes") or ()
            if isinstance(c, dict)
        )
        wait: float | None = None
        if retry_after:
            with contextlib.suppress(ValueError):
                wait = float(retry_after)
        if wait is None and "retryAfterSeconds" in details:
            with contextlib.suppress(TypeError, ValueError):
                wait = float(details["retryAfterSeconds"])
        cls = _class_for(code, reason)
        return cls(
            code=code,
            reason=reason,
            message=message,
            details=details,
            causes=causes,
            retry_after=wait,
        )


class BadRequestError(APIError):
    """400: the request was malformed (bad selector, bad patch body, namespace mismatch)."""

    status_code: ClassVar[int | None] = 400
    status_reasons = ("BadRequest",)


class UnauthorizedError(APIError):
    """401: the credentials were missing or not accepted."""

    status_code: ClassVar[int | None] = 401
    status_reasons = ("Unauthorized",)


class ForbiddenError(APIError):
    """403: authenticated, but not allowed (RBAC, or a namespace being terminated)."""

    status_code: ClassVar[int | None] = 403
    status_reasons = ("Forbidden",)


class NotFoundError(APIError):
    """404: the object, or the resource type itself, does not exist."""

    status_code: ClassVar[int | None] = 404
    status_reasons = ("NotFound",)


class MethodNotAllowedError(APIError):
    """405: the resource does not support this verb."""

    status_code: ClassVar[int | None] = 405
    status_reasons = ("MethodNotAllowed",)


class NotAcceptableError(APIError):
    """406: the server cannot answer in the requested media type."""

    status_code: ClassVar[int | None] = 406
    status_reasons = ("NotAcceptable",)


class ConflictError(APIError):
    """409: the write raced another (stale resourceVersion) or an apply conflicted."""

    status_code: ClassVar[int | None] = 409
    status_reasons = ("Conflict",)


class AlreadyExistsError(ConflictError):
    """409 AlreadyExists: an object with this name exists already."""

    status_code: ClassVar[int | None] = None
    status_reasons = ("AlreadyExists",)


class GoneError(APIError):
    """410: the requested resourceVersion is older than the server keeps; re-list."""

    status_code: ClassVar[int | None] = 410
    status_reasons = ("Gone", "Expired")


class RequestEntityTooLargeError(APIError):
    """413: the request body was larger than the server accepts."""

    status_code: ClassVar[int | None] = 413
    status_reasons = ("RequestEntityTooLarge",)


class UnsupportedMediaTypeError(APIError):
    """415: for example a strategic-merge patch sent for a custom resource."""

    status_code: ClassVar[int | None] = 415
    status_reasons = ("UnsupportedMediaType",)


class InvalidError(APIError):
    """422: the object failed validation; `causes` name each field and what was wrong."""

    status_code: ClassVar[int | None] = 422
    status_reasons = ("Invalid",)


class TooManyRequestsError(APIError):
    """429: the server is throttling; `retry_after` says how long to wait."""

    status_code: ClassVar[int | None] = 429
    status_reasons = ("TooManyRequests",)


class InternalError(APIError):
    """500: the server failed."""

    status_code: ClassVar[int | None] = 500
    status_reasons = ("InternalError",)


class ServiceUnavailableError(APIError):
    """503: the server is unavailable for now; `retry_after` may say for how long."""

    status_code: ClassVar[int | None] = 503
    status_reasons = ("ServiceUnavailable",)


class ServerTimeoutError(APIError):
    """504, or reason ServerTimeout / Timeout: the server gave up; the request may be retried."""

    status_code: ClassVar[int | None] = 504
    status_reasons = ("ServerTimeout", "Timeout")


_SUBCLASSES: tuple[type[APIError], ...] = (
    BadRequestError,
    UnauthorizedError,
    ForbiddenError,
    NotFoundError,
    MethodNotAllowedError,
    NotAcceptableError,
    AlreadyExistsError,
    ConflictError,
    GoneError,
    RequestEntityTooLargeError,
    UnsupportedMediaTypeError,
    InvalidError,
    TooManyRequestsError,
    InternalError,
    ServiceUnavailableError,
    ServerTimeoutError,
)
_BY_REASON = {reason: cls for cls in _SUBCLASSES for reason in cls.status_reasons}
_BY_CODE = {cls.status_code: cls for cls in _SUBCLASSES if cls.status_code is not None}


def _class_for(code: int, reason: str) -> type[APIError]:
    return _BY_REASON.get(reason) or _BY_CODE.get(code) or APIError


def ignore_not_found() -> contextlib.suppress:
    """Return a context manager that swallows `NotFoundError`, like ``client.IgnoreNotFound``.

    Example::

        with ignore_not_found():
            await client.delete(obj)
    """
    return contextlib.suppress(NotFoundError)


def ignore_already_exists() -> contextlib.suppress:
    """Return a context manager that swallows `AlreadyExistsError`."""
    return contextlib.suppress(AlreadyExistsError)


def leaf_errors(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    """The errors inside an exception group, through nesting, in order.

    Cancellations are left out: they are how a TaskGroup stopped its other tasks.
    """
    import asyncio  # loaded already wherever a TaskGroup failed; `import pyctrl` stays light

    leaves: list[BaseException] = []

    def collect(exc: BaseException) -> None:
        if isinstance(exc, BaseExceptionGroup):
            for inner in exc.exceptions:
                collect(inner)
        elif not isinstance(exc, asyncio.CancelledError):
            leaves.append(exc)

    collect(group)
    return leaves
