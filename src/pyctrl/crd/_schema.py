"""OpenAPI v3 schemas of CustomResourceDefinitions, as kube-apiserver enforces them.

A CustomResourceDefinition carries one ``openAPIV3Schema`` per version. The API server
uses that schema five ways, and this module does each of them the way
apiextensions-apiserver does (``pkg/apiserver/schema``, ``pkg/apiserver/validation``,
``pkg/apis/apiextensions/validation``, with kube-openapi's ``validate`` package for the
wording of value errors):

* :func:`structural_errors` checks that a schema is *structural* and otherwise acceptable
  for a CRD (every node typed, no ``$ref``, value validations only under
  ``anyOf``/``allOf``/``oneOf``/``not``, metadata restricted to ``name`` and
  ``generateName``, list and map extensions consistent, defaults valid and pruned,
  ``x-kubernetes-validations`` rules compile).
* :func:`prune` drops every field the schema does not specify, except under
  ``x-kubernetes-preserve-unknown-fields`` and the ``apiVersion``/``kind``/``metadata`` of
  the object root and of embedded resources (whose metadata is coerced to ObjectMeta).
* :func:`apply_defaults` removes non-nullable nulls that have no default and fills in
  ``default`` values for missing fields, recursively (array items and
  ``additionalProperties`` included).
* :func:`validate` checks an object against the schema: types, formats, ranges, lengths,
  patterns, enums, required fields, ``anyOf``/``allOf``/``oneOf``/``not``, embedded
  resources, ``x-kubernetes-list-type`` set/map uniqueness and the CEL rules of
  ``x-kubernetes-validations``. On update (``old`` given) errors in unchanged parts of the
  object are ratcheted away, as with the ``CRDValidationRatcheting`` feature, and CEL
  transition rules (those using ``oldSelf``) run.
* :func:`validate_crd` validates a whole ``apiextensions.k8s.io/v1``
  CustomResourceDefinition on create and update.

Every problem is a :class:`FieldCause` carrying the Status cause kube-apiserver would
send: its ``reason`` (``FieldValueInvalid``...), its ``message`` (the error body, e.g.
``Unsupported value: "x": supported values: "cool", "heat"``) and its ``field`` (e.g.
``spec.ports[0].port``; ``<nil>`` where the API server reports a nil path, as it does for
object-level composite errors and for rules on the object root).

Like kube-apiserver, validation of a v1 CRD first converts it to the internal form, which
hoists a schema (and subresources, printer columns) shared by all versions to the
top level: errors in such a schema are reported under ``spec.validation.openAPIV3Schema``,
errors in per-version schemas under ``spec.versions[i].schema.openAPIV3Schema``.

Schemas are compiled once and cached by identity: treat a schema dict as immutable once
it has been used here.

Known differences from kube-apiserver: values that Go prints with ``%#v`` as Go structs
(whole CRD versions, ValidationRule structs with pointers) are rendered in a Go-like
approximation; regular expressions run on Python's ``re`` after translating the common
RE2-only syntax; uniqueness and ordering of errors follow the document order where Go
iterates maps in random order; cost limits of CEL rules are not estimated; the metadata of
the object root (name, labels, ...) is left to the caller.
"""

from __future__ import annotations

import copy
import datetime
import ipaddress
import math
import re
import urllib.parse
from collections import OrderedDict
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from pyctrl.crd import _cel

__all__ = [
    "FieldCause",
    "apply_crd_defaults",
    "apply_defaults",
    "crd_stored_versions",
    "prune",
    "structural_errors",
    "validate",
    "validate_crd",
]


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


_GO_ESCAPES: Final = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    '"': '\\"',
    "\\": "\\\\",
}


def go_quote(s: str) -> str:
    """Quote a string the way Go's ``strconv.Quote`` (``%q``) does.

    Args:
        s: The string.

    Returns:
        The double-quoted, Go-escaped string.
    """
    if s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return f'"{s}"'
    out = ['"']
    for ch in s:
        esc = _GO_ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def go_float(f: float) -> str:
    """Format a float the way Go's ``%v`` does (shortest digits, ``%e`` from 1e+06).

    Args:
        f: The number.

    Returns:
        Go's rendering, e.g. ``65535``, ``0.5``, ``1e+06``, ``1.5e-05``.
    """
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    sign, digit_tuple, exponent = Decimal(repr(f)).as_tuple()
    digits = "".join(str(d) for d in digit_tuple).rstrip("0") or "0"
    assert isinstance(exponent, int)
    # Position of the decimal point relative to the first digit, as strconv's digs.dp.
    dp = len(digit_tuple) + exponent
    neg = "-" if sign else ""
    exp = dp - 1
    if exp < -4 or exp >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{neg}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if dp <= 0:
        return f"{neg}0.{'0' * -dp}{digits}"
    if dp >= len(digits):
        return f"{neg}{digits}{'0' * (dp - len(digits))}"
    return f"{neg}{digits[:dp]}.{digits[dp:]}"


def go_print(value: Any) -> str:
    """Render a JSON value the way Go's ``%v`` renders the decoded ``interface{}``.

    Args:
        value: A JSON value (dict, list, str, int, float, bool or None).

    Returns:
        E.g. ``map[spec:map[replicas:2]]``, ``[x y]``, ``<nil>``.
    """
    if value is None:
        return "<nil>"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_print(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_print(v) for v in value) + "]"
    return str(value)


def go_sharp(value: Any) -> str:
    """Render a JSON value the way Go's ``%#v`` renders the decoded ``interface{}``.

    Args:
        value: A JSON value (dict, list, str, int, float, bool or None).

    Returns:
        E.g. ``map[string]interface {}{"name":"http"}``.
    """
    if value is None:
        return "interface {}(nil)"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, dict):
        inner = ", ".join(f"{go_quote(str(k))}:{go_sharp(value[k])}" for k in sorted(value))
        return "map[string]interface {}{" + inner + "}"
    if isinstance(value, list | tuple):
        return "[]interface {}{" + ", ".join(go_sharp(v) for v in value) + "}"
    if isinstance(value, _GoRaw):
        return value.text
    return repr(value)


@dataclass(frozen=True, slots=True)
class _GoRaw:
    """A value already rendered in Go syntax (e.g. a struct dump)."""

    text: str


class _Omit:
    """Go's ``omitValue``: the error body carries no value."""


_OMIT: Final = _Omit()


def _go_value(value: Any) -> str:
    # field.Error.ErrorBody: nil -> "null" quoted; simple types with %v; strings with %q;
    # everything else with %#v.
    if value is None:
        return '"null"'
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, _GoRaw):
        return value.text
    return go_sharp(value)


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


def _json_equal(a: Any, b: Any) -> bool:
    """Go's reflect.DeepEqual on decoded JSON: ints, floats and bools never compare equal."""
    if a is b:
        return True
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is dict:
        if len(a) != len(b):
            return False
        return all(k in b and _json_equal(v, b[k]) for k, v in a.items())
    if ta is list:
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _json_kind(value: Any) -> str:
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


# ---------------------------------------------------------------------------------------
# Regular expressions: Go RE2 syntax on Python's re.
# ---------------------------------------------------------------------------------------

_POSIX_CLASSES: Final = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}


# Unicode classes approximated by code point ranges (Python's re has no \p{...}).
_LETTERS: Final = (
    "A-Za-z\u00aa\u00b5\u00ba\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02ff\u0370-\u03ff"
    "\u0400-\u052f\u0531-\u058f\u05d0-\u05ea\u0620-\u064a\u0900-\u0dff\u0e01-\u0e30"
    "\u1e00-\u1fff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3\uf900-\ufaff"
)
_UNICODE_CLASSES: Final = {
    "L": _LETTERS,
    "Lu": "A-Z\u00c0-\u00d6\u00d8-\u00de\u0391-\u03a9\u0410-\u042f",
    "Ll": "a-z\u00df-\u00f6\u00f8-\u00ff\u03b1-\u03c9\u0430-\u044f",
    "N": "0-9\u00b2\u00b3\u00b9\u00bc-\u00be\u0660-\u0669\u06f0-\u06f9\u0966-\u096f",
    "Nd": "0-9\u0660-\u0669\u06f0-\u06f9\u0966-\u096f\uff10-\uff19",
    "S": "$+<->^`|~\u00a2-\u00a9\u00ac\u00ae-\u00b1\u00b4\u00d7\u00f7\u2100-\u214f"
    "\u20a0-\u20cf\u2190-\u23ff\u2500-\u27bf\U0001f300-\U0001faff",
}


def _unicode_class_name(pattern: str, i: int) -> tuple[str, int]:
    """The name of the Unicode class escape at ``i`` (``pL`` or ``p{Name}``) and its length."""
    if pattern.startswith("{", i + 2):
        end = pattern.find("}", i + 3)
        if end < 0:
            return "", len(pattern) - i
        return pattern[i + 3 : end], end + 1 - i
    return pattern[i + 2 : i + 3], 3


class _RegexError(ValueError):
    """A pattern Go's regexp package would refuse."""


def _translate_go_regex(pattern: str) -> str:
    """Translate RE2 syntax to Python ``re`` and refuse what RE2 refuses."""
    out: list[str] = []
    i = 0
    n = len(pattern)
    in_class = False
    multiline = False
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            if i + 1 >= n:
                raise _RegexError("trailing backslash at end of expression: ``")
            nxt = pattern[i + 1]
            if nxt.isdigit() and nxt != "0":
                raise _RegexError(f"invalid escape sequence: `\\{nxt}`")
            if nxt == "z":
                out.append("\\Z")
            elif nxt == "Z":
                raise _RegexError("invalid escape sequence: `\\Z`")
            elif nxt in "pP":
                name, length = _unicode_class_name(pattern, i)
                ranges = _UNICODE_CLASSES.get(name)
                if ranges is None:
                    raise _RegexError(f"invalid character class range: `{pattern[i : i + length]}`")
                if nxt == "P" and in_class:
                    raise _RegexError(
                        f"unsupported negated class inside brackets: `{pattern[i : i + length]}`"
                    )
                if in_class:
                    out.append(ranges)
                else:
                    out.append(f"[{'^' if nxt == 'P' else ''}{ranges}]")
                i += length
                continue
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            if ch == "[" and pattern.startswith("[:", i):
                end = pattern.find(":]", i + 2)
                if end > 0:
                    name = pattern[i + 2 : end]
                    negate = name.startswith("^")
                    cls = _POSIX_CLASSES.get(name.lstrip("^"))
                    if cls is None:
                        raise _RegexError(f"invalid character class range: `[:{name}:]`")
                    if negate:
                        raise _RegexError(f"invalid character class range: `[:{name}:]`")
                    out.append(cls)
                    i = end + 2
                    continue
            if ch == "]" and out and out[-1] not in ("[", "[^"):
                in_class = False
            out.append(ch)
            i += 1
            continue
        if ch == "[":
            in_class = True
            if pattern.startswith("[^", i):
                out.append("[^")
                i += 2
            else:
                out.append("[")
                i += 1
            if i < n and pattern[i] == "]":
                out.append("\\]")
                i += 1
            continue
        if ch == "(" and pattern.startswith("(?", i):
            for bad in ("(?=", "(?!", "(?<=", "(?<!", "(?>", "(?#"):
                if pattern.startswith(bad, i):
                    raise _RegexError(f"invalid or unsupported Perl syntax: `{bad}`")
            flags = re.match(r"\(\?([imsU-]+)\)", pattern[i:])
            if flags and "m" in flags.group(1).split("-")[0]:
                multiline = True
        if ch == "$" and not multiline:
            out.append("(?!\\n)\\Z")
            i += 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)


_REGEX_CACHE: dict[str, re.Pattern[str]] = {}


def compile_go_regex(pattern: str) -> re.Pattern[str]:
    """Compile a Go (RE2) regular expression with Python's ``re``.

    Args:
        pattern: The RE2 pattern.

    Returns:
        The compiled pattern (cached).

    Raises:
        ValueError: Go's regexp package would refuse the pattern; the message is worded
            like Go's (``error parsing regexp: ...``).
    """
    compiled = _REGEX_CACHE.get(pattern)
    if compiled is not None:
        return compiled
    try:
        compiled = re.compile(_translate_go_regex(pattern), re.ASCII)
    except _RegexError as e:
        raise ValueError(f"error parsing regexp: {e}") from None
    except re.error as e:
        raise ValueError(f"error parsing regexp: {e.msg}: `{pattern}`") from None
    if len(_REGEX_CACHE) > 4096:
        _REGEX_CACHE.clear()
    _REGEX_CACHE[pattern] = compiled
    return compiled


# ---------------------------------------------------------------------------------------
# String formats (kube-openapi strfmt registry, as stripped by apiextensions).
# ---------------------------------------------------------------------------------------

_SUPPORTED_FORMATS: Final = frozenset(
    f.replace("-", "")
    for f in (
        "bsonobjectid",
        "uri",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "cidr",
        "mac",
        "uuid",
        "uuid3",
        "uuid4",
        "uuid5",
        "isbn",
        "isbn10",
        "isbn13",
        "creditcard",
        "ssn",
        "hexcolor",
        "rgbcolor",
        "byte",
        "password",
        "date",
        "duration",
        "datetime",
        "quantity",
    )
)

_RX_UUID: Final = re.compile(
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\Z"
)
_RX_UUID3: Final = re.compile(
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}\Z"
)
_RX_UUID4: Final = re.compile(
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}\Z"
)
_RX_UUID5: Final = re.compile(
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}\Z"
)
_RX_BASE64: Final = re.compile(
    r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})\Z"
)
_RX_BSON: Final = re.compile(r"^[0-9a-fA-F]{24}\Z")
_RX_HEXCOLOR: Final = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})\Z")
_RX_RGBCOLOR: Final = re.compile(
    r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])"
    r"\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)\Z"
)
_RX_SSN: Final = re.compile(r"^\d{3}[- ]?\d{2}[- ]?\d{4}\Z")
_RX_CREDITCARD: Final = re.compile(
    r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|(222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|27[01]"
    r"[0-9]|2720)[0-9]{12}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])"
    r"[0-9]{11}|(?:2131|1800|35\d{3})\d{11}|6[27][0-9]{14})\Z"
)
_RX_EMAIL: Final = re.compile(r"^[^@\s<>()\[\],;:\"]+@[^@\s<>()\[\],;:\"]+\Z")
_RX_DATETIME_TIME: Final = re.compile(
    r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))\Z"
)
_RX_GO_DURATION: Final = re.compile(r"^[-+]?(((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+|0)\Z")
_RX_DURATION_WORDS: Final = re.compile(r"((\d+)\s*([A-Za-zµ]+))")
_DURATION_UNITS: Final = frozenset(
    [
        "ns",
        "nano",
        "nanos",
        "nanosecond",
        "nanoseconds",
        "us",
        "µs",
        "micro",
        "micros",
        "microsecond",
        "microseconds",
        "ms",
        "milli",
        "millis",
        "millisecond",
        "milliseconds",
        "s",
        "sec",
        "secs",
        "second",
        "seconds",
        "m",
        "min",
        "mins",
        "minute",
        "minutes",
        "h",
        "hr",
        "hour",
        "hours",
        "d",
        "day",
        "days",
        "w",
        "wk",
        "week",
        "weeks",
    ]
)


def _is_hostname(s: str) -> bool:
    if not s or len(s) > 255:
        return False
    labels = s.split(".")
    for i, label in enumerate(labels):
        if not label or len(label) > 63:
            return False
        if label.startswith("-") or label.endswith("-"):
            return False
        if not all(c.isalnum() or c == "-" or not c.isascii() for c in label):
            return False
        if i == len(labels) - 1 and len(labels) > 1 and len(label) < 2:
            return False
    return True


def _is_date(s: str) -> bool:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", s):
        return False
    try:
        datetime.date(int(s[:4]), int(s[5:7]), int(s[8:10]))
    except ValueError:
        return False
    return True


def _is_datetime(s: str) -> bool:
    if len(s) < 4:
        return False
    parts = s.lower().split("t")
    if len(parts) < 2 or not _is_date(parts[0]):
        return False
    m = _RX_DATETIME_TIME.match(parts[1])
    if m is None:
        return False
    return m.group(1) <= "23" and m.group(2) <= "59" and m.group(3) <= "59"


def _is_duration(s: str) -> bool:
    if _RX_GO_DURATION.match(s):
        return True
    ok = False
    for m in _RX_DURATION_WORDS.finditer(s):
        unit = m.group(3).strip().lower()
        if unit not in _DURATION_UNITS:
            return False
        ok = True
    return ok


def _is_ip(s: str, version: int) -> bool:
    if "%" in s:
        return False
    try:
        addr = ipaddress.ip_address(s)
    except ValueError:
        return False
    if version == 4:
        return "." in s and (addr.version == 4 or "." in s)
    return ":" in s


def _is_cidr(s: str) -> bool:
    if "/" not in s or "%" in s:
        return False
    try:
        ipaddress.ip_network(s, strict=False)
    except ValueError:
        return False
    return True


def _is_mac(s: str) -> bool:
    if len(s) < 14:
        return False
    for sep in (":", "-"):
        parts = s.split(sep)
        if len(parts) in (6, 8, 20) and all(re.fullmatch(r"[0-9a-fA-F]{2}", p) for p in parts):
            return True
    parts = s.split(".")
    return len(parts) in (3, 4, 10) and all(re.fullmatch(r"[0-9a-fA-F]{4}", p) for p in parts)


def _is_uri(s: str) -> bool:
    # Go's url.ParseRequestURI: an absolute URI or an absolute path.
    if not s or any(c in s for c in " \x7f") or any(ord(c) < 0x20 for c in s):
        return False
    if s.startswith("/"):
        return True
    m = re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", s)
    return m is not None


def _isbn10(s: str) -> bool:
    digits = re.sub(r"[\s-]", "", s)
    if not re.fullmatch(r"\d{9}[\dX]", digits):
        return False
    total = sum((10 - i) * (10 if c == "X" else int(c)) for i, c in enumerate(digits))
    return total % 11 == 0


def _isbn13(s: str) -> bool:
    digits = re.sub(r"[\s-]", "", s)
    if not re.fullmatch(r"\d{13}", digits):
        return False
    total = sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(digits))
    return total % 10 == 0


