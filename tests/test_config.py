"""pyctrl.config: finding the API server and authenticating to it."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import json
import os
import pathlib
import sys
import textwrap
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from aiohttp import web
from kubernetes_asyncio.client import Configuration

from pyctrl import certs
from pyctrl.clock import FakeClock
from pyctrl.config import (
    Config,
    CredentialRefresher,
    get_config,
    load_in_cluster_config,
    load_kubeconfig,
)
from pyctrl.errors import ConfigError
from pyctrl.manager import Manager, Options

if TYPE_CHECKING:
    import ssl
    from collections.abc import AsyncIterator
    from pathlib import Path

    from pyctrl.envtest import Environment

CA_PEM = certs.generate_ca("test-config-ca").cert_pem


def kubeconfig(
    *,
    clusters: dict[str, str] | None = None,
    users: dict[str, dict[str, Any]] | None = None,
    contexts: dict[str, tuple[str, str | None, str | None]] | None = None,
    current: str | None = None,
) -> dict[str, Any]:
    """Build a kubeconfig; contexts map name -> (cluster, user, namespace)."""
    data: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": name, "cluster": {"server": server}}
            for name, server in (clusters or {}).items()
        ],
        "users": [{"name": name, "user": user} for name, user in (users or {}).items()],
        "contexts": [],
    }
    for name, (cluster, user, namespace) in (contexts or {}).items():
        context: dict[str, Any] = {"cluster": cluster}
        if user:
            context["user"] = user
        if namespace:
            context["namespace"] = namespace
        data["contexts"].append({"name": name, "context": context})
    if current:
        data["current-context"] = current
    return data


def write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


def read_bytes(path: str) -> bytes:
    return pathlib.Path(path).read_bytes()


def simple(server: str = "http://a.example:8080", token: str = "tok-a") -> dict[str, Any]:
    return kubeconfig(
        clusters={"a": server},
        users={"alice": {"token": token}},
        contexts={"ctx-a": ("a", "alice", "team-a")},
        current="ctx-a",
    )


def service_account(directory: Path, token: str = "sa-token", namespace: str = "ops") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "token").write_text(token)
    (directory / "ca.crt").write_bytes(CA_PEM)
    (directory / "namespace").write_text(namespace)
    return directory


IN_CLUSTER_ENV = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}


# explicit kubeconfig --------------------------------------------------------------------


async def test_explicit_kubeconfig_gives_host_token_namespace_and_source(tmp_path: Path) -> None:
    """An explicit kubeconfig yields its server, bearer token, context namespace and source."""
    path = write(tmp_path / "kc", simple())
    config = await get_config(kubeconfig=path, environ={})
    assert config.host == "http://a.example:8080"
    assert await config.authorization() == "Bearer tok-a"
    assert config.namespace == "team-a"
    assert config.context == "ctx-a"
    assert str(path) in config.source


async def test_explicit_kubeconfig_wins_over_kubeconfig_variable(tmp_path: Path) -> None:
    """An explicit path is used even when KUBECONFIG names another file."""
    explicit = write(tmp_path / "explicit", simple("http://explicit:1"))
    other = write(tmp_path / "other", simple("http://other:1"))
    config = await get_config(kubeconfig=explicit, environ={"KUBECONFIG": str(other)})
    assert config.host == "http://explicit:1"


async def test_missing_explicit_kubeconfig_names_the_file(tmp_path: Path) -> None:
    """A missing explicit kubeconfig is an error naming the file."""
    path = tmp_path / "nope"
    with pytest.raises(ConfigError, match=r"kubeconfig '.*nope' does not exist"):
        await get_config(kubeconfig=path, environ={})


async def test_invalid_yaml_names_the_file_and_problem(tmp_path: Path) -> None:
    """A kubeconfig that is not YAML is an error naming the file."""
    path = write(tmp_path / "bad", "clusters: [unclosed\n")
    with pytest.raises(ConfigError, match=r"kubeconfig '.*bad' is not valid YAML"):
        await load_kubeconfig(path)


async def test_non_mapping_kubeconfig_is_refused(tmp_path: Path) -> None:
    """A kubeconfig whose top level is not a mapping is refused with the file named."""
    path = write(tmp_path / "list", "- a\n- b\n")
    with pytest.raises(ConfigError, match=r"'.*list' must be a mapping"):
        await load_kubeconfig(path)


async def test_malformed_section_is_refused(tmp_path: Path) -> None:
    """A clusters section that is not a list of named entries is an error naming it."""
    path = write(tmp_path / "kc", {"clusters": {"a": 1}, "current-context": "x"})
    with pytest.raises(ConfigError, match="clusters must be a list"):
        await load_kubeconfig(path)


async def test_context_option_selects_another_context(tmp_path: Path) -> None:
    """context= picks a context other than current-context, with its cluster and user."""
    data = kubeconfig(
        clusters={"a": "http://a:1", "b": "http://b:2"},
        users={"alice": {"token": "ta"}, "bob": {"token": "tb"}},
        contexts={"ctx-a": ("a", "alice", None), "ctx-b": ("b", "bob", "nb")},
        current="ctx-a",
    )
    config = await load_kubeconfig(write(tmp_path / "kc", data), context="ctx-b")
    assert (config.host, config.namespace, config.context) == ("http://b:2", "nb", "ctx-b")
    assert await config.authorization() == "Bearer tb"


async def test_namespace_defaults_to_default(tmp_path: Path) -> None:
    """A context without a namespace gives the namespace "default"."""
    data = kubeconfig(clusters={"a": "http://a:1"}, contexts={"c": ("a", None, None)}, current="c")
    config = await load_kubeconfig(write(tmp_path / "kc", data))
    assert config.namespace == "default"
    assert await config.authorization() is None


async def test_unknown_context_lists_the_known_ones(tmp_path: Path) -> None:
    """Asking for an undefined context names it and lists the defined contexts."""
    path = write(tmp_path / "kc", simple())
    with pytest.raises(ConfigError, match=r"context 'nope' does not exist \(contexts: ctx-a\)"):
        await load_kubeconfig(path, context="nope")


async def test_missing_current_context_is_an_error(tmp_path: Path) -> None:
    """A kubeconfig without current-context, and no context given, is an error."""
    data = simple()
    del data["current-context"]
    with pytest.raises(ConfigError, match="no current-context is set"):
        await load_kubeconfig(write(tmp_path / "kc", data))


async def test_context_with_undefined_user_is_an_error(tmp_path: Path) -> None:
    """A context naming a user that is not defined is an error naming the user."""
    data = kubeconfig(
        clusters={"a": "http://a:1"}, contexts={"c": ("a", "ghost", None)}, current="c"
    )
    with pytest.raises(ConfigError, match="user 'ghost' of context 'c' does not exist"):
        await load_kubeconfig(write(tmp_path / "kc", data))


async def test_context_with_undefined_cluster_is_an_error(tmp_path: Path) -> None:
    """A context naming a cluster that is not defined is an error naming the cluster."""
    data = kubeconfig(contexts={"c": ("gone", None, None)}, current="c")
    with pytest.raises(ConfigError, match="cluster 'gone' of context 'c' does not exist"):
        await load_kubeconfig(write(tmp_path / "kc", data))


async def test_bad_base64_certificate_data_is_named(tmp_path: Path) -> None:
    """certificate-authority-data that is not base64 is an error naming the field."""
    data = simple("https://a:6443")
    data["clusters"][0]["cluster"]["certificate-authority-data"] = "%%% not base64 %%%"
    with pytest.raises(ConfigError, match="certificate-authority-data is not valid base64"):
        await load_kubeconfig(write(tmp_path / "kc", data))


@pytest.mark.parametrize(
    ("section", "key", "what"),
    [
        ("clusters", "certificate-authority-data", "PEM certificates"),
        ("users", "client-certificate-data", "PEM certificates"),
        ("users", "client-key-data", "a PEM private key"),
    ],
)
async def test_inline_data_that_is_not_pem_names_the_kubeconfig_and_field(
    tmp_path: Path, section: str, key: str, what: str
) -> None:
    """Base64 of something that is not PEM: the kubeconfig and the field, not a temp file."""
    data = simple("https://a:6443")
    data[section][0][section[:-1]][key] = base64.b64encode(b"not a certificate").decode()
    path = write(tmp_path / "kc", data)
    with pytest.raises(ConfigError) as failed:
        await load_kubeconfig(path)
    message = str(failed.value)
    assert message.startswith(f"kubeconfig '{path}': ")
    assert f"{key} does not hold {what}" in message
    assert "/tmp" not in message.replace(str(tmp_path), "")
    assert "\n" not in message


async def test_relative_certificate_paths_resolve_against_the_kubeconfig(tmp_path: Path) -> None:
    """A relative certificate-authority path is read relative to its own kubeconfig file."""
    (tmp_path / "conf" / "pki").mkdir(parents=True)
    (tmp_path / "conf" / "pki" / "ca.crt").write_bytes(CA_PEM)
    data = simple("https://a:6443")
    data["clusters"][0]["cluster"]["certificate-authority"] = "pki/ca.crt"
    config = await load_kubeconfig(write(tmp_path / "conf" / "kc", data))
    assert config.configuration.ssl_ca_cert == str(tmp_path / "conf" / "pki" / "ca.crt")


async def test_inline_certificate_data_is_loaded(tmp_path: Path) -> None:
    """certificate-authority-data ends up as a CA file holding the decoded certificate."""
    data = simple("https://a:6443")
    data["clusters"][0]["cluster"]["certificate-authority-data"] = base64.b64encode(CA_PEM).decode()
    config = await load_kubeconfig(write(tmp_path / "kc", data))
    ca_file = config.configuration.ssl_ca_cert
    assert ca_file is not None
    assert read_bytes(ca_file) == CA_PEM


async def test_basic_auth_user_gives_basic_header(tmp_path: Path) -> None:
    """A user with username and password authenticates with HTTP basic auth."""
    data = simple()
    data["users"][0]["user"] = {"username": "u", "password": "p"}
    config = await load_kubeconfig(write(tmp_path / "kc", data))
    assert await config.authorization() == "Basic " + base64.b64encode(b"u:p").decode()


async def test_insecure_skip_tls_verify_is_carried(tmp_path: Path) -> None:
    """insecure-skip-tls-verify turns certificate verification off in the configuration."""
    data = simple("https://a:6443")
    data["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
    config = await load_kubeconfig(write(tmp_path / "kc", data))
    assert config.configuration.verify_ssl is False


# KUBECONFIG merging ---------------------------------------------------------------------


async def test_kubeconfig_variable_merges_files_first_definition_wins(tmp_path: Path) -> None:
    """KUBECONFIG files merge like kubectl: the first file's current-context and names win."""
    first = write(
        tmp_path / "one",
        kubeconfig(
            clusters={"shared": "http://first:1"},
            contexts={"ctx-two": ("only-in-two", "u2", None)},
            current="ctx-two",
        ),
    )
    second = write(
        tmp_path / "two",
        kubeconfig(
            clusters={"shared": "http://second:1", "only-in-two": "http://two:2"},
            users={"u2": {"token": "t2"}},
            contexts={"ctx-shared": ("shared", "u2", None)},
            current="ctx-shared",
        ),
    )
    env = {"KUBECONFIG": os.pathsep.join([str(first), str(second)])}
    config = await get_config(environ=env)
    assert (config.context, config.host) == ("ctx-two", "http://two:2")
    assert await config.authorization() == "Bearer t2"
    shared = await get_config(environ=env, context="ctx-shared")
    assert shared.host == "http://first:1"


