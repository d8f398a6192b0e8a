"""Per-object timers (pyctrl.timer), end to end on the embedded API server, on a FakeClock."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import pytest

from pyctrl.builder import controller_managed_by
from pyctrl.client import MergePatch
from pyctrl.clock import FakeClock
from pyctrl.controller import triggers
from pyctrl.manager import Manager
from pyctrl.meta import ObjectMeta
from pyctrl.reconcile import Request, Result
from pyctrl.testing import eventually, running
from pyctrl.timer import Timer

from .conftest import Widget, options

if TYPE_CHECKING:
    from pyctrl.envtest import Environment

KEY = Request("default", "w")


class Ticks:
    """Counts reconciles per key; a controller fed only by a timer counts its ticks."""

    def __init__(self) -> None:
        self.calls: Counter[Request] = Counter()

    async def reconcile(self, request: Request) -> Result:
        self.calls[request] += 1
        return Result()

    async def wait_for(self, request: Request, count: int) -> None:
        async def reached() -> bool:
            return self.calls[request] >= count

        await eventually(reached)


def _ticking(manager: Manager, timer: Timer) -> Ticks:
    """A controller whose only source is ``timer``: every reconcile is a tick."""
    ticks = Ticks()
    controller_managed_by(manager).named("ticks").watches_raw_source(timer).complete(ticks)
    return ticks


async def _scheduled(timer: Timer, request: Request, at: float | None) -> None:
    async def due() -> bool:
        return timer.next_tick(request) == at

    await eventually(due)


async def test_timer_ticks_at_its_interval_and_stops_on_deletion(env: Environment) -> None:
    """Interval 10 s: a tick each 10 fake seconds, none once the object is deleted."""
    clock = FakeClock()
    manager = Manager(env.config, options())
    timer = Timer(manager.cache, Widget, 10, jitter=0, clock=clock)
    ticks = _ticking(manager, timer)
    async with running(manager):
        widget = await manager.client.create(
            Widget(metadata=ObjectMeta(name="w", namespace="default"))
        )
        await _scheduled(timer, KEY, 10.0)
        assert ticks.calls[KEY] == 0, "no tick before the first interval"
        for n in (1, 2, 3):
            clock.advance(10)
            await ticks.wait_for(KEY, n)
            assert timer.next_tick(KEY) == 10.0 * (n + 1)
        await manager.client.delete(widget)
        await _scheduled(timer, KEY, None)
        assert clock.pending_timers == 0, "the deleted object's tick is cancelled"
        clock.advance(100)
        assert ticks.calls[KEY] == 3


async def test_timer_starts_for_objects_existing_at_start_after_initial_delay(
    env: Environment,
) -> None:
    """An object that exists before the operator starts gets its first tick initial_delay later."""
    clock = FakeClock(100.0)
    manager = Manager(env.config, options())
    await manager.client.create(Widget(metadata=ObjectMeta(name="w", namespace="default")))
    timer = Timer(manager.cache, Widget, 60, initial_delay=5, jitter=0, clock=clock)
    ticks = _ticking(manager, timer)
    async with running(manager):
        await _scheduled(timer, KEY, 105.0)
        clock.advance(5)
        await ticks.wait_for(KEY, 1)
        assert timer.next_tick(KEY) == 165.0


async def test_idle_timer_waits_for_a_quiet_period_after_each_change(env: Environment) -> None:
    """idle=5: a change 3 s after creation postpones the tick to 5 s after the change."""
    clock = FakeClock()
    manager = Manager(env.config, options())
    timer = Timer(manager.cache, Widget, idle=5, jitter=0, clock=clock)
    ticks = _ticking(manager, timer)
    async with running(manager):
        widget = await manager.client.create(
            Widget(metadata=ObjectMeta(name="w", namespace="default"))
        )
        await _scheduled(timer, KEY, 5.0)
        clock.advance(3)
        await manager.client.patch(widget, MergePatch({"spec": {"size": 2}}))
        await _scheduled(timer, KEY, 8.0)
        clock.advance(2)  # t=5: the original tick time passes quietly
        assert ticks.calls[KEY] == 0
        clock.advance(3)  # t=8: quiet for 5 s
        await ticks.wait_for(KEY, 1)
        assert timer.next_tick(KEY) is None, "idle alone ticks once per quiet period"


async def test_per_object_interval_set_from_the_reconciler(env: Environment) -> None:
    """A timer without a default interval ticks an object once its reconciler sets one."""
    clock = FakeClock()
    manager = Manager(env.config, options())
    timer = Timer(manager.cache, Widget, jitter=0, clock=clock)

    class SetsInterval:
        calls = 0

        async def reconcile(self, request: Request) -> Result:
            SetsInterval.calls += 1
            timer.set_interval(request, 30)
            return Result()

    reconciler = SetsInterval()
    (controller_managed_by(manager).for_(Widget).watches_raw_source(timer).complete(reconciler))
    async with running(manager):
        await manager.client.create(Widget(metadata=ObjectMeta(name="w", namespace="default")))
        await _scheduled(timer, KEY, 30.0)
        clock.advance(30)

        async def ticked() -> bool:
            return SetsInterval.calls >= 2

        await eventually(ticked)


async def test_builder_every_reconciles_each_object_periodically(env: Environment) -> None:
    """.every(10) on the builder adds ticks to the for_ controller's reconciles."""
    clock = FakeClock()
    manager = Manager(env.config, options())
    ticks = Ticks()
    controller_managed_by(manager).for_(Widget).every(10, jitter=0, clock=clock).complete(ticks)
    async with running(manager):
        await manager.client.create(Widget(metadata=ObjectMeta(name="w", namespace="default")))
        await ticks.wait_for(KEY, 1)  # the creation
        for n in (2, 3):

            async def armed() -> bool:
                return clock.pending_timers == 1  # the object's next tick

            await eventually(armed)
            clock.advance(10)
            await ticks.wait_for(KEY, n)


