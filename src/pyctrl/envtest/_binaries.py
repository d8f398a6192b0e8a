"""A real control plane (etcd and kube-apiserver) run from local binaries.

This is the third way to get an API server for tests, after the embedded server
and an existing cluster: the same binaries controller-runtime's envtest runs,
found in a directory (``binary_assets_directory`` or ``KUBEBUILDER_ASSETS``, as
``setup-envtest`` lays them out). Each start gets its own temporary directory,
free ports, a fresh CA and serving certificate, a token-file user in
``system:masters``, a client certificate for the same user, and a service-account
signing key pair. Stopping sends SIGTERM, waits a bounded time, then kills.

Instead of ``kube-apiserver`` the directory may hold ``kube-apiextensions``:
apiextensions-apiserver's own server (the CustomResourceDefinition server that
kube-apiserver embeds), run standalone. It serves CRDs and custom resources only (no
built-in kinds, no root discovery, no OpenAPI) and authenticates by client certificate
alone: its delegating authenticator would need a TokenReview API for tokens. Its
delegating clients get a kubeconfig pointing at an address where nothing listens;
they are built but never called, since ``system:masters`` is always authorized and
the admission plugins that would call them are disabled. ``tests/realserver.py``
builds it from Debian's Go sources.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

import aiohttp

from pyctrl import certs as _certs

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "ADMIN_GROUP",
    "ADMIN_USER",
    "APIEXTENSIONS_SERVER",
    "BinariesNotFoundError",
    "ControlPlane",
    "ControlPlaneError",
    "ControlPlaneFiles",
    "apiextensions_args",
    "etcd_args",
    "find_binaries",
    "free_port",
    "kube_apiserver_args",
    "prepare_files",
]

ADMIN_USER = "envtest-admin"
"""The user the generated token authenticates as."""
ADMIN_GROUP = "system:masters"
"""The group of that user: cluster-admin on any RBAC-enabled server."""

_BINARIES = ("etcd", "kube-apiserver")
APIEXTENSIONS_SERVER = "kube-apiextensions"
"""The CRD-only server's binary, used when the directory has no ``kube-apiserver``."""


class ControlPlaneError(Exception):
    """The etcd / kube-apiserver control plane failed to start or stop."""


class BinariesNotFoundError(ControlPlaneError):
    """The binaries directory lacks etcd or kube-apiserver (or is not a directory)."""


def find_binaries(directory: str | os.PathLike[str], *, source: str) -> dict[str, Path]:
    """Locate ``etcd`` and ``kube-apiserver`` (or ``kube-apiextensions``) in a directory.

    Args:
        directory: Where to look.
        source: Where the directory came from, for the error message (for example
            ``"KUBEBUILDER_ASSETS"``).

    Returns:
        The path of each binary, by name: ``etcd``, and ``kube-apiserver`` or, when the
        directory has none, `APIEXTENSIONS_SERVER` (the CRD-only server).

    Raises:
        BinariesNotFoundError: If the directory does not exist or lacks an executable
            ``etcd`` or ``kube-apiserver`` (and ``kube-apiextensions``).
    """
    path = Path(directory)
    hint = (
        " (get them with `setup-envtest use -p path`, or leave binary_assets_directory "
        "and KUBEBUILDER_ASSETS unset to use the embedded API server)"
    )
    if not path.is_dir():
        raise BinariesNotFoundError(f"{source} is {str(path)!r}, which is not a directory{hint}")
    found: dict[str, Path] = {}
    missing: list[str] = []
    for name in _BINARIES:
        candidate = path / name
        crd_only = path / APIEXTENSIONS_SERVER
        if candidate.is_file() and os.access(candidate, os.X_OK):
            found[name] = candidate
        elif name == "kube-apiserver" and crd_only.is_file() and os.access(crd_only, os.X_OK):
            found[APIEXTENSIONS_SERVER] = crd_only
        else:
            missing.append(name)
    if missing:
        raise BinariesNotFoundError(
            f"{source} is {str(path)!r}, which has no executable {' or '.join(missing)}{hint}"
        )
    return found


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port that was free a moment ago on ``host``."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True)
class ControlPlaneFiles:
    """The files and ports one control plane runs with.

    Attributes:
        directory: The control plane's private temporary directory.
        etcd_data_dir: etcd's data directory.
        ca_file: CA certificate (PEM), trusted by clients and for client certs.
        cert_file: kube-apiserver's serving certificate.
        key_file: Its key.
        token_file: kube-apiserver's static token file.
        client_cert_file: The admin's client certificate (PEM, in ``system:masters``).
        client_key_file: Its key.
        delegation_kubeconfig: The CRD-only server's kubeconfig for its delegating
            clients: an address where nothing listens.
        sa_key_file: Service-account signing key (private, PEM).
        sa_pub_file: Service-account verification key (public, PEM).
        etcd_client_port: etcd's client port.
        etcd_peer_port: etcd's peer port.
        apiserver_port: kube-apiserver's secure port.
        host: The address everything listens on.
    """

    directory: Path
    etcd_data_dir: Path
    ca_file: Path
    cert_file: Path
    key_file: Path
    token_file: Path
    client_cert_file: Path
    client_key_file: Path
    delegation_kubeconfig: Path
    sa_key_file: Path
    sa_pub_file: Path
    etcd_client_port: int
    etcd_peer_port: int
    apiserver_port: int
    host: str = "127.0.0.1"

    @property
    def etcd_url(self) -> str:
        """The URL clients reach etcd at."""
        return f"http://{self.host}:{self.etcd_client_port}"

    @property
    def apiserver_url(self) -> str:
        """The URL clients reach kube-apiserver at."""
        return f"https://{self.host}:{self.apiserver_port}"


