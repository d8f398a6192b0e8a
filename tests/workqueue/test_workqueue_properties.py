"""Property tests of pyctrl.workqueue against a reference model.

A hypothesis state machine drives a `WorkQueue` with random adds, delayed and
rate-limited adds, hand-outs, dones, forgets and clock steps, and checks each hand-out
against a plain model of what the queue must do. It proves that (a) no key is handed
out while it is being processed, (b) every add is followed by a processing of that key
that starts after the add, (c) backoff grows as ``base * 2**n`` capped at ``max`` and
``forget`` resets it, and (d) of two due times for one key the earlier wins.
"""

from __future__ import annotations

import asyncio
import math

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from pyctrl.clock import FakeClock
from pyctrl.workqueue import LOW_PRIORITY, ItemExponentialFailureRateLimiter, WorkQueue

KEYS = st.sampled_from(["a", "b", "c", "d"])
PRIORITIES = st.sampled_from([LOW_PRIORITY, 0, 0, 7])
DELAYS = st.sampled_from([-1.0, 0.0, 0.25, 0.5, 1.0, 2.5, 10.0])
STEPS = st.sampled_from([0.0, 0.125, 0.25, 0.5, 1.0, 3.0])
BASE = 0.25
MAX = 2.0


class WorkQueueMachine(RuleBasedStateMachine):
    """Random operations on a queue, each checked against the model."""

    starvation_timeout: float | None = None

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.queue: WorkQueue[str] = WorkQueue(
            clock=self.clock,
            rate_limiter=ItemExponentialFailureRateLimiter(base=BASE, max=MAX),
            starvation_timeout=self.starvation_timeout,
        )
        # The model: queued keys with their due time, priority and order of arrival.
        self.due: dict[str, float] = {}
        self.priority: dict[str, int] = {}
        self.order: dict[str, int] = {}
        self.arrivals = 0
        self.processing: set[str] = set()
        self.failures: dict[str, int] = {}
        self.aged_last = False
        # (b): keys added since their last hand-out began.
        self.owed: set[str] = set()

    @initialize()
    def start(self) -> None:
        assert len(self.queue) == 0

    def _model_add(self, key: str, delay: float, priority: int) -> None:
        now = self.clock.now()
        due = now + delay if delay > 0 else now
        self.owed.add(key)
        if key in self.due:
            self.due[key] = min(self.due[key], due)
            self.priority[key] = max(self.priority[key], priority)
        else:
            self.due[key] = due
            self.priority[key] = priority
            self.order[key] = self.arrivals
            self.arrivals += 1

    def _ready(self) -> list[str]:
        now = self.clock.now()
        return [k for k, due in self.due.items() if due <= now and k not in self.processing]

    @rule(key=KEYS, priority=PRIORITIES)
    def add(self, key: str, priority: int) -> None:
        self.queue.add(key, priority=priority)
        self._model_add(key, 0.0, priority)

    @rule(key=KEYS, delay=DELAYS, priority=PRIORITIES)
    def add_after(self, key: str, delay: float, priority: int) -> None:
        self.queue.add_after(key, delay, priority=priority)
        self._model_add(key, delay, priority)

    @rule(key=KEYS)
    def add_rate_limited(self, key: str) -> None:
        failures = self.failures.get(key, 0)
        self.failures[key] = failures + 1
        self.queue.add_rate_limited(key)
        self._model_add(key, min(BASE * 2**failures, MAX), 0)

    @rule(key=KEYS)
    def forget(self, key: str) -> None:
        self.queue.forget(key)
        self.failures.pop(key, None)

    @rule()
    def get(self) -> None:
        ready = self._ready()
        try:
            key, priority = self.queue.get_with_priority_nowait()
        except asyncio.QueueEmpty:
            assert not ready, f"queue empty while {ready} are due and idle"
            return
        # (a) and (d): only a due key that no worker holds may be handed out ...
        assert key in ready, f"handed out {key!r}; due and idle keys were {ready}"
        # ... and the first in priority order, then due time, then arrival; or, with the
        # starvation guard, every other time the oldest once it has waited long enough.
        expected = min(ready, key=lambda k: (-self.priority[k], self.due[k], self.order[k]))
        oldest = min(ready, key=lambda k: (self.due[k], self.order[k]))
        timeout = self.starvation_timeout
        if (
            timeout is not None
            and not self.aged_last
            and self.clock.now() - self.due[oldest] >= timeout
            and self.priority[oldest] < self.priority[expected]
        ):
            expected = oldest
            self.aged_last = True
        else:
            self.aged_last = False
        assert key == expected, f"handed out {key!r}, expected {expected!r}"
        assert priority == self.priority[key]
        del self.due[key], self.priority[key], self.order[key]
        self.processing.add(key)
        self.owed.discard(key)

    @precondition(lambda self: self.processing)
    @rule(data=st.data())
    def done(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(self.processing)))
        self.queue.done(key)
        self.processing.remove(key)
        if key in self.due:
            self.due[key] = max(self.due[key], self.clock.now())

    @rule(seconds=STEPS)
    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @invariant()
    def counts_match_the_model(self) -> None:
        stats = self.queue.statistics()
        now = self.clock.now()
        idle = [k for k in self.due if k not in self.processing]
        assert stats.depth == len(queue_ready := self._ready()) == len(self.queue)
        assert stats.delayed == sum(1 for k in idle if self.due[k] > now)
        assert stats.blocked == len(self.due) - len(idle)
        assert stats.processing == len(self.processing)
        assert sum(stats.depth_by_priority.values()) == len(queue_ready)

    @invariant()
    def backoff_matches_the_model(self) -> None:
        for key in ("a", "b", "c", "d"):
            assert self.queue.num_requeues(key) == self.failures.get(key, 0)

    def teardown(self) -> None:
        # (b): finish everything in flight, let all delays pass, and process what
        # comes out; every add must have been followed by a hand-out.
        for key in sorted(self.processing):
            self.queue.done(key)
            self.processing.remove(key)
            if key in self.due:
                self.due[key] = max(self.due[key], self.clock.now())
        self.clock.advance(MAX + 100.0)
        while True:
            try:
                key = self.queue.get_nowait()
            except asyncio.QueueEmpty:
                break
            self.owed.discard(key)
            self.queue.done(key)
        assert not self.owed, f"added but never processed afterwards: {sorted(self.owed)}"
        self.queue.shut_down()


