"""Where the client finds the API server, and how it proves who it is.

A `Config` is everything needed to talk to one API server: its URL, the CA that signed
its certificate, client certificates, a proxy, and *credentials* that may change while
the process runs (rotating service-account tokens, tokens from exec plugins that
expire). It wraps a kubernetes-asyncio ``Configuration``, which pyctrl uses only for
loading; pyctrl's own HTTP client (`pyctrl.client.RESTClient`) asks the `Config` for
the ``Authorization`` header on every request, so a rotated token is picked up at once.

`get_config` resolves the configuration the way controller-runtime's
``config.GetConfig`` does, first match wins:

1. an explicit kubeconfig path (``get_config(kubeconfig=...)``);
2. the ``KUBECONFIG`` environment variable, a list of files joined with ``os.pathsep``
   and merged the way kubectl merges them (the first file to define a cluster, user or
   context, or the current context, wins; missing files are skipped);
3. the in-cluster service account, when ``KUBERNETES_SERVICE_HOST`` and
   ``KUBERNETES_SERVICE_PORT`` are set (the token file is re-read as the kubelet
   rotates it);
4. ``~/.kube/config``.

``context=`` picks a kubeconfig context other than the current one. Authentication
is what kubernetes-asyncio supports: client certificates, bearer tokens (``token`` or
a ``tokenFile`` re-read as it changes), exec plugins (re-run when their credential
expires, or when the server answers 401), OIDC and GCP auth providers (whose tokens
pyctrl renews itself from the kubeconfig's provider settings, as client-go's plugins
do: at the issuer's token endpoint, or by running gcloud), basic auth.
Anything missing or malformed raises one `pyctrl.errors.ConfigError` that names the
file and what is wrong with it. Refreshed credentials are never written back to a
kubeconfig.

Credentials are refreshed lazily, when a request needs them. `Config.refresher` gives a
runnable that refreshes them ahead of expiry too; a `pyctrl.manager.Manager` runs one.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as _dt
import json
import os
import re
import shlex
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import aiohttp
import yaml

from pyctrl._kubernetes import Configuration
from pyctrl.clock import Clock, RealClock
from pyctrl.errors import ConfigError
from pyctrl.log import get_logger

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "SERVICE_ACCOUNT_DIR",
    "Config",
    "CredentialRefresher",
    "Credentials",
    "get_config",
    "load_in_cluster_config",
    "load_kubeconfig",
]

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
"""Where Kubernetes mounts a pod's service-account token, CA and namespace."""

_log = get_logger("pyctrl.config")

# client-go re-reads token files at most once a minute (transport.NewCachedFileTokenSource).
_TOKEN_FILE_PERIOD = 60.0
# Refresh expiring credentials this long before they expire, as kubernetes-asyncio does.
_EXPIRY_SKEW = _dt.timedelta(minutes=5)
_MIN_REFRESH_WAIT = 1.0
# Bound on each request to an OIDC issuer while refreshing a token.
_OIDC_TIMEOUT = 30.0
# The user fields kubernetes-asyncio's loader still reads for a user whose credentials
# come from an auth provider: the client certificate.
_CLIENT_CERT_KEYS = (
    "client-certificate",
    "client-certificate-data",
    "client-key",
    "client-key-data",
)


@runtime_checkable
class Credentials(Protocol):
    """How a `Config` authenticates requests (an extension point).

    Implementations hand out the current ``Authorization`` header value and can renew it.
    """

    async def authorization(self) -> str | None:
        """The ``Authorization`` header value for the next request, or None for none.

        May renew an expired credential first.
        """
        ...

    async def refresh(self, *, force: bool) -> bool:
        """Renew the credential if it is due (or always, with ``force``).

        ``force`` is used after the server answered 401 Unauthorized.

        Returns:
            True if the credential changed (a failed request is then worth retrying).
        """
        ...

    def renew_at(self) -> _dt.datetime | None:
        """When the current credential should be renewed (UTC), if it expires."""
        ...