def etcd_args(files: ControlPlaneFiles) -> list[str]:
    """Return etcd's command-line flags (controller-runtime envtest's set).

    Args:
        files: The control plane's files and ports.

    Returns:
        The flags, without the binary.
    """
    peer = f"http://{files.host}:{files.etcd_peer_port}"
    return [
        f"--data-dir={files.etcd_data_dir}",
        f"--listen-client-urls={files.etcd_url}",
        f"--advertise-client-urls={files.etcd_url}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=default={peer}",
        "--unsafe-no-fsync=true",
    ]


def kube_apiserver_args(files: ControlPlaneFiles, extra: Sequence[str] = ()) -> list[str]:
    """Return kube-apiserver's command-line flags.

    Authentication is by static token (the token file) and client certificates
    signed by the generated CA; authorization is RBAC (the token user is in
    ``system:masters``). Flags in ``extra`` of the form ``--name=value`` replace the
    default flag of the same name; others are appended.

    Args:
        files: The control plane's files and ports.
        extra: Additional or overriding flags.

    Returns:
        The flags, without the binary.
    """
    flags: dict[str, str] = {
        "--advertise-address": files.host,
        "--bind-address": files.host,
        "--secure-port": str(files.apiserver_port),
        "--etcd-servers": files.etcd_url,
        "--tls-cert-file": str(files.cert_file),
        "--tls-private-key-file": str(files.key_file),
        "--client-ca-file": str(files.ca_file),
        "--token-auth-file": str(files.token_file),
        "--authorization-mode": "RBAC",
        "--service-cluster-ip-range": "10.0.0.0/24",
        "--allow-privileged": "true",
        "--disable-admission-plugins": "ServiceAccount",
        "--service-account-key-file": str(files.sa_pub_file),
        "--service-account-signing-key-file": str(files.sa_key_file),
        "--service-account-issuer": f"{files.apiserver_url}/",
        "--cert-dir": str(files.directory / "apiserver-certs"),
    }
    return _merge_flags(flags, extra)


# Admission plugins of the CRD-only server that would call its (unreachable) delegating
# clients, or configuration APIs it does not serve.
_APIEXTENSIONS_DISABLED_ADMISSION = (
    "NamespaceLifecycle",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
)


def apiextensions_args(files: ControlPlaneFiles, extra: Sequence[str] = ()) -> list[str]:
    """Return the CRD-only server's (``kube-apiextensions``) command-line flags.

    Clients authenticate with the admin client certificate; the delegating
    authentication and authorization clients, which it must be able to construct, get a
    kubeconfig for an address where nothing listens (``system:masters`` is authorized
    without asking). Flags in ``extra`` of the form ``--name=value`` replace the default
    flag of the same name; others are appended.

    Args:
        files: The control plane's files and ports.
        extra: Additional or overriding flags.

    Returns:
        The flags, without the binary.
    """
    delegation = str(files.delegation_kubeconfig)
    flags: dict[str, str] = {
        "--bind-address": files.host,
        "--secure-port": str(files.apiserver_port),
        "--etcd-servers": files.etcd_url,
        "--tls-cert-file": str(files.cert_file),
        "--tls-private-key-file": str(files.key_file),
        "--client-ca-file": str(files.ca_file),
        "--cert-dir": str(files.directory / "apiserver-certs"),
        "--authentication-skip-lookup": "true",
        "--authentication-kubeconfig": delegation,
        "--authorization-kubeconfig": delegation,
        "--kubeconfig": delegation,
        "--disable-admission-plugins": ",".join(_APIEXTENSIONS_DISABLED_ADMISSION),
    }
    return _merge_flags(flags, extra)


