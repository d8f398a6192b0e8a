"""Watch: k8s.io/apiserver's ``endpoints/handlers/watch.go`` with the watch cache's start.

`serve_watch` registers a `pyctrl._apiserver.storage.watch.Watcher` with the server's hub,
sends the initial or historical events it owes (or the 410 ``Expired`` event of a version
older than the watch cache), then streams events, bookmarks and the initial-events-end
bookmark in kube-apiserver's chunked JSON stream until the timeout or the client leaves.
The views render each object as the client negotiated (full object, converted through a
webhook, ``PartialObjectMetadata`` or one-row ``Table``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import random
from typing import TYPE_CHECKING, Any

from aiohttp import web

from pyctrl._apimachinery.field import field_forbidden
from pyctrl._apiserver.apimachinery.errors import (
    StatusError,
    invalid,
    parse_resource_version,
    resource_version_problem,
)
from pyctrl._apiserver.apimachinery.fields import FieldSelector, LabelSelector, parse_field_selector
from pyctrl._apiserver.endpoints.handlers.get import list_option_errors
from pyctrl._apiserver.endpoints.handlers.rest import (
    include_object,
    int_param,
    selectors,
    shard_selector,
)
from pyctrl._apiserver.endpoints.negotiation import Negotiated, negotiate_request
from pyctrl._apiserver.endpoints.request import truthy
from pyctrl._apiserver.endpoints.responsewriters import headers
from pyctrl._apiserver.endpoints.table import partial_metadata, to_table
from pyctrl._apiserver.registry.generic import meta_of
from pyctrl._apiserver.registry.listing import too_large
from pyctrl._apiserver.storage.store import TooOld
from pyctrl._apiserver.storage.watch import PendingEvent, Watcher, encode_event

if TYPE_CHECKING:
    from collections.abc import Hashable

    from pyctrl._apiserver.endpoints.handlers.rest import Scope
    from pyctrl._apiserver.registry.generic import ResourceStore
    from pyctrl._apiserver.scheme.resources import ResourceType
    from pyctrl._apiserver.storage.watch import Chunk
    from pyctrl.sharding import ShardSelector

__all__ = ["next_bookmark", "parse_rv", "serve_watch"]

logger = logging.getLogger("pyctrl.envtest.server")


class _JSONView:
    """Full objects at one resource type's version."""

    def __init__(self, store: ResourceStore) -> None:
        self.store = store
        self.rt = rt = store.rt
        self.cache_key: Hashable = ("json", rt.group, rt.version, rt.plural)

    def render(self, obj: dict[str, Any]) -> Any:
        return self.store.to_external(obj)

    def bookmark(self, meta: dict[str, Any]) -> dict[str, Any]:
        if not self.rt.crd_name:
            meta = dict(meta, creationTimestamp=None)
        return {"kind": self.rt.kind, "apiVersion": self.rt.api_version, "metadata": meta}


class _ConvertingView(_JSONView):
    """Full objects at a version only a conversion webhook produces.

    Events are queued unencoded (`PendingEvent`: the watcher knows this view as
    ``deferred``) and converted a batch at a time, through the webhook, as the stream
    sends them; each event is encoded once, after conversion.
    """

    deferred = True

    def __init__(self, store: ResourceStore) -> None:
        super().__init__(store)
        rt = store.rt
        self.cache_key = ("converting", rt.group, rt.version, rt.plural)

    def render(self, obj: dict[str, Any]) -> Any:
        return obj

    async def convert(self, chunks: list[Chunk]) -> bytes:
        """Convert the pending events' objects; encoded events (bookmarks) pass unchanged."""
        pending = [c for c in chunks if isinstance(c, PendingEvent)]
        converted = iter(await self.store.external_many([p.obj for p in pending]))
        return b"".join(
            encode_event(c.type, next(converted)) if isinstance(c, PendingEvent) else c
            for c in chunks
        )


