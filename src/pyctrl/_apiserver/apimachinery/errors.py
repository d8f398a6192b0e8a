"""API errors as kube-apiserver reports them.

Every failure the embedded API server answers is a `metav1.Status` body with an HTTP code, a
machine-readable ``reason`` and a human message worded like kube-apiserver's
(k8s.io/apimachinery/pkg/api/errors). Handlers raise :class:`StatusError`; the HTTP layer turns
it into the response. The constructors below mirror the Go helpers (``NewNotFound``,
``NewConflict``, ``NewInvalid``...) so that messages match byte for byte.
"""

from __future__ import annotations

from typing import Any

from pyctrl._apimachinery.field import Cause
from pyctrl._apimachinery.gofmt import go_value

OPTIMISTIC_LOCK_MESSAGE = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


class StatusError(Exception):
    """A request failed; carries the ``Status`` body kube-apiserver would answer."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        name: str = "",
        group: str = "",
        kind: str = "",
        uid: str = "",
        causes: list[Cause] | None = None,
        retry_after: int | None = None,
        headers: dict[str, str] | None = None,
        details: bool = True,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.name = name
        self.group = group
        self.kind = kind
        self.uid = uid
        self.causes = causes or []
        self.retry_after = retry_after
        self.headers = headers or {}
        self.with_details = details
        self.list_meta: dict[str, Any] = {}

    def to_status(self) -> dict[str, Any]:
        """Encode as a ``metav1.Status`` dict in kube-apiserver's field order."""
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": dict(self.list_meta),
            "status": "Failure",
        }
        if self.message:
            status["message"] = self.message
        if self.reason:
            status["reason"] = self.reason
        details: dict[str, Any] = {}
        if self.name:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        if self.kind:
            details["kind"] = self.kind
        if self.uid:
            details["uid"] = self.uid
        if self.causes:
            details["causes"] = [c.to_dict() for c in self.causes]
        if self.retry_after is not None:
            details["retryAfterSeconds"] = self.retry_after
        if details or self.with_details:
            status["details"] = details
        status["code"] = self.code
        return status


def qualified(group: str, resource: str) -> str:
    """``resource.group`` as Go's ``GroupResource.String()`` prints it."""
    return f"{resource}.{group}" if group else resource


def not_found(group: str, resource: str, name: str) -> StatusError:
    """``NewNotFound``: 404, e.g. ``configmaps "x" not found``."""
    return StatusError(
        404,
        "NotFound",
        f'{qualified(group, resource)} "{name}" not found',
        name=name,
        group=group,
        kind=resource,
    )


def already_exists(group: str, resource: str, name: str) -> StatusError:
    """``NewAlreadyExists``: 409, e.g. ``configmaps "x" already exists``."""
    return StatusError(
        409,
        "AlreadyExists",
        f'{qualified(group, resource)} "{name}" already exists',
        name=name,
        group=group,
        kind=resource,
    )


def conflict(
    group: str, resource: str, name: str, err: str = OPTIMISTIC_LOCK_MESSAGE
) -> StatusError:
    """``NewConflict``: 409 ``Operation cannot be fulfilled on ...``."""
    return StatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(group, resource)} "{name}": {err}',
        name=name,
        group=group,
        kind=resource,
    )


def invalid(group: str, kind: str, name: str, causes: list[Cause]) -> StatusError:
    """``NewInvalid``: 422 with one cause per field error and the aggregated message."""
    qualified_kind = f"{kind}.{group}" if group else kind
    seen: list[str] = []
    for cause in causes:
        text = f"{cause.field}: {cause.message}" if cause.field else cause.message
        if text not in seen:
            seen.append(text)
    if not seen:
        message = f'{qualified_kind} "{name}" is invalid'
    elif len(seen) == 1:
        message = f'{qualified_kind} "{name}" is invalid: {seen[0]}'
    else:
        message = f'{qualified_kind} "{name}" is invalid: [{", ".join(seen)}]'
    return StatusError(
        422, "Invalid", message, name=name, group=group, kind=kind, causes=list(causes)
    )


def bad_request(message: str) -> StatusError:
    """``NewBadRequest``: 400."""
    return StatusError(400, "BadRequest", message, details=False)


def forbidden(
    group: str, resource: str, name: str, err: str, causes: list[Cause] | None = None
) -> StatusError:
    """``NewForbidden``: 403 ``<resource> "<name>" is forbidden: <err>``."""
    target = qualified(group, resource)
    message = f'{target} "{name}" is forbidden: {err}' if name else f"{target} is forbidden: {err}"
    return StatusError(
        403, "Forbidden", message, name=name, group=group, kind=resource, causes=causes
    )


def method_not_allowed() -> StatusError:
    """405 for a verb the resource does not support."""
    return StatusError(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
        details=True,
    )


def unsupported_media_type(accepted: list[str]) -> StatusError:
    """415 for a body whose Content-Type the endpoint cannot decode."""
    return StatusError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(accepted),
        details=False,
    )


def not_acceptable(accepted: list[str]) -> StatusError:
    """406 when no media type of the Accept header can be produced."""
    return StatusError(
        406,
        "NotAcceptable",
        "only the following media types are accepted: " + ", ".join(accepted),
        details=False,
    )


def resource_expired(message: str) -> StatusError:
    """``NewResourceExpired``: 410 with reason ``Expired``."""
    return StatusError(410, "Expired", message, details=False)


def unknown_resource() -> StatusError:
    """404 for a path that names no resource the server serves."""
    return StatusError(
        404, "NotFound", "the server could not find the requested resource", details=True
    )


def internal(message: str) -> StatusError:
    """``NewInternalError``: 500."""
    return StatusError(
        500,
        "InternalError",
        f"Internal error occurred: {message}",
        causes=[Cause("", message)],
    )


def storage_request_too_large() -> StatusError:
    """etcd refused the write (``etcdserver: request is too large``).

    kube-apiserver passes etcd's error on as it is: a 500 whose reason is empty.
    """
    return StatusError(500, "", "etcdserver: request is too large", details=False)


def unauthorized() -> StatusError:
    """401 for a request without a valid bearer token."""
    return StatusError(401, "Unauthorized", "Unauthorized", details=False)


_UINT64_MAX = 2**64 - 1


def parse_resource_version(value: str) -> int | None:
    """A resourceVersion as Go's ``strconv.ParseUint(value, 10, 64)`` reads it, else None."""
    if not value or not value.isascii() or not value.isdigit():
        return None
    rv = int(value)
    return rv if rv <= _UINT64_MAX else None


def resource_version_problem(value: str) -> str:
    """The field error kube-apiserver gives for an unparsable resourceVersion."""
    if value and value.isascii() and value.isdigit():
        problem = f'strconv.ParseUint: parsing "{value}": value out of range'
    else:
        problem = f'strconv.ParseUint: parsing "{value}": invalid syntax'
    return f"resourceVersion: Invalid value: {go_value(value)}: {problem}"