def _is_creditcard(s: str) -> bool:
    digits = re.sub(r"[^0-9]", "", s)
    if not _RX_CREDITCARD.match(digits):
        return False
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = int(c)
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _is_quantity(s: str) -> bool:
    return _cel.parse_quantity(s) is not None


def _format_ok(fmt: str, s: str) -> bool:
    checks = {
        "bsonobjectid": lambda v: bool(_RX_BSON.match(v)),
        "uri": _is_uri,
        "email": lambda v: bool(_RX_EMAIL.match(v)),
        "hostname": _is_hostname,
        "ipv4": lambda v: _is_ip(v, 4),
        "ipv6": lambda v: _is_ip(v, 6),
        "cidr": _is_cidr,
        "mac": _is_mac,
        "uuid": lambda v: bool(_RX_UUID.match(v)),
        "uuid3": lambda v: bool(_RX_UUID3.match(v)),
        "uuid4": lambda v: bool(_RX_UUID4.match(v)),
        "uuid5": lambda v: bool(_RX_UUID5.match(v)),
        "isbn": lambda v: _isbn10(v) or _isbn13(v),
        "isbn10": _isbn10,
        "isbn13": _isbn13,
        "creditcard": _is_creditcard,
        "ssn": lambda v: bool(_RX_SSN.match(v)),
        "hexcolor": lambda v: bool(_RX_HEXCOLOR.match(v)),
        "rgbcolor": lambda v: bool(_RX_RGBCOLOR.match(v)),
        "byte": lambda v: bool(_RX_BASE64.match(v)),
        "password": lambda v: True,
        "date": _is_date,
        "duration": _is_duration,
        "datetime": _is_datetime,
        "quantity": _is_quantity,
    }
    check = checks.get(fmt.replace("-", ""))
    return True if check is None else bool(check(s))


def _effective_format(raw: dict[str, Any]) -> str:
    """StripUnsupportedFormatsPostProcess: the format kube-openapi will actually check."""
    fmt = raw.get("format")
    if not isinstance(fmt, str) or not fmt:
        return ""
    typ = "" if raw.get("x-kubernetes-int-or-string") is True else raw.get("type", "")
    if typ in ("", "string"):
        return fmt if fmt.replace("-", "") in _SUPPORTED_FORMATS else ""
    if typ == "integer":
        return fmt if fmt in ("int32", "int64") else ""
    if typ == "number":
        return fmt if fmt in ("float", "double") else ""
    return ""


# ---------------------------------------------------------------------------------------
# Compiled schema nodes.
# ---------------------------------------------------------------------------------------


def _num(value: Any) -> int | float | None:
    if value is None or value is True or value is False:
        return None
    if isinstance(value, int | float):
        return value
    return None


def _int(value: Any) -> int | None:
    if value is None or value is True or value is False:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


class _Node:
    """A schema node prepared for fast repeated validation, defaulting and pruning."""

    __slots__ = (
        "additional",
        "additional_allows",
        "all_of",
        "any_of",
        "default",
        "embedded",
        "enum",
        "excl_max",
        "excl_min",
        "format",
        "has_cel",
        "has_default",
        "has_defaults",
        "has_embedded",
        "has_junctors",
        "has_list_types",
        "int_or_string",
        "items",
        "list_map_keys",
        "list_type",
        "map_type",
        "max_items",
        "max_length",
        "max_properties",
        "maximum",
        "min_items",
        "min_length",
        "min_properties",
        "minimum",
        "multiple_of",
        "not_",
        "nullable",
        "number_checks",
        "one_of",
        "pattern",
        "preserve_unknown",
        "properties",
        "raw",
        "reapply_noop",
        "required",
        "rules",
        "string_checks",
        "type",
        "types",
        "unique_items",
        "validations",
    )

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        typ = raw.get("type")
        self.type: str = typ if isinstance(typ, str) else ""
        self.int_or_string: bool = raw.get("x-kubernetes-int-or-string") is True
        self.types: tuple[str, ...] = (
            ("integer", "string") if self.int_or_string else ((self.type,) if self.type else ())
        )
        self.nullable: bool = raw.get("nullable") is True
        self.format: str = _effective_format(raw)
        self.preserve_unknown: bool = raw.get("x-kubernetes-preserve-unknown-fields") is True
        self.embedded: bool = raw.get("x-kubernetes-embedded-resource") is True
        props = raw.get("properties")
        self.properties: dict[str, _Node] | None = (
            {k: _Node(v) for k, v in props.items() if isinstance(v, dict)}
            if isinstance(props, dict) and props
            else None
        )
        addl = raw.get("additionalProperties")
        self.additional: _Node | None = _Node(addl) if isinstance(addl, dict) else None
        self.additional_allows: bool | None = (
            True if isinstance(addl, dict) else (addl if isinstance(addl, bool) else None)
        )
        items = raw.get("items")
        self.items: _Node | None = _Node(items) if isinstance(items, dict) else None
        req = raw.get("required")
        self.required: tuple[str, ...] = (
            tuple(r for r in req if isinstance(r, str)) if isinstance(req, list) else ()
        )
        enum = raw.get("enum")
        self.enum: list[Any] | None = enum if isinstance(enum, list) and enum else None
        self.maximum = _num(raw.get("maximum"))
        self.minimum = _num(raw.get("minimum"))
        self.excl_max: bool = raw.get("exclusiveMaximum") is True
        self.excl_min: bool = raw.get("exclusiveMinimum") is True
        self.multiple_of = _num(raw.get("multipleOf"))
        self.max_length = _int(raw.get("maxLength"))
        self.min_length = _int(raw.get("minLength"))
        pattern = raw.get("pattern")
        self.pattern: str = pattern if isinstance(pattern, str) else ""
        self.max_items = _int(raw.get("maxItems"))
        self.min_items = _int(raw.get("minItems"))
        self.unique_items: bool = raw.get("uniqueItems") is True
        self.max_properties = _int(raw.get("maxProperties"))
        self.min_properties = _int(raw.get("minProperties"))
        self.all_of = _node_list(raw.get("allOf"))
        self.any_of = _node_list(raw.get("anyOf"))
        self.one_of = _node_list(raw.get("oneOf"))
        not_ = raw.get("not")
        self.not_: _Node | None = _Node(not_) if isinstance(not_, dict) else None
        # `default: null` decodes to no default in apiextensions.
        self.has_default: bool = raw.get("default") is not None
        self.default: Any = raw.get("default")
        lt = raw.get("x-kubernetes-list-type")
        self.list_type: str = lt if isinstance(lt, str) else ""
        keys = raw.get("x-kubernetes-list-map-keys")
        self.list_map_keys: tuple[str, ...] = (
            tuple(k for k in keys if isinstance(k, str)) if isinstance(keys, list) else ()
        )
        mt = raw.get("x-kubernetes-map-type")
        self.map_type: str = mt if isinstance(mt, str) else ""
        vals = raw.get("x-kubernetes-validations")
        self.validations: list[dict[str, Any]] = (
            [v for v in vals if isinstance(v, dict)] if isinstance(vals, list) else []
        )
        self.rules: list[_cel.CompiledRule] | None = None
        self.reapply_noop: bool | None = None
        children = self._children()
        self.has_cel: bool = bool(self.validations) or any(c.has_cel for c in children)
        self.has_embedded: bool = self.embedded or any(c.has_embedded for c in children)
        self.has_defaults: bool = any(c.has_default or c.has_defaults for c in children)
        self.has_list_types: bool = self.list_type in ("set", "map") or any(
            c.has_list_types for c in children
        )
        self.has_junctors: bool = bool(
            self.all_of or self.any_of or self.one_of or self.not_ is not None
        )
        self.string_checks: bool = (
            self.max_length is not None or self.min_length is not None or bool(self.pattern)
        )
        self.number_checks: bool = (
            self.multiple_of is not None or self.minimum is not None or self.maximum is not None
        )

    def _children(self) -> list[_Node]:
        out: list[_Node] = []
        if self.properties:
            out.extend(self.properties.values())
        if self.additional is not None:
            out.append(self.additional)
        if self.items is not None:
            out.append(self.items)
        return out


