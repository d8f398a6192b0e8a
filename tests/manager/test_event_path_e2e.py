"""The runtime's event path: lazy decoding, triggers a handler names, fences given at build."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest
from pydantic import Field

from pyctrl.builder import controller_managed_by
from pyctrl.client import MergePatch
from pyctrl.controller import Controller, triggers
from pyctrl.crd import crd_for
from pyctrl.envtest import Environment
from pyctrl.handler import Funcs as HandlerFuncs
from pyctrl.manager import Manager
from pyctrl.predicate import Funcs, GenerationChanged
from pyctrl.reconcile import Request, Result
from pyctrl.resource import CustomResource, Unstructured
from pyctrl.testing import running
from pyctrl.workqueue import Trigger, Triggers

from .conftest import DECODED, DecodeCounted, WidgetSpec, options

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from pyctrl.event import CreateEvent, UpdateEvent
    from pyctrl.handler import Queue


class Gadget(CustomResource, DecodeCounted, group="test.pyctrl.dev", version="v1"):
    """A custom resource that counts how often it is decoded."""

    spec: WidgetSpec = Field(default_factory=WidgetSpec)


@pytest.fixture
async def env() -> AsyncIterator[Environment]:
    async with Environment(crds=[crd_for(Gadget)]) as environment:
        yield environment


class Seen:
    """A request reconciler (it never reads the object) handing requests to the test."""

    def __init__(self) -> None:
        self.requests: asyncio.Queue[tuple[Request, Triggers]] = asyncio.Queue()

    async def reconcile(self, request: Request) -> Result:
        await self.requests.put((request, triggers()))
        return Result()

    async def names(self, count: int) -> set[str]:
        found: set[str] = set()
        async with asyncio.timeout(20):
            while len(found) < count:
                request, _ = await self.requests.get()
                found.add(request.name)
        return found


def _gadget(name: str, size: int = 1) -> Unstructured:
    """A Gadget as unstructured JSON: the test's own writes never build a Gadget."""
    return Unstructured(
        {
            "apiVersion": "test.pyctrl.dev/v1",
            "kind": "Gadget",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"size": size},
        }
    )


async def test_events_are_not_decoded_when_only_their_metadata_is_read(env: Environment) -> None:
    """With the default handler and GenerationChanged, no event of a watch is ever decoded."""
    manager = Manager(env.config, options())
    seen = Seen()
    (
        controller_managed_by(manager)
        .for_(Gadget)
        .with_event_filter(GenerationChanged())
        .complete(seen)
    )
    DECODED.clear()
    async with running(manager):
        gadgets = [await manager.client.create(_gadget(name)) for name in ("a", "b", "c")]
        assert await seen.names(3) == {"a", "b", "c"}
        await manager.client.patch(gadgets[1], MergePatch({"spec": {"size": 7}}))
        assert await seen.names(1) == {"b"}
        # A metadata-only update reaches the watch too; GenerationChanged drops it.
        await manager.client.patch(gadgets[2], MergePatch({"metadata": {"labels": {"x": "y"}}}))
        await manager.client.patch(gadgets[0], MergePatch({"spec": {"size": 8}}))
        assert await seen.names(1) == {"a"}
        await manager.client.delete(gadgets[0])
        assert await seen.names(1) == {"a"}
    assert DECODED == []


async def test_a_predicate_and_a_handler_reading_the_object_share_one_decode(
    env: Environment,
) -> None:
    """Code that reads event.object gets the typed object, decoded once per event."""
    manager = Manager(env.config, options())
    seen = Seen()
    sizes: list[tuple[str, int]] = []
    objects: list[int] = []

    def large(event: CreateEvent[Gadget]) -> bool:
        with pytest.raises(AttributeError, match=r"read-only: change the event's \.object"):
            event.meta.labels = {"changed": "here"}  # the cache's copy, not the event's
        sizes.append(("predicate", event.object.spec.size))
        objects.append(id(event.object))
        return event.object.spec.size > 1

    async def enqueue(event: CreateEvent[Gadget], queue: Queue) -> None:
        sizes.append(("handler", event.object.spec.size))
        objects.append(id(event.object))
        queue.add(Request(event.meta.namespace, event.meta.name))

    (
        controller_managed_by(manager)
        .named("gadgets")
        .watches(Gadget, HandlerFuncs(on_create=enqueue), Funcs(on_create=large))
        .complete(seen)
    )
    DECODED.clear()
    async with running(manager):
        await manager.client.create(_gadget("small", size=1))
        await manager.client.create(_gadget("large", size=5))
        assert await seen.names(1) == {"large"}
    assert sizes == [("predicate", 1), ("predicate", 5), ("handler", 5)]
    assert DECODED == ["small", "large"]
    assert objects[1] == objects[2]  # the handler was given the predicate's object


async def test_a_handler_of_your_own_names_its_trigger(env: Environment) -> None:
    """A handler passes trigger= to queue.add; a bare add records the event's trigger."""
    manager = Manager(env.config, options())
    seen = Seen()

    async def enqueue(event: UpdateEvent[Gadget], queue: Queue) -> None:
        meta = event.meta_new
        queue.add(Request("default", "named"), trigger=Trigger("mapped", source="mine"))
        queue.add(Request(meta.namespace, meta.name))

    (
        controller_managed_by(manager)
        .named("triggers")
        .watches(Gadget, HandlerFuncs(on_update=enqueue))
        .complete(seen)
    )
    async with running(manager):
        gadget = await manager.client.create(_gadget("g"))
        await manager.client.patch(gadget, MergePatch({"spec": {"size": 2}}))
        found: dict[str, Triggers] = {}
        async with asyncio.timeout(20):
            while len(found) < 2:
                request, why = await seen.requests.get()
                found[request.name] = why
    assert [(t.kind, t.source) for t in found["named"]] == [("mapped", "mine")]
    assert [(t.kind, t.object) for t in found["g"]] == [("update", "Gadget default/g")]


async def test_a_leader_only_controller_needs_the_managers_fence(env: Environment) -> None:
    """Under leader election the builder hands the fence over; a bare Controller is refused."""
    manager = Manager(
        env.config,
        options(
            leader_election=True, leader_election_id="fence", leader_election_namespace="default"
        ),
    )
    built = controller_managed_by(manager).for_(Gadget).complete(Seen())
    assert manager.fence is not None
    assert built.fence is manager.fence
    with pytest.raises(ValueError, match=r"built without its fence: pass .*fence=manager.fence"):
        manager.add(Controller("bare", Seen()))
    manager.add(Controller("fenced", Seen(), fence=manager.fence))