class _ConfigurationCredentials:
    """The bearer token or basic auth that a kubernetes-asyncio ``Configuration`` holds.

    The Configuration's own ``refresh_api_key_hook`` runs on every read, so a
    Configuration from ``load_incluster_config`` keeps rotating its token.
    """

    def __init__(self, configuration: Configuration) -> None:
        self._configuration = configuration

    async def authorization(self) -> str | None:
        configuration = self._configuration
        token: str | None = await configuration.get_api_key_with_prefix("BearerToken")
        if token:
            return token
        if configuration.username is not None or configuration.password is not None:
            basic: str = configuration.get_basic_auth_token()
            return basic
        return None

    async def refresh(self, *, force: bool) -> bool:
        return False

    def renew_at(self) -> _dt.datetime | None:
        return None


class _FileTokenCredentials:
    """A bearer token read from a file that its owner rotates (service-account tokens).

    Re-read at most once a minute, and at once when forced (after a 401), like client-go.
    """

    def __init__(
        self,
        path: Path,
        configuration: Configuration,
        *,
        period: float = _TOKEN_FILE_PERIOD,
        clock: Clock | None = None,
    ) -> None:
        self._path = path
        self._configuration = configuration
        self._period = period
        self._clock = clock or RealClock()
        self._token = ""
        self._read_at: float | None = None

    def _read(self) -> bool:
        try:
            token = self._path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigError(f"cannot read token file {str(self._path)!r}: {exc}") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(
                f"token file {str(self._path)!r} is not UTF-8 text (offset {exc.start})"
            ) from None
        if not token:
            raise ConfigError(f"token file {str(self._path)!r} is empty")
        self._read_at = self._clock.now()
        changed = token != self._token
        self._token = token
        self._configuration.api_key["BearerToken"] = f"Bearer {token}"
        return changed

    async def authorization(self) -> str | None:
        if self._read_at is None or self._clock.now() - self._read_at >= self._period:
            self._read()
        return f"Bearer {self._token}"

    async def refresh(self, *, force: bool) -> bool:
        if force or self._read_at is None or self._clock.now() - self._read_at >= self._period:
            return self._read()
        return False

    def renew_at(self) -> _dt.datetime | None:
        return None


class _RenewingCredentials:
    """A bearer token that something renews: an exec plugin, an OIDC or GCP auth provider.

    Renewed when due or when forced (the server refused the token); one renewal serves
    every concurrent request. Subclasses say what the token is, how to renew it, and
    when it is due.
    """

    _kind = "provider"

    def __init__(self, configuration: Configuration, source: str) -> None:
        self._configuration = configuration
        self._source = source
        self._lock = asyncio.Lock()
        self._obtained_at = _dt.datetime.now(_dt.UTC)

    def _token(self) -> str | None:
        raise NotImplementedError

    async def _renew(self, *, force: bool) -> None:
        raise NotImplementedError

    def renew_at(self) -> _dt.datetime | None:
        return None

    def _due(self) -> bool:
        return True  # the OIDC and GCP providers check expiry themselves, cheaply

    async def authorization(self) -> str | None:
        if self._due():
            await self.refresh(force=False)
        token = self._token()
        return str(token) if token else None

    async def refresh(self, *, force: bool) -> bool:
        before = self._token()
        async with self._lock:
            if before != self._token():
                return True  # another request renewed it while this one waited
            if not force and not self._due():
                return False
            try:
                await self._renew(force=force)
                self._obtained_at = _dt.datetime.now(_dt.UTC)
            except ConfigError:
                raise
            except Exception as exc:
                raise ConfigError(
                    f"{self._source}: renewing the {self._kind} credential failed: {exc}"
                ) from exc
        token = self._token()
        if token:
            self._configuration.api_key["BearerToken"] = token
        return bool(token) and token != before


