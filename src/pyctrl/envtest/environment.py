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
import contextlib
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self

import orjson
import structlog
import yaml
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config

from pyctrl import certs as _certs
from pyctrl.envtest import _binaries, _kubeconfig
from pyctrl.errors import APIError, ConfigError, NotFoundError, PyctrlError

if TYPE_CHECKING:
    from types import TracebackType

    from pyctrl.envtest.endpoints.server import APIServer
    from pyctrl.envtest.faults import Faults
    from pyctrl.webhook import Server as WebhookServer

__all__ = [
    "BinariesNotFoundError",
    "CRDInstallError",
    "ControlPlaneError",
    "Environment",
    "EnvtestError",
    "Mode",
    "load_crds",
]

logger = structlog.get_logger("pyctrl.envtest")

Mode = Literal["embedded", "existing", "binaries"]

_CRD_API = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
_CRD_EXTENSIONS = (".yaml", ".yml", ".json")
_TRUE = ("1", "t", "true", "y", "yes", "on")
_FALSE = ("", "0", "f", "false", "n", "no", "off")
# Starts of the binaries tried before giving up when a picked port was taken meanwhile.
_PORT_ATTEMPTS = 3


class EnvtestError(PyctrlError):
    """The test environment could not be set up, used or torn down as asked."""


class CRDInstallError(EnvtestError):
    """A CustomResourceDefinition could not be read, installed, or did not become ready."""


class ControlPlaneError(EnvtestError, _binaries.ControlPlaneError):
    """The etcd / kube-apiserver binaries failed to start or stop."""


class BinariesNotFoundError(ControlPlaneError, _binaries.BinariesNotFoundError):
    """The binaries directory lacks ``etcd`` or ``kube-apiserver``."""


