"""A fair WorkQueue: fairness groups served in turn, with priorities, delays and dedup kept."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pyctrl.clock import FakeClock
from pyctrl.controller import Controller, Options
from pyctrl.reconcile import Func, Request, Result
from pyctrl.workqueue import (
    LOW_PRIORITY,
    ItemExponentialFailureRateLimiter,
    WorkQueue,
    by_cluster,
    by_cluster_and_namespace,
    by_namespace,
)

if TYPE_CHECKING:
    from collections.abc import Hashable


def tenant(key: str) -> Hashable:
    return key.split("/", maxsplit=1)[0]


def fair_queue(clock: FakeClock | None = None) -> WorkQueue[str]:
    return WorkQueue(clock=clock or FakeClock(), fairness_key=tenant, starvation_timeout=None)


def drain(queue: WorkQueue[str]) -> list[str]:
    keys: list[str] = []
    while True:
        try:
            key = queue.get_nowait()
        except asyncio.QueueEmpty:
            return keys
        keys.append(key)
        queue.done(key)


def test_lone_key_of_one_group_is_not_stuck_behind_another_groups_flood() -> None:
    """10,000 keys of tenant a, then one of b: b's key is the second hand-out."""
    queue = fair_queue()
    for i in range(10_000):
        queue.add(f"a/{i}")
    queue.add("b/lone")
    assert queue.get_nowait() == "a/0"
    assert queue.get_nowait() == "b/lone"


def test_plain_queue_hands_out_in_arrival_order() -> None:
    """The peer: without a fairness key, the lone key waits behind the whole flood."""
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock())
    for i in range(100):
        queue.add(f"a/{i}")
    queue.add("b/lone")
    assert drain(queue)[-1] == "b/lone"
    assert not queue.fair


def test_groups_are_served_round_robin_and_first_come_first_served_within() -> None:
    """Turns rotate over the groups; each group's keys keep their order."""
    queue = fair_queue()
    for key in ["a/1", "a/2", "a/3", "b/1", "b/2", "c/1"]:
        queue.add(key)
    assert queue.fair
    assert drain(queue) == ["a/1", "b/1", "c/1", "a/2", "b/2", "a/3"]


def test_group_that_becomes_ready_again_joins_at_the_back() -> None:
    """A group that ran dry and gets a key again waits for the groups already waiting."""
    queue = fair_queue()
    for key in ["a/1", "b/1", "b/2", "c/1"]:
        queue.add(key)
    assert queue.get_nowait() == "a/1"
    queue.done("a/1")
    queue.add("a/2")
    assert drain(queue) == ["b/1", "c/1", "a/2", "b/2"]


def test_fairness_holds_within_a_priority_only() -> None:
    """A higher priority still goes first, whatever its group; fairness applies within."""
    queue = fair_queue()
    for i in range(3):
        queue.add(f"a/{i}", priority=LOW_PRIORITY)
    queue.add("b/low", priority=LOW_PRIORITY)
    queue.add("a/high", priority=10)
    queue.add("c/high", priority=10)
    assert drain(queue) == ["a/high", "c/high", "a/0", "b/low", "a/1", "a/2"]


def test_promoted_key_leaves_its_groups_turn() -> None:
    """Promoting a group's only key moves the group's turn to the new priority."""
    queue = fair_queue()
    for key in ["a/1", "a/2", "b/1"]:
        queue.add(key)
    queue.add("b/1", priority=5)
    assert drain(queue) == ["b/1", "a/1", "a/2"]
    assert queue.statistics().depth == 0


def test_readds_collapse_in_a_fair_queue() -> None:
    """Deduplication is unchanged: a key added many times is handed out once."""
    queue = fair_queue()
    for _ in range(5):
        queue.add("a/1")
        queue.add("b/1")
    assert len(queue) == 2
    assert drain(queue) == ["a/1", "b/1"]


