"""pyctrl.source: the Channel source's buffer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pyctrl.reconcile import Request
from pyctrl.source import Channel


class Collecting:
    """A queue that records what it is given and signals once it holds ``expected`` keys."""

    def __init__(self, expected: int) -> None:
        self.items: list[Request] = []
        self.expected = expected
        self.full = asyncio.Event()

    def add(self, item: Request, *, priority: int = 0) -> None:
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