def _node_list(value: Any) -> tuple[_Node, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(_Node(v) for v in value if isinstance(v, dict))


_NODE_CACHE: OrderedDict[int, tuple[dict[str, Any], _Node]] = OrderedDict()
_NODE_CACHE_SIZE: Final = 512


def _compile(schema: dict[str, Any]) -> _Node:
    key = id(schema)
    hit = _NODE_CACHE.get(key)
    if hit is not None and hit[0] is schema:
        _NODE_CACHE.move_to_end(key)
        return hit[1]
    node = _Node(schema)
    # Holding the schema keeps its id from being reused while the entry lives.
    _NODE_CACHE[key] = (schema, node)
    if len(_NODE_CACHE) > _NODE_CACHE_SIZE:
        _NODE_CACHE.popitem(last=False)
    return node


# ---------------------------------------------------------------------------------------
# Value validation: kube-openapi's SchemaValidator, errors converted as
# apiextensions' kubeOpenAPIResultToFieldErrors does.
# ---------------------------------------------------------------------------------------

# Error kinds, mirroring the kube-openapi error codes that map to distinct field errors.
_E_TYPE: Final = 0
_E_REQUIRED: Final = 1
_E_ENUM: Final = 2
_E_TOO_LONG: Final = 3
_E_MAX_ITEMS: Final = 4
_E_MAX_PROPS: Final = 5
_E_OTHER: Final = 6
_E_COMPOSITE: Final = 7

_IN: Final = "body"


class _VErr:
    """One kube-openapi validation error before conversion to a field error."""

    __slots__ = ("code", "message", "name", "valid", "value", "values")

    def __init__(
        self,
        code: int,
        name: str,
        message: str,
        value: Any = None,
        *,
        valid: Any = None,
        values: list[Any] | None = None,
    ) -> None:
        self.code = code
        self.name = name
        self.message = message
        self.value = value
        self.valid = valid
        self.values = values


class _Count:
    """kube-openapi's Result.MatchCount, kept only where anyOf/oneOf need it."""

    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0


_EMPTY: Final[list[_VErr]] = []


def _msg(name: str, tail: str) -> str:
    return f"{name} in {_IN} {tail}"


_KIND: Final[dict[type, str]] = {
    dict: "object",
    list: "array",
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


def _invalid_type(name: str, type_name: str, value: Any) -> _VErr:
    if isinstance(value, str):
        message = f"{name} in {_IN} must be of type {type_name}: {go_quote(value)}"
    else:
        message = f"{name} in {_IN} must be of type {type_name}"
    return _VErr(_E_TYPE, name, message, value)


def _data_format(value: Any) -> tuple[str, str]:
    """typeValidator.schemaInfoForType for decoded JSON."""
    kind = _KIND.get(type(value), "object")
    if kind == "integer":
        return kind, "int64"
    if kind == "number":
        return kind, "float64"
    return kind, ""


def _is_json_integer(f: float) -> bool:
    """swag.IsFloat64AJSONInteger."""
    if math.isnan(f) or math.isinf(f) or abs(f) > float(1 << 53):
        return False
    if f.is_integer():
        return True
    g = float(int(f))
    diff = abs(f - g)
    if f == 0 or g == 0:
        return diff < 1e-9 * 5e-324
    return diff / min(abs(f) + abs(g), 1.7976931348623157e308) < 1e-9


def _check_type(node: _Node, data: Any, path: str) -> _VErr | None:
    """typeValidator.Validate for a value whose kind is not among the node's types."""
    types = node.types
    fmt = node.format
    if data is None:
        if types and "null" not in types and not node.nullable:
            return _invalid_type(path, ",".join(types), "null")
        return None
    sch_type, data_fmt = _data_format(data)
    is_str_or_list = sch_type in ("string", "array")
    is_float_int = sch_type == "number" and "integer" in types and _is_json_integer(data)
    is_int_float = sch_type == "integer" and "number" in types
    if (
        not is_str_or_list
        and fmt
        and not (sch_type in types or data_fmt == fmt or is_float_int or is_int_float)
    ):
        return _invalid_type(path, fmt, data_fmt)
    if not ("number" in types or "integer" in types) and fmt and is_str_or_list:
        return None
    if not (sch_type in types or is_float_int or is_int_float):
        return _invalid_type(path, ",".join(types), sch_type)
    return None


def _enum_matches(data: Any, enum: list[Any]) -> bool:
    for candidate in enum:
        if candidate is None:
            continue
        if _json_equal(data, candidate):
            return True
        # Go converts the value to the enum value's type before comparing.
        if data is True or data is False or candidate is True or candidate is False:
            continue
        if isinstance(candidate, int) and isinstance(data, float):
            if math.isfinite(data) and int(data) == candidate:
                return True
        elif isinstance(candidate, float) and isinstance(data, int) and float(data) == candidate:
            return True
    return False


def _enum_error(node: _Node, data: Any, path: str) -> _VErr:
    enum = node.enum or []
    message = _msg(path, f"should be one of {_go_slice(enum)}")
    return _VErr(_E_ENUM, path, message, data, values=enum)


def _go_slice(values: list[Any]) -> str:
    # fmt %v of []interface{}.
    return go_print(values)


def _check_string(node: _Node, data: str, path: str) -> _VErr | None:
    if node.max_length is not None and len(data) > node.max_length:
        message = _msg(path, f"should be at most {node.max_length} chars long")
        return _VErr(_E_TOO_LONG, path, message, data, valid=node.max_length)
    if node.min_length is not None and len(data) < node.min_length:
        message = _msg(path, f"should be at least {node.min_length} chars long")
        return _VErr(_E_OTHER, path, message, data)
    if node.pattern:
        try:
            rx = compile_go_regex(node.pattern)
        except ValueError as e:
            shown = f"{node.pattern}, but pattern is invalid: {e}"
            return _VErr(_E_OTHER, path, _msg(path, f"should match '{shown}'"), data)
        if rx.search(data) is None:
            return _VErr(_E_OTHER, path, _msg(path, f"should match '{node.pattern}'"), data)
    return None


def _check_format(node: _Node, data: str, path: str) -> _VErr | None:
    fmt = node.format
    if fmt.replace("-", "") not in _SUPPORTED_FORMATS or _format_ok(fmt, data):
        return None
    return _invalid_type(path, fmt, data)


def _check_number(node: _Node, data: int | float, path: str) -> list[_VErr]:
    errs: list[_VErr] = []
    is_int = isinstance(data, int)
    if node.multiple_of is not None:
        factor = node.multiple_of
        if factor < 0:
            message = f"factor MultipleOf declared for {path} must be positive: {_go_num(factor)}"
            errs.append(_VErr(_E_OTHER, path, message, factor))
        elif is_int and int(factor) != 0:
            ifactor = int(factor)
            if data % ifactor != 0:
                message = _msg(path, f"should be a multiple of {ifactor}")
                errs.append(_VErr(_E_OTHER, path, message, data))
        elif factor != 0:
            f = float(data)
            mult = (1 / factor * f) if factor < 1 else (f / factor)
            if not _is_json_integer(mult):
                message = _msg(path, f"should be a multiple of {_go_num(float(factor))}")
                errs.append(_VErr(_E_OTHER, path, message, data))
    if node.minimum is not None:
        bound: int | float = int(node.minimum) if is_int else float(node.minimum)
        if (not node.excl_min and data < bound) or (node.excl_min and data <= bound):
            op = "greater than" if node.excl_min else "greater than or equal to"
            errs.append(_VErr(_E_OTHER, path, _msg(path, f"should be {op} {_go_num(bound)}"), data))
    if node.maximum is not None:
        bound = int(node.maximum) if is_int else float(node.maximum)
        if (not node.excl_max and data > bound) or (node.excl_max and data >= bound):
            op = "less than" if node.excl_max else "less than or equal to"
            errs.append(_VErr(_E_OTHER, path, _msg(path, f"should be {op} {_go_num(bound)}"), data))
    return errs


def _go_num(v: int | float) -> str:
    return go_float(v) if isinstance(v, float) else str(v)


def _correlate_item(node: _Node, old: Any, data: list[Any], i: int) -> tuple[bool, Any]:
    """The old value correlated to item ``i`` for ratcheting (ratcheting.go)."""
    if not isinstance(old, list):
        return False, None
    if node.list_type == "map":
        key = _map_list_key(node, data[i])
        if key is None:
            return False, None
        for item in old:
            if _map_list_key(node, item) == key:
                return True, item
        return False, None
    if node.list_type in ("set", "atomic"):
        return False, None
    if i < len(old):
        return True, old[i]
    return False, None


def _map_list_key(node: _Node, item: Any) -> tuple[Any, ...] | None:
    if not isinstance(item, dict) or not node.list_map_keys:
        return None
    key: list[Any] = []
    for k in node.list_map_keys:
        if k in item:
            key.append(_hashable(item[k]))
        else:
            props = node.items.properties if node.items is not None else None
            sub = props.get(k) if props else None
            if sub is None or not sub.has_default:
                return None
            key.append(_hashable(sub.default))
    return tuple(key)


def _hashable(value: Any) -> Any:
    if isinstance(value, dict | list):
        return ("json", _json_compact(value))
    return (type(value).__name__, value)


_NO_OLD: Final = object()


def _validate_node(
    node: _Node, data: Any, path: str, old: Any = _NO_OLD, count: _Count | None = None
) -> list[_VErr]:
    """SchemaValidator.Validate, with ratcheting when ``old`` is given.

    The validators run in kube-openapi's order: type, allOf/anyOf/oneOf/not, string,
    format, number, array, enum, object.
    """
    if count is not None:
        count.n += 1
    kind = _KIND.get(type(data))
    errs: list[_VErr] | None = None
    if data is None:
        err = _check_type(node, None, path)
        if err is not None:
            errs = [err]
        if node.enum is not None:
            errs = (errs or []) + [_enum_error(node, data, path)]
    else:
        if (node.types or node.format) and kind not in node.types:
            err = _check_type(node, data, path)
            if err is not None:
                errs = [err]
        if node.has_junctors:
            sub = _check_props(node, data, path, old, count)
            if sub:
                errs = (errs or []) + sub
        if kind == "string":
            if node.string_checks:
                err = _check_string(node, data, path)
                if err is not None:
                    errs = (errs or []) + [err]
            if node.format:
                err = _check_format(node, data, path)
                if err is not None:
                    errs = (errs or []) + [err]
        elif kind in ("integer", "number"):
            if node.number_checks:
                sub = _check_number(node, data, path)
                if sub:
                    errs = (errs or []) + sub
        elif kind == "array":
            sub = _check_slice(node, data, path, old, count)
            if sub:
                errs = (errs or []) + sub
        if node.enum is not None and not _enum_matches(data, node.enum):
            errs = (errs or []) + [_enum_error(node, data, path)]
        if kind == "object":
            sub = _check_object(node, data, path, old, count)
            if sub:
                errs = (errs or []) + sub
    if errs is None:
        return _EMPTY
    if old is not _NO_OLD and _json_equal(data, old):
        return _EMPTY
    return errs


def _check_slice(
    node: _Node, data: list[Any], path: str, old: Any, count: _Count | None
) -> list[_VErr]:
    errs: list[_VErr] = []
    items = node.items
    if items is not None:
        for i, item in enumerate(data):
            item_path = f"{path}[{i}]"
            if old is _NO_OLD:
                sub = _validate_node(items, item, item_path, _NO_OLD, count)
            else:
                found, old_item = _correlate_item(node, old, data, i)
                sub = _validate_node(items, item, item_path, old_item if found else _NO_OLD, count)
            if sub:
                errs += sub
    size = len(data)
    if node.min_items is not None and size < node.min_items:
        message = _msg(path, f"should have at least {node.min_items} items")
        errs.append(_VErr(_E_OTHER, path, message, size))
    if node.max_items is not None and size > node.max_items:
        message = _msg(path, f"should have at most {node.max_items} items")
        errs.append(_VErr(_E_MAX_ITEMS, path, message, size, valid=node.max_items))
    if node.unique_items:
        for i in range(size):
            if any(_json_equal(data[i], data[j]) for j in range(i)):
                errs.append(_VErr(_E_OTHER, path, _msg(path, "shouldn't contain duplicates")))
                break
    return errs


def _check_object(
    node: _Node, data: dict[str, Any], path: str, old: Any, count: _Count | None
) -> list[_VErr]:
    n = len(data)
    if node.min_properties is not None and n < node.min_properties:
        message = _msg(path, f"should have at least {node.min_properties} properties")
        return [_VErr(_E_OTHER, path, message, n)]
    if node.max_properties is not None and n > node.max_properties:
        message = _msg(path, f"should have at most {node.max_properties} properties")
        return [_VErr(_E_MAX_PROPS, path, message, n, valid=node.max_properties)]
    errs: list[_VErr] = []
    props = node.properties
    old_map = old if type(old) is dict else None
    if node.additional_allows is False:
        for key in data:
            if props is None or key not in props:
                message = f"{path}.{key} in {_IN} is a forbidden property"
                errs.append(_VErr(_E_OTHER, path, message, key))
    elif node.additional is not None:
        addl = node.additional
        for key, value in data.items():
            if props is None or key not in props:
                sub_old = old_map.get(key, _NO_OLD) if old_map is not None else _NO_OLD
                sub = _validate_node(addl, value, f"{path}.{key}", sub_old, count)
                if sub:
                    errs += sub
    if props is not None:
        if len(props) <= len(data):
            pairs = [(name, sub_node) for name, sub_node in props.items() if name in data]
        else:
            pairs = [(name, props[name]) for name in data if name in props]
        for name, sub_node in pairs:
            sub_path = f"{path}.{name}" if path else name
            sub_old = old_map.get(name, _NO_OLD) if old_map is not None else _NO_OLD
            sub = _validate_node(sub_node, data[name], sub_path, sub_old, count)
            if sub:
                errs += sub
    for name in node.required:
        if name not in data:
            errs.append(_VErr(_E_REQUIRED, f"{path}.{name}", _msg(f"{path}.{name}", "is required")))
    return errs


def _dedupe(errs: list[_VErr]) -> list[_VErr]:
    seen: set[str] = set()
    out: list[_VErr] = []
    for e in errs:
        if e.message not in seen:
            seen.add(e.message)
            out.append(e)
    return out


def _check_props(node: _Node, data: Any, path: str, old: Any, count: _Count | None) -> list[_VErr]:
    errs: list[_VErr] = []
    quoted = go_quote(path)
    if node.any_of:
        best: tuple[int, list[_VErr]] | None = None
        first_success: list[_VErr] | None = None
        for alt in node.any_of:
            alt_count = _Count()
            r = _validate_node(alt, data, path, old, alt_count)
            if not r:
                best = None
                first_success = r
                break
            if best is None or alt_count.n > best[0]:
                best = (alt_count.n, r)
        if first_success is None:
            message = f"{quoted} must validate at least one schema (anyOf)"
            errs.append(_VErr(_E_COMPOSITE, path, message))
        if best is not None:
            errs += best[1]
    if node.one_of:
        best = None
        validated = 0
        for alt in node.one_of:
            alt_count = _Count()
            r = _validate_node(alt, data, path, old, alt_count)
            if not r:
                validated += 1
                best = None
                continue
            if validated == 0 and (best is None or alt_count.n > best[0]):
                best = (alt_count.n, r)
        if validated != 1:
            extra = (
                "Found none valid" if validated == 0 else f"Found {validated} valid alternatives"
            )
            message = f"{quoted} must validate one and only one schema (oneOf). {extra}"
            errs.append(_VErr(_E_COMPOSITE, path, message))
            if best is not None:
                errs += best[1]
    if node.all_of:
        validated = 0
        for alt in node.all_of:
            r = _validate_node(alt, data, path, old, count)
            if not r:
                validated += 1
            errs += r
        if validated != len(node.all_of):
            extra = ". None validated" if validated == 0 else ""
            message = f"{quoted} must validate all the schemas (allOf){extra}"
            errs.append(_VErr(_E_COMPOSITE, path, message))
    if node.not_ is not None and not _validate_node(node.not_, data, path, old, None):
        errs.append(_VErr(_E_COMPOSITE, path, f"{quoted} must not validate the schema (not)"))
    return _dedupe(errs) if errs else errs


def _to_causes(errors: list[_VErr], base: Path) -> list[FieldCause]:
    """kubeOpenAPIResultToFieldErrors."""
    out: list[FieldCause] = []
    for e in errors:
        if e.code == _E_COMPOSITE:
            out.append(_invalid(base, "", e.message))
            continue
        path: Path = base
        if e.name and e.name != ".":
            path = _child(base, e.name[1:] if e.name.startswith(".") else e.name)
        if e.code == _E_REQUIRED:
            out.append(_required(path))
        elif e.code == _E_ENUM:
            values = [v if isinstance(v, str) else _json_compact(v) for v in (e.values or [])]
            out.append(_not_supported(path, e.value, values))
        elif e.code == _E_TOO_LONG:
            out.append(_too_long(path, e.valid if isinstance(e.valid, int) else -1))
        elif e.code in (_E_MAX_ITEMS, _E_MAX_PROPS):
            actual = e.value if isinstance(e.value, int) else -1
            out.append(_too_many(path, actual, e.valid if isinstance(e.valid, int) else -1))
        elif e.code == _E_TYPE:
            out.append(_type_invalid(path, "" if e.value is None else e.value, e.message))
        else:
            out.append(_invalid(path, "" if e.value is None else e.value, e.message))
    return out


def _json_compact(value: Any) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, float):
        return _json_float(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _json_string(value)
    if isinstance(value, dict):
        return (
            "{"
            + ",".join(f"{_json_string(k)}:{_json_compact(value[k])}" for k in sorted(value))
            + "}"
        )
    if isinstance(value, list):
        return "[" + ",".join(_json_compact(v) for v in value) + "]"
    return str(value)


def _json_string(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ch in "<>&\u2028\u2029":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _json_float(f: float) -> str:
    # encoding/json: 'f' format unless the exponent is < -6 or >= 21, and e-07 cleaned to e-7.
    a = abs(f)
    if a != 0 and (a < 1e-6 or a >= 1e21):
        return re.sub(r"e-0(\d)$", r"e-\g<1>", go_float(f))
    text = format(Decimal(repr(f)), "f")
    return text[:-2] if text.endswith(".0") else text


def _openapi_errors(node: _Node, obj: Any, base: Path, old: Any = _NO_OLD) -> list[FieldCause]:
    errs = _validate_node(node, obj, "", old)
    return _to_causes(_dedupe(errs), base) if errs else []


# ---------------------------------------------------------------------------------------
# Schema checks done on CRD create/update (structural schema, OpenAPI restrictions,
# list/map extensions, defaults, CEL rule compilation).
# ---------------------------------------------------------------------------------------

_OPENAPI_V3_TYPES: Final = ["array", "boolean", "integer", "number", "object", "string"]
_META_FIELDS: Final = frozenset(("metadata", "kind", "apiVersion"))
_ROOT_LEVEL: Final = 0
_ITEM_LEVEL: Final = 1
_FIELD_LEVEL: Final = 2
_SUPPORTED_RULE_REASONS: Final = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
]


def _str(raw: dict[str, Any], key: str) -> str:
    value = raw.get(key)
    return value if isinstance(value, str) else ""


def _dict(raw: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = raw.get(key)
    return value if isinstance(value, dict) else None


def _dict_list(raw: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = raw.get(key)
    if not isinstance(value, list):
        return []
    return [v if isinstance(v, dict) else {} for v in value]


def _props(raw: dict[str, Any]) -> dict[str, dict[str, Any]]:
    value = raw.get("properties")
    if not isinstance(value, dict):
        return {}
    return {k: (v if isinstance(v, dict) else {}) for k, v in value.items()}


def _nonzero(value: Any) -> bool:
    return value not in (None, False, "", 0, [], {}) or value is True


def _is_int_or_string_any_of(any_of: Any) -> bool:
    if not isinstance(any_of, list) or len(any_of) != 2:
        return False
    wanted = ({"type": "integer"}, {"type": "string"})
    for got, want in zip(any_of, wanted, strict=True):
        if not isinstance(got, dict):
            return False
        if {k: v for k, v in got.items() if _nonzero(v)} != want:
            return False
    return True


def _is_int_or_string_all_of(raw: dict[str, Any]) -> bool:
    all_of = raw.get("allOf")
    if not isinstance(all_of, list) or not all_of or not isinstance(all_of[0], dict):
        return False
    return _is_int_or_string_any_of(all_of[0].get("anyOf"))


def _structural_invariants(s: dict[str, Any], lvl: int, path: str) -> list[FieldCause]:
    errs: list[FieldCause] = []
    typ = _str(s, "type")
    items = s.get("items")
    if typ == "array" and items is None:
        errs.append(_required(_child(path, "items"), "must be specified"))
    if isinstance(items, dict):
        errs += _structural_invariants(items, _ITEM_LEVEL, _child(path, "items"))
    props = _props(s)
    for k, v in props.items():
        errs += _structural_invariants(v, _FIELD_LEVEL, _key(_child(path, "properties"), k))
    addl = s.get("additionalProperties")
    if addl is not None:
        if lvl == _ROOT_LEVEL:
            errs.append(
                _forbidden(_child(path, "additionalProperties"), "must not be used at the root")
            )
        if isinstance(addl, dict):
            errs += _structural_invariants(addl, _FIELD_LEVEL, _child(path, "additionalProperties"))
    int_or_string = s.get("x-kubernetes-int-or-string") is True
    preserve = s.get("x-kubernetes-preserve-unknown-fields") is True
    embedded = s.get("x-kubernetes-embedded-resource") is True
    if int_or_string and preserve:
        errs.append(
            _invalid(
                _child(path, "x-kubernetes-preserve-unknown-fields"),
                True,
                "must be false if x-kubernetes-int-or-string is true",
            )
        )
    if int_or_string and embedded:
        errs.append(
            _invalid(
                _child(path, "x-kubernetes-embedded-resource"),
                True,
                "must be false if x-kubernetes-int-or-string is true",
            )
        )
    errs += _value_validation_structure(
        s,
        skip_any_of=_is_int_or_string_any_of(s.get("anyOf")),
        skip_first_all_of_any_of=_is_int_or_string_all_of(s),
        lvl=lvl,
        path=path,
    )
    check_metadata = lvl == _ROOT_LEVEL or embedded
    if embedded and typ != "object":
        if not typ:
            errs.append(
                _required(
                    _child(path, "type"), "must be object if x-kubernetes-embedded-resource is true"
                )
            )
        else:
            errs.append(
                _invalid(
                    _child(path, "type"),
                    typ,
                    "must be object if x-kubernetes-embedded-resource is true",
                )
            )
    elif not typ and not int_or_string and not preserve:
        where = {
            _ROOT_LEVEL: "at the root",
            _ITEM_LEVEL: "for specified array items",
            _FIELD_LEVEL: "for specified object fields",
        }[lvl]
        errs.append(_required(_child(path, "type"), f"must not be empty {where}"))
    if embedded and addl is not None:
        errs.append(
            _forbidden(
                _child(path, "additionalProperties"),
                "must not be used if x-kubernetes-embedded-resource is set",
            )
        )
    if lvl == _ROOT_LEVEL and typ and typ != "object":
        errs.append(_invalid(_child(path, "type"), typ, "must be object at the root"))
    props_path = _child(path, "properties")
    for meta_field in ("kind", "apiVersion"):
        if meta_field in props and check_metadata:
            sub_type = _str(props[meta_field], "type")
            if sub_type != "string":
                errs.append(
                    _invalid(
                        _child(_key(props_path, meta_field), "type"), sub_type, "must be string"
                    )
                )
    if "metadata" in props:
        errs += _metadata_invariants(
            props["metadata"], check_metadata, lvl, _key(props_path, "metadata")
        )
    if embedded and not preserve and not props:
        errs.append(
            _required(
                props_path,
                "must not be empty if x-kubernetes-embedded-resource is true without "
                "x-kubernetes-preserve-unknown-fields",
            )
        )
    return errs


# Keys of a JSONSchemaProps that do not survive conversion to a structural schema.
_NON_STRUCTURAL_KEYS: Final = frozenset(("example", "externalDocs"))


def _metadata_invariants(
    s: dict[str, Any], check_metadata: bool, lvl: int, path: str
) -> list[FieldCause]:
    errs: list[FieldCause] = []
    typ = _str(s, "type")
    if check_metadata and typ != "object":
        errs.append(_invalid(_child(path, "type"), typ, "must be object"))
    if lvl == _ROOT_LEVEL:
        rest = {k: v for k, v in s.items() if k not in _NON_STRUCTURAL_KEYS and _nonzero(v)}
        rest.pop("type", None)
        rest.pop("default", None)
        props = _props(s)
        names = set(props)
        if names and names <= {"name", "generateName"}:
            rest.pop("properties", None)
        if rest:
            errs.append(
                _forbidden(
                    path,
                    "must not specify anything other than name and generateName, but metadata is "
                    "implicitly specified",
                )
            )
    return errs


def _value_validation_structure(
    v: dict[str, Any], *, skip_any_of: bool, skip_first_all_of_any_of: bool, lvl: int, path: str
) -> list[FieldCause]:
    errs: list[FieldCause] = []
    if not skip_any_of:
        for i, sub in enumerate(_dict_list(v, "anyOf")):
            errs += _nested_structure(sub, False, lvl, _index(_child(path, "anyOf"), i))
    for i, sub in enumerate(_dict_list(v, "allOf")):
        skip = skip_first_all_of_any_of and i == 0
        errs += _nested_structure(sub, skip, lvl, _index(_child(path, "allOf"), i))
    for i, sub in enumerate(_dict_list(v, "oneOf")):
        errs += _nested_structure(sub, False, lvl, _index(_child(path, "oneOf"), i))
    not_ = _dict(v, "not")
    if not_ is not None:
        errs += _nested_structure(not_, False, lvl, _child(path, "not"))
    pattern = _str(v, "pattern")
    if pattern:
        try:
            compile_go_regex(pattern)
        except ValueError as e:
            errs.append(
                _invalid(
                    _child(path, "pattern"),
                    pattern,
                    f"must be a valid regular expression, but isn't: {e}",
                )
            )
    return errs


_NESTED_FORBIDDEN: Final = (
    ("type", "must be empty to be structural"),
    ("additionalProperties", "must be undefined to be structural"),
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    ("externalDocs", "must be undefined to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
)


def _nested_structure(
    v: dict[str, Any], skip_any_of: bool, lvl: int, path: str
) -> list[FieldCause]:
    errs = _value_validation_structure(
        v, skip_any_of=skip_any_of, skip_first_all_of_any_of=False, lvl=lvl, path=path
    )
    items = _dict(v, "items")
    if items is not None:
        errs += _nested_structure(items, False, lvl, _child(path, "items"))
    props = _props(v)
    for k, sub in props.items():
        errs += _nested_structure(sub, False, _FIELD_LEVEL, _key(_child(path, "properties"), k))
    for key, detail in _NESTED_FORBIDDEN:
        value = v.get(key)
        present = (
            value is not None
            if key
            in (
                "additionalProperties",
                "default",
                "externalDocs",
                "x-kubernetes-list-type",
                "x-kubernetes-map-type",
            )
            else _nonzero(value)
        )
        if present:
            errs.append(_forbidden(_child(path, key), detail))
    if "metadata" in props:
        errs.append(
            _forbidden(
                _key(_child(path, "properties"), "metadata"),
                "must not be specified in a nested context",
            )
        )
    return errs


def _completeness(s: dict[str, Any], path: str) -> list[FieldCause]:
    return _vv_completeness(s, s, path, path)


def _vv_completeness(
    v: dict[str, Any], s: dict[str, Any] | None, s_path: str, v_path: str
) -> list[FieldCause]:
    if s is None:
        return [_required(s_path, f"because it is defined in {v_path}")]
    errs: list[FieldCause] = []
    not_ = _dict(v, "not")
    if not_ is not None:
        errs += _nested_completeness(not_, s, s_path, _child(v_path, "not"))
    for name in ("allOf", "anyOf", "oneOf"):
        for i, sub in enumerate(_dict_list(v, name)):
            errs += _nested_completeness(sub, s, s_path, _index(_child(v_path, name), i))
    return errs


def _nested_completeness(
    v: dict[str, Any], s: dict[str, Any] | None, s_path: str, v_path: str
) -> list[FieldCause]:
    if s is None:
        return [_required(s_path, f"because it is defined in {v_path}")]
    errs = _vv_completeness(v, s, s_path, v_path)
    items = _dict(v, "items")
    if items is not None:
        errs += _nested_completeness(
            items, _dict(s, "items"), _child(s_path, "items"), _child(v_path, "items")
        )
    s_props = _props(s)
    for k, sub in _props(v).items():
        sp = _key(_child(s_path, "properties"), k)
        vp = _key(_child(v_path, "properties"), k)
        if k not in s_props:
            errs.append(_required(sp, f"because it is defined in {vp}"))
        else:
            errs += _nested_completeness(sub, s_props[k], sp, vp)
    return errs


def _validate_structural(schema: dict[str, Any], path: str) -> list[FieldCause]:
    errs = _structural_invariants(schema, _ROOT_LEVEL, path) + _completeness(schema, path)
    return sorted(errs, key=str)


_UNSUPPORTED_FIELDS: Final = (
    ("id", "OpenAPIV3Schema 'id' is not supported"),
    ("$schema", "OpenAPIV3Schema 'schema' is not supported"),
    ("$ref", "OpenAPIV3Schema '$ref' is not supported"),
    ("patternProperties", "OpenAPIV3Schema 'patternProperties' is not supported"),
    ("dependencies", "OpenAPIV3Schema 'dependencies' is not supported"),
    ("additionalItems", "OpenAPIV3Schema 'additionalItems' is not supported"),
    ("definitions", "OpenAPIV3Schema 'definitions' is not supported"),
)


def _new_structural_error(s: dict[str, Any]) -> str | None:
    """The error NewStructural returns, or None if the schema converts."""
    for key, message in _UNSUPPORTED_FIELDS:
        if _nonzero(s.get(key)):
            return message
    if s.get("x-kubernetes-preserve-unknown-fields") is False:
        return "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
    items = s.get("items")
    if isinstance(items, list):
        return "OpenAPIV3Schema 'items' must be a schema, but is an array"
    subs: list[Any] = []
    if isinstance(items, dict):
        subs.append(items)
    subs.extend(_props(s).values())
    for name in ("allOf", "anyOf", "oneOf"):
        subs.extend(_dict_list(s, name))
    for name in ("not", "additionalProperties"):
        sub = _dict(s, name)
        if sub is not None:
            subs.append(sub)
    for sub in subs:
        err = _new_structural_error(sub)
        if err is not None:
            return err
    return None


@dataclass(frozen=True, slots=True)
class _SchemaOpts:
    """validationOptions of apiextensions' CRD validation that affect schemas."""

    allow_defaults: bool = True
    require_valid_property_type: bool = True
    require_pruned_defaults: bool = True
    require_atomic_set_type: bool = True
    require_map_list_keys_map_set_validation: bool = True


@dataclass(frozen=True, slots=True)
class _Ssv:
    """specStandardValidatorV3 state carried down the schema walk."""

    allow_defaults: bool = True
    disallow_defaults_reason: str = ""
    inside_meta: bool = False
    require_valid_property_type: bool = True
    forbid_old_self: str | None = None

    def forbidden_defaults(self, reason: str) -> _Ssv:
        return _Ssv(
            False, reason, self.inside_meta, self.require_valid_property_type, self.forbid_old_self
        )

    def meta(self) -> _Ssv:
        return _Ssv(
            self.allow_defaults,
            self.disallow_defaults_reason,
            True,
            self.require_valid_property_type,
            self.forbid_old_self,
        )

    def no_old_self(self, path: str) -> _Ssv:
        if self.forbid_old_self is not None:
            return self
        return _Ssv(
            self.allow_defaults,
            self.disallow_defaults_reason,
            self.inside_meta,
            self.require_valid_property_type,
            path,
        )


def _ssv_validate(ssv: _Ssv, s: dict[str, Any], path: str) -> list[FieldCause]:
    errs: list[FieldCause] = []
    typ = s.get("type")
    if (
        ssv.require_valid_property_type
        and isinstance(typ, str)
        and typ
        and typ not in _OPENAPI_V3_TYPES
    ):
        errs.append(_not_supported(_child(path, "type"), typ, _OPENAPI_V3_TYPES))
    if s.get("default") is not None and not ssv.allow_defaults:
        detail = "must not be set"
        if ssv.disallow_defaults_reason:
            detail += " " + ssv.disallow_defaults_reason
        errs.append(_forbidden(_child(path, "default"), detail))
    checks = (
        ("id", _nonzero(s.get("id")), "id is not supported"),
        (
            "additionalItems",
            s.get("additionalItems") is not None,
            "additionalItems is not supported",
        ),
        (
            "patternProperties",
            _nonzero(s.get("patternProperties")),
            "patternProperties is not supported",
        ),
        ("definitions", _nonzero(s.get("definitions")), "definitions is not supported"),
        ("dependencies", s.get("dependencies") is not None, "dependencies is not supported"),
        ("$ref", s.get("$ref") is not None, "$ref is not supported"),
    )
    for key, bad, detail in checks:
        if bad:
            errs.append(_forbidden(_child(path, key), detail))
    if typ == "null":
        errs.append(
            _forbidden(
                _child(path, "type"), "type cannot be set to null, use nullable as an alternative"
            )
        )
    items = s.get("items")
    if isinstance(items, list) and items:
        errs.append(
            _forbidden(_child(path, "items"), "items must be a schema object and not an array")
        )
    if ssv.inside_meta and s.get("x-kubernetes-embedded-resource") is True:
        errs.append(
            _forbidden(
                _child(path, "x-kubernetes-embedded-resource"),
                "must not be used inside of resource meta",
            )
        )
    return errs


def _go_string_slice(values: list[Any]) -> _GoRaw:
    return _GoRaw("[]string{" + ", ".join(go_quote(str(v)) for v in values) + "}")


def _go_rule_struct(rule: dict[str, Any]) -> _GoRaw:
    """%#v of an apiextensions.ValidationRule, pointers rendered without their address."""

    def ptr(name: str, typ: str) -> str:
        value = rule.get(name)
        if value is None:
            return f"(*{typ})(nil)"
        return f"(*{typ})({_go_value(value)})"

    return _GoRaw(
        "apiextensions.ValidationRule{"
        f"Rule:{go_quote(_str(rule, 'rule'))}, Message:{go_quote(_str(rule, 'message'))}, "
        f"MessageExpression:{go_quote(_str(rule, 'messageExpression'))}, "
        f"Reason:{ptr('reason', 'apiextensions.FieldValueErrorReason')}, "
        f"FieldPath:{go_quote(_str(rule, 'fieldPath'))}, "
        f"OptionalOldSelf:{ptr('optionalOldSelf', 'bool')}}}"
    )


class _SchemaErrs:
    """OpenAPISchemaErrorList: schema errors first, CEL errors after them."""

    __slots__ = ("cel", "schema")

    def __init__(self) -> None:
        self.schema: list[FieldCause] = []
        self.cel: list[FieldCause] = []

    def extend(self, other: _SchemaErrs) -> None:
        self.schema += other.schema
        self.cel += other.cel


def _map_is_correlatable(map_type: Any) -> bool:
    return map_type is None or map_type == "granular"


def _openapi_schema_errors(
    s: dict[str, Any] | None,
    path: str,
    ssv: _Ssv,
    opts: _SchemaOpts,
    *,
    is_root: bool = False,
    cel_root: bool | None = None,
) -> _SchemaErrs:
    """ValidateCustomResourceDefinitionOpenAPISchema.

    ``cel_root`` is None when CEL rules are not compiled at this node (invalid structure,
    or under a junctor), else whether the node is a resource root for CEL typing.
    """
    out = _SchemaErrs()
    if s is None:
        return out
    out.schema += _ssv_validate(ssv, s, path)
    if s.get("uniqueItems") is True:
        out.schema.append(
            _forbidden(
                _child(path, "uniqueItems"),
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            )
        )
    props = _props(s)
    embedded = s.get("x-kubernetes-embedded-resource") is True
    addl = s.get("additionalProperties")
    if addl is not None:
        if props and (addl is False or isinstance(addl, dict)):
            out.schema.append(
                _forbidden(
                    _child(path, "additionalProperties"),
                    "additionalProperties and properties are mutual exclusive",
                )
            )
        sub_ssv = ssv
        if ssv.inside_meta:
            sub_ssv = ssv.forbidden_defaults(
                "inside additionalProperties applying to object metadata"
            )
        if isinstance(addl, dict):
            child_cel = (
                None if cel_root is None else addl.get("x-kubernetes-embedded-resource") is True
            )
            out.extend(
                _openapi_schema_errors(
                    addl, _child(path, "additionalProperties"), sub_ssv, opts, cel_root=child_cel
                )
            )
    for prop, sub in props.items():
        sub_ssv = ssv
        if not _map_is_correlatable(s.get("x-kubernetes-map-type")):
            sub_ssv = sub_ssv.no_old_self(path)
        if (is_root or embedded) and prop in _META_FIELDS:
            sub_ssv = sub_ssv.meta()
            if is_root:
                sub_ssv = sub_ssv.forbidden_defaults(f"in top-level {prop}")
        child_cel = None if cel_root is None else sub.get("x-kubernetes-embedded-resource") is True
        out.extend(
            _openapi_schema_errors(
                sub, _key(_child(path, "properties"), prop), sub_ssv, opts, cel_root=child_cel
            )
        )
    out.extend(
        _openapi_schema_errors(_dict(s, "not"), _child(path, "not"), ssv, opts, cel_root=None)
    )
    for name in ("allOf", "oneOf", "anyOf"):
        for i, sub in enumerate(_dict_list(s, name)):
            out.extend(
                _openapi_schema_errors(sub, _index(_child(path, name), i), ssv, opts, cel_root=None)
            )
    definitions = s.get("definitions")
    if isinstance(definitions, dict):
        for k, sub in definitions.items():
            if isinstance(sub, dict):
                out.extend(
                    _openapi_schema_errors(
                        sub, _key(_child(path, "definitions"), k), ssv, opts, cel_root=None
                    )
                )
    items = s.get("items")
    list_type = s.get("x-kubernetes-list-type")
    if items is not None:
        sub_ssv = ssv if list_type == "map" else ssv.no_old_self(path)
        if isinstance(items, dict):
            child_cel = (
                None if cel_root is None else items.get("x-kubernetes-embedded-resource") is True
            )
            out.extend(
                _openapi_schema_errors(
                    items, _child(path, "items"), sub_ssv, opts, cel_root=child_cel
                )
            )
        elif isinstance(items, list):
            for i, sub in enumerate(items):
                if isinstance(sub, dict):
                    out.extend(
                        _openapi_schema_errors(
                            sub, _index(_child(path, "items"), i), sub_ssv, opts, cel_root=None
                        )
                    )
    dependencies = s.get("dependencies")
    if isinstance(dependencies, dict):
        for k, sub in dependencies.items():
            if isinstance(sub, dict):
                out.extend(
                    _openapi_schema_errors(
                        sub, _key(_child(path, "dependencies"), k), ssv, opts, cel_root=None
                    )
                )
    out.schema += _extension_errors(s, path, opts)
    if opts.require_map_list_keys_map_set_validation:
        out.schema += _map_list_keys_map_set_errors(s, path)
    rules = s.get("x-kubernetes-validations")
    if isinstance(rules, list) and rules:
        out.schema += _rule_shape_errors(s, rules, path)
        if not out.schema and cel_root is not None:
            out.cel += _rule_compile_errors(s, rules, path, ssv, is_root or cel_root)
    return out


def _extension_errors(s: dict[str, Any], path: str, opts: _SchemaOpts) -> list[FieldCause]:
    errs: list[FieldCause] = []
    typ = _str(s, "type")
    if s.get("x-kubernetes-preserve-unknown-fields") is False:
        errs.append(
            _invalid(
                _child(path, "x-kubernetes-preserve-unknown-fields"),
                False,
                "must be true or undefined",
            )
        )
    map_type = s.get("x-kubernetes-map-type")
    if map_type is not None and typ != "object":
        detail = "must be object if x-kubernetes-map-type is specified"
        errs.append(
            _required(_child(path, "type"), detail)
            if not typ
            else _invalid(_child(path, "type"), typ, detail)
        )
    if map_type is not None and map_type not in ("atomic", "granular"):
        errs.append(
            _not_supported(_child(path, "x-kubernetes-map-type"), map_type, ["atomic", "granular"])
        )
    list_type = s.get("x-kubernetes-list-type")
    items = s.get("items")
    if list_type is not None and typ != "array":
        detail = "must be array if x-kubernetes-list-type is specified"
        errs.append(
            _required(_child(path, "type"), detail)
            if not typ
            else _invalid(_child(path, "type"), typ, detail)
        )
    elif opts.require_atomic_set_type and list_type == "set" and isinstance(items, dict):
        item_type = _str(items, "type")
        detail = "must be atomic as item of a list with x-kubernetes-list-type=set"
        item_list_type = items.get("x-kubernetes-list-type")
        if item_type == "array" and item_list_type is not None and item_list_type != "atomic":
            errs.append(
                _invalid(_child(path, "items", "x-kubernetes-list-type"), item_list_type, detail)
            )
        elif item_type == "object" and items.get("x-kubernetes-map-type") != "atomic":
            # apiextensions reports the items' list type here, usually unset.
            errs.append(
                _invalid(_child(path, "items", "x-kubernetes-map-type"), item_list_type, detail)
            )
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        errs.append(
            _not_supported(
                _child(path, "x-kubernetes-list-type"), list_type, ["atomic", "set", "map"]
            )
        )
    keys = s.get("x-kubernetes-list-map-keys")
    keys_list = keys if isinstance(keys, list) else []
    if keys_list:
        detail = "must be map if x-kubernetes-list-map-keys is non-empty"
        if list_type is None:
            errs.append(_required(_child(path, "x-kubernetes-list-type"), detail))
        elif list_type != "map":
            errs.append(_invalid(_child(path, "x-kubernetes-list-type"), list_type, detail))
    if list_type == "map":
        if not keys_list:
            errs.append(
                _required(
                    _child(path, "x-kubernetes-list-map-keys"),
                    "must not be empty if x-kubernetes-list-type is map",
                )
            )
        if items is None:
            errs.append(
                _required(
                    _child(path, "items"), "must have a schema if x-kubernetes-list-type is map"
                )
            )
        elif isinstance(items, list):
            errs.append(
                _invalid(
                    _child(path, "items"),
                    items,
                    "must only have a single schema if x-kubernetes-list-type is map",
                )
            )
        elif isinstance(items, dict):
            item_type = _str(items, "type")
            if item_type != "object":
                errs.append(
                    _invalid(
                        _child(path, "items", "type"),
                        item_type,
                        "must be object if parent array's x-kubernetes-list-type is map",
                    )
                )
            else:
                item_props = _props(items)
                seen: set[str] = set()
                for raw_key in keys_list:
                    k = str(raw_key)
                    if k in item_props:
                        if _str(item_props[k], "type") in ("array", "object"):
                            errs.append(
                                _invalid(
                                    _child(_key(_child(path, "items", "properties"), k), "type"),
                                    item_type,
                                    "must be a scalar type if parent array's "
                                    "x-kubernetes-list-type is map",
                                )
                            )
                    else:
                        errs.append(
                            _invalid(
                                _child(path, "x-kubernetes-list-map-keys"),
                                _go_string_slice(keys_list),
                                "entries must all be names of item properties",
                            )
                        )
                    if k in seen:
                        errs.append(
                            _invalid(
                                _child(path, "x-kubernetes-list-map-keys"),
                                _go_string_slice(keys_list),
                                "must not contain duplicate entries",
                            )
                        )
                    seen.add(k)
    return errs


def _map_list_keys_map_set_errors(s: dict[str, Any], path: str) -> list[FieldCause]:
    items = s.get("items")
    list_type = s.get("x-kubernetes-list-type")
    if not isinstance(items, dict) or list_type not in ("set", "map"):
        return []
    errs: list[FieldCause] = []
    if items.get("nullable") is True:
        errs.append(
            _forbidden(
                _child(path, "items", "nullable"),
                f"cannot be nullable when x-kubernetes-list-type is {list_type}",
            )
        )
    if list_type == "map":
        required = items.get("required")
        required_set = set(required) if isinstance(required, list) else set()
        item_props = _props(items)
        keys = s.get("x-kubernetes-list-map-keys")
        for k in keys if isinstance(keys, list) else []:
            prop = item_props.get(str(k))
            if prop is None:
                continue
            prop_path = _key(_child(path, "items", "properties"), str(k))
            if k not in required_set and prop.get("default") is None:
                errs.append(
                    _required(
                        _child(prop_path, "default"),
                        "this property is in x-kubernetes-list-map-keys, so it must have a "
                        "default or be a "
                        "required property",
                    )
                )
            if prop.get("nullable") is True:
                errs.append(
                    _forbidden(
                        _child(prop_path, "nullable"),
                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                    )
                )
    return errs


_NEWLINES: Final = re.compile(r"[\n\r]+")


def _rule_shape_errors(s: dict[str, Any], rules: list[Any], path: str) -> list[FieldCause]:
    errs: list[FieldCause] = []
    for i, raw_rule in enumerate(rules):
        rule = raw_rule if isinstance(raw_rule, dict) else {}
        rp = _index(_child(path, "x-kubernetes-validations"), i)
        text = _str(rule, "rule")
        message = _str(rule, "message")
        trimmed_rule = text.strip()
        trimmed_msg = message.strip()
        if not trimmed_rule:
            errs.append(_required(_child(rp, "rule"), "rule is not specified"))
        elif message and not trimmed_msg:
            errs.append(
                _invalid(_child(rp, "message"), message, "message must be non-empty if specified")
            )
        elif _NEWLINES.search(trimmed_msg):
            errs.append(
                _invalid(_child(rp, "message"), message, "message must not contain line breaks")
            )
        elif _NEWLINES.search(trimmed_rule) and not trimmed_msg:
            errs.append(
                _required(
                    _child(rp, "message"), "message must be specified if rule contains line breaks"
                )
            )
        message_expression = _str(rule, "messageExpression")
        if message_expression and not message_expression.strip():
            errs.append(
                _required(
                    _child(rp, "messageExpression"),
                    "messageExpression must be non-empty if specified",
                )
            )
        reason = rule.get("reason")
        if reason is not None and reason not in _SUPPORTED_RULE_REASONS:
            errs.append(_not_supported(_child(rp, "reason"), reason, _SUPPORTED_RULE_REASONS))
        field_path = _str(rule, "fieldPath")
        if field_path and not field_path.strip():
            errs.append(
                _invalid(
                    _child(rp, "fieldPath"), field_path, "fieldPath must be non-empty if specified"
                )
            )
        if _NEWLINES.search(field_path):
            errs.append(
                _invalid(
                    _child(rp, "fieldPath"), field_path, "fieldPath must not contain line breaks"
                )
            )
        if field_path:
            try:
                valid_field_path(field_path, s)
            except ValueError:
                errs.append(
                    _invalid(_child(rp, "fieldPath"), field_path, "fieldPath must be a valid path")
                )
    return errs


def _rule_compile_errors(
    s: dict[str, Any], rules: list[Any], path: str, ssv: _Ssv, is_resource_root: bool
) -> list[FieldCause]:
    errs: list[FieldCause] = []
    compiled = _cel.compile_rules(s, is_resource_root=is_resource_root)
    for i, (raw_rule, result) in enumerate(zip(rules, compiled, strict=True)):
        rule = raw_rule if isinstance(raw_rule, dict) else {}
        rp = _index(_child(path, "x-kubernetes-validations"), i)
        if result.error is not None:
            if result.error_required:
                errs.append(_required(_child(rp, "rule"), result.error))
            else:
                errs.append(_invalid(_child(rp, "rule"), _go_rule_struct(rule), result.error))
        if result.message_error is not None:
            errs.append(
                _invalid(
                    _child(rp, "messageExpression"), _go_rule_struct(rule), result.message_error
                )
            )
        if result.uses_old_self:
            if ssv.forbid_old_self is not None:
                errs.append(
                    _invalid(
                        _child(rp, "rule"),
                        _str(rule, "rule"),
                        f"oldSelf cannot be used on the uncorrelatable portion of the schema "
                        "within "
                        f"{ssv.forbid_old_self}",
                    )
                )
        elif rule.get("optionalOldSelf") is not None:
            errs.append(
                _invalid(
                    _child(rp, "optionalOldSelf"),
                    rule.get("optionalOldSelf"),
                    "may not be set if oldSelf is not used in rule",
                )
            )
    return errs


def valid_field_path(json_path: str, schema: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Check a rule's ``fieldPath`` against a schema, as apiextensions' ValidFieldPath.

    Args:
        json_path: E.g. ``.spec.replicas`` or ``.labels['app.kubernetes.io/name']``.
        schema: The schema node the rule is declared on.

    Returns:
        The field path it denotes (relative, e.g. ``spec.replicas`` or ``labels[app]``)
        and the schema node it leads to.

    Raises:
        ValueError: The path is malformed or does not lead to a field of the schema.
    """
    tokens = _split_json_path(json_path)
    out: str | None = None
    node: dict[str, Any] = schema
    i = 0

    def step(name: str) -> None:
        nonlocal out, node
        props = node.get("properties")
        if isinstance(props, dict) and props:
            if name not in props or not isinstance(props[name], dict):
                raise ValueError("does not refer to a valid field")
            out = _child(out, name)
            node = props[name]
        elif isinstance(node.get("additionalProperties"), dict):
            out = _key(out, name)
            node = node["additionalProperties"]
        else:
            raise ValueError("does not refer to a valid field")

    while i < len(tokens):
        tok = tokens[i]
        if tok == "[":
            if i + 2 >= len(tokens):
                raise ValueError("unexpected end of JSON path")
            lit = tokens[i + 1]
            if len(lit) < 2 or lit[0] != "'" or lit[-1] != "'":
                raise ValueError(f"expected single quoted string but got {lit}")
            step(_unescape_single_quote(lit[1:-1]))
            if tokens[i + 2] != "]":
                raise ValueError(f"expected ] but got {tokens[i + 2]}")
            i += 3
        elif tok == ".":
            if i + 1 >= len(tokens):
                raise ValueError("unexpected end of JSON path")
            step(tokens[i + 1])
            i += 2
        else:
            raise ValueError(f"expected [ or . but got: {tok}")
    return out or "", node


def _split_json_path(path: str) -> list[str]:
    tokens: list[str] = []
    i = 0
    while i < len(path):
        ch = path[i]
        if ch == "'":
            j = i + 1
            while j < len(path) and not (path[j] == "'" and path[j - 1] != "\\"):
                j += 1
            tokens.append(path[i : j + 1])
            i = j + 1
        elif ch in ".[]":
            tokens.append(ch)
            i += 1
        else:
            j = i
            while j < len(path) and path[j] not in ".[]":
                j += 1
            tokens.append(path[i:j])
            i = j
    return tokens


def _unescape_single_quote(s: str) -> str:
    table = {
        "a": "\a",
        "b": "\b",
        "f": "\f",
        "n": "\n",
        "r": "\r",
        "t": "\t",
        "v": "\v",
        "'": "'",
        "\\": "\\",
    }

    def sub(m: re.Match[str]) -> str:
        c = m.group(0)[1]
        if c not in table:
            raise ValueError(f"invalid string literal: invalid escape char {m.group(0)}")
        return table[c]

    return re.sub(r"\\.", sub, s)


def _validate_defaults(
    node: _Node, path: str, require_pruned: bool, inside_meta: bool = False
) -> list[FieldCause]:
    """structuraldefaulting.ValidateDefaults: defaults must validate and be pruned."""
    errs: list[FieldCause] = []
    if node.has_default:
        dpath = _child(path, "default")
        value = node.default
        if not inside_meta and require_pruned:
            pruned = copy.deepcopy(value)
            _prune(pruned, node, node.embedded, None, "")
            if not _json_equal(pruned, value):
                errs.append(_invalid(dpath, value, "must not have unknown fields"))
        meta_errs = [] if inside_meta else _embedded_meta_errors(value, node, dpath, node.embedded)
        if meta_errs:
            errs += meta_errs
        else:
            value_errs = _openapi_errors(node, value, dpath)
            if value_errs:
                errs += value_errs
            elif node.has_cel:
                errs += _cel_errors(
                    node, value, value, True, dpath, is_resource_root=node.embedded, unchanged=None
                )
    if node.items is not None:
        errs += _validate_defaults(node.items, _child(path, "items"), require_pruned, inside_meta)
    for name, sub in (node.properties or {}).items():
        sub_meta = (
            False if sub.embedded else (inside_meta or (node.embedded and name in _META_FIELDS))
        )
        errs += _validate_defaults(
            sub, _key(_child(path, "properties"), name), require_pruned, sub_meta
        )
    return errs


_ROOT_ALLOWED_WITH_STATUS: Final = {
    "description": "Description",
    "type": "Type",
    "format": "Format",
    "title": "Title",
    "maximum": "Maximum",
    "exclusiveMaximum": "ExclusiveMaximum",
    "minimum": "Minimum",
    "exclusiveMinimum": "ExclusiveMinimum",
    "maxLength": "MaxLength",
    "minLength": "MinLength",
    "pattern": "Pattern",
    "maxItems": "MaxItems",
    "minItems": "MinItems",
    "uniqueItems": "UniqueItems",
    "multipleOf": "MultipleOf",
    "required": "Required",
    "items": "Items",
    "properties": "Properties",
    "externalDocs": "ExternalDocs",
    "example": "Example",
    "x-kubernetes-preserve-unknown-fields": "XPreserveUnknownFields",
    "x-kubernetes-validations": "XValidations",
}


def _schema_validation_errors(
    schema: dict[str, Any], path: str, *, status_enabled: bool, opts: _SchemaOpts
) -> list[FieldCause]:
    """validateCustomResourceDefinitionValidation for one ``openAPIV3Schema``."""
    errs: list[FieldCause] = []
    if status_enabled:
        for key, value in schema.items():
            if value is None or value is False or value == "":
                continue
            if key == "type":
                if value != "object":
                    errs.append(
                        _invalid(
                            _child(path, "type"),
                            value,
                            'only "object" is allowed as the type at the root of the schema if the '
                            "status subresource is enabled",
                        )
                    )
                    break
                continue
            if key not in _ROOT_ALLOWED_WITH_STATUS:
                allowed = " ".join(_ROOT_ALLOWED_WITH_STATUS.values())
                errs.append(
                    _invalid(
                        path,
                        schema,
                        f"only [{allowed}] fields are allowed at the root of the schema if the "
                        "status subresource is enabled",
                    )
                )
                break
    if schema.get("nullable") is True:
        errs.append(_forbidden(_child(path, "nullable"), "nullable cannot be true at the root"))
    ssv = _Ssv(
        allow_defaults=opts.allow_defaults,
        require_valid_property_type=opts.require_valid_property_type,
    )
    init_error = _new_structural_error(schema)
    cel_root: bool | None = None
    if init_error is None:
        structural = _validate_structural(schema, path)
        if structural:
            errs += structural
        else:
            node = _Node(schema)
            default_errs = _validate_defaults(node, path, opts.require_pruned_defaults, False)
            if default_errs:
                errs += default_errs
            else:
                cel_root = True
    schema_errs = _openapi_schema_errors(schema, path, ssv, opts, is_root=True, cel_root=cel_root)
    errs += schema_errs.schema + schema_errs.cel
    if not errs and init_error is not None:
        errs.append(_invalid(path, "", init_error))
    return errs


def structural_errors(
    schema: dict[str, Any], path: str = "spec.validation.openAPIV3Schema"
) -> list[FieldCause]:
    """Check a CRD's ``openAPIV3Schema`` the way kube-apiserver does on CRD create.

    This covers what apiextensions checks of one schema: the OpenAPI restrictions
    (no ``$ref``, ``definitions``, ``patternProperties``, array ``items``..., no
    ``uniqueItems``, ``properties`` and ``additionalProperties`` mutually exclusive),
    structurality (every node typed unless ``x-kubernetes-int-or-string`` or
    ``x-kubernetes-preserve-unknown-fields``; ``anyOf``/``allOf``/``oneOf``/``not`` only
    with value validations, and only about fields specified outside them; metadata at
    the root restricted to ``name`` and ``generateName``; embedded resources typed
    ``object``), list/map extensions, defaults (valid, pruned, not in root metadata) and
    the compilation of ``x-kubernetes-validations`` rules.

    Args:
        schema: The ``openAPIV3Schema`` dict.
        path: Field path of the schema in the CRD, used as the prefix of every cause.

    Returns:
        The causes, in kube-apiserver's order (structural errors sorted as it sorts them).
    """
    return _schema_validation_errors(schema, path, status_enabled=False, opts=_SchemaOpts())


# ---------------------------------------------------------------------------------------
# CustomResourceDefinition validation.
# ---------------------------------------------------------------------------------------

_DNS1035_FMT: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_RE: Final = re.compile(f"^{_DNS1035_FMT}\\Z")
_DNS1123_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT: Final = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_RE: Final = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}\\Z")


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    msg += " (e.g. "
    for i, example in enumerate(examples):
        if i > 0:
            msg += " or "
        msg += f"'{example}', "
    return msg + f"regex used for validation is '{fmt}')"


def is_dns1035_label(value: str) -> list[str]:
    """apimachinery's IsDNS1035Label: the problems with ``value``, empty if valid.

    Args:
        value: The candidate label.

    Returns:
        The error strings, worded as apimachinery words them.
    """
    errs: list[str] = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _DNS1035_RE.match(value):
        errs.append(
            _regex_error(
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
                "with an alphabetic character, and end with an alphanumeric character",
                _DNS1035_FMT,
                "my-name",
                "abc-123",
            )
        )
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    """apimachinery's IsDNS1123Subdomain: the problems with ``value``, empty if valid.

    Args:
        value: The candidate subdomain.

    Returns:
        The error strings, worded as apimachinery words them.
    """
    errs: list[str] = []
    if len(value) > 253:
        errs.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        errs.append(
            _regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, "
                "'-' or '.', and must start and end with an alphanumeric character",
                _DNS1123_SUBDOMAIN_FMT,
                "example.com",
            )
        )
    return errs


def apply_crd_defaults(crd: dict[str, Any]) -> None:
    """Apply the ``apiextensions.k8s.io/v1`` defaults kube-apiserver sets on a CRD, in place.

    ``spec.names.singular`` defaults to the lowercased kind, ``spec.names.listKind`` to
    ``<Kind>List``, ``spec.conversion`` to ``{"strategy": "None"}``, a conversion
    webhook service port to 443.

    Args:
        crd: The CustomResourceDefinition.
    """
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict):
        kind = names.get("kind")
        if isinstance(kind, str) and kind:
            if not names.get("singular"):
                names["singular"] = kind.lower()
            if not names.get("listKind"):
                names["listKind"] = kind + "List"
    conversion = spec.get("conversion")
    if conversion is None:
        spec["conversion"] = {"strategy": "None"}
    elif isinstance(conversion, dict):
        webhook = conversion.get("webhook")
        if isinstance(webhook, dict):
            client = webhook.get("clientConfig")
            if isinstance(client, dict):
                service = client.get("service")
                if isinstance(service, dict) and service.get("port") is None:
                    service["port"] = 443


def crd_stored_versions(crd: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    """The ``status.storedVersions`` kube-apiserver records for a CRD create or update.

    Create starts from nothing, update from the old object's list; either way the current
    storage version is appended if missing.

    Args:
        crd: The new CustomResourceDefinition.
        old: The existing object on update, else None.

    Returns:
        The stored versions, oldest first.
    """
    stored: list[str] = []
    if old is not None:
        status = old.get("status")
        if isinstance(status, dict) and isinstance(status.get("storedVersions"), list):
            stored = [v for v in status["storedVersions"] if isinstance(v, str)]
    spec = crd.get("spec")
    versions = spec.get("versions") if isinstance(spec, dict) else None
    for version in versions if isinstance(versions, list) else []:
        if isinstance(version, dict) and version.get("storage") is True:
            name = version.get("name")
            if isinstance(name, str) and name not in stored:
                stored.append(name)
            break
    return stored


class _Internal:
    """The internal (hoisted) view of a v1 CRD spec that validation works on."""

    def __init__(self, spec: dict[str, Any]) -> None:
        versions = spec.get("versions")
        self.versions: list[dict[str, Any]] = (
            [v if isinstance(v, dict) else {} for v in versions]
            if isinstance(versions, list)
            else []
        )
        self.validation: dict[str, Any] | None = None
        self.subresources: dict[str, Any] | None = None
        self.columns: list[Any] | None = None
        self.per_version_schema = True
        self.per_version_subresources = True
        self.per_version_columns = True
        if not self.versions:
            return
        first = self.versions[0]
        for key in ("schema", "subresources", "additionalPrinterColumns"):
            values = [v.get(key) for v in self.versions]
            if all(_json_equal(values[0], v) for v in values):
                if key == "schema":
                    self.validation = (
                        first.get("schema") if isinstance(first.get("schema"), dict) else None
                    )
                    self.per_version_schema = False
                elif key == "subresources":
                    sub = first.get("subresources")
                    self.subresources = sub if isinstance(sub, dict) else None
                    self.per_version_subresources = False
                else:
                    cols = first.get("additionalPrinterColumns")
                    self.columns = cols if isinstance(cols, list) else None
                    self.per_version_columns = False

    def version_subresources(self, version: dict[str, Any]) -> dict[str, Any] | None:
        if not self.per_version_subresources:
            return self.subresources
        sub = version.get("subresources")
        return sub if isinstance(sub, dict) else None

    def any_status(self) -> bool:
        if self.subresources is not None and self.subresources.get("status") is not None:
            return True
        for v in self.versions:
            sub = v.get("subresources")
            if isinstance(sub, dict) and sub.get("status") is not None:
                return True
        return False

    def schemas(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if self.validation is not None and isinstance(self.validation.get("openAPIV3Schema"), dict):
            out.append(self.validation["openAPIV3Schema"])
        if self.per_version_schema:
            for v in self.versions:
                sch = v.get("schema")
                if isinstance(sch, dict) and isinstance(sch.get("openAPIV3Schema"), dict):
                    out.append(sch["openAPIV3Schema"])
        return out


def _schema_has(s: Any, pred: Any) -> bool:
    if not isinstance(s, dict):
        return False
    if pred(s):
        return True
    subs: list[Any] = []
    items = s.get("items")
    if isinstance(items, list):
        subs.extend(items)
    else:
        subs.append(items)
    for name in ("allOf", "anyOf", "oneOf"):
        value = s.get(name)
        if isinstance(value, list):
            subs.extend(value)
    subs.append(s.get("not"))
    for name in ("properties", "patternProperties", "definitions", "dependencies"):
        value = s.get(name)
        if isinstance(value, dict):
            subs.extend(value.values())
    subs.append(s.get("additionalProperties"))
    subs.append(s.get("additionalItems"))
    return any(_schema_has(sub, pred) for sub in subs)


def _has_non_atomic_set(s: dict[str, Any]) -> bool:
    items = s.get("items")
    if s.get("x-kubernetes-list-type") != "set" or not isinstance(items, dict):
        return False
    if items.get("type") == "array":
        lt = items.get("x-kubernetes-list-type")
        return lt is not None and lt != "atomic"
    if items.get("type") == "object":
        return items.get("x-kubernetes-map-type") != "atomic"
    return False


def _has_unpruned_default(s: dict[str, Any]) -> bool:
    if _new_structural_error(s) is not None or _validate_structural(s, ""):
        return False
    node = _Node(s)

    def walk(n: _Node) -> bool:
        if n.has_default:
            pruned = copy.deepcopy(n.default)
            _prune(pruned, n, n.embedded, None, "")
            if not _json_equal(pruned, n.default):
                return True
        kids = list((n.properties or {}).values())
        if n.items is not None:
            kids.append(n.items)
        return any(walk(k) for k in kids)

    return walk(node)


def _schema_opts(old_spec: _Internal | None) -> _SchemaOpts:
    if old_spec is None:
        return _SchemaOpts()
    schemas = old_spec.schemas()

    def any_schema(pred: Any) -> bool:
        return any(_schema_has(s, pred) for s in schemas)

    return _SchemaOpts(
        require_valid_property_type=not any_schema(
            lambda s: (
                isinstance(s.get("type"), str) and s["type"] and s["type"] not in _OPENAPI_V3_TYPES
            )
        ),
        require_pruned_defaults=not any(_has_unpruned_default(s) for s in schemas),
        require_atomic_set_type=not any_schema(_has_non_atomic_set),
        require_map_list_keys_map_set_validation=not any_schema(
            lambda s: bool(_map_list_keys_map_set_errors(s, ""))
        ),
    )


def _is_established(crd: dict[str, Any]) -> bool:
    status = crd.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for cond in conditions if isinstance(conditions, list) else []:
        if (
            isinstance(cond, dict)
            and cond.get("type") == "Established"
            and cond.get("status") == "True"
        ):
            return True
    return False


def validate_crd(crd: dict[str, Any], old: dict[str, Any] | None = None) -> list[FieldCause]:
    """Validate an ``apiextensions.k8s.io/v1`` CustomResourceDefinition as kube-apiserver.

    Checks ``metadata.name`` (``<plural>.<group>``, a DNS subdomain), the group, scope,
    names (plural/singular/kind/listKind/shortNames/categories), versions (DNS-1035
    names, unique, exactly one storage version, schemas present and acceptable as
    :func:`structural_errors` describes, subresources, printer columns, selectable
    fields, deprecation warnings), conversion settings, API approval of protected groups
    and stored versions. On update (``old`` given) the group and plural are immutable,
    the scope and kind too once ``old`` is Established, every stored version must remain
    in ``spec.versions``, and checks that would reject what ``old`` already contained are
    relaxed as kube-apiserver relaxes them.

    The v1 defaults (see :func:`apply_crd_defaults`) are applied to a copy first; the
    stored versions are computed with :func:`crd_stored_versions`. Generic ObjectMeta
    checks other than the name (labels, annotations, immutable metadata fields) are left
    to the caller.

    Args:
        crd: The CustomResourceDefinition as decoded JSON.
        old: The existing object on update, else None.

    Returns:
        The causes, in kube-apiserver's order.
    """
    crd = copy.deepcopy(crd)
    apply_crd_defaults(crd)
    spec = crd.get("spec") if isinstance(crd.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
    assert isinstance(names, dict)
    group = _str(spec, "group")
    plural = _str(names, "plural")
    errs: list[FieldCause] = []
    errs += _crd_metadata_errors(crd, plural, group)
    old_spec: dict[str, Any] | None = None
    if old is not None:
        old = copy.deepcopy(old)
        apply_crd_defaults(old)
        old_spec = old.get("spec") if isinstance(old.get("spec"), dict) else {}
    internal = _Internal(spec)
    old_internal = _Internal(old_spec) if old_spec is not None else None
    errs += _crd_spec_errors(spec, internal, _schema_opts(old_internal))
    if old is not None and old_spec is not None:
        old_names = old_spec.get("names") if isinstance(old_spec.get("names"), dict) else {}
        assert isinstance(old_names, dict)
        if _is_established(old):
            errs += _immutable("spec.scope", spec.get("scope"), old_spec.get("scope"))
            errs += _immutable("spec.names.kind", names.get("kind"), old_names.get("kind"))
        errs += _immutable("spec.group", spec.get("group"), old_spec.get("group"))
        errs += _immutable("spec.names.plural", names.get("plural"), old_names.get("plural"))
    status = crd.get("status") if isinstance(crd.get("status"), dict) else {}
    assert isinstance(status, dict)
    accepted = status.get("acceptedNames")
    if isinstance(accepted, dict):
        errs += _names_errors(accepted, "status.acceptedNames")
    errs += _stored_versions_errors(crd_stored_versions(crd, old), internal.versions)
    errs += _api_approval_errors(crd, old)
    errs += _preserve_unknown_fields_errors(spec, old_spec)
    return errs


def _immutable(path: str, new: Any, old: Any) -> list[FieldCause]:
    if _json_equal(new, old):
        return []
    return [_invalid(path, new, "field is immutable")]


def _crd_metadata_errors(crd: dict[str, Any], plural: str, group: str) -> list[FieldCause]:
    meta = crd.get("metadata") if isinstance(crd.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    errs: list[FieldCause] = []
    generate_name = _str(meta, "generateName")
    required_name = f"{plural}.{group}"

    def name_errors(name: str, prefix: bool) -> list[str]:
        candidate = name[:-1] if prefix and name.endswith("-") else name
        out = is_dns1123_subdomain(candidate)
        if name != required_name:
            out.append('must be spec.names.plural+"."+spec.group')
        return out

    if generate_name:
        for msg in name_errors(generate_name, True):
            errs.append(_invalid("metadata.generateName", generate_name, msg))
    name = _str(meta, "name")
    if not name:
        errs.append(_required("metadata.name", "name or generateName is required"))
    else:
        for msg in name_errors(name, False):
            errs.append(_invalid("metadata.name", name, msg))
    if _str(meta, "namespace"):
        errs.append(_forbidden("metadata.namespace", "not allowed on this type"))
    return errs


def _go_versions(versions: list[dict[str, Any]]) -> _GoRaw:
    # Go prints the internal structs with %#v; their JSON is the readable equivalent.
    if not versions:
        return _GoRaw("[]apiextensions.CustomResourceDefinitionVersion(nil)")
    return _GoRaw("[]apiextensions.CustomResourceDefinitionVersion" + _json_compact(versions))


def _crd_spec_errors(
    spec: dict[str, Any], internal: _Internal, opts: _SchemaOpts
) -> list[FieldCause]:
    errs: list[FieldCause] = []
    group = _str(spec, "group")
    if not group:
        errs.append(_required("spec.group"))
    elif dns_errs := is_dns1123_subdomain(group):
        errs.append(_invalid("spec.group", group, ",".join(dns_errs)))
    elif len(group.split(".")) < 2:
        errs.append(_invalid("spec.group", group, "should be a domain with at least one dot"))
    scope = spec.get("scope")
    if not scope:
        errs.append(_required("spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        errs.append(_not_supported("spec.scope", scope, ["Cluster", "Namespaced"]))
    preserve = spec.get("preserveUnknownFields") is True
    versions = internal.versions
    if internal.validation is None or internal.validation.get("openAPIV3Schema") is None:
        for i, v in enumerate(versions):
            sch = v.get("schema")
            if not isinstance(sch, dict) or sch.get("openAPIV3Schema") is None:
                errs.append(
                    _required(f"spec.versions[{i}].schema.openAPIV3Schema", "schemas are required")
                )
    if (
        opts.allow_defaults
        and any(_schema_has(s, lambda n: n.get("default") is not None) for s in internal.schemas())
        and preserve
    ):
        errs.append(
            _invalid(
                "spec.preserveUnknownFields",
                True,
                "must be false in order to use defaults in the schema",
            )
        )
    storage_count = 0
    seen: set[str] = set()
    unique = True
    for i, version in enumerate(versions):
        if version.get("storage") is True:
            storage_count += 1
        name = _str(version, "name")
        if name in seen:
            unique = False
        seen.add(name)
        if dns_errs := is_dns1035_label(name):
            errs.append(_invalid(f"spec.versions[{i}].name", name, ",".join(dns_errs)))
        errs += _crd_version_errors(version, f"spec.versions[{i}]", internal, opts)
    if not unique:
        errs.append(
            _invalid("spec.versions", _go_versions(versions), "must contain unique version names")
        )
    if storage_count != 1:
        errs.append(
            _invalid(
                "spec.versions",
                _go_versions(versions),
                "must have exactly one version marked as storage version",
            )
        )
    if versions:
        first = _str(versions[0], "name")
        if first and (dns_errs := is_dns1035_label(first)):
            errs.append(_invalid("spec.version", first, ",".join(dns_errs)))
    names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
    assert isinstance(names, dict)
    for field in ("plural", "singular", "kind", "listKind"):
        if not names.get(field):
            errs.append(_required(f"spec.names.{field}"))
    errs += _names_errors(names, "spec.names")
    if internal.validation is not None:
        errs += _validation_errors(
            internal.validation, "spec.validation", internal.any_status(), opts
        )
    errs += _subresources_errors(internal.subresources, "spec.subresources")
    for i, col in enumerate(internal.columns or []):
        errs += _column_errors(col, f"spec.additionalPrinterColumns[{i}]")
    conversion = spec.get("conversion")
    if isinstance(conversion, dict):
        if conversion.get("strategy") != "None" and preserve:
            errs.append(
                _invalid(
                    "spec.conversion.strategy",
                    conversion.get("strategy"),
                    "must be None if spec.preserveUnknownFields is true",
                )
            )
        errs += _conversion_errors(conversion)
    return errs


def _validation_errors(
    validation: dict[str, Any], path: str, status_enabled: bool, opts: _SchemaOpts
) -> list[FieldCause]:
    schema = validation.get("openAPIV3Schema")
    if not isinstance(schema, dict):
        return []
    return _schema_validation_errors(
        schema, _child(path, "openAPIV3Schema"), status_enabled=status_enabled, opts=opts
    )


def _crd_version_errors(
    version: dict[str, Any], path: str, internal: _Internal, opts: _SchemaOpts
) -> list[FieldCause]:
    errs: list[FieldCause] = []
    warning = version.get("deprecationWarning")
    deprecated = version.get("deprecated") is True
    if warning is not None:
        text = warning if isinstance(warning, str) else str(warning)
        problems: list[str] = []
        if not deprecated:
            problems.append("can only be set for deprecated versions")
        else:
            if len(text.encode()) > 256:
                problems.append("must be <= 256 characters long")
            if not text:
                problems.append("must not be an empty string")
            for i, ch in enumerate(text):
                if not ch.isprintable():
                    problems.append(
                        f"must only contain printable UTF-8 characters; non-printable character "
                        f"found at index {i}"
                    )
                    break
        for problem in problems:
            errs.append(_invalid(_child(path, "deprecationWarning"), text, problem))
    if internal.per_version_schema:
        schema = version.get("schema")
        if isinstance(schema, dict):
            subresources = internal.version_subresources(version)
            status = subresources is not None and subresources.get("status") is not None
            errs += _validation_errors(schema, _child(path, "schema"), status, opts)
    if internal.per_version_subresources:
        sub = version.get("subresources")
        errs += _subresources_errors(
            sub if isinstance(sub, dict) else None, _child(path, "subresources")
        )
    if internal.per_version_columns:
        cols = version.get("additionalPrinterColumns")
        for i, col in enumerate(cols if isinstance(cols, list) else []):
            errs += _column_errors(col, _index(_child(path, "additionalPrinterColumns"), i))
    fields = version.get("selectableFields")
    if isinstance(fields, list) and fields:
        sch = version.get("schema")
        schema = sch.get("openAPIV3Schema") if isinstance(sch, dict) else None
        if not isinstance(schema, dict):
            errs.append(
                _invalid(
                    _child(path, "selectableFields"),
                    "",
                    "selectableFields may only be set when version.schema.openAPIV3Schema is "
                    "not included",
                )
            )
        else:
            errs += _selectable_fields_errors(fields, schema, _child(path, "selectableFields"))
    return errs


def _names_errors(names: dict[str, Any], path: str) -> list[FieldCause]:
    errs: list[FieldCause] = []
    for field in ("plural", "singular"):
        value = _str(names, field)
        if value and (dns_errs := is_dns1035_label(value)):
            errs.append(_invalid(f"{path}.{field}", value, ",".join(dns_errs)))
    for field in ("kind", "listKind"):
        value = _str(names, field)
        if value and (dns_errs := is_dns1035_label(value.lower())):
            errs.append(
                _invalid(
                    f"{path}.{field}",
                    value,
                    "may have mixed case, but should otherwise match: " + ",".join(dns_errs),
                )
            )
    short_names = names.get("shortNames")
    for i, short in enumerate(short_names if isinstance(short_names, list) else []):
        text = short if isinstance(short, str) else str(short)
        if dns_errs := is_dns1035_label(text):
            errs.append(_invalid(f"{path}.shortNames[{i}]", text, ",".join(dns_errs)))
    kind = _str(names, "kind")
    if kind and kind == _str(names, "listKind"):
        errs.append(_invalid(f"{path}.listKind", kind, "kind and listKind may not be the same"))
    categories = names.get("categories")
    for i, category in enumerate(categories if isinstance(categories, list) else []):
        text = category if isinstance(category, str) else str(category)
        if dns_errs := is_dns1035_label(text):
            errs.append(_invalid(f"{path}.categories[{i}]", text, ",".join(dns_errs)))
    return errs


def _simple_json_path_errors(s: str, path: str) -> list[FieldCause]:
    if not s:
        return [_invalid(path, s, "must not be empty")]
    if s[0] != ".":
        return [_invalid(path, s, "must be a simple json path starting with .")]
    return []


def _subresources_errors(sub: dict[str, Any] | None, path: str) -> list[FieldCause]:
    if sub is None:
        return []
    scale = sub.get("scale")
    if not isinstance(scale, dict):
        return []
    errs: list[FieldCause] = []
    spec_path = _str(scale, "specReplicasPath")
    field = f"{path}.scale.specReplicasPath"
    if not spec_path:
        errs.append(_required(field))
    elif simple := _simple_json_path_errors(spec_path, field):
        errs += simple
    elif not spec_path.startswith(".spec."):
        errs.append(_invalid(field, spec_path, "should be a json path under .spec"))
    status_path = _str(scale, "statusReplicasPath")
    field = f"{path}.scale.statusReplicasPath"
    if not status_path:
        errs.append(_required(field))
    elif simple := _simple_json_path_errors(status_path, field):
        errs += simple
    elif not status_path.startswith(".status."):
        errs.append(_invalid(field, status_path, "should be a json path under .status"))
    selector = scale.get("labelSelectorPath")
    if isinstance(selector, str) and selector:
        field = f"{path}.scale.labelSelectorPath"
        if simple := _simple_json_path_errors(selector, field):
            errs += simple
        elif not selector.startswith((".spec.", ".status.")):
            errs.append(
                _invalid(field, selector, "should be a json path under either .spec or .status")
            )
    return errs


_PRINTER_TYPES: Final = ["boolean", "date", "integer", "number", "string"]
_PRINTER_FORMATS: Final = [
    "byte",
    "date",
    "date-time",
    "double",
    "float",
    "int32",
    "int64",
    "password",
]


def _column_errors(col: Any, path: str) -> list[FieldCause]:
    col = col if isinstance(col, dict) else {}
    errs: list[FieldCause] = []
    if not _str(col, "name"):
        errs.append(_required(f"{path}.name"))
    typ = _str(col, "type")
    types_msg = "must be one of " + ",".join(_PRINTER_TYPES)
    if not typ:
        errs.append(_required(f"{path}.type", types_msg))
    elif typ not in _PRINTER_TYPES:
        errs.append(_invalid(f"{path}.type", typ, types_msg))
    fmt = _str(col, "format")
    if fmt and fmt not in _PRINTER_FORMATS:
        errs.append(_invalid(f"{path}.format", fmt, "must be one of " + ",".join(_PRINTER_FORMATS)))
    json_path = _str(col, "jsonPath")
    if not json_path:
        errs.append(_required(f"{path}.JSONPath"))
    else:
        errs += _simple_json_path_errors(json_path, f"{path}.JSONPath")
    return errs


def _selectable_fields_errors(
    fields: list[Any], schema: dict[str, Any], path: str
) -> list[FieldCause]:
    errs: list[FieldCause] = []
    seen: set[str] = set()
    for i, raw_item in enumerate(fields):
        item = raw_item if isinstance(raw_item, dict) else {}
        ipath = f"{path}[{i}].jsonPath"
        json_path = _str(item, "jsonPath")
        if not json_path:
            errs.append(_required(ipath))
            continue
        if "[" in json_path:
            errs.append(
                _invalid(ipath, json_path, "is an invalid path: array notation is not allowed")
            )
            continue
        try:
            normalized, node = valid_field_path(json_path, schema)
        except ValueError as e:
            errs.append(_invalid(ipath, json_path, f"is an invalid path: {e}"))
            continue
        if normalized.split(".")[0].split("[")[0] == "metadata":
            errs.append(_invalid(ipath, json_path, "must not point to fields in metadata"))
        if node.get("type") not in ("string", "boolean", "integer"):
            errs.append(
                _invalid(
                    ipath,
                    json_path,
                    "must point to a field of type string, boolean or integer. Enum string "
                    "fields and strings "
                    "with formats are allowed.",
                )
            )
        if normalized in seen:
            errs.append(_duplicate(ipath, json_path))
        seen.add(normalized)
    if len(seen) > 8:
        errs.append(_too_many(path, len(seen), 8))
    return errs


def _conversion_errors(conversion: dict[str, Any]) -> list[FieldCause]:
    errs: list[FieldCause] = []
    path = "spec.conversion"
    strategy = conversion.get("strategy")
    if not strategy:
        errs.append(_required(f"{path}.strategy"))
    elif strategy not in ("None", "Webhook"):
        errs.append(_not_supported(f"{path}.strategy", strategy, ["None", "Webhook"]))
    webhook = conversion.get("webhook") if isinstance(conversion.get("webhook"), dict) else None
    assert webhook is None or isinstance(webhook, dict)
    client = webhook.get("clientConfig") if webhook is not None else None
    review_versions = webhook.get("conversionReviewVersions") if webhook is not None else None
    if strategy == "Webhook":
        if not isinstance(client, dict):
            errs.append(
                _required(f"{path}.webhookClientConfig", "required when strategy is set to Webhook")
            )
        else:
            url = client.get("url")
            service = client.get("service")
            cc_path = f"{path}.webhookClientConfig"
            if (url is None) == (service is None):
                errs.append(_required(cc_path, "exactly one of url or service is required"))
            elif url is not None:
                errs += _webhook_url_errors(f"{cc_path}.url", str(url))
            elif isinstance(service, dict):
                errs += _webhook_service_errors(f"{cc_path}.service", service)
        errs += _review_versions_errors(review_versions, f"{path}.conversionReviewVersions")
    else:
        if client is not None:
            errs.append(
                _forbidden(
                    f"{path}.webhookClientConfig",
                    "should not be set when strategy is not set to Webhook",
                )
            )
        if isinstance(review_versions, list) and review_versions:
            errs.append(
                _forbidden(
                    f"{path}.conversionReviewVersions",
                    "should not be set when strategy is not set to Webhook",
                )
            )
    return errs


def _review_versions_errors(versions: Any, path: str) -> list[FieldCause]:
    if not isinstance(versions, list) or not versions:
        return [_required(path)]
    errs: list[FieldCause] = []
    seen: set[str] = set()
    accepted = False
    for i, v in enumerate(versions):
        text = v if isinstance(v, str) else str(v)
        if text in seen:
            errs.append(_invalid(f"{path}[{i}]", text, "duplicate version"))
            continue
        seen.add(text)
        for msg in is_dns1035_label(text):
            errs.append(_invalid(f"{path}[{i}]", text, msg))
        if text in ("v1", "v1beta1"):
            accepted = True
    if not accepted:
        errs.append(
            _invalid(path, _go_string_slice(versions), "must include at least one of v1, v1beta1")
        )
    return errs


def _webhook_url_errors(path: str, url: str) -> list[FieldCause]:
    form = "; desired format: https://host[/path]"
    try:
        parsed = urllib.parse.urlsplit(url)
    except ValueError as e:
        return [_required(path, f"url must be a valid URL: {e}{form}")]
    errs: list[FieldCause] = []
    if parsed.scheme != "https":
        errs.append(_invalid(path, parsed.scheme, "'https' is the only allowed URL scheme" + form))
    if not parsed.netloc.rpartition("@")[2]:
        errs.append(_invalid(path, "", "host must be specified" + form))
    if "@" in parsed.netloc:
        errs.append(
            _invalid(
                path,
                parsed.netloc.rpartition("@")[0],
                "user information is not permitted in the URL",
            )
        )
    if parsed.fragment:
        errs.append(_invalid(path, parsed.fragment, "fragments are not permitted in the URL"))
    if parsed.query:
        errs.append(_invalid(path, parsed.query, "query parameters are not permitted in the URL"))
    return errs


def _webhook_service_errors(path: str, service: dict[str, Any]) -> list[FieldCause]:
    errs: list[FieldCause] = []
    if not _str(service, "name"):
        errs.append(_required(f"{path}.name", "service name is required"))
    if not _str(service, "namespace"):
        errs.append(_required(f"{path}.namespace", "service namespace is required"))
    port = service.get("port", 443)
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
        errs.append(
            _invalid(
                f"{path}.port", port, "port is not valid: must be between 1 and 65535, inclusive"
            )
        )
    url_path = service.get("path")
    if isinstance(url_path, str) and url_path not in ("", "/"):
        if url_path == "//":
            errs.append(_invalid(f"{path}.path", url_path, "segment[0] may not be empty"))
        elif not url_path.startswith("/"):
            errs.append(_invalid(f"{path}.path", url_path, "must start with a '/'"))
        else:
            for i, segment in enumerate(url_path[1:].split("/")):
                if not segment and i != len(url_path[1:].split("/")) - 1:
                    errs.append(
                        _invalid(f"{path}.path", url_path, f"segment[{i}] may not be empty")
                    )
    return errs


def _stored_versions_errors(stored: list[str], versions: list[dict[str, Any]]) -> list[FieldCause]:
    path = "status.storedVersions"
    if not stored:
        return [_invalid(path, _go_string_slice(stored), "must have at least one stored version")]
    errs: list[FieldCause] = []
    remaining = {v: i for i, v in enumerate(stored)}
    for version in versions:
        name = _str(version, "name")
        if version.get("storage") is True and name not in remaining:
            errs.append(
                _invalid(path, _go_string_slice(stored), f"must have the storage version {name}")
            )
        remaining.pop(name, None)
    for v, i in remaining.items():
        errs.append(
            _invalid(
                f"{path}[{i}]",
                v,
                f"missing from spec.versions; {v} was previously a storage version, and must "
                "remain in "
                f"spec.versions until a storage migration ensures no data remains persisted in "
                f"{v} and "
                f"removes {v} from status.storedVersions",
            )
        )
    return errs


_APPROVAL_ANNOTATION: Final = "api-approved.kubernetes.io"


def _approval_state(crd: dict[str, Any]) -> tuple[str, str]:
    meta = crd.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    value = annotations.get(_APPROVAL_ANNOTATION) if isinstance(annotations, dict) else None
    if not isinstance(value, str) or not value:
        return "missing", (
            f"protected groups must have approval annotation {go_quote(_APPROVAL_ANNOTATION)}, "
            "see https://github.com/kubernetes/enhancements/pull/1111"
        )
    if value.startswith("unapproved"):
        return "bypassed", ""
    parsed = urllib.parse.urlsplit(value)
    if (parsed.scheme and (parsed.netloc or parsed.path)) or value.startswith("/"):
        return "approved", ""
    return "invalid", (
        f"protected groups must have approval annotation {go_quote(_APPROVAL_ANNOTATION)} with "
        "either a URL "
        'or a reason starting with "unapproved", see https://github.com/kubernetes/enhancements/pull/1111'
    )


def _api_approval_errors(crd: dict[str, Any], old: dict[str, Any] | None) -> list[FieldCause]:
    spec = crd.get("spec")
    group = _str(spec, "group") if isinstance(spec, dict) else ""
    protected = len(group.split(".")) >= 2 and (
        group in ("k8s.io", "kubernetes.io") or group.endswith((".k8s.io", ".kubernetes.io"))
    )
    if not protected:
        return []
    state, reason = _approval_state(crd)
    if old is not None and _approval_state(old)[0] == state:
        return []
    path = f"metadata.annotations[{_APPROVAL_ANNOTATION}]"
    if state == "missing":
        return [_required(path, reason)]
    if state == "invalid":
        meta = crd.get("metadata")
        annotations = meta.get("annotations") if isinstance(meta, dict) else {}
        value = annotations.get(_APPROVAL_ANNOTATION) if isinstance(annotations, dict) else ""
        return [_invalid(path, value, reason)]
    return []


def _preserve_unknown_fields_errors(
    spec: dict[str, Any], old_spec: dict[str, Any] | None
) -> list[FieldCause]:
    if old_spec is not None and old_spec.get("preserveUnknownFields") is True:
        return []
    if spec.get("preserveUnknownFields") is True:
        return [
            _invalid(
                "spec.preserveUnknownFields",
                True,
                "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in "
                "spec.versions[*].schema "
                "instead",
            )
        ]
    return []


# ---------------------------------------------------------------------------------------
# Embedded resources: TypeMeta and ObjectMeta checks (schema/objectmeta).
# ---------------------------------------------------------------------------------------

_QNAME_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_RE: Final = re.compile(f"^{_QNAME_FMT}\\Z")
_QNAME_MSG: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_LABEL_VALUE_FMT: Final = f"(({_QNAME_FMT})?)"
_LABEL_VALUE_RE: Final = re.compile(f"^{_LABEL_VALUE_FMT}\\Z")
_DNS1123_LABEL_RE: Final = re.compile(f"^{_DNS1123_LABEL_FMT}\\Z")


def _is_qualified_name(value: str) -> list[str]:
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
        errs: list[str] = []
    elif len(parts) == 2:
        prefix, name = parts
        errs = []
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += ["prefix part " + m for m in is_dns1123_subdomain(prefix)]
    else:
        return [
            "a qualified name "
            + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _QNAME_RE.match(name):
        errs.append(
            "name part " + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def _is_label_value(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_VALUE_RE.match(value):
        errs.append(
            _regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, "
                "'-', '_' "
                "or '.', and must start and end with an alphanumeric character",
                _LABEL_VALUE_FMT,
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return errs


_OBJECT_META_STRINGS: Final = (
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
)
_OBJECT_META_INTS: Final = ("generation", "deletionGracePeriodSeconds")
_OBJECT_META_TIMES: Final = ("creationTimestamp", "deletionTimestamp")
_OBJECT_META_STRING_MAPS: Final = ("labels", "annotations")
_OBJECT_META_LISTS: Final = ("ownerReferences", "finalizers", "managedFields")
_OBJECT_META_FIELDS: Final = frozenset(
    _OBJECT_META_STRINGS
    + _OBJECT_META_INTS
    + _OBJECT_META_TIMES
    + _OBJECT_META_STRING_MAPS
    + _OBJECT_META_LISTS
)


def _json_type_name(value: Any) -> str:
    kind = _json_kind(value)
    return {"integer": "number", "boolean": "bool"}.get(kind, kind)


def _object_meta_field_error(key: str, value: Any) -> str | None:
    """Why ``value`` cannot decode into ObjectMeta's ``key`` field, or None."""
    go_field = key[0].upper() + key[1:]

    def wrong(go_type: str) -> str:
        return (
            f"json: cannot unmarshal {_json_type_name(value)} into Go struct field "
            f"ObjectMeta.{key} of type {go_type}"
        )

    del go_field
    if value is None:
        return None
    if key in _OBJECT_META_STRINGS:
        return None if isinstance(value, str) else wrong("string")
    if key in _OBJECT_META_INTS:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return None if ok else wrong("int64")
    if key in _OBJECT_META_TIMES:
        if not isinstance(value, str):
            return wrong("v1.Time")
        return None if _is_datetime(value) else f"parsing time {go_quote(value)} as RFC3339"
    if key in _OBJECT_META_STRING_MAPS:
        if not isinstance(value, dict):
            return wrong("map[string]string")
        for v in value.values():
            if not isinstance(v, str):
                return wrong("string")
        return None
    if key in _OBJECT_META_LISTS:
        if not isinstance(value, list):
            return wrong(
                "[]" + {"finalizers": "string"}.get(key, "v1." + key[0].upper() + key[1:-1])
            )
        if key == "finalizers" and not all(isinstance(v, str) for v in value):
            return wrong("string")
        return None
    return None


def _object_meta_decode_error(meta: Any) -> str | None:
    if not isinstance(meta, dict):
        return f"json: cannot unmarshal {_json_type_name(meta)} into Go value of type v1.ObjectMeta"
    for key, value in meta.items():
        if key in _OBJECT_META_FIELDS:
            err = _object_meta_field_error(key, value)
            if err is not None:
                return err
    return None


def _object_meta_errors(meta: dict[str, Any], path: str) -> list[FieldCause]:
    """apimachinery's ValidateObjectMeta with ValidatePathSegmentName, as for embedded objects."""
    errs: list[FieldCause] = []

    def segment_errors(name: str, prefix: bool) -> list[str]:
        if not prefix and name in (".", ".."):
            return [f"may not be '{name}'"]
        return [f"may not contain '{c}'" for c in ("/", "%") if c in name]

    generate_name = meta.get("generateName") or ""
    if generate_name:
        for msg in segment_errors(generate_name, True):
            errs.append(_invalid(f"{path}.generateName", generate_name, msg))
    name = meta.get("name") or "fakename"
    for msg in segment_errors(name, False):
        errs.append(_invalid(f"{path}.name", name, msg))
    namespace = meta.get("namespace") or ""
    if namespace:
        ns_errs: list[str] = []
        if len(namespace) > 63:
            ns_errs.append("must be no more than 63 characters")
        if not _DNS1123_LABEL_RE.match(namespace):
            ns_errs.append(
                _regex_error(
                    "a lowercase RFC 1123 label must consist of lower case alphanumeric "
                    "characters or "
                    "'-', and must start and end with an alphanumeric character",
                    _DNS1123_LABEL_FMT,
                    "my-name",
                    "123-abc",
                )
            )
        for msg in ns_errs:
            errs.append(_invalid(f"{path}.namespace", namespace, msg))
    generation = meta.get("generation")
    if isinstance(generation, int) and generation < 0:
        errs.append(
            _invalid(f"{path}.generation", generation, "must be greater than or equal to 0")
        )
    labels = meta.get("labels")
    if isinstance(labels, dict):
        for k, v in labels.items():
            for msg in _is_qualified_name(k):
                errs.append(_invalid(f"{path}.labels", k, msg))
            for msg in _is_label_value(v):
                errs.append(_invalid(f"{path}.labels", v, msg))
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        total = 0
        for k, v in annotations.items():
            for msg in _is_qualified_name(k.lower()):
                errs.append(_invalid(f"{path}.annotations", k, msg))
            total += len(k) + len(v)
        if total > 256 * 1024:
            errs.append(
                _cause(
                    "FieldValueTooLong",
                    "Too long",
                    f"{path}.annotations",
                    _OMIT,
                    "must have at most 262144 bytes",
                )
            )
    return errs


def _parse_group_version_error(api_version: str) -> str | None:
    if not api_version or api_version == "/":
        return None
    if api_version.count("/") > 1:
        return f"unexpected GroupVersion string: {api_version}"
    return None


def _embedded_resource_errors(path: Path, x: dict[str, Any]) -> list[FieldCause]:
    errs: list[FieldCause] = []
    if "apiVersion" not in x:
        errs.append(_required(_child(path, "apiVersion")))
    if "kind" not in x:
        errs.append(_required(_child(path, "kind")))
    for k, v in x.items():
        if k == "apiVersion":
            if not isinstance(v, str):
                errs.append(_invalid(_child(path, "apiVersion"), v, "must be a string"))
            elif not v:
                errs.append(_required(_child(path, "apiVersion")))
            elif (gv_err := _parse_group_version_error(v)) is not None:
                errs.append(_invalid(_child(path, "apiVersion"), v, gv_err))
        elif k == "kind":
            if not isinstance(v, str):
                errs.append(_invalid(_child(path, "kind"), v, "must be a string"))
            elif not v:
                errs.append(_required(_child(path, "kind")))
            elif dns_errs := is_dns1035_label(v.lower()):
                errs.append(
                    _invalid(
                        _child(path, "kind"),
                        v,
                        "may have mixed case, but should otherwise match: " + ",".join(dns_errs),
                    )
                )
        elif k == "metadata":
            decode_err = _object_meta_decode_error(v)
            if decode_err is not None:
                errs.append(_invalid(_child(path, "metadata"), v, decode_err))
            else:
                assert isinstance(v, dict)
                errs += _object_meta_errors(v, _child(path, "metadata"))
    return errs


def _embedded_meta_errors(
    x: Any, node: _Node | None, path: Path, is_resource_root: bool
) -> list[FieldCause]:
    """objectmeta.Validate: TypeMeta and ObjectMeta of embedded resources."""
    if node is None or not (node.has_embedded or is_resource_root):
        return []
    errs: list[FieldCause] = []
    if isinstance(x, dict):
        if node.embedded or is_resource_root:
            errs += _embedded_resource_errors(path, x)
        props = node.properties
        for k, v in x.items():
            sub = props.get(k) if props else None
            if sub is not None:
                errs += _embedded_meta_errors(v, sub, _child(path, k), False)
            elif node.additional is not None:
                errs += _embedded_meta_errors(v, node.additional, _key(path, k), False)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            errs += _embedded_meta_errors(v, node.items, _index(path, i), False)
    return errs


# ---------------------------------------------------------------------------------------
# x-kubernetes-list-type set/map uniqueness (schema/listtype).
# ---------------------------------------------------------------------------------------


def _scalar_key(value: Any) -> Any:
    if isinstance(value, dict | list):
        return ("json", _json_compact(value))
    return (type(value).__name__, value)


def _list_set_duplicates(items: list[Any]) -> list[int]:
    if len(items) <= 1:
        return []
    seen: dict[Any, int] = {}
    out: list[int] = []
    for i, x in enumerate(items):
        key = _scalar_key(x)
        times = seen.get(key)
        if times is None:
            seen[key] = 1
        else:
            seen[key] = times + 1
            if times == 1:
                out.append(i)
    return out


def _listtype_errors(node: _Node | None, x: Any, path: Path) -> list[FieldCause]:
    if node is None or not node.has_list_types:
        return []
    if isinstance(x, dict):
        errs: list[FieldCause] = []
        addl = node.additional
        if addl is not None and addl.has_list_types:
            for k, v in x.items():
                errs += _listtype_errors(addl, v, _key(path, k))
        props = node.properties
        if props is not None:
            for k, v in x.items():
                sub = props.get(k)
                if sub is not None and sub.has_list_types:
                    errs += _listtype_errors(sub, v, _child(path, k))
        return errs
    if not isinstance(x, list):
        return []
    errs = []
    if node.list_type == "set":
        for i in _list_set_duplicates(x):
            errs.append(_duplicate(_index(path, i), x[i]))
    elif node.list_type == "map":
        errs += _list_map_errors(node, x, path)
    if node.items is not None:
        for i, item in enumerate(x):
            errs += _listtype_errors(node.items, item, _index(path, i))
    return errs


class _Unspecified:
    """A key field missing from a list-map item."""

    def __repr__(self) -> str:
        return "<unspecified>"


_UNSPECIFIED: Final = _Unspecified()


def _list_map_errors(node: _Node, x: list[Any], path: Path) -> list[FieldCause]:
    for i, item in enumerate(x):
        if item is not None and not isinstance(item, dict):
            return [
                _invalid(_index(path, i), item, "must be an object for an array of list-type map")
            ]
    if len(x) <= 1:
        return []
    keys = node.list_map_keys
    errs: list[FieldCause] = []
    if len(keys) == 1:
        key_field = keys[0]
        values = [
            _UNSPECIFIED if item is None or key_field not in item else item[key_field] for item in x
        ]
        for i in _list_set_duplicates(values):
            value = values[i]
            errs.append(
                _duplicate(_index(path, i), {} if value is _UNSPECIFIED else {key_field: value})
            )
        return errs
    composite: list[dict[str, Any]] = []
    for item in x:
        composite.append({k: item[k] for k in keys if item is not None and k in item})
    for i in _list_set_duplicates(composite):
        errs.append(_duplicate(_index(path, i), composite[i]))
    return errs


# ---------------------------------------------------------------------------------------
# x-kubernetes-validations evaluation (schema/cel/validation.go).
# ---------------------------------------------------------------------------------------


class _Unchanged:
    """Lazily computed 'is this value unchanged since the old object' for ratcheting."""

    __slots__ = ("_new", "_old", "_parent", "_value")

    def __init__(self, new: Any, old: Any, parent: _Unchanged | None) -> None:
        self._new = new
        self._old = old
        self._parent = parent
        self._value: bool | None = None

    def get(self) -> bool:
        if self._value is None:
            if self._old is _NO_OLD:
                self._value = self._parent.get() if self._parent is not None else False
            else:
                self._value = _json_equal(self._new, self._old)
        return self._value


_NEVER_UNCHANGED: Final = _Unchanged(None, _NO_OLD, None)


def _node_rules(node: _Node, is_resource_root: bool) -> list[_cel.CompiledRule]:
    rules = node.rules
    if rules is None:
        rules = _cel.compile_rules(node.raw, is_resource_root=is_resource_root)
        for rule in rules:
            field_path = _str(rule.rule, "fieldPath")
            if field_path:
                try:
                    rule.field_path = valid_field_path(field_path, node.raw)[0]
                except ValueError:
                    rule.field_path = ""
        node.rules = rules
    return rules


def _rule_error_string(rule: dict[str, Any]) -> str:
    message = _str(rule, "message")
    return message.strip() if message else _str(rule, "rule").strip()


def _rule_message_or_default(rule: dict[str, Any]) -> str:
    message = _str(rule, "message")
    return message.strip() if message else f"failed rule: {_rule_error_string(rule)}"


def _rule_failure(path: Path, value: Any, detail: str, reason: Any) -> FieldCause:
    if reason == "FieldValueForbidden":
        return _forbidden(path, detail)
    if reason == "FieldValueRequired":
        return _required(path, detail)
    if reason == "FieldValueDuplicate":
        return _duplicate(path, value)
    return _invalid(path, value, detail)


def _cel_node_errors(
    node: _Node,
    obj: Any,
    old: Any,
    path: Path,
    *,
    is_resource_root: bool,
    unchanged: _Unchanged,
) -> list[FieldCause]:
    errs: list[FieldCause] = []
    rules = _node_rules(node, is_resource_root)
    has_old = old is not _NO_OLD and old is not None
    for compiled in rules:
        rule = compiled.rule
        if compiled.error is not None:
            errs.append(_invalid(path, node.type, f"rule compile error: {compiled.error}"))
            continue
        program = compiled.program
        if program is None:
            continue
        optional = rule.get("optionalOldSelf") is True
        if compiled.uses_old_self and not has_old and not optional:
            continue
        try:
            result = program.evaluate(
                obj, old if has_old else None, has_old=has_old, optional=optional
            )
        except _cel.CelEvalError as e:
            text = str(e)
            if text.startswith("no such overload"):
                detail = (
                    f"'{text}': call arguments did not match a supported operator, function or "
                    "macro "
                    f"signature for rule: {_rule_error_string(rule)}"
                )
            else:
                detail = f"{text} evaluating rule: {_rule_error_string(rule)}"
            errs.append(_invalid(path, node.type, detail))
            continue
        if result is True:
            continue
        fail_path: Path = path
        if compiled.field_path:
            fail_path = _child(path, compiled.field_path)
        detail = ""
        if compiled.message_program is not None:
            detail = _eval_message(compiled, obj, old if has_old else None, has_old, optional)
        if not detail:
            detail = _rule_message_or_default(rule)
        failure = _rule_failure(fail_path, node.type, detail, rule.get("reason"))
        if not compiled.uses_old_self and unchanged.get():
            continue
        errs.append(failure)
    return errs


def _eval_message(
    compiled: _cel.CompiledRule, obj: Any, old: Any, has_old: bool, optional: bool
) -> str:
    program = compiled.message_program
    assert program is not None
    try:
        value = program.evaluate(obj, old, has_old=has_old, optional=optional)
    except _cel.CelEvalError:
        return ""
    if not isinstance(value, str):
        return ""
    text = value.strip()
    if not text or len(text) > 5 * 1024 or "\n" in text:
        return ""
    return text


def _cel_errors(
    node: _Node,
    obj: Any,
    old: Any,
    has_old: bool,
    path: Path,
    *,
    is_resource_root: bool,
    unchanged: _Unchanged | None,
) -> list[FieldCause]:
    """Validator.validate: evaluate rules on this node and every node below it."""
    if obj is None or not node.has_cel:
        return []
    old_value = old if has_old else _NO_OLD
    here = unchanged or _NEVER_UNCHANGED
    if has_old and unchanged is not None:
        here = _Unchanged(obj, old_value, unchanged)
    errs: list[FieldCause] = []
    if node.validations:
        errs += _cel_node_errors(
            node, obj, old_value, path, is_resource_root=is_resource_root, unchanged=here
        )
    if isinstance(obj, list) and node.items is not None and node.items.has_cel:
        items = node.items
        for i, item in enumerate(obj):
            item_old: Any = None
            item_has_old = False
            if node.list_type == "map" and isinstance(old, list):
                key = _map_list_key(node, item)
                if key is not None:
                    for candidate in old:
                        if _map_list_key(node, candidate) == key:
                            item_old, item_has_old = candidate, True
                            break
            child_unchanged = here if item_has_old else _Unchanged(None, _NO_OLD, here)
            errs += _cel_errors(
                items,
                item,
                item_old,
                item_has_old,
                _index(path, i),
                is_resource_root=items.embedded,
                unchanged=child_unchanged,
            )
    elif isinstance(obj, dict):
        correlatable = (
            has_old and isinstance(old, dict) and _map_is_correlatable(node.map_type or None)
        )
        props = node.properties
        if node.additional is not None and node.additional.has_cel:
            addl = node.additional
            for k, v in obj.items():
                if props is not None and k in props:
                    continue
                sub_has_old = correlatable and k in old
                child_unchanged = here if sub_has_old else _Unchanged(None, _NO_OLD, here)
                errs += _cel_errors(
                    addl,
                    v,
                    old[k] if sub_has_old else None,
                    sub_has_old,
                    _key(path, k),
                    is_resource_root=addl.embedded,
                    unchanged=child_unchanged,
                )
        if props is not None:
            for k, v in obj.items():
                sub = props.get(k)
                if sub is None or not sub.has_cel:
                    continue
                sub_has_old = correlatable and k in old
                child_unchanged = here if sub_has_old else _Unchanged(None, _NO_OLD, here)
                errs += _cel_errors(
                    sub,
                    v,
                    old[k] if sub_has_old else None,
                    sub_has_old,
                    _child(path, k),
                    is_resource_root=sub.embedded,
                    unchanged=child_unchanged,
                )
    return errs


_BLOCKING_REASONS: Final = frozenset(
    (
        "FieldValueNotSupported",
        "FieldValueRequired",
        "FieldValueTooLong",
        "FieldValueTooMany",
        "FieldValueTypeInvalid",
    )
)


def validate(
    obj: dict[str, Any], schema: dict[str, Any], *, old: dict[str, Any] | None = None
) -> list[FieldCause]:
    """Validate a custom resource against its version's ``openAPIV3Schema``.

    Runs what kube-apiserver's custom resource strategy runs after the object metadata
    checks: the OpenAPI schema (types, formats, bounds, lengths, patterns, enums,
    required fields, ``anyOf``/``allOf``/``oneOf``/``not``), the TypeMeta and ObjectMeta
    of embedded resources, ``x-kubernetes-list-type`` set/map uniqueness and the
    ``x-kubernetes-validations`` CEL rules. CEL rules are skipped, with one cause saying
    so, when an earlier error of kind Required, NotSupported, TooLong, TooMany or
    TypeInvalid makes the object unfit for them.

    With ``old`` (an update) errors in parts of the object equal to their correlated old
    values are dropped (ratcheting), list-type errors only count if ``old`` had none, and
    transition rules (rules using ``oldSelf``) run where an old value correlates.

    Args:
        obj: The object after pruning and defaulting.
        schema: The version's ``openAPIV3Schema``; compiled once and cached by identity.
        old: The stored object on update, else None.

    Returns:
        The causes; empty when the object is valid.
    """
    node = _compile(schema)
    errs = _openapi_errors(node, obj, None, _NO_OLD if old is None else old)
    if node.has_embedded:
        errs += _embedded_meta_errors(obj, node, None, False)
    if node.has_list_types and (old is None or not _listtype_errors(node, old, None)):
        errs += _listtype_errors(node, obj, None)
    if node.has_cel:
        if any(e.reason in _BLOCKING_REASONS for e in errs):
            errs.append(
                _invalid(
                    None,
                    None,
                    "some validation rules were not checked because the object was invalid; "
                    "correct the "
                    "existing errors to complete validation",
                )
            )
        else:
            root_unchanged = _Unchanged(obj, _NO_OLD if old is None else old, None)
            errs += _cel_errors(
                node,
                obj,
                old,
                old is not None,
                None,
                is_resource_root=True,
                unchanged=root_unchanged,
            )
    return errs


# ---------------------------------------------------------------------------------------
# Pruning and defaulting.
# ---------------------------------------------------------------------------------------


def _prune(
    x: Any, node: _Node | None, embedded: bool, dropped: list[str] | None, path: str
) -> None:
    """pruning.Prune: drop fields the schema does not specify.

    With ``dropped``, the path of every dropped field is appended to it, in the order
    of a depth-first walk of the object (``a.b``, ``a.list[0].c``); ``path`` is where
    ``x`` sits.
    """
    if node is not None and node.preserve_unknown:
        _skip_prune(x, node, embedded, dropped, path)
        return
    if isinstance(x, dict):
        if node is None:
            if dropped is not None:
                dropped.extend(_join(path, k) for k in x)
            x.clear()
            return
        keep_meta = embedded or node.embedded
        props = node.properties
        for k in list(x):
            if keep_meta and k in _META_FIELDS:
                continue
            sub = props.get(k) if props else None
            if sub is None and node.additional_allows is not None:
                sub = node.additional
            elif sub is None:
                if dropped is not None:
                    dropped.append(_join(path, k))
                del x[k]
                continue
            v = x[k]
            if isinstance(v, dict | list):
                _prune(v, sub, False, dropped, _join(path, k) if dropped is not None else "")
    elif isinstance(x, list):
        items = node.items if node is not None else None
        for i, v in enumerate(x):
            if isinstance(v, dict | list):
                _prune(v, items, False, dropped, f"{path}[{i}]" if dropped is not None else "")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _skip_prune(
    x: Any, node: _Node | None, embedded: bool, dropped: list[str] | None, path: str
) -> None:
    if node is None:
        return
    if isinstance(x, dict):
        keep_meta = embedded or node.embedded
        props = node.properties
        for k, v in x.items():
            if keep_meta and k in _META_FIELDS:
                continue
            sub = props.get(k) if props else None
            if sub is None and node.additional_allows is not None:
                sub = node.additional
            elif sub is None:
                continue
            if isinstance(v, dict | list):
                _prune(v, sub, False, dropped, _join(path, k) if dropped is not None else "")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            where = f"{path}[{i}]" if dropped is not None else ""
            _skip_prune(v, node.items, False, dropped, where)


def _coerce_embedded(x: Any, node: _Node | None) -> None:
    """objectmeta.Coerce with dropInvalidFields: embedded TypeMeta/ObjectMeta made well-formed."""
    if node is None or not node.has_embedded:
        return
    if isinstance(x, dict):
        if node.embedded:
            for k in ("apiVersion", "kind"):
                if k in x and not isinstance(x[k], str):
                    del x[k]
            if "metadata" in x:
                meta = x["metadata"]
                if isinstance(meta, dict):
                    x["metadata"] = _coerced_object_meta(meta)
        props = node.properties
        for k, v in x.items():
            sub = props.get(k) if props else None
            if sub is not None:
                _coerce_embedded(v, sub)
            elif node.additional is not None:
                _coerce_embedded(v, node.additional)
    elif isinstance(x, list):
        for v in x:
            _coerce_embedded(v, node.items)


def _coerced_object_meta(meta: dict[str, Any]) -> dict[str, Any]:
    # A round trip through ObjectMeta: unknown and malformed fields go, empty ones too.
    out: dict[str, Any] = {}
    for k, v in meta.items():
        if k not in _OBJECT_META_FIELDS or _object_meta_field_error(k, v) is not None:
            continue
        empty = v is None or v == "" or (isinstance(v, dict | list) and not v)
        if empty or (v == 0 and k != "deletionGracePeriodSeconds"):
            continue
        out[k] = v
    return out


def prune(obj: dict[str, Any], schema: dict[str, Any], *, unknown: list[str] | None = None) -> None:
    """Drop, in place, every field of a custom resource its schema does not specify.

    As kube-apiserver: fields under ``x-kubernetes-preserve-unknown-fields`` are kept
    (their specified properties still pruned), as are ``apiVersion``, ``kind`` and
    ``metadata`` at the object root and in embedded resources
    (``x-kubernetes-embedded-resource``). The metadata of embedded resources is then
    coerced to ObjectMeta: unknown, malformed and empty fields are dropped.

    Args:
        obj: The custom resource, modified in place.
        schema: The version's ``openAPIV3Schema``.
        unknown: When given, the path of every dropped field (``spec.foo``,
            ``spec.items[0].bar``) is appended to it, in the order of a depth-first
            walk: what kube-apiserver reports as unknown fields.
    """
    node = _compile(schema)
    if unknown is not None and node.has_embedded:
        # Coercing embedded metadata drops fields too: find them all by comparison.
        before = _copy_json(obj)
        _prune(obj, node, True, None, "")
        _coerce_embedded(obj, node)
        unknown.extend(_dropped_paths(before, obj, ""))
        return
    _prune(obj, node, True, unknown, "")
    if node.has_embedded:
        _coerce_embedded(obj, node)


def _dropped_paths(before: Any, after: Any, prefix: str) -> list[str]:
    """Paths of ``before`` that ``after`` (``before`` with fields dropped) lacks."""
    out: list[str] = []
    if isinstance(before, dict) and isinstance(after, dict):
        for key, value in before.items():
            path = _join(prefix, key)
            if key not in after:
                out.append(path)
            else:
                out.extend(_dropped_paths(value, after[key], path))
    elif isinstance(before, list) and isinstance(after, list):
        for i, (b, a) in enumerate(zip(before, after, strict=False)):
            out.extend(_dropped_paths(b, a, f"{prefix}[{i}]"))
    return out


def reapply_is_noop(schema: dict[str, Any]) -> bool:
    """Whether pruning and defaulting again leaves a pruned and defaulted object unchanged.

    True unless the schema has embedded resources (whose metadata is coerced) or a
    default that pruning or null-removal would change (defaults must be pruned in
    ``apiextensions.k8s.io/v1``, but older CRDs may keep unpruned ones): then a second
    `prune` and `apply_defaults` can still change an object, and must be run.
    """
    node = _compile(schema)
    if node.reapply_noop is None:
        node.reapply_noop = not node.has_embedded and _defaults_stable(node)
    return node.reapply_noop


def _defaults_stable(node: _Node) -> bool:
    if node.has_default:
        pruned = _copy_json(node.default)
        _prune(pruned, node, False, None, "")
        _prune_nulls(pruned, node)
        if not _json_equal(pruned, node.default):
            return False
    return all(_defaults_stable(child) for child in node._children())


def _prune_nulls(x: Any, node: _Node | None) -> None:
    """defaulting.PruneNonNullableNullsWithoutDefaults."""
    if node is None:
        # Only a field with a schema can be a non-nullable null: nothing below to do.
        return
    if isinstance(x, dict):
        props = node.properties
        if props is None and node.additional is None:
            return
        for k in list(x):
            v = x[k]
            sub = props.get(k) if props else None
            if sub is None:
                sub = node.additional
            if v is None and sub is not None and not sub.nullable and not sub.has_default:
                del x[k]
            elif isinstance(v, dict | list):
                _prune_nulls(v, sub)
    elif isinstance(x, list):
        items = node.items
        if items is None:
            return
        for v in x:
            if isinstance(v, dict | list):
                _prune_nulls(v, items)


def _copy_json(value: Any) -> Any:
    if type(value) is dict:
        return {k: _copy_json(v) for k, v in value.items()}
    if type(value) is list:
        return [_copy_json(v) for v in value]
    return value


def _default(x: Any, node: _Node | None) -> None:
    """defaulting.Default."""
    if node is None or not node.has_defaults:
        return
    if isinstance(x, dict):
        props = node.properties
        if props:
            for k, sub in props.items():
                if sub.has_default and (k not in x or (x[k] is None and not sub.nullable)):
                    x[k] = _copy_json(sub.default)
        addl = node.additional
        for k in list(x):
            prop = props.get(k) if props else None
            if prop is not None:
                _default(x[k], prop)
            elif addl is not None:
                if x[k] is None and not addl.nullable:
                    x[k] = _copy_json(addl.default)
                _default(x[k], addl)
    elif isinstance(x, list):
        items = node.items
        if items is None:
            return
        for i, v in enumerate(x):
            if v is None and not items.nullable:
                x[i] = _copy_json(items.default)
            _default(x[i], items)


def apply_defaults(obj: dict[str, Any], schema: dict[str, Any]) -> None:
    """Apply a schema's ``default`` values to a custom resource, in place.

    As kube-apiserver: first nulls are removed where the schema is not ``nullable`` and
    has no default; then, recursively (into array items and ``additionalProperties``
    values too), every missing field with a default, and every null non-nullable field
    with a default, is set to a deep copy of the default. Defaults apply bottom-up on
    the values now present, so a defaulted object gets its own fields defaulted.

    Args:
        obj: The custom resource, modified in place.
        schema: The version's ``openAPIV3Schema``.
    """
    node = _compile(schema)
    _prune_nulls(obj, node)
    _default(obj, node)
