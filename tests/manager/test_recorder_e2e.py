"""Event recorders run by the Manager, writing to the embedded API server."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from pyctrl.manager import Manager
from pyctrl.meta import GroupVersionKind, ObjectMeta
from pyctrl.resource import Unstructured
from pyctrl.testing import running

from .conftest import Widget, options

if TYPE_CHECKING:
    from pyctrl.envtest import Environment
    from pyctrl.recorder import EventRecorder

EVENTS_V1 = GroupVersionKind("events.k8s.io", "v1", "Event")
CORE_V1 = GroupVersionKind("", "v1", "Event")


async def _written(recorder: EventRecorder) -> None:
    async with asyncio.timeout(15):
        await recorder.wait_idle()


async def _events(manager: Manager, gvk: GroupVersionKind) -> list[dict[str, Any]]:
    listed = await manager.api_reader.list(Unstructured, namespace="default", gvk=gvk)
    return [event.object for event in listed.items]


async def _widget(manager: Manager, name: str) -> Widget:
    return await manager.client.create(Widget(metadata=ObjectMeta(name=name, namespace="default")))


async def test_repeated_events_are_counted_in_one_series(env: Environment) -> None:
    """The same event recorded three times is one events.k8s.io Event with series.count 3."""
    manager = Manager(env.config, options())
    recorder = manager.get_event_recorder_for("widget-rec")
    async with running(manager):
        widget = await _widget(manager, "repeated")
        for _ in range(3):
            recorder.event(widget, "Warning", "Stuck", "still waiting for the database")
        recorder.event(widget, "Normal", "Created", "created the database")
        await _written(recorder)
        events = await _events(manager, EVENTS_V1)
    mine = [e for e in events if e["regarding"]["uid"] == widget.metadata.uid]
    by_reason = {e["reason"]: e for e in mine}
    assert len(mine) == 2
    assert by_reason["Stuck"]["series"]["count"] == 3
    assert "series" not in by_reason["Created"]
    assert by_reason["Stuck"]["reportingController"] == "widget-rec"
    assert by_reason["Stuck"]["note"] == "still waiting for the database"


async def test_falls_back_to_core_v1_events(env: Environment) -> None:
    """When events.k8s.io answers 404, the recorder writes and counts core/v1 Events."""
    manager = Manager(env.config, options())
    recorder = manager.get_event_recorder_for("widget-core")
    async with running(manager):
        widget = await _widget(manager, "fallback")
        env.faults.fail_next(1, verb="create", resource="events.events.k8s.io", code=404)
        recorder.event(widget, "Normal", "Synced", "synced")
        recorder.event(widget, "Normal", "Synced", "synced")
        await _written(recorder)
        events = await _events(manager, CORE_V1)
    [event] = [e for e in events if e["involvedObject"]["uid"] == widget.metadata.uid]
    assert event["count"] == 2
    assert (event["reason"], event["message"], event["type"]) == ("Synced", "synced", "Normal")
    assert event["source"]["component"] == "widget-core"


async def test_a_recorder_asked_for_after_start_is_started(env: Environment) -> None:
    """A recorder first asked for while the manager runs writes its events."""
    manager = Manager(env.config, options())
    async with running(manager):
        widget = await _widget(manager, "late")
        recorder = manager.get_event_recorder_for("late-recorder")
        recorder.event(widget, "Normal", "Late", "asked for after start")
        await _written(recorder)
        events = await _events(manager, EVENTS_V1)
    assert [e["reason"] for e in events if e["regarding"]["uid"] == widget.metadata.uid] == ["Late"]