async def test_kubeconfig_variable_skips_missing_files(tmp_path: Path) -> None:
    """Files in KUBECONFIG that do not exist are skipped."""
    present = write(tmp_path / "present", simple())
    env = {"KUBECONFIG": os.pathsep.join([str(tmp_path / "missing"), str(present)])}
    config = await get_config(environ=env)
    assert config.host == "http://a.example:8080"
    assert "missing" not in config.source


async def test_kubeconfig_variable_with_no_existing_file_is_an_error(tmp_path: Path) -> None:
    """KUBECONFIG naming only missing files is an error naming them."""
    env = {"KUBECONFIG": os.pathsep.join([str(tmp_path / "x"), str(tmp_path / "y")])}
    with pytest.raises(ConfigError, match=r"none of the kubeconfig files exists: .*x.*y"):
        await get_config(environ=env)


async def test_kubeconfig_variable_wins_over_in_cluster(tmp_path: Path) -> None:
    """When KUBECONFIG is set, it is used even inside a cluster."""
    sa = service_account(tmp_path / "sa")
    path = write(tmp_path / "kc", simple())
    config = await get_config(
        environ={**IN_CLUSTER_ENV, "KUBECONFIG": str(path)}, service_account_dir=sa
    )
    assert config.host == "http://a.example:8080"


