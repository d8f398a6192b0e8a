"""Field errors shaped like apimachinery's ``field.Error``: paths and causes.

A `FieldCause` is one ``StatusCause`` of kube-apiserver's answer; the helpers here build
them with the same reasons and message bodies as ``k8s.io/apimachinery/pkg/util/validation/field``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from pyctrl._apiextensions.gofmt import _OMIT, _go_value, go_quote


@dataclass(frozen=True, slots=True)
class FieldCause:
    """One field error, shaped like a ``StatusCause`` of kube-apiserver.

    Attributes:
        reason: The cause type, e.g. ``FieldValueRequired``, ``FieldValueInvalid``,
            ``FieldValueNotSupported``, ``FieldValueTypeInvalid``, ``FieldValueForbidden``,
            ``FieldValueTooLong``, ``FieldValueTooMany``, ``FieldValueDuplicate``,
            ``InternalError``.
        message: The error body as kube-apiserver words it, without the field,
            e.g. ``Invalid value: 70000: spec.port in body should be less than or equal to
            65535``.
        field: The field path, e.g. ``spec.ports[0].port`` (``<nil>`` for a nil path).
    """

    reason: str
    message: str
    field: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


# ---------------------------------------------------------------------------------------
# Go formatting: field paths, %q, %v and %#v of JSON values, field.Error bodies.
# ---------------------------------------------------------------------------------------

_NIL_PATH: Final = "<nil>"

Path = str | None  # None is Go's nil *field.Path.


def _child(path: Path, *names: str) -> str:
    out = path
    for name in names:
        out = name if out is None else f"{out}.{name}"
    assert out is not None
    return out


def _key(path: Path, key: str) -> str:
    return f"{path or ''}[{key}]"


def _index(path: Path, i: int) -> str:
    return f"{path or ''}[{i}]"


def _field(path: Path) -> str:
    return _NIL_PATH if path is None else path


def _cause(reason: str, title: str, path: Path, value: Any, detail: str) -> FieldCause:
    body = title if value is _OMIT else f"{title}: {_go_value(value)}"
    if detail:
        body = f"{body}: {detail}"
    return FieldCause(reason, body, _field(path))


def _required(path: Path, detail: str = "") -> FieldCause:
    return _cause("FieldValueRequired", "Required value", path, _OMIT, detail)


def _forbidden(path: Path, detail: str) -> FieldCause:
    return _cause("FieldValueForbidden", "Forbidden", path, _OMIT, detail)


def _invalid(path: Path, value: Any, detail: str) -> FieldCause:
    return _cause("FieldValueInvalid", "Invalid value", path, value, detail)


def _type_invalid(path: Path, value: Any, detail: str) -> FieldCause:
    return _cause("FieldValueTypeInvalid", "Invalid value", path, value, detail)


def _duplicate(path: Path, value: Any) -> FieldCause:
    return _cause("FieldValueDuplicate", "Duplicate value", path, value, "")


def _not_supported(path: Path, value: Any, valid: list[str]) -> FieldCause:
    detail = "supported values: " + ", ".join(go_quote(v) for v in valid) if valid else ""
    return _cause("FieldValueNotSupported", "Unsupported value", path, value, detail)


def _too_long(path: Path, max_length: int) -> FieldCause:
    detail = f"may not be longer than {max_length}" if max_length >= 0 else "value is too long"
    return _cause("FieldValueTooLong", "Too long", path, _OMIT, detail)


def _too_many(path: Path, actual: int, max_items: int) -> FieldCause:
    detail = f"must have at most {max_items} items" if max_items >= 0 else "has too many items"
    return _cause("FieldValueTooMany", "Too many", path, actual if actual >= 0 else _OMIT, detail)


def _internal(path: Path, detail: str) -> FieldCause:
    return _cause("InternalError", "Internal error", path, _OMIT, detail)


def _json_kind(value: Any) -> str:  # noqa: PLR0911 - one return per JSON kind
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
