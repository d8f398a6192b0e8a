from __future__ import annotations

import asyncio
import json
import ssl
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson
import pytest
import yaml
from kubernetes_asyncio.client import ApiClient, CoreV1Api

from pyctrl.envtest import CRDInstallError, Environment, EnvtestError, load_crds
from pyctrl.errors import ConfigError
from tests.kubectl import kubectl_path

if TYPE_CHECKING:
    from pathlib import Path

GROUP = "env.pyctrl.dev"
CRD_API = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def crd(plural: str = "things", kind: str = "Thing") -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


@pytest.fixture(autouse=True)
def _no_mode_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("USE_EXISTING_CLUSTER", "KUBEBUILDER_ASSETS"):
        monkeypatch.delenv(name, raising=False)


async def _request(
    env: Environment, method: str, path: str, *, token: bool = True
) -> tuple[int, Any]:
    context = ssl.create_default_context(cafile=env.config.ssl_ca_cert)
    headers = {"Authorization": env.config.api_key["BearerToken"]} if token else {}
    async with (
        aiohttp.ClientSession() as session,
        session.request(
            method, str(env.config.host) + path, headers=headers, ssl=context
        ) as response,
    ):
        body = await response.read()
        return response.status, orjson.loads(body) if body else None


async def _kubectl(kubeconfig: Path, cache: Path, *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        kubectl_path(),
        f"--kubeconfig={kubeconfig}",
        f"--cache-dir={cache}",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(30):
        out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


# -- lifecycle ---------------------------------------------------------------


async def test_embedded_mode_is_the_default() -> None:
    """Without settings the environment runs the embedded server over HTTPS."""
    async with Environment() as env:
        assert env.mode == "embedded"
        assert env.server is not None
        assert str(env.config.host).startswith("https://127.0.0.1:")
        assert env.config.host == env.server.url


async def test_stop_leaves_no_tasks_files_or_listener() -> None:
    """After stop no task the environment started runs, its files are gone, its port is closed."""
    before = asyncio.all_tasks()
    env = Environment()
    await env.start()
    directory = env.kubeconfig_path.parent
    port = int(str(env.config.host).rsplit(":", 1)[1])
    assert env.kubeconfig_path.exists()
    await env.stop()
    assert asyncio.all_tasks() <= before
    assert not directory.exists()
    with pytest.raises(ConnectionRefusedError):
        await asyncio.open_connection("127.0.0.1", port)


async def test_stop_twice_is_harmless_and_start_twice_is_an_error() -> None:
    """Stop is idempotent; starting a started environment is refused."""
    env = Environment()
    await env.start()
    with pytest.raises(EnvtestError, match="already started"):
        await env.start()
    await env.stop()
    await env.stop()
    with pytest.raises(EnvtestError, match="not started"):
        _ = env.config


async def test_config_authenticates_with_kubernetes_asyncio() -> None:
    """The Configuration works unchanged with kubernetes_asyncio's typed API."""
    async with Environment() as env, ApiClient(env.config) as api:
        namespaces = await CoreV1Api(api).list_namespace()
    assert "default" in {ns.metadata.name for ns in namespaces.items}


async def test_request_without_token_is_unauthorized() -> None:
    """A request without the bearer token gets a 401 Unauthorized Status."""
    async with Environment() as env:
        status, body = await _request(env, "GET", "/api/v1/namespaces", token=False)
    assert status == 401
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "Unauthorized", 401)


async def test_kubeconfig_holds_server_ca_and_token() -> None:
    """The kubeconfig names the server URL, embeds the CA and carries the token."""
    async with Environment() as env:
        config = yaml.safe_load(env.kubeconfig_path.read_text())
        assert env.kubeconfig_path.stat().st_mode & 0o077 == 0
        cluster = config["clusters"][0]["cluster"]
        assert cluster["server"] == env.config.host
        assert "certificate-authority-data" in cluster
        assert config["users"][0]["user"]["token"] == env.token