# in-cluster and home ---------------------------------------------------------------------


async def test_in_cluster_config_reads_service_account(tmp_path: Path) -> None:
    """In a cluster: host from the service variables, token, CA and namespace from files."""
    sa = service_account(tmp_path / "sa")
    config = await get_config(environ=IN_CLUSTER_ENV, service_account_dir=sa)
    assert config.host == "https://10.0.0.1:443"
    assert config.namespace == "ops"
    assert config.configuration.ssl_ca_cert == str(sa / "ca.crt")
    assert await config.authorization() == "Bearer sa-token"
    assert config.source.startswith("in-cluster")


async def test_in_cluster_ipv6_host_is_bracketed(tmp_path: Path) -> None:
    """An IPv6 service host is written in brackets in the URL."""
    sa = service_account(tmp_path / "sa")
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    config = load_in_cluster_config(service_account_dir=sa, environ=env)
    assert config.host == "https://[fd00::1]:443"


async def test_in_cluster_token_is_reread_after_a_minute(tmp_path: Path) -> None:
    """A rotated service-account token is used once a minute has passed since the last read."""
    clock = FakeClock()
    sa = service_account(tmp_path / "sa", token="first")
    config = load_in_cluster_config(service_account_dir=sa, environ=IN_CLUSTER_ENV, clock=clock)
    assert await config.authorization() == "Bearer first"
    (sa / "token").write_text("second")
    clock.advance(59)
    assert await config.authorization() == "Bearer first"
    clock.advance(1)
    assert await config.authorization() == "Bearer second"
    assert config.configuration.api_key["BearerToken"] == "Bearer second"


