"""Starting the API server of each mode: embedded, existing cluster, or binaries.

Each ``start_*`` function fills a `Started` as it goes (the server or control plane is
recorded before it starts), so that a start that fails half way can still be undone
by whoever owns the `Started`: the `pyctrl.envtest.Environment`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import structlog
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config

from pyctrl import certs as _certs
from pyctrl.envtest import _binaries, _kubeconfig
from pyctrl.envtest._errors import (
    BinariesNotFoundError,
    ControlPlaneError,
    env_flag,
    env_seconds,
)
from pyctrl.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pyctrl._apiserver.endpoints.server import APIServer

__all__ = ["Started", "start_binaries", "start_embedded", "start_existing"]

logger = structlog.get_logger("pyctrl.envtest")

# Starts of the binaries tried before giving up when a picked port was taken meanwhile.
_PORT_ATTEMPTS = 3


class Started:
    """What starting a mode produced: how to connect, and what to stop later.

    Args:
        tmpdir: The environment's directory for the kubeconfig, CA and binaries' files.
    """

    def __init__(self, tmpdir: Path) -> None:
        self.tmpdir = tmpdir
        self.config: k8s_client.Configuration | None = None
        """The kubernetes_asyncio configuration for the server."""
        self.kubeconfig_path: Path | None = None
        """The kubeconfig for the server."""
        self.token: str | None = None
        """The bearer token generated for the embedded server or the binaries."""
        self.server: APIServer | None = None
        """The embedded API server (set before it starts)."""
        self.control_plane: _binaries.ControlPlane | None = None
        """The binaries' control plane (set before it starts)."""
        self.crd_only = False
        """Whether the server serves custom resources only (``kube-apiextensions``)."""

    def write_kubeconfig(self, server: str, ca_pem: bytes, token: str) -> None:
        """Write a kubeconfig with a bearer token into the directory, as `kubeconfig_path`."""
        path = self.tmpdir / "kubeconfig"
        _kubeconfig.write_kubeconfig(
            path, _kubeconfig.kubeconfig_dict(server, ca_pem=ca_pem, token=token)
        )
        self.kubeconfig_path = path

    def token_configuration(self, host: str, ca_file: Path, token: str) -> None:
        """Set `config` to a bearer-token configuration for ``host``."""
        configuration = k8s_client.Configuration()
        configuration.host = host
        configuration.ssl_ca_cert = str(ca_file)
        # kubernetes_asyncio's loader stores the whole header value under "BearerToken".
        configuration.api_key = {"BearerToken": f"Bearer {token}"}
        self.config = configuration


async def start_embedded(
    started: Started, *, host: str, port: int, history_size: int, garbage_collector: bool
) -> None:
    """Start pyctrl's embedded API server over HTTPS with a fresh CA and bearer token."""
    # Imported here: the server module imports much more than the other modes need.
    from pyctrl._apiserver.endpoints.server import APIServer

    hosts = list(_certs.LOCAL_HOSTS)
    if host not in hosts and host not in ("0.0.0.0", "::"):
        hosts.append(host)
    ca = _certs.generate_ca()
    serving = _certs.issue_serving_cert(ca, hosts)
    token = _certs.generate_token()
    started.token = token
    server = APIServer(
        tokens=[token],
        ssl_context=_certs.server_ssl_context(serving),
        host=host,
        port=port,
        history_size=history_size,
        garbage_collector=garbage_collector,
    )
    started.server = server
    # Admission and conversion webhooks, as kube-apiserver calls them.
    from pyctrl._apiserver.options import install

    install(server)
    await server.start()
    ca_file = started.tmpdir / "ca.crt"
    ca_file.write_bytes(ca.cert_pem)
    started.write_kubeconfig(server.url, ca.cert_pem, token)
    started.token_configuration(server.url, ca_file, token)


def _find_kubeconfigs(explicit: str | os.PathLike[str] | None) -> tuple[str, list[Path]]:
    """Resolve the kubeconfig like kubectl: explicit path, else KUBECONFIG, else ~/.kube/config.

    Returns:
        The setting as given and the files of it that exist.
    """
    if explicit is not None:
        setting = os.fspath(explicit)
    else:
        # Read at call time: kubernetes_asyncio reads KUBECONFIG once, at import.
        setting = os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    paths = [Path(p).expanduser() for p in setting.split(os.pathsep) if p]
    return setting, [p for p in paths if p.exists()]


