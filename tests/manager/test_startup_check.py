"""The Manager's start-up check: a wrong CA, token or address fails at once, in one line."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import socket
import sys
from typing import TYPE_CHECKING

import pytest
import yaml
from aiohttp import web

from pyctrl._kubernetes import Configuration
from pyctrl.client import RESTClient
from pyctrl.envtest import Environment
from pyctrl.errors import ConnectionCheckError
from pyctrl.manager import Manager

from .conftest import Widget, options

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path


def _with_token(env: Environment, token: str) -> Configuration:
    config = copy.deepcopy(env.config)
    config.cert_file = None
    config.key_file = None
    config.refresh_api_key_hook = None
    config.api_key = {"BearerToken": f"Bearer {token}"}
    return config


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def _start(config: Configuration) -> ConnectionCheckError:
    manager = Manager(config, options())
    async with asyncio.timeout(30):
        with pytest.raises(ConnectionCheckError) as failed:
            await manager.start()
    assert "\n" not in str(failed.value)
    return failed.value


async def test_a_wrong_token_stops_start_with_401_unauthorized() -> None:
    """A token the server does not know ends start-up naming 401 Unauthorized."""
    async with Environment() as env:
        error = await _start(_with_token(env, "not-a-token"))
    assert "401 Unauthorized" in str(error)


async def test_a_wrong_ca_stops_start_with_tls_verification_failed() -> None:
    """A CA that did not sign the server's certificate ends start-up naming TLS."""
    async with Environment() as env:
        config = copy.deepcopy(env.config)
        config.ssl_ca_cert = None  # the system's CAs: none signed the test server
        error = await _start(config)
        assert "TLS verification failed" in str(error)
        assert str(env.config.host) in str(error)


async def test_a_closed_port_stops_start_with_connection_refused() -> None:
    """Nothing listening at the address ends start-up naming connection refused there."""
    async with Environment() as env:
        config = copy.deepcopy(env.config)
        port = _closed_port()
        config.host = f"https://127.0.0.1:{port}"
        error = await _start(config)
    assert f"connection refused at 127.0.0.1:{port}" in str(error)


async def test_pyctrl_run_reports_a_wrong_token_in_one_line(tmp_path: Path) -> None:
    """`pyctrl run` against a server that refuses its token prints one error line, exit 1."""
    (tmp_path / "nothing.py").write_text(
        "from pyctrl.app import Operator\n"
        "operator = Operator('nothing', types=[], setup=lambda manager: None)\n"
    )
    async with Environment() as env:
        kubeconfig = yaml.safe_load(env.kubeconfig_path.read_text())
        for user in kubeconfig["users"]:
            user["user"] = {"token": "not-a-token"}
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(kubeconfig))
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "pyctrl.cli",
            "run",
            "nothing:operator",
            f"--kubeconfig={path}",
            "--metrics-bind-address=0",
            "--health-probe-bind-address=0",
            cwd=tmp_path,
            env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        async with asyncio.timeout(40):
            stdout, stderr = await proc.communicate()
    lines = stderr.decode().strip().splitlines()
    assert proc.returncode == 1, stderr.decode()
    assert len(lines) == 1, stderr.decode()
    assert lines[0].startswith("error: ")
    assert "401 Unauthorized" in lines[0]
    assert stdout == b""


@contextlib.asynccontextmanager
async def _server_serving(*paths: str) -> AsyncIterator[Configuration]:
    """An HTTP server answering 200 with ``{}`` on ``paths`` and 404 elsewhere."""
    seen: list[str] = []

    async def answer(request: web.Request) -> web.Response:
        seen.append(request.path)
        if request.path in paths:
            return web.json_response({})
        return web.json_response(
            {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404,
             "reason": "NotFound", "message": "the server could not find the requested resource"},
            status=404,
        )  # fmt: skip

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield Configuration(host=f"http://127.0.0.1:{port}")
    finally:
        await runner.cleanup()


async def test_a_server_without_the_core_group_passes_the_check() -> None:
    """A CRD-only server answers ``GET /api`` with 404: the check asks what it serves."""
    async with _server_serving("/version", "/apis") as config:
        client = RESTClient(config)
        try:
            await client.check_connection()
            await client.check_connection(group_version=("", "v1"))
            await client.check_connection(group_version=("test.pyctrl.dev", "v1"))
        finally:
            await client.aclose()


async def test_a_server_without_version_fails_the_check_naming_the_path() -> None:
    """Something that is not an API server (no ``/version``) fails in one line."""
    async with _server_serving("/api", "/apis") as config:
        client = RESTClient(config)
        try:
            with pytest.raises(
                ConnectionCheckError, match=r"refused discovery \(GET /version\): 404"
            ):
                await client.check_connection()
        finally:
            await client.aclose()


async def test_a_manager_watching_a_kind_checks_its_group(env: Environment) -> None:
    """With a kind watched, the check reads its group's discovery, where a bad token fails."""
    manager = Manager(_with_token(env, "not-a-token"), options())
    manager.cache.get_informer(Widget)
    async with asyncio.timeout(30):
        with pytest.raises(ConnectionCheckError, match="401 Unauthorized"):
            await manager.start()
