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
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from examples.demo.scenario import load_samples, unmet
from examples.demo.view import Snapshot, Step, render
from examples.mysrv.api import MySrv
from kubernetes_asyncio.client import (
    V1Container,
    V1ContainerPort,
    V1Deployment,
    V1DeploymentSpec,
    V1DeploymentStatus,
    V1LabelSelector,
    V1ObjectMeta,
    V1OwnerReference,
    V1PodSpec,
    V1PodTemplateSpec,
    V1Service,
    V1ServicePort,
    V1ServiceSpec,
)
from rich.console import Console

from .conftest import REPO, Kubectl

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


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


@contextlib.asynccontextmanager
async def on_a_terminal(
    environ: dict[str, str],
) -> AsyncIterator[tuple[asyncio.subprocess.Process, asyncio.StreamReader]]:
    """``python -m examples.demo`` writing to a pseudo-terminal; yields it and the screen."""
    primary, secondary = pty.openpty()
    # A wide terminal, so that the footer's lines are not folded.
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 60, 200, 0, 0))
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
    try:
        yield process, screen
    finally:
        transport.close()
        if process.returncode is None:
            process.kill()
            await process.wait()


async def read_to_the_end(screen: asyncio.StreamReader) -> str:
    """Everything written to the terminal until its last writer is gone, without ANSI codes."""
    seen = b""
    with contextlib.suppress(OSError):  # EIO once the terminal's last writer is gone
        while chunk := await screen.read(65536):
            seen += chunk
    return ANSI.sub("", seen.decode(errors="replace"))


async def test_on_a_terminal_it_stays_up_for_kubectl_until_ctrl_c(tmp_path: Path) -> None:
    """On a terminal: the live view, then a kubeconfig kubectl can use; Ctrl-C ends it with 0."""
    environ = {k: v for k, v in os.environ.items() if k != "CI"}
    seen = ""
    async with on_a_terminal(environ) as (process, screen):
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
            await read_to_the_end(screen)
            code = await process.wait()
    assert code == 0, seen[-2000:]
    assert not await asyncio.to_thread(Path(kubeconfig).exists)


async def test_ci_set_runs_the_check_even_on_a_terminal() -> None:
    """With CI=true the demo runs non-interactively on a terminal too: it checks and exits 0."""
    async with on_a_terminal({**os.environ, "CI": "true"}) as (process, screen):
        async with asyncio.timeout(50):
            seen = await read_to_the_end(screen)
            code = await process.wait()
    assert code == 0, seen[-2000:]
    assert "demo: expected state reached" in seen
    assert "Ctrl-C" not in seen
    assert "export KUBECONFIG" not in seen


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


NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def owned_by(name: str) -> V1ObjectMeta:
    """Metadata of an object MySrv ``name`` controls, created 30 s before NOW."""
    owner = V1OwnerReference(
        api_version="myapp.example.com/v1alpha1", kind="MySrv", name=name, uid="u", controller=True
    )
    return V1ObjectMeta(
        name=name, owner_references=[owner], creation_timestamp=NOW - timedelta(seconds=30)
    )


def condition(type_: str, status: str, reason: str) -> dict[str, str]:
    return {"type": type_, "status": status, "reason": reason, "message": "",
            "lastTransitionTime": "2026-01-01T11:59:00Z"}  # fmt: skip


def screen_of(snapshot: Snapshot, steps: list[Step], footer: list[str]) -> str:
    """The view as a 160-column terminal shows it, without colours."""
    console = Console(width=160, color_system=None)
    with console.capture() as screen:
        console.print(render(snapshot, steps, footer))
    return screen.get()


def rows(screen: str, title: str) -> list[list[str]]:
    """The cells (separated by two spaces or more) of the table titled ``title``."""
    lines = screen.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == title)
    found = []
    # After the title: the header and its rule; the rows end at the next title.
    for line in lines[start + 3 :]:
        if not line.startswith(" "):
            break
        found.append(re.split(r"\s{2,}", line.strip()))
    return found