class _MetaView:
    """``PartialObjectMetadata``."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.cache_key: Hashable = ("meta", version)

    def render(self, obj: dict[str, Any]) -> Any:
        out = partial_metadata(obj)
        out["apiVersion"] = f"meta.k8s.io/{self.version}"
        return out

    def bookmark(self, meta: dict[str, Any]) -> dict[str, Any]:
        return {
            "kind": "PartialObjectMetadata",
            "apiVersion": f"meta.k8s.io/{self.version}",
            "metadata": meta,
        }


class _TableView:
    """One-row ``Table`` per event."""

    def __init__(self, store: ResourceStore, version: str, include: str) -> None:
        self.store = store
        self.rt = rt = store.rt
        self.version = version
        self.include = include
        self.cache_key: Hashable = ("table", rt.group, rt.version, rt.plural, version, include)

    def table(self, obj: dict[str, Any], headers: bool) -> dict[str, Any]:
        ext = self.store.to_external(obj)
        return to_table(
            self.rt,
            [ext],
            include=self.include,
            list_meta={"resourceVersion": meta_of(ext).get("resourceVersion", "")},
            headers=headers,
            api_version=f"meta.k8s.io/{self.version}",
        )

    def render(self, obj: dict[str, Any]) -> Any:
        return self.table(obj, headers=False)

    def render_first(self, type_: str, obj: dict[str, Any]) -> bytes:
        return encode_event(type_, self.table(obj, headers=True))

    def bookmark(self, meta: dict[str, Any]) -> dict[str, Any]:
        return {
            "kind": "Table",
            "apiVersion": f"meta.k8s.io/{self.version}",
            "metadata": meta,
            "columnDefinitions": [],
            "rows": [],
        }


_View = _JSONView | _ConvertingView | _MetaView | _TableView


def _view(store: ResourceStore, request: web.Request, neg: Negotiated) -> _View:
    if neg.kind == "table":
        return _TableView(store, neg.version, include_object(request) or "Metadata")
    if neg.kind == "meta":
        return _MetaView(neg.version)
    if store.converts_by_webhook():
        return _ConvertingView(store)
    return _JSONView(store)


def parse_rv(value: str) -> int:
    """A watch's resourceVersion, or the watch cache's 500 (without reason) when unparsable.

    The watch cache parses the version (``storage.APIObjectVersioner``) and answers its
    error as an internal one.
    """
    rv = parse_resource_version(value)
    if rv is None:
        raise StatusError(500, "", resource_version_problem(value), details=False)
    return rv


def next_bookmark(now: float, deadline: float, interval: float) -> float:
    """When the next bookmark is due (``cacheWatcher.nextBookmarkTime``).

    A heartbeat every interval, and one 2 s before the deadline so the client resumes from
    a recent version; none once that moment has passed.
    """
    moment = min(now + interval, deadline - 2.0)
    return moment if moment >= now else float("inf")


def _watcher(
    scope: Scope,
    *,
    label_field: tuple[LabelSelector, FieldSelector],
    store: ResourceStore,
    namespace: str | None,
    name: str | None,
    view: _View,
    shard: ShardSelector | None,
) -> Watcher:
    rt = store.rt
    labels, fields = label_field
    if name is not None:
        fields = FieldSelector(
            (*fields.requirements, *parse_field_selector(f"metadata.name={name}").requirements)
        )
    return Watcher(
        key=rt.storage_key,
        namespace=namespace if rt.namespaced else None,
        labels=labels,
        fields=fields,
        fields_of=store.fields_of,
        view=view,
        max_queue=scope.watch_queue_size,
        render_first=view.render_first if isinstance(view, _TableView) else None,
        shard=shard.matches if shard is not None else None,
        event_delay=functools.partial(scope.faults.watch_delay_for, (rt.plural, rt.qualified)),
        clock=scope.clock,
    )


def _register(
    scope: Scope,
    watcher: Watcher,
    *,
    rt: ResourceType,
    namespace: str | None,
    rv_text: str,
    send_initial: bool | None,
) -> tuple[dict[str, Any] | None, int | None]:
    """Register the watcher and queue the events it owes.

    Registration and the initial events happen with no await in between, so no change
    committed meanwhile can be missed or delivered twice.

    Returns:
        The ``Status`` of an ERROR event to send instead (410 Expired), and the version at
        which the initial events end (None unless ``sendInitialEvents=true``).
    """
    if rv_text in ("", "0") or send_initial:
        if rv_text not in ("", "0"):
            wanted = parse_rv(rv_text)
            if wanted > scope.store.rv:
                raise too_large(wanted, scope.store.rv)
        scope.hub.register(watcher)
        if send_initial is not False:
            for obj in scope.store.items(rt.storage_key, namespace if rt.namespaced else None):
                if watcher.matches_object(obj):
                    watcher.push_object("ADDED", obj)
        return None, scope.store.rv if send_initial else None
    wanted = parse_rv(rv_text)
    try:
        start = scope.registry.cache_start.get(rt.storage_key, 0)
        if wanted < start:
            raise TooOld(wanted, start)
        history = scope.store.events_since(wanted, rt.storage_key)
    except TooOld as exc:
        return StatusError(410, "Expired", str(exc), details=False).to_status(), None
    scope.hub.register(watcher)
    for event in history:
        watcher.offer(event)
    return None, None


def _refuse_watch_list(scope: Scope, request: web.Request) -> None:
    if scope.faults.refuses_watch_list and request.query.get("resourceVersionMatch"):
        # kube-apiserver before 1.27 knows no sendInitialEvents, and so forbids this.
        raise invalid(
            "meta.k8s.io",
            "ListOptions",
            "",
            [
                field_forbidden(
                    "resourceVersionMatch", "resourceVersionMatch is forbidden for watch"
                )
            ],
        )


async def serve_watch(
    scope: Scope, request: web.Request, rt: ResourceType, namespace: str | None, name: str | None
) -> web.StreamResponse:
    """WATCH of a collection (or of one object by name), streamed until timeout or close."""
    neg = negotiate_request(request, allow_transform=True)
    if neg.kind == "yaml":
        neg = Negotiated("json")
    _refuse_watch_list(scope, request)
    list_option_errors(request, watch=True)
    label_and_field = selectors(request, rt)
    shard, shard_text = shard_selector(scope, request)
    query = request.query
    send_initial_raw = query.get("sendInitialEvents")
    send_initial = truthy(send_initial_raw) if send_initial_raw is not None else None
    timeout = int_param(request, "timeoutSeconds")
    timeout_s = random.uniform(1800.0, 3600.0) if timeout is None or timeout <= 0 else timeout
    store = scope.stores.for_type(rt)
    view = _view(store, request, neg)
    watcher = _watcher(
        scope,
        label_field=label_and_field,
        store=store,
        namespace=namespace,
        name=name,
        view=view,
        shard=shard,
    )
    error, initial_end_rv = _register(
        scope,
        watcher,
        rt=rt,
        namespace=namespace,
        rv_text=query.get("resourceVersion", ""),
        send_initial=send_initial,
    )
    if initial_end_rv is not None:
        meta: dict[str, Any] = {
            "resourceVersion": str(initial_end_rv),
            "annotations": {"k8s.io/initial-events-end": "true"},
        }
        if shard:
            meta["shardInfo"] = {"selector": shard_text}
        watcher.push_initial_end(encode_event("BOOKMARK", view.bookmark(meta)))
    response = web.StreamResponse(status=200, headers=headers())
    response.enable_chunked_encoding()
    try:
        await response.prepare(request)
        if error is not None:
            await response.write(encode_event("ERROR", error))
            await response.write_eof()
            return response
        bookmarks = truthy(query.get("allowWatchBookmarks"))
        await _stream(
            scope,
            request,
            response,
            watcher,
            view,
            timeout_s=float(timeout_s),
            bookmarks=bookmarks,
        )
    except (ConnectionResetError, ConnectionError):
        pass
    finally:
        watcher.close()
    return response


async def _stream(
    scope: Scope,
    request: web.Request,
    response: web.StreamResponse,
    watcher: Watcher,
    view: _View,
    *,
    timeout_s: float,
    bookmarks: bool,
) -> None:
    clock = scope.clock
    deadline = clock.now() + timeout_s
    bookmark_at = float("inf")
    if bookmarks:
        bookmark_at = next_bookmark(clock.now(), deadline, scope.bookmark_interval)
    while True:
        if isinstance(view, _ConvertingView):
            pending = watcher.drain_chunks()
            if pending:
                try:
                    await response.write(await view.convert(pending))
                except StatusError as exc:
                    # As kube-apiserver: a failed conversion ends the watch.
                    logger.warning("ending watch: conversion failed: %s", exc)
                    break
                continue
        else:
            chunks = watcher.drain()
            if chunks:
                await response.write(b"".join(chunks))
                continue
        if watcher.closed:
            break
        now = clock.now()
        if now >= deadline:
            break
        if now >= bookmark_at:
            rv = watcher.bookmark_rv(scope.store.rv)
            await response.write(
                encode_event("BOOKMARK", view.bookmark({"resourceVersion": str(rv)}))
            )
            bookmark_at = next_bookmark(now, deadline, scope.bookmark_interval)
            continue
        transport = request.transport
        if transport is None or transport.is_closing():
            break
        # A client that closes the connection cancels this handler (the server's
        # handler cancellation), so waiting needs no poll of the transport.
        await watcher.wait(min(deadline, bookmark_at))
        # One more turn of the loop lets writes in flight queue their events too, so
        # a busy server sends them to each watcher in one write instead of many.
        await asyncio.sleep(0)
    with contextlib.suppress(ConnectionError):
        await response.write_eof()
