from __future__ import annotations

import asyncio
import ipaddress
import ssl
import stat
from typing import TYPE_CHECKING

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from pyctrl.envtest import _certs

if TYPE_CHECKING:
    from pathlib import Path


def test_ca_is_a_critical_ca_with_cert_sign_usage() -> None:
    """The generated CA is marked as a CA and may sign certificates."""
    ca = _certs.generate_ca()
    constraints = ca.cert.extensions.get_extension_for_class(x509.BasicConstraints)
    usage = ca.cert.extensions.get_extension_for_class(x509.KeyUsage).value
    assert constraints.critical
    assert constraints.value.ca
    assert usage.key_cert_sign


def test_serving_cert_names_every_host_and_ip() -> None:
    """The serving certificate carries DNS names and IP addresses as alternative names."""
    cert = _certs.issue_serving_cert(_certs.generate_ca(), ["localhost", "127.0.0.1", "::1"])
    san = cert.cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    assert san.get_values_for_type(x509.IPAddress) == [
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("::1"),
    ]
    usage = cert.cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.SERVER_AUTH in usage


def test_serving_cert_validity_is_short_and_capped_by_the_ca() -> None:
    """Leaf certificates never outlive their CA, and the default validity is days, not years."""
    ca = _certs.generate_ca()
    cert = _certs.issue_serving_cert(ca, ["localhost"], validity=_certs.DEFAULT_VALIDITY * 10)
    assert cert.cert.not_valid_after_utc <= ca.cert.not_valid_after_utc
    lifetime = ca.cert.not_valid_after_utc - ca.cert.not_valid_before_utc
    assert lifetime.days <= 8


def test_serving_cert_needs_a_host() -> None:
    """Asking for a serving certificate without hosts is a clear error."""
    with pytest.raises(ValueError, match="at least one host"):
        _certs.issue_serving_cert(_certs.generate_ca(), [])


def test_client_cert_carries_user_and_groups() -> None:
    """Client certificates name the user as CN and the groups as O, as kube-apiserver reads them."""
    cert = _certs.issue_client_cert(_certs.generate_ca(), "alice", ["system:masters"])
    subject = cert.cert.subject
    assert subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value == "alice"
    assert subject.get_attributes_for_oid(x509.NameOID.ORGANIZATION_NAME)[0].value == (
        "system:masters"
    )


def test_write_cert_dir_uses_webhook_layout_with_private_key(tmp_path: Path) -> None:
    """write_cert_dir writes tls.crt, tls.key (owner-only) and ca.crt."""
    cert = _certs.issue_serving_cert(_certs.generate_ca(), ["localhost"])
    written = _certs.write_cert_dir(tmp_path / "certs", cert)
    assert written.cert_file.read_bytes() == cert.cert_pem
    assert written.ca_file.read_bytes() == cert.ca.cert_pem
    assert stat.S_IMODE(written.key_file.stat().st_mode) == 0o600
    assert sorted(p.name for p in written.directory.iterdir()) == ["ca.crt", "tls.crt", "tls.key"]


def test_tokens_are_random_and_long() -> None:
    """Each generated token is different and carries at least 256 bits."""
    tokens = {_certs.generate_token() for _ in range(20)}
    assert len(tokens) == 20
    assert all(len(t) >= 43 for t in tokens)


async def test_server_context_completes_a_verified_tls_handshake() -> None:
    """A client trusting only the CA completes a TLS 1.2+ handshake with the server context."""
    ca = _certs.generate_ca()
    serving = _certs.issue_serving_cert(ca)
    server_context = _certs.server_ssl_context(serving)
    assert server_context.minimum_version == ssl.TLSVersion.TLSv1_2

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"ok")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=server_context)
    async with server:
        port = server.sockets[0].getsockname()[1]
        client_context = ssl.create_default_context(cadata=ca.cert_pem.decode())
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=client_context, server_hostname="localhost"
        )
        assert await reader.read() == b"ok"
        writer.close()
        await writer.wait_closed()