def _merge_flags(flags: dict[str, str], extra: Sequence[str]) -> list[str]:
    appended: list[str] = []
    for flag in extra:
        name, sep, value = flag.partition("=")
        if sep and name in flags:
            flags[name] = value
        else:
            appended.append(flag)
    return [f"{name}={value}" for name, value in flags.items()] + appended


# Nothing listens on port 1: the CRD-only server's delegating clients are never called.
_DELEGATION_KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: none, user: {token: none}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
"""


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def prepare_files(directory: Path, token: str, host: str = "127.0.0.1") -> ControlPlaneFiles:
    """Generate certificates, keys and the token file of a control plane.

    Args:
        directory: An empty private directory to write into.
        token: The bearer token of the admin user.
        host: The address the control plane listens on.

    Returns:
        The paths and the ports picked for the control plane.
    """
    ca = _certs.generate_ca("pyctrl-envtest-control-plane-ca")
    serving = _certs.issue_serving_cert(ca, ("localhost", "127.0.0.1", "::1", host))
    cert_dir = _certs.write_cert_dir(directory / "pki", serving)
    token_file = directory / "token.csv"
    _write_private(token_file, f'{token},{ADMIN_USER},1,"{ADMIN_GROUP}"\n'.encode())
    client = _certs.issue_client_cert(ca, ADMIN_USER, [ADMIN_GROUP])
    client_cert_file = directory / "pki" / "admin.crt"
    client_key_file = directory / "pki" / "admin.key"
    client_cert_file.write_bytes(client.cert_pem)
    _write_private(client_key_file, client.key_pem)
    delegation_kubeconfig = directory / "delegation.kubeconfig"
    delegation_kubeconfig.write_text(_DELEGATION_KUBECONFIG)
    sa_key, sa_pub = _certs.generate_service_account_key()
    sa_key_file = directory / "pki" / "sa.key"
    sa_pub_file = directory / "pki" / "sa.pub"
    _write_private(sa_key_file, sa_key)
    sa_pub_file.write_bytes(sa_pub)
    etcd_dir = directory / "etcd"
    etcd_dir.mkdir(mode=0o700)
    (directory / "apiserver-certs").mkdir(mode=0o700)
    return ControlPlaneFiles(
        directory=directory,
        etcd_data_dir=etcd_dir,
        ca_file=cert_dir.ca_file,
        cert_file=cert_dir.cert_file,
        key_file=cert_dir.key_file,
        token_file=token_file,
        client_cert_file=client_cert_file,
        client_key_file=client_key_file,
        delegation_kubeconfig=delegation_kubeconfig,
        sa_key_file=sa_key_file,
        sa_pub_file=sa_pub_file,
        etcd_client_port=free_port(host),
        etcd_peer_port=free_port(host),
        apiserver_port=free_port(host),
        host=host,
    )


class _Process:
    """One child process with its log file."""

    def __init__(self, name: str, argv: list[str], log: Path | None) -> None:
        self.name = name
        self.argv = argv
        self.log = log
        self.proc: asyncio.subprocess.Process | None = None
        self._log_file: IO[bytes] | None = None

    async def start(self) -> None:
        if self.log is not None:
            self._log_file = self.log.open("wb")
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=asyncio.subprocess.STDOUT if self._log_file is not None else None,
            start_new_session=True,
        )

    def exited(self) -> bool:
        return self.proc is not None and self.proc.returncode is not None

    def log_tail(self, lines: int = 20) -> str:
        if self.log is None or not self.log.exists():
            return "(output attached to the terminal)"
        text = self.log.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    async def stop(self, grace: float) -> None:
        proc = self.proc
        try:
            if proc is None or proc.returncode is not None:
                return
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                async with asyncio.timeout(grace):
                    await proc.wait()
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        finally:
            if self._log_file is not None:
                self._log_file.close()
                self._log_file = None


class ControlPlane:
    """etcd plus kube-apiserver, started from binaries and stopped cleanly.

    Args:
        binaries: Paths of ``etcd`` and ``kube-apiserver`` or ``kube-apiextensions``
            (from `find_binaries`).
        files: The files and ports prepared by `prepare_files`.
        token: The admin bearer token (also in the token file).
        start_timeout: Seconds to wait for kube-apiserver to report ready.
        stop_timeout: Seconds to wait for each process after SIGTERM before killing.
        attach_output: Send the processes' output to this process's stdout/stderr
            instead of log files in the control plane's directory.
        apiserver_flags: Additional or overriding kube-apiserver flags.

    Attributes:
        crd_only: Whether the API server is the CRD-only ``kube-apiextensions``.
    """

    def __init__(
        self,
        binaries: dict[str, Path],
        files: ControlPlaneFiles,
        *,
        token: str,
        start_timeout: float = 60.0,
        stop_timeout: float = 20.0,
        attach_output: bool = False,
        apiserver_flags: Sequence[str] = (),
    ) -> None:
        self.files = files
        self._token = token
        self._start_timeout = start_timeout
        self._stop_timeout = stop_timeout

        def log(name: str) -> Path | None:
            return None if attach_output else files.directory / f"{name}.log"

        self._etcd = _Process("etcd", [str(binaries["etcd"]), *etcd_args(files)], log("etcd"))
        self.crd_only = "kube-apiserver" not in binaries
        if self.crd_only:
            name = APIEXTENSIONS_SERVER
            argv = [str(binaries[name]), *apiextensions_args(files, apiserver_flags)]
        else:
            name = "kube-apiserver"
            argv = [str(binaries[name]), *kube_apiserver_args(files, apiserver_flags)]
        self._apiserver = _Process(name, argv, log(name))

    async def start(self) -> None:
        """Start etcd, then kube-apiserver, and return once ``/readyz`` answers 200.

        Raises:
            ControlPlaneError: If a process exits early or readiness times out; the
                processes started so far are stopped first.
        """
        try:
            await self._etcd.start()
            await self._apiserver.start()
            await self._wait_ready()
        except BaseException:
            await self.stop()
            raise

    async def _wait_ready(self) -> None:
        context = ssl.create_default_context(cafile=str(self.files.ca_file))
        # Both servers accept the client certificate; only kube-apiserver the token.
        context.load_cert_chain(str(self.files.client_cert_file), str(self.files.client_key_file))
        headers = {} if self.crd_only else {"Authorization": f"Bearer {self._token}"}
        url = f"{self.files.apiserver_url}/readyz"
        if self.crd_only:
            # The informers of its delegating clients never sync (nothing to reach).
            url += "?exclude=informer-sync"
        last_error = "no answer yet"
        try:
            async with (
                asyncio.timeout(self._start_timeout),
                aiohttp.ClientSession(headers=headers) as session,
            ):
                while True:
                    for process in (self._etcd, self._apiserver):
                        if process.exited():
                            raise ControlPlaneError(
                                f"{process.name} exited with code "
                                f"{process.proc.returncode if process.proc else '?'} while "
                                f"starting; last output:\n{process.log_tail()}"
                            )
                    try:
                        async with session.get(
                            url, ssl=context, timeout=aiohttp.ClientTimeout(total=5)
                        ) as response:
                            if response.status == 200:
                                return
                            last_error = f"/readyz answered {response.status}"
                    except (aiohttp.ClientError, TimeoutError) as exc:
                        last_error = f"{type(exc).__name__}: {exc}"
                    # kube-apiserver has no readiness notification; poll it.
                    await asyncio.sleep(0.2)
        except TimeoutError:
            raise ControlPlaneError(
                f"{self._apiserver.name} was not ready within {self._start_timeout} s "
                f"({last_error}); last output:\n{self._apiserver.log_tail()}"
            ) from None

    async def stop(self) -> None:
        """Stop kube-apiserver, then etcd: SIGTERM, bounded wait, then SIGKILL."""
        try:
            await self._apiserver.stop(self._stop_timeout)
        finally:
            await self._etcd.stop(self._stop_timeout)