def _env_flag(name: str) -> bool:
    value = os.environ.get(name, "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise EnvtestError(f"environment variable {name}={os.environ[name]!r} is not a boolean")


def _env_seconds(name: str, default: float) -> float:
    value = os.environ.get(name)
    if not value:
        return default
    try:
        return float(value.removesuffix("s"))
    except ValueError:
        raise EnvtestError(
            f"environment variable {name}={value!r} is not a number of seconds"
        ) from None


def _crds_from_file(path: Path) -> list[dict[str, Any]]:
    try:
        documents = list(yaml.safe_load_all(path.read_text()))
    except (OSError, yaml.YAMLError) as exc:
        raise CRDInstallError(f"cannot read CRDs from {str(path)!r}: {exc}") from exc
    found: list[dict[str, Any]] = []
    for document in documents:
        if document is None:
            continue
        if not isinstance(document, dict):
            raise CRDInstallError(f"{str(path)!r} holds a YAML document that is not an object")
        if document.get("kind") == "List":
            found.extend(i for i in document.get("items") or () if isinstance(i, dict))
        else:
            found.append(document)
    return [d for d in found if d.get("kind") == "CustomResourceDefinition"]


def load_crds(
    sources: Sequence[Mapping[str, Any] | str | os.PathLike[str]],
    *,
    error_if_missing: bool = True,
) -> list[dict[str, Any]]:
    """Collect CustomResourceDefinitions from dicts, YAML/JSON files and directories.

    Files may hold several YAML documents (or a ``List``); documents of other kinds
    are skipped. Directories are read one level deep, files ending in ``.yaml``,
    ``.yml`` or ``.json``, in name order.

    Args:
        sources: CRD objects, file paths or directory paths.
        error_if_missing: Raise if a path does not exist (otherwise skip it, as
            controller-runtime does by default).

    Returns:
        The CRDs, in order; a later CRD with the same name replaces an earlier one.

    Raises:
        CRDInstallError: If a path is missing (and ``error_if_missing``), a file cannot
            be parsed, or a CRD is not ``apiextensions.k8s.io/v1``.
    """
    crds: dict[str, dict[str, Any]] = {}

    def add(crd: Mapping[str, Any], origin: str) -> None:
        if crd.get("kind") != "CustomResourceDefinition":
            raise CRDInstallError(
                f"{origin} is a {crd.get('kind')!r}, not a CustomResourceDefinition"
            )
        if crd.get("apiVersion") != "apiextensions.k8s.io/v1":
            raise CRDInstallError(
                f"{origin} has apiVersion {crd.get('apiVersion')!r}; only "
                "apiextensions.k8s.io/v1 CustomResourceDefinitions are served"
            )
        name = (crd.get("metadata") or {}).get("name")
        if not name:
            raise CRDInstallError(f"{origin} has no metadata.name")
        crds[name] = orjson.loads(orjson.dumps(crd))

    for source in sources:
        if isinstance(source, Mapping):
            add(source, "a CRD given as a dict")
            continue
        path = Path(source)
        if not path.exists():
            if error_if_missing:
                raise CRDInstallError(f"CRD path {str(path)!r} does not exist")
            logger.warning("skipping missing CRD path", path=str(path))
            continue
        files = (
            sorted(p for p in path.iterdir() if p.is_file() and p.suffix in _CRD_EXTENSIONS)
            if path.is_dir()
            else [path]
        )
        for file in files:
            for crd in _crds_from_file(file):
                add(crd, f"a document in {str(file)!r}")
    return list(crds.values())


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


class _Rest:
    """Raw JSON requests through kubernetes_asyncio (every auth method it supports)."""

    def __init__(self, configuration: k8s_client.Configuration) -> None:
        self._api = k8s_client.ApiClient(configuration)

    async def request(
        self, method: str, path: str, body: Any = None, *, request_timeout: float = 30.0
    ) -> Any:
        response = await self._api.call_api(
            path,
            method,
            header_params={"Accept": "application/json", "Content-Type": "application/json"},
            body=body,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=request_timeout,
        )
        try:
            data = await response.read()
        finally:
            response.release()
        if not 200 <= response.status < 300:
            raise APIError.from_status(response.status, data, response.headers.get("Retry-After"))
        return orjson.loads(data) if data else None

    async def aclose(self) -> None:
        await self._api.close()


def _established(crd: Mapping[str, Any]) -> bool:
    for condition in (crd.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Established":
            return bool(condition.get("status") == "True")
    return False


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
        self._rest: _Rest | None = None
        self._control_plane: _binaries.ControlPlane | None = None
        self._created_crds: list[str] = []
        self._webhook_certs: _certs.CertDir | None = None
        # What install_webhooks changed, to undo at stop on an existing cluster: each
        # configuration's previous state (None: it created it), each CRD's previous
        # spec.conversion (None: it had none).
        self._webhook_previous: dict[tuple[str, str], dict[str, Any] | None] = {}
        self._conversion_previous: dict[str, dict[str, Any] | None] = {}
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
            use_existing = _env_flag("USE_EXISTING_CLUSTER")
        if use_existing:
            return "existing"
        if self._binary_assets_directory is not None or os.environ.get("KUBEBUILDER_ASSETS"):
            return "binaries"
        return "embedded"

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
            if self.mode == "embedded":
                await self._start_embedded()
            elif self.mode == "existing":
                await self._start_existing()
            else:
                await self._start_binaries()
            assert self._config is not None
            self._rest = _Rest(self._config)
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
                await self._uninstall_webhooks()
            if self.mode == "existing" and self._created_crds and self._rest is not None:
                await self._uninstall_crds()
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
                self._webhook_previous = {}
                self._conversion_previous = {}
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
        for crd in loaded:
            name = crd["metadata"]["name"]
            try:
                await rest.request("POST", _CRD_API, crd)
                self._created_crds.append(name)
            except APIError as exc:
                if exc.reason != "AlreadyExists":
                    raise CRDInstallError(f"cannot create CRD {name!r}: {exc}") from exc
                await self._update_crd(rest, crd)
        installed = await self.wait_for_crds(
            [c["metadata"]["name"] for c in loaded],
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
        from pyctrl.webhook import (
            ClientConfig,
            conversion_stanza,
            converted_kinds,
            webhook_configurations,
        )

        rest = self._require_rest()
        if ca_bundle is None:
            if Path(webhook_server.cert_dir) != self.webhook_cert_dir:
                raise EnvtestError(
                    f"install_webhooks needs ca_bundle: the webhook server serves the "
                    f"certificate in {str(webhook_server.cert_dir)!r}, not the one in "
                    f"env.webhook_cert_dir ({str(self.webhook_cert_dir)!r})"
                )
            ca_bundle = self.webhook_ca_bundle
        await webhook_server.wait_started()
        client = ClientConfig(url=f"https://{host}:{webhook_server.port}", ca_bundle=ca_bundle)
        created = []
        configurations = webhook_configurations(
            webhook_server, client, failure_policy=failure_policy, timeout_seconds=timeout_seconds
        )
        for config in configurations:
            base = f"/apis/admissionregistration.k8s.io/v1/{config['kind'].lower()}s"
            name = config["metadata"]["name"]
            try:
                created.append(await rest.request("POST", base, config))
                self._webhook_previous.setdefault((base, name), None)
            except APIError as exc:
                if exc.reason != "AlreadyExists":
                    raise
                live = await rest.request("GET", f"{base}/{name}")
                self._webhook_previous.setdefault((base, name), live)
                replacement = {
                    **config,
                    "metadata": {
                        **config["metadata"],
                        "resourceVersion": live["metadata"]["resourceVersion"],
                    },
                }
                created.append(await rest.request("PUT", f"{base}/{name}", replacement))
        kinds = converted_kinds(webhook_server)
        converting = [
            crd["metadata"]["name"]
            for crd in self.crds
            if (crd["spec"]["group"], crd["spec"]["names"]["kind"]) in kinds
        ]
        for name in converting:
            live = await rest.request("GET", f"{_CRD_API}/{name}")
            self._conversion_previous.setdefault(name, live["spec"].get("conversion"))
            live["spec"]["conversion"] = conversion_stanza(client)
            await rest.request("PUT", f"{_CRD_API}/{name}", live)
        if converting:
            await self.wait_for_crds(converting, max_time=self._crd_install_timeout)
        return created

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
        rest = self._require_rest()
        result: list[dict[str, Any]] = []
        pending = "(none)"
        try:
            async with asyncio.timeout(max_time):
                for name in names:
                    pending = name
                    result.append(await self._wait_for_crd(rest, name))
        except TimeoutError:
            raise CRDInstallError(
                f"CRD {pending!r} was not Established and served within {max_time} s"
            ) from None
        return result

    # -- internals ----------------------------------------------------------

    def _require_rest(self) -> _Rest:
        if self._rest is None:
            raise EnvtestError("the Environment is not started")
        return self._rest

    async def _update_crd(self, rest: _Rest, crd: dict[str, Any]) -> None:
        name = crd["metadata"]["name"]
        try:
            live = await rest.request("GET", f"{_CRD_API}/{name}")
            updated = dict(crd)
            updated["metadata"] = {
                **crd["metadata"],
                "resourceVersion": live["metadata"]["resourceVersion"],
            }
            await rest.request("PUT", f"{_CRD_API}/{name}", updated)
        except APIError as exc:
            raise CRDInstallError(f"cannot update existing CRD {name!r}: {exc}") from exc

    async def _wait_for_crd(self, rest: _Rest, name: str) -> dict[str, Any]:
        # Established alone is not enough on a real server: discovery may lag behind,
        # and clients that resolve kinds through discovery would fail. Poll both
        # (controller-runtime does the same).
        while True:
            try:
                crd = await rest.request("GET", f"{_CRD_API}/{name}")
            except NotFoundError:
                crd = None
            if crd is not None and _established(crd) and await self._served(rest, crd):
                return dict(crd)
            await asyncio.sleep(0.05)

    async def _served(self, rest: _Rest, crd: Mapping[str, Any]) -> bool:
        spec = crd.get("spec") or {}
        plural = (spec.get("names") or {}).get("plural")
        group = spec.get("group")
        for version in spec.get("versions") or ():
            if not version.get("served", True):
                continue
            try:
                listing = await rest.request("GET", f"/apis/{group}/{version['name']}")
            except NotFoundError:
                return False
            names = {r.get("name") for r in (listing or {}).get("resources") or ()}
            if plural not in names:
                return False
        return True

    async def _uninstall_webhooks(self) -> None:
        # Best effort, like the CRD removal: report what could not be undone, go on.
        rest = self._require_rest()
        for name, conversion in self._conversion_previous.items():
            if name in self._created_crds:
                continue  # deleted with the CRD
            try:
                live = await rest.request("GET", f"{_CRD_API}/{name}")
                live["spec"]["conversion"] = conversion or {"strategy": "None"}
                await rest.request("PUT", f"{_CRD_API}/{name}", live)
            except APIError as exc:
                logger.warning("cannot restore the CRD's conversion", crd=name, error=str(exc))
        for (base, name), previous in self._webhook_previous.items():
            try:
                if previous is None:
                    await rest.request("DELETE", f"{base}/{name}")
                    continue
                live = await rest.request("GET", f"{base}/{name}")
                metadata = {k: v for k, v in previous["metadata"].items() if k != "managedFields"}
                metadata["resourceVersion"] = live["metadata"]["resourceVersion"]
                restored = {**previous, "metadata": metadata}
                await rest.request("PUT", f"{base}/{name}", restored)
            except NotFoundError:
                pass
            except APIError as exc:
                logger.warning("cannot remove the webhook configuration", name=name, error=str(exc))
        self._conversion_previous = {}
        self._webhook_previous = {}

    async def _uninstall_crds(self) -> None:
        rest = self._require_rest()
        names = list(reversed(self._created_crds))
        for name in names:
            with contextlib.suppress(NotFoundError):
                await rest.request("DELETE", f"{_CRD_API}/{name}")
        try:
            async with asyncio.timeout(self._crd_install_timeout):
                for name in names:
                    while True:
                        try:
                            await rest.request("GET", f"{_CRD_API}/{name}")
                        except NotFoundError:
                            break
                        await asyncio.sleep(0.05)
        except TimeoutError:
            logger.warning("CRDs still terminating at stop", crds=names)

    def _write_kubeconfig(self, server: str, ca_pem: bytes, token: str) -> None:
        assert self._tmpdir is not None
        path = self._tmpdir / "kubeconfig"
        _kubeconfig.write_kubeconfig(
            path, _kubeconfig.kubeconfig_dict(server, ca_pem=ca_pem, token=token)
        )
        self._kubeconfig_path = path

    def _token_configuration(self, host: str, ca_file: Path, token: str) -> None:
        configuration = k8s_client.Configuration()
        configuration.host = host
        configuration.ssl_ca_cert = str(ca_file)
        # kubernetes_asyncio's loader stores the whole header value under "BearerToken".
        configuration.api_key = {"BearerToken": f"Bearer {token}"}
        self._config = configuration

    async def _start_embedded(self) -> None:
        # Imported here: the server module imports much more than the other modes need.
        from pyctrl.envtest.endpoints.server import APIServer

        assert self._tmpdir is not None
        hosts = list(_certs.LOCAL_HOSTS)
        if self._host not in hosts and self._host not in ("0.0.0.0", "::"):
            hosts.append(self._host)
        ca = _certs.generate_ca()
        serving = _certs.issue_serving_cert(ca, hosts)
        token = _certs.generate_token()
        self.token = token
        server = APIServer(
            tokens=[token],
            ssl_context=_certs.server_ssl_context(serving),
            host=self._host,
            port=self._port,
            history_size=self._history_size,
            garbage_collector=self._garbage_collector,
        )
        self.server = server
        # Admission and conversion webhooks, as kube-apiserver calls them.
        from pyctrl.envtest.webhooks import install

        install(server)
        await server.start()
        ca_file = self._tmpdir / "ca.crt"
        ca_file.write_bytes(ca.cert_pem)
        self._write_kubeconfig(server.url, ca.cert_pem, token)
        self._token_configuration(server.url, ca_file, token)

    async def _start_existing(self) -> None:
        # kubernetes_asyncio writes inline certificates to temporary files that it
        # caches process-wide by content (and removes at exit): they must not go into
        # this environment's directory, which is removed at stop.
        config_file, existing = _find_kubeconfigs(self._kubeconfig)
        if not existing:
            raise ConfigError(
                f"use_existing_cluster is set but no kubeconfig exists at {config_file!r} "
                "(pass kubeconfig=... or set KUBECONFIG)"
            )
        configuration = k8s_client.Configuration()
        try:
            await k8s_config.load_kube_config(
                config_file=os.pathsep.join(str(p) for p in existing),
                context=self._context,
                client_configuration=configuration,
                persist_config=False,
            )
        except k8s_config.ConfigException as exc:
            raise ConfigError(f"cannot load kubeconfig {config_file!r}: {exc}") from exc
        self._config = configuration
        self._kubeconfig_path = existing[0]

    async def _start_binaries(self) -> None:
        assert self._tmpdir is not None
        if self._binary_assets_directory is not None:
            directory, source = os.fspath(self._binary_assets_directory), "binary_assets_directory"
        elif os.environ.get("KUBEBUILDER_ASSETS"):
            directory, source = os.environ["KUBEBUILDER_ASSETS"], "KUBEBUILDER_ASSETS"
        else:
            raise BinariesNotFoundError(
                "mode='binaries' needs binary_assets_directory or KUBEBUILDER_ASSETS "
                "naming a directory with etcd and kube-apiserver"
            )
        try:
            binaries = _binaries.find_binaries(directory, source=source)
        except _binaries.BinariesNotFoundError as exc:
            raise BinariesNotFoundError(str(exc)) from None
        token = _certs.generate_token()
        self.token = token
        attach = self._attach_output
        if attach is None:
            attach = _env_flag("KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT")
        # The ports are picked free, then bound by the processes: another process may take
        # one in between. Such a start is retried on fresh ports, a bounded number of times.
        for attempt in range(_PORT_ATTEMPTS):
            where = self._tmpdir if attempt == 0 else self._tmpdir / f"retry-{attempt}"
            where.mkdir(mode=0o700, exist_ok=True)
            files = _binaries.prepare_files(where, token, self._host)
            plane = _binaries.ControlPlane(
                binaries,
                files,
                token=token,
                start_timeout=self._start_timeout
                if self._start_timeout is not None
                else _env_seconds("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT", 60.0),
                stop_timeout=self._stop_timeout
                if self._stop_timeout is not None
                else _env_seconds("KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT", 20.0),
                attach_output=attach,
                apiserver_flags=self._apiserver_flags,
            )
            self._control_plane = plane
            try:
                await plane.start()
                break
            except _binaries.ControlPlaneError as exc:
                if "address already in use" in str(exc) and attempt + 1 < _PORT_ATTEMPTS:
                    logger.warning("control plane port taken; retrying on other ports")
                    continue
                raise ControlPlaneError(str(exc)) from exc
        if not plane.crd_only:
            self._write_kubeconfig(files.apiserver_url, files.ca_file.read_bytes(), token)
            self._token_configuration(files.apiserver_url, files.ca_file, token)
            return
        # The CRD-only server authenticates client certificates only.
        self.crd_only = True
        self.token = None
        configuration = k8s_client.Configuration()
        configuration.host = files.apiserver_url
        configuration.ssl_ca_cert = str(files.ca_file)
        configuration.cert_file = str(files.client_cert_file)
        configuration.key_file = str(files.client_key_file)
        self._config = configuration
        path = self._tmpdir / "kubeconfig"
        _kubeconfig.write_kubeconfig(
            path,
            _kubeconfig.kubeconfig_dict(
                files.apiserver_url,
                ca_pem=files.ca_file.read_bytes(),
                client_cert_pem=files.client_cert_file.read_bytes(),
                client_key_pem=files.client_key_file.read_bytes(),
            ),
        )
        self._kubeconfig_path = path
