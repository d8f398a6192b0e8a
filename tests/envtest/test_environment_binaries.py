"""The binaries mode, driven with stand-in etcd and kube-apiserver executables.

Real binaries cannot be downloaded here, so these tests use small Python programs
that take the same flags: the stand-in kube-apiserver serves ``/readyz`` over TLS
with the generated certificate and checks the token file, which proves the flags
and files the environment prepares, its readiness wait and its shutdown.
"""

from __future__ import annotations

import json
import os
import ssl
import sys
import textwrap
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest

from pyctrl.envtest import (
    BinariesNotFoundError,
    ControlPlaneError,
    Environment,
    EnvtestError,
    _binaries,
)

if TYPE_CHECKING:
    from pathlib import Path

_FAKE_APISERVER = """
import http.server, json, os, ssl, sys
args = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
with open(os.path.join(os.environ["FAKE_RECORD_DIR"], "kube-apiserver.json"), "w") as f:
    json.dump({"argv": sys.argv[1:], "pid": os.getpid()}, f)
if os.environ.get("FAKE_APISERVER_FAIL"):
    print("boom: unknown flag --frobnicate", flush=True)
    sys.exit(3)
token = open(args["--token-auth-file"]).read().split(",")[0]

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ok = self.headers.get("Authorization") == "Bearer " + token
        status = 200 if ok and self.path == "/readyz" else 401 if not ok else 404
        self.send_response(status)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass

server = http.server.HTTPServer((args["--bind-address"], int(args["--secure-port"])), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(args["--tls-cert-file"], args["--tls-private-key-file"])
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
"""

_FAKE_ETCD = """
import json, os, signal, sys
with open(os.path.join(os.environ["FAKE_RECORD_DIR"], "etcd.json"), "w") as f:
    json.dump({"argv": sys.argv[1:], "pid": os.getpid()}, f)
if os.environ.get("FAKE_ETCD_IGNORE_TERM"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
while True:
    signal.pause()
"""


def _write_program(path: Path, body: str) -> None:
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    path.chmod(0o755)


@pytest.fixture
def assets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "bin"
    directory.mkdir()
    _write_program(directory / "kube-apiserver", _FAKE_APISERVER)
    _write_program(directory / "etcd", _FAKE_ETCD)
    record = tmp_path / "record"
    record.mkdir()
    monkeypatch.setenv("FAKE_RECORD_DIR", str(record))
    monkeypatch.delenv("USE_EXISTING_CLUSTER", raising=False)
    return directory


