"""pyctrl.errors: API errors built from Status bodies."""

from __future__ import annotations

import orjson
import pytest

from pyctrl import errors
from pyctrl.errors import APIError


def _status(code: int, reason: str, message: str = "m", **details: object) -> bytes:
    return orjson.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "details": details,
            "code": code,
        }
    )


@pytest.mark.parametrize(
    ("code", "reason", "cls"),
    [
        (400, "BadRequest", errors.BadRequestError),
        (401, "Unauthorized", errors.UnauthorizedError),
        (403, "Forbidden", errors.ForbiddenError),
        (404, "NotFound", errors.NotFoundError),
        (405, "MethodNotAllowed", errors.MethodNotAllowedError),
        (406, "NotAcceptable", errors.NotAcceptableError),
        (409, "Conflict", errors.ConflictError),
        (409, "AlreadyExists", errors.AlreadyExistsError),
        (410, "Expired", errors.GoneError),
        (410, "Gone", errors.GoneError),
        (413, "RequestEntityTooLarge", errors.RequestEntityTooLargeError),
        (415, "UnsupportedMediaType", errors.UnsupportedMediaTypeError),
        (422, "Invalid", errors.InvalidError),
        (429, "TooManyRequests", errors.TooManyRequestsError),
        (500, "InternalError", errors.InternalError),
        (503, "ServiceUnavailable", errors.ServiceUnavailableError),
        (504, "Timeout", errors.ServerTimeoutError),
        (500, "ServerTimeout", errors.ServerTimeoutError),
    ],
)
def test_status_reason_selects_the_subclass(code: int, reason: str, cls: type[APIError]) -> None:
    """Each Status reason maps to its own error class, carrying code, reason and message."""
    err = APIError.from_status(code, _status(code, reason, "boom"))
    assert type(err) is cls
    assert (err.code, err.reason, err.message) == (code, reason, "boom")


def test_already_exists_is_a_conflict() -> None:
    """AlreadyExists is caught by an `except ConflictError` clause, as in apimachinery."""
    err = APIError.from_status(409, _status(409, "AlreadyExists"))
    assert isinstance(err, errors.ConflictError)


def test_unknown_reason_falls_back_to_the_code() -> None:
    """A Status without a known reason is classified by its HTTP code."""
    assert type(APIError.from_status(404, b'{"kind":"Status"}')) is errors.NotFoundError
    assert type(APIError.from_status(418, b"")) is APIError


def test_invalid_carries_field_causes() -> None:
    """An Invalid Status exposes each field cause."""
    body = _status(
        422,
        "Invalid",
        'MySrv.myapp.example.com "a" is invalid: spec.port: Invalid value: 0',
        name="a",
        kind="MySrv",
        causes=[
            {"reason": "FieldValueInvalid", "message": "Invalid value: 0", "field": "spec.port"}
        ],
    )
    err = APIError.from_status(422, body)
    assert isinstance(err, errors.InvalidError)
    assert err.causes == (errors.StatusCause("FieldValueInvalid", "Invalid value: 0", "spec.port"),)
    assert (err.name, err.kind) == ("a", "MySrv")
    assert "spec.port" in str(err)


def test_retry_after_header_and_details() -> None:
    """retry_after comes from the Retry-After header, else from details.retryAfterSeconds."""
    from_header = APIError.from_status(429, _status(429, "TooManyRequests"), retry_after="3")
    from_details = APIError.from_status(
        503, _status(503, "ServiceUnavailable", retryAfterSeconds=7)
    )
    assert from_header.retry_after == 3.0
    assert from_details.retry_after == 7.0


def test_non_status_body_becomes_the_message() -> None:
    """A body that is not a Status (a proxy's HTML page, say) is kept as the message."""
    err = APIError.from_status(502, b"<html>bad gateway</html>")
    assert err.message == "<html>bad gateway</html>"
    assert "HTTP 502" in str(err)


def test_ignore_not_found_swallows_only_not_found() -> None:
    """ignore_not_found suppresses NotFoundError and lets other errors through."""
    with errors.ignore_not_found():
        raise APIError.from_status(404, _status(404, "NotFound"))
    with pytest.raises(errors.ConflictError), errors.ignore_not_found():
        raise APIError.from_status(409, _status(409, "Conflict"))


def test_ignore_already_exists() -> None:
    """ignore_already_exists suppresses AlreadyExistsError only."""
    with errors.ignore_already_exists():
        raise APIError.from_status(409, _status(409, "AlreadyExists"))
    with pytest.raises(errors.ConflictError), errors.ignore_already_exists():
        raise APIError.from_status(409, _status(409, "Conflict"))


def test_every_error_is_a_pyctrl_error() -> None:
    """Every public exception class derives from PyctrlError."""
    classes = [
        getattr(errors, name)
        for name in errors.__all__
        if isinstance(getattr(errors, name), type)
        and issubclass(getattr(errors, name), BaseException)
    ]
    assert classes
    assert all(issubclass(cls, errors.PyctrlError) for cls in classes)