@pytest.mark.kubectl
async def test_kubeconfig_works_for_kubectl(tmp_path: Path) -> None:
    """`kubectl --kubeconfig <path> get ns` lists the namespaces of the embedded server."""
    async with Environment() as env:
        code, out, err = await _kubectl(
            env.kubeconfig_path, tmp_path, "get", "namespaces", "-o", "name"
        )
    assert code == 0, err
    assert "namespace/default" in out.split()


# -- CRDs --------------------------------------------------------------------


async def test_start_returns_with_crds_established_and_served() -> None:
    """After start each CRD is Established and its resource is listed by discovery."""
    async with Environment(crds=[crd()]) as env:
        assert [c["metadata"]["name"] for c in env.crds] == [f"things.{GROUP}"]
        status, live = await _request(env, "GET", f"{CRD_API}/things.{GROUP}")
        assert status == 200
        conditions = {c["type"]: c["status"] for c in live["status"]["conditions"]}
        assert conditions["Established"] == "True"
        _, listing = await _request(env, "GET", f"/apis/{GROUP}/v1")
        assert "things" in {r["name"] for r in listing["resources"]}


async def test_crds_from_files_and_directories(tmp_path: Path) -> None:
    """CRDs load from multi-document YAML, JSON and directories; other kinds are skipped."""
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "a.yaml").write_text(
        yaml.safe_dump_all([crd("alphas", "Alpha"), {"apiVersion": "v1", "kind": "ConfigMap"}])
    )
    (tmp_path / "dir" / "b.json").write_text(json.dumps(crd("betas", "Beta")))
    (tmp_path / "dir" / "notes.txt").write_text("not a manifest")
    (tmp_path / "single.yml").write_text(yaml.safe_dump(crd("gammas", "Gamma")))
    loaded = load_crds([tmp_path / "dir", str(tmp_path / "single.yml"), crd("deltas", "Delta")])
    assert [c["spec"]["names"]["plural"] for c in loaded] == ["alphas", "betas", "gammas", "deltas"]


async def test_missing_crd_path_is_an_error_naming_it(tmp_path: Path) -> None:
    """A CRD path that does not exist fails the start with its name in the message."""
    env = Environment(crds=[tmp_path / "absent.yaml"])
    with pytest.raises(CRDInstallError, match=r"absent\.yaml.*does not exist"):
        await env.start()


async def test_missing_crd_path_can_be_skipped(tmp_path: Path) -> None:
    """With error_if_crd_path_missing=False a missing path is skipped (controller-runtime's way)."""
    async with Environment(
        crd_directory_paths=[tmp_path / "absent"], error_if_crd_path_missing=False
    ) as env:
        assert env.crds == []


def test_old_crd_api_version_is_refused() -> None:
    """A v1beta1 CRD is refused with a message saying only v1 is served."""
    old = crd()
    old["apiVersion"] = "apiextensions.k8s.io/v1beta1"
    with pytest.raises(CRDInstallError, match=r"only apiextensions\.k8s\.io/v1"):
        load_crds([old])


def test_a_single_path_instead_of_a_list_is_refused() -> None:
    """Passing one path string as crds is a TypeError rather than a walk over its characters."""
    with pytest.raises(TypeError, match="sequence of paths"):
        Environment(crds="config/crd")


async def test_invalid_crd_fails_start_with_the_server_message() -> None:
    """A CRD the server rejects fails the start with a CRDInstallError quoting the server."""
    bad = crd()
    bad["spec"]["names"]["plural"] = "Things"
    with pytest.raises(CRDInstallError, match=r"cannot create CRD 'things\.env\.pyctrl\.dev'"):
        await Environment(crds=[bad]).start()


async def test_install_crds_after_start() -> None:
    """install_crds adds a CRD to a running environment and waits until it is served."""
    async with Environment() as env:
        [installed] = await env.install_crds([crd("laters", "Later")])
        assert installed["metadata"]["name"] == f"laters.{GROUP}"
        status, _ = await _request(env, "GET", f"/apis/{GROUP}/v1/namespaces/default/laters")
        assert status == 200