async def test_in_cluster_token_is_reread_at_once_when_forced(tmp_path: Path) -> None:
    """After a 401 (a forced refresh) the token file is re-read at once."""
    sa = service_account(tmp_path / "sa", token="first")
    config = load_in_cluster_config(
        service_account_dir=sa, environ=IN_CLUSTER_ENV, clock=FakeClock()
    )
    assert await config.authorization() == "Bearer first"
    (sa / "token").write_text("second\n")
    assert await config.refresh_credentials() is True
    assert await config.authorization() == "Bearer second"
    assert await config.refresh_credentials() is False


async def test_in_cluster_missing_token_is_named(tmp_path: Path) -> None:
    """In a cluster without a token file, the error names the service-account directory."""
    sa = service_account(tmp_path / "sa")
    (sa / "token").unlink()
    with pytest.raises(ConfigError, match=r"in-cluster configuration .*sa.*token file"):
        load_in_cluster_config(service_account_dir=sa, environ=IN_CLUSTER_ENV)


async def test_in_cluster_wins_over_home_kubeconfig(tmp_path: Path) -> None:
    """Inside a cluster (and no KUBECONFIG) the service account is preferred to ~/.kube/config."""
    sa = service_account(tmp_path / "sa")
    write(tmp_path / "home" / ".kube" / "config", simple())
    env = {**IN_CLUSTER_ENV, "HOME": str(tmp_path / "home")}
    config = await get_config(environ=env, service_account_dir=sa)
    assert config.host == "https://10.0.0.1:443"


async def test_home_kubeconfig_is_the_last_resort(tmp_path: Path) -> None:
    """Outside a cluster and without KUBECONFIG, ~/.kube/config is used."""
    write(tmp_path / "home" / ".kube" / "config", simple())
    config = await get_config(environ={"HOME": str(tmp_path / "home")})
    assert config.host == "http://a.example:8080"


async def test_broken_in_cluster_falls_back_to_home_kubeconfig(tmp_path: Path) -> None:
    """With the service variables set but no service account, ~/.kube/config is used."""
    write(tmp_path / "home" / ".kube" / "config", simple())
    env = {**IN_CLUSTER_ENV, "HOME": str(tmp_path / "home")}
    config = await get_config(environ=env, service_account_dir=tmp_path / "no-sa")
    assert config.host == "http://a.example:8080"


