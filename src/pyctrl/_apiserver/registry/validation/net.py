"""IP and CIDR checks of apimachinery's ``util/validation/ip.go`` (strict validation).

``net.ParseIP`` of Go's netutils is "sloppy": IPv4 octets may carry leading zeros. Strict
validation refuses those, IPv4-mapped IPv6 addresses and non-canonical spellings.
"""

from __future__ import annotations

import ipaddress
import re

from pyctrl._apimachinery.field import Cause, field_invalid

_V4 = re.compile(r"^(\d+)\.(\d+)\.(\d+)\.(\d+)\Z")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def _parse_v4_sloppy(value: str) -> ipaddress.IPv4Address | None:
    found = _V4.match(value)
    if found is None:
        return None
    octets = [int(part) for part in found.groups()]
    if any(o > 255 for o in octets):
        return None
    return ipaddress.IPv4Address(".".join(str(o) for o in octets))


def parse_ip_sloppy(value: str) -> IPAddress | None:
    """``netutils.ParseIPSloppy``: the address, leading zeros of IPv4 octets allowed; or None."""
    v4 = _parse_v4_sloppy(value)
    if v4 is not None:
        return v4
    if ":" not in value:
        return None
    try:
        return ipaddress.IPv6Address(value)
    except ValueError:
        return None


def go_ip_string(ip: IPAddress) -> str:
    """``net.IP.String()``: IPv4-mapped IPv6 addresses print as IPv4."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def _strict_ip_problems(value: str, ip: IPAddress) -> list[str]:
    problems = []
    try:
        ipaddress.ip_address(value)
    except ValueError:
        problems.append("must not have leading 0s")
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        problems.append("must not be an IPv4-mapped IPv6 address")
    return problems


def is_valid_ip(path: str, value: str) -> list[Cause]:
    """``IsValidIP``: a valid IP address in canonical form."""
    ip = parse_ip_sloppy(value)
    if ip is None:
        return [
            field_invalid(
                path, value, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
            )
        ]
    problems = _strict_ip_problems(value, ip)
    if problems:
        return [field_invalid(path, value, p) for p in problems]
    canonical = go_ip_string(ip)
    if value != canonical:
        return [field_invalid(path, value, f'must be in canonical form ("{canonical}")')]
    return []


def is_ipv6(value: str) -> bool:
    """``netutils.IsIPv6String``."""
    ip = parse_ip_sloppy(value)
    return isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is None


def is_valid_cidr(path: str, value: str) -> list[Cause]:
    """``IsValidCIDR``: a subnet ``ip/len`` with no bits beyond the prefix, canonical."""
    address, sep, length = value.partition("/")
    ip = parse_ip_sloppy(address) if sep else None
    bits = 32 if isinstance(ip, ipaddress.IPv4Address) else 128
    if ip is None or not length.isdigit() or int(length) > bits:
        return [
            field_invalid(
                path, value, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
            )
        ]
    network = ipaddress.ip_network(f"{ip}/{int(length)}", strict=False)
    try:
        ipaddress.ip_network(value, strict=False)
        strict_ok = not (len(length) > 1 and length.startswith("0"))
    except ValueError:
        strict_ok = False
    if not strict_ok:
        return [field_invalid(path, value, "must not have leading 0s in IP or prefix length")]
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return [field_invalid(path, value, "must not have an IPv4-mapped IPv6 address")]
    if network.network_address != ip:
        return [field_invalid(path, value, "must not have bits set beyond the prefix length")]
    canonical = f"{go_ip_string(network.network_address)}/{network.prefixlen}"
    if value != canonical:
        return [field_invalid(path, value, f'must be in canonical form ("{canonical}")')]
    return []
