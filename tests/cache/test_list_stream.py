"""A list answered in one response is decoded as it arrives, item by item.

A small aiohttp server stands in for the API server, so that the test controls when the
list body ends: it sends half the items, then waits until the informer has seen the
first of them before it sends the rest. If the informer decoded the body only once it
had all of it, that wait would time out.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from typing import TYPE_CHECKING, Any

import pytest
from aiohttp import web
from kubernetes_asyncio.client import V1ConfigMap

from pyctrl._kubernetes import Configuration
from pyctrl.client import RESTClient
from pyctrl.testing import eventually

from .conftest import started_cache

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

_RESOURCES = {
    "kind": "APIResourceList",
    "groupVersion": "v1",
    "resources": [
        {"name": "configmaps", "namespaced": True, "kind": "ConfigMap", "verbs": ["list"]}
    ],
}


def _item(i: int) -> dict[str, Any]:
    meta = {"name": f"cm-{i}", "namespace": "default", "uid": f"u{i}", "resourceVersion": "7"}
    return {"metadata": meta, "data": {"i": str(i)}}


class _ListServer:
    """Serves discovery, one list of ``count`` ConfigMaps in two halves, idle watches."""

    def __init__(self, count: int, body: bytes | None = None) -> None:
        self.count = count
        self.body = body
        self.first_item_seen = asyncio.Event()
        self.waited_in_vain = False
        self.lists = 0

    async def _list(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") == "true":
            response = web.StreamResponse()
            await response.prepare(request)
            await asyncio.Event().wait()  # an idle watch, until the client leaves
        self.lists += 1
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        if self.body is not None:
            await response.write(self.body)
            return response
        items = [json.dumps(_item(i)).encode() for i in range(self.count)]
        half = self.count // 2
        await response.write(
            b'{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"7"},'
            b'"items":[' + b",".join(items[:half])
        )
        try:
            async with asyncio.timeout(10):
                await self.first_item_seen.wait()
        except TimeoutError:
            self.waited_in_vain = True
        await response.write(b"," + b",".join(items[half:]) + b"]}")
        return response

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[RESTClient]:
        async def resources(request: web.Request) -> web.Response:
            del request
            return web.json_response(_RESOURCES)

        app = web.Application()
        app.router.add_get("/api/v1", resources)
        app.router.add_get("/api/v1/configmaps", self._list)
        runner = web.AppRunner(app, handler_cancellation=True)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        try:
            configuration = Configuration()
            configuration.host = f"http://127.0.0.1:{port}"
            async with RESTClient(configuration) as rest:
                yield rest
        finally:
            await runner.cleanup()


def _cache(rest: RESTClient, transform: Callable[[Any], Any] | None = None) -> Any:
    """A started cache that lists in one response (no streaming, no pages)."""
    return started_cache(rest, watch_list=False, page_size=None, default_transform=transform)


async def test_items_reach_the_store_before_the_list_body_ends() -> None:
    """The informer transforms the first item while the server still holds the rest."""
    server = _ListServer(count=200)
    seen: list[str] = []

    def transform(obj: Any) -> Any:
        seen.append(obj["metadata"]["name"])
        server.first_item_seen.set()
        return obj

    async with server.running() as rest, _cache(rest, transform) as cache:
        async with asyncio.timeout(30):
            cached = await cache.list(V1ConfigMap)
    assert not server.waited_in_vain
    assert server.lists == 1
    assert seen[0] == "cm-0"
    assert sorted(c.metadata.name for c in cached) == sorted(f"cm-{i}" for i in range(200))


async def test_a_malformed_list_body_is_reported_clearly() -> None:
    """A body that is not a list fails the informer with an error naming the type and spot."""
    start = b'{"metadata":{"resourceVersion":"7"},"items":[' + json.dumps(_item(0)).encode()
    server = _ListServer(count=0, body=start + b",}")
    server.first_item_seen.set()
    async with server.running() as rest, _cache(rest) as cache:
        cache.get_informer(V1ConfigMap)

        async def failed() -> bool:
            return any(s.last_error for s in cache.status())

        await eventually(failed, within=20)
        errors = [s.last_error for s in cache.status() if s.last_error]
    where = f"malformed list of v1/ConfigMap at byte {len(start) + 1}: Expecting value"
    assert where in errors[0], errors


def test_the_decoder_gives_the_same_items_however_the_body_is_cut() -> None:
    """Chunks cut anywhere (in a string, a number, a UTF-8 character) decode alike."""
    from pyctrl.cache._jsonlist import ListDecoder

    items = [{"metadata": {"name": f"n{i}", "x": "é☃" * i, "n": 12345 + i}} for i in range(40)]
    body = json.dumps(
        {"items": items, "kind": "L", "metadata": {"resourceVersion": "9"}}, ensure_ascii=False
    ).encode()
    for size in (1, 2, 3, 5, 64, len(body)):
        decoder = ListDecoder("v1/L")
        decoded: list[dict[str, Any]] = []
        for start in range(0, len(body), size):
            decoded += decoder.feed(body[start : start + size])
        decoded += decoder.close()
        assert (decoded, decoder.metadata) == (items, {"resourceVersion": "9"}), size


def _decode_in_chunks(body: bytes, size: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    from pyctrl.cache._jsonlist import ListDecoder

    decoder = ListDecoder("v1/L")
    decoded: list[dict[str, Any]] = []
    for start in range(0, len(body), size):
        decoded += decoder.feed(body[start : start + size])
    decoded += decoder.close()
    return decoded, decoder.metadata


def test_braces_in_strings_big_numbers_and_whitespace_decode_as_json_does() -> None:
    """Braces in strings, escaped quotes, large numbers, whitespace: as json.loads has it.

    Strings hold braces (balanced or not), items nest arrays of objects, the body is
    compact and pretty-printed.
    """
    strings = ["}", "{", "},{", '"}],[{"', "\\}", "{{{", "}}},", "a}]b"]
    items = [
        {
            "metadata": {"name": f"n{i}", "annotations": {"s": s, "t": f'{{"k": "{s}"}}'}},
            "spec": {"list": [{"a": 1}, {"b": [{"c": s}]}], "big": 2**62 + i, "f": 1.5e300},
        }
        for i, s in enumerate(strings * 3)
    ]
    document = {"kind": "L", "metadata": {"resourceVersion": "9"}, "items": items}
    for body in (json.dumps(document).encode(), json.dumps(document, indent=2).encode()):
        for size in (1, 7, 100, len(body)):
            assert _decode_in_chunks(body, size) == (items, {"resourceVersion": "9"}), size


def test_a_malformed_item_is_named_with_its_byte_offset() -> None:
    """Not UTF-8, an item that is not an object, a missing comma: each error says where."""
    from pyctrl.cache._jsonlist import MalformedListError

    head = b'{"items":['
    cases = {
        head + b'{"a":"\xff"}]}': f"at byte {len(head) + 6}: not UTF-8",
        head + b'{"a":1},7]}': f"at byte {len(head) + 8}: an item is a int, not an object",
        head + b'{"a":1} {"b":2}]}': f"at byte {len(head) + 8}: expected ',' or ']' after an item",
        head + b'{"a":1}': f"at byte {len(head) + 7}: the list ends early",
    }
    for body, message in cases.items():
        for size in (1, len(body)):
            with pytest.raises(MalformedListError, match=re.escape(message)):
                _decode_in_chunks(body, size)
