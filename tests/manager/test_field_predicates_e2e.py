"""Field predicates (pyctrl.predicate.FieldChanged...), end to end under a Manager."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from pyctrl.builder import controller_managed_by
from pyctrl.client import MergePatch
from pyctrl.manager import Manager
from pyctrl.meta import ObjectMeta
from pyctrl.predicate import FieldChanged, FieldEquals, or_
from pyctrl.reconcile import Request, Result
from pyctrl.testing import eventually, running

from .conftest import Widget, options

if TYPE_CHECKING:
    from pyctrl.controller import Controller
    from pyctrl.envtest import Environment

KEY = Request("default", "w")


class Seen:
    """Records the spec each reconcile reads from the cache."""

    def __init__(self, manager: Manager) -> None:
        self.manager = manager
        self.calls: Counter[Request] = Counter()
        self.specs: list[tuple[str, int]] = []

    async def reconcile(self, request: Request) -> Result:
        self.calls[request] += 1
        widget = await self.manager.client.get(Widget, request.name, request.namespace)
        self.specs.append((widget.spec.color, widget.spec.size))
        return Result()


async def _settled(controller: Controller) -> None:
    async def idle() -> bool:
        stats = controller.queue.statistics()
        return stats.depth == 0 and stats.processing == 0 and stats.blocked == 0

    await eventually(idle)


async def test_field_changed_drops_updates_of_other_fields(env: Environment) -> None:
    """With FieldChanged('spec.color'), a size change is not reconciled and a color change is."""
    manager = Manager(env.config, options())
    filtered, witness = Seen(manager), Seen(manager)
    controller = (
        controller_managed_by(manager)
        .for_(Widget)
        .with_event_filter(FieldChanged("spec.color"))
        .complete(filtered)
    )
    controller_managed_by(manager).named("witness").for_(Widget).complete(witness)
    async with running(manager):
        widget = await manager.client.create(
            Widget(metadata=ObjectMeta(name="w", namespace="default"))
        )

        async def reconciled_once() -> bool:
            return filtered.calls[KEY] == 1

        await eventually(reconciled_once)
        await manager.client.patch(widget, MergePatch({"spec": {"size": 2}}))

        async def witness_saw_size() -> bool:
            return ("blue", 2) in witness.specs

        await eventually(witness_saw_size)
        await _settled(controller)
        assert filtered.calls[KEY] == 1, "the size change was dropped"
        await manager.client.patch(widget, MergePatch({"spec": {"color": "red"}}))

        async def saw_red() -> bool:
            return filtered.specs[-1:] == [("red", 2)]

        await eventually(saw_red)
        assert filtered.calls[KEY] == 2


async def test_field_equals_composed_with_or_filters_objects(env: Environment) -> None:
    """or_(FieldEquals('spec.color', 'red'), ...) reconciles only the matching Widgets."""
    manager = Manager(env.config, options())
    seen = Seen(manager)
    controller = (
        controller_managed_by(manager)
        .for_(Widget, or_(FieldEquals("spec.color", "red"), FieldEquals("spec.size", 9)))
        .complete(seen)
    )
    async with running(manager):
        for name, color, size in (("a", "red", 1), ("b", "blue", 9), ("c", "blue", 1)):
            widget = Widget(metadata=ObjectMeta(name=name, namespace="default"))
            widget.spec.color, widget.spec.size = color, size
            await manager.client.create(widget)

        async def both() -> bool:
            return {r.name for r in seen.calls} >= {"a", "b"}

        await eventually(both)
        await _settled(controller)
        assert seen.calls[Request("default", "c")] == 0
        await manager.client.patch(
            await manager.api_reader.get(Widget, "c", "default"), MergePatch({"spec": {"size": 9}})
        )

        async def c_matched() -> bool:
            return seen.calls[Request("default", "c")] == 1

        await eventually(c_matched)