def test_key_being_processed_does_not_hold_its_groups_turn() -> None:
    """A key added while processed waits for done; its group's other keys keep their turn."""
    queue = fair_queue()
    queue.add("a/1")
    assert queue.get_nowait() == "a/1"
    queue.add("a/1")
    queue.add("a/2")
    queue.add("b/1")
    assert queue.get_nowait() == "a/2"
    assert queue.get_nowait() == "b/1"
    queue.done("a/1")
    assert drain(queue) == ["a/1"]


def test_delayed_and_rate_limited_keys_join_their_group_when_due() -> None:
    """Delays and the rate limiter still apply; a due key then takes its group's turn."""
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(
        clock=clock,
        fairness_key=tenant,
        rate_limiter=ItemExponentialFailureRateLimiter(base=1.0, max=60.0),
    )
    for i in range(3):
        queue.add(f"a/{i}")
    queue.add_after("b/later", 5.0)
    queue.add_rate_limited("c/retry")  # 1 s
    assert queue.get_nowait() == "a/0"
    queue.done("a/0")
    clock.advance(0.5)
    assert queue.statistics().delayed == 2
    clock.advance(0.5)  # c's retry is due: it takes the turn after a's
    assert [queue.get_nowait(), queue.get_nowait()] == ["a/1", "c/retry"]
    queue.done("a/1")
    queue.done("c/retry")
    clock.advance(4.0)
    assert drain(queue) == ["a/2", "b/later"]


def test_unhashable_fairness_group_is_refused_naming_the_key() -> None:
    """A fairness key returning an unhashable value fails the add with a clear error."""

    def unhashable(key: str) -> Any:
        return [key]

    queue: WorkQueue[str] = WorkQueue(fairness_key=unhashable)
    with pytest.raises(TypeError, match=r"fairness_key\('x'\) returned list"):
        queue.add("x")


def test_fairness_key_must_be_callable() -> None:
    """A fairness key that is not a function is refused at construction."""
    with pytest.raises(TypeError, match="fairness_key must be a function"):
        WorkQueue(fairness_key="namespace")  # type: ignore[arg-type]


def test_ready_made_keys_read_the_request() -> None:
    """by_namespace, by_cluster and by_cluster_and_namespace group Requests."""
    request = Request("team-a", "web")
    assert by_namespace(request) == "team-a"
    assert by_cluster(request) == getattr(request, "cluster", "")
    assert by_cluster_and_namespace(request) == (getattr(request, "cluster", ""), "team-a")


def test_requests_of_a_busy_namespace_do_not_starve_another() -> None:
    """With by_namespace, a Request of a quiet namespace goes second."""
    queue: WorkQueue[Request] = WorkQueue(fairness_key=by_namespace)
    for i in range(1_000):
        queue.add(Request("busy", f"o{i}"))
    queue.add(Request("quiet", "one"))
    queue.done(queue.get_nowait())
    assert queue.get_nowait() == Request("quiet", "one")


async def test_controller_options_make_its_queue_fair() -> None:
    """Options(fairness_key=...) makes the controller's queue fair: quiet goes second."""
    seen: list[Request] = []
    all_seen = asyncio.Event()

    async def reconcile(request: Request) -> Result:
        seen.append(request)
        if len(seen) == 51:
            all_seen.set()
        return Result()

    controller = Controller("fair", Func(reconcile), options=Options(fairness_key=by_namespace))
    assert controller.queue.fair
    for i in range(50):
        controller.queue.add(Request("busy", f"o{i}"))
    controller.queue.add(Request("quiet", "one"))
    async with asyncio.timeout(10), asyncio.TaskGroup() as tg:
        task = tg.create_task(controller.start())
        await all_seen.wait()
        task.cancel()
    assert seen[1] == Request("quiet", "one")


def test_docs_fairness_snippet_runs() -> None:
    """docs/workqueue.md's Fairness example runs as written (its asserts hold)."""
    page = Path(__file__).resolve().parents[2] / "docs" / "workqueue.md"
    section = page.read_text().split("## Fairness", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    exec(compile(block, str(page), "exec", dont_inherit=True), {})
