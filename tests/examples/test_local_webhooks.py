"""The local webhook development loop (``pyctrl run --webhook-host``) against the embedded server.

The embedded API server calls admission webhooks by URL as kube-apiserver does, so the
configurations registered for "this machine" (127.0.0.1 here) are exercised end to end:
kubectl writes go through the operator's webhooks, and after exit nothing is left.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from typing import TYPE_CHECKING, Any

import pytest
from examples.mysrv import make_operator

from pyctrl.webhook import write_local_certs

from .conftest import EXAMPLES, REPO, eventually, running

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from pyctrl.envtest import Environment

    from .conftest import Kubectl

CONFIGURATIONS = ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")


@pytest.fixture
def crds() -> Sequence[Any]:
    return [EXAMPLES / "mysrv" / "config" / "crd"]


def mysrv(object_name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "myapp.example.com/v1alpha1",
        "kind": "MySrv",
        "metadata": {"name": object_name},
        "spec": spec,
    }


async def registered_names(kubectl: Kubectl) -> set[str]:
    names: set[str] = set()
    for kind in CONFIGURATIONS:
        listed = await kubectl.json(kind)
        names |= {item["metadata"]["name"] for item in listed["items"]}
    return names


async def webhooks_in_use(kubectl: Kubectl) -> None:
    """A MySrv without a port gets port 80 (mutating); port 22 draws a warning (validating)."""
    await kubectl("apply", "-f", "-", stdin=mysrv("defaulted", name="web"))
    created = await kubectl.json("mysrv", "defaulted")
    assert created["spec"]["port"] == 80
    warned = await kubectl("apply", "-f", "-", stdin=mysrv("ssh", name="ssh", port=22))
    assert "privileged port" in warned.err


async def test_local_webhooks_register_work_and_are_removed_on_stop(
    env: Environment, kubectl: Kubectl, tmp_path: Path
) -> None:
    """Registered for 127.0.0.1 with a fresh CA, the webhooks serve kubectl; stop removes them."""
    operator = make_operator(webhooks=True)
    ca = write_local_certs("127.0.0.1", tmp_path / "certs")
    args = operator.parser().parse_args(
        [
            "--metrics-bind-address=0",
            "--health-probe-bind-address=0",
            "--webhook-port=0",
            f"--webhook-cert-dir={tmp_path / 'certs'}",
        ]
    )
    manager = await operator.create_manager(env.config, args)
    manager.webhook_server.host = "127.0.0.1"
    local = operator.local_webhooks(manager, "127.0.0.1", ca)
    manager.add(local)
    assert await registered_names(kubectl) == set()
    async with running(manager):
        async with asyncio.timeout(20):
            await local.registered.wait()
        assert await registered_names(kubectl) == {
            "mysrv-dev-mutating-webhook-configuration",
            "mysrv-dev-validating-webhook-configuration",
        }
        await webhooks_in_use(kubectl)
    assert await registered_names(kubectl) == set()
    allowed = await kubectl("apply", "-f", "-", stdin=mysrv("after", name="web"), check=False)
    assert allowed.code == 0, "no configuration is left to call a webhook that is gone"
    assert "port" not in (await kubectl.json("mysrv", "after"))["spec"], "nothing defaulted it"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_pyctrl_run_webhook_host_registers_and_cleans_up_on_sigint(
    env: Environment, kubectl: Kubectl
) -> None:
    """`pyctrl run --webhook-host 127.0.0.1` as a process: webhooks work, SIGINT removes them."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pyctrl.cli",
        "run",
        "--webhook-host=127.0.0.1",
        "examples.mysrv:operator",
        f"--kubeconfig={env.kubeconfig_path}",
        "--metrics-bind-address=0",
        "--health-probe-bind-address=0",
        f"--webhook-port={free_port()}",
        cwd=REPO,
        env={**os.environ, "ENABLE_WEBHOOKS": "true"},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    log: list[bytes] = []

    async def drain() -> None:
        assert process.stderr is not None
        while line := await process.stderr.readline():
            log.append(line)

    async with asyncio.TaskGroup() as tasks:
        tasks.create_task(drain())
        try:

            async def registered() -> bool:
                return len(await registered_names(kubectl)) == 2

            await eventually(registered, within=30)
            await webhooks_in_use(kubectl)
            process.send_signal(signal.SIGINT)
            async with asyncio.timeout(30):
                code = await process.wait()
            assert code == 0, b"".join(log).decode()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    assert await registered_names(kubectl) == set()
