"""The test environment: an API server for tests, with CRDs installed, ready to use.

`Environment` is pyctrl's counterpart of controller-runtime's ``envtest.Environment``.
Starting it gives a `kubernetes_asyncio` ``Configuration`` and a kubeconfig file for
an API server with the requested CustomResourceDefinitions installed and
Established; stopping it releases everything it started.

It has three modes, chosen at start:

* **embedded** (the default): pyctrl's in-process API server over real HTTPS,
  with a fresh CA and bearer token. Fast (a start takes tens of milliseconds) and the only
  mode with `Environment.faults`, the fault-injection API.
* **existing cluster**: ``use_existing_cluster=True`` or the environment variable
  ``USE_EXISTING_CLUSTER=true``. Connects through a kubeconfig (the one given, or
  ``KUBECONFIG`` / ``~/.kube/config``); CRDs it installs there are removed at stop.
* **binaries**: ``binary_assets_directory`` or ``KUBEBUILDER_ASSETS`` names a directory
  with ``etcd`` and ``kube-apiserver`` (as ``setup-envtest`` installs them); they are
  started on free ports with generated certificates and stopped at the end. A directory
  with ``kube-apiextensions`` instead of ``kube-apiserver`` runs the real CRD-only API
  server (custom resources only; clients authenticate by client certificate).

Code under test gets the same thing in every mode, so tests written against the
embedded server can be run unchanged against a real cluster.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self

from pyctrl import certs as _certs
from pyctrl.envtest import _binaries, _controlplane, _crd
from pyctrl.envtest._crd import load_crds
from pyctrl.envtest._errors import (
    BinariesNotFoundError,
    ControlPlaneError,
    CRDInstallError,
    EnvtestError,
    env_flag,
)
from pyctrl.envtest._rest import Rest
from pyctrl.envtest._webhook import WebhookInstaller

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence
    from types import TracebackType

    from kubernetes_asyncio import client as k8s_client

    from pyctrl._apiserver.endpoints.server import APIServer
    from pyctrl._apiserver.faults import Faults
    from pyctrl.webhook import Server as WebhookServer

__all__ = [
    "BinariesNotFoundError",
    "CRDInstallError",
    "ControlPlaneError",
    "Environment",
    "EnvironmentFleet",
    "EnvtestError",
    "Mode",
    "load_crds",
]

Mode = Literal["embedded", "existing", "binaries"]


class Environment:
    """An API server for tests, with CRDs installed: embedded, existing or from binaries.

    Use it as an async context manager (or call `start` and `stop`)::

        async with Environment(crds=["config/crd/bases"]) as env:
            async with ApiClient(env.config) as api:
                ...

    Args:
        mode: Force a mode ("embedded", "existing" or "binaries") instead of deciding
            from the other arguments and the environment variables.
        crds: CRDs to install: dicts, YAML/JSON files or directories of them.
        crd_directory_paths: More files or directories of CRDs (controller-runtime's
            ``CRDDirectoryPaths``).
        error_if_crd_path_missing: Fail if a CRD path does not exist (default), rather
            than skip it.
        crd_install_timeout: Seconds to wait for the CRDs to be Established and served.
        use_existing_cluster: Use the cluster of a kubeconfig instead of starting a
            server. None reads ``USE_EXISTING_CLUSTER``.
        kubeconfig: The kubeconfig of the existing cluster (default: ``KUBECONFIG``,
            then ``~/.kube/config``).
        context: The kubeconfig context to use (default: its current context).
        binary_assets_directory: Directory with ``etcd`` and ``kube-apiserver`` to run
            instead of the embedded server. None reads ``KUBEBUILDER_ASSETS``.
        control_plane_start_timeout: Seconds to wait for the binaries to be ready
            (default ``KUBEBUILDER_CONTROLPLANE_START_TIMEOUT`` or 60).
        control_plane_stop_timeout: Seconds to wait for each binary after SIGTERM
            (default ``KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT`` or 20).
        attach_control_plane_output: Show the binaries' output instead of logging it to
            files (default ``KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT``).
        kube_apiserver_flags: Extra or overriding kube-apiserver flags (binaries mode).
        garbage_collector: Run the embedded server's owner-reference garbage collector.
        history_size: How many watch events the embedded server keeps for resuming
            watches.
        host: Address the embedded server listens on.
        port: Port of the embedded server (0 picks a free one).
    """

    def __init__(
        self,
        *,
        mode: Mode | None = None,
        crds: Sequence[Mapping[str, Any] | str | os.PathLike[str]] = (),
        crd_directory_paths: Sequence[str | os.PathLike[str]] = (),
        error_if_crd_path_missing: bool = True,
        crd_install_timeout: float = 30.0,
        use_existing_cluster: bool | None = None,
        kubeconfig: str | os.PathLike[str] | None = None,
        context: str | None = None,
        binary_assets_directory: str | os.PathLike[str] | None = None,
        control_plane_start_timeout: float | None = None,
        control_plane_stop_timeout: float | None = None,
        attach_control_plane_output: bool | None = None,
        kube_apiserver_flags: Sequence[str] = (),
        garbage_collector: bool = True,
        history_size: int = 10_000,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        if isinstance(crds, str | os.PathLike) or isinstance(
            crd_directory_paths, str | os.PathLike
        ):
            raise TypeError("crds and crd_directory_paths take a sequence of paths, not one path")
        if mode is not None and mode not in ("embedded", "existing", "binaries"):
            raise ValueError(f"mode must be 'embedded', 'existing' or 'binaries', not {mode!r}")
        self._mode = mode
        self._crd_sources: list[Mapping[str, Any] | str | os.PathLike[str]] = [
            *crds,
            *crd_directory_paths,
        ]
        self._error_if_crd_path_missing = error_if_crd_path_missing
        self._crd_install_timeout = crd_install_timeout
        self._use_existing_cluster = use_existing_cluster
        self._kubeconfig = kubeconfig
        self._context = context
        self._binary_assets_directory = binary_assets_directory
        self._start_timeout = control_plane_start_timeout
        self._stop_timeout = control_plane_stop_timeout
        self._attach_output = attach_control_plane_output
        self._apiserver_flags = tuple(kube_apiserver_flags)
        self._garbage_collector = garbage_collector
        self._history_size = history_size
        self._host = host
        self._port = port

        self.server: APIServer | None = None
        """The embedded API server (None in the other modes or before start)."""
        self.mode: Mode | None = None
        """The mode chosen at start: "embedded", "existing" or "binaries"."""
        self.token: str | None = None
        """The bearer token generated for the embedded server or the binaries."""
        self.crds: list[dict[str, Any]] = []
        """The CRDs installed at start, as the server returned them once Established."""
        self.crd_only = False
        """Whether the server serves custom resources only (``kube-apiextensions``)."""

        self._config: k8s_client.Configuration | None = None
        self._kubeconfig_path: Path | None = None
        self._tmpdir: Path | None = None
        self._rest: Rest | None = None
        self._control_plane: _binaries.ControlPlane | None = None
        self._created_crds: list[str] = []
        self._webhook_certs: _certs.CertDir | None = None
        # What install_webhooks changed, to undo at stop on an existing cluster.
        self._webhooks = WebhookInstaller()
        self._started = False

    # -- public surface -----------------------------------------------------

    @property
    def config(self) -> k8s_client.Configuration:
        """A kubernetes_asyncio ``Configuration`` for the server: host, CA, credentials.

        Raises:
            EnvtestError: Before `start`.
        """
        if self._config is None:
            raise EnvtestError("the Environment is not started: no configuration yet")
        return self._config

    @property
    def kubeconfig_path(self) -> Path:
        """A kubeconfig file for the server (for kubectl or subprocesses).

        In the embedded and binaries modes it is written at start and removed at stop;
        in the existing-cluster mode it is the kubeconfig that was loaded.

        Raises:
            EnvtestError: Before `start`.
        """
        if self._kubeconfig_path is None:
            raise EnvtestError("the Environment is not started: no kubeconfig yet")
        return self._kubeconfig_path

    @property
    def faults(self) -> Faults:
        """The embedded server's fault-injection API (see `pyctrl.envtest.Faults`).

        Raises:
            EnvtestError: Outside the embedded mode, or before `start`.
        """
        if self.server is None:
            where = f"the {self.mode} mode" if self.mode else "an Environment that is not started"
            raise EnvtestError(
                f"faults are only available with the embedded API server, not in {where}"
            )
        return self.server.faults

    def resolve_mode(self) -> Mode:
        """Decide the mode from the arguments and the environment variables.

        Returns:
            The ``mode`` argument if given; otherwise "existing" if an existing cluster is
            asked for, else "binaries" if a binaries directory is given, else "embedded".
        """
        if self._mode is not None:
            return self._mode
        use_existing = self._use_existing_cluster
        if use_existing is None:
            use_existing = env_flag("USE_EXISTING_CLUSTER")
        if use_existing:
            return "existing"
        if self._binary_assets_directory is not None or os.environ.get("KUBEBUILDER_ASSETS"):
            return "binaries"
        return "embedded"

    @staticmethod
    def fleet(
        n: int = 3, *, names: Sequence[str] | None = None, **options: Any
    ) -> EnvironmentFleet:
        """N embedded API servers for a multi-cluster test, each with its own data and faults.

        ``async with Environment.fleet(3) as fleet:`` starts them together; ``fleet["b"]``
        (or ``fleet[1]``) is one `Environment`. ``names`` defaults to ``a``, ``b``, ``c``...;
        ``options`` go to each `Environment` (``crds=...``). They are embedded servers
        unless ``mode`` says otherwise: a fleet of one existing cluster would not be one.
        """
        if names is None:
            if not 1 <= n <= 26:
                raise ValueError(f"a fleet has 1 to 26 clusters unless named, got {n}")
            names = [chr(ord("a") + i) for i in range(n)]
        elif len(names) != n or len(set(names)) != n or not all(names):
            raise ValueError(f"a fleet of {n} needs {n} distinct non-empty names, got {names!r}")
        options.setdefault("mode", "embedded")
        return EnvironmentFleet({name: Environment(**options) for name in names})

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        """Start (or connect to) the API server and install the CRDs.

        Returns once every CRD is Established and served. On failure everything
        started so far is stopped again before the error propagates.

        Raises:
            EnvtestError: If already started, or on a bad configuration; subclasses
                say more (`CRDInstallError`, `ControlPlaneError`,
                `BinariesNotFoundError`).
            pyctrl.errors.ConfigError: If the existing cluster's kubeconfig is missing
                or broken.
        """
        if self._started:
            raise EnvtestError("the Environment is already started")
        crds = load_crds(self._crd_sources, error_if_missing=self._error_if_crd_path_missing)
        mode = self.resolve_mode()
        self._started = True
        self.mode = mode
        self.crds = []
        try:
            self._tmpdir = Path(tempfile.mkdtemp(prefix="pyctrl-envtest-"))
            await self._start_mode(self._tmpdir)
            assert self._config is not None
            self._rest = Rest(self._config)
            if crds:
                await self.install_crds(crds)
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        """Remove the CRDs installed in an existing cluster, stop what was started.

        Safe to call more than once and after a failed `start`.
        """
        if not self._started:
            return
        try:
            if self.mode == "existing" and self._rest is not None:
                await self._uninstall()
        finally:
            try:
                if self._rest is not None:
                    await self._rest.aclose()
                if self.server is not None:
                    await self.server.aclose()
                if self._control_plane is not None:
                    await self._control_plane.stop()
            finally:
                if self._tmpdir is not None:
                    shutil.rmtree(self._tmpdir, ignore_errors=True)
                self._rest = None
                self.server = None
                self._control_plane = None
                self._tmpdir = None
                self._config = None
                self._kubeconfig_path = None
                self._created_crds = []
                self._webhook_certs = None
                self._webhooks = WebhookInstaller()
                self.token = None
                self.crd_only = False
                self._started = False

    async def install_crds(
        self,
        crds: Sequence[Mapping[str, Any] | str | os.PathLike[str]],
        *,
        max_time: float | None = None,
    ) -> list[dict[str, Any]]:
        """Create (or update) CRDs and wait until each is Established and served.

        Args:
            crds: CRD objects, files or directories.
            max_time: Seconds to wait for all of them (default: ``crd_install_timeout``).

        Returns:
            The CRDs as the server returned them once Established.

        Raises:
            CRDInstallError: If a CRD cannot be read or created, or is not ready in time.
        """
        rest = self._require_rest()
        loaded = load_crds(crds, error_if_missing=self._error_if_crd_path_missing)
        installed = await _crd.install_crds(
            rest,
            loaded,
            created=self._created_crds,
            max_time=self._crd_install_timeout if max_time is None else max_time,
        )
        self.crds.extend(installed)
        return installed

    def add_user(self, name: str, groups: Sequence[str] = ()) -> str:
        """Add a user to the embedded API server; return its bearer token (``AddUser``).

        The user is in ``groups`` and ``system:authenticated``; its requests are
        authorized by the RBAC objects in the server (``system:masters`` allows all), and
        the server's TokenReview and SubjectAccessReview answer for it.

        Raises:
            EnvtestError: Not started, or not the embedded server (a real API server's
                users come from its own authenticators).
        """
        if self.server is None:
            raise EnvtestError("add_user needs the started embedded API server")
        return self.server.add_user(name, groups)

    @property
    def webhook_cert_dir(self) -> Path:
        """A directory with a serving certificate for a local webhook server.

        Holds ``tls.crt``, ``tls.key`` and ``ca.crt``: a certificate for ``localhost``,
        ``127.0.0.1`` and ``::1`` signed by a CA generated for this environment (made on
        first use, removed at stop), as controller-runtime's ``WebhookInstallOptions``
        prepares ``LocalServingCertDir``. Give it to the webhook server
        (``Server(cert_dir=env.webhook_cert_dir)``); `install_webhooks` then trusts it
        without a ``ca_bundle``.

        Raises:
            EnvtestError: Before `start`.
        """
        return self._webhook_cert_files().directory

    @property
    def webhook_ca_bundle(self) -> bytes:
        """PEM of the CA that signed the certificate in `webhook_cert_dir`.

        Raises:
            EnvtestError: Before `start`.
        """
        return self._webhook_cert_files().ca_file.read_bytes()

    def _webhook_cert_files(self) -> _certs.CertDir:
        if self._tmpdir is None:
            raise EnvtestError("the Environment is not started: no webhook certificates yet")
        if self._webhook_certs is None:
            ca = _certs.generate_ca("pyctrl-envtest-webhook-ca")
            self._webhook_certs = _certs.write_cert_dir(
                self._tmpdir / "webhook-certs", _certs.issue_serving_cert(ca)
            )
        return self._webhook_certs

    async def install_webhooks(
        self,
        webhook_server: WebhookServer,
        *,
        ca_bundle: bytes | None = None,
        host: str = "127.0.0.1",
        failure_policy: str = "Fail",
        timeout_seconds: int = 10,
    ) -> list[dict[str, Any]]:
        """Point the API server at a running local webhook server (``WebhookInstallOptions``).

        Creates (or replaces) the Mutating- and ValidatingWebhookConfigurations for what
        ``webhook_server`` serves, with ``https://host:port`` URLs and the CA bundle, and
        sets the conversion webhook on the installed CRDs whose conversion it serves. Works
        in every mode, as it only writes API objects; on an existing cluster `stop` deletes
        the configurations it created, restores those it replaced, and puts back the
        CRDs' previous ``spec.conversion``.

        Args:
            webhook_server: A `pyctrl.webhook.Server` (the Manager's ``webhook_server``).
            ca_bundle: PEM of the CA that signed the webhook server's certificate; by
                default the CA of `webhook_cert_dir`, which the server must then serve.
            host: The address the API server reaches the webhook server at.
            failure_policy: ``Fail`` or ``Ignore``.
            timeout_seconds: Per-call timeout the API server applies.

        Returns:
            The configuration objects as created.

        Raises:
            EnvtestError: No ``ca_bundle`` while the server's certificate directory is
                not `webhook_cert_dir` (the API server could not trust it).
        """
        rest = self._require_rest()
        if ca_bundle is None:
            if Path(webhook_server.cert_dir) != self.webhook_cert_dir:
                raise EnvtestError(
                    f"install_webhooks needs ca_bundle: the webhook server serves the "
                    f"certificate in {str(webhook_server.cert_dir)!r}, not the one in "
                    f"env.webhook_cert_dir ({str(self.webhook_cert_dir)!r})"
                )
            ca_bundle = self.webhook_ca_bundle
        return await self._webhooks.install(
            rest,
            webhook_server,
            ca_bundle=ca_bundle,
            host=host,
            failure_policy=failure_policy,
            timeout_seconds=timeout_seconds,
            crds=self.crds,
            crd_timeout=self._crd_install_timeout,
        )

    async def wait_for_crds(self, names: Sequence[str], *, max_time: float) -> list[dict[str, Any]]:
        """Wait until the named CRDs are Established and their versions are discoverable.

        Args:
            names: CRD names (``<plural>.<group>``).
            max_time: Seconds to wait for all of them.

        Returns:
            The CRDs as last read.

        Raises:
            CRDInstallError: If one is not ready in time (the message names it).
        """
        return await _crd.wait_for_crds(self._require_rest(), names, max_time=max_time)

    # -- internals ----------------------------------------------------------

    def _require_rest(self) -> Rest:
        if self._rest is None:
            raise EnvtestError("the Environment is not started")
        return self._rest

    async def _start_mode(self, tmpdir: Path) -> None:
        started = _controlplane.Started(tmpdir)
        try:
            if self.mode == "embedded":
                await _controlplane.start_embedded(
                    started,
                    host=self._host,
                    port=self._port,
                    history_size=self._history_size,
                    garbage_collector=self._garbage_collector,
                )
            elif self.mode == "existing":
                await _controlplane.start_existing(
                    started, kubeconfig=self._kubeconfig, context=self._context
                )
            else:
                await _controlplane.start_binaries(
                    started,
                    directory=self._binary_assets_directory,
                    host=self._host,
                    start_timeout=self._start_timeout,
                    stop_timeout=self._stop_timeout,
                    attach_output=self._attach_output,
                    apiserver_flags=self._apiserver_flags,
                )
        finally:
            # Also after a failed start: stop() then stops what did start.
            self.server = started.server
            self._control_plane = started.control_plane
            self.token = started.token
            self.crd_only = started.crd_only
            self._config = started.config
            self._kubeconfig_path = started.kubeconfig_path

    async def _uninstall(self) -> None:
        # Best effort, on an existing cluster only: report what could not be undone, go on.
        rest = self._require_rest()
        await self._webhooks.uninstall(rest, self._created_crds)
        if self._created_crds:
            await _crd.uninstall_crds(rest, self._created_crds, max_time=self._crd_install_timeout)


class EnvironmentFleet:
    """Named test environments started and stopped together (`Environment.fleet`).

    Index it by name (``fleet["b"]``) or position (``fleet[1]``); iterate for the names.
    """

    def __init__(self, environments: Mapping[str, Environment]) -> None:
        self.environments = dict(environments)

    def __getitem__(self, key: str | int) -> Environment:
        if isinstance(key, int):
            return list(self.environments.values())[key]
        return self.environments[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.environments)

    def __len__(self) -> int:
        return len(self.environments)

    async def start(self) -> None:
        """Start every environment at once; on a failure, stop those started and raise."""
        try:
            async with asyncio.TaskGroup() as group:
                for env in self.environments.values():
                    group.create_task(env.start())
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        """Stop every environment that is started."""
        await asyncio.gather(
            *(env.stop() for env in self.environments.values()),
            return_exceptions=True,
        )

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
