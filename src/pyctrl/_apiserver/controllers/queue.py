"""The work queue each of the server's controllers drains: typed items, deduplicated, in order.

Like client-go's workqueue as kube-controller-manager uses it: an item queued again before it
is processed is processed once, items are processed in the order they were first queued, and
one worker per controller drains the queue. Items are small frozen dataclasses, one class per
kind of work, so a controller's queue says what it is asked to do.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable

__all__ = ["WorkQueue"]

T = TypeVar("T", bound="Hashable")

_BATCH = 64
"""Items processed between two yields to the request handlers."""


class WorkQueue(Generic[T]):
    """A deduplicating FIFO of work items, drained by `run` until cancelled."""

    def __init__(self) -> None:
        self._items: OrderedDict[T, None] = OrderedDict()
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()

    def add(self, item: T) -> None:
        """Queue ``item`` (once: an item already waiting is not queued twice)."""
        self._items[item] = None
        self._idle.clear()
        self._wake.set()

    @property
    def idle(self) -> bool:
        """Whether nothing is queued or being processed."""
        return not self._items and self._idle.is_set()

    async def run(self, process: Callable[[T], None]) -> None:
        """Process items with ``process`` until cancelled; its error ends the run."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            processed = 0
            while self._items:
                item, _ = self._items.popitem(last=False)
                process(item)
                processed += 1
                if processed % _BATCH == 0:
                    # Let request handlers run between batches of controller work.
                    await asyncio.sleep(0)
            self._idle.set()

    async def wait_idle(self) -> None:
        """Return once the queue is empty and its last item processed."""
        while not self.idle:
            await self._idle.wait()
            await asyncio.sleep(0)
