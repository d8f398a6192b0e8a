"""Certificates for local development and tests: a CA, serving certificates, tokens.

``pyctrl.envtest`` uses these for its API server; webhook developers use them to serve
webhooks locally (in a cluster, cert-manager issues the certificates instead)::

    ca = generate_ca()
    write_cert_dir("/tmp/k8s-webhook-server/serving-certs", issue_serving_cert(ca))
    # ... and give ca.cert_pem to the webhook configurations as their caBundle

Originally: throwaway certificates and credentials for test API servers.

A test API server speaks real TLS, so every start needs a certificate authority, a
serving certificate signed by it, and a bearer token. Nothing here is meant to
outlive a test run: the CA is generated fresh, certificates are valid for a short
time, and keys never leave the process except into the temporary directory of the
environment that asked for them.

The helpers are deliberately generic (a CA, a serving certificate for a list of
host names and IP addresses, a directory in the ``tls.crt`` / ``tls.key`` /
``ca.crt`` layout that webhook servers expect) so that the webhook test harness
can use them too.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import os
import secrets
import ssl
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = [
    "DEFAULT_VALIDITY",
    "LOCAL_HOSTS",
    "CertDir",
    "CertificateAuthority",
    "IssuedCertificate",
    "generate_ca",
    "generate_service_account_key",
    "generate_token",
    "issue_client_cert",
    "issue_serving_cert",
    "server_ssl_context",
    "write_cert_dir",
    "write_cert_pems",
]

DEFAULT_VALIDITY = datetime.timedelta(days=7)
"""How long generated certificates stay valid: long enough for a long test session
or a developer's `python -m pyctrl.envtest`, short enough not to matter if leaked."""

LOCAL_HOSTS: tuple[str, ...] = ("localhost", "127.0.0.1", "::1")
"""The names a local test server is reached by."""

# Certificates start an hour in the past so a client whose clock lags a little
# behind ours does not reject them as "not yet valid".
_BACKDATE = datetime.timedelta(hours=1)

PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


def _pem_key(key: PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


@dataclass(frozen=True)
class CertificateAuthority:
    """A self-signed certificate authority that can sign further certificates.

    Attributes:
        cert: The CA certificate.
        key: The CA's private key.
    """

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey
    cert_pem: bytes = field(init=False, repr=False)
    key_pem: bytes = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "cert_pem", self.cert.public_bytes(serialization.Encoding.PEM))
        object.__setattr__(self, "key_pem", _pem_key(self.key))


@dataclass(frozen=True)
class IssuedCertificate:
    """A leaf certificate, its private key and the CA that signed it.

    Attributes:
        cert: The leaf certificate.
        key: Its private key.
        ca: The authority that signed it.
    """

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey
    ca: CertificateAuthority
    cert_pem: bytes = field(init=False, repr=False)
    key_pem: bytes = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "cert_pem", self.cert.public_bytes(serialization.Encoding.PEM))
        object.__setattr__(self, "key_pem", _pem_key(self.key))


@dataclass(frozen=True)
class CertDir:
    """Paths of a certificate directory written by `write_cert_dir`.

    Attributes:
        directory: The directory.
        cert_file: The serving certificate (PEM).
        key_file: Its private key (PEM, readable by the owner only).
        ca_file: The CA certificate that signed it (PEM).
    """

    directory: Path
    cert_file: Path
    key_file: Path
    ca_file: Path


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _window(
    now: datetime.datetime | None, validity: datetime.timedelta
) -> tuple[datetime.datetime, datetime.datetime]:
    """Validity from ``now`` (default: the real time), never starting after the real time.

    A ``now`` ahead of the real time (a test's clock advanced by days) moves the expiry
    only: the certificate stays valid for clients that check it against the real time.
    """
    real = _now()
    start = now or real
    return min(start, real) - _BACKDATE, start + validity


def generate_ca(
    common_name: str = "pyctrl-envtest-ca",
    *,
    validity: datetime.timedelta = DEFAULT_VALIDITY,
    now: datetime.datetime | None = None,
) -> CertificateAuthority:
    """Generate a fresh self-signed CA with an EC P-256 key.

    Args:
        common_name: The subject common name of the CA.
        validity: How long the CA stays valid from ``now``.
        now: When validity counts from (default: the real time); a time ahead of the
            real time moves the expiry only.

    Returns:
        The new certificate authority.
    """
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "pyctrl envtest"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )
    not_before, not_after = _window(now, validity)
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ski, critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False
        )
        .sign(key, hashes.SHA256())
    )
    return CertificateAuthority(cert=cert, key=key)


def _san(hosts: Iterable[str]) -> x509.SubjectAlternativeName:
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return x509.SubjectAlternativeName(names)


def _issue(
    ca: CertificateAuthority,
    subject: x509.Name,
    *,
    usage: x509.ObjectIdentifier,
    hosts: Sequence[str],
    validity: datetime.timedelta,
    now: datetime.datetime | None = None,
) -> IssuedCertificate:
    key = ec.generate_private_key(ec.SECP256R1())
    not_before, not_after = _window(now, validity)
    ca_ski = ca.cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(min(not_after, ca.cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False
        )
    )
    if hosts:
        builder = builder.add_extension(_san(hosts), critical=False)
    cert = builder.sign(ca.key, hashes.SHA256())
    return IssuedCertificate(cert=cert, key=key, ca=ca)