class StarvationGuardMachine(WorkQueueMachine):
    """The same operations with the starvation guard on, after one second."""

    starvation_timeout = 1.0


GROUP = {"a": "x", "b": "x", "c": "y", "d": "y"}


class FairQueueMachine(WorkQueueMachine):
    """The same operations on a fair queue (keys a, b in one group, c, d in another).

    Each hand-out must still be a due, idle key of the highest ready priority, and the
    first (by due time, then arrival) of its group at that priority; no add is lost.
    """

    def __init__(self) -> None:
        super().__init__()
        self.queue = WorkQueue(
            clock=self.clock,
            rate_limiter=ItemExponentialFailureRateLimiter(base=BASE, max=MAX),
            starvation_timeout=None,
            fairness_key=GROUP.__getitem__,
        )

    @rule()
    def get(self) -> None:
        ready = self._ready()
        try:
            key, priority = self.queue.get_with_priority_nowait()
        except asyncio.QueueEmpty:
            assert not ready, f"queue empty while {ready} are due and idle"
            return
        assert key in ready, f"handed out {key!r}; due and idle keys were {ready}"
        top = max(self.priority[k] for k in ready)
        assert priority == self.priority[key] == top
        group = [k for k in ready if GROUP[k] == GROUP[key] and self.priority[k] == top]
        assert key == min(group, key=lambda k: (self.due[k], self.order[k]))
        del self.due[key], self.priority[key], self.order[key]
        self.processing.add(key)
        self.owed.discard(key)


@settings(max_examples=100, deadline=None)
@given(
    arrivals=st.lists(st.sampled_from("xyz"), min_size=1, max_size=60),
)
def test_fair_queue_serves_ready_groups_in_turn(arrivals: list[str]) -> None:
    """Keys of three groups added in any order are handed out round robin over the groups.

    Each group's keys keep their order; a group takes its turn in the order it first had
    a ready key, and leaves the rotation once it has none.
    """
    queue: WorkQueue[str] = WorkQueue(fairness_key=lambda key: key[0])
    lines: dict[str, list[str]] = {}
    for i, group in enumerate(arrivals):
        key = f"{group}{i}"
        queue.add(key)
        lines.setdefault(group, []).append(key)
    turns = list(lines)  # groups in the order they first had a key
    expected: list[str] = []
    while turns:
        group = turns.pop(0)
        expected.append(lines[group].pop(0))
        if lines[group]:
            turns.append(group)
    handed_out = []
    while len(queue):
        key = queue.get_nowait()
        handed_out.append(key)
        queue.done(key)
    assert handed_out == expected


