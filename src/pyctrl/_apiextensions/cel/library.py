"""CEL conversions and library functions.

Strings, lists, regex, URLs, quantities, IPs, sets, math and optionals; and the function
tables: the result type and implementation of each function.
"""

from __future__ import annotations

import datetime
import ipaddress
import math
import re
import urllib.parse
from collections.abc import Callable
from fractions import Fraction
from typing import Any, Final

from pyctrl._apiextensions.cel.authz import AUTHZ_METHODS
from pyctrl._apiextensions.cel.types import (
    BOOL,
    BYTES,
    DOUBLE,
    DURATION,
    DYN,
    INT,
    STRING,
    TIMESTAMP,
    TYPE,
    UINT,
    T,
    known,
)
from pyctrl._apiextensions.cel.values import (
    CIDR,
    INT64_MAX,
    INT64_MIN,
    IP,
    NONE,
    CelEvalError,
    CelType,
    Optional,
    Quantity,
    Uint,
    Url,
    add,
    cel_equal,
    cel_in,
    cel_type_name,
    check_int,
    check_uint,
    compare,
    format_duration,
    format_timestamp,
    is_int,
    is_num,
    no_overload_error,
    parse_duration,
    parse_timestamp,
    quantity,
)
from pyctrl._apiextensions.goregex import compile_go_regex

# ---------------------------------------------------------------------------------------
# Conversions and library functions.
# ---------------------------------------------------------------------------------------


def _to_int(v: Any) -> int:
    if is_int(v):
        return int(v)
    if isinstance(v, Uint):
        return check_int(int(v))
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
            return check_int(int(v, 10))
        except ValueError:
            raise CelEvalError(f"cannot convert '{v}' to int") from None
    if isinstance(v, datetime.datetime):
        return int(v.timestamp()) if v.timestamp() >= 0 else math.floor(v.timestamp())
    if isinstance(v, datetime.timedelta):
        return int(v / datetime.timedelta(microseconds=1)) * 1000
    raise no_overload_error("int", v)


def _to_uint(v: Any) -> Uint:
    if isinstance(v, Uint):
        return v
    if is_int(v):
        return check_uint(v)
    if isinstance(v, float):
        if math.isnan(v) or v < 0 or v >= 1.8446744073709552e19:
            raise CelEvalError("unsigned integer overflow")
        return Uint(int(v))
    if type(v) is str:
        try:
            return check_uint(int(v, 10))
        except ValueError:
            raise CelEvalError(f"cannot convert '{v}' to uint") from None
    raise no_overload_error("uint", v)


def _to_double(v: Any) -> float:
    if isinstance(v, bool):
        raise no_overload_error("double", v)
    if isinstance(v, int | float):
        return float(v)
    if type(v) is str:
        try:
            return float(v)
        except ValueError:
            raise CelEvalError(f"cannot convert '{v}' to double") from None
    raise no_overload_error("double", v)


def to_string(v: Any) -> str:  # noqa: PLR0911 - one return per CEL type of string(), as cel-go's conversions
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
        return format_timestamp(v)
    if isinstance(v, datetime.timedelta):
        return format_duration(v)
    if isinstance(v, IP):
        return str(v.addr)
    if isinstance(v, CIDR):
        return f"{v.addr}/{v.network.prefixlen}"
    if isinstance(v, CelType):
        return v.name
    raise no_overload_error("string", v)


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
    raise no_overload_error("bytes", v)


def _to_bool(v: Any) -> bool:
    if v is True or v is False:
        return bool(v)
    if type(v) is str:
        if v in ("1", "t", "T", "TRUE", "true", "True"):
            return True
        if v in ("0", "f", "F", "FALSE", "false", "False"):
            return False
        raise CelEvalError("type conversion error from 'string' to 'bool'")
    raise no_overload_error("bool", v)