class _ExecCredentials(_RenewingCredentials):
    """An exec plugin's credential, run by kubernetes-asyncio's ``KubeConfigLoader``.

    The plugin is re-run when its credential is about to expire, or when forced.
    """

    _kind = "exec"

    def __init__(self, loader: Any, configuration: Configuration, source: str) -> None:
        super().__init__(configuration, source)
        self._loader = loader

    def _token(self) -> str | None:
        token = getattr(self._loader, "token", None)
        return str(token) if token else None

    def _expiry(self) -> _dt.datetime | None:
        expiry = getattr(self._loader, "exec_plugin_expiry", None)
        return expiry if isinstance(expiry, _dt.datetime) else None

    def renew_at(self) -> _dt.datetime | None:
        expiry = self._expiry()
        if expiry is None:
            return None
        # Renew five minutes early, or halfway through a shorter-lived credential, so that
        # a credential living less than five minutes is not renewed on every request.
        lifetime = expiry - self._obtained_at
        return expiry - min(_EXPIRY_SKEW, max(lifetime / 2, _dt.timedelta(0)))

    def _due(self) -> bool:
        renew_at = self.renew_at()
        return renew_at is not None and renew_at <= _dt.datetime.now(_dt.UTC)

    async def _renew(self, *, force: bool) -> None:
        loader = self._loader
        if (force and hasattr(loader, "exec_plugin_expiry")) or (
            not force and self._expiry() is not None
        ):
            # The loader re-runs the plugin only when it holds no unexpired credential.
            del loader.exec_plugin_expiry
        await loader.load_from_exec_plugin()


class _AuthProviderCredentials(_RenewingCredentials):
    """The token of a kubeconfig ``auth-provider`` (``oidc`` or ``gcp``), as client-go's plugins.

    Read from and renewed into this object's own copy of the provider's ``config``; the
    kubeconfig file is never written.

    Args:
        name: ``oidc`` or ``gcp``.
        provider_config: The auth-provider's ``config`` mapping (None if it has none).
        configuration: The Configuration whose bearer token is kept current.
        source: Where the kubeconfig came from, for messages.
    """

    def __init__(
        self,
        name: str,
        provider_config: Any,
        configuration: Configuration,
        source: str,
    ) -> None:
        super().__init__(configuration, source)
        self._kind = name
        self._config: dict[str, Any] | None = (
            dict(provider_config) if isinstance(provider_config, dict) else None
        )
        self._bearer: str | None = None

    def _token(self) -> str | None:
        return self._bearer

    async def load(self) -> None:
        """Obtain the first token (at load: errors propagate as they are)."""
        await self._renew(force=False)
        if self._bearer:
            self._configuration.api_key["BearerToken"] = self._bearer

    async def _renew(self, *, force: bool) -> None:
        if self._kind == "oidc":
            if self._config is None:
                raise ValueError("oidc: missing configuration")
            self._bearer = await _oidc_bearer(self._config, force=force)
        else:
            if self._config is None:
                self._config = {}
            self._bearer = await _gcp_bearer(self._config, force=force)


def _expired(expiry: Any) -> bool:
    """kubernetes-asyncio's test: expired five minutes before the stated time."""
    from kubernetes_asyncio.config.dateutil import parse_rfc3339

    deadline: _dt.datetime = parse_rfc3339(
        expiry if isinstance(expiry, _dt.datetime) else str(expiry)
    )
    return deadline - _EXPIRY_SKEW <= _dt.datetime.now(_dt.UTC)


async def _gcp_bearer(config: dict[str, Any], *, force: bool) -> str:
    """The GCP provider's access token, from ``gcloud`` when missing, expired or forced."""
    if force:
        config.pop("access-token", None)
    if "access-token" not in config or ("expiry" in config and _expired(config["expiry"])):
        config["access-token"], config["expiry"] = await _gcloud_credential(config)
    return f"Bearer {config['access-token']}"