def test_the_view_shows_objects_conditions_events_and_steps() -> None:
    """render puts the steps, MySrvs with conditions, owned objects, DNS and events on screen."""
    sample = MySrv.model_validate({
        "metadata": {"name": "mysrv-sample", "namespace": "default"},
        "spec": {"name": "web", "port": 8080},
        "status": {
            "availableReplicas": 1,
            "url": "http://mysrv-sample.default.svc.cluster.local:8080",
            "conditions": [
                condition("Available", "True", "DeploymentAvailable"),
                condition("DNSRegistered", "False", "ZoneUnavailable"),
            ],
        },
    })  # fmt: skip
    leaving = MySrv.model_validate({
        "metadata": {"name": "mysrv-hello", "namespace": "default", "finalizers": ["dns/x"],
                     "deletionTimestamp": "2026-01-01T11:59:50Z"},
        "spec": {"name": "hello"},
    })  # fmt: skip
    container = V1Container(name="server", ports=[V1ContainerPort(container_port=8080)])
    deployment = V1Deployment(
        metadata=owned_by("mysrv-sample"),
        spec=V1DeploymentSpec(
            replicas=2,
            selector=V1LabelSelector(),
            template=V1PodTemplateSpec(spec=V1PodSpec(containers=[container])),
        ),
        status=V1DeploymentStatus(available_replicas=1),
    )
    service = V1Service(
        metadata=owned_by("mysrv-sample"),
        spec=V1ServiceSpec(cluster_ip="10.0.0.7", ports=[V1ServicePort(port=8080)]),
    )
    regarding = {"kind": "MySrv", "name": "mysrv-sample"}
    events = [
        {"type": "Normal", "reason": "DeploymentCreated", "regarding": regarding,
         "note": "created Deployment mysrv-sample", "eventTime": "2026-01-01T11:59:55Z"},
        {"type": "Warning", "reason": "DNSFailed", "regarding": regarding,
         "note": "zone unavailable", "metadata": {"creationTimestamp": "2026-01-01T11:59:58Z"}},
    ]  # fmt: skip
    snapshot = Snapshot(
        mysrvs=[sample, leaving],
        deployments=[deployment],
        services=[service],
        events=events,
        dns={"mysrv-sample.default.apps.example.com": "mysrv-sample.default.svc.cluster.local"},
        taken_at=NOW,
    )
    steps = [
        Step("apply the samples", "done"),
        Step("wait until Available", "running", "1/2"),
        Step("delete a Service"),
    ]
    screen = screen_of(snapshot, steps, ["Everything keeps running until Ctrl-C."])

    assert "✓ apply the samples" in screen
    assert "… wait until Available  1/2" in screen
    assert "Everything keeps running until Ctrl-C." in screen
    assert rows(screen, "MySrv (myapp.example.com/v1alpha1)") == [
        ["mysrv-sample", "web", "8080", "True", "False: ZoneUnavailable", "1",
         "http://mysrv-sample.default.svc.cluster.local:8080"],
        ["mysrv-hello", "hello", "(80)", "-", "-", "0"],
        ["deleting: waiting for finalizers"],
    ]  # fmt: skip
    owned = ["mysrv-sample", "MySrv/mysrv-sample", "30s"]
    [deployment_row] = rows(screen, "Deployments (apps/v1)")
    assert deployment_row == [owned[0], "1/2", "8080", *owned[1:]]
    [service_row] = rows(screen, "Services (v1)")
    assert service_row == [owned[0], "10.0.0.7", "8080/TCP", *owned[1:]]
    assert rows(screen, "DNS records (outside the cluster, simulated)") == [
        ["mysrv-sample.default.apps.example.com", "mysrv-sample.default.svc.cluster.local"]
    ]
    assert rows(screen, "Recent events (events.k8s.io/v1)") == [
        ["5s", "Normal", "DeploymentCreated", "mysrv/mysrv-sample",
         "created Deployment mysrv-sample"],
        ["2s", "Warning", "DNSFailed", "mysrv/mysrv-sample", "zone unavailable"],
    ]  # fmt: skip