def _to_timestamp(v: Any) -> datetime.datetime:
    if isinstance(v, datetime.datetime):
        return v
    if type(v) is str:
        return parse_timestamp(v)
    if is_int(v):
        try:
            return datetime.datetime.fromtimestamp(v, datetime.UTC)
        except (OverflowError, OSError, ValueError):
            raise CelEvalError("timestamp overflow") from None
    raise no_overload_error("timestamp", v)


def _to_duration(v: Any) -> datetime.timedelta:
    if isinstance(v, datetime.timedelta):
        return v
    if type(v) is str:
        return parse_duration(v)
    raise no_overload_error("duration", v)


def _size(v: Any) -> int:
    if isinstance(v, str | bytes | list | tuple | dict):
        return len(v)
    raise no_overload_error("size", v)


def _string_arg(name: str, target: Any, *args: Any) -> None:
    if type(target) is not str or any(type(a) is not str for a in args):
        raise no_overload_error(name, target, *args)


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

    try:
        return compile_go_regex(pattern)
    except ValueError as e:
        raise CelEvalError(str(e)) from None


def _matches(s: Any, pattern: Any) -> bool:
    _string_arg("matches", s, pattern)
    return _regex(pattern).search(s) is not None


def _char_at(s: Any, i: Any) -> str:
    if type(s) is not str or not is_int(i):
        raise no_overload_error("charAt", s, i)
    if i < 0 or i > len(s):
        raise CelEvalError(f"index out of range: {i}")
    return s[i] if i < len(s) else ""


def _index_of(target: Any, sub: Any, offset: Any = 0) -> int:
    if isinstance(target, list | tuple):
        for i, x in enumerate(target):
            if cel_equal(x, sub):
                return i
        return -1
    if type(target) is not str or type(sub) is not str or not is_int(offset):
        raise no_overload_error("indexOf", target, sub)
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
        raise no_overload_error("lastIndexOf", target, sub)
    if offset is None:
        return target.rfind(sub)
    if not is_int(offset) or offset < 0 or offset >= max(len(target), 1):
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
    if not is_int(n):
        raise no_overload_error("replace", s, old, new, n)
    return str(s.replace(old, new, n if n >= 0 else -1))


def _split(s: Any, sep: Any, n: Any = -1) -> list[str]:
    _string_arg("split", s, sep)
    if not is_int(n):
        raise no_overload_error("split", s, sep, n)
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
    if type(s) is not str or not is_int(start) or (end is not None and not is_int(end)):
        raise no_overload_error("substring", s, start)
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
        raise no_overload_error("join", items, sep)
    if not all(type(x) is str for x in items):
        raise no_overload_error("join", items, sep)
    return str(sep.join(items))


def _reverse(s: Any) -> str:
    _string_arg("reverse", s)
    return str(s[::-1])


def _is_sorted(items: Any) -> bool:
    if not isinstance(items, list | tuple):
        raise no_overload_error("isSorted", items)
    return all(compare("isSorted", items[i], items[i + 1]) <= 0 for i in range(len(items) - 1))


def _sum(items: Any) -> Any:
    if not isinstance(items, list | tuple):
        raise no_overload_error("sum", items)
    if not items:
        return 0
    total = items[0]
    for x in items[1:]:
        total = add(total, x)
    return total


def _min_max(name: str, items: Any, sign: int) -> Any:
    if not isinstance(items, list | tuple):
        raise no_overload_error(name, items)
    if not items:
        raise CelEvalError(f"{name} called on empty list")
    best = items[0]
    for x in items[1:]:
        if compare(name, x, best) * sign > 0:
            best = x
    return best


def _find(s: Any, pattern: Any) -> str:
    _string_arg("find", s, pattern)
    m = _regex(pattern).search(s)
    return m.group(0) if m else ""


def _find_all(s: Any, pattern: Any, n: Any = -1) -> list[str]:
    _string_arg("findAll", s, pattern)
    if not is_int(n):
        raise no_overload_error("findAll", s, pattern, n)
    found = [m.group(0) for m in _regex(pattern).finditer(s)]
    return found if n < 0 else found[:n]