async def _gcloud_credential(config: dict[str, Any]) -> tuple[str, str]:
    """Run ``cmd-path cmd-args`` (gcloud's config-helper); its access token and expiry."""
    cmd_path, cmd_args = config.get("cmd-path"), config.get("cmd-args")
    if cmd_path is None or cmd_args is None:
        raise ValueError(
            "GoogleAuth via gcloud is supported! Values for cmd-path, cmd-args are required."
        )
    if not isinstance(cmd_args, str) or not isinstance(cmd_path, str):
        raise ValueError(
            "GoogleAuth via gcloud is supported! Values for cmd-path, cmd-args have to be strings."
        )
    process = await asyncio.create_subprocess_exec(
        cmd_path,
        *shlex.split(cmd_args),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, _ = await process.communicate()
    credential = json.loads(stdout.decode("ascii").rstrip())["credential"]
    return str(credential["access_token"]), str(credential["token_expiry"])


def _jwt_expired(token: str) -> bool:
    """Whether the JWT's ``exp`` is passed (or within five minutes); no ``exp``: never."""
    parts = token.split(".")
    if len(parts) != 3:
        raise ValueError("oidc: JWT tokens should contain 3 period-delimited parts")
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    expires = json.loads(base64.urlsafe_b64decode(payload).decode("utf8")).get("exp")
    if expires is None:
        return False
    return _dt.datetime.fromtimestamp(expires, _dt.UTC) - _EXPIRY_SKEW <= _dt.datetime.now(_dt.UTC)


async def _oidc_bearer(config: dict[str, Any], *, force: bool) -> str:
    """The OIDC provider's id token, refreshed at the issuer when missing, expired or forced."""
    if force:
        config.pop("id-token", None)
    token = config.get("id-token")
    if token is None or _jwt_expired(str(token)):
        await _oidc_refresh(config)
    return f"Bearer {config['id-token']}"


def _basic_auth(config: dict[str, Any]) -> str:
    """The client's HTTP basic credentials for the issuer (``client-id:client-secret``)."""
    pair = f"{config['client-id']}:{config['client-secret']}".encode("latin1")
    return "Basic " + base64.b64encode(pair).decode("ascii")


async def _oidc_refresh(config: dict[str, Any]) -> None:
    """Trade the refresh token for a new id token at the issuer's token endpoint."""
    refresh_token = config.get("refresh-token")
    if refresh_token is None:
        raise ValueError("oidc: No valid id-token, and cannot refresh without refresh-token")
    tls: ssl.SSLContext | bool = True
    ca_data = config.get("idp-certificate-authority-data")
    if ca_data:
        tls = ssl.create_default_context(cadata=base64.b64decode(str(ca_data)).decode())
    issuer = str(config["idp-issuer-url"]).rstrip("/")
    async with aiohttp.ClientSession(
        headers={"Accept": "application/json", "Authorization": _basic_auth(config)},
        timeout=aiohttp.ClientTimeout(total=_OIDC_TIMEOUT),
        raise_for_status=True,
        trust_env=True,
    ) as session:
        try:
            async with session.get(f"{issuer}/.well-known/openid-configuration", ssl=tls) as r:
                well_known = await r.json(content_type=None)
        except aiohttp.ClientResponseError as exc:
            raise ValueError("oidc: failed to query well-known metadata endpoint") from exc
        grant = {"grant_type": "refresh_token", "refresh_token": str(refresh_token)}
        try:
            async with session.post(well_known["token_endpoint"], data=grant, ssl=tls) as r:
                answer = await r.json(content_type=None)
        except aiohttp.ClientResponseError as exc:
            raise ValueError("oidc: failed to refresh access token") from exc
    config["id-token"] = answer["id_token"]
    config["refresh-token"] = answer.get("refresh_token", refresh_token)


class Config:
    """A resolved connection to one API server: address, TLS, and live credentials.

    Args:
        configuration: The kubernetes-asyncio ``Configuration`` (host, CA, client
            certificates, proxy). Its bearer token is kept current as credentials renew,
            so it also suits kubernetes-asyncio's own ``ApiClient``.
        source: Where it was loaded from, for messages: ``"kubeconfig '/path'"``,
            ``"in-cluster (...)"``...
        context: The kubeconfig context used, if any.
        namespace: The default namespace (the context's, the pod's, or ``"default"``).
        credentials: How requests are authenticated; by default the bearer token or
            basic auth that ``configuration`` holds.
    """

    __slots__ = ("configuration", "context", "credentials", "namespace", "source")

    def __init__(
        self,
        configuration: Configuration,
        *,
        source: str = "configuration",
        context: str | None = None,
        namespace: str = "default",
        credentials: Credentials | None = None,
    ) -> None:
        self.configuration = configuration
        self.source = source
        self.context = context
        self.namespace = namespace
        self.credentials: Credentials = credentials or _ConfigurationCredentials(configuration)

    def __repr__(self) -> str:
        return f"Config(host={self.host!r}, source={self.source!r}, context={self.context!r})"

    @classmethod
    def from_configuration(
        cls, configuration: Configuration, *, source: str = "configuration"
    ) -> Config:
        """Wrap a kubernetes-asyncio ``Configuration`` built elsewhere (e.g. by envtest)."""
        return cls(configuration=configuration, source=source)

    @property
    def host(self) -> str:
        """The API server URL, without a trailing slash."""
        return str(self.configuration.host).rstrip("/")

    async def authorization(self) -> str | None:
        """The ``Authorization`` header for the next request (renewing credentials if due)."""
        return await self.credentials.authorization()

    async def refresh_credentials(self, *, force: bool = True) -> bool:
        """Renew the credentials; True if they changed. Called after a 401 answer."""
        return await self.credentials.refresh(force=force)

    def refresher(
        self, *, interval: float = 60.0, clock: Clock | None = None
    ) -> CredentialRefresher:
        """A runnable that renews the credentials ahead of expiry (see `CredentialRefresher`)."""
        return CredentialRefresher(self, interval=interval, clock=clock)


class CredentialRefresher:
    """Renews a `Config`'s credentials in the background, before they expire.

    Requests renew expired credentials themselves, so this is optional; it saves the
    first request after an expiry the wait for an exec plugin. Like every runnable,
    `start` blocks until cancelled. A failed renewal is logged and retried at the next
    interval (the next request would report it).

    Args:
        config: The configuration whose credentials to renew.
        interval: Seconds between checks when the credential's expiry is unknown.
        clock: The clock to wait on (tests pass a `pyctrl.clock.FakeClock`).
    """

    def __init__(self, config: Config, *, interval: float = 60.0, clock: Clock | None = None):
        if interval <= 0:
            raise ValueError(f"CredentialRefresher: interval must be > 0, got {interval}")
        self._config = config
        self._interval = interval
        self._clock = clock or RealClock()
        self.refreshes = 0
        """How many renewals changed the credential (for tests and diagnostics)."""

    def _next_wait(self) -> float:
        renew_at = self._config.credentials.renew_at()
        if renew_at is None:
            return self._interval
        due = (renew_at - _dt.datetime.now(_dt.UTC)).total_seconds()
        # The floor keeps a plugin that hands out already-due credentials from being re-run
        # in a tight loop.
        return min(self._interval, max(due, _MIN_REFRESH_WAIT))

    async def start(self) -> None:
        """Renew credentials as they come due, until cancelled."""
        while True:
            await self._clock.sleep(self._next_wait())
            try:
                if await self._config.credentials.refresh(force=False):
                    self.refreshes += 1
            except ConfigError as exc:
                _log.warning(
                    "credential renewal failed", source=self._config.source, error=str(exc)
                )


# kubeconfig loading ------------------------------------------------------------------------


def _read_kubeconfig(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"kubeconfig {str(path)!r} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"cannot read kubeconfig {str(path)!r}: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"kubeconfig {str(path)!r} is not UTF-8 text: byte 0x{exc.object[exc.start]:02x} "
            f"at offset {exc.start} is invalid"
        ) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"kubeconfig {str(path)!r} is not valid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"kubeconfig {str(path)!r} must be a mapping (apiVersion: v1, kind: Config), "
            f"not a {type(data).__name__}"
        )
    for section in ("clusters", "users", "contexts"):
        entries = data.get(section)
        if entries is None:
            continue
        if not isinstance(entries, list):
            raise ConfigError(f"kubeconfig {str(path)!r}: {section} must be a list")
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                raise ConfigError(
                    f"kubeconfig {str(path)!r}: {section}[{index}] must be a mapping with a name"
                )
            inner = section[:-1]  # "cluster", "user", "context"
            if not isinstance(entry.get(inner) or {}, dict):
                raise ConfigError(
                    f"kubeconfig {str(path)!r}: {section}[{index}] ({entry['name']!r}): "
                    f"{inner} must be a mapping"
                )
    return data


