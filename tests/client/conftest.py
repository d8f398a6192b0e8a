"""Shared fixtures for the client tests: a scriptable HTTP server, and clients for it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
from aiohttp import web
from kubernetes_asyncio.client import Configuration
from multidict import MultiDict
from pydantic import Field

from pyctrl.client import Client, RESTClient
from pyctrl.envtest import Environment
from pyctrl.meta import KubeModel
from pyctrl.resource import CustomResource


class WidgetSpec(KubeModel):
    """The spec of the test custom resource."""

    size: int = 1
    color: str = "red"
    tags: list[str] = Field(default_factory=list)


class WidgetStatus(KubeModel):
    """The status of the test custom resource."""

    phase: str = ""
    ready: int = 0


class Widget(CustomResource, group="test.pyctrl.dev", version="v1"):
    """A namespaced custom resource with a status subresource."""

    spec: WidgetSpec = Field(default_factory=WidgetSpec)
    status: WidgetStatus = Field(default_factory=WidgetStatus)


class Gadget(CustomResource, group="test.pyctrl.dev", version="v1", scope="Cluster"):
    """A cluster-scoped custom resource, not installed at start."""

    spec: WidgetSpec = Field(default_factory=WidgetSpec)


def crd(kind: str, *, scope: str = "Namespaced") -> dict[str, Any]:
    """The CustomResourceDefinition of Widget or Gadget."""
    plural = kind.lower() + "s"
    spec_schema = {
        "type": "object",
        "properties": {
            "size": {"type": "integer"},
            "color": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.test.pyctrl.dev"},
        "spec": {
            "group": "test.pyctrl.dev",
            "scope": scope,
            "names": {
                "plural": plural,
                "singular": kind.lower(),
                "kind": kind,
                "listKind": f"{kind}List",
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": spec_schema,
                                "status": {
                                    "type": "object",
                                    "properties": {
                                        "phase": {"type": "string"},
                                        "ready": {"type": "integer"},
                                    },
                                },
                            },
                        }
                    },
                }
            ],
        },
    }


WIDGET_CRD = crd("Widget")
GADGET_CRD = crd("Gadget", scope="Cluster")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Recorded:
    """One request the fake server received."""

    method: str
    path: str
    query: MultiDict[str]
    headers: dict[str, str]
    body: bytes


def status_response(code: int, reason: str, message: str = "", **headers: str) -> web.Response:
    """A kube-apiserver style failure Status."""
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message or reason,
        "reason": reason,
        "code": code,
    }
    return web.Response(
        status=code, body=orjson.dumps(body), content_type="application/json", headers=headers
    )


def json_response(data: Any, status: int = 200) -> web.Response:
    """A JSON answer."""
    return web.Response(status=status, body=orjson.dumps(data), content_type="application/json")


@dataclass
class FakeServer:
    """A plain-HTTP server whose answers a test scripts, recording every request.

    ``script`` answers requests in order while it has entries; then ``handler`` answers.
    """

    url: str = ""
    requests: list[Recorded] = field(default_factory=list)
    script: list[Handler] = field(default_factory=list)
    handler: Handler | None = None
    closing: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the test ends: handlers that hang until then should wait on it."""

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(
            Recorded(
                method=request.method,
                path=request.path,
                query=MultiDict(request.query),
                headers=dict(request.headers),
                body=await request.read(),
            )
        )
        if self.script:
            return await self.script.pop(0)(request)
        if self.handler is not None:
            return await self.handler(request)
        return status_response(404, "NotFound", "the server could not find the requested resource")


@pytest.fixture
async def fake_server() -> AsyncIterator[FakeServer]:
    """A started FakeServer on a free local port."""
    server = FakeServer()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", server.dispatch)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    sockets = runner.addresses
    host, port = sockets[0][:2]
    server.url = f"http://{host}:{port}"
    try:
        yield server
    finally:
        server.closing.set()
        await runner.cleanup()


def fake_configuration(url: str, token: str = "secret") -> Configuration:
    """A Configuration for ``url`` with a bearer token."""
    configuration = Configuration(host=url)
    configuration.api_key = {"BearerToken": f"Bearer {token}"}
    return configuration


@pytest.fixture
async def rest(fake_server: FakeServer) -> AsyncIterator[RESTClient]:
    """A RESTClient for the fake server, closed after the test."""
    async with RESTClient(fake_configuration(fake_server.url)) as client:
        yield client


@pytest.fixture
async def env() -> AsyncIterator[Environment]:
    """An embedded API server with the Widget CRD installed."""
    async with Environment(crds=[WIDGET_CRD]) as environment:
        yield environment


@pytest.fixture
async def client(env: Environment) -> AsyncIterator[Client]:
    """A Client for ``env`` whose writes name the field manager "pyctrl-test"."""
    async with Client.from_config(env.config, field_owner="pyctrl-test") as c:
        yield c
