"""Field errors shaped like apimachinery's ``field.Error``: paths and causes.

A `Cause` is one ``StatusCause`` of kube-apiserver's answer; the ``field_*`` helpers build
them with the same reasons and message bodies as ``k8s.io/apimachinery/pkg/util/validation/field``
(``field.Invalid``, ``field.Required``...). The embedded server's validation and the CRD
schema validation of `pyctrl._apiextensions` both speak this one vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from pyctrl._apimachinery.gofmt import OMIT, go_quote, go_value

__all__ = [
    "Cause",
    "Path",
    "field_duplicate",
    "field_forbidden",
    "field_internal",
    "field_invalid",
    "field_not_supported",
    "field_required",
    "field_too_long",
    "field_too_long_max_length",
    "field_too_many",
    "field_type_invalid",
]


@dataclass(frozen=True, slots=True)
class Cause:
    """One field error, shaped like a ``StatusCause`` of kube-apiserver.

    Attributes:
        reason: The cause type, e.g. ``FieldValueRequired``, ``FieldValueInvalid``,
            ``FieldValueNotSupported``, ``FieldValueTypeInvalid``, ``FieldValueForbidden``,
            ``FieldValueTooLong``, ``FieldValueTooMany``, ``FieldValueDuplicate``,
            ``InternalError``.
        message: The error body as kube-apiserver words it, without the field,
            e.g. ``Invalid value: 70000: spec.port in body should be less than or equal to
            65535``.
        field: The field path, e.g. ``spec.ports[0].port`` (``<nil>`` for a nil path;
            empty for a cause of no field).
    """

    reason: str
    message: str
    field: str = ""

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"

    def to_dict(self) -> dict[str, str]:
        """Encode as a ``metav1.StatusCause`` (empty members left out)."""
        out: dict[str, str] = {}
        if self.reason:
            out["reason"] = self.reason
        if self.message:
            out["message"] = self.message
        if self.field:
            out["field"] = self.field
        return out


# ---------------------------------------------------------------------------------------
# Go formatting: field paths, %q, %v and %#v of JSON values, field.Error bodies.
# ---------------------------------------------------------------------------------------

_NIL_PATH: Final = "<nil>"

Path = str | None  # None is Go's nil *field.Path.


def child(path: Path, *names: str) -> str:
    out = path
    for name in names:
        out = name if out is None else f"{out}.{name}"
    assert out is not None
    return out


def key_path(path: Path, key: str) -> str:
    return f"{path or ''}[{key}]"


def index(path: Path, i: int) -> str:
    return f"{path or ''}[{i}]"


def _field(path: Path) -> str:
    return _NIL_PATH if path is None else path


def cause(reason: str, title: str, path: Path, value: Any, detail: str) -> Cause:
    body = title if value is OMIT else f"{title}: {go_value(value)}"
    if detail:
        body = f"{body}: {detail}"
    return Cause(reason, body, _field(path))


def field_required(path: Path, detail: str = "") -> Cause:
    """``field.Required``: ``Required value``, with ``detail`` when given."""
    return cause("FieldValueRequired", "Required value", path, OMIT, detail)


def field_forbidden(path: Path, detail: str) -> Cause:
    """``field.Forbidden``: ``Forbidden: <detail>``."""
    return cause("FieldValueForbidden", "Forbidden", path, OMIT, detail)


def field_invalid(path: Path, value: Any, detail: str) -> Cause:
    """``field.Invalid``: ``Invalid value: <value>: <detail>``."""
    return cause("FieldValueInvalid", "Invalid value", path, value, detail)


def field_type_invalid(path: Path, value: Any, detail: str) -> Cause:
    """``field.TypeInvalid``: ``Invalid value: <value>: <detail>``."""
    return cause("FieldValueTypeInvalid", "Invalid value", path, value, detail)


def field_duplicate(path: Path, value: Any) -> Cause:
    """``field.Duplicate``: ``Duplicate value: <value>``."""
    return cause("FieldValueDuplicate", "Duplicate value", path, value, "")


def field_not_supported(path: Path, value: Any, valid: list[str]) -> Cause:
    """``field.NotSupported``: ``Unsupported value: <value>: supported values: ...``."""
    detail = "supported values: " + ", ".join(go_quote(v) for v in valid) if valid else ""
    return cause("FieldValueNotSupported", "Unsupported value", path, value, detail)


def field_too_long_max_length(path: Path, max_length: int) -> Cause:
    """``field.TooLongMaxLength``: ``Too long: may not be longer than <n>``."""
    detail = f"may not be longer than {max_length}" if max_length >= 0 else "value is too long"
    return cause("FieldValueTooLong", "Too long", path, OMIT, detail)


def field_too_long(path: Path, value: Any, max_length: int) -> Cause:
    """``field.TooLong``: ``Too long: may not be more than <n> bytes`` (the value is omitted)."""
    del value
    if max_length < 0:
        return cause("FieldValueTooLong", "Too long", path, OMIT, "value is too long")
    unit = "byte" if max_length == 1 else "bytes"
    detail = f"may not be more than {max_length} {unit}"
    return cause("FieldValueTooLong", "Too long", path, OMIT, detail)


def field_too_many(path: Path, actual: int, max_items: int) -> Cause:
    """``field.TooMany``: ``Too many: <actual>: must have at most <n> items``."""
    detail = f"must have at most {max_items} items" if max_items >= 0 else "has too many items"
    return cause("FieldValueTooMany", "Too many", path, actual if actual >= 0 else OMIT, detail)


def field_internal(path: Path, detail: str) -> Cause:
    """``field.InternalError``: ``Internal error: <detail>``."""
    return cause("InternalError", "Internal error", path, OMIT, detail)


def json_kind(value: Any) -> str:  # noqa: PLR0911 - one return per JSON kind
    if value is None:
        return "null"
    if value is True or value is False:
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "unknown"