WorkQueueMachine.TestCase.settings = settings(
    max_examples=40, stateful_step_count=40, deadline=None
)
StarvationGuardMachine.TestCase.settings = settings(
    max_examples=25, stateful_step_count=40, deadline=None
)
FairQueueMachine.TestCase.settings = settings(
    max_examples=40, stateful_step_count=40, deadline=None
)
TestWorkQueueMachine = WorkQueueMachine.TestCase
TestFairQueueMachine = FairQueueMachine.TestCase
TestStarvationGuardMachine = StarvationGuardMachine.TestCase


@settings(max_examples=100, deadline=None)
@given(
    backlog=st.lists(
        st.tuples(st.sampled_from("abcdefgh"), st.sampled_from([LOW_PRIORITY, 0, 7])),
        min_size=1,
        max_size=10,
    ),
    storm=st.lists(st.sampled_from(["add", "get", "get", "advance"]), max_size=40),
    timeout=st.sampled_from([0.0, 2.0, 3.0, 5.0]),
)
def test_starvation_guard_gives_overdue_keys_every_other_turn(
    backlog: list[tuple[str, int]], storm: list[str], timeout: float
) -> None:
    """Hand-outs follow priority order, but every other turn goes to a starving key.

    A starving key is the oldest ready key, of lower priority than the top, ready for at
    least ``timeout`` seconds.
    """
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock, starvation_timeout=timeout)
    ready: dict[str, tuple[int, float, int]] = {}  # key -> (priority, ready since, arrival)

    def add(key: str, priority: int, arrival: int) -> None:
        queue.add(key, priority=priority)
        if key in ready:
            ready[key] = (max(ready[key][0], priority), *ready[key][1:])
        else:
            ready[key] = (priority, clock.now(), arrival)

    # A backlog of keys of mixed priorities and ages, then a storm of fresh work.
    for arrival, (key, priority) in enumerate(backlog):
        add(key, priority, arrival)
        clock.advance(1.0)
    aged_last = False
    for arrival, operation in enumerate(storm, start=len(backlog)):
        if operation == "add":
            add(f"fresh{arrival}", 0, arrival)
        elif operation == "advance":
            clock.advance(1.0)
        elif not ready:
            assert len(queue) == 0
        else:
            top = min(ready, key=lambda k: (-ready[k][0], ready[k][1], ready[k][2]))
            oldest = min(ready, key=lambda k: ready[k][1:])
            if (
                not aged_last
                and clock.now() - ready[oldest][1] >= timeout
                and ready[oldest][0] < ready[top][0]
            ):
                expected, aged_last = oldest, True
            else:
                expected, aged_last = top, False
            assert queue.get_nowait() == expected
            queue.done(expected)
            del ready[expected]


@settings(max_examples=100, deadline=None)
@given(
    base=st.floats(min_value=1e-4, max_value=10.0),
    ratio=st.floats(min_value=1.0, max_value=1e6),
    operations=st.lists(st.sampled_from(["when", "when", "when", "forget"]), max_size=60),
)
def test_backoff_is_base_times_two_to_the_failures_capped(
    base: float, ratio: float, operations: list[str]
) -> None:
    """(c) The n-th delay since the last forget is min(base * 2**n, max)."""
    maximum = base * ratio
    limiter = ItemExponentialFailureRateLimiter[str](base=base, max=maximum)
    failures = 0
    for operation in operations:
        if operation == "forget":
            limiter.forget("k")
            failures = 0
        else:
            assert limiter.when("k") == min(base * 2.0**failures, maximum)
            failures += 1
        assert limiter.num_requeues("k") == failures


@settings(max_examples=100, deadline=None)
@given(delays=st.lists(st.floats(min_value=-5.0, max_value=50.0), min_size=1, max_size=8))
def test_add_after_keeps_the_earliest_time(delays: list[float]) -> None:
    """(d) After several add_after calls, a key is ready exactly at the earliest time."""
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    for delay in delays:
        queue.add_after("k", delay)
    earliest = max(0.0, min(delays))
    if earliest > 0:
        clock.set(math.nextafter(earliest, -math.inf))
        assert len(queue) == 0
    clock.set(earliest)
    assert queue.get_nowait() == "k"
