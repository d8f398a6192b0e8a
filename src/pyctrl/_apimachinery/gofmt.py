"""Go's formatting of JSON values: ``%q``, ``%v``, ``%#v`` and encoding/json's output.

kube-apiserver's messages embed values printed by Go's ``fmt`` and ``encoding/json``;
these printers reproduce them so that our messages match the real server's, byte for byte.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any, Final

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


def quote_char(c: int) -> str:  # noqa: PLR0911 - Go's quoteChar, one return per character class
    """Go's ``quoteChar``: one byte in single quotes, escaped as ``strconv.Quote`` does."""
    if c == 0x27:
        return "'\\''"
    if c == 0x22:
        return "'\"'"
    if c == 0x5C:
        return "'\\\\'"
    if chr(c) in _GO_ESCAPES:
        return "'" + _GO_ESCAPES[chr(c)] + "'"
    if c < 0x20 or c == 0x7F:
        return f"'\\x{c:02x}'"
    if 0x80 <= c <= 0xA0 or c == 0xAD:
        return f"'\\u{c:04x}'"
    return "'" + chr(c) + "'"


def go_float(f: float) -> str:  # noqa: PLR0911 - Go's strconv float formatting, one case per magnitude
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


def go_print(value: Any) -> str:  # noqa: PLR0911 - Go's %v, one return per JSON kind
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


def go_sharp(value: Any) -> str:  # noqa: PLR0911 - Go's %#v, one return per JSON kind
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
    if isinstance(value, GoLiteral):
        return str(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, dict):
        inner = ", ".join(f"{go_quote(str(k))}:{go_sharp(value[k])}" for k in sorted(value))
        return "map[string]interface {}{" + inner + "}"
    if isinstance(value, list | tuple):
        return "[]interface {}{" + ", ".join(go_sharp(v) for v in value) + "}"
    return repr(value)


class GoLiteral(str):
    """A value already printed as Go prints it (e.g. ``0x0``, a struct dump): shown as is."""

    __slots__ = ()


class GoStruct(dict[str, Any]):
    """A Go struct's JSON: fields in struct order, where a plain dict (a map) is sorted."""

    __slots__ = ()


class _Omit:
    """Go's ``omitValue``: the error body carries no value."""


OMIT: Final = _Omit()


def go_value(value: Any) -> str:  # noqa: PLR0911 - Go's %v of a value, one return per JSON kind
    """A value as ``field.Error`` prints it: simple types with %v, strings %q, else JSON."""
    # field.Error.ErrorBody (apimachinery 0.36): simple types with %v, strings with %q,
    # everything else (nil, maps, slices) as json.Marshal writes it.
    if isinstance(value, GoLiteral):
        return str(value)
    if value is None:
        return "null"
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
    return go_json(value)


def go_json(value: Any) -> str:  # noqa: PLR0911 - encoding/json's compact form, one return per JSON kind
    """``json.Marshal`` of a decoded value: maps sorted, `GoStruct` in order, HTML escaped."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, float):
        return _json_float(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json_string(value)
    if isinstance(value, dict):
        items = value.items() if isinstance(value, GoStruct) else sorted(value.items())
        return "{" + ",".join(f"{json_string(str(k))}:{go_json(v)}" for k, v in items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(go_json(v) for v in value) + "]"
    return str(value)


def json_string(s: str) -> str:
    """A string as ``encoding/json`` writes it (HTML characters escaped)."""
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


def go_type(value: Any) -> str:  # noqa: PLR0911 - Go's %T, one return per JSON kind
    """Go's ``%T`` of a decoded JSON value (``interface{}`` as unstructured objects hold it).

    E.g. ``int64``, ``float64``, ``string``, ``map[string]interface {}``; ``<nil>`` for null.
    """
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "map[string]interface {}"
    return "[]interface {}"


def go_kind(value: Any) -> str:  # noqa: PLR0911 - Go reflect kind names, one return per JSON kind
    """Go's ``reflect.Kind`` name of a decoded JSON value (``map``, ``slice``, ``int64``...)."""
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "slice"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    return "invalid"


def go_json_kind(value: Any) -> str:
    """How Go's encoding/json names a JSON value's kind in an ``UnmarshalTypeError``.

    As in ``json: cannot unmarshal array into Go value of type ...``.
    """
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if value is None:
        return "null"
    return "number"
