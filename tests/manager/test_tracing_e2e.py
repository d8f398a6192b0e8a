"""OpenTelemetry tracing end to end, read back from the SDK's in-memory exporter."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from kubernetes_asyncio.client import (
    V1Container,
    V1Deployment,
    V1DeploymentSpec,
    V1LabelSelector,
    V1ObjectMeta,
    V1PodSpec,
    V1PodTemplateSpec,
)
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from pyctrl import tracing
from pyctrl.blocking import SyncClient
from pyctrl.builder import controller_managed_by, webhook_managed_by
from pyctrl.client import MergePatch
from pyctrl.controllerutil import set_controller_reference
from pyctrl.manager import Manager
from pyctrl.meta import ObjectMeta
from pyctrl.reconcile import Request, Result
from pyctrl.testing import eventually, running
from pyctrl.webhook import Server

from .conftest import Widget, options

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pyctrl.envtest import Environment


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """pyctrl traced by an SDK provider that keeps finished spans in memory."""
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    tracing.set_tracer_provider(provider)
    try:
        yield spans
    finally:
        tracing.set_tracer_provider(None)
        provider.shutdown()


def _deployment(widget: Widget) -> V1Deployment:
    labels = {"app": str(widget.metadata.name)}
    deployment = V1Deployment(
        api_version="apps/v1",
        kind="Deployment",
        metadata=V1ObjectMeta(name=widget.metadata.name, namespace=widget.metadata.namespace),
        spec=V1DeploymentSpec(
            selector=V1LabelSelector(match_labels=labels),
            template=V1PodTemplateSpec(
                metadata=V1ObjectMeta(labels=labels),
                spec=V1PodSpec(containers=[V1Container(name="app", image="nginx")]),
            ),
        ),
    )
    set_controller_reference(widget, deployment)
    return deployment


class Deploys:
    """Applies a Deployment per Widget; tells the test when each reconcile is over."""

    def __init__(self, manager: Manager) -> None:
        self.manager = manager
        self.done: asyncio.Queue[Request] = asyncio.Queue()

    async def reconcile(self, request: Request) -> Result:
        try:
            widget = await self.manager.cache.get(Widget, request.name, request.namespace)
            await self.manager.client.apply(_deployment(widget), field_manager="widgets")
        finally:
            await self.done.put(request)
        return Result()

    async def wait(self, count: int) -> None:
        async with asyncio.timeout(20):
            for _ in range(count):
                await self.done.get()


def _id(span: ReadableSpan) -> int:
    assert span.context is not None
    span_id: int = span.context.span_id
    return span_id


def _shape(spans: tuple[ReadableSpan, ...]) -> list[Any]:
    """Each root span with its kind, its links (by span name) and its children, sorted.

    Spans finish in an order that depends on timing (an event may end while the
    reconcile before it still runs); what links to what does not.
    """
    by_id = {_id(span): span for span in spans}
    children: dict[int, list[ReadableSpan]] = {}
    for span in spans:
        if span.parent is not None:
            children.setdefault(span.parent.span_id, []).append(span)

    def describe(span: ReadableSpan) -> Any:
        status = span.attributes.get("http.response.status_code") if span.attributes else None
        return (
            span.name,
            span.kind.name,
            status,
            [by_id[link.context.span_id].name for link in span.links],
            [describe(child) for child in children.get(_id(span), [])],
        )

    return sorted((describe(span) for span in spans if span.parent is None), key=repr)


async def test_a_create_and_a_child_update_trace_as_linked_reconciles(
    env: Environment, exporter: InMemorySpanExporter
) -> None:
    """Create a Widget, then update its Deployment: three reconciles, each linked to its event."""
    manager = Manager(env.config, options())
    deploys = Deploys(manager)
    controller_managed_by(manager).for_(Widget).owns(V1Deployment).complete(deploys)
    async with running(manager):
        widget = await manager.client.create(
            Widget(metadata=ObjectMeta(name="web", namespace="default"))
        )
        await deploys.wait(2)  # the Widget's create, then its Deployment's
        deployment = await manager.api_reader.get(V1Deployment, "web", "default")
        await manager.client.patch(deployment, MergePatch({"metadata": {"labels": {"tier": "x"}}}))
        await deploys.wait(1)
    spans = exporter.get_finished_spans()
    reconcile = ("reconcile widget", "INTERNAL", None)
    apply = ("PATCH Deployment", "CLIENT")
    expected: list[Any] = [
        ("POST Widget", "CLIENT", 201, [], []),  # the test's own calls
        ("GET Deployment", "CLIENT", 200, [], []),
        ("PATCH Deployment", "CLIENT", 200, [], []),
        ("create Widget", "CONSUMER", None, [], []),  # the watch events
        ("create Deployment", "CONSUMER", None, [], []),
        ("update Deployment", "CONSUMER", None, [], []),
        (*reconcile, ["create Widget"], [(*apply, 201, [], [])]),  # the reconciles
        (*reconcile, ["create Deployment"], [(*apply, 200, [], [])]),
        (*reconcile, ["update Deployment"], [(*apply, 200, [], [])]),
    ]
    assert _shape(spans) == sorted(expected, key=repr)
    by_name = {span.name: span for span in spans}
    event = by_name["update Deployment"]
    assert event.attributes is not None
    assert dict(event.attributes) == {
        "k8s.event": "update",
        "k8s.kind": "Deployment",
        "k8s.object.name": "web",
        "k8s.namespace.name": "default",
        "k8s.resource_version": event.attributes["k8s.resource_version"],
    }
    last = [span for span in spans if span.name == "reconcile widget"][-1]
    assert last.attributes is not None
    assert last.attributes["k8s.object.name"] == "web"
    assert last.attributes["pyctrl.controller"] == "widget"
    call = [span for span in spans if span.name == "PATCH Deployment"][-1]
    assert call.attributes is not None
    # The resourceVersion the call wrote is the one its watch event carries.
    written = {
        span.attributes["k8s.resource_version"]
        for span in spans
        if span.name == "PATCH Deployment" and span.attributes and span.parent is None
    }
    assert written == {event.attributes["k8s.resource_version"]}
    assert {k: v for k, v in call.attributes.items() if k != "k8s.resource_version"} == {
        "http.response.status_code": 200,
        "http.request.method": "PATCH",
        "k8s.group": "apps",
        "k8s.version": "v1",
        "k8s.kind": "Deployment",
        "k8s.object.name": "web",
        "k8s.namespace.name": "default",
    }
    assert widget.metadata.name == "web"


class Annotates:
    """A defaulter that opts the Widget into carrying the webhook's trace context."""

    async def default(self, obj: Widget) -> None:
        tracing.annotate(obj)