async def test_nothing_found_names_every_place_tried(tmp_path: Path) -> None:
    """With no configuration anywhere, one error says what was tried."""
    with pytest.raises(ConfigError) as info:
        await get_config(environ={"HOME": str(tmp_path)})
    message = str(info.value)
    assert "KUBECONFIG is not set" in message
    assert "KUBERNETES_SERVICE_HOST" in message
    assert str(tmp_path / ".kube" / "config") in message


async def test_nothing_found_reports_the_in_cluster_problem(tmp_path: Path) -> None:
    """When in-cluster loading failed and there is no ~/.kube/config, the error says why."""
    with pytest.raises(ConfigError, match=r"in-cluster configuration .*Service token file"):
        await get_config(
            environ={**IN_CLUSTER_ENV, "HOME": str(tmp_path)},
            service_account_dir=tmp_path / "no-sa",
        )


# token files and exec plugins -------------------------------------------------------------


async def test_token_file_user_rereads_rotated_token(tmp_path: Path) -> None:
    """A user with tokenFile (relative to the kubeconfig) has the file re-read when forced."""
    (tmp_path / "token").write_text("one")
    data = simple()
    data["users"][0]["user"] = {"tokenFile": "token"}
    config = await load_kubeconfig(write(tmp_path / "kc", data))
    assert await config.authorization() == "Bearer one"
    (tmp_path / "token").write_text("two")
    assert await config.refresh_credentials() is True
    assert await config.authorization() == "Bearer two"


def exec_user(tmp_path: Path, *, expiry: str | None, fail: bool = False) -> dict[str, Any]:
    """A user whose exec plugin counts its runs in a file and returns token-<n>."""
    script = tmp_path / "plugin.py"
    expiry_line = f'status["expirationTimestamp"] = "{expiry}"' if expiry else ""
    script.write_text(
        textwrap.dedent(
            f"""
            import json, pathlib, sys
            counter = pathlib.Path({str(tmp_path / "runs")!r})
            n = int(counter.read_text()) + 1 if counter.exists() else 1
            counter.write_text(str(n))
            if {fail!r}:
                print("plugin exploded", file=sys.stderr)
                sys.exit(3)
            status = {{"token": f"token-{{n}}"}}
            {expiry_line}
            print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1",
                               "kind": "ExecCredential", "status": status}}))
            """
        )
    )
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(script)],
            "interactiveMode": "Never",
        }
    }


def runs(tmp_path: Path) -> int:
    return int((tmp_path / "runs").read_text())


def rfc3339(delta: dt.timedelta) -> str:
    return (dt.datetime.now(dt.UTC) + delta).strftime("%Y-%m-%dT%H:%M:%SZ")


async def test_exec_plugin_token_is_used_and_cached(tmp_path: Path) -> None:
    """An exec plugin's token is sent, and not fetched again while it is valid."""
    data = simple()
    data["users"][0]["user"] = exec_user(tmp_path, expiry=rfc3339(dt.timedelta(hours=1)))
    config = await load_kubeconfig(write(tmp_path / "kc", data))
    assert await config.authorization() == "Bearer token-1"
    assert await config.authorization() == "Bearer token-1"
    assert runs(tmp_path) == 1


async def test_exec_plugin_is_rerun_when_its_credential_expired(tmp_path: Path) -> None:
    """An expired credential is renewed by running the plugin again before the request."""
    data = simple()
    data["users"][0]["user"] = exec_user(tmp_path, expiry=rfc3339(-dt.timedelta(minutes=1)))
    config = await load_kubeconfig(write(tmp_path / "kc", data))
    assert await config.authorization() == "Bearer token-2"
    assert runs(tmp_path) == 2
    assert config.configuration.api_key["BearerToken"] == "Bearer token-2"


async def test_short_lived_exec_credential_is_not_renewed_on_every_request(
    tmp_path: Path,
) -> None:
    """A credential living under five minutes is reused until halfway through its life."""
    data = simple()
    data["users"][0]["user"] = exec_user(tmp_path, expiry=rfc3339(dt.timedelta(minutes=2)))
    config = await load_kubeconfig(write(tmp_path / "kc", data))
    assert await config.authorization() == "Bearer token-1"
    assert await config.authorization() == "Bearer token-1"
    renew_at = config.credentials.renew_at()
    assert renew_at is not None
    remaining = renew_at - dt.datetime.now(dt.UTC)
    assert dt.timedelta(seconds=30) < remaining <= dt.timedelta(minutes=1)


