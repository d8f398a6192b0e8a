"""Fixtures for end-to-end tests of the manager stack on the embedded API server."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import pytest
from pydantic import Field

from pyctrl.crd import crd_for
from pyctrl.envtest import Environment
from pyctrl.manager import Manager, Options
from pyctrl.meta import Condition, KubeModel
from pyctrl.resource import CustomResource

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable


class WidgetSpec(KubeModel):
    """Desired state: what to put in the owned ConfigMap."""

    color: str = "blue"
    size: int = 1


class WidgetStatus(KubeModel):
    """Observed state."""

    observed_generation: int = 0
    config_map: str = ""
    conditions: list[Condition] = Field(default_factory=list)


class Widget(CustomResource, group="test.pyctrl.dev", version="v1"):
    """A test custom resource that owns a ConfigMap."""

    spec: WidgetSpec = Field(default_factory=WidgetSpec)
    status: WidgetStatus = Field(default_factory=WidgetStatus)


@pytest.fixture
async def env() -> AsyncIterator[Environment]:
    async with Environment(crds=[crd_for(Widget)]) as environment:
        yield environment


@asynccontextmanager
async def running(manager: Manager) -> AsyncIterator[asyncio.Task[None]]:
    """Run the manager in a task owned by this block; cancel and await it on exit."""
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(manager.start())
        waiter = tg.create_task(manager.wait_started())
        async with asyncio.timeout(20):
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            waiter.cancel()
            task.result()
        yield task
        task.cancel()


def options(**kw: Any) -> Options:
    """Manager options for tests: no metrics port clash, quick sync timeout."""
    return Options(metrics_bind_address="127.0.0.1:0", cache_sync_timeout=20, **kw)


async def eventually(check: Callable[[], Awaitable[bool]]) -> None:
    """Wait (15 s at most) until ``check`` returns True: the state lives in the server."""
    async with asyncio.timeout(15):
        while not await check():  # noqa: ASYNC110 - no event to wait on across HTTP
            await asyncio.sleep(0.02)