def _resolve(base: Path, value: Any) -> Any:
    if isinstance(value, str) and value and not os.path.isabs(value):
        return str(base / value)
    return value


def _resolve_paths(section: str, entry: dict[str, Any], base: Path) -> dict[str, Any]:
    """Make the file references of one entry absolute, relative to its own kubeconfig."""
    inner = dict(entry.get(section[:-1]) or {})
    if section == "clusters":
        for key in ("certificate-authority",):
            if key in inner:
                inner[key] = _resolve(base, inner[key])
    elif section == "users":
        for key in ("client-certificate", "client-key", "tokenFile"):
            if key in inner:
                inner[key] = _resolve(base, inner[key])
        exec_ = inner.get("exec")
        if isinstance(exec_, dict):
            command = exec_.get("command")
            # Like client-go, only a command that names a path is relative to the file;
            # a bare name is looked up on PATH.
            if isinstance(command, str) and os.sep in command:
                inner["exec"] = {**exec_, "command": _resolve(base, command)}
    return {**entry, section[:-1]: inner}


def _merge_kubeconfigs(paths: list[Path]) -> dict[str, Any]:
    """Merge kubeconfig files the way client-go's loading rules do: the first definition wins."""
    merged: dict[str, Any] = {"clusters": [], "users": [], "contexts": []}
    seen: dict[str, set[str]] = {"clusters": set(), "users": set(), "contexts": set()}
    for path in paths:
        data = _read_kubeconfig(path)
        base = path.resolve().parent
        for section in ("clusters", "users", "contexts"):
            for entry in data.get(section) or ():
                if entry["name"] in seen[section]:
                    continue
                seen[section].add(entry["name"])
                merged[section].append(_resolve_paths(section, entry, base))
        if data.get("current-context") and "current-context" not in merged:
            merged["current-context"] = str(data["current-context"])
    return merged


