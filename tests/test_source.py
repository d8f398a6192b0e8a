"""pyctrl.source: the Channel source's buffer, and objects without metadata in it."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from typing import Any

import pytest
import structlog

from pyctrl import log, predicate, tracing
from pyctrl.event import GenericEvent
from pyctrl.handler import EnqueueRequestsFromMapFunc
from pyctrl.reconcile import Request
from pyctrl.source import Channel, dispatch
from pyctrl.workqueue import Trigger, WorkQueue


class Collecting:
    """A queue that records what it is given and signals once it holds ``expected`` keys."""

    def __init__(self, expected: int) -> None:
        self.items: list[Request] = []
        self.expected = expected
        self.full = asyncio.Event()

    def add(self, item: Request, *, priority: int = 0, trigger: Trigger | None = None) -> None:
        self.items.append(item)
        if len(self.items) == self.expected:
            self.full.set()


def _obj(i: int) -> dict[str, Any]:
    return {"metadata": {"name": f"o{i}", "namespace": "ns"}}


async def test_channel_buffers_1024_objects_by_default() -> None:
    """A Channel holds 1024 unsent objects; one more is refused, or waited for by send()."""
    channel = Channel()
    for i in range(1024):
        channel.send_nowait(_obj(i))
    with pytest.raises(asyncio.QueueFull):
        channel.send_nowait(_obj(1024))
    queue = Collecting(1025)
    async with asyncio.TaskGroup() as tg:
        sending = tg.create_task(channel.send(_obj(1024)))
        await asyncio.sleep(0)
        assert not sending.done()
        source = tg.create_task(channel.start(queue))
        async with asyncio.timeout(10):
            await queue.full.wait()
        assert sending.done()
        source.cancel()
    assert queue.items == [Request("ns", f"o{i}") for i in range(1025)]


def test_channel_buffer_size_must_be_positive() -> None:
    """A buffer of zero is refused with the size named."""
    with pytest.raises(ValueError, match="buffer_size must be at least 1, got 0"):
        Channel(buffer_size=0)


@dataclass(frozen=True, slots=True)
class Reading:
    """Not a Kubernetes object: what a Channel may carry (sources are generic)."""

    room: str
    temperature: float


@pytest.mark.parametrize("tracing_on", [False, True], ids=["plain", "tracing"])
async def test_a_channel_carries_objects_without_metadata_with_their_provenance(
    tracing_on: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reading mapped to a key reaches the queue, its trigger naming it by its repr."""
    if tracing_on:
        from opentelemetry.sdk.trace import TracerProvider

        monkeypatch.setattr(tracing, "tracer", lambda: TracerProvider().get_tracer("t"))
    queue: WorkQueue[Request] = WorkQueue(record_triggers=True)
    channel = Channel(
        EnqueueRequestsFromMapFunc(lambda reading: [Request("ns", reading.room)]),
        predicate.Funcs(on_generic=lambda _event: True),
    )
    channel.send_nowait(Reading("bedroom", 21.5))
    async with asyncio.TaskGroup() as tg:
        source = tg.create_task(channel.start(queue))
        async with asyncio.timeout(10):
            key = await queue.get()
        source.cancel()
    assert key == Request("ns", "bedroom")
    (trigger,) = queue.triggers(key)
    assert (trigger.kind, trigger.source) == ("channel", "channel")
    assert trigger.object == "Reading(room='bedroom', temperature=21.5)"
    assert trigger.resource_version == ""
    queue.shut_down()


async def test_a_predicate_drops_an_object_without_metadata_and_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """At debug level the dropped reading is named by its repr, not refused as an object."""
    saved = structlog.get_config()
    log.configure(development=False, level="DEBUG", stream=sys.stdout)
    try:
        handled: list[Any] = []

        def handle(reading: Reading) -> list[Request]:
            handled.append(reading)
            return []

        await dispatch(
            GenericEvent(Reading("attic", 40.0)),
            EnqueueRequestsFromMapFunc(handle),
            (predicate.Funcs(on_generic=lambda _event: False),),
            WorkQueue[Request](record_triggers=True),
            source="channel",
        )
    finally:
        structlog.configure(**saved)
    assert handled == []
    assert "Reading(room='attic', temperature=40.0)" in capsys.readouterr().out
