"""CEL for ``x-kubernetes-validations``: compile once, evaluate fast, as kube-apiserver.

A CustomResourceDefinition may attach rules written in the Common Expression Language
to any schema node (``x-kubernetes-validations``). Each rule sees the node's value as
``self`` and, in a transition rule, its previous value as ``oldSelf``; it must return
``true`` for the object to be accepted. This module compiles such rules and evaluates
them on decoded JSON values.

Parsing uses cel-python's (``celpy``) grammar. Type checking and evaluation are our own:
the rules are checked against the schema (as kube-apiserver types ``self`` from the
schema: undefined fields, undeclared identifiers and functions, non-boolean results are
compilation errors) and compiled into Python closures that work directly on the JSON
values, without converting the object first. A compiled program costs a few
microseconds to run, so validating thousands of objects stays fast; programs are cached
per rule text and schema node.

Values follow CEL's types: ``int`` (64-bit, overflow is an error), ``uint``, ``double``,
``bool``, ``string``, ``bytes``, ``list``, ``map``, ``null_type``, ``timestamp`` and
``duration`` (strings with ``format: date-time``/``date``/``duration`` in the schema
become timestamps and durations, ``format: byte`` strings become bytes, ``number`` fields
become doubles), plus the Kubernetes library types ``quantity``, ``URL``, ``IP`` and
``CIDR``. Equality is heterogeneous for numbers (``1 == 1.0``), errors inside ``&&``,
``||``, ``all`` and ``exists`` are absorbed when the other operands decide the result, as
in cel-go.

Supported beyond the core language (operators, ``has``, ``all``, ``exists``,
``exists_one``, ``map`` (two and three arguments), ``filter``, ``size``, ``in``, type
conversions ``int``/``uint``/``double``/``string``/``bytes``/``bool``/``timestamp``/
``duration``/``dyn``/``type``, ``contains``/``startsWith``/``endsWith``/``matches``,
timestamp and duration accessors):

* strings extension: ``charAt``, ``indexOf``, ``lastIndexOf``, ``lowerAscii``,
  ``upperAscii``, ``replace``, ``split``, ``substring``, ``trim``, ``join``, ``reverse``;
* Kubernetes lists: ``isSorted``, ``sum``, ``min``, ``max``, ``indexOf``,
  ``lastIndexOf``;
* Kubernetes regex: ``find``, ``findAll``;
* Kubernetes URLs: ``url``, ``isURL``, ``getScheme``, ``getHost``, ``getHostname``,
  ``getPort``, ``getEscapedPath``, ``getQuery``;
* Kubernetes quantities: ``quantity``, ``isQuantity``, ``sign``, ``isInteger``,
  ``asInteger``, ``asApproximateFloat``, ``add``, ``sub``, ``compareTo``,
  ``isGreaterThan``, ``isLessThan``;
* Kubernetes IP/CIDR: ``ip``, ``isIP``, ``cidr``, ``isCIDR``, ``ip.isCanonical``,
  ``family``, ``isUnspecified``, ``isLoopback``, ``isLinkLocalMulticast``,
  ``isLinkLocalUnicast``, ``isGlobalUnicast``, ``containsIP``, ``containsCIDR``,
  ``masked``, ``prefixLength`` and ``ip()`` of a CIDR;
* sets: ``sets.contains``, ``sets.equivalent``, ``sets.intersects``;
* math: ``math.greatest``, ``math.least``;
* optionals as used with ``optionalOldSelf``: ``optional.of``, ``optional.none``,
  ``optional.ofNonZeroValue``, ``hasValue``, ``value``, ``orValue``, ``or``.

Not supported (a rule using them fails to compile, with cel-go's "undeclared reference"
wording, or fails to parse): the optional field/index syntax ``.?field`` and ``[?key]``,
the Kubernetes ``format`` library (``format.dns1123Label()`` ...), ``semver``, the
``strings.quote`` and ``string.format`` functions, two-variable comprehensions
(``all(k, v, ...)``, ``transformMap`` ...), ``authorizer``, message construction
(``Type{field: ...}``), protobuf types other than the well-known timestamp and duration,
and CEL cost estimation and limits (no rule is rejected for being too expensive).
Compile-time overload resolution covers operators and the string methods; for other
functions an argument of the wrong type is reported at evaluation time (``no such
overload``) rather than on CRD create, where cel-go would already refuse the rule.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import ipaddress
import math
import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

from celpy.celparser import CELParseError, CELParser
from lark import Token, Tree

__all__ = [
    "CelCompileError",
    "CelEvalError",
    "CompiledRule",
    "Program",
    "compile_expression",
    "compile_rules",
    "parse_quantity",
]

_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1
_UINT64_MAX: Final = (1 << 64) - 1


class CelEvalError(Exception):
    """A CEL evaluation error, worded as cel-go words it (``no such key: foo``...)."""


class CelCompileError(Exception):
    """A rule that does not compile; the message is cel-go's issue list."""


# ---------------------------------------------------------------------------------------
# Runtime value types beyond JSON.
# ---------------------------------------------------------------------------------------


class Uint(int):
    """A CEL ``uint`` value."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class CelType:
    """A CEL type value, as returned by ``type(x)`` and named by ``int``, ``string``..."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Optional:
    """A CEL ``optional_type`` value."""

    present: bool
    value: Any = None


_NONE: Final = Optional(False)


@dataclass(frozen=True, slots=True)
class Quantity:
    """A Kubernetes ``resource.Quantity`` (exact rational value) in CEL."""

    value: Fraction

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True, slots=True)
class Url:
    """A Kubernetes CEL ``URL`` value."""

    raw: str
    parts: urllib.parse.SplitResult


@dataclass(frozen=True, slots=True)
class IP:
    """A Kubernetes CEL ``net.IP`` value."""

    addr: ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True, slots=True)
class CIDR:
    """A Kubernetes CEL ``net.CIDR`` value."""

    network: ipaddress.IPv4Network | ipaddress.IPv6Network
    addr: ipaddress.IPv4Address | ipaddress.IPv6Address


def _type_name(value: Any) -> str:
    if value is None:
        return "null_type"
    if value is True or value is False:
        return "bool"
    if isinstance(value, Uint):
        return "uint"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, list | tuple):
        return "list"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, datetime.datetime):
        return "google.protobuf.Timestamp"
    if isinstance(value, datetime.timedelta):
        return "google.protobuf.Duration"
    if isinstance(value, CelType):
        return "type"
    if isinstance(value, Optional):
        return "optional_type"
    if isinstance(value, Quantity):
        return "kubernetes.Quantity"
    if isinstance(value, Url):
        return "kubernetes.URL"
    if isinstance(value, IP):
        return "net.IP"
    if isinstance(value, CIDR):
        return "net.CIDR"
    return type(value).__name__


def _no_overload(name: str, *args: Any) -> CelEvalError:
    kinds = ", ".join(_type_name(a) for a in args)
    return CelEvalError(f"no such overload: {name}({kinds})")


def _check_int(v: int) -> int:
    if v < _INT64_MIN or v > _INT64_MAX:
        raise CelEvalError("integer overflow")
    return v


def _check_uint(v: int) -> Uint:
    if v < 0 or v > _UINT64_MAX:
        raise CelEvalError("unsigned integer overflow")
    return Uint(v)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool | Uint)


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


# ---------------------------------------------------------------------------------------
# Equality, ordering, arithmetic.
# ---------------------------------------------------------------------------------------


def cel_equal(a: Any, b: Any) -> bool:
    """CEL equality: heterogeneous numeric equality, deep for lists and maps.

    Args:
        a: A CEL value.
        b: A CEL value.

    Returns:
        Whether the values are equal.
    """
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if _is_num(a) and _is_num(b):
        return bool(a == b)
    ta, tb = type(a), type(b)
    if ta is str or tb is str:
        return ta is tb and bool(a == b)
    if isinstance(a, list | tuple):
        if not isinstance(b, list | tuple) or len(a) != len(b):
            return False
        return all(cel_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        if not isinstance(b, dict) or len(a) != len(b):
            return False
        for k, v in a.items():
            found = _map_lookup(b, k)
            if found is _MISSING or not cel_equal(v, found):
                return False
        return True
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return a.value == b.value
    if ta is not tb:
        return False
    return bool(a == b)


_MISSING: Final = object()


def _map_lookup(m: dict[Any, Any], key: Any) -> Any:
    if type(key) is str:
        return m.get(key, _MISSING)
    for k, v in m.items():
        if cel_equal(k, key):
            return v
    return _MISSING


def _compare(op: str, a: Any, b: Any) -> int:
    if _is_num(a) and _is_num(b):
        return int((a > b) - (a < b))
    ta = type(a)
    if (
        (ta is str and type(b) is str)
        or (ta is bytes and type(b) is bytes)
        or (isinstance(a, bool) and isinstance(b, bool))
        or (isinstance(a, datetime.datetime) and isinstance(b, datetime.datetime))
        or (isinstance(a, datetime.timedelta) and isinstance(b, datetime.timedelta))
    ):
        return int((a > b) - (a < b))
    raise _no_overload(op, a, b)


def _add(a: Any, b: Any) -> Any:
    if _is_int(a) and _is_int(b):
        return _check_int(a + b)
    if isinstance(a, Uint) and isinstance(b, Uint):
        return _check_uint(a + b)
    if isinstance(a, float) and isinstance(b, float):
        return a + b
    if type(a) is str and type(b) is str:
        return a + b
    if type(a) is bytes and type(b) is bytes:
        return a + b
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return [*a, *b]
    if isinstance(a, datetime.timedelta) and isinstance(b, datetime.timedelta):
        return a + b
    if isinstance(a, datetime.datetime) and isinstance(b, datetime.timedelta):
        return a + b
    if isinstance(a, datetime.timedelta) and isinstance(b, datetime.datetime):
        return b + a
    raise _no_overload("_+_", a, b)


def _sub(a: Any, b: Any) -> Any:
    if _is_int(a) and _is_int(b):
        return _check_int(a - b)
    if isinstance(a, Uint) and isinstance(b, Uint):
        return _check_uint(a - b)
    if isinstance(a, float) and isinstance(b, float):
        return a - b
    if isinstance(a, datetime.datetime) and isinstance(b, datetime.datetime):
        return a - b
    if isinstance(a, datetime.datetime | datetime.timedelta) and isinstance(b, datetime.timedelta):
        return a - b
    raise _no_overload("_-_", a, b)


def _mul(a: Any, b: Any) -> Any:
    if _is_int(a) and _is_int(b):
        return _check_int(a * b)
    if isinstance(a, Uint) and isinstance(b, Uint):
        return _check_uint(a * b)
    if isinstance(a, float) and isinstance(b, float):
        return a * b
    raise _no_overload("_*_", a, b)


def _div(a: Any, b: Any) -> Any:
    if (_is_int(a) and _is_int(b)) or (isinstance(a, Uint) and isinstance(b, Uint)):
        if b == 0:
            raise CelEvalError("division by zero")
        q = abs(a) // abs(b)
        q = q if (a >= 0) == (b >= 0) else -q
        return _check_uint(q) if isinstance(a, Uint) else _check_int(q)
    if isinstance(a, float) and isinstance(b, float):
        if b == 0:
            return math.copysign(math.inf, a) * math.copysign(1.0, b) if a != 0 else math.nan
        return a / b
    raise _no_overload("_/_", a, b)


def _mod(a: Any, b: Any) -> Any:
    if (_is_int(a) and _is_int(b)) or (isinstance(a, Uint) and isinstance(b, Uint)):
        if b == 0:
            raise CelEvalError("modulus by zero")
        r = abs(a) % abs(b)
        r = r if a >= 0 else -r
        return Uint(r) if isinstance(a, Uint) else r
    raise _no_overload("_%_", a, b)


def _neg(a: Any) -> Any:
    if _is_int(a):
        return _check_int(-a)
    if isinstance(a, float):
        return -a
    if isinstance(a, datetime.timedelta):
        return -a
    raise _no_overload("-_", a)


def _in(a: Any, b: Any) -> bool:
    if isinstance(b, list | tuple):
        return any(cel_equal(a, x) for x in b)
    if isinstance(b, dict):
        return _map_lookup(b, a) is not _MISSING
    raise _no_overload("@in", a, b)


# ---------------------------------------------------------------------------------------
# Timestamps, durations, quantities.
# ---------------------------------------------------------------------------------------

_RX_TIMESTAMP: Final = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})\Z"
)
_MIN_TS: Final = datetime.datetime(1, 1, 1, tzinfo=datetime.UTC)
_MAX_TS: Final = datetime.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=datetime.UTC)


