"""The demo's scenario: a cluster in the process, the MySrv operator, its samples, a check.

`run` plays it:

1. start pyctrl's embedded API server and install the MySrv CRD from
   ``examples/mysrv/config/crd``;
2. start the MySrv operator (controller and webhooks, with a throwaway serving
   certificate) and install its webhook configurations, so that the API server calls
   the webhooks;
3. start a stand-in for kube-controller-manager (`examples.demo.rollout`), so that
   Deployments become available as they would in a cluster;
4. apply the samples from ``examples/mysrv/samples``;
5. wait until every sample is what the operator promises (`unmet` lists what is not yet):
   its port defaulted to 80 when the sample names none, Available, its DNS record
   registered, its Service on that port and that URL in its status;
6. delete a Service the operator owns and wait until the operator has put it back.

Interactively, a live view (`examples.demo.view`) shows it all as it happens, and then
the API server stays up, with the kubeconfig printed, until Ctrl-C. With ``check`` the
same scenario runs without the live view and the result is the exit status: 0 when the
expected state was reached, 1 with what was missing when ``timeout`` ran out first.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import sys
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from kubernetes_asyncio.client import V1Service
from rich.live import Live

from examples.demo.rollout import add_rollout_simulator
from examples.demo.view import Snapshot, Step, render, take_snapshot
from examples.mysrv import make_operator
from examples.mysrv.api import AVAILABLE, DEFAULT_PORT, DNS_REGISTERED
from examples.mysrv.controller import ZONE
from examples.mysrv.dns import DNSZone
from pyctrl.certs import generate_ca, issue_serving_cert, write_cert_dir
from pyctrl.client import Client
from pyctrl.envtest import Environment
from pyctrl.errors import NotFoundError
from pyctrl.manager import Manager, Options
from pyctrl.meta import find_status_condition
from pyctrl.resource import Unstructured

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

    from rich.console import Console

__all__ = ["CRD_DIR", "NAMESPACE", "SAMPLES_DIR", "Settings", "load_samples", "run", "unmet"]

MYSRV_DIR = Path(__file__).resolve().parent.parent / "mysrv"
CRD_DIR = MYSRV_DIR / "config" / "crd"
"""The MySrv CRD, as generated from the Python types."""

SAMPLES_DIR = MYSRV_DIR / "samples"
"""The sample MySrvs the demo applies."""

NAMESPACE = "default"
"""Where the samples go."""

HEALED_SERVICE = "mysrv-sample"
"""The Service the demo deletes to show the operator putting it back."""

_POLL = 0.2


@dataclass(frozen=True)
class Settings:
    """How to run the demo.

    Attributes:
        check: Run without the live view and exit when done (CI).
        timeout: Seconds for the whole scenario to reach the expected state.
        rollout_delay: Seconds a Deployment takes to become available.
        workdir: A private directory for the certificates, the DNS records and the log.
        log_file: Where the operator's log goes (shown on failure).
    """

    check: bool
    timeout: float
    rollout_delay: float
    workdir: Path
    log_file: Path


def load_samples() -> list[dict[str, Any]]:
    """The sample MySrvs, as JSON objects placed in `NAMESPACE`."""
    samples = []
    for path in sorted(SAMPLES_DIR.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document:
                document.setdefault("metadata", {})["namespace"] = NAMESPACE
                samples.append(document)
    return samples


def unmet(snapshot: Snapshot, samples: list[dict[str, Any]]) -> list[str]:
    """What is not yet as the operator promises for ``samples`` (empty when all is)."""
    mysrvs = {m.metadata.name: m for m in snapshot.mysrvs}
    services = {s.metadata.name: s for s in snapshot.services}
    problems: list[str] = []
    for sample in samples:
        name = sample["metadata"]["name"]
        port = sample.get("spec", {}).get("port") or DEFAULT_PORT
        mysrv = mysrvs.get(name)
        if mysrv is None:
            problems.append(f"MySrv {name} does not exist")
            continue
        for type_ in (AVAILABLE, DNS_REGISTERED):
            condition = find_status_condition(mysrv.status.conditions, type_)
            if condition is None or condition.status != "True":
                said = f"{condition.status}: {condition.message}" if condition else "not reported"
                problems.append(f"MySrv {name} is not {type_} ({said})")
        if mysrv.spec.port != port:
            # A sample without a port gets 80 from the defaulting webhook.
            problems.append(f"MySrv {name} has port {mysrv.spec.port}, expected {port}")
        url = f"http://{name}.{NAMESPACE}.svc.cluster.local:{port}"
        if mysrv.status.url != url:
            problems.append(f"MySrv {name} reports URL {mysrv.status.url!r}, expected {url!r}")
        service = services.get(name)
        ports = [p.port for p in service.spec.ports or ()] if service is not None else []
        if ports != [port]:
            problems.append(f"Service {name} exposes ports {ports}, expected [{port}]")
        record = f"{name}.{NAMESPACE}.{ZONE}"
        if record not in snapshot.dns:
            problems.append(f"DNS record {record} is missing")
    return problems


@dataclass
class _Cluster:
    env: Environment
    client: Client
    zone: DNSZone


class _Demo:
    def __init__(self, settings: Settings, console: Console) -> None:
        self.settings = settings
        self.console = console
        self.steps = [
            Step("Start the embedded API server and install the MySrv CRD"),
            Step("Start the MySrv operator: its controller and webhooks"),
            Step("Start a Deployment rollout stand-in (nothing runs pods here)"),
            Step("Apply the samples (examples/mysrv/samples)"),
            Step("Wait until each MySrv is Available, its Service and URL on its port"),
            Step(f"Delete Service {HEALED_SERVICE}: the operator puts it back"),
        ]
        self.samples = load_samples()
        self.snapshot = Snapshot()
        self.footer: list[str] = []
        self.ready = False
        self.live: Live | None = None
        self._started = time.monotonic()

    # -- narration ----------------------------------------------------------------------

    def _show(self) -> None:
        if self.live is not None:
            self.live.update(render(self.snapshot, self.steps, self.footer))

    def _begin(self, index: int) -> Step:
        step = self.steps[index]
        step.state = "running"
        self._show()
        return step

    def _done(self, step: Step, detail: str = "") -> None:
        step.state, step.detail = "done", detail
        if self.live is None:
            elapsed = time.monotonic() - self._started
            suffix = f"  ({detail})" if detail else ""
            self.console.print(f"[{elapsed:5.1f}s] ✓ {step.title}{suffix}", highlight=False)
        self._show()

    # -- the scenario -------------------------------------------------------------------

    @asynccontextmanager
    async def _cluster(self) -> AsyncIterator[_Cluster]:
        workdir = self.settings.workdir
        zone = DNSZone(workdir / "dns-records.json")
        step = self._begin(0)
        # Always the embedded server: the demo needs no cluster and must not touch one.
        async with (
            Environment(mode="embedded", crds=[CRD_DIR]) as env,
            Client.from_config(env.config) as client,
        ):
            assert env.server is not None
            self._done(step, env.server.url)
            step = self._begin(1)
            ca = generate_ca("pyctrl-demo-webhook-ca")
            certs = write_cert_dir(workdir / "webhook-certs", issue_serving_cert(ca))
            operator = make_operator(dns=zone, webhooks=True)
            flags = [
                "--metrics-bind-address=0",
                "--health-probe-bind-address=0",
                "--webhook-port=0",
                f"--webhook-cert-dir={certs.directory}",
            ]
            operator_manager = await operator.create_manager(
                env.config, operator.parser().parse_args(flags)
            )
            # One loopback socket: on all interfaces port 0 differs between IPv4 and IPv6.
            operator_manager.webhook_server.host = "127.0.0.1"
            rollout_manager = Manager(env.config, Options(metrics_bind_address="0"))
            add_rollout_simulator(rollout_manager, delay=self.settings.rollout_delay)
            async with asyncio.TaskGroup() as tasks:
                running = [
                    tasks.create_task(operator_manager.start(), name="mysrv-operator"),
                ]
                await _started(operator_manager, running[0])
                server = operator_manager.webhook_server
                # From now on the API server calls the webhooks on every write of a MySrv.
                await env.install_webhooks(server, ca_bundle=ca.cert_pem)
                self._done(step, f"webhooks at https://127.0.0.1:{server.port}")
                step = self._begin(2)
                running.append(tasks.create_task(rollout_manager.start(), name="rollout"))
                await _started(rollout_manager, running[1])
                self._done(step, f"replicas available after {self.settings.rollout_delay:g} s")
                try:
                    yield _Cluster(env, client, zone)
                finally:
                    for task in running:
                        task.cancel()

    async def _refresh(self, cluster: _Cluster) -> None:
        while True:
            self.snapshot = await take_snapshot(cluster.client, cluster.zone, NAMESPACE)
            self._show()
            await asyncio.sleep(0.5)

    async def _until(self, cluster: _Cluster, done: Callable[[], Awaitable[bool]]) -> None:
        while True:
            self.snapshot = await take_snapshot(cluster.client, cluster.zone, NAMESPACE)
            if await done():
                return
            await asyncio.sleep(_POLL)

    async def _scenario(self, cluster: _Cluster) -> None:
        step = self._begin(3)
        for sample in self.samples:
            await cluster.client.apply(
                Unstructured(sample), field_manager="pyctrl-demo", force=True
            )
        self._done(step, ", ".join(s["metadata"]["name"] for s in self.samples))

        step = self._begin(4)

        async def expected_state() -> bool:
            return not unmet(self.snapshot, self.samples)

        await self._until(cluster, expected_state)
        self._done(step)

        step = self._begin(5)
        old = await cluster.client.get(V1Service, HEALED_SERVICE, NAMESPACE)
        await cluster.client.delete(old)

        async def put_back() -> bool:
            try:
                new = await cluster.client.get(V1Service, HEALED_SERVICE, NAMESPACE)
            except NotFoundError:
                return False
            return bool(new.metadata.uid != old.metadata.uid) and await expected_state()

        await self._until(cluster, put_back)
        self._done(step, "recreated with a new uid")

    def _interactive_footer(self, cluster: _Cluster) -> list[str]:
        # `nox -s demo` installs kubectl next to its Python when none is on PATH.
        beside = Path(sys.executable).parent / "kubectl"
        kubectl = "kubectl" if shutil.which("kubectl") or not beside.exists() else str(beside)
        return [
            "Everything keeps running until Ctrl-C. In another terminal:",
            f"  export KUBECONFIG={cluster.env.kubeconfig_path}",
            f"  {kubectl} get mysrv,deployments,services",
            f'  {kubectl} patch mysrv mysrv-hello --type=merge -p \'{{"spec":{{"port":8081}}}}\'',
            f"  {kubectl} delete mysrv mysrv-sample",
            f"DNS records: {cluster.zone.path}   operator log: {self.settings.log_file}",
        ]

    # -- running ------------------------------------------------------------------------

    async def play(self) -> int:
        try:
            async with asyncio.timeout(self.settings.timeout) as deadline:
                async with self._cluster() as cluster, asyncio.TaskGroup() as tasks:
                    refresher = tasks.create_task(self._refresh(cluster)) if self.live else None
                    await self._scenario(cluster)
                    deadline.reschedule(None)
                    self.ready = True
                    if self.settings.check:
                        self._report_success()
                        return 0
                    self.footer = self._interactive_footer(cluster)
                    self.console.print(
                        f"kubeconfig: {cluster.env.kubeconfig_path}\n"
                        f"export KUBECONFIG={cluster.env.kubeconfig_path}",
                        highlight=False,
                    )
                    self._show()
                    assert refresher is not None
                    await refresher
        except TimeoutError:
            timeout = self.settings.timeout
            self._report_failure(
                f"did not reach the expected state within {timeout:g} s",
                unmet(self.snapshot, self.samples),
            )
            return 1
        except Exception as exc:
            # Errors of the managers and of the scenario come grouped by their TaskGroups.
            errors = _leaves(exc)
            self._report_failure("failed: " + "; ".join(f"{type(e).__name__}: {e}" for e in errors))
            return 1
        return 0

    def _report_success(self) -> None:
        elapsed = time.monotonic() - self._started
        self.console.print(render(self.snapshot, self.steps))
        self.console.print(
            f"demo: expected state reached in {elapsed:.1f} s: every MySrv Available, "
            "with its Service, URL and DNS record; the port-less one defaulted to 80; "
            "a deleted Service put back.",
            highlight=False,
        )

    def _report_failure(self, what: str, problems: Sequence[str] = ()) -> None:
        if self.live is not None:
            self.live.stop()
        for step in self.steps:
            if step.state == "running":
                step.state = "failed"
        self.console.print(render(self.snapshot, self.steps))
        self.console.print(f"demo: {what}", style="bold red", highlight=False)
        for problem in problems:
            self.console.print(f"  - {problem}", highlight=False)
        with contextlib.suppress(OSError):
            tail = self.settings.log_file.read_text().splitlines()[-30:]
            if tail:
                self.console.print("last lines of the operator log:", highlight=False)
                self.console.print("\n".join(tail), highlight=False, markup=False)


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


async def _started(manager: Manager, task: asyncio.Task[None]) -> None:
    """Wait until ``manager`` has started; if its task ends first, raise its error."""
    async with asyncio.TaskGroup() as group:
        waiter = group.create_task(manager.wait_started())
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            waiter.cancel()
    if task.done():
        task.result()
        raise RuntimeError(f"{task.get_name()} stopped while starting")


async def run(settings: Settings, console: Console) -> int:
    """Play the scenario; return the exit status (see the module documentation).

    SIGINT and SIGTERM end it: interactively that is how the demo stops (0); before the
    expected state is reached it is an interruption (130).
    """
    demo = _Demo(settings, console)
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    interrupted = False

    def interrupt() -> None:
        nonlocal interrupted
        interrupted = True
        task.cancel()

    handled = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, interrupt)
            handled.append(signum)
    try:
        if settings.check:
            return await demo.play()
        with Live(render(demo.snapshot, demo.steps), console=console, refresh_per_second=4) as live:
            demo.live = live
            return await demo.play()
    except asyncio.CancelledError:
        if not interrupted:
            raise
        task.uncancel()
        return 0 if demo.ready and not settings.check else 130
    finally:
        for signum in handled:
            loop.remove_signal_handler(signum)
