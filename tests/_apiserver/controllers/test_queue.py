"""The controllers' work queue: typed items, deduplicated, in order; errors end the run."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from pyctrl._apiserver.controllers.queue import WorkQueue


@dataclass(frozen=True, slots=True)
class Item:
    name: str


async def test_items_are_processed_once_in_the_order_first_queued() -> None:
    queue: WorkQueue[Item] = WorkQueue()
    seen: list[str] = []
    for name in ("a", "b", "a", "c", "b"):
        queue.add(Item(name))
    assert not queue.idle
    async with asyncio.TaskGroup() as tg:
        runner = tg.create_task(queue.run(lambda item: seen.append(item.name)))
        async with asyncio.timeout(5):
            await queue.wait_idle()
        runner.cancel()
    assert seen == ["a", "b", "c"]
    assert queue.idle


async def test_an_item_queued_while_processing_is_processed_too() -> None:
    queue: WorkQueue[Item] = WorkQueue()
    seen: list[str] = []

    def process(item: Item) -> None:
        seen.append(item.name)
        if item.name == "first":
            queue.add(Item("second"))

    queue.add(Item("first"))
    async with asyncio.TaskGroup() as tg:
        runner = tg.create_task(queue.run(process))
        async with asyncio.timeout(5):
            await queue.wait_idle()
        runner.cancel()
    assert seen == ["first", "second"]


async def test_an_error_while_processing_ends_the_run_with_it() -> None:
    queue: WorkQueue[Item] = WorkQueue()

    def process(item: Item) -> None:
        raise ValueError(f"cannot process {item.name}")

    queue.add(Item("broken"))
    with pytest.raises(ValueError, match="cannot process broken"):
        async with asyncio.timeout(5):
            await queue.run(process)
