"""CEL runtime values beyond JSON, and their operators.

Equality, ordering and arithmetic; timestamps, durations and quantities.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import ipaddress
    import urllib.parse

INT64_MIN: Final = -(1 << 63)
INT64_MAX: Final = (1 << 63) - 1
UINT64_MAX: Final = (1 << 64) - 1


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


NONE: Final = Optional(False)


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


def cel_type_name(value: Any) -> str:  # noqa: PLR0911, PLR0912 - one return per CEL runtime type name
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


def no_overload_error(name: str, *args: Any) -> CelEvalError:
    kinds = ", ".join(cel_type_name(a) for a in args)
    return CelEvalError(f"no such overload: {name}({kinds})")


def check_int(v: int) -> int:
    if v < INT64_MIN or v > INT64_MAX:
        raise CelEvalError("integer overflow")
    return v


def check_uint(v: int) -> Uint:
    if v < 0 or v > UINT64_MAX:
        raise CelEvalError("unsigned integer overflow")
    return Uint(v)


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool | Uint)


def is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


# ---------------------------------------------------------------------------------------
# Equality, ordering, arithmetic.
# ---------------------------------------------------------------------------------------


def cel_equal(a: Any, b: Any) -> bool:  # noqa: PLR0911 - one return per CEL type's equality, as cel-go's Equal
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
    if is_num(a) and is_num(b):
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
            found = map_lookup(b, k)
            if found is MISSING or not cel_equal(v, found):
                return False
        return True
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return a.value == b.value
    if ta is not tb:
        return False
    return bool(a == b)


MISSING: Final = object()


def map_lookup(m: dict[Any, Any], key: Any) -> Any:
    if type(key) is str:
        return m.get(key, MISSING)
    for k, v in m.items():
        if cel_equal(k, key):
            return v
    return MISSING


def compare(op: str, a: Any, b: Any) -> int:
    if is_num(a) and is_num(b):
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
    raise no_overload_error(op, a, b)


def add(a: Any, b: Any) -> Any:  # noqa: PLR0911 - one return per CEL type's addition, as cel-go's Add
    if is_int(a) and is_int(b):
        return check_int(a + b)
    if isinstance(a, Uint) and isinstance(b, Uint):
        return check_uint(a + b)
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
    raise no_overload_error("_+_", a, b)


def sub(a: Any, b: Any) -> Any:
    if is_int(a) and is_int(b):
        return check_int(a - b)
    if isinstance(a, Uint) and isinstance(b, Uint):
        return check_uint(a - b)
    if isinstance(a, float) and isinstance(b, float):
        return a - b
    if isinstance(a, datetime.datetime) and isinstance(b, datetime.datetime):
        return a - b
    if isinstance(a, datetime.datetime | datetime.timedelta) and isinstance(b, datetime.timedelta):
        return a - b
    raise no_overload_error("_-_", a, b)


def mul(a: Any, b: Any) -> Any:
    if is_int(a) and is_int(b):
        return check_int(a * b)
    if isinstance(a, Uint) and isinstance(b, Uint):
        return check_uint(a * b)
    if isinstance(a, float) and isinstance(b, float):
        return a * b
    raise no_overload_error("_*_", a, b)


def div(a: Any, b: Any) -> Any:
    if (is_int(a) and is_int(b)) or (isinstance(a, Uint) and isinstance(b, Uint)):
        if b == 0:
            raise CelEvalError("division by zero")
        q = abs(a) // abs(b)
        q = q if (a >= 0) == (b >= 0) else -q
        return check_uint(q) if isinstance(a, Uint) else check_int(q)
    if isinstance(a, float) and isinstance(b, float):
        if b == 0:
            return math.copysign(math.inf, a) * math.copysign(1.0, b) if a != 0 else math.nan
        return a / b
    raise no_overload_error("_/_", a, b)


def mod(a: Any, b: Any) -> Any:
    if (is_int(a) and is_int(b)) or (isinstance(a, Uint) and isinstance(b, Uint)):
        if b == 0:
            raise CelEvalError("modulus by zero")
        r = abs(a) % abs(b)
        r = r if a >= 0 else -r
        return Uint(r) if isinstance(a, Uint) else r
    raise no_overload_error("_%_", a, b)


def neg(a: Any) -> Any:
    if is_int(a):
        return check_int(-a)
    if isinstance(a, float):
        return -a
    if isinstance(a, datetime.timedelta):
        return -a
    raise no_overload_error("-_", a)


def cel_in(a: Any, b: Any) -> bool:
    if isinstance(b, list | tuple):
        return any(cel_equal(a, x) for x in b)
    if isinstance(b, dict):
        return map_lookup(b, a) is not MISSING
    raise no_overload_error("@in", a, b)


# ---------------------------------------------------------------------------------------
# Timestamps, durations, quantities.
# ---------------------------------------------------------------------------------------

_RX_TIMESTAMP: Final = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})\Z"
)
_MIN_TS: Final = datetime.datetime(1, 1, 1, tzinfo=datetime.UTC)
_MAX_TS: Final = datetime.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=datetime.UTC)


def parse_timestamp(s: str) -> datetime.datetime:
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


def date_to_timestamp(s: str) -> datetime.datetime:
    try:
        d = datetime.date.fromisoformat(s)
    except ValueError:
        return parse_timestamp(s)
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


def parse_duration(s: str) -> datetime.timedelta:
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


def format_duration(d: datetime.timedelta) -> str:
    total = Fraction(d.days * 86400 + d.seconds) + Fraction(d.microseconds, 1_000_000)
    if total.denominator == 1:
        return f"{total.numerator}s"
    text = f"{float(total):.6f}".rstrip("0").rstrip(".")
    return f"{text}s"


def format_timestamp(t: datetime.datetime) -> str:
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


def quantity(s: Any) -> Quantity:
    if type(s) is not str:
        raise no_overload_error("quantity", s)
    q = parse_quantity(s)
    if q is None:
        raise CelEvalError(
            "quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        )
    return q


def b64(s: str) -> bytes:
    try:
        return base64.b64decode(s, validate=True)
    except binascii.Error:
        raise CelEvalError("illegal base64 data") from None
