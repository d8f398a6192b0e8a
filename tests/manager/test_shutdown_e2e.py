"""Manager shutdown with reconciles in flight: signals, cancellation, the graceful timeout."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from typing import TYPE_CHECKING

from pyctrl.builder import controller_managed_by
from pyctrl.client import Client
from pyctrl.manager import Manager
from pyctrl.meta import ObjectMeta
from pyctrl.reconcile import Request, Result
from pyctrl.testing import eventually

from .conftest import Widget, options

if TYPE_CHECKING:
    from pyctrl.controller import Controller
    from pyctrl.envtest import Environment

# Far above how long a prompt shutdown takes, far below the 30 s graceful timeout.
PROMPTLY = 5.0


class Blocking:
    """Blocks in its first reconcile until released; then writes the Widget's status."""

    def __init__(self, manager: Manager) -> None:
        self.client = manager.client
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.finished = False
        self.cancelled = False

    async def reconcile(self, request: Request) -> Result:
        self.started.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        widget = await self.client.get(Widget, request.name, request.namespace)
        widget.status.observed_generation = widget.metadata.generation or 0
        await self.client.status().update(widget)
        self.finished = True
        return Result()


async def _start_blocked(
    env: Environment, graceful: float = 30.0
) -> tuple[Manager, Controller, Blocking]:
    manager = Manager(env.config, options(graceful_shutdown_timeout=graceful))
    reconciler = Blocking(manager)
    controller = controller_managed_by(manager).for_(Widget).complete(reconciler)
    return manager, controller, reconciler


async def _in_flight(manager: Manager, reconciler: Blocking) -> None:
    """Wait for the manager to start, then create a Widget and wait until its reconcile blocks."""
    async with asyncio.timeout(20):
        await manager.wait_started()
    await manager.client.create(Widget(metadata=ObjectMeta(name="w", namespace="default")))
    async with asyncio.timeout(20):
        await reconciler.started.wait()


async def _draining(controller: Controller) -> None:
    """Wait until the controller stopped taking work (its graceful wait has begun)."""

    async def shut_down() -> bool:
        return controller.queue.shutting_down

    await eventually(shut_down)


async def test_second_sigterm_forces_shutdown_of_a_stuck_reconcile(env: Environment) -> None:
    """With a reconcile stuck and a 30 s graceful timeout, a second SIGTERM stops run() at once."""
    manager, controller, reconciler = await _start_blocked(env)
    async with asyncio.TaskGroup() as tg:
        run = tg.create_task(manager.run())
        await _in_flight(manager, reconciler)
        os.kill(os.getpid(), signal.SIGTERM)
        await _draining(controller)
        assert not run.done()
        os.kill(os.getpid(), signal.SIGTERM)
        done, _ = await asyncio.wait({run}, timeout=PROMPTLY)
        assert done == {run}, "run() still waiting after the second SIGTERM"
    assert run.result() is None
    assert reconciler.cancelled
    assert not reconciler.finished


async def test_one_sigterm_waits_for_the_in_flight_reconcile(env: Environment) -> None:
    """After one SIGTERM, run() waits for the reconcile in flight, which completes its write."""
    manager, controller, reconciler = await _start_blocked(env)
    async with asyncio.TaskGroup() as tg:
        run = tg.create_task(manager.run())
        await _in_flight(manager, reconciler)
        os.kill(os.getpid(), signal.SIGTERM)
        await _draining(controller)
        assert not run.done()
        reconciler.release.set()
        done, _ = await asyncio.wait({run}, timeout=PROMPTLY)
        assert done == {run}
    assert run.result() is None
    assert reconciler.finished
    assert not reconciler.cancelled


async def test_cancel_lets_the_blocked_reconcile_write_its_status(env: Environment) -> None:
    """Cancelling start() drains: the blocked reconcile's status write reaches the server."""
    graceful = 10.0
    manager, controller, reconciler = await _start_blocked(env, graceful)
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(manager.start())
        await _in_flight(manager, reconciler)
        task.cancel()
        cancelled = time.monotonic()
        await _draining(controller)
        reconciler.release.set()
        done, _ = await asyncio.wait({task}, timeout=graceful)
        assert done == {task}
        assert time.monotonic() - cancelled < graceful
    assert task.cancelled()
    assert reconciler.finished
    async with Client.from_config(env.config) as client:
        live = await client.get(Widget, "w", "default")
    assert live.status.observed_generation == 1


async def test_force_stop_cuts_the_drain_of_an_embedded_manager_short(env: Environment) -> None:
    """After cancelling start(), force_stop() cancels the stuck reconcile and start() ends."""
    manager, controller, reconciler = await _start_blocked(env)
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(manager.start())
        await _in_flight(manager, reconciler)
        task.cancel()
        await _draining(controller)
        assert not task.done()
        manager.force_stop()
        done, _ = await asyncio.wait({task}, timeout=PROMPTLY)
        assert done == {task}
    assert task.cancelled()
    assert reconciler.cancelled