def _describe(paths: list[Path]) -> str:
    if len(paths) == 1:
        return f"kubeconfig {str(paths[0])!r}"
    return "kubeconfig " + os.pathsep.join(str(p) for p in paths)


def _entry(merged: dict[str, Any], section: str, name: str) -> dict[str, Any] | None:
    for entry in merged[section]:
        if entry["name"] == name:
            inner: dict[str, Any] = entry.get(section[:-1]) or {}
            return inner
    return None


@dataclass(frozen=True)
class _Selected:
    merged: dict[str, Any]
    source: str
    context: str
    namespace: str
    user: dict[str, Any] | None


def _select_kubeconfig(  # noqa: PLR0912 - client-go's loading rules, source by source
    paths: str | os.PathLike[str] | list[str | os.PathLike[str]], context: str | None
) -> _Selected:
    """Read and merge the files, and check the chosen context is complete."""
    if isinstance(paths, list):
        candidates = [Path(p).expanduser() for p in paths if os.fspath(p)]
    else:
        candidates = [Path(p).expanduser() for p in os.fspath(paths).split(os.pathsep) if p]
    if not candidates:
        raise ConfigError("no kubeconfig file given")
    if len(candidates) == 1:
        existing = candidates
    else:
        existing = [p for p in candidates if p.exists()]
        if not existing:
            raise ConfigError(
                "none of the kubeconfig files exists: "
                + ", ".join(repr(str(p)) for p in candidates)
            )
    merged = _merge_kubeconfigs(existing)
    source = _describe(existing)
    context_name = context or merged.get("current-context")
    if not context_name:
        raise ConfigError(
            f"{source}: no current-context is set and no context was given "
            "(pass context=... or run `kubectl config use-context`)"
        )
    context_entry = _entry(merged, "contexts", context_name)
    if context_entry is None:
        known = ", ".join(sorted(e["name"] for e in merged["contexts"])) or "none"
        raise ConfigError(f"{source}: context {context_name!r} does not exist (contexts: {known})")
    cluster_name = context_entry.get("cluster")
    if not cluster_name:
        raise ConfigError(f"{source}: context {context_name!r} names no cluster")
    cluster = _entry(merged, "clusters", str(cluster_name))
    if cluster is None:
        raise ConfigError(
            f"{source}: cluster {cluster_name!r} of context {context_name!r} does not exist"
        )
    if not cluster.get("server"):
        raise ConfigError(f"{source}: cluster {cluster_name!r} has no server address")
    user_name = context_entry.get("user")
    user = _entry(merged, "users", str(user_name)) if user_name else None
    if user_name and user is None:
        raise ConfigError(
            f"{source}: user {user_name!r} of context {context_name!r} does not exist"
        )
    for key in ("certificate-authority-data",):
        if cluster.get(key):
            _check_base64(source, f"cluster {cluster_name!r}", key, cluster[key])
    for key in ("client-certificate-data", "client-key-data"):
        if user and user.get(key):
            _check_base64(source, f"user {user_name!r}", key, user[key])

    return _Selected(
        merged=merged,
        source=source,
        context=context_name,
        namespace=str(context_entry.get("namespace") or "default"),
        user=user,
    )


