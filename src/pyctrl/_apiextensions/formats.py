"""String formats of kube-openapi's strfmt registry, as apiextensions keeps them."""

from __future__ import annotations

import datetime
import ipaddress
import re
from typing import Any, Final

from pyctrl._apiextensions.cel.values import parse_quantity

# ---------------------------------------------------------------------------------------
# String formats (kube-openapi strfmt registry, as stripped by apiextensions).
# ---------------------------------------------------------------------------------------

SUPPORTED_FORMATS: Final = frozenset(
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


def is_datetime(s: str) -> bool:
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
    return parse_quantity(s) is not None


def format_ok(fmt: str, s: str) -> bool:
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
        "datetime": is_datetime,
        "quantity": _is_quantity,
    }
    check = checks.get(fmt.replace("-", ""))
    return True if check is None else bool(check(s))


def effective_format(raw: dict[str, Any]) -> str:
    """StripUnsupportedFormatsPostProcess: the format kube-openapi will actually check."""
    fmt = raw.get("format")
    if not isinstance(fmt, str) or not fmt:
        return ""
    typ = "" if raw.get("x-kubernetes-int-or-string") is True else raw.get("type", "")
    if typ in ("", "string"):
        return fmt if fmt.replace("-", "") in SUPPORTED_FORMATS else ""
    if typ == "integer":
        return fmt if fmt in ("int32", "int64") else ""
    if typ == "number":
        return fmt if fmt in ("float", "double") else ""
    return ""