def _url(s: Any) -> Url:
    if type(s) is not str:
        raise no_overload_error("url", s)
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
        raise no_overload_error("isURL", s)
    if not s or any(ord(c) < 0x21 or c == "\x7f" for c in s):
        return False
    if s.startswith("/"):
        return True
    return re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", s) is not None


def _url_part(name: str, u: Any) -> Any:  # noqa: PLR0911 - one return per url() accessor of Kubernetes' URL library
    if not isinstance(u, Url):
        raise no_overload_error(name, u)
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


def _quantity_method(name: str, q: Any, *args: Any) -> Any:  # noqa: PLR0911, PLR0912 - one case per quantity() method of Kubernetes' quantity library
    if not isinstance(q, Quantity):
        raise no_overload_error(name, q, *args)
    v = q.value
    if name == "sign":
        return (v > 0) - (v < 0)
    if name == "isInteger":
        return v.denominator == 1 and INT64_MIN <= v <= INT64_MAX
    if name == "asInteger":
        if v.denominator != 1 or not INT64_MIN <= v <= INT64_MAX:
            raise CelEvalError("cannot convert value to integer")
        return int(v)
    if name == "asApproximateFloat":
        return float(v)
    (other,) = args
    if name in ("add", "sub"):
        if is_int(other):
            operand = Fraction(other)
        elif isinstance(other, Quantity):
            operand = other.value
        else:
            raise no_overload_error(name, q, other)
        return Quantity(v + operand if name == "add" else v - operand)
    if not isinstance(other, Quantity):
        raise no_overload_error(name, q, other)
    cmp = (v > other.value) - (v < other.value)
    if name == "compareTo":
        return cmp
    if name == "isGreaterThan":
        return cmp > 0
    return cmp < 0


def _parse_ip(s: Any) -> IP:
    if type(s) is not str:
        raise no_overload_error("ip", s)
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
        raise no_overload_error("cidr", s)
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


def _ip_method(name: str, v: Any, *args: Any) -> Any:  # noqa: PLR0911, PLR0912 - one case per ip() method of Kubernetes' IP library
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
        raise no_overload_error(name, v, *args)
    if not isinstance(v, IP):
        raise no_overload_error(name, v, *args)
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
    raise no_overload_error(name, v, *args)


def _ip_is_canonical(s: Any) -> bool:
    ip = _parse_ip(s)
    return bool(str(ip.addr) == s)


def _sets(name: str, a: Any, b: Any) -> bool:
    if not isinstance(a, list | tuple) or not isinstance(b, list | tuple):
        raise no_overload_error(name, a, b)
    if name == "sets.contains":
        return all(cel_in(x, a) for x in b)
    if name == "sets.equivalent":
        return all(cel_in(x, a) for x in b) and all(cel_in(x, b) for x in a)
    return any(cel_in(x, a) for x in b)


def _math_extreme(name: str, args: list[Any], sign: int) -> Any:
    values = list(args[0]) if len(args) == 1 and isinstance(args[0], list | tuple) else list(args)
    if not values:
        raise CelEvalError(f"{name}(list) argument must not be empty")
    for v in values:
        if not is_num(v):
            raise no_overload_error(name, v)
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
        raise no_overload_error(name, o, *args)
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
        raise no_overload_error(name, o, other)
    return o if o.present else other


def _tz(args: tuple[Any, ...]) -> datetime.tzinfo:
    if not args:
        return datetime.UTC
    (name,) = args
    if type(name) is not str:
        raise no_overload_error("timezone", name)
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
            raise no_overload_error(name, t)
        total_us = t // datetime.timedelta(microseconds=1)
        quotient = abs(total_us) // units[name]
        return quotient if total_us >= 0 else -quotient
    if not isinstance(t, datetime.datetime):
        raise no_overload_error(name, t, *args)
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


# ---------------------------------------------------------------------------------------
# Functions: result types and implementations.
# ---------------------------------------------------------------------------------------

Impl = Callable[..., Any]


