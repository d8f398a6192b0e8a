"""Per-object daemons (pyctrl.daemon), end to end on the embedded API server under a Manager."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from pydantic import Field

from pyctrl import metrics
from pyctrl.builder import controller_managed_by
from pyctrl.client import MergePatch
from pyctrl.controllerutil import Finalizer, Finalizers
from pyctrl.crd import crd_for
from pyctrl.daemon import Daemon, DaemonContext
from pyctrl.envtest import Environment
from pyctrl.errors import NotFoundError
from pyctrl.manager import Manager
from pyctrl.meta import ObjectMeta
from pyctrl.reconcile import Request, Result
from pyctrl.resource import CustomResource, Unstructured
from pyctrl.source import SyncingSource
from pyctrl.testing import eventually, running
from pyctrl.timer import Timer

from .conftest import DECODED, DecodeCounted, Widget, WidgetSpec, options

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

FINALIZER = "test.pyctrl.dev/daemon"


def _widget(name: str) -> Widget:
    return Widget(metadata=ObjectMeta(name=name, namespace="default"))


class Watcher:
    """A cooperative daemon: records what it saw, until asked to stop."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.sizes: dict[str, list[int]] = {}
        self.finished: set[str] = set()

    async def __call__(self, ctx: DaemonContext[Widget]) -> None:
        name = ctx.request.name
        self.started.append(name)
        try:
            while not ctx.stopping:
                self.sizes.setdefault(name, []).append(ctx.object.spec.size)
                await ctx.wait_changed()
        finally:
            self.finished.add(name)


class Nothing:
    """A reconciler with nothing to do: the daemons are under test."""

    async def reconcile(self, request: Request) -> Result:
        return Result()


async def _until(check: Any) -> None:
    async def ready() -> bool:
        return bool(check())

    await eventually(ready)


async def test_daemon_starts_for_existing_and_new_objects_with_the_latest_object(
    env: Environment,
) -> None:
    """A Widget existing at start and one created later both get a daemon that sees changes."""
    manager = Manager(env.config, options())
    old = await manager.client.create(_widget("old"))
    watcher = Watcher()
    controller_managed_by(manager).for_(Widget).daemon(watcher).complete(Nothing())
    async with running(manager):
        await _until(lambda: "old" in watcher.started)
        await manager.client.create(_widget("new"))
        await _until(lambda: "new" in watcher.started)
        await manager.client.patch(old, MergePatch({"spec": {"size": 7}}))
        await _until(lambda: watcher.sizes["old"][-1:] == [7])
    assert sorted(watcher.started) == ["new", "old"]
    assert watcher.finished == {"new", "old"}, "shutdown stops every daemon"


async def test_daemon_stops_before_the_finalizer_is_released(env: Environment) -> None:
    """Deleting a Widget stops its daemon; the finalizer goes only after the daemon finished."""
    manager = Manager(env.config, options())
    watcher = Watcher()
    daemon = Daemon(manager.cache, Widget, watcher, stop_timeout=10)
    finalizers = Finalizers()
    finalizers.register(FINALIZER, daemon)
    finished_when_released: list[bool] = []

    class Finalizing:
        async def reconcile(self, request: Request) -> Result:
            try:
                widget = await manager.client.get(Widget, request.name, request.namespace)
            except NotFoundError:
                return Result()
            result = await finalizers.finalize(widget)
            if result.updated:
                if widget.metadata.deletion_timestamp is not None:
                    finished_when_released.append(request.name in watcher.finished)
                await manager.client.update(widget)
            return Result()

    controller_managed_by(manager).for_(Widget).daemon(daemon).complete(Finalizing())
    async with running(manager):
        widget = await manager.client.create(_widget("w"))
        await _until(lambda: "w" in watcher.started)

        async def finalized() -> bool:
            live = await manager.api_reader.get(Widget, "w", "default")
            return FINALIZER in (live.metadata.finalizers or [])

        await eventually(finalized)
        await manager.client.delete(widget)

        async def gone() -> bool:
            try:
                await manager.api_reader.get(Widget, "w", "default")
            except NotFoundError:
                return True
            return False

        await eventually(gone)
        assert not daemon.running(Request("default", "w"))
    assert finished_when_released == [True]