def _recorded(assets: Path, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((assets.parent / "record" / f"{name}.json").read_text())
    return data


def _flags(argv: list[str]) -> dict[str, str]:
    return dict(a.split("=", 1) for a in argv if "=" in a)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_binaries_mode_serves_through_generated_config(assets: Path) -> None:
    """With a binaries directory the environment runs them and its config reaches them."""
    async with Environment(binary_assets_directory=assets) as env:
        assert env.mode == "binaries"
        assert env.server is None
        context = ssl.create_default_context(cafile=env.config.ssl_ca_cert)
        headers = {"Authorization": env.config.api_key["BearerToken"]}
        async with (
            aiohttp.ClientSession(headers=headers) as session,
            session.get(f"{env.config.host}/readyz", ssl=context) as response,
        ):
            assert response.status == 200


async def test_binaries_get_consistent_ports_and_files(assets: Path) -> None:
    """kube-apiserver is pointed at etcd's client URL and at the generated token and CA."""
    async with Environment(binary_assets_directory=assets) as env:
        apiserver = _flags(_recorded(assets, "kube-apiserver")["argv"])
        etcd = _flags(_recorded(assets, "etcd")["argv"])
        assert apiserver["--etcd-servers"] == etcd["--listen-client-urls"]
        assert env.config.host == f"https://127.0.0.1:{apiserver['--secure-port']}"
        token_file = apiserver["--token-auth-file"]
        with open(token_file) as f:  # noqa: ASYNC230 - a small local file
            assert f.read().startswith(f"{env.token},envtest-admin,1,")
        assert apiserver["--authorization-mode"] == "RBAC"
        assert apiserver["--client-ca-file"] == env.config.ssl_ca_cert


async def test_stop_terminates_processes_and_removes_files(assets: Path) -> None:
    """After stop no control-plane process is alive and the temporary directory is gone."""
    env = Environment(binary_assets_directory=assets)
    await env.start()
    directory = env.kubeconfig_path.parent
    pids = [_recorded(assets, n)["pid"] for n in ("etcd", "kube-apiserver")]
    assert all(_alive(pid) for pid in pids)
    await env.stop()
    assert not any(_alive(pid) for pid in pids)
    assert not directory.exists()


async def test_process_ignoring_sigterm_is_killed(
    assets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that ignores SIGTERM is killed once the stop timeout passes."""
    monkeypatch.setenv("FAKE_ETCD_IGNORE_TERM", "1")
    env = Environment(binary_assets_directory=assets, control_plane_stop_timeout=0.2)
    await env.start()
    pid = _recorded(assets, "etcd")["pid"]
    await env.stop()
    assert not _alive(pid)


async def test_apiserver_failing_at_start_reports_its_output(
    assets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If kube-apiserver exits while starting, the error shows its output and etcd is stopped."""
    monkeypatch.setenv("FAKE_APISERVER_FAIL", "1")
    env = Environment(binary_assets_directory=assets)
    with pytest.raises(ControlPlaneError, match="exited with code 3") as caught:
        await env.start()
    assert "boom: unknown flag --frobnicate" in str(caught.value)
    assert not _alive(_recorded(assets, "etcd")["pid"])


async def test_missing_directory_is_a_clear_error(tmp_path: Path) -> None:
    """A binaries directory that does not exist is named in the error."""
    env = Environment(binary_assets_directory=tmp_path / "nowhere")
    with pytest.raises(BinariesNotFoundError, match=r"nowhere.*not a directory"):
        await env.start()


async def test_missing_binary_from_kubebuilder_assets_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KUBEBUILDER_ASSETS without kube-apiserver selects binaries mode and names what is missing."""
    _write_program(tmp_path / "etcd", _FAKE_ETCD)
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(tmp_path))
    monkeypatch.delenv("USE_EXISTING_CLUSTER", raising=False)
    env = Environment()
    assert env.resolve_mode() == "binaries"
    with pytest.raises(
        BinariesNotFoundError, match=r"KUBEBUILDER_ASSETS.*no executable kube-apiserver"
    ):
        await env.start()


async def test_faults_are_refused_outside_embedded_mode(assets: Path) -> None:
    """Fault injection raises a clear error when the server is not the embedded one."""
    async with Environment(binary_assets_directory=assets) as env:
        with pytest.raises(EnvtestError, match="only available with the embedded API server"):
            _ = env.faults


def _files(tmp_path: Path) -> _binaries.ControlPlaneFiles:
    return _binaries.ControlPlaneFiles(
        directory=tmp_path,
        etcd_data_dir=tmp_path / "etcd",
        ca_file=tmp_path / "ca.crt",
        cert_file=tmp_path / "tls.crt",
        key_file=tmp_path / "tls.key",
        token_file=tmp_path / "token.csv",
        client_cert_file=tmp_path / "admin.crt",
        client_key_file=tmp_path / "admin.key",
        delegation_kubeconfig=tmp_path / "delegation.kubeconfig",
        sa_key_file=tmp_path / "sa.key",
        sa_pub_file=tmp_path / "sa.pub",
        etcd_client_port=2379,
        etcd_peer_port=2380,
        apiserver_port=6443,
    )


def test_extra_apiserver_flags_override_defaults_or_append(tmp_path: Path) -> None:
    """A --name=value extra flag replaces the default of that name; other flags are appended."""
    args = _binaries.kube_apiserver_args(
        _files(tmp_path), ["--authorization-mode=AlwaysAllow", "--v=4", "--profiling"]
    )
    flags = _flags(args)
    assert flags["--authorization-mode"] == "AlwaysAllow"
    assert args.count("--authorization-mode=AlwaysAllow") == 1
    assert args[-2:] == ["--v=4", "--profiling"]
    assert flags["--service-account-issuer"] == "https://127.0.0.1:6443/"


def test_etcd_flags_use_the_chosen_ports(tmp_path: Path) -> None:
    """The etcd flags listen and advertise on the prepared client and peer ports."""
    flags = _flags(_binaries.etcd_args(_files(tmp_path)))
    assert flags["--listen-client-urls"] == "http://127.0.0.1:2379"
    assert flags["--advertise-client-urls"] == "http://127.0.0.1:2379"
    assert flags["--listen-peer-urls"] == "http://127.0.0.1:2380"
    assert flags["--data-dir"] == str(tmp_path / "etcd")