async def test_jitter_stretches_each_delay_within_its_bound(env: Environment) -> None:
    """With jitter 0.5 and interval 10, every first tick falls in [10, 15) and they differ."""
    clock = FakeClock()
    manager = Manager(env.config, options())
    timer = Timer(manager.cache, Widget, 10, jitter=0.5, clock=clock)
    _ticking(manager, timer)
    names = [f"j{i}" for i in range(8)]
    async with running(manager):
        for name in names:
            await manager.client.create(Widget(metadata=ObjectMeta(name=name, namespace="default")))

        async def all_scheduled() -> bool:
            return all(timer.next_tick(Request("default", n)) is not None for n in names)

        await eventually(all_scheduled)
        due = [timer.next_tick(Request("default", n)) for n in names]
    assert all(d is not None and 10 <= d < 15 for d in due)
    assert len(set(due)) > 1


def test_timer_refuses_bad_times(env: Environment) -> None:
    """A zero interval, a negative delay or a non-number is refused naming the option."""
    manager = Manager(env.config, options())
    with pytest.raises(ValueError, match="interval"):
        Timer(manager.cache, Widget, 0)
    with pytest.raises(ValueError, match="initial_delay"):
        Timer(manager.cache, Widget, 1, initial_delay=-1)
    with pytest.raises(TypeError, match="idle"):
        Timer(manager.cache, Widget, 1, idle="5")  # type: ignore[arg-type]


async def test_a_tick_is_recorded_as_a_timer_trigger(env: Environment) -> None:
    """The reconcile a tick causes sees one trigger of kind "timer" naming the object."""
    clock = FakeClock()
    manager = Manager(env.config, options())
    seen: list[tuple[str, str, str]] = []

    class Recording:
        async def reconcile(self, request: Request) -> Result:
            seen.extend((t.kind, t.source, t.object) for t in triggers())
            return Result()

    timer = Timer(manager.cache, Widget, 10, jitter=0, clock=clock)
    controller_managed_by(manager).named("ticks").watches_raw_source(timer).complete(Recording())
    async with running(manager):
        await manager.client.create(Widget(metadata=ObjectMeta(name="w", namespace="default")))
        await _scheduled(timer, KEY, 10.0)
        clock.advance(10)

        async def ticked() -> bool:
            return bool(seen)

        await eventually(ticked)
    assert seen[0] == ("timer", "timer", "Widget default/w")