# -- existing cluster --------------------------------------------------------


async def test_existing_cluster_through_kubeconfig_installs_and_removes_crds() -> None:
    """An environment on an existing cluster installs its CRDs there and deletes them at stop."""
    async with Environment() as cluster:
        async with Environment(
            use_existing_cluster=True, kubeconfig=cluster.kubeconfig_path, crds=[crd()]
        ) as env:
            assert env.mode == "existing"
            assert env.server is None
            assert env.kubeconfig_path == cluster.kubeconfig_path
            status, _ = await _request(cluster, "GET", f"{CRD_API}/things.{GROUP}")
            assert status == 200
        status, _ = await _request(cluster, "GET", f"{CRD_API}/things.{GROUP}")
        assert status == 404


async def test_existing_cluster_can_be_connected_to_again() -> None:
    """Environments started one after the other on the same cluster each connect."""
    async with Environment() as cluster:
        for _ in range(2):
            async with Environment(
                use_existing_cluster=True, kubeconfig=cluster.kubeconfig_path
            ) as env:
                status, _ = await _request(env, "GET", "/api/v1/namespaces")
                assert status == 200


async def test_existing_cluster_keeps_crds_it_did_not_create() -> None:
    """A CRD that existed before the environment started is left in place at stop."""
    async with Environment(crds=[crd()]) as cluster:
        async with Environment(
            use_existing_cluster=True, kubeconfig=cluster.kubeconfig_path, crds=[crd()]
        ):
            pass
        status, _ = await _request(cluster, "GET", f"{CRD_API}/things.{GROUP}")
        assert status == 200


async def test_existing_cluster_from_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """USE_EXISTING_CLUSTER=true and KUBECONFIG select the existing cluster mode."""
    async with Environment() as cluster:
        monkeypatch.setenv("USE_EXISTING_CLUSTER", "true")
        monkeypatch.setenv("KUBECONFIG", str(cluster.kubeconfig_path))
        async with Environment() as env:
            assert env.mode == "existing"
            status, _ = await _request(env, "GET", "/api/v1/namespaces")
            assert status == 200
            with pytest.raises(EnvtestError, match="only available with the embedded"):
                _ = env.faults


async def test_existing_cluster_without_kubeconfig_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Asking for an existing cluster without any kubeconfig fails with ConfigError."""
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="no kubeconfig exists"):
        await Environment(use_existing_cluster=True).start()


def test_bad_use_existing_cluster_value_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A USE_EXISTING_CLUSTER value that is not a boolean is reported, not guessed."""
    monkeypatch.setenv("USE_EXISTING_CLUSTER", "sometimes")
    with pytest.raises(EnvtestError, match="USE_EXISTING_CLUSTER='sometimes'"):
        Environment().resolve_mode()


def test_explicit_mode_wins_over_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """mode='embedded' ignores USE_EXISTING_CLUSTER and KUBEBUILDER_ASSETS."""
    monkeypatch.setenv("USE_EXISTING_CLUSTER", "true")
    monkeypatch.setenv("KUBEBUILDER_ASSETS", "/nowhere")
    assert Environment(mode="embedded").resolve_mode() == "embedded"


# -- faults and exports ------------------------------------------------------


async def test_faults_reach_the_embedded_server() -> None:
    """env.faults is the embedded server's fault API: an injected failure is what clients see."""
    async with Environment() as env:
        env.faults.fail_next(1, verb="list", resource="namespaces", code=503)
        status, body = await _request(env, "GET", "/api/v1/namespaces")
        assert status == 503
        assert body["kind"] == "Status"
        status, _ = await _request(env, "GET", "/api/v1/namespaces")
        assert status == 200


def test_public_names_resolve() -> None:
    """Every name in pyctrl.envtest.__all__ resolves, the lazily imported server included."""
    from pyctrl import envtest

    assert envtest.__all__ == sorted(envtest.__all__)
    for name in envtest.__all__:
        assert getattr(envtest, name) is not None
    assert envtest.APIServer.__name__ == "APIServer"
