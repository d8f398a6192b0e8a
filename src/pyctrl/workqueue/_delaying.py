"""The delayed keys of a workqueue, and the one timer that makes them ready.

As client-go's delaying queue, without its goroutine: delayed keys wait in a heap by due
time, and a single timer on the queue's `pyctrl.clock.Clock`, set at the earliest due
time, hands them to the ready keys. A timer set earlier than needed just re-arms.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable
from typing import TYPE_CHECKING, Generic, TypeVar

from pyctrl.workqueue._priority import COMPACT_SLACK, DELAYED

if TYPE_CHECKING:
    import itertools
    from collections.abc import Callable

    from pyctrl.clock import Clock, TimerHandle
    from pyctrl.workqueue._priority import Entry

__all__ = ["DelayedKeys"]

K = TypeVar("K", bound=Hashable)


class DelayedKeys(Generic[K]):
    """Delayed keys by due time, and the timer at the earliest of them.

    Args:
        clock: The queue's clock.
        seq: The queue's sequence counter.
        on_due: Called with each delayed key whose time has come (the queue makes it ready).
        stopped: Whether the queue is shut down (then no timer is armed).
    """

    __slots__ = ("_clock", "_on_due", "_seq", "_stopped", "_timer", "_timer_due", "count", "heap")

    def __init__(
        self,
        clock: Clock,
        seq: itertools.count[int],
        on_due: Callable[[Entry[K]], None],
        stopped: Callable[[], bool],
    ) -> None:
        self._clock = clock
        self._seq = seq
        self._on_due = on_due
        self._stopped = stopped
        # (due, seq, entry): delayed keys by due time. seq is unique, so entries
        # themselves are never compared.
        self.heap: list[tuple[float, int, Entry[K]]] = []
        self.count = 0
        """How many keys are delayed (the heap also holds stale elements)."""
        self._timer: TimerHandle | None = None
        self._timer_due: float | None = None

    def push(self, entry: Entry[K]) -> None:
        """Delay a key until its ``due`` time (the caller counts it in `count`)."""
        entry.state = DELAYED
        seq = next(self._seq)
        entry.delay_seq = seq
        heap = self.heap
        heapq.heappush(heap, (entry.due, seq, entry))
        if len(heap) > 2 * self.count + COMPACT_SLACK:
            heap[:] = [e for e in heap if e[2].state == DELAYED and e[2].delay_seq == e[1]]
            heapq.heapify(heap)
        self.arm_timer()

    def _next_due(self) -> float | None:
        heap = self.heap
        while heap:
            due, seq, entry = heap[0]
            if entry.state == DELAYED and entry.delay_seq == seq:
                return due
            heapq.heappop(heap)
        return None

    def arm_timer(self) -> None:
        """Set the timer at the earliest due time (or cancel it if there is none)."""
        # One clock timer at the earliest due time moves delayed keys to ready and wakes
        # a getter, so no task polls. A timer set earlier than needed just re-arms.
        due = self._next_due()
        if due is None or self._stopped():
            self.cancel_timer()
            return
        if self._timer is not None and self._timer_due is not None and self._timer_due <= due:
            return
        self.cancel_timer()
        self._timer_due = due
        self._timer = self._clock.call_at(due, self._on_timer)

    def cancel_timer(self) -> None:
        """Cancel the timer, if set."""
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None
        self._timer_due = None

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_due = None
        if not self._stopped():
            self.promote_due()
            self.arm_timer()

    def promote_due(self) -> None:
        """Hand every key whose due time has come to ``on_due``."""
        heap = self.heap
        if not heap:
            return
        now = self._clock.now()
        promoted = False
        while heap and heap[0][0] <= now:
            _, seq, entry = heapq.heappop(heap)
            if entry.state == DELAYED and entry.delay_seq == seq:
                self.count -= 1
                self._on_due(entry)
                promoted = True
        if promoted:
            self.arm_timer()