def _auth_provider(
    user: dict[str, Any] | None, configuration: Configuration, source: str
) -> _AuthProviderCredentials | None:
    """The credentials of the user's ``oidc`` or ``gcp`` auth provider, if it has one."""
    provider = user.get("auth-provider") if user else None
    if not isinstance(provider, dict) or provider.get("name") not in ("oidc", "gcp"):
        return None
    return _AuthProviderCredentials(
        str(provider["name"]), provider.get("config"), configuration, source
    )


def _without_user_credentials(
    merged: dict[str, Any], user: dict[str, Any] | None
) -> dict[str, Any]:
    """The kubeconfig for the loader: ``user`` keeps its client certificate only.

    pyctrl obtains an auth provider's token itself; like kubernetes-asyncio, it then
    uses no other credential of that user.
    """
    kept = {k: v for k, v in (user or {}).items() if k in _CLIENT_CERT_KEYS}
    users = [
        {**entry, "user": kept} if entry.get("user") is user else entry for entry in merged["users"]
    ]
    return {**merged, "users": users}


async def load_kubeconfig(
    paths: str | os.PathLike[str] | list[str | os.PathLike[str]],
    *,
    context: str | None = None,
) -> Config:
    """Load a `Config` from one kubeconfig file, or several merged.

    Args:
        paths: One file, a list of files, or an ``os.pathsep``-joined list as in
            ``KUBECONFIG``. In a list, files that do not exist are skipped (as kubectl
            does) but at least one must exist; a single file must exist.
        context: The context to use instead of the file's ``current-context``.

    Raises:
        ConfigError: No file exists, a file is not a valid kubeconfig, the context is
            not defined, its cluster or user is missing, or authentication cannot be
            set up (e.g. the exec plugin fails). The message names the file(s).
    """
    selected = _select_kubeconfig(paths, context)
    merged, source, context_name = selected.merged, selected.source, selected.context
    user = selected.user

    from kubernetes_asyncio.config.config_exception import ConfigException
    from kubernetes_asyncio.config.kube_config import KubeConfigLoader

    configuration = Configuration()
    provider = _auth_provider(user, configuration, source)
    try:
        # config_base_path="" because every relative path is already resolved against
        # the file it came from; no config_persister, so nothing is written back.
        loader = KubeConfigLoader(
            config_dict=merged if provider is None else _without_user_credentials(merged, user),
            active_context=context_name,
            config_base_path="",
        )
        await loader.load_and_set(configuration)
        if provider is not None:
            await provider.load()
    except (ConfigException, ValueError, KeyError, TypeError, OSError, AssertionError) as exc:
        raise ConfigError(f"{source}, context {context_name!r}: {exc}") from exc

    credentials: Credentials
    if provider is not None:
        credentials = provider
    elif user and "exec" in user:
        credentials = _ExecCredentials(loader, configuration, source)
    elif user and "auth-provider" in user:
        credentials = _ConfigurationCredentials(configuration)  # what the loader set
    elif user and user.get("tokenFile") and not user.get("token"):
        credentials = _FileTokenCredentials(Path(user["tokenFile"]), configuration)
    else:
        credentials = _ConfigurationCredentials(configuration)
    return Config(
        configuration=configuration,
        source=source,
        context=context_name,
        namespace=selected.namespace,
        credentials=credentials,
    )


_PEM_KEY = re.compile(
    rb"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----\r?\n"
    rb"(?:[A-Za-z-]+: [^\n]*\n)*\s*([A-Za-z0-9+/=\s]+?)-----END \1PRIVATE KEY-----"
)


def _check_base64(source: str, owner: str, key: str, value: Any) -> None:
    """Check inline data: base64 of PEM certificates, or of a PEM key.

    kubernetes-asyncio copies the data to a temporary file that is gone by the time TLS
    is set up, so a bad value is named here, by its field. Certificates are parsed by the
    ``ssl`` module's OpenSSL; a key is checked for its PEM armour and base64 body (the
    ``cryptography`` package, several MiB of memory, is not loaded for this).
    """
    try:
        data = base64.b64decode(str(value), validate=True)
    except ValueError:
        raise ConfigError(f"{source}: {owner}: {key} is not valid base64") from None
    try:
        if key == "client-key-data":
            found = _PEM_KEY.search(data)
            if found is None:
                raise ValueError("no PEM private key")
            base64.b64decode(b"".join(found.group(2).split()), validate=True)
        else:
            ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cadata=data.decode())
    except (ValueError, ssl.SSLError):
        what = "a PEM private key" if key == "client-key-data" else "PEM certificates"
        raise ConfigError(f"{source}: {owner}: {key} does not hold {what}") from None