def _parse_timestamp(s: str) -> datetime.datetime:
    m = _RX_TIMESTAMP.match(s)
    if m is None:
        raise CelEvalError(f'timestamp conversion error: parsing time "{s}" as RFC3339')
    year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
    frac = m.group(7) or ""
    micro = int((frac[1:] + "000000")[:6]) if frac else 0
    zone = m.group(8)
    if zone in ("Z", "z"):
        tz = datetime.UTC
    else:
        sign = 1 if zone[0] == "+" else -1
        tz = datetime.timezone(
            sign * datetime.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
        )
    try:
        ts = datetime.datetime(year, month, day, hour, minute, second, micro, tzinfo=tz)
    except ValueError as e:
        raise CelEvalError(f'timestamp conversion error: parsing time "{s}": {e}') from None
    return ts.astimezone(datetime.UTC)


def _date_to_timestamp(s: str) -> datetime.datetime:
    try:
        d = datetime.date.fromisoformat(s)
    except ValueError:
        return _parse_timestamp(s)
    return datetime.datetime(d.year, d.month, d.day, tzinfo=datetime.UTC)


_DURATION_UNITS: Final = {
    "ns": Fraction(1, 1_000_000_000),
    "us": Fraction(1, 1_000_000),
    "µs": Fraction(1, 1_000_000),
    "μs": Fraction(1, 1_000_000),
    "ms": Fraction(1, 1000),
    "s": Fraction(1),
    "m": Fraction(60),
    "h": Fraction(3600),
}
_RX_DURATION_PART: Final = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def _parse_duration(s: str) -> datetime.timedelta:
    """Go's time.ParseDuration."""
    text = s
    sign = 1
    if text[:1] in "+-" and text:
        sign = -1 if text[0] == "-" else 1
        text = text[1:]
    if text == "0":
        return datetime.timedelta(0)
    if not text:
        raise CelEvalError(f'invalid duration "{s}"')
    total = Fraction(0)
    pos = 0
    while pos < len(text):
        m = _RX_DURATION_PART.match(text, pos)
        if m is None:
            raise CelEvalError(f'time: invalid duration "{s}"')
        total += Fraction(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    micros = total * 1_000_000 * sign
    return datetime.timedelta(microseconds=int(micros))


def _format_duration(d: datetime.timedelta) -> str:
    total = Fraction(d.days * 86400 + d.seconds) + Fraction(d.microseconds, 1_000_000)
    if total.denominator == 1:
        return f"{total.numerator}s"
    text = f"{float(total):.6f}".rstrip("0").rstrip(".")
    return f"{text}s"


def _format_timestamp(t: datetime.datetime) -> str:
    t = t.astimezone(datetime.UTC)
    base = t.strftime("%Y-%m-%dT%H:%M:%S")
    if t.microsecond:
        base += ("." + f"{t.microsecond:06d}").rstrip("0")
    return base + "Z"


_BINARY_SUFFIXES: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_SUFFIXES: Final = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_RX_QUANTITY: Final = re.compile(r"^([+-]?)(\d+\.?\d*|\.\d+)([a-zA-Z]*|[eE][+-]?\d+)\Z")


def parse_quantity(s: str) -> Quantity | None:
    """Parse a Kubernetes quantity (``500m``, ``1Gi``, ``1e3``) as ``resource.ParseQuantity``.

    Args:
        s: The text.

    Returns:
        The quantity, or None when the text is not a quantity.
    """
    m = _RX_QUANTITY.match(s)
    if m is None:
        return None
    sign, number, suffix = m.groups()
    value = Fraction(number)
    if suffix in _BINARY_SUFFIXES:
        value *= 2 ** _BINARY_SUFFIXES[suffix]
    elif suffix in _DECIMAL_SUFFIXES:
        value *= Fraction(10) ** _DECIMAL_SUFFIXES[suffix]
    elif suffix[:1] in ("e", "E") and re.fullmatch(r"[eE][+-]?\d+", suffix):
        value *= Fraction(10) ** int(suffix[1:])
    else:
        return None
    return Quantity(-value if sign == "-" else value)


def _quantity(s: Any) -> Quantity:
    if type(s) is not str:
        raise _no_overload("quantity", s)
    q = parse_quantity(s)
    if q is None:
        raise CelEvalError(
            "quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        )
    return q


# ---------------------------------------------------------------------------------------
# Conversions and library functions.
# ---------------------------------------------------------------------------------------


def _to_int(v: Any) -> int:
    if _is_int(v):
        return int(v)
    if isinstance(v, Uint):
        return _check_int(int(v))
    if isinstance(v, float):
        if (
            math.isnan(v)
            or math.isinf(v)
            or not (-9.223372036854776e18 <= v < 9.223372036854776e18)
        ):
            raise CelEvalError("integer overflow")
        return int(v)
    if type(v) is str:
        try:
            return _check_int(int(v, 10))
        except ValueError:
            raise CelEvalError(f"cannot convert '{v}' to int") from None
    if isinstance(v, datetime.datetime):
        return int(v.timestamp()) if v.timestamp() >= 0 else math.floor(v.timestamp())
    if isinstance(v, datetime.timedelta):
        return int(v / datetime.timedelta(microseconds=1)) * 1000
    raise _no_overload("int", v)


def _to_uint(v: Any) -> Uint:
    if isinstance(v, Uint):
        return v
    if _is_int(v):
        return _check_uint(v)
    if isinstance(v, float):
        if math.isnan(v) or v < 0 or v >= 1.8446744073709552e19:
            raise CelEvalError("unsigned integer overflow")
        return Uint(int(v))
    if type(v) is str:
        try:
            return _check_uint(int(v, 10))
        except ValueError:
            raise CelEvalError(f"cannot convert '{v}' to uint") from None
    raise _no_overload("uint", v)


def _to_double(v: Any) -> float:
    if isinstance(v, bool):
        raise _no_overload("double", v)
    if isinstance(v, int | float):
        return float(v)
    if type(v) is str:
        try:
            return float(v)
        except ValueError:
            raise CelEvalError(f"cannot convert '{v}' to double") from None
    raise _no_overload("double", v)


def _to_string(v: Any) -> str:
    if type(v) is str:
        return v
    if v is True or v is False:
        return "true" if v else "false"
    if isinstance(v, int):
        return str(int(v))
    if isinstance(v, float):
        return _format_double(v)
    if isinstance(v, bytes):
        try:
            return v.decode()
        except UnicodeDecodeError:
            raise CelEvalError("invalid UTF-8 in bytes, cannot convert to string") from None
    if isinstance(v, datetime.datetime):
        return _format_timestamp(v)
    if isinstance(v, datetime.timedelta):
        return _format_duration(v)
    if isinstance(v, IP):
        return str(v.addr)
    if isinstance(v, CIDR):
        return f"{v.addr}/{v.network.prefixlen}"
    if isinstance(v, CelType):
        return v.name
    raise _no_overload("string", v)


def _format_double(v: float) -> str:
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if math.isnan(v):
        return "NaN"
    if v.is_integer() and abs(v) < 1e21:
        return str(int(v))
    return repr(v)


def _to_bytes(v: Any) -> bytes:
    if isinstance(v, bytes):
        return v
    if type(v) is str:
        return v.encode()
    raise _no_overload("bytes", v)


def _to_bool(v: Any) -> bool:
    if v is True or v is False:
        return bool(v)
    if type(v) is str:
        if v in ("1", "t", "T", "TRUE", "true", "True"):
            return True
        if v in ("0", "f", "F", "FALSE", "false", "False"):
            return False
        raise CelEvalError("type conversion error from 'string' to 'bool'")
    raise _no_overload("bool", v)


def _to_timestamp(v: Any) -> datetime.datetime:
    if isinstance(v, datetime.datetime):
        return v
    if type(v) is str:
        return _parse_timestamp(v)
    if _is_int(v):
        try:
            return datetime.datetime.fromtimestamp(v, datetime.UTC)
        except (OverflowError, OSError, ValueError):
            raise CelEvalError("timestamp overflow") from None
    raise _no_overload("timestamp", v)


def _to_duration(v: Any) -> datetime.timedelta:
    if isinstance(v, datetime.timedelta):
        return v
    if type(v) is str:
        return _parse_duration(v)
    raise _no_overload("duration", v)


def _size(v: Any) -> int:
    if isinstance(v, str | bytes | list | tuple | dict):
        return len(v)
    raise _no_overload("size", v)


def _string_arg(name: str, target: Any, *args: Any) -> None:
    if type(target) is not str or any(type(a) is not str for a in args):
        raise _no_overload(name, target, *args)


def _contains(s: Any, sub: Any) -> bool:
    _string_arg("contains", s, sub)
    return bool(sub in s)


def _starts_with(s: Any, prefix: Any) -> bool:
    _string_arg("startsWith", s, prefix)
    return bool(s.startswith(prefix))


def _ends_with(s: Any, suffix: Any) -> bool:
    _string_arg("endsWith", s, suffix)
    return bool(s.endswith(suffix))


def _regex(pattern: str) -> re.Pattern[str]:
    # Imported lazily: _schema imports this module.
    from pyctrl.crd._schema import compile_go_regex

    try:
        return compile_go_regex(pattern)
    except ValueError as e:
        raise CelEvalError(str(e)) from None


def _matches(s: Any, pattern: Any) -> bool:
    _string_arg("matches", s, pattern)
    return _regex(pattern).search(s) is not None


def _char_at(s: Any, i: Any) -> str:
    if type(s) is not str or not _is_int(i):
        raise _no_overload("charAt", s, i)
    if i < 0 or i > len(s):
        raise CelEvalError(f"index out of range: {i}")
    return s[i] if i < len(s) else ""


def _index_of(target: Any, sub: Any, offset: Any = 0) -> int:
    if isinstance(target, list | tuple):
        for i, x in enumerate(target):
            if cel_equal(x, sub):
                return i
        return -1
    if type(target) is not str or type(sub) is not str or not _is_int(offset):
        raise _no_overload("indexOf", target, sub)
    if offset < 0 or offset > len(target):
        raise CelEvalError(f"index out of range: {offset}")
    return target.find(sub, offset)


def _last_index_of(target: Any, sub: Any, offset: Any = None) -> int:
    if isinstance(target, list | tuple):
        for i in range(len(target) - 1, -1, -1):
            if cel_equal(target[i], sub):
                return i
        return -1
    if type(target) is not str or type(sub) is not str:
        raise _no_overload("lastIndexOf", target, sub)
    if offset is None:
        return target.rfind(sub)
    if not _is_int(offset) or offset < 0 or offset >= max(len(target), 1):
        raise CelEvalError(f"index out of range: {offset}")
    return target.rfind(sub, 0, offset + len(sub))


def _lower_ascii(s: Any) -> str:
    _string_arg("lowerAscii", s)
    return "".join(c.lower() if c.isascii() else c for c in s)


def _upper_ascii(s: Any) -> str:
    _string_arg("upperAscii", s)
    return "".join(c.upper() if c.isascii() else c for c in s)


def _replace(s: Any, old: Any, new: Any, n: Any = -1) -> str:
    _string_arg("replace", s, old, new)
    if not _is_int(n):
        raise _no_overload("replace", s, old, new, n)
    return str(s.replace(old, new, n if n >= 0 else -1))


def _split(s: Any, sep: Any, n: Any = -1) -> list[str]:
    _string_arg("split", s, sep)
    if not _is_int(n):
        raise _no_overload("split", s, sep, n)
    if n == 0:
        return []
    if sep == "":
        chars = list(s)
        if n > 0 and len(chars) > n:
            chars = [*chars[: n - 1], "".join(chars[n - 1 :])]
        return chars
    parts: list[str] = s.split(sep, n - 1) if n > 0 else s.split(sep)
    return parts


def _substring(s: Any, start: Any, end: Any = None) -> str:
    if type(s) is not str or not _is_int(start) or (end is not None and not _is_int(end)):
        raise _no_overload("substring", s, start)
    stop = len(s) if end is None else end
    if start < 0 or start > len(s):
        raise CelEvalError(f"index out of range: {start}")
    if stop < 0 or stop > len(s):
        raise CelEvalError(f"index out of range: {stop}")
    if start > stop:
        raise CelEvalError(f"invalid substring range. start: {start}, end: {stop}")
    return s[start:stop]


def _trim(s: Any) -> str:
    _string_arg("trim", s)
    return str(s.strip())


def _join(items: Any, sep: Any = "") -> str:
    if not isinstance(items, list | tuple) or type(sep) is not str:
        raise _no_overload("join", items, sep)
    if not all(type(x) is str for x in items):
        raise _no_overload("join", items, sep)
    return str(sep.join(items))


def _reverse(s: Any) -> str:
    _string_arg("reverse", s)
    return str(s[::-1])


def _is_sorted(items: Any) -> bool:
    if not isinstance(items, list | tuple):
        raise _no_overload("isSorted", items)
    return all(_compare("isSorted", items[i], items[i + 1]) <= 0 for i in range(len(items) - 1))


def _sum(items: Any) -> Any:
    if not isinstance(items, list | tuple):
        raise _no_overload("sum", items)
    if not items:
        return 0
    total = items[0]
    for x in items[1:]:
        total = _add(total, x)
    return total


def _min_max(name: str, items: Any, sign: int) -> Any:
    if not isinstance(items, list | tuple):
        raise _no_overload(name, items)
    if not items:
        raise CelEvalError(f"{name} called on empty list")
    best = items[0]
    for x in items[1:]:
        if _compare(name, x, best) * sign > 0:
            best = x
    return best


def _find(s: Any, pattern: Any) -> str:
    _string_arg("find", s, pattern)
    m = _regex(pattern).search(s)
    return m.group(0) if m else ""


def _find_all(s: Any, pattern: Any, n: Any = -1) -> list[str]:
    _string_arg("findAll", s, pattern)
    if not _is_int(n):
        raise _no_overload("findAll", s, pattern, n)
    found = [m.group(0) for m in _regex(pattern).finditer(s)]
    return found if n < 0 else found[:n]


def _url(s: Any) -> Url:
    if type(s) is not str:
        raise _no_overload("url", s)
    if not _is_url(s):
        raise CelEvalError(
            f"URL parse error during conversion from string: parse {go_like(s)}: invalid URI "
            "for request"
        )
    return Url(s, urllib.parse.urlsplit(s))


def go_like(s: str) -> str:
    """Render a string as Go's ``%q`` would, for error messages.

    Args:
        s: The string.

    Returns:
        The quoted string.
    """
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _is_url(s: Any) -> bool:
    if type(s) is not str:
        raise _no_overload("isURL", s)
    if not s or any(ord(c) < 0x21 or c == "\x7f" for c in s):
        return False
    if s.startswith("/"):
        return True
    return re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", s) is not None


def _url_part(name: str, u: Any) -> Any:
    if not isinstance(u, Url):
        raise _no_overload(name, u)
    p = u.parts
    netloc = p.netloc.rpartition("@")[2]
    if name == "getScheme":
        return p.scheme
    if name == "getHost":
        return netloc
    if name == "getHostname":
        host = netloc
        if host.startswith("["):
            return host[1 : host.find("]")]
        return host.rpartition(":")[0] if ":" in host else host
    if name == "getPort":
        host = netloc
        if host.startswith("["):
            rest = host[host.find("]") + 1 :]
            return rest[1:] if rest.startswith(":") else ""
        return host.rpartition(":")[2] if ":" in host else ""
    if name == "getEscapedPath":
        return p.path
    query: dict[str, list[str]] = {}
    for k, v in urllib.parse.parse_qsl(p.query, keep_blank_values=True):
        query.setdefault(k, []).append(v)
    return query


def _quantity_method(name: str, q: Any, *args: Any) -> Any:
    if not isinstance(q, Quantity):
        raise _no_overload(name, q, *args)
    v = q.value
    if name == "sign":
        return (v > 0) - (v < 0)
    if name == "isInteger":
        return v.denominator == 1 and _INT64_MIN <= v <= _INT64_MAX
    if name == "asInteger":
        if v.denominator != 1 or not _INT64_MIN <= v <= _INT64_MAX:
            raise CelEvalError("cannot convert value to integer")
        return int(v)
    if name == "asApproximateFloat":
        return float(v)
    (other,) = args
    if name in ("add", "sub"):
        if _is_int(other):
            operand = Fraction(other)
        elif isinstance(other, Quantity):
            operand = other.value
        else:
            raise _no_overload(name, q, other)
        return Quantity(v + operand if name == "add" else v - operand)
    if not isinstance(other, Quantity):
        raise _no_overload(name, q, other)
    cmp = (v > other.value) - (v < other.value)
    if name == "compareTo":
        return cmp
    if name == "isGreaterThan":
        return cmp > 0
    return cmp < 0


def _parse_ip(s: Any) -> IP:
    if type(s) is not str:
        raise _no_overload("ip", s)
    if "%" in s:
        raise CelEvalError(f"IP address with zone value is not allowed: {s}")
    try:
        addr = ipaddress.ip_address(s)
    except ValueError:
        raise CelEvalError(
            f"IP Address {go_like(s)} parse error during conversion from string"
        ) from None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise CelEvalError(f"IPv4-mapped IPv6 address is not allowed: {s}")
    return IP(addr)


def _parse_cidr(s: Any) -> CIDR:
    if type(s) is not str:
        raise _no_overload("cidr", s)
    try:
        iface = ipaddress.ip_interface(s)
    except ValueError:
        raise CelEvalError(
            f"network address {go_like(s)} parse error during conversion from string"
        ) from None
    if "/" not in s:
        raise CelEvalError(
            f"network address {go_like(s)} parse error during conversion from string"
        )
    return CIDR(iface.network, iface.ip)


def _is_valid(parse: Callable[[Any], Any], s: Any) -> bool:
    try:
        parse(s)
    except CelEvalError:
        return False
    return True


def _ip_method(name: str, v: Any, *args: Any) -> Any:
    if isinstance(v, CIDR):
        if name == "containsIP":
            (other,) = args
            addr = other.addr if isinstance(other, IP) else _parse_ip(other).addr
            return addr in v.network
        if name == "containsCIDR":
            (other,) = args
            net = other.network if isinstance(other, CIDR) else _parse_cidr(other).network
            return net.version == v.network.version and net.subnet_of(v.network)  # type: ignore[arg-type]
        if name == "ip":
            return IP(v.addr)
        if name == "masked":
            return CIDR(v.network, v.network.network_address)
        if name == "prefixLength":
            return v.network.prefixlen
        raise _no_overload(name, v, *args)
    if not isinstance(v, IP):
        raise _no_overload(name, v, *args)
    a = v.addr
    if name == "family":
        return a.version
    if name == "isUnspecified":
        return a.is_unspecified
    if name == "isLoopback":
        return a.is_loopback
    if name == "isLinkLocalMulticast":
        if a.version == 4:
            return a in ipaddress.ip_network("224.0.0.0/24")
        return a in ipaddress.ip_network("ff02::/16")
    if name == "isLinkLocalUnicast":
        return a.is_link_local
    if name == "isGlobalUnicast":
        return not (
            a.is_unspecified or a.is_loopback or a.is_link_local or a.is_multicast
        ) and not (a.version == 4 and a == ipaddress.IPv4Address("255.255.255.255"))
    raise _no_overload(name, v, *args)


def _ip_is_canonical(s: Any) -> bool:
    ip = _parse_ip(s)
    return bool(str(ip.addr) == s)


def _sets(name: str, a: Any, b: Any) -> bool:
    if not isinstance(a, list | tuple) or not isinstance(b, list | tuple):
        raise _no_overload(name, a, b)
    if name == "sets.contains":
        return all(_in(x, a) for x in b)
    if name == "sets.equivalent":
        return all(_in(x, a) for x in b) and all(_in(x, b) for x in a)
    return any(_in(x, a) for x in b)


def _math_extreme(name: str, args: list[Any], sign: int) -> Any:
    values = list(args[0]) if len(args) == 1 and isinstance(args[0], list | tuple) else list(args)
    if not values:
        raise CelEvalError(f"{name}(list) argument must not be empty")
    for v in values:
        if not _is_num(v):
            raise _no_overload(name, v)
    best = values[0]
    for v in values[1:]:
        if (v > best) if sign > 0 else (v < best):
            best = v
    return best


def _is_zero(v: Any) -> bool:
    if isinstance(v, list | dict):
        return not v
    return v in (None, False, 0, 0.0, "", b"") or v == datetime.timedelta(0)


def _optional_method(name: str, o: Any, *args: Any) -> Any:
    if not isinstance(o, Optional):
        raise _no_overload(name, o, *args)
    if name == "hasValue":
        return o.present
    if name == "value":
        if not o.present:
            raise CelEvalError("optional.none() dereference")
        return o.value
    if name == "orValue":
        return o.value if o.present else args[0]
    (other,) = args
    if not isinstance(other, Optional):
        raise _no_overload(name, o, other)
    return o if o.present else other


def _tz(args: tuple[Any, ...]) -> datetime.tzinfo:
    if not args:
        return datetime.UTC
    (name,) = args
    if type(name) is not str:
        raise _no_overload("timezone", name)
    m = re.fullmatch(r"([+-]?)(\d{1,2}):(\d{2})", name)
    if m:
        sign = -1 if m.group(1) == "-" else 1
        return datetime.timezone(
            sign * datetime.timedelta(hours=int(m.group(2)), minutes=int(m.group(3)))
        )
    try:
        import zoneinfo

        return zoneinfo.ZoneInfo(name)
    except (ValueError, KeyError, OSError):
        raise CelEvalError(f"unknown time zone {name}") from None


def _time_part(name: str, t: Any, *args: Any) -> int:
    if isinstance(t, datetime.timedelta):
        units = {
            "getHours": 3_600_000_000,
            "getMinutes": 60_000_000,
            "getSeconds": 1_000_000,
            "getMilliseconds": 1000,
        }
        if name not in units or args:
            raise _no_overload(name, t)
        total_us = t // datetime.timedelta(microseconds=1)
        quotient = abs(total_us) // units[name]
        return quotient if total_us >= 0 else -quotient
    if not isinstance(t, datetime.datetime):
        raise _no_overload(name, t, *args)
    local = t.astimezone(_tz(args))
    getters: dict[str, Callable[[datetime.datetime], int]] = {
        "getFullYear": lambda d: d.year,
        "getMonth": lambda d: d.month - 1,
        "getDate": lambda d: d.day,
        "getDayOfMonth": lambda d: d.day - 1,
        "getDayOfWeek": lambda d: (d.weekday() + 1) % 7,
        "getDayOfYear": lambda d: d.timetuple().tm_yday - 1,
        "getHours": lambda d: d.hour,
        "getMinutes": lambda d: d.minute,
        "getSeconds": lambda d: d.second,
        "getMilliseconds": lambda d: d.microsecond // 1000,
    }
    return getters[name](local)


def _b64(s: str) -> bytes:
    try:
        return base64.b64decode(s, validate=True)
    except binascii.Error:
        raise CelEvalError("illegal base64 data") from None


# ---------------------------------------------------------------------------------------
# Static types derived from schemas (model.SchemaDeclType).
# ---------------------------------------------------------------------------------------


class T:
    """A static CEL type: a kind plus element type (lists, maps, optionals) or fields."""

    __slots__ = ("elem", "fields", "kind")

    def __init__(
        self, kind: str, elem: T | None = None, fields: dict[str, tuple[str, T]] | None = None
    ) -> None:
        self.kind = kind
        self.elem = elem
        self.fields = fields

    def __repr__(self) -> str:
        if self.kind == "list":
            return f"list({self.elem!r})"
        if self.kind == "map":
            return f"map(string, {self.elem!r})"
        if self.kind == "optional":
            return f"optional_type({self.elem!r})"
        return self.kind


DYN: Final = T("dyn")
BOOL: Final = T("bool")
INT: Final = T("int")
UINT: Final = T("uint")
DOUBLE: Final = T("double")
STRING: Final = T("string")
BYTES: Final = T("bytes")
NULL: Final = T("null_type")
TIMESTAMP: Final = T("google.protobuf.Timestamp")
DURATION: Final = T("google.protobuf.Duration")
TYPE: Final = T("type")
_PRIMITIVES: Final = {
    "bool": BOOL,
    "int": INT,
    "uint": UINT,
    "double": DOUBLE,
    "string": STRING,
    "bytes": BYTES,
    "null_type": NULL,
}

_RESERVED: Final = frozenset(
    [
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ]
)


def escape_name(name: str) -> str | None:
    """apiserver's cel.Escape: the CEL identifier for a property name, or None.

    Args:
        name: The JSON property name.

    Returns:
        E.g. ``x__dash__y`` for ``x-y``, ``__namespace__`` for ``namespace``; None when
        the name cannot be expressed in CEL.
    """
    if not name or name[0].isdigit():
        return None
    if name in _RESERVED:
        return f"__{name}__"
    out = re.sub(
        r"__|\.|-|/",
        lambda m: {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}[
            m.group(0)
        ],
        name,
    )
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", out):
        return None
    return out


def _with_type_and_object_meta(schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    assert isinstance(props, dict)
    meta = props.get("metadata") if isinstance(props.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    meta_props = meta.get("properties") if isinstance(meta.get("properties"), dict) else {}
    assert isinstance(meta_props, dict)

    def typ(d: Any) -> Any:
        return d.get("type") if isinstance(d, dict) else None

    if (
        typ(props.get("kind")) == "string"
        and typ(props.get("apiVersion")) == "string"
        and typ(meta) == "object"
        and typ(meta_props.get("name")) == "string"
        and typ(meta_props.get("generateName")) == "string"
    ):
        return schema
    string = {"type": "string"}
    new_props = dict(props)
    new_props["kind"] = string
    new_props["apiVersion"] = string
    new_props["metadata"] = {
        "type": "object",
        "properties": {"name": string, "generateName": string},
    }
    return {**schema, "properties": new_props}


def schema_type(schema: Any, is_resource_root: bool) -> T | None:
    """The CEL type of values of a schema node, or None when CEL cannot see them.

    Args:
        schema: The schema node.
        is_resource_root: Whether the node is the root of a resource (the object root or
            an ``x-kubernetes-embedded-resource``), which always exposes ``apiVersion``,
            ``kind``, ``metadata.name`` and ``metadata.generateName``.

    Returns:
        The type.
    """
    if not isinstance(schema, dict):
        return None
    if schema.get("x-kubernetes-int-or-string") is True:
        return DYN
    if is_resource_root:
        schema = _with_type_and_object_meta(schema)
    typ = schema.get("type")
    if typ == "array":
        items = schema.get("items")
        if isinstance(items, dict):
            elem = schema_type(items, items.get("x-kubernetes-embedded-resource") is True)
            return T("list", elem) if elem is not None else None
        return None
    if typ == "object":
        addl = schema.get("additionalProperties")
        if isinstance(addl, dict):
            elem = schema_type(addl, addl.get("x-kubernetes-embedded-resource") is True)
            return T("map", elem) if elem is not None else None
        fields: dict[str, tuple[str, T]] = {}
        props = schema.get("properties")
        for name, sub in props.items() if isinstance(props, dict) else []:
            sub_type = schema_type(
                sub, isinstance(sub, dict) and sub.get("x-kubernetes-embedded-resource") is True
            )
            escaped = escape_name(name)
            if sub_type is not None and escaped is not None:
                fields[escaped] = (name, sub_type)
        return T("object", fields=fields)
    if typ == "string":
        fmt = schema.get("format")
        if fmt == "byte":
            return BYTES
        if fmt == "duration":
            return DURATION
        if fmt in ("date", "date-time"):
            return TIMESTAMP
        return STRING
    if typ == "boolean":
        return BOOL
    if typ == "number":
        return DOUBLE
    if typ == "integer":
        return INT
    return None


def _converter(t: T) -> Callable[[Any], Any] | None:
    """How a JSON value of static type ``t`` becomes a CEL value, or None if as-is."""
    if t is TIMESTAMP:
        return lambda v: _date_to_timestamp(v) if type(v) is str else v
    if t is DURATION:
        return lambda v: _parse_duration(v) if type(v) is str else v
    if t is BYTES:
        return lambda v: _b64(v) if type(v) is str else v
    if t is DOUBLE:
        return lambda v: float(v) if _is_int(v) else v
    return None


# ---------------------------------------------------------------------------------------
# Functions: result types and implementations.
# ---------------------------------------------------------------------------------------

Impl = Callable[..., Any]


def _time_getter(name: str) -> Impl:
    return lambda t, *a: _time_part(name, t, *a)


# Receiver-style functions: name -> (implementation(target, *args), result type, arities).
_METHODS: Final[dict[str, tuple[Impl, T, tuple[int, ...]]]] = {
    "size": (_size, INT, (0,)),
    "contains": (_contains, BOOL, (1,)),
    "startsWith": (_starts_with, BOOL, (1,)),
    "endsWith": (_ends_with, BOOL, (1,)),
    "matches": (_matches, BOOL, (1,)),
    "charAt": (_char_at, STRING, (1,)),
    "indexOf": (_index_of, INT, (1, 2)),
    "lastIndexOf": (_last_index_of, INT, (1, 2)),
    "lowerAscii": (_lower_ascii, STRING, (0,)),
    "upperAscii": (_upper_ascii, STRING, (0,)),
    "replace": (_replace, STRING, (2, 3)),
    "split": (_split, T("list", STRING), (1, 2)),
    "substring": (_substring, STRING, (1, 2)),
    "trim": (_trim, STRING, (0,)),
    "join": (_join, STRING, (0, 1)),
    "reverse": (_reverse, STRING, (0,)),
    "isSorted": (_is_sorted, BOOL, (0,)),
    "sum": (_sum, DYN, (0,)),
    "min": (lambda items: _min_max("min", items, -1), DYN, (0,)),
    "max": (lambda items: _min_max("max", items, 1), DYN, (0,)),
    "find": (_find, STRING, (1,)),
    "findAll": (_find_all, T("list", STRING), (1, 2)),
    "getScheme": (lambda u: _url_part("getScheme", u), STRING, (0,)),
    "getHost": (lambda u: _url_part("getHost", u), STRING, (0,)),
    "getHostname": (lambda u: _url_part("getHostname", u), STRING, (0,)),
    "getPort": (lambda u: _url_part("getPort", u), STRING, (0,)),
    "getEscapedPath": (lambda u: _url_part("getEscapedPath", u), STRING, (0,)),
    "getQuery": (lambda u: _url_part("getQuery", u), T("map", T("list", STRING)), (0,)),
    "sign": (lambda q: _quantity_method("sign", q), INT, (0,)),
    "isInteger": (lambda q: _quantity_method("isInteger", q), BOOL, (0,)),
    "asInteger": (lambda q: _quantity_method("asInteger", q), INT, (0,)),
    "asApproximateFloat": (lambda q: _quantity_method("asApproximateFloat", q), DOUBLE, (0,)),
    "add": (lambda q, o: _quantity_method("add", q, o), T("kubernetes.Quantity"), (1,)),
    "sub": (lambda q, o: _quantity_method("sub", q, o), T("kubernetes.Quantity"), (1,)),
    "compareTo": (lambda q, o: _quantity_method("compareTo", q, o), INT, (1,)),
    "isGreaterThan": (lambda q, o: _quantity_method("isGreaterThan", q, o), BOOL, (1,)),
    "isLessThan": (lambda q, o: _quantity_method("isLessThan", q, o), BOOL, (1,)),
    "family": (lambda v: _ip_method("family", v), INT, (0,)),
    "isUnspecified": (lambda v: _ip_method("isUnspecified", v), BOOL, (0,)),
    "isLoopback": (lambda v: _ip_method("isLoopback", v), BOOL, (0,)),
    "isLinkLocalMulticast": (lambda v: _ip_method("isLinkLocalMulticast", v), BOOL, (0,)),
    "isLinkLocalUnicast": (lambda v: _ip_method("isLinkLocalUnicast", v), BOOL, (0,)),
    "isGlobalUnicast": (lambda v: _ip_method("isGlobalUnicast", v), BOOL, (0,)),
    "containsIP": (lambda v, o: _ip_method("containsIP", v, o), BOOL, (1,)),
    "containsCIDR": (lambda v, o: _ip_method("containsCIDR", v, o), BOOL, (1,)),
    "ip": (lambda v: _ip_method("ip", v), T("net.IP"), (0,)),
    "masked": (lambda v: _ip_method("masked", v), T("net.CIDR"), (0,)),
    "prefixLength": (lambda v: _ip_method("prefixLength", v), INT, (0,)),
    "hasValue": (lambda o: _optional_method("hasValue", o), BOOL, (0,)),
    "value": (lambda o: _optional_method("value", o), DYN, (0,)),
    "orValue": (lambda o, d: _optional_method("orValue", o, d), DYN, (1,)),
    "or": (lambda o, d: _optional_method("or", o, d), DYN, (1,)),
    **{
        name: (_time_getter(name), INT, (0, 1))
        for name in (
            "getFullYear",
            "getMonth",
            "getDate",
            "getDayOfMonth",
            "getDayOfWeek",
            "getDayOfYear",
            "getHours",
            "getMinutes",
            "getSeconds",
            "getMilliseconds",
        )
    },
}

_TYPE_VALUES: Final = {
    name: CelType(name)
    for name in (
        "bool",
        "int",
        "uint",
        "double",
        "string",
        "bytes",
        "list",
        "map",
        "null_type",
        "type",
    )
}


def _type_of(v: Any) -> CelType:
    return CelType(_type_name(v))


# Global functions: name -> (implementation(*args), result type, arities).
_FUNCTIONS: Final[dict[str, tuple[Impl, T, tuple[int, ...]]]] = {
    "size": (_size, INT, (1,)),
    "int": (_to_int, INT, (1,)),
    "uint": (_to_uint, UINT, (1,)),
    "double": (_to_double, DOUBLE, (1,)),
    "string": (_to_string, STRING, (1,)),
    "bytes": (_to_bytes, BYTES, (1,)),
    "bool": (_to_bool, BOOL, (1,)),
    "timestamp": (_to_timestamp, TIMESTAMP, (1,)),
    "duration": (_to_duration, DURATION, (1,)),
    "dyn": (lambda v: v, DYN, (1,)),
    "type": (_type_of, TYPE, (1,)),
    "matches": (_matches, BOOL, (2,)),
    "url": (_url, T("kubernetes.URL"), (1,)),
    "isURL": (_is_url, BOOL, (1,)),
    "quantity": (_quantity, T("kubernetes.Quantity"), (1,)),
    "isQuantity": (lambda s: _is_valid(_quantity, s), BOOL, (1,)),
    "ip": (_parse_ip, T("net.IP"), (1,)),
    "isIP": (lambda s: _is_valid(_parse_ip, s), BOOL, (1,)),
    "cidr": (_parse_cidr, T("net.CIDR"), (1,)),
    "isCIDR": (lambda s: _is_valid(_parse_cidr, s), BOOL, (1,)),
    "ip.isCanonical": (_ip_is_canonical, BOOL, (1,)),
    "sets.contains": (lambda a, b: _sets("sets.contains", a, b), BOOL, (2,)),
    "sets.equivalent": (lambda a, b: _sets("sets.equivalent", a, b), BOOL, (2,)),
    "sets.intersects": (lambda a, b: _sets("sets.intersects", a, b), BOOL, (2,)),
    "math.greatest": (
        lambda *a: _math_extreme("math.greatest", list(a), 1),
        DYN,
        tuple(range(1, 64)),
    ),
    "math.least": (lambda *a: _math_extreme("math.least", list(a), -1), DYN, tuple(range(1, 64))),
    "optional.of": (lambda v: Optional(True, v), T("optional", DYN), (1,)),
    "optional.none": (lambda: _NONE, T("optional", DYN), (0,)),
    "optional.ofNonZeroValue": (
        lambda v: _NONE if _is_zero(v) else Optional(True, v),
        T("optional", DYN),
        (1,),
    ),
}
# Signatures checked at compile time for receivers statically known to be strings.
_STRING_METHOD_SIGNATURES: Final[dict[str, tuple[tuple[str, ...], ...]]] = {
    "startsWith": (("string",),),
    "endsWith": (("string",),),
    "contains": (("string",),),
    "matches": (("string",),),
    "charAt": (("int",),),
    "indexOf": (("string",), ("string", "int")),
    "lastIndexOf": (("string",), ("string", "int")),
    "lowerAscii": ((),),
    "upperAscii": ((),),
    "trim": ((),),
    "reverse": ((),),
    "size": ((),),
    "substring": (("int",), ("int", "int")),
    "split": (("string",), ("string", "int")),
    "replace": (("string", "string"), ("string", "string", "int")),
    "find": (("string",),),
    "findAll": (("string",), ("string", "int")),
}
_NAMESPACES: Final = frozenset(name.split(".")[0] for name in _FUNCTIONS if "." in name)
_MACROS: Final = frozenset(("all", "exists", "exists_one", "map", "filter"))


# ---------------------------------------------------------------------------------------
# Compilation: celpy's parse tree -> checked closures.
# ---------------------------------------------------------------------------------------

Fn = Callable[[dict[str, Any]], Any]

_PARSER: CELParser | None = None


def _parse(source: str) -> Tree[Any]:
    global _PARSER  # noqa: PLW0603 - one lark parser per process, built on first use.
    if _PARSER is None:
        _PARSER = CELParser()
    return _PARSER.parse(source)


def _issue(source: str, line: int, col: int, message: str) -> str:
    lines = source.split("\n")
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return f"ERROR: <input>:{line}:{col}: {message}\n | {text}\n | {'.' * max(col - 1, 0)}^"


def _tok(node: Any) -> Token:
    if not isinstance(node, Token):
        raise TypeError(f"expected a token, got {node!r}")
    return node


def _pos(node: Tree[Any] | Token) -> tuple[int, int]:
    if isinstance(node, Token):
        return (node.line or 1, node.column or 1)
    meta = node.meta
    return (getattr(meta, "line", 1) or 1, getattr(meta, "column", 1) or 1)


class _CompileFailedError(Exception):
    """Internal: aborts compilation after recording an issue."""


_STRING_ESCAPES: Final = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    '"': '"',
    "'": "'",
    "\\": "\\",
    "`": "`",
    "?": "?",
}


def _unquote(text: str) -> str | bytes:
    is_bytes = text[:1] in "bB"
    if is_bytes:
        text = text[1:]
    raw = text[:1] in "rR"
    if raw:
        text = text[1:]
    quote = text[:3] if text[:3] in ('"""', "'''") else text[:1]
    body = text[len(quote) : len(text) - len(quote)]
    if raw:
        return body.encode() if is_bytes else body
    out: list[str] = []
    out_bytes = bytearray()

    def emit(ch: str, byte: int | None = None) -> None:
        if is_bytes:
            if byte is not None:
                out_bytes.append(byte)
            else:
                out_bytes.extend(ch.encode())
        else:
            out.append(ch)

    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            emit(ch)
            i += 1
            continue
        nxt = body[i + 1] if i + 1 < len(body) else ""
        if nxt in _STRING_ESCAPES:
            emit(_STRING_ESCAPES[nxt])
            i += 2
        elif nxt in "xX":
            value = int(body[i + 2 : i + 4], 16)
            emit(chr(value), value)
            i += 4
        elif nxt == "u":
            emit(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
        elif nxt == "U":
            emit(chr(int(body[i + 2 : i + 10], 16)))
            i += 10
        elif nxt in "01234567":
            value = int(body[i + 1 : i + 4], 8)
            emit(chr(value), value)
            i += 4
        else:
            raise ValueError(f"invalid escape sequence \\{nxt}")
    return bytes(out_bytes) if is_bytes else "".join(out)


_NUMERIC: Final = frozenset(("int", "uint", "double"))
_KNOWN_KINDS: Final = frozenset(
    (
        "bool",
        "int",
        "uint",
        "double",
        "string",
        "bytes",
        "google.protobuf.Timestamp",
        "google.protobuf.Duration",
    )
)
_ARITH_OK: Final = {
    "_+_": {
        ("int", "int"),
        ("uint", "uint"),
        ("double", "double"),
        ("string", "string"),
        ("bytes", "bytes"),
        ("google.protobuf.Timestamp", "google.protobuf.Duration"),
        ("google.protobuf.Duration", "google.protobuf.Timestamp"),
        ("google.protobuf.Duration", "google.protobuf.Duration"),
    },
    "_-_": {
        ("int", "int"),
        ("uint", "uint"),
        ("double", "double"),
        ("google.protobuf.Timestamp", "google.protobuf.Timestamp"),
        ("google.protobuf.Timestamp", "google.protobuf.Duration"),
        ("google.protobuf.Duration", "google.protobuf.Duration"),
    },
    "_*_": {("int", "int"), ("uint", "uint"), ("double", "double")},
    "_/_": {("int", "int"), ("uint", "uint"), ("double", "double")},
    "_%_": {("int", "int"), ("uint", "uint")},
}
_ARITH_RESULT: Final = {
    ("google.protobuf.Timestamp", "google.protobuf.Timestamp"): DURATION,
    ("google.protobuf.Timestamp", "google.protobuf.Duration"): TIMESTAMP,
    ("google.protobuf.Duration", "google.protobuf.Timestamp"): TIMESTAMP,
}
_ARITH_IMPL: Final[dict[str, Callable[[Any, Any], Any]]] = {
    "_+_": _add,
    "_-_": _sub,
    "_*_": _mul,
    "_/_": _div,
    "_%_": _mod,
}
_REL_OPS: Final = {
    "relation_lt": "_<_",
    "relation_le": "_<=_",
    "relation_gt": "_>_",
    "relation_ge": "_>=_",
    "relation_eq": "_==_",
    "relation_ne": "_!=_",
    "relation_in": "@in",
}
_ARITH_OPS: Final = {
    "addition_add": "_+_",
    "addition_sub": "_-_",
    "multiplication_mul": "_*_",
    "multiplication_div": "_/_",
    "multiplication_mod": "_%_",
}


def _known(t: T) -> bool:
    return t.kind in _KNOWN_KINDS


class _Compiler:
    def __init__(self, source: str, self_type: T, old_type: T) -> None:
        self.source = source
        self.self_type = self_type
        self.old_type = old_type
        self.scopes: list[dict[str, T]] = []
        self.uses_old_self = False

    def fail(self, node: Tree[Any] | Token, message: str) -> _CompileFailedError:
        line, col = _pos(node)
        return _CompileFailedError(_issue(self.source, line, col, message))

    def no_overload(self, node: Tree[Any] | Token, op: str, *types: T) -> _CompileFailedError:
        kinds = ", ".join(repr(t) for t in types)
        return self.fail(node, f"found no matching overload for '{op}' applied to '({kinds})'")

    def lookup_var(self, name: str) -> T | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def compile(self, tree: Tree[Any]) -> tuple[Fn, T]:
        method = getattr(self, "c_" + str(tree.data), None)
        if method is None:
            raise self.fail(tree, f"unsupported expression: {tree.data}")
        result: tuple[Fn, T] = method(tree)
        return result

    # -- operators -----------------------------------------------------------------------

    def c_expr(self, tree: Tree[Any]) -> tuple[Fn, T]:
        if len(tree.children) == 1:
            return self.compile(tree.children[0])
        cond, cond_t = self.compile(tree.children[0])
        then, then_t = self.compile(tree.children[1])
        other, other_t = self.compile(tree.children[2])
        if cond_t.kind not in ("bool", "dyn"):
            raise self.no_overload(tree, "_?_:_", cond_t, then_t, other_t)

        def conditional(env: dict[str, Any]) -> Any:
            c = cond(env)
            if c is True:
                return then(env)
            if c is False:
                return other(env)
            raise _no_overload("_?_:_", c)

        result_t = then_t if then_t.kind == other_t.kind else DYN
        return conditional, result_t

    def c_conditionalor(self, tree: Tree[Any]) -> tuple[Fn, T]:
        if len(tree.children) == 1:
            return self.compile(tree.children[0])
        left, lt = self.compile(tree.children[0])
        right, rt = self.compile(tree.children[1])
        for t in (lt, rt):
            if t.kind not in ("bool", "dyn"):
                raise self.no_overload(tree, "_||_", lt, rt)

        def logical_or(env: dict[str, Any]) -> Any:
            try:
                a = left(env)
            except CelEvalError as e:
                b = right(env)
                if b is True:
                    return True
                raise e from None
            if a is True:
                return True
            b = right(env)
            if b is True:
                return True
            if a is False and b is False:
                return False
            raise _no_overload("_||_", a, b)

        return logical_or, BOOL

    def c_conditionaland(self, tree: Tree[Any]) -> tuple[Fn, T]:
        if len(tree.children) == 1:
            return self.compile(tree.children[0])
        left, lt = self.compile(tree.children[0])
        right, rt = self.compile(tree.children[1])
        for t in (lt, rt):
            if t.kind not in ("bool", "dyn"):
                raise self.no_overload(tree, "_&&_", lt, rt)

        def logical_and(env: dict[str, Any]) -> Any:
            try:
                a = left(env)
            except CelEvalError as e:
                b = right(env)
                if b is False:
                    return False
                raise e from None
            if a is False:
                return False
            b = right(env)
            if b is False:
                return False
            if a is True and b is True:
                return True
            raise _no_overload("_&&_", a, b)

        return logical_and, BOOL

    def c_relation(self, tree: Tree[Any]) -> tuple[Fn, T]:
        if len(tree.children) == 1:
            return self.compile(tree.children[0])
        op_tree, right_tree = tree.children
        op = _REL_OPS[str(op_tree.data)]
        left, lt = self.compile(op_tree.children[0])
        right, rt = self.compile(right_tree)
        if op in ("_==_", "_!=_"):
            if (
                _known(lt)
                and _known(rt)
                and lt.kind != rt.kind
                and not (lt.kind in _NUMERIC and rt.kind in _NUMERIC)
            ):
                raise self.no_overload(tree, op, lt, rt)
            if op == "_==_":
                return (lambda env: cel_equal(left(env), right(env))), BOOL
            return (lambda env: not cel_equal(left(env), right(env))), BOOL
        if op == "@in":
            if rt.kind not in ("list", "map", "dyn"):
                raise self.no_overload(tree, op, lt, rt)
            return (lambda env: _in(left(env), right(env))), BOOL
        if (
            _known(lt)
            and _known(rt)
            and lt.kind != rt.kind
            and not (lt.kind in _NUMERIC and rt.kind in _NUMERIC)
        ):
            raise self.no_overload(tree, op, lt, rt)
        if op == "_<_":
            return (lambda env: _compare(op, left(env), right(env)) < 0), BOOL
        if op == "_<=_":
            return (lambda env: _compare(op, left(env), right(env)) <= 0), BOOL
        if op == "_>_":
            return (lambda env: _compare(op, left(env), right(env)) > 0), BOOL
        return (lambda env: _compare(op, left(env), right(env)) >= 0), BOOL

    def _arith(self, tree: Tree[Any]) -> tuple[Fn, T]:
        if len(tree.children) == 1:
            return self.compile(tree.children[0])
        op_tree, right_tree = tree.children
        op = _ARITH_OPS[str(op_tree.data)]
        left, lt = self.compile(op_tree.children[0])
        right, rt = self.compile(right_tree)
        result_t = DYN
        if _known(lt) and _known(rt):
            if (lt.kind, rt.kind) not in _ARITH_OK[op]:
                raise self.no_overload(tree, op, lt, rt)
            result_t = _ARITH_RESULT.get((lt.kind, rt.kind), lt)
        elif lt.kind == "list" and rt.kind == "list" and op == "_+_":
            result_t = lt
        impl = _ARITH_IMPL[op]
        return (lambda env: impl(left(env), right(env))), result_t

    c_addition = _arith
    c_multiplication = _arith

    def c_unary(self, tree: Tree[Any]) -> tuple[Fn, T]:
        if len(tree.children) == 1:
            return self.compile(tree.children[0])
        op_tree, operand_tree = tree.children
        operand, t = self.compile(operand_tree)
        if op_tree.data == "unary_not":
            if t.kind not in ("bool", "dyn"):
                raise self.no_overload(tree, "!_", t)

            def logical_not(env: dict[str, Any]) -> bool:
                v = operand(env)
                if v is True:
                    return False
                if v is False:
                    return True
                raise _no_overload("!_", v)

            return logical_not, BOOL
        if _known(t) and t.kind not in ("int", "double", "google.protobuf.Duration"):
            raise self.no_overload(tree, "-_", t)
        return (lambda env: _neg(operand(env))), t

    # -- members ------------------------------------------------------------------------

    def c_member(self, tree: Tree[Any]) -> tuple[Fn, T]:
        return self.compile(tree.children[0])

    def c_primary(self, tree: Tree[Any]) -> tuple[Fn, T]:
        return self.compile(tree.children[0])

    def c_paren_expr(self, tree: Tree[Any]) -> tuple[Fn, T]:
        return self.compile(tree.children[0])

    def c_member_object(self, tree: Tree[Any]) -> tuple[Fn, T]:
        raise self.fail(tree, "message construction is not supported")

    def c_ident(self, tree: Tree[Any]) -> tuple[Fn, T]:
        token = _tok(tree.children[0])
        return self.ident(str(token), token)

    def c_dot_ident(self, tree: Tree[Any]) -> tuple[Fn, T]:
        token = _tok(tree.children[0])
        return self.ident(str(token), token)

    def ident(self, name: str, token: Token) -> tuple[Fn, T]:
        var_t = self.lookup_var(name)
        if var_t is not None:
            return (lambda env: env[name]), var_t
        if name == "self":
            return (lambda env: env["self"]), self.self_type
        if name == "oldSelf":
            self.uses_old_self = True

            def old_self(env: dict[str, Any]) -> Any:
                try:
                    return env["oldSelf"]
                except KeyError:
                    raise CelEvalError("no such attribute(s): oldSelf") from None

            return old_self, self.old_type
        if name in _TYPE_VALUES:
            value = _TYPE_VALUES[name]
            return (lambda env: value), TYPE
        raise self.fail(token, f"undeclared reference to '{name}' (in container '')")

    def c_member_dot(self, tree: Tree[Any]) -> tuple[Fn, T]:
        operand_tree, field_node = tree.children
        field_token = _tok(field_node)
        name = str(field_token)
        if self._is_namespace(operand_tree):
            raise self.fail(
                field_token,
                f"undeclared reference to '{self._namespace(operand_tree)}.{name}' (in "
                "container '')",
            )
        operand, t = self.compile(operand_tree)
        return self.select(operand, t, name, field_token, test_only=False)

    def select(
        self, operand: Fn, t: T, name: str, token: Token, *, test_only: bool
    ) -> tuple[Fn, T]:
        line, col = _pos(token)
        dot = Token("IDENT", name, line=line, column=max(col - 1, 1))
        json_name = name
        field_t: T = DYN
        if t.kind == "object":
            assert t.fields is not None
            found = t.fields.get(name)
            if found is None:
                raise self.fail(dot, f"undefined field '{name}'")
            json_name, field_t = found
        elif t.kind == "map":
            field_t = t.elem or DYN
        elif t.kind != "dyn":
            raise self.fail(dot, f"type '{t!r}' does not support field selection")
        dynamic = t.kind == "dyn"
        if test_only:

            def has(env: dict[str, Any]) -> bool:
                v = operand(env)
                if type(v) is dict:
                    return json_name in v or (dynamic and _unescape(json_name) in v)
                raise CelEvalError(f"invalid type for field selection: {_type_name(v)}")

            return has, BOOL
        conv = _converter(field_t)

        def sel(env: dict[str, Any]) -> Any:
            v = operand(env)
            if type(v) is dict:
                try:
                    r = v[json_name]
                except KeyError:
                    if not dynamic or (alt := _unescape(json_name)) not in v:
                        raise CelEvalError(f"no such key: {name}") from None
                    r = v[alt]
                return r if conv is None or r is None else conv(r)
            if v is None:
                raise CelEvalError(f"no such key: {name}")
            raise CelEvalError(f"type '{_type_name(v)}' does not support field selection")

        return sel, field_t

    def c_member_index(self, tree: Tree[Any]) -> tuple[Fn, T]:
        operand_tree, index_tree = tree.children
        operand, t = self.compile(operand_tree)
        index, it = self.compile(index_tree)
        elem_t: T = DYN
        if t.kind in ("list", "map"):
            elem_t = t.elem or DYN
            if t.kind == "list" and it.kind not in ("int", "uint", "dyn", "double"):
                raise self.no_overload(tree, "_[_]", t, it)
        elif t.kind not in ("dyn", "object"):
            raise self.no_overload(tree, "_[_]", t, it)
        conv = _converter(elem_t)

        def idx(env: dict[str, Any]) -> Any:
            v = operand(env)
            i = index(env)
            if isinstance(v, list | tuple):
                if isinstance(i, float) and i.is_integer():
                    i = int(i)
                if not isinstance(i, int) or isinstance(i, bool):
                    raise _no_overload("_[_]", v, i)
                if i < 0 or i >= len(v):
                    raise CelEvalError(f"index '{i}' out of range in list size '{len(v)}'")
                r = v[i]
            elif isinstance(v, dict):
                r = _map_lookup(v, i)
                if r is _MISSING:
                    raise CelEvalError(
                        f"no such key: {_to_string(i) if not isinstance(i, list | dict) else i}"
                    )
            else:
                raise _no_overload("_[_]", v, i)
            return r if conv is None or r is None else conv(r)

        return idx, elem_t

    def _is_namespace(self, tree: Tree[Any]) -> bool:
        name = self._namespace(tree)
        return name is not None and name in _NAMESPACES and self.lookup_var(name) is None

    @staticmethod
    def _namespace(tree: Tree[Any]) -> str | None:
        node: Any = tree
        while isinstance(node, Tree) and node.data != "ident" and len(node.children) == 1:
            node = node.children[0]
        if isinstance(node, Tree) and node.data == "ident":
            return str(node.children[0])
        return None

    def args(self, tree: Tree[Any] | None) -> list[Tree[Any]]:
        return list(tree.children) if tree is not None else []

    def c_member_dot_arg(self, tree: Tree[Any]) -> tuple[Fn, T]:
        operand_tree = tree.children[0]
        name_token = _tok(tree.children[1])
        name = str(name_token)
        arg_trees = self.args(tree.children[2] if len(tree.children) > 2 else None)
        if self._is_namespace(operand_tree):
            qualified = f"{self._namespace(operand_tree)}.{name}"
            return self.call_global(qualified, name_token, arg_trees)
        if name in _MACROS and len(arg_trees) in (2, 3):
            return self.macro(name, name_token, operand_tree, arg_trees)
        operand, t = self.compile(operand_tree)
        compiled = [self.compile(a) for a in arg_trees]
        entry = _METHODS.get(name)
        if entry is None:
            raise self.fail(name_token, f"undeclared reference to '{name}' (in container '')")
        impl, result_t, arities = entry
        arg_types = [c[1] for c in compiled]
        if not self._method_fits(name, t, arg_types):
            kinds = ", ".join(repr(a) for a in arg_types)
            raise self.fail(
                name_token,
                f"found no matching overload for '{name}' applied to '{t!r}.({kinds})'",
            )
        if len(compiled) not in arities:
            kinds = ", ".join(repr(c[1]) for c in compiled)
            raise self.fail(
                name_token, f"found no matching overload for '{name}' applied to '{t!r}.({kinds})'"
            )
        if name in ("value", "orValue") and t.kind == "optional":
            result_t = t.elem or DYN
        if name in ("min", "max", "sum") and t.kind == "list":
            result_t = t.elem or DYN
        fns = [c[0] for c in compiled]
        if not fns:
            return (lambda env: impl(operand(env))), result_t
        if len(fns) == 1:
            (a0,) = fns
            return (lambda env: impl(operand(env), a0(env))), result_t
        return (lambda env: impl(operand(env), *[f(env) for f in fns])), result_t

    @staticmethod
    def _method_fits(name: str, target: T, args: list[T]) -> bool:
        signatures = _STRING_METHOD_SIGNATURES.get(name)
        if signatures is None or target.kind == "dyn":
            return True
        if target.kind != "string":
            # Methods that exist only on strings cannot apply to another known type.
            return name in ("indexOf", "lastIndexOf", "size") or not _known(target)
        return any(
            len(sig) == len(args)
            and all(a.kind in (want, "dyn") for a, want in zip(args, sig, strict=True))
            for sig in signatures
        )

    def c_ident_arg(self, tree: Tree[Any]) -> tuple[Fn, T]:
        name_token = _tok(tree.children[0])
        arg_trees = self.args(tree.children[1] if len(tree.children) > 1 else None)
        name = str(name_token)
        if name == "has":
            return self.has_macro(name_token, arg_trees)
        return self.call_global(name, name_token, arg_trees)

    def c_dot_ident_arg(self, tree: Tree[Any]) -> tuple[Fn, T]:
        return self.c_ident_arg(tree)

    def call_global(self, name: str, token: Token, arg_trees: list[Tree[Any]]) -> tuple[Fn, T]:
        entry = _FUNCTIONS.get(name)
        compiled = [self.compile(a) for a in arg_trees]
        if entry is None:
            raise self.fail(token, f"undeclared reference to '{name}' (in container '')")
        impl, result_t, arities = entry
        if len(compiled) not in arities:
            kinds = ", ".join(repr(c[1]) for c in compiled)
            raise self.fail(
                token, f"found no matching overload for '{name}' applied to '({kinds})'"
            )
        if name == "dyn":
            result_t = DYN
        fns = [c[0] for c in compiled]
        if not fns:
            return (lambda env: impl()), result_t
        if len(fns) == 1:
            (a0,) = fns
            return (lambda env: impl(a0(env))), result_t
        if len(fns) == 2:
            a0, a1 = fns
            return (lambda env: impl(a0(env), a1(env))), result_t
        return (lambda env: impl(*[f(env) for f in fns])), result_t

    def has_macro(self, token: Token, arg_trees: list[Tree[Any]]) -> tuple[Fn, T]:
        if len(arg_trees) != 1:
            raise self.fail(token, "invalid argument to has() macro")
        node: Any = arg_trees[0]
        while isinstance(node, Tree) and node.data != "member_dot" and len(node.children) == 1:
            node = node.children[0]
        if not isinstance(node, Tree) or node.data != "member_dot":
            raise self.fail(token, "invalid argument to has() macro")
        operand_tree, field_node = node.children
        field_token = _tok(field_node)
        operand, t = self.compile(operand_tree)
        return self.select(operand, t, str(field_token), field_token, test_only=True)

    def macro(
        self, name: str, token: Token, range_tree: Tree[Any], arg_trees: list[Tree[Any]]
    ) -> tuple[Fn, T]:
        var = self._namespace(arg_trees[0])
        if var is None:
            raise self.fail(token, "argument must be a simple name")
        if len(arg_trees) == 3 and name != "map":
            raise self.fail(token, f"undeclared reference to '{name}' (in container '')")
        rng, rt = self.compile(range_tree)
        if rt.kind == "list":
            var_t = rt.elem or DYN
        elif rt.kind == "map":
            var_t = STRING
        elif rt.kind == "dyn":
            var_t = DYN
        else:
            raise self.fail(
                token,
                f"expression of type '{rt!r}' cannot be range of a comprehension (must be list, "
                "map, or dynamic)",
            )
        conv = _converter(var_t) if rt.kind == "list" else None
        self.scopes.append({var: var_t})
        try:
            bodies = [self.compile(a) for a in arg_trees[1:]]
        finally:
            self.scopes.pop()
        if name in ("all", "exists", "exists_one", "filter") and bodies[0][1].kind not in (
            "bool",
            "dyn",
        ):
            raise self.no_overload(token, "_&&_" if name == "all" else "_||_", BOOL, bodies[0][1])

        def items(env: dict[str, Any]) -> Any:
            v = rng(env)
            if isinstance(v, list | tuple | dict):
                return v
            raise _no_overload(name, v)

        body = bodies[0][0]
        if name == "all":
            return _comprehension_all(var, items, body, conv), BOOL
        if name == "exists":
            return _comprehension_exists(var, items, body, conv), BOOL
        if name == "exists_one":
            return _comprehension_exists_one(var, items, body, conv), BOOL
        if name == "filter":
            return _comprehension_filter(var, items, body, conv), T("list", var_t)
        if len(bodies) == 1:
            return _comprehension_map(var, items, None, body, conv), T("list", bodies[0][1])
        return _comprehension_map(var, items, body, bodies[1][0], conv), T("list", bodies[1][1])

    # -- literals -----------------------------------------------------------------------

    def c_list_lit(self, tree: Tree[Any]) -> tuple[Fn, T]:
        elems = [self.compile(a) for a in self.args(tree.children[0] if tree.children else None)]
        fns = [e[0] for e in elems]
        kinds = {e[1].kind for e in elems}
        elem_t = elems[0][1] if len(kinds) == 1 else DYN
        return (lambda env: [f(env) for f in fns]), T("list", elem_t)

    def c_map_lit(self, tree: Tree[Any]) -> tuple[Fn, T]:
        parts = [self.compile(a) for a in self.args(tree.children[0] if tree.children else None)]
        pairs = [(parts[i][0], parts[i + 1][0]) for i in range(0, len(parts), 2)]
        values = [parts[i + 1][1] for i in range(0, len(parts), 2)]
        elem_t = values[0] if values and len({v.kind for v in values}) == 1 else DYN

        def build(env: dict[str, Any]) -> dict[Any, Any]:
            out: dict[Any, Any] = {}
            for kf, vf in pairs:
                k = kf(env)
                if isinstance(k, float | list | tuple | dict) or k is None:
                    raise CelEvalError(f"unsupported key type: {_type_name(k)}")
                if _map_lookup(out, k) is not _MISSING:
                    raise CelEvalError(f"Failed with repeated key: {_to_string(k)}")
                out[k] = vf(env)
            return out

        return build, T("map", elem_t)

    def c_literal(self, tree: Tree[Any]) -> tuple[Fn, T]:
        token = _tok(tree.children[0])
        text = str(token)
        kind = token.type
        value: Any
        if kind == "INT_LIT":
            value = (
                int(text, 16) * (-1 if text.startswith("-") else 1)
                if "x" in text.lower()
                else int(text)
            )
            if "x" in text.lower():
                value = int(text.lstrip("-"), 16) * (-1 if text.startswith("-") else 1)
            if not _INT64_MIN <= value <= _INT64_MAX:
                raise self.fail(token, f"invalid int literal: {text}")
            t = INT
        elif kind == "UINT_LIT":
            digits = text[:-1]
            value = Uint(int(digits, 16) if "x" in digits.lower() else int(digits))
            if value > _UINT64_MAX:
                raise self.fail(token, f"invalid uint literal: {text}")
            t = UINT
        elif kind == "FLOAT_LIT":
            value = float(text)
            t = DOUBLE
        elif kind in ("STRING_LIT", "MLSTRING_LIT", "BYTES_LIT"):
            try:
                value = _unquote(text)
            except ValueError as e:
                raise self.fail(token, str(e)) from None
            t = BYTES if isinstance(value, bytes) else STRING
        elif kind == "BOOL_LIT":
            value = text == "true"
            t = BOOL
        else:
            value = None
            t = NULL
        return (lambda env: value), t


def _unescape(name: str) -> str:
    if name.startswith("__") and name.endswith("__") and name[2:-2] in _RESERVED:
        return name[2:-2]
    return (
        name.replace("__underscores__", "\0")
        .replace("__dot__", ".")
        .replace("__dash__", "-")
        .replace("__slash__", "/")
        .replace("\0", "__")
    )


def _iterate(value: Any) -> Any:
    return value.keys() if isinstance(value, dict) else value


def _comprehension_all(var: str, items: Fn, body: Fn, conv: Callable[[Any], Any] | None) -> Fn:
    def run(env: dict[str, Any]) -> bool:
        saved = env.get(var, _MISSING)
        error: CelEvalError | None = None
        try:
            for item in _iterate(items(env)):
                env[var] = item if conv is None or item is None else conv(item)
                try:
                    r = body(env)
                except CelEvalError as e:
                    error = error or e
                    continue
                if r is False:
                    return False
                if r is not True:
                    error = error or _no_overload("_&&_", r)
        finally:
            _restore(env, var, saved)
        if error is not None:
            raise error
        return True

    return run


def _comprehension_exists(var: str, items: Fn, body: Fn, conv: Callable[[Any], Any] | None) -> Fn:
    def run(env: dict[str, Any]) -> bool:
        saved = env.get(var, _MISSING)
        error: CelEvalError | None = None
        try:
            for item in _iterate(items(env)):
                env[var] = item if conv is None or item is None else conv(item)
                try:
                    r = body(env)
                except CelEvalError as e:
                    error = error or e
                    continue
                if r is True:
                    return True
                if r is not False:
                    error = error or _no_overload("_||_", r)
        finally:
            _restore(env, var, saved)
        if error is not None:
            raise error
        return False

    return run


def _comprehension_exists_one(
    var: str, items: Fn, body: Fn, conv: Callable[[Any], Any] | None
) -> Fn:
    def run(env: dict[str, Any]) -> bool:
        saved = env.get(var, _MISSING)
        count = 0
        try:
            for item in _iterate(items(env)):
                env[var] = item if conv is None or item is None else conv(item)
                r = body(env)
                if r is True:
                    count += 1
                elif r is not False:
                    raise _no_overload("exists_one", r)
        finally:
            _restore(env, var, saved)
        return count == 1

    return run


def _comprehension_filter(var: str, items: Fn, body: Fn, conv: Callable[[Any], Any] | None) -> Fn:
    def run(env: dict[str, Any]) -> list[Any]:
        saved = env.get(var, _MISSING)
        out: list[Any] = []
        try:
            for item in _iterate(items(env)):
                value = item if conv is None or item is None else conv(item)
                env[var] = value
                r = body(env)
                if r is True:
                    out.append(value)
                elif r is not False:
                    raise _no_overload("filter", r)
        finally:
            _restore(env, var, saved)
        return out

    return run


def _comprehension_map(
    var: str, items: Fn, predicate: Fn | None, transform: Fn, conv: Callable[[Any], Any] | None
) -> Fn:
    def run(env: dict[str, Any]) -> list[Any]:
        saved = env.get(var, _MISSING)
        out: list[Any] = []
        try:
            for item in _iterate(items(env)):
                env[var] = item if conv is None or item is None else conv(item)
                if predicate is not None:
                    keep = predicate(env)
                    if keep is False:
                        continue
                    if keep is not True:
                        raise _no_overload("map", keep)
                out.append(transform(env))
        finally:
            _restore(env, var, saved)
        return out

    return run


def _restore(env: dict[str, Any], var: str, saved: Any) -> None:
    if saved is _MISSING:
        env.pop(var, None)
    else:
        env[var] = saved


# ---------------------------------------------------------------------------------------
# Programs and compiled rules.
# ---------------------------------------------------------------------------------------

_PY_ERRORS: Final = (
    TypeError,
    ValueError,
    AttributeError,
    KeyError,
    IndexError,
    OverflowError,
    ZeroDivisionError,
)


class Program:
    """A compiled CEL expression, ready to evaluate against ``self``/``oldSelf``."""

    __slots__ = ("_conv", "_fn", "result_type", "source", "uses_old_self")

    def __init__(
        self, source: str, fn: Fn, result_type: T, uses_old_self: bool, self_type: T
    ) -> None:
        self.source = source
        self._fn = fn
        self.result_type = result_type
        self.uses_old_self = uses_old_self
        self._conv = _converter(self_type)

    def evaluate(
        self,
        self_value: Any,
        old_value: Any = None,
        *,
        has_old: bool = False,
        optional: bool = False,
    ) -> Any:
        """Evaluate the expression.

        Args:
            self_value: The value of ``self`` (decoded JSON).
            old_value: The value of ``oldSelf``, if ``has_old``.
            has_old: Whether there is an old value.
            optional: Whether ``oldSelf`` is an optional (``optionalOldSelf: true``).

        Returns:
            The result (``True``/``False`` for rules).

        Raises:
            CelEvalError: Evaluation failed (no such key, overflow, no such overload...).
        """
        conv = self._conv
        env: dict[str, Any] = {
            "self": self_value if conv is None or self_value is None else conv(self_value)
        }
        if self.uses_old_self:
            old = old_value if conv is None or old_value is None else conv(old_value)
            if optional:
                env["oldSelf"] = Optional(True, old) if has_old else _NONE
            elif has_old:
                env["oldSelf"] = old
        try:
            return self._fn(env)
        except CelEvalError:
            raise
        except RecursionError:
            raise CelEvalError("max recursion depth exceeded") from None
        except _PY_ERRORS as e:
            raise CelEvalError(f"no such overload: {e}") from None


def compile_expression(
    source: str, self_type: T | None = None, *, optional_old_self: bool = False
) -> Program:
    """Compile a CEL expression where ``self`` and ``oldSelf`` have the given type.

    Args:
        source: The expression.
        self_type: The static type of ``self`` (``None`` for dynamic).
        optional_old_self: Type ``oldSelf`` as an optional.

    Returns:
        The program.

    Raises:
        CelCompileError: The expression does not parse or does not type-check; the message
            is cel-go's issue text (``ERROR: <input>:1:5: undefined field 'x'`` ...).
    """
    st = self_type or DYN
    old_t = T("optional", st) if optional_old_self else st
    try:
        tree = _parse(source)
    except CELParseError as e:
        line = getattr(e, "line", None) or 1
        col = getattr(e, "column", None) or 1
        detail = str(e.args[0]).strip().splitlines()[0] if e.args else "syntax error"
        raise CelCompileError(
            _issue(source, line, col, f"Syntax error: {_syntax_message(source, detail)}")
        ) from None
    compiler = _Compiler(source, st, old_t)
    try:
        fn, result_t = compiler.compile(tree)
    except _CompileFailedError as e:
        raise CelCompileError(str(e)) from None
    except RecursionError:
        raise CelCompileError(_issue(source, 1, 1, "expression recursion limit exceeded")) from None
    return Program(source, fn, result_t, compiler.uses_old_self, st)


def _syntax_message(source: str, detail: str) -> str:
    if not source.strip():
        return "mismatched input '<EOF>'"
    return f"unexpected input near {detail.strip()!r}" if detail else "syntax error"


@dataclass(slots=True)
class CompiledRule:
    """One ``x-kubernetes-validations`` entry, compiled.

    Attributes:
        rule: The raw rule dict (``rule``, ``message``, ``messageExpression``, ``reason``,
            ``fieldPath``, ``optionalOldSelf``).
        program: The compiled rule, or None if it is empty or failed to compile.
        error: The compilation error detail as kube-apiserver reports it
            (``compilation failed: ERROR: ...``), or None.
        error_required: Whether the error is of kind Required (else Invalid).
        message_program: The compiled ``messageExpression``, if any.
        message_error: The ``messageExpression`` compilation error detail, or None.
        uses_old_self: Whether the rule is a transition rule (references ``oldSelf``).
        init_error: Whether the error is that the schema node cannot carry rules at all.
        field_path: The normalized ``fieldPath`` (set by the schema module).
    """

    rule: dict[str, Any]
    program: Program | None = None
    error: str | None = None
    error_required: bool = False
    message_program: Program | None = None
    message_error: str | None = None
    uses_old_self: bool = False
    init_error: bool = False
    field_path: str = ""


def _compile_rule(rule: dict[str, Any], self_type: T) -> CompiledRule:
    out = CompiledRule(rule)
    text = rule.get("rule")
    if not isinstance(text, str) or not text.strip():
        return out
    optional = rule.get("optionalOldSelf") is True
    try:
        program = compile_expression(text, self_type, optional_old_self=optional)
    except CelCompileError as e:
        out.error = f"compilation failed: {e}"
        return out
    if program.result_type.kind not in ("bool", "dyn"):
        out.error = "cel expression must evaluate to a bool"
        return out
    out.program = program
    out.uses_old_self = program.uses_old_self
    message_expression = rule.get("messageExpression")
    if isinstance(message_expression, str) and message_expression.strip():
        try:
            message_program = compile_expression(
                message_expression, self_type, optional_old_self=optional
            )
        except CelCompileError as e:
            out.message_error = f"messageExpression compilation failed: {e}"
        else:
            if message_program.result_type.kind not in ("string", "dyn"):
                out.message_error = "must evaluate to a string"
            else:
                out.message_program = message_program
    return out


def compile_rules(schema: dict[str, Any], *, is_resource_root: bool) -> list[CompiledRule]:
    """Compile the ``x-kubernetes-validations`` rules of one schema node.

    ``self`` is typed from the node as kube-apiserver types it (see :func:`schema_type`).

    Args:
        schema: The schema node carrying the rules.
        is_resource_root: Whether the node is the object root or an embedded resource.

    Returns:
        One result per rule, in order.
    """
    rules = schema.get("x-kubernetes-validations")
    raw_rules = [r if isinstance(r, dict) else {} for r in rules] if isinstance(rules, list) else []
    self_type = schema_type(schema, is_resource_root)
    if self_type is None:
        preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
        detail = (
            "rule declared on schema that does not support validation rules type: "
            f"'{schema.get('type', '')}' "
            f"x-kubernetes-preserve-unknown-fields: '{'true' if preserve else 'false'}'"
        )
        return [CompiledRule(r, error=detail, init_error=True) for r in raw_rules]
    return [_compile_rule(r, self_type) for r in raw_rules]
