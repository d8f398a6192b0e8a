"""The runtime's event path: events decoded on first use against events decoded up front.

An informer holding ``BENCH_EVENTPATH_SIZE`` (10,000) ``BenchItem``s hands them, as a
restart's initial list, to a controller's source (``GenerationChanged`` and the default
handler, triggers recorded) that fills a workqueue: the "queue fill" of a cold start. Two
peers in the same process, alternated ``BENCH_REPEAT`` (5) times, CPU time each:

- lazy: `pyctrl.source.Informer`, registered as a `pyctrl.cache.CachedEventHandler`:
  its events hold the cached entries, and nothing here reads ``.object``;
- eager: the same predicates, handler and queue behind a `ResourceEventHandler`, which
  the informer hands typed objects, decoded per event (how every event was delivered
  before events decoded lazily).

Run: ``python -m bench eventpath``.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import time
from typing import Any

from bench.operators import BenchItem
from pyctrl.cache._informer import Informer, InformerConfig, SharedInformer
from pyctrl.clock import RealClock
from pyctrl.event import CreateEvent, DeleteEvent, UpdateEvent
from pyctrl.handler import EnqueueRequestForObject
from pyctrl.meta import GroupVersionKind
from pyctrl.predicate import GenerationChanged
from pyctrl.scheme import default_scheme
from pyctrl.source import Informer as InformerSource
from pyctrl.source import dispatch
from pyctrl.workqueue import WorkQueue

SIZE = int(os.environ.get("BENCH_EVENTPATH_SIZE", "10000"))
REPEAT = int(os.environ.get("BENCH_REPEAT", "5"))
GVK = GroupVersionKind("bench.pyctrl.dev", "v1", "BenchItem")
SOURCE = "BenchItem.bench.pyctrl.dev"


class _Eager:
    """The source's work behind a ResourceEventHandler: typed objects, decoded per event."""

    def __init__(self, queue: WorkQueue[Any]) -> None:
        self._queue = queue
        self._handler, self._predicates = EnqueueRequestForObject(), (GenerationChanged(),)

    async def _dispatch(self, event: Any) -> None:
        await dispatch(
            event, self._handler, self._predicates, self._queue, source=SOURCE, kind="BenchItem"
        )

    async def add(self, obj: BenchItem, is_in_initial_list: bool) -> None:
        await self._dispatch(CreateEvent(obj, is_in_initial_list))

    async def update(self, old: BenchItem, new: BenchItem) -> None:
        await self._dispatch(UpdateEvent(old, new))

    async def delete(self, obj: BenchItem, delete_state_unknown: bool) -> None:
        await self._dispatch(DeleteEvent(obj, delete_state_unknown))


def _informer() -> SharedInformer:
    shared = SharedInformer(
        gvk=GVK,
        source=None,  # type: ignore[arg-type]  # never run: the store is filled here
        config=InformerConfig(),
        scheme=default_scheme(),
        clock=RealClock(),
        random=random.random,
    )
    for i in range(SIZE):
        key, entry = shared.store.encode(
            {
                "apiVersion": "bench.pyctrl.dev/v1",
                "kind": "BenchItem",
                "metadata": {
                    "name": f"item-{i:05d}",
                    "namespace": "default",
                    "uid": f"00000000-0000-4000-8000-{i:012d}",
                    "resourceVersion": str(100 + i),
                    "generation": 1,
                    "creationTimestamp": "2026-11-27T10:00:00Z",
                },
                "spec": {"value": i, "stamp": 1.5},
            }
        )
        shared.store.upsert(key, entry)
    return shared


async def _fill(lazy: bool) -> float:
    """CPU seconds from the handler's registration until every key is queued."""
    shared = _informer()
    queue: WorkQueue[Any] = WorkQueue(name=f"eventpath-{lazy}", record_triggers=True)
    view = Informer(shared, BenchItem)
    loop = asyncio.get_running_loop()
    started = time.process_time()
    if lazy:
        source = InformerSource(view, EnqueueRequestForObject(), GenerationChanged())
        registering = loop.create_task(source.start(queue))
        await asyncio.sleep(0)
    else:
        registering = None
        view.add_event_handler(_Eager(queue))
    listener = shared._processor.listeners[0]  # run here, not by a running informer
    delivering = loop.create_task(listener.run())
    while queue.statistics().depth < SIZE:  # noqa: ASYNC110 - the depth signals no event
        await asyncio.sleep(0)
    took = time.process_time() - started
    for task in (delivering, registering):
        if task is not None:
            task.cancel()
    return took


def main() -> dict[str, Any]:
    """Alternate the two peers and print the CPU time of each and their ratio."""
    lazy: list[float] = []
    eager: list[float] = []
    for rep in range(REPEAT):
        order = (True, False) if rep % 2 == 0 else (False, True)
        for is_lazy in order:
            (lazy if is_lazy else eager).append(asyncio.run(_fill(is_lazy)))
    ratios = [a / b for a, b in zip(lazy, eager, strict=True)]
    print(f"queue fill of {SIZE} initial objects, CPU ms, median (min-max) of {REPEAT}")
    for name, values in (("lazy", lazy), ("eager", eager)):
        ms = [v * 1000 for v in values]
        print(f"  {name:<6} {statistics.median(ms):8.0f} ({min(ms):.0f}-{max(ms):.0f})")
    print(f"  lazy/eager {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
    return {"lazy_s": lazy, "eager_s": eager, "ratio": statistics.median(ratios)}


if __name__ == "__main__":
    main()