def load_in_cluster_config(
    *,
    service_account_dir: str | os.PathLike[str] = SERVICE_ACCOUNT_DIR,
    environ: Mapping[str, str] | None = None,
    clock: Clock | None = None,
) -> Config:
    """Load the `Config` of a pod: the service account Kubernetes mounts into it.

    The API server address comes from ``KUBERNETES_SERVICE_HOST`` and
    ``KUBERNETES_SERVICE_PORT``; the token, CA and namespace from the files ``token``,
    ``ca.crt`` and ``namespace`` in ``service_account_dir``. The token is re-read at most
    once a minute, and at once after a 401, because the kubelet rotates it.

    Args:
        service_account_dir: Where the service account is mounted.
        environ: The environment to read (default: ``os.environ``).
        clock: The clock that times token re-reads.

    Raises:
        ConfigError: Not running in a cluster, or the service-account files are missing.
    """
    from kubernetes_asyncio.config.config_exception import ConfigException
    from kubernetes_asyncio.config.incluster_config import InClusterConfigLoader

    env = dict(os.environ if environ is None else environ)
    directory = Path(service_account_dir)
    configuration = Configuration()
    try:
        InClusterConfigLoader(
            token_filename=str(directory / "token"),
            cert_filename=str(directory / "ca.crt"),
            try_refresh_token=False,  # pyctrl re-reads the token itself, and on 401
            environ=env,
        ).load_and_set(configuration)
    except (ConfigException, OSError) as exc:
        raise ConfigError(f"in-cluster configuration ({directory}): {exc}") from exc
    try:
        namespace = (directory / "namespace").read_text().strip() or "default"
    except OSError:
        namespace = "default"
    return Config(
        configuration=configuration,
        source=f"in-cluster ({configuration.host}, service account {directory})",
        namespace=namespace,
        credentials=_FileTokenCredentials(directory / "token", configuration, clock=clock),
    )


async def get_config(
    *,
    kubeconfig: str | os.PathLike[str] | None = None,
    context: str | None = None,
    environ: Mapping[str, str] | None = None,
    service_account_dir: str | os.PathLike[str] = SERVICE_ACCOUNT_DIR,
) -> Config:
    """Find the API server the way controller-runtime's ``GetConfig`` does.

    Explicit kubeconfig, then ``KUBECONFIG`` (merged), then the in-cluster service
    account, then ``~/.kube/config``; see the module documentation.

    Args:
        kubeconfig: A kubeconfig file to use; it must exist.
        context: The kubeconfig context to use instead of the current one (ignored
            in-cluster).
        environ: The environment to read ``KUBECONFIG``, ``HOME`` and the in-cluster
            variables from (default: ``os.environ``).
        service_account_dir: Where the in-cluster service account is mounted.

    Returns:
        The resolved configuration; `Config.source` says which one was used.

    Raises:
        ConfigError: Nothing was found, or what was found is broken; the message names
            what was tried, or the broken file and the problem.
    """
    env = os.environ if environ is None else environ
    if kubeconfig is not None:
        return await load_kubeconfig(kubeconfig, context=context)
    setting = env.get("KUBECONFIG", "")
    if setting:
        return await load_kubeconfig(setting, context=context)
    in_cluster_error: ConfigError | None = None
    if env.get("KUBERNETES_SERVICE_HOST") and env.get("KUBERNETES_SERVICE_PORT"):
        try:
            return load_in_cluster_config(service_account_dir=service_account_dir, environ=env)
        except ConfigError as exc:
            in_cluster_error = exc
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    default = home / ".kube" / "config"
    if default.exists():
        return await load_kubeconfig(default, context=context)
    in_cluster = (
        str(in_cluster_error)
        if in_cluster_error
        else "not in a cluster (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set)"
    )
    raise ConfigError(
        "no Kubernetes configuration found: KUBECONFIG is not set; "
        f"{in_cluster}; and {str(default)!r} does not exist"
    )