async def test_trace_context_flows_from_the_webhook_to_the_reconcile(
    env: Environment, exporter: InMemorySpanExporter
) -> None:
    """annotate() in a defaulter: the event is the webhook span's child, the reconcile links it."""
    manager = Manager(
        env.config,
        options(webhook_server=Server(host="127.0.0.1", port=0, cert_dir=env.webhook_cert_dir)),
    )
    webhook_managed_by(manager).for_(Widget).with_defaulter(Annotates()).complete()
    done: asyncio.Queue[Request] = asyncio.Queue()

    async def reconcile(request: Request) -> Result:
        await done.put(request)
        return Result()

    from pyctrl.reconcile import Func

    controller_managed_by(manager).for_(Widget).complete(Func(reconcile))
    async with running(manager):
        await manager.webhook_server.wait_started()
        await env.install_webhooks(manager.webhook_server)
        created = await manager.client.create(
            Widget(metadata=ObjectMeta(name="hooked", namespace="default"))
        )
        async with asyncio.timeout(20):
            await done.get()
    assert tracing.TRACEPARENT_ANNOTATION in (created.metadata.annotations or {})
    spans = exporter.get_finished_spans()
    (webhook,) = [s for s in spans if s.name.startswith("webhook /mutate-")]
    (event,) = [s for s in spans if s.name == "create Widget"]
    (reconcile_span,) = [s for s in spans if s.name == "reconcile widget"]
    assert webhook.kind is SpanKind.SERVER
    assert webhook.attributes is not None
    assert webhook.attributes["http.response.status_code"] == 200
    assert event.parent is not None
    assert event.parent.span_id == _id(webhook)
    assert event.context is not None
    assert webhook.context is not None
    assert event.context.trace_id == webhook.context.trace_id
    assert [link.context.span_id for link in reconcile_span.links] == [_id(event)]
    assert reconcile_span.parent is None


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
    puts = [s for s in spans if s.kind == SpanKind.CLIENT and s.name.startswith("PUT")]
    assert puts
    assert puts[0].parent is not None
    assert puts[0].parent.span_id == reconcile.context.span_id