def issue_serving_cert(
    ca: CertificateAuthority,
    hosts: Sequence[str] = LOCAL_HOSTS,
    *,
    validity: datetime.timedelta = DEFAULT_VALIDITY,
    now: datetime.datetime | None = None,
) -> IssuedCertificate:
    """Issue a TLS server certificate for the given host names and IP addresses.

    Args:
        ca: The authority that signs the certificate.
        hosts: DNS names and IP addresses (v4 or v6) the server is reached by; each
            becomes a subject alternative name, the first is also the common name.
        validity: How long the certificate stays valid (capped by the CA's validity).
        now: When validity counts from (default: the real time); see `generate_ca`.

    Returns:
        The certificate and its key.

    Raises:
        ValueError: If no host is given.
    """
    if not hosts:
        raise ValueError("issue_serving_cert needs at least one host name or IP address")
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])])
    return _issue(
        ca,
        subject,
        usage=ExtendedKeyUsageOID.SERVER_AUTH,
        hosts=hosts,
        validity=validity,
        now=now,
    )


def issue_client_cert(
    ca: CertificateAuthority,
    user: str,
    groups: Sequence[str] = (),
    *,
    validity: datetime.timedelta = DEFAULT_VALIDITY,
) -> IssuedCertificate:
    """Issue a TLS client certificate as kube-apiserver reads it (CN user, O groups).

    Args:
        ca: The authority that signs the certificate.
        user: The user name (subject common name).
        groups: The groups (subject organizations).
        validity: How long the certificate stays valid (capped by the CA's validity).

    Returns:
        The certificate and its key.
    """
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, group) for group in groups]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, user))
    return _issue(
        ca,
        x509.Name(attributes),
        usage=ExtendedKeyUsageOID.CLIENT_AUTH,
        hosts=(),
        validity=validity,
    )


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _write_atomic(path: Path, data: bytes, mode: int) -> None:
    # A reader (a webhook server's certificate watcher) sees the old file or the new one,
    # never a half-written one: write beside it, then rename over it.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_cert_dir(
    directory: str | os.PathLike[str],
    cert: IssuedCertificate,
    *,
    cert_name: str = "tls.crt",
    key_name: str = "tls.key",
    ca_name: str = "ca.crt",
) -> CertDir:
    """Write a certificate, its key and its CA into a directory.

    The default file names are the ones controller-runtime's webhook server and
    Kubernetes TLS secrets use. The directory is created if missing; the key file is
    readable by the owner only. Each file is replaced atomically (written beside it,
    then renamed), so a process watching the directory never reads a partial file; the
    certificate and the key are still two files, and a watcher has to cope with seeing
    one replaced before the other (`pyctrl.webhook.CertWatcher` does).

    Args:
        directory: Where to write.
        cert: The certificate to write.
        cert_name: File name of the certificate.
        key_name: File name of the private key.
        ca_name: File name of the CA certificate.

    Returns:
        The paths written.
    """
    return write_cert_pems(
        directory,
        cert_pem=cert.cert_pem,
        key_pem=cert.key_pem,
        ca_pem=cert.ca.cert_pem,
        cert_name=cert_name,
        key_name=key_name,
        ca_name=ca_name,
    )


def write_cert_pems(
    directory: str | os.PathLike[str],
    *,
    cert_pem: bytes,
    key_pem: bytes,
    ca_pem: bytes,
    cert_name: str = "tls.crt",
    key_name: str = "tls.key",
    ca_name: str = "ca.crt",
) -> CertDir:
    """`write_cert_dir` for PEM bytes (a Secret's ``tls.crt``, ``tls.key``, ``ca.crt``).

    The key is written first, then the certificate: a watcher that sees the new
    certificate sees its key already.
    """
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    result = CertDir(
        directory=path,
        cert_file=path / cert_name,
        key_file=path / key_name,
        ca_file=path / ca_name,
    )
    _write_atomic(result.key_file, key_pem, 0o600)
    _write_atomic(result.cert_file, cert_pem, 0o644)
    _write_atomic(result.ca_file, ca_pem, 0o644)
    return result


def server_ssl_context(cert: IssuedCertificate) -> ssl.SSLContext:
    """Build a server-side SSL context (TLS 1.2 or newer) serving ``cert``.

    Args:
        cert: The serving certificate and key.

    Returns:
        A context ready for `aiohttp.web.TCPSite` or `asyncio.start_server`.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    # The ssl module loads keys from files only; keep them in a private directory
    # for the instant it takes to load them.
    with tempfile.TemporaryDirectory(prefix="pyctrl-tls-") as tmp:
        cert_file = Path(tmp, "tls.crt")
        key_file = Path(tmp, "tls.key")
        cert_file.write_bytes(cert.cert_pem)
        _write_private(key_file, cert.key_pem)
        context.load_cert_chain(cert_file, key_file)
    return context


def generate_token() -> str:
    """Return a random bearer token (256 bits, URL-safe characters)."""
    return secrets.token_urlsafe(32)


def generate_service_account_key() -> tuple[bytes, bytes]:
    """Generate an RSA 2048 key pair for signing service-account tokens.

    Returns:
        The private key and the public key, both PEM.
    """
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return _pem_key(key), public
