"""The workqueue's provenance: triggers kept per key, bounded, and handed out with the key."""

from __future__ import annotations

import pytest

from pyctrl.clock import FakeClock
from pyctrl.workqueue import KEPT_FIRST, KEPT_LAST, Trigger, WorkQueue


def _update(n: int) -> Trigger:
    return Trigger("update", "ConfigMap", f"ConfigMap default/c{n}", str(n))


async def test_collapsed_adds_keep_the_first_and_last_triggers_and_count_all() -> None:
    """Ten adds of one key: the first three, the last three, and counts of all ten by kind."""
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock(), record_triggers=True)
    for n in range(9):
        queue.add("k", trigger=_update(n))
    queue.add_after("k", 0, trigger=Trigger("timer", "expiry"))
    key = await queue.get()
    found = queue.triggers(key)
    assert [t.resource_version for t in found.first] == ["0", "1", "2"]
    assert [str(t) for t in found.last] == [
        "update ConfigMap default/c7@7",
        "update ConfigMap default/c8@8",
        "timer via expiry",
    ]
    assert (found.count, dict(found.by_kind), found.omitted) == (10, {"update": 9, "timer": 1}, 4)
    assert len(found) == KEPT_FIRST + KEPT_LAST
    assert found.kind == "update"
    queue.done(key)
    assert not queue.triggers(key)


async def test_adds_while_processing_belong_to_the_next_hand_out() -> None:
    """A key added while processed keeps its new triggers apart from the current ones."""
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock(), record_triggers=True)
    queue.add("k", trigger=_update(1))
    key = await queue.get()
    queue.add("k", trigger=Trigger("requeue_after"))
    assert [t.kind for t in queue.triggers(key)] == ["update"]
    queue.done(key)
    key = await queue.get()
    assert [t.kind for t in queue.triggers(key)] == ["requeue_after"]


async def test_a_queue_that_does_not_record_ignores_triggers() -> None:
    """Without record_triggers, adds' triggers are dropped and triggers() is empty."""
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock())
    assert not queue.records_triggers
    queue.add("k", trigger=_update(1))
    key = await queue.get()
    assert queue.triggers(key).count == 0


def test_a_trigger_kind_must_be_a_metric_friendly_name() -> None:
    """A kind with capitals or spaces is refused, naming what was given."""
    with pytest.raises(ValueError, match=r"lowercase name.*'My Timer'"):
        Trigger("My Timer")
