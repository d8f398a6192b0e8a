"""Field predicates (pyctrl.predicate.FieldChanged...), end to end under a Manager."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest
from pydantic import Field

from pyctrl.builder import controller_managed_by
from pyctrl.client import MergePatch
from pyctrl.crd import crd_for
from pyctrl.envtest import Environment
from pyctrl.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent
from pyctrl.manager import Manager
from pyctrl.meta import KubeModel, ObjectMeta
from pyctrl.predicate import FieldChanged, FieldEquals, FieldMatches, Predicate, or_
from pyctrl.reconcile import Request, Result
from pyctrl.resource import CustomResource, Unstructured
from pyctrl.testing import eventually, running

from .conftest import DECODED, DecodeCounted, Widget, options

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from pyctrl.controller import Controller
    from pyctrl.event import Event

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


# -- events from the cache are not decoded for field predicates ---------------------------


class PartSpec(KubeModel):
    """A spec whose fields have no Python default: the JSON tells every value."""

    size: int | None = None
    image: str | None = None
    ports: list[int] | None = None


class Part(CustomResource, DecodeCounted, group="test.pyctrl.dev", version="v1"):
    """A custom resource that counts how often it is decoded."""

    spec: PartSpec = Field(default_factory=PartSpec)


class GizmoSpec(KubeModel):
    """A Gizmo's spec as its CRD has it: no default for the mode."""

    mode: str | None = None


class GizmoSchema(CustomResource, group="test.pyctrl.dev", version="v1", kind="Gizmo"):
    """What the CRD is made from (the server stores no mode unless one is given)."""

    spec: GizmoSpec = Field(default_factory=GizmoSpec)


class FastSpec(KubeModel):
    """The operator's view of a Gizmo's spec: a mode of its own by default."""

    mode: str = "fast"


class Gizmo(CustomResource, DecodeCounted, group="test.pyctrl.dev", version="v1"):
    """The operator's typed Gizmo, counting its decodes."""

    spec: FastSpec = Field(default_factory=FastSpec)


@pytest.fixture
async def parts_env() -> AsyncIterator[Environment]:
    async with Environment(crds=[crd_for(Part), crd_for(GizmoSchema)]) as environment:
        yield environment


class Answers:
    """A predicate passing every event, recording the field predicates' answers to it."""

    def __init__(self, *predicates: Predicate) -> None:
        self.predicates = predicates
        self.events: list[tuple[Event[Any], list[bool]]] = []

    def _record(self, event: Event[Any], answers: list[bool]) -> bool:
        self.events.append((event, answers))
        return True

    def create(self, event: CreateEvent[Any]) -> bool:
        return self._record(event, [p.create(event) for p in self.predicates])

    def update(self, event: UpdateEvent[Any]) -> bool:
        return self._record(event, [p.update(event) for p in self.predicates])

    def delete(self, event: DeleteEvent[Any]) -> bool:
        return self._record(event, [p.delete(event) for p in self.predicates])

    def generic(self, event: GenericEvent[Any]) -> bool:
        return self._record(event, [p.generic(event) for p in self.predicates])

    def typed(self, event: Event[Any]) -> list[bool]:
        """The answers to the same event built from typed objects (decodes it)."""
        match event:
            case CreateEvent():
                return [p.create(CreateEvent(event.object)) for p in self.predicates]
            case UpdateEvent():
                typed = UpdateEvent(event.object_old, event.object_new)
                return [p.update(typed) for p in self.predicates]
            case DeleteEvent():
                return [p.delete(DeleteEvent(event.object)) for p in self.predicates]
        raise AssertionError(f"unexpected {event!r}")

    async def wait(self, count: int) -> None:
        """Wait until ``count`` events were seen."""

        async def seen() -> bool:
            return len(self.events) >= count

        await eventually(seen)


def _unstructured(kind: str, name: str, **spec: Any) -> Unstructured:
    """An object as unstructured JSON: the test's own writes never build a typed one."""
    return Unstructured(
        {
            "apiVersion": "test.pyctrl.dev/v1",
            "kind": kind,
            "metadata": {"name": name, "namespace": "default"},
            "spec": spec,
        }
    )


class Nothing:
    """A reconciler that reads nothing."""

    async def reconcile(self, request: Request) -> Result:
        return Result()


async def test_field_predicates_read_cache_events_undecoded_with_the_typed_answers(
    parts_env: Environment,
) -> None:
    """Field predicates on a watch's events decode none, and answer as on typed events."""
    manager = Manager(parts_env.config, options())
    answers = Answers(
        FieldEquals("spec.size", 5),
        FieldEquals("metadata.name", "p1"),
        FieldChanged("spec.size"),
        FieldChanged("metadata.labels", "spec.image"),
        FieldMatches("metadata.labels.tier", r"web|api"),
        FieldMatches("spec.ports.0", lambda port: port is not None and port > 8000),
    )
    controller_managed_by(manager).for_(Part, answers).complete(Nothing())
    DECODED.clear()
    async with running(manager):
        client = manager.client
        p1 = await client.create(_unstructured("Part", "p1", size=1, image="a:1"))
        p2 = await client.create(_unstructured("Part", "p2", size=5, ports=[8080]))
        await client.patch(p1, MergePatch({"spec": {"size": 5}}))
        await client.patch(p1, MergePatch({"metadata": {"labels": {"tier": "web"}}}))
        await client.patch(p2, MergePatch({"spec": {"image": "b:2", "ports": [80]}}))
        await client.delete(p2)
        await answers.wait(6)
    assert DECODED == [], "no event was decoded for the field predicates"
    kinds = [type(event).__name__ for event, _ in answers.events]
    assert kinds == ["CreateEvent"] * 2 + ["UpdateEvent"] * 3 + ["DeleteEvent"]
    y, n = True, False
    assert [got for _, got in answers.events] == [
        [n, y, y, y, n, n],  # p1 created: size 1, image a:1
        [y, n, y, y, n, y],  # p2 created: size 5, port 8080
        [y, y, y, n, n, n],  # p1's size 1 -> 5
        [y, y, n, y, y, n],  # p1 labelled tier=web
        [y, n, n, y, n, n],  # p2's image and port changed
        [y, n, y, y, n, n],  # p2 deleted
    ]
    for event, got in answers.events:
        assert got == answers.typed(event), event


async def test_a_field_the_model_defaults_or_a_model_valued_field_is_read_decoded(
    parts_env: Environment,
) -> None:
    """Where the JSON cannot tell what the typed object would, the object is decoded."""
    manager = Manager(parts_env.config, options())
    defaulted = Answers(FieldEquals("spec.mode", "fast"))
    modelled = Answers(FieldEquals("spec", {"size": 5}))
    controller_managed_by(manager).for_(Gizmo, defaulted).complete(Nothing())
    controller_managed_by(manager).named("parts").for_(Part, modelled).complete(Nothing())
    DECODED.clear()
    async with running(manager):
        client = manager.client
        await client.create(_unstructured("Gizmo", "g1"))  # the JSON has no mode
        await client.create(_unstructured("Gizmo", "g2", mode="slow"))
        await defaulted.wait(2)
        assert DECODED == ["g1"], "only the event whose JSON lacks the field was decoded"
        await client.create(_unstructured("Part", "p1", size=5))
        await client.create(_unstructured("Part", "p2", size=6))
        await modelled.wait(2)
    assert DECODED == ["g1", "p1", "p2"]
    assert [got for _, got in defaulted.events] == [[True], [False]]
    assert [got for _, got in modelled.events] == [[True], [False]]
    for answers in (defaulted, modelled):
        for event, got in answers.events:
            assert got == answers.typed(event), event