async def start_existing(
    started: Started, *, kubeconfig: str | os.PathLike[str] | None, context: str | None
) -> None:
    """Connect to the cluster of a kubeconfig (the given one, else as kubectl finds it).

    Raises:
        pyctrl.errors.ConfigError: No kubeconfig exists, or it cannot be loaded.
    """
    # kubernetes_asyncio writes inline certificates to temporary files that it
    # caches process-wide by content (and removes at exit): they must not go into
    # this environment's directory, which is removed at stop.
    config_file, existing = _find_kubeconfigs(kubeconfig)
    if not existing:
        raise ConfigError(
            f"use_existing_cluster is set but no kubeconfig exists at {config_file!r} "
            "(pass kubeconfig=... or set KUBECONFIG)"
        )
    configuration = k8s_client.Configuration()
    try:
        await k8s_config.load_kube_config(
            config_file=os.pathsep.join(str(p) for p in existing),
            context=context,
            client_configuration=configuration,
            persist_config=False,
        )
    except k8s_config.ConfigException as exc:
        raise ConfigError(f"cannot load kubeconfig {config_file!r}: {exc}") from exc
    started.config = configuration
    started.kubeconfig_path = existing[0]


def _find_binaries(directory: str | os.PathLike[str] | None) -> dict[str, Path]:
    if directory is not None:
        where, source = os.fspath(directory), "binary_assets_directory"
    elif os.environ.get("KUBEBUILDER_ASSETS"):
        where, source = os.environ["KUBEBUILDER_ASSETS"], "KUBEBUILDER_ASSETS"
    else:
        raise BinariesNotFoundError(
            "mode='binaries' needs binary_assets_directory or KUBEBUILDER_ASSETS "
            "naming a directory with etcd and kube-apiserver"
        )
    try:
        return _binaries.find_binaries(where, source=source)
    except _binaries.BinariesNotFoundError as exc:
        raise BinariesNotFoundError(str(exc)) from None


async def start_binaries(
    started: Started,
    *,
    directory: str | os.PathLike[str] | None,
    host: str,
    start_timeout: float | None,
    stop_timeout: float | None,
    attach_output: bool | None,
    apiserver_flags: Sequence[str],
) -> None:
    """Run etcd and kube-apiserver (or kube-apiextensions) from a binaries directory.

    Raises:
        BinariesNotFoundError: No directory is given, or it lacks a binary.
        ControlPlaneError: The binaries fail to start.
    """
    binaries = _find_binaries(directory)
    token = _certs.generate_token()
    started.token = token
    if attach_output is None:
        attach_output = env_flag("KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT")
    # The ports are picked free, then bound by the processes: another process may take
    # one in between. Such a start is retried on fresh ports, a bounded number of times.
    for attempt in range(_PORT_ATTEMPTS):
        where = started.tmpdir if attempt == 0 else started.tmpdir / f"retry-{attempt}"
        where.mkdir(mode=0o700, exist_ok=True)
        files = _binaries.prepare_files(where, token, host)
        plane = _binaries.ControlPlane(
            binaries,
            files,
            token=token,
            start_timeout=start_timeout
            if start_timeout is not None
            else env_seconds("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT", 60.0),
            stop_timeout=stop_timeout
            if stop_timeout is not None
            else env_seconds("KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT", 20.0),
            attach_output=attach_output,
            apiserver_flags=apiserver_flags,
        )
        started.control_plane = plane
        try:
            await plane.start()
            break
        except _binaries.ControlPlaneError as exc:
            if "address already in use" in str(exc) and attempt + 1 < _PORT_ATTEMPTS:
                logger.warning("control plane port taken; retrying on other ports")
                continue
            raise ControlPlaneError(str(exc)) from exc
    if not plane.crd_only:
        started.write_kubeconfig(files.apiserver_url, files.ca_file.read_bytes(), token)
        started.token_configuration(files.apiserver_url, files.ca_file, token)
        return
    _client_cert_connection(started, files)


def _client_cert_connection(started: Started, files: _binaries.ControlPlaneFiles) -> None:
    # The CRD-only server authenticates client certificates only.
    started.crd_only = True
    started.token = None
    configuration = k8s_client.Configuration()
    configuration.host = files.apiserver_url
    configuration.ssl_ca_cert = str(files.ca_file)
    configuration.cert_file = str(files.client_cert_file)
    configuration.key_file = str(files.client_key_file)
    started.config = configuration
    path = started.tmpdir / "kubeconfig"
    _kubeconfig.write_kubeconfig(
        path,
        _kubeconfig.kubeconfig_dict(
            files.apiserver_url,
            ca_pem=files.ca_file.read_bytes(),
            client_cert_pem=files.client_cert_file.read_bytes(),
            client_key_pem=files.client_key_file.read_bytes(),
        ),
    )
    started.kubeconfig_path = path
