"""Tracing with OpenTelemetry, an optional extra (``pip install pyctrl-runtime[otel]``).

pyctrl never imports OpenTelemetry on its own: without it, tracing costs nothing. It
traces once the process has loaded ``opentelemetry.trace`` and a tracer provider is set,
globally (``opentelemetry.trace.set_tracer_provider``) or for pyctrl alone
(`set_tracer_provider`). Then:

- each watch event a controller's source delivers (that its predicates let through) is a
  span ``<event> <Kind>`` (``update Deployment``, kind CONSUMER), ended once the event
  handler has queued its requests;
- each reconcile is a span ``reconcile <controller>`` (kind INTERNAL), a root span
  **linked** to the spans of the events that triggered it: many events collapse into one
  reconcile, so it has no single parent (the links are the triggers the queue kept, see
  `pyctrl.workqueue.Triggers`);
- each API call of the `pyctrl.client.Client` is a CLIENT span ``<METHOD> <Kind>``, a
  child of the current span, with the HTTP method, the group/version/kind, the object's
  name and namespace, the response status code and the resourceVersion it answered
  with (for a write, the one its watch event will carry);
- each admission webhook request is a SERVER span ``webhook <path>``, a child of the
  trace context in the request's ``traceparent`` header when the API server sends one.

**From a webhook to the reconcile it causes.** An object may carry a trace context in
its `TRACEPARENT_ANNOTATION` annotation: a defaulting webhook opts in by calling
`annotate(obj)` in its ``default`` method, which stores the webhook request's span
context. The watch event of a create or update that brings a new value of that
annotation becomes a child of that context, so the webhook request, the event and (by
its link) the reconcile are found together.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping
    from contextlib import AbstractContextManager

__all__ = [
    "TRACEPARENT_ANNOTATION",
    "annotate",
    "set_tracer_provider",
    "tracer",
]

TRACEPARENT_ANNOTATION: Final = "pyctrl.dev/traceparent"
"""The annotation carrying a W3C ``traceparent`` from a webhook request to the reconcile."""

_NAME: Final = "pyctrl"


class _State:
    provider: Any = None  # set by set_tracer_provider; None: the global provider
    seen: Any = None  # the provider `tracer` was taken from
    tracer: Any = None


def set_tracer_provider(provider: Any) -> None:
    """Trace pyctrl with ``provider`` instead of the global one (None: the global one again).

    Useful in tests and where the application does not set a global provider.
    """
    _State.provider = provider
    _State.seen = _State.tracer = None


def tracer() -> Any:
    """pyctrl's OpenTelemetry tracer, or None while tracing is off.

    Off means: ``opentelemetry.trace`` is not loaded (the check never imports it), or no
    tracer provider is configured.
    """
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    provider = _State.provider
    if provider is None:
        provider = trace.get_tracer_provider()
        if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
            return None
    if provider is not _State.seen:
        from pyctrl._version import __version__

        _State.tracer = provider.get_tracer(_NAME, __version__)
        _State.seen = provider
    return _State.tracer


def _annotation_context(annotations: Mapping[str, str] | None) -> Any:
    value = annotations.get(TRACEPARENT_ANNOTATION) if annotations else None
    if not value:
        return None
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    context = TraceContextTextMapPropagator().extract({"traceparent": value})
    return context or None


def annotate(obj: Any) -> None:
    """Store the current span's context in ``obj``'s `TRACEPARENT_ANNOTATION` annotation.

    Call it in a defaulting webhook (or any code writing the object) to link the
    reconciles the write causes to the current trace. Does nothing while tracing is off
    or outside a span.
    """
    if tracer() is None:
        return
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    from pyctrl.resource import accessor

    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    if "traceparent" in carrier:
        meta = accessor(obj)
        meta.annotations = {**meta.annotations, TRACEPARENT_ANNOTATION: carrier["traceparent"]}


@contextmanager
def event_span(
    tracer_: Any,
    event: str,
    *,
    kind: str,
    namespace: str,
    name: str,
    resource_version: str,
    annotations: Mapping[str, str] | None,
    old_annotations: Mapping[str, str] | None = None,
) -> Iterator[Any]:
    """A CONSUMER span for one watch event; yields its span context (for links).

    Its parent is the object's `TRACEPARENT_ANNOTATION` context when the event brought
    a new value of it (a create, or an update that changed it).
    """
    from opentelemetry.trace import SpanKind

    parent = None
    if annotations and TRACEPARENT_ANNOTATION in annotations:
        value = annotations[TRACEPARENT_ANNOTATION]
        if old_annotations is None or old_annotations.get(TRACEPARENT_ANNOTATION) != value:
            parent = _annotation_context(annotations)
    attributes = {
        "k8s.event": event,
        "k8s.kind": kind,
        "k8s.object.name": name,
        "k8s.resource_version": resource_version,
    }
    if namespace:
        attributes["k8s.namespace.name"] = namespace
    with tracer_.start_as_current_span(
        f"{event} {kind}", context=parent, kind=SpanKind.CONSUMER, attributes=attributes
    ) as span:
        yield span.get_span_context()


def reconcile_span(
    controller: str,
    *,
    kind: str,
    namespace: str,
    name: str,
    reconcile_id: str,
    links: Iterable[Any],
    cluster: str = "",
) -> AbstractContextManager[Any]:
    """The span of one reconcile, a root linked to ``links`` (span contexts); no-op if off."""
    tracer_ = tracer()
    if tracer_ is None:
        return nullcontext()
    from opentelemetry import context as otel_context
    from opentelemetry.trace import Link, SpanKind

    attributes = {
        "pyctrl.controller": controller,
        "pyctrl.reconcile_id": reconcile_id,
        "k8s.kind": kind,
        "k8s.object.name": name,
    }
    if namespace:
        attributes["k8s.namespace.name"] = namespace
    if cluster:
        attributes["k8s.cluster.name"] = cluster
    span: AbstractContextManager[Any] = tracer_.start_as_current_span(
        f"reconcile {controller}",
        context=otel_context.Context(),  # a root: its causes are links
        kind=SpanKind.INTERNAL,
        links=[Link(context) for context in links if context is not None],
        attributes=attributes,
    )
    return span


@contextmanager
def client_span(
    tracer_: Any, method: str, gvk: Any, namespace: str | None, name: str | None
) -> Iterator[Any]:
    """A CLIENT span for one API call; the caller sets the status code on what it yields."""
    from opentelemetry.trace import SpanKind

    kind = gvk.kind if gvk is not None else ""
    attributes = {"http.request.method": method}
    if gvk is not None:
        attributes.update({"k8s.group": gvk.group, "k8s.version": gvk.version, "k8s.kind": kind})
    if name:
        attributes["k8s.object.name"] = name
    if namespace:
        attributes["k8s.namespace.name"] = namespace
    with tracer_.start_as_current_span(
        f"{method} {kind}".rstrip(), kind=SpanKind.CLIENT, attributes=attributes
    ) as span:
        yield span


def set_status_code(span: Any, code: int) -> None:
    """Record an HTTP status code on ``span`` (an error status from 400 up)."""
    span.set_attribute("http.response.status_code", code)
    if code >= 400:
        from opentelemetry.trace import Status, StatusCode

        span.set_status(Status(StatusCode.ERROR, f"HTTP {code}"))


def record_error(exc: BaseException) -> None:
    """Mark the current span failed with ``exc`` (nothing while tracing is off)."""
    if tracer() is None:
        return
    from opentelemetry.trace import Status, StatusCode, get_current_span

    span = get_current_span()
    span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))


def server_span(tracer_: Any, name: str, headers: Mapping[str, str]) -> Any:
    """A SERVER span for a webhook request, child of the request's ``traceparent``."""
    from opentelemetry.propagate import extract
    from opentelemetry.trace import SpanKind

    return tracer_.start_as_current_span(name, context=extract(dict(headers)), kind=SpanKind.SERVER)
