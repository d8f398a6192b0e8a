"""The demo: its non-interactive run as CI runs it, and the check it makes.

The runs are real processes (``python -m examples.demo``), started from the repository
root the way the README says, with their output piped.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import pty
import re
import signal
import struct
import sys
import termios
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from examples.demo.scenario import load_samples, unmet
from examples.demo.view import Snapshot
from examples.mysrv.api import MySrv
from kubernetes_asyncio.client import (
    V1ObjectMeta,
    V1Service,
    V1ServicePort,
    V1ServiceSpec,
)

from .conftest import REPO, Kubectl


@dataclass
class Finished:
    code: int
    out: str
    err: str


async def demo(*args: str, within: float = 50.0) -> Finished:
    """Run ``python -m examples.demo <args>`` with piped output (not a terminal)."""
    environ = {k: v for k, v in os.environ.items() if k != "CI"}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "examples.demo",
        *args,
        cwd=REPO,
        env=environ,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(within):
            out, err = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode is not None
    return Finished(process.returncode, out.decode(), err.decode())


async def test_check_mode_exits_0_once_the_expected_state_is_reached() -> None:
    """`--check` plays the whole scenario and reports success with exit status 0."""
    run = await demo("--check")
    assert run.code == 0, run.out + run.err
    assert "demo: expected state reached" in run.out
    progress = [line for line in run.out.splitlines() if line.startswith("[")]
    assert len(progress) == 6
    assert all("✓" in line for line in progress)
    assert "http://mysrv-hello.default.svc.cluster.local:80" in run.out


async def test_without_a_terminal_the_demo_runs_the_check() -> None:
    """With stdout piped and no flag, the demo runs non-interactively and exits."""
    run = await demo()
    assert run.code == 0, run.out + run.err
    assert "demo: expected state reached" in run.out
    assert "Ctrl-C" not in run.out


async def test_check_mode_fails_with_what_is_missing_when_time_runs_out() -> None:
    """When the deadline passes first, exit status 1 and a message naming what is missing."""
    run = await demo("--check", "--timeout", "4", "--rollout-delay", "60")
    assert run.code == 1, run.out + run.err
    assert "demo: did not reach the expected state within 4 s" in run.out
    assert "MySrv mysrv-sample is not Available" in run.out


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


async def test_on_a_terminal_it_stays_up_for_kubectl_until_ctrl_c(tmp_path: Path) -> None:
    """On a terminal: the live view, then a kubeconfig kubectl can use; Ctrl-C ends it with 0."""
    primary, secondary = pty.openpty()
    # A wide terminal, so that the footer's lines are not folded.
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 60, 200, 0, 0))
    environ = {k: v for k, v in os.environ.items() if k != "CI"}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "examples.demo",
        cwd=REPO,
        env=environ,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=secondary,
        stderr=secondary,
    )
    os.close(secondary)
    loop = asyncio.get_running_loop()
    screen = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(screen), os.fdopen(primary, "rb", buffering=0)
    )
    seen = ""
    try:
        async with asyncio.timeout(40):
            while (found := re.search(r"export KUBECONFIG=(\S+)", seen)) is None:
                chunk = await screen.read(65536)
                assert chunk, f"the demo ended early: {seen[-2000:]}"
                seen += ANSI.sub("", chunk.decode(errors="replace"))
            kubeconfig = found.group(1)
            kubectl = Kubectl(kubeconfig, tmp_path / "kube-cache", "default")
            listed = await kubectl("get", "mysrv", "-o", "name")
            assert sorted(listed.out.split()) == [
                "mysrv.myapp.example.com/mysrv-hello",
                "mysrv.myapp.example.com/mysrv-sample",
            ]
            process.send_signal(signal.SIGINT)
            # Keep reading: a demo blocked on a full terminal could not stop.
            with contextlib.suppress(OSError):  # EIO once the terminal's last writer is gone
                while await screen.read(65536):
                    pass
            code = await process.wait()
    finally:
        transport.close()
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert code == 0, seen[-2000:]
    assert not await asyncio.to_thread(Path(kubeconfig).exists)


async def test_bad_flags_are_refused() -> None:
    """A non-positive timeout is a usage error naming the flag."""
    run = await demo("--timeout", "0")
    assert run.code == 2
    assert "--timeout must be positive" in run.err


def test_an_empty_cluster_misses_every_sample() -> None:
    """Before anything is applied, the check names each sample as missing."""
    names = [s["metadata"]["name"] for s in load_samples()]
    assert unmet(Snapshot(), load_samples()) == [f"MySrv {name} does not exist" for name in names]


def promised(sample: dict[str, Any]) -> tuple[MySrv, V1Service, str]:
    """A MySrv, its Service and its DNS record as the operator leaves them."""
    name = sample["metadata"]["name"]
    port = sample["spec"].get("port", 80)
    conditions = [
        {"type": type_, "status": "True", "reason": "Ok"}
        for type_ in ("Available", "DNSRegistered")
    ]
    status = {"url": f"http://{name}.default.svc.cluster.local:{port}", "conditions": conditions}
    service = V1Service(
        metadata=V1ObjectMeta(name=name, namespace="default"),
        spec=V1ServiceSpec(ports=[V1ServicePort(port=port)]),
    )
    spec = {**sample["spec"], "port": port}
    mysrv = MySrv.model_validate({**sample, "spec": spec, "status": status})
    return mysrv, service, f"{name}.default.apps.example.com"


def snapshot_of(parts: list[tuple[MySrv, V1Service, str]]) -> Snapshot:
    """A snapshot holding these MySrvs, Services and DNS records."""
    return Snapshot(
        mysrvs=[m for m, _, _ in parts],
        services=[s for _, s, _ in parts],
        dns={record: "target" for _, _, record in parts},
    )


def test_the_promised_state_meets_the_check() -> None:
    """Defaulted, Available, registered, the right URL and Service port: nothing unmet."""
    samples = load_samples()
    assert unmet(snapshot_of([promised(sample) for sample in samples]), samples) == []


def portless(samples: list[dict[str, Any]]) -> int:
    return next(i for i, s in enumerate(samples) if "port" not in s["spec"])


def test_a_portless_sample_must_have_been_defaulted_to_80() -> None:
    """The check insists the defaulting webhook gave the sample without a port port 80."""
    samples = load_samples()
    parts = [promised(sample) for sample in samples]
    index = portless(samples)
    parts[index][0].spec.port = None
    name = samples[index]["metadata"]["name"]
    assert unmet(snapshot_of(parts), samples) == [f"MySrv {name} has port None, expected 80"]


def test_a_portless_sample_must_be_served_on_port_80() -> None:
    """The check insists the sample without a port gets a Service on port 80."""
    samples = load_samples()
    parts = [promised(sample) for sample in samples]
    index = portless(samples)
    parts[index][1].spec.ports = [V1ServicePort(port=8080)]
    name = samples[index]["metadata"]["name"]
    assert unmet(snapshot_of(parts), samples) == [
        f"Service {name} exposes ports [8080], expected [80]"
    ]
