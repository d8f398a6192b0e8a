"""A blocking reconcile runs in its reconcile's span; its client calls are children of it."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from pyctrl import tracing
from pyctrl.blocking import SyncClient
from pyctrl.builder import controller_managed_by
from pyctrl.manager import Manager
from pyctrl.meta import ObjectMeta
from pyctrl.testing import eventually, running

from .conftest import Widget, options

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pyctrl.envtest import Environment
    from pyctrl.reconcile import Request, Result


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    tracing.set_tracer_provider(provider)
    try:
        yield spans
    finally:
        tracing.set_tracer_provider(None)
        provider.shutdown()


class Traced:
    def __init__(self, manager: Manager) -> None:
        self.client = SyncClient(manager.client)
        self.span_ids: list[int] = []

    def reconcile(self, request: Request) -> Result | None:
        self.span_ids.append(trace.get_current_span().get_span_context().span_id)
        widget = self.client.get(Widget, request.name, request.namespace)
        widget.status.config_map = "traced"
        self.client.status().update(widget)
        return None


async def test_a_blocking_reconcile_keeps_its_span(
    env: Environment, exporter: InMemorySpanExporter
) -> None:
    """The thread sees the reconcile span; the status update is its child span."""
    manager = Manager(env.config, options())
    traced = Traced(manager)
    controller_managed_by(manager).for_(Widget).complete(traced)
    async with running(manager):
        await manager.client.create(Widget(metadata=ObjectMeta(name="t", namespace="default")))

        def reconcile_ended() -> bool:
            return any(s.name.startswith("reconcile") for s in exporter.get_finished_spans())

        await eventually(lambda: asyncio.sleep(0, reconcile_ended()))
    spans = exporter.get_finished_spans()
    reconcile = next(s for s in spans if s.name.startswith("reconcile"))
    assert reconcile.context is not None
    assert traced.span_ids[0] == reconcile.context.span_id
    puts = [s for s in spans if s.kind == trace.SpanKind.CLIENT and s.name.startswith("PUT")]
    assert puts
    assert puts[0].parent is not None
    assert puts[0].parent.span_id == reconcile.context.span_id