async def test_exec_plugin_is_rerun_on_forced_refresh(tmp_path: Path) -> None:
    """After a 401 the plugin runs again even if its credential has no expiry."""
    data = simple()
    data["users"][0]["user"] = exec_user(tmp_path, expiry=None)
    config = await load_kubeconfig(write(tmp_path / "kc", data))
    assert await config.authorization() == "Bearer token-1"
    assert await config.refresh_credentials() is True
    assert await config.authorization() == "Bearer token-2"


async def test_concurrent_forced_refreshes_run_the_plugin_once(tmp_path: Path) -> None:
    """Several requests refused at once renew the credential with one plugin run."""
    data = simple()
    data["users"][0]["user"] = exec_user(tmp_path, expiry=None)
    config = await load_kubeconfig(write(tmp_path / "kc", data))
    results = await asyncio.gather(*(config.refresh_credentials() for _ in range(5)))
    assert all(results)
    assert runs(tmp_path) == 2


async def test_failing_exec_plugin_names_the_kubeconfig(tmp_path: Path) -> None:
    """A plugin that fails makes loading fail with the kubeconfig and the plugin's error."""
    data = simple()
    data["users"][0]["user"] = exec_user(tmp_path, expiry=None, fail=True)
    path = write(tmp_path / "kc", data)
    with pytest.raises(ConfigError, match=r"kubeconfig '.*kc'.*plugin exploded"):
        await load_kubeconfig(path)


# auth providers: OIDC and GCP ---------------------------------------------------------------


def jwt(expires_in: dt.timedelta, subject: str) -> str:
    """An unsigned JWT whose payload has ``exp`` and ``sub``: all the OIDC loader reads."""

    def part(data: dict[str, Any]) -> str:
        return base64.b64encode(json.dumps(data).encode()).decode().rstrip("=")

    expires = int((dt.datetime.now(dt.UTC) + expires_in).timestamp())
    return f"{part({'alg': 'none'})}.{part({'exp': expires, 'sub': subject})}.sig"


def oidc_user(issuer: str, id_token: str | None) -> dict[str, Any]:
    config = {
        "client-id": "pyctrl",
        "client-secret": "s3cret",
        "idp-issuer-url": issuer,
        "refresh-token": "refresh-0",
    }
    if id_token is not None:
        config["id-token"] = id_token
    return {"auth-provider": {"name": "oidc", "config": config}}


@contextlib.asynccontextmanager
async def identity_provider(
    ssl_context: ssl.SSLContext | None = None,
) -> AsyncIterator[tuple[str, list[dict[str, str]]]]:
    """A fake OIDC issuer: its token endpoint trades refresh-<n> for id token n+1."""
    grants: list[dict[str, str]] = []
    url = ""

    async def well_known(request: web.Request) -> web.Response:
        return web.json_response({"issuer": url, "token_endpoint": f"{url}/token"})

    async def token(request: web.Request) -> web.Response:
        form = await request.post()
        grants.append({key: str(value) for key, value in form.items()})
        n = len(grants)
        return web.json_response(
            {"id_token": jwt(dt.timedelta(hours=1), f"n{n}"), "refresh_token": f"refresh-{n}"}
        )

    app = web.Application()
    app.router.add_get("/.well-known/openid-configuration", well_known)
    app.router.add_post("/token", token)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context)
    await site.start()
    host, port = runner.addresses[0][:2]
    url = f"{'https' if ssl_context else 'http'}://{host}:{port}"
    try:
        yield url, grants
    finally:
        await runner.cleanup()


def subject(authorization: str | None) -> str:
    """The ``sub`` of the JWT in a bearer Authorization header."""
    assert authorization is not None
    assert authorization.startswith("Bearer ")
    payload = authorization.removeprefix("Bearer ").split(".")[1]
    return str(json.loads(base64.b64decode(payload + "==="))["sub"])


async def test_oidc_id_token_that_is_still_valid_is_sent_as_is(tmp_path: Path) -> None:
    """An OIDC user with an unexpired id-token authenticates with it, asking no issuer."""
    token = jwt(dt.timedelta(hours=1), "alice")
    data = simple()
    data["users"][0]["user"] = oidc_user("http://127.0.0.1:9/unreachable", token)
    config = await load_kubeconfig(write(tmp_path / "kc", data))
    assert await config.authorization() == f"Bearer {token}"
    assert await config.authorization() == f"Bearer {token}"


