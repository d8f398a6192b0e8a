"""Lease fencing: work done under a Lease stops, by the local clock, before the Lease can pass on.

A `LeaseFence` guards whatever a process does because it holds a Lease: the Manager's
leader-only controllers, a shard's slot (one Lease per slot), a per-object daemon. It
knows when the last successful acquire or renew of the Lease *started* and the renew
deadline, and answers one question cheaply and synchronously: may Lease-held work still
act? `pyctrl.leaderelection.LeaderElector` feeds it (`LeaseFence.acquired`,
`LeaseFence.renewed`); the work asks it (`LeaseFence.valid`, `LeaseFence.raise_if_lost`),
waits on it (`LeaseFence.wait_lost`) or is told (`LeaseFence.on_lost`).

The contract:

- A *term* starts with `acquired` and ends when the fence is *lost*: once the local
  monotonic clock reaches ``start of the last successful renew + renew_deadline``
  (`expired`), or when the holder gives the Lease up (`release`). A lost term never comes
  back: `renewed` after the deadline does nothing, and only a new `acquired` opens a new
  term (a slot won again).
- The deadline is read from the clock at every check, so a check never depends on the
  renewing task having run: a process resumed after a pause (SIGSTOP, a frozen VM, a long
  GC) sees the expired time in its very first check, before any timer or I/O callback of
  its own.
- A timer also fires at the deadline and ends the term then, running the `on_lost`
  callbacks synchronously from the event loop. Callbacks run before any task resumed by
  the same loop iteration's I/O: a callback that cancels tasks (a controller's in-flight
  reconciles) cancels them before they take another step.
- Before the first `acquired` (state *idle*) nothing is fenced: `raise_if_lost` passes,
  `valid` is False.

Why it is safe: the deadline is counted from when the renew request *started*, so the
server wrote the renewed record after it; any other candidate counts its
``lease_duration`` from when it first saw that record, so later still. With
``renew_deadline < lease_duration`` and clocks that run at about the same *rate* (their
values never matter), the fence closes before anyone else can take the Lease over.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import enum
from typing import TYPE_CHECKING

from pyctrl.clock import Clock, RealClock, TimerHandle
from pyctrl.errors import LeaseLostError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["LeaseFence", "check_work_fences", "fenced_by", "work_fences"]


class _State(enum.Enum):
    IDLE = "idle"
    HELD = "held"
    LOST = "lost"


class LeaseFence:
    """The local clock's answer to "may Lease-held work still act?" (see the module docs).

    Args:
        renew_deadline: Seconds after the start of the last successful acquire or renew
            when the term ends; must be below the Lease's duration.
        clock: The monotonic clock (tests pass a `pyctrl.clock.FakeClock`); use the same
            one as the `pyctrl.leaderelection.LeaderElector` that feeds the fence.
        name: What the fence guards (``namespace/name`` of the Lease), for messages.
    """

    __slots__ = (
        "_callbacks",
        "_clock",
        "_deadline",
        "_lost_event",
        "_reason",
        "_state",
        "_timer",
        "name",
        "renew_deadline",
    )

    def __init__(
        self, renew_deadline: float, *, clock: Clock | None = None, name: str = ""
    ) -> None:
        if not renew_deadline > 0:
            raise ValueError(f"renew_deadline must be positive, got {renew_deadline!r}")
        self.renew_deadline = float(renew_deadline)
        self.name = name or "lease"
        self._clock = clock or RealClock()
        self._state = _State.IDLE
        self._deadline = 0.0
        self._timer: TimerHandle | None = None
        self._callbacks: list[Callable[[], object]] = []
        self._lost_event: asyncio.Event | None = None
        self._reason = ""

    # fed by the elector -------------------------------------------------------------------

    def acquired(self, started_at: float) -> None:
        """Open a new term: an acquire whose request started at ``started_at`` succeeded."""
        if self._state is _State.HELD:
            self.renewed(started_at)
            return
        self._state = _State.HELD
        self._reason = ""
        if self._lost_event is not None and self._lost_event.is_set():
            self._lost_event = None  # waiters of the ended term were woken already
        self._deadline = started_at + self.renew_deadline
        self._arm()
        self.valid()  # an acquire that took longer than the deadline ends the term at once

    def renewed(self, started_at: float) -> bool:
        """Extend the term: a renew whose request started at ``started_at`` succeeded.

        Returns:
            False when the term had already ended: it is not revived (the Lease may have
            had another holder meanwhile).
        """
        if not self.valid():
            return False
        deadline = started_at + self.renew_deadline
        if deadline > self._deadline:
            self._deadline = deadline
            self._arm()
        return True

    def release(self) -> None:
        """End the term now: the holder gives the Lease up (or stops holding it)."""
        if self._state is _State.HELD:
            self._end("the Lease was released")

    # asked by the work --------------------------------------------------------------------

    @property
    def deadline(self) -> float | None:
        """The clock time at which the current term ends; None when no term runs."""
        return self._deadline if self._state is _State.HELD else None

    @property
    def lost(self) -> bool:
        """Whether a term was held and has ended (and no new one began)."""
        self.valid()
        return self._state is _State.LOST

    def valid(self) -> bool:
        """Whether a term runs and its deadline is still ahead (one clock read)."""
        if self._state is not _State.HELD:
            return False
        now = self._clock.now()
        if now < self._deadline:
            return True
        self._end(
            f"not renewed within the {self.renew_deadline:g}s renew deadline "
            f"(expired {now - self._deadline:.3f}s ago)"
        )
        return False

    def raise_if_lost(self) -> None:
        """Raise `pyctrl.errors.LeaseLostError` if the term has ended; pass when idle."""
        if self._state is _State.IDLE or self.valid():
            return
        raise LeaseLostError(f"the hold on {self.name} is lost: {self._reason}")

    def on_lost(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Call ``callback()`` once, synchronously, when the current or next term ends.

        When the term has ended already, the callback runs at once.

        Returns:
            A function that unregisters the callback.
        """
        if self.lost:
            callback()
            return lambda: None
        self._callbacks.append(callback)

        def remove() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return remove

    async def wait_lost(self) -> None:
        """Wait until the current term ends (at once when it has ended already)."""
        if self.lost:
            return
        if self._lost_event is None:
            self._lost_event = asyncio.Event()
        await self._lost_event.wait()

    # internals ----------------------------------------------------------------------------

    def _arm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._clock.call_at(self._deadline, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self.valid()

    def _end(self, reason: str) -> None:
        self._state = _State.LOST
        self._reason = reason
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._lost_event is not None:
            self._lost_event.set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def __repr__(self) -> str:
        return f"LeaseFence({self.name!r}, {self._state.value}, deadline={self.deadline})"


# the fences of the work running in a context ---------------------------------------------

_work_fences: contextvars.ContextVar[tuple[LeaseFence, ...]] = contextvars.ContextVar(
    "pyctrl_work_fences", default=()
)


def work_fences() -> tuple[LeaseFence, ...]:
    """The fences of the work running in this context (a reconcile's Lease and slot)."""
    return _work_fences.get()


@contextlib.contextmanager
def fenced_by(fence: LeaseFence | None) -> Iterator[None]:
    """Bound the work in this context by ``fence`` too: every write it makes is checked.

    The controller binds its leader fence, a shard gate the fence of the key's slot; the
    client checks each bound fence before every write (and as its body goes out), and so
    does `pyctrl.blocking` from the thread of blocking code, before it hands a write to
    the event loop. Context variables follow the work into the tasks it starts and the
    threads it offloads to.
    """
    if fence is None:
        yield
        return
    token = _work_fences.set((*_work_fences.get(), fence))
    try:
        yield
    finally:
        _work_fences.reset(token)


def check_work_fences() -> None:
    """Raise `pyctrl.errors.LeaseLostError` if a fence bound to this context has ended."""
    for fence in _work_fences.get():
        fence.raise_if_lost()