def _escape_key(key: Any) -> str:
    """``jsonpatch.escapeKey``: a map key as a JSON pointer segment (RFC 6901)."""
    if not isinstance(key, str):
        raise no_overload_error("jsonpatch.escapeKey", key)
    return key.replace("~", "~0").replace("/", "~1")


def _time_getter(name: str) -> Impl:
    return lambda t, *a: _time_part(name, t, *a)


# Receiver-style functions: name -> (implementation(target, *args), result type, arities).
METHODS: Final[dict[str, tuple[Impl, T, tuple[int, ...]]]] = {
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
    **AUTHZ_METHODS,
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

TYPE_VALUES: Final = {
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
    return CelType(cel_type_name(v))


# Global functions: name -> (implementation(*args), result type, arities).
FUNCTIONS: Final[dict[str, tuple[Impl, T, tuple[int, ...]]]] = {
    "size": (_size, INT, (1,)),
    "int": (_to_int, INT, (1,)),
    "uint": (_to_uint, UINT, (1,)),
    "double": (_to_double, DOUBLE, (1,)),
    "string": (to_string, STRING, (1,)),
    "bytes": (_to_bytes, BYTES, (1,)),
    "bool": (_to_bool, BOOL, (1,)),
    "timestamp": (_to_timestamp, TIMESTAMP, (1,)),
    "duration": (_to_duration, DURATION, (1,)),
    "dyn": (lambda v: v, DYN, (1,)),
    "type": (_type_of, TYPE, (1,)),
    "matches": (_matches, BOOL, (2,)),
    "url": (_url, T("kubernetes.URL"), (1,)),
    "isURL": (_is_url, BOOL, (1,)),
    "quantity": (quantity, T("kubernetes.Quantity"), (1,)),
    "isQuantity": (lambda s: _is_valid(quantity, s), BOOL, (1,)),
    "ip": (_parse_ip, T("net.IP"), (1,)),
    "isIP": (lambda s: _is_valid(_parse_ip, s), BOOL, (1,)),
    "cidr": (_parse_cidr, T("net.CIDR"), (1,)),
    "isCIDR": (lambda s: _is_valid(_parse_cidr, s), BOOL, (1,)),
    "ip.isCanonical": (_ip_is_canonical, BOOL, (1,)),
    "sets.contains": (lambda a, b: _sets("sets.contains", a, b), BOOL, (2,)),
    "jsonpatch.escapeKey": (_escape_key, STRING, (1,)),
    "sets.equivalent": (lambda a, b: _sets("sets.equivalent", a, b), BOOL, (2,)),
    "sets.intersects": (lambda a, b: _sets("sets.intersects", a, b), BOOL, (2,)),
    "math.greatest": (
        lambda *a: _math_extreme("math.greatest", list(a), 1),
        DYN,
        tuple(range(1, 64)),
    ),
    "math.least": (lambda *a: _math_extreme("math.least", list(a), -1), DYN, tuple(range(1, 64))),
    "optional.of": (lambda v: Optional(True, v), T("optional", DYN), (1,)),
    "optional.none": (lambda: NONE, T("optional", DYN), (0,)),
    "optional.ofNonZeroValue": (
        lambda v: NONE if _is_zero(v) else Optional(True, v),
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
NAMESPACES: Final = frozenset(name.split(".")[0] for name in FUNCTIONS if "." in name)
MACROS: Final = frozenset(("all", "exists", "exists_one", "map", "filter"))


def method_fits(name: str, target: T, args: list[T]) -> bool:
    """Whether a method with compile-time signatures (the string methods) fits these types."""
    signatures = _STRING_METHOD_SIGNATURES.get(name)
    if signatures is None or target.kind == "dyn":
        return True
    if target.kind != "string":
        # Methods that exist only on strings cannot apply to another known type.
        return name in ("indexOf", "lastIndexOf", "size") or not known(target)
    return any(
        len(sig) == len(args)
        and all(a.kind in (want, "dyn") for a, want in zip(args, sig, strict=True))
        for sig in signatures
    )