async def test_daemon_is_restarted_after_a_crash_and_counted(env: Environment) -> None:
    """A daemon raising twice is restarted with backoff, and each crash is counted."""
    manager = Manager(env.config, options())
    runs: list[int] = []

    async def flaky(ctx: DaemonContext[Widget]) -> None:
        runs.append(len(runs))
        if len(runs) <= 2:
            raise RuntimeError(f"crash {len(runs)}")
        await ctx.wait_stopping()

    daemon = Daemon(manager.cache, Widget, flaky, name="flaky-e2e", backoff=0.01)
    before = metrics.registry.get_sample_value(
        "pyctrl_daemon_crashes_total", {"daemon": "flaky-e2e"}
    )
    controller_managed_by(manager).for_(Widget).daemon(daemon).complete(Nothing())
    async with running(manager):
        await manager.client.create(_widget("w"))
        await _until(lambda: len(runs) == 3)
        assert daemon.running(Request("default", "w"))
        running_now = metrics.registry.get_sample_value(
            "pyctrl_daemons_running", {"daemon": "flaky-e2e"}
        )
        assert running_now == 1
    after = metrics.registry.get_sample_value(
        "pyctrl_daemon_crashes_total", {"daemon": "flaky-e2e"}
    )
    assert (after or 0) - (before or 0) == 2


async def test_shutdown_cancels_a_deaf_daemon_within_the_graceful_timeout(
    env: Environment,
) -> None:
    """A daemon ignoring its stop signal is cancelled once the manager's graceful timeout ends."""
    manager = Manager(env.config, options(graceful_shutdown_timeout=0.5))
    stop_seen = asyncio.Event()
    cancelled = asyncio.Event()
    started = asyncio.Event()

    async def deaf(ctx: DaemonContext[Widget]) -> None:
        started.set()
        try:
            await ctx.wait_stopping()
            stop_seen.set()
            await asyncio.Event().wait()  # ignores the request to stop
        except asyncio.CancelledError:
            cancelled.set()
            raise

    daemon = Daemon(manager.cache, Widget, deaf, stop_timeout=600)
    controller_managed_by(manager).for_(Widget).daemon(daemon).complete(Nothing())
    await manager.client.create(_widget("w"))
    async with asyncio.timeout(20), running(manager):  # leaving the block stops the manager
        await started.wait()
    assert stop_seen.is_set(), "the daemon was asked to stop first"
    assert cancelled.is_set(), "then cancelled, long before its own 600 s stop_timeout"


async def test_stop_timeout_cancels_a_daemon_that_does_not_return(env: Environment) -> None:
    """Daemon.stop returns once stop_timeout has passed, having cancelled the daemon."""
    manager = Manager(env.config, options())
    cancelled = asyncio.Event()

    async def deaf(ctx: DaemonContext[Widget]) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    daemon = Daemon(manager.cache, Widget, deaf, stop_timeout=0.05)
    controller_managed_by(manager).for_(Widget).daemon(daemon).complete(Nothing())
    async with running(manager):
        await manager.client.create(_widget("w"))
        key = Request("default", "w")
        await _until(lambda: daemon.running(key))
        await daemon.stop(key)
        assert cancelled.is_set()
        assert not daemon.running(key)


async def test_when_limits_daemons_to_matching_objects(env: Environment) -> None:
    """A daemon with when= runs only while the object matches, and stops when it no longer does."""
    manager = Manager(env.config, options())
    watcher = Watcher()
    controller_managed_by(manager).for_(Widget).daemon(
        watcher, when=lambda w: w.spec.color == "red"
    ).complete(Nothing())
    async with running(manager):
        blue = await manager.client.create(_widget("blue"))
        red = _widget("red")
        red.spec.color = "red"
        red = await manager.client.create(red)
        await _until(lambda: "red" in watcher.started)
        await manager.client.patch(red, MergePatch({"spec": {"color": "green"}}))
        await _until(lambda: "red" in watcher.finished)
        await manager.client.patch(blue, MergePatch({"spec": {"color": "red"}}))
        await _until(lambda: "blue" in watcher.started)