# kubernetes-asyncio's OIDC refresh (not pyctrl) uses deprecated aiohttp arguments.
@pytest.mark.filterwarnings("ignore::DeprecationWarning:kubernetes_asyncio.config.openid")
async def test_oidc_expired_id_token_is_renewed_with_the_refresh_token(tmp_path: Path) -> None:
    """An expired id-token is renewed at the issuer at load, and again after a 401."""
    async with identity_provider() as (issuer, grants):
        data = simple()
        data["users"][0]["user"] = oidc_user(issuer, jwt(-dt.timedelta(hours=1), "old"))
        path = write(tmp_path / "kc", data)
        before = path.read_text()
        config = await load_kubeconfig(path)
        assert subject(await config.authorization()) == "n1"
        assert subject(await config.authorization()) == "n1"
        assert await config.refresh_credentials() is True
        assert subject(await config.authorization()) == "n2"
    assert grants == [
        {"grant_type": "refresh_token", "refresh_token": "refresh-0"},
        {"grant_type": "refresh_token", "refresh_token": "refresh-1"},
    ]
    assert path.read_text() == before


async def test_oidc_issuer_with_a_private_ca_is_trusted_through_the_kubeconfig(
    tmp_path: Path,
) -> None:
    """An HTTPS issuer with a private CA is trusted once idp-certificate-authority-data has it."""
    ca = certs.generate_ca("oidc-ca")
    serving = certs.server_ssl_context(certs.issue_serving_cert(ca, ["127.0.0.1"]))
    async with identity_provider(serving) as (issuer, grants):
        data = simple()
        user = oidc_user(issuer, jwt(-dt.timedelta(hours=1), "old"))
        user["auth-provider"]["config"]["idp-certificate-authority-data"] = base64.b64encode(
            ca.cert_pem
        ).decode()
        data["users"][0]["user"] = user
        config = await load_kubeconfig(write(tmp_path / "kc", data))
        assert subject(await config.authorization()) == "n1"
    assert len(grants) == 1


async def test_oidc_issuer_certificate_is_verified(tmp_path: Path) -> None:
    """An HTTPS issuer whose CA the kubeconfig does not name is refused, naming the file."""
    ca = certs.generate_ca("oidc-ca")
    serving = certs.server_ssl_context(certs.issue_serving_cert(ca, ["127.0.0.1"]))
    async with identity_provider(serving) as (issuer, grants):
        data = simple()
        data["users"][0]["user"] = oidc_user(issuer, jwt(-dt.timedelta(hours=1), "old"))
        path = write(tmp_path / "kc", data)
        with pytest.raises(ConfigError, match="certificate verify failed") as caught:
            await load_kubeconfig(path)
    assert str(path) in str(caught.value)
    assert grants == []


def gcp_user(tmp_path: Path) -> dict[str, Any]:
    """A GCP auth-provider user whose fake gcloud counts its runs and returns gcp-<n>."""
    script = tmp_path / "gcloud.py"
    expiry = rfc3339(dt.timedelta(hours=1))
    script.write_text(
        textwrap.dedent(
            f"""
            import json, pathlib
            counter = pathlib.Path({str(tmp_path / "runs")!r})
            n = int(counter.read_text()) + 1 if counter.exists() else 1
            counter.write_text(str(n))
            print(json.dumps({{"credential": {{"access_token": f"gcp-{{n}}",
                                               "token_expiry": {expiry!r}}}}}))
            """
        )
    )
    return {
        "auth-provider": {
            "name": "gcp",
            "config": {"cmd-path": sys.executable, "cmd-args": str(script)},
        }
    }


async def test_gcp_auth_provider_token_comes_from_gcloud_and_is_renewed(tmp_path: Path) -> None:
    """A GCP user gets its token from gcloud once while valid, and a new one after a 401."""
    data = simple()
    data["users"][0]["user"] = gcp_user(tmp_path)
    path = write(tmp_path / "kc", data)
    before = path.read_text()
    config = await load_kubeconfig(path)
    assert await config.authorization() == "Bearer gcp-1"
    assert await config.authorization() == "Bearer gcp-1"
    assert runs(tmp_path) == 1
    assert await config.refresh_credentials() is True
    assert await config.authorization() == "Bearer gcp-2"
    assert path.read_text() == before