async def test_daemons_run_only_on_the_leader_and_hand_over(env: Environment) -> None:
    """Only the leader runs daemons; when it steps down its daemon ends before the next starts."""
    log: list[str] = []

    def replica(name: str) -> Manager:
        manager = Manager(
            env.config,
            options(
                leader_election=True,
                leader_election_id="daemon-leader",
                leader_election_namespace="default",
                lease_duration=2.0,
                renew_deadline=1.5,
                retry_period=0.25,
                leader_election_release_on_cancel=True,
                identity=name,
            ),
        )

        async def daemon(ctx: DaemonContext[Widget]) -> None:
            log.append(f"{name} started")
            try:
                await ctx.wait_stopping()
            finally:
                log.append(f"{name} stopped")

        controller_managed_by(manager).for_(Widget).daemon(daemon).complete(Nothing())
        return manager

    a, b = replica("a"), replica("b")
    await a.client.create(_widget("w"))
    async with asyncio.TaskGroup() as tg:
        task_a = tg.create_task(a.start())
        async with asyncio.timeout(20):
            await a.elected()
        task_b = tg.create_task(b.start())
        async with asyncio.timeout(20):
            await b.wait_started()
        await _until(lambda: "a started" in log)
        assert b.elector is not None
        assert not b.elector.is_leader
        task_a.cancel()
        await _until(lambda: "b started" in log)
        task_b.cancel()
    assert log == ["a started", "a stopped", "b started", "b stopped"]


def test_timer_and_daemon_are_syncing_sources_and_the_daemon_a_finalizer(
    env: Environment,
) -> None:
    """A Timer and a Daemon plug in where a SyncingSource goes; a Daemon where a Finalizer goes."""
    manager = Manager(env.config, options())

    async def fn(ctx: DaemonContext[Widget]) -> None:
        await ctx.wait_stopping()

    daemon = Daemon(manager.cache, Widget, fn)
    timer: SyncingSource = Timer(manager.cache, Widget, 10)
    as_source: SyncingSource = daemon
    as_finalizer: Finalizer = daemon
    assert isinstance(timer, SyncingSource)
    assert isinstance(as_source, SyncingSource)
    assert as_finalizer is daemon
    assert daemon.name.endswith("fn")


async def test_a_daemon_that_returns_is_not_started_again_for_its_object(
    env: Environment,
) -> None:
    """A daemon returning on its own is done for that object: later changes do not restart it."""
    manager = Manager(env.config, options())
    runs: list[str] = []

    async def once(ctx: DaemonContext[Widget]) -> None:
        runs.append(ctx.request.name)

    witness = Watcher()
    controller_managed_by(manager).for_(Widget).daemon(once).daemon(witness).complete(Nothing())
    async with running(manager):
        widget = await manager.client.create(_widget("w"))
        await _until(lambda: runs == ["w"] and "w" in witness.started)
        for size in (5, 6):
            await manager.client.patch(widget, MergePatch({"spec": {"size": size}}))
            await _until(lambda size=size: witness.sizes["w"][-1:] == [size])
    assert runs == ["w"]


class Gizmo(CustomResource, DecodeCounted, group="test.pyctrl.dev", version="v1"):
    """A custom resource that counts how often it is decoded."""

    spec: WidgetSpec = Field(default_factory=WidgetSpec)


@pytest.fixture
async def gizmo_env() -> AsyncIterator[Environment]:
    async with Environment(crds=[crd_for(Gizmo)]) as environment:
        yield environment


async def test_changes_are_not_decoded_for_a_daemon_that_does_not_read_its_object(
    gizmo_env: Environment,
) -> None:
    """Changes reach the daemon undecoded; its first read of ctx.object decodes the latest once."""
    manager = Manager(gizmo_env.config, options())
    changes: list[int] = []
    last: list[int] = []

    async def quiet(ctx: DaemonContext[Gizmo]) -> None:
        try:
            while not ctx.stopping:
                await ctx.wait_changed()
                changes.append(len(DECODED))
        finally:
            last.append(ctx.object.spec.size)  # the first read: one decode, of the latest
            last.append(ctx.object.spec.size)  # the same object: no second decode

    controller_managed_by(manager).for_(Gizmo).daemon(quiet).complete(Nothing())
    gizmo = Unstructured(  # the test's own writes never build a Gizmo
        {
            "apiVersion": "test.pyctrl.dev/v1",
            "kind": "Gizmo",
            "metadata": {"name": "g", "namespace": "default"},
        }
    )
    DECODED.clear()
    async with running(manager):
        gizmo = await manager.client.create(gizmo)
        for size in (5, 6, 7):
            await manager.client.patch(gizmo, MergePatch({"spec": {"size": size}}))
        await _until(lambda: changes)
        await manager.client.delete(gizmo)  # after the patches in the daemon's event order
        await _until(lambda: last)
    assert changes, "the daemon saw the changes"
    assert set(changes) == {0}, "no change was decoded while the daemon ran"
    assert last == [7, 7]
    assert DECODED == ["g"]