class ScriptedCredentials:
    """Credentials due for renewal at a set time, counting renewals."""

    def __init__(self, renew_in: float | None, authorization: str | None = "Bearer x") -> None:
        self.renew_in = renew_in
        self.renewals = 0
        self.renewed = asyncio.Event()
        self._authorization = authorization

    async def authorization(self) -> str | None:
        return self._authorization

    async def refresh(self, *, force: bool) -> bool:
        self.renewals += 1
        self.renew_in = None
        self.renewed.set()
        return True

    def renew_at(self) -> dt.datetime | None:
        if self.renew_in is None:
            return None
        return dt.datetime.now(dt.UTC) + dt.timedelta(seconds=self.renew_in)


async def test_refresher_renews_when_the_credential_comes_due() -> None:
    """The background refresher waits until the credential's renewal time, then renews it."""
    credentials = ScriptedCredentials(renew_in=25)
    config = Config(Configuration(host="http://h:1"), credentials=credentials)
    clock = FakeClock()
    refresher = config.refresher(interval=40, clock=clock)
    assert isinstance(refresher, CredentialRefresher)
    async with asyncio.timeout(10), asyncio.TaskGroup() as tg:
        task = tg.create_task(refresher.start())
        await clock.wait_for_timers()
        deadline = clock.next_deadline
        assert deadline is not None
        assert 24 < deadline <= 25
        clock.advance(deadline)
        await clock.wait_for_timers()
        assert (credentials.renewals, refresher.refreshes) == (1, 1)
        # Expiry now unknown: the next check is one interval later.
        assert clock.next_deadline == pytest.approx(deadline + 40)
        task.cancel()


async def test_refresher_does_not_spin_on_an_already_due_credential() -> None:
    """A credential that is due at once is renewed no more than once a second."""
    credentials = ScriptedCredentials(renew_in=-100)
    config = Config(Configuration(host="http://h:1"), credentials=credentials)
    clock = FakeClock()
    async with asyncio.timeout(10), asyncio.TaskGroup() as tg:
        task = tg.create_task(config.refresher(clock=clock).start())
        await clock.wait_for_timers()
        assert clock.next_deadline == 1.0
        task.cancel()


async def test_the_manager_runs_the_credential_refresher(envtest: Environment) -> None:
    """A Manager renews its config's credentials in the background when they come due."""
    # Credentials the server accepts: the manager checks them before it starts.
    valid = await Config.from_configuration(envtest.config).authorization()
    credentials = ScriptedCredentials(renew_in=0, authorization=valid)
    config = Config(envtest.config, source="test", credentials=credentials)
    manager = Manager(config, Options(metrics_bind_address="0"))
    async with asyncio.timeout(10), asyncio.TaskGroup() as tg:
        task = tg.create_task(manager.start())
        await credentials.renewed.wait()
        task.cancel()
    assert credentials.renewals == 1
    assert manager.credential_refresher.refreshes == 1


def test_refresher_interval_must_be_positive() -> None:
    """A refresher interval of zero is refused."""
    config = Config(Configuration(host="http://h:1"))
    with pytest.raises(ValueError, match="interval must be > 0"):
        config.refresher(interval=0)


async def test_from_configuration_uses_the_api_key_prefix() -> None:
    """A Configuration with an api_key and prefix authenticates with both."""
    configuration = Configuration(host="http://h:1")
    configuration.api_key = {"BearerToken": "abc"}
    configuration.api_key_prefix = {"BearerToken": "Bearer"}
    config = Config.from_configuration(configuration)
    assert await config.authorization() == "Bearer abc"
    assert await config.refresh_credentials() is False


async def test_a_kubeconfig_that_is_not_utf8_is_one_line_naming_the_file(tmp_path: Path) -> None:
    """A kubeconfig with bytes that are not UTF-8 is a ConfigError naming file and offset."""
    path = tmp_path / "latin1"
    path.write_bytes(b"apiVersion: v1\nclusters: []\n# caf\xe9\n")
    with pytest.raises(ConfigError) as failed:
        await get_config(kubeconfig=path, environ={})
    message = str(failed.value)
    assert message == (
        f"kubeconfig {str(path)!r} is not UTF-8 text: byte 0xe9 at offset 33 is invalid"
    )
    assert failed.value.__cause__ is None
