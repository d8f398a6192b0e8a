"""Shared helpers of the webhook tests (no tests here).

Real servers only: the embedded API server (`Environment`), pyctrl's webhook `Server`
running user code, and `scripted_webhook`, a small HTTPS server whose answers a test
writes by hand (for malformed, slow or denying-with-warnings webhooks that pyctrl's
own handlers never produce).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson
from aiohttp import web
from pydantic import Field

from pyctrl.certs import (
    LOCAL_HOSTS,
    CertificateAuthority,
    generate_ca,
    issue_serving_cert,
    server_ssl_context,
    write_cert_dir,
)
from pyctrl.meta import KubeModel
from pyctrl.resource import CustomResource
from pyctrl.webhook import FieldError, InvalidObjectError, Server, current_request

if TYPE_CHECKING:
    from pathlib import Path

    from pyctrl.envtest import Environment

GROUP = "hooks.pyctrl.dev"


class GadgetSpec(KubeModel):
    size: int = 0
    color: str | None = None


class Gadget(CustomResource, group=GROUP, version="v1", status_subresource=True):
    spec: GadgetSpec = Field(default_factory=GadgetSpec)


class GadgetDefaults:
    """A gadget's colour defaults to blue."""

    async def default(self, obj: Gadget) -> None:
        if obj.spec.color is None:
            obj.spec.color = "blue"


class GadgetChecks:
    """Sizes are not negative (a warning above 100); a gadget named 'keep' stays."""

    def __init__(self) -> None:
        self.dry_runs: list[bool] = []

    async def validate_create(self, obj: Gadget) -> list[str] | None:
        self.dry_runs.append(current_request().dry_run)
        return self._check(obj)

    async def validate_update(self, old: Gadget, new: Gadget) -> list[str] | None:
        del old
        return self._check(new)

    async def validate_delete(self, obj: Gadget) -> list[str] | None:
        if obj.metadata.name == "keep":
            raise InvalidObjectError("gadget keep is protected")
        return None

    @staticmethod
    def _check(obj: Gadget) -> list[str] | None:
        if obj.spec.size < 0:
            raise InvalidObjectError(
                "spec.size must not be negative",
                [FieldError("spec.size", f"Invalid value: {obj.spec.size}: must be >= 0")],
            )
        return ["size above 100 is slow"] if obj.spec.size > 100 else None


def gadget(name: str, size: int = 1, **spec: Any) -> dict[str, Any]:
    """A Gadget in wire form."""
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Gadget",
        "metadata": {"name": name},
        "spec": {"size": size, **spec},
    }


@dataclass
class Certs:
    """A CA and a serving certificate for local hosts, written to a directory."""

    ca: CertificateAuthority
    directory: Path
    ssl: ssl.SSLContext

    @property
    def bundle(self) -> str:
        """The CA as a webhook ``caBundle``."""
        return base64.b64encode(self.ca.cert_pem).decode()


def make_certs(directory: Path, hosts: Sequence[str] = LOCAL_HOSTS) -> Certs:
    """A fresh CA and a serving certificate for ``hosts`` in ``directory``."""
    ca = generate_ca()
    serving = issue_serving_cert(ca, hosts)
    write_cert_dir(directory, serving)
    return Certs(ca, directory, server_ssl_context(serving))


@contextlib.asynccontextmanager
async def running(server: Server) -> AsyncIterator[str]:
    """Run a pyctrl webhook server; yields its base URL."""
    async with asyncio.TaskGroup() as group:
        task = group.create_task(server.start())
        async with asyncio.timeout(10):
            await server.wait_started()
        try:
            yield f"https://127.0.0.1:{server.port}"
        finally:
            task.cancel()


Answer = Callable[[dict[str, Any]], Awaitable[Any]]


@dataclass
class Scripted:
    """A scripted webhook server: every request body it got, and its base URL."""

    url: str
    received: list[dict[str, Any]] = field(default_factory=list)


@contextlib.asynccontextmanager
async def scripted_webhook(certs: Certs, answer: Answer) -> AsyncIterator[Scripted]:
    """Serve HTTPS on 127.0.0.1; each POST body goes to ``answer``, whose result is the reply.

    ``answer`` returns a JSON-able value (sent with status 200) or a ready `web.Response`.
    """
    scripted = Scripted(url="")

    async def handle(request: web.Request) -> web.StreamResponse:
        body = orjson.loads(await request.read())
        scripted.received.append({"path": request.path, "query": dict(request.query), **body})
        reply = await answer(body)
        if isinstance(reply, web.StreamResponse):
            return reply
        return web.Response(body=orjson.dumps(reply), content_type="application/json")

    app = web.Application()
    app.router.add_post("/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=certs.ssl)
        await site.start()
        scripted.url = f"https://127.0.0.1:{runner.addresses[0][1]}"
        yield scripted
    finally:
        await runner.cleanup()


def allow(body: dict[str, Any], **response: Any) -> dict[str, Any]:
    """An AdmissionReview v1 answer to ``body`` (allowed unless ``response`` says otherwise)."""
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": body["request"]["uid"], "allowed": True, **response},
    }


def json_patch(operations: list[dict[str, Any]]) -> str:
    """A JSON patch as an AdmissionResponse carries it."""
    return base64.b64encode(orjson.dumps(operations)).decode()


def dead_url() -> str:
    """An https URL on a local port where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"https://127.0.0.1:{port}"


def rule(
    resources: Sequence[str] = ("gadgets",),
    operations: Sequence[str] = ("CREATE", "UPDATE"),
    *,
    groups: Sequence[str] = (GROUP,),
    versions: Sequence[str] = ("v1",),
    scope: str = "*",
) -> dict[str, Any]:
    """One webhook rule."""
    return {
        "apiGroups": list(groups),
        "apiVersions": list(versions),
        "operations": list(operations),
        "resources": list(resources),
        "scope": scope,
    }


def hook(
    name: str, url: str, certs: Certs | None, rules: Sequence[dict[str, Any]] = (), **extra: Any
) -> dict[str, Any]:
    """One webhook of a configuration, calling ``url``."""
    client: dict[str, Any] = {"url": url}
    if certs is not None:
        client["caBundle"] = certs.bundle
    return {
        "name": name,
        "clientConfig": client,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "rules": list(rules) or [rule()],
        **extra,
    }


def configuration(kind: str, name: str, *hooks: dict[str, Any]) -> dict[str, Any]:
    """A Mutating- or ValidatingWebhookConfiguration."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": list(hooks),
    }


@dataclass
class Response:
    """What the API server answered."""

    status: int
    body: Any
    headers: dict[str, str]


class Rest:
    """A raw HTTPS client of an `Environment`'s API server."""

    def __init__(self, env: Environment, session: aiohttp.ClientSession) -> None:
        ca_file = env.config.ssl_ca_cert
        assert isinstance(ca_file, str)
        self.ssl = ssl.create_default_context(cafile=ca_file)
        assert env.config.host is not None
        self.base: str = env.config.host
        self.headers = {"Authorization": f"Bearer {env.token}"}
        self.session = session

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        params: dict[str, str] | None = None,
    ) -> Response:
        headers = dict(self.headers)
        data = None
        if body is not None:
            data = orjson.dumps(body)
            headers["Content-Type"] = content_type
        async with self.session.request(
            method, self.base + path, data=data, headers=headers, params=params, ssl=self.ssl
        ) as resp:
            raw = await resp.read()
            return Response(resp.status, orjson.loads(raw) if raw else None, dict(resp.headers))

    async def create(self, path: str, body: Any, **kw: Any) -> Response:
        return await self.request("POST", path, body, **kw)

    async def ok(self, method: str, path: str, body: Any = None, **kw: Any) -> dict[str, Any]:
        """A request that must succeed; returns the decoded body."""
        response = await self.request(method, path, body, **kw)
        assert response.status in (200, 201), response.body
        assert isinstance(response.body, dict)
        return response.body

    async def install(self, *configurations: dict[str, Any]) -> None:
        """Create webhook configurations."""
        for config in configurations:
            plural = config["kind"].lower() + "s"
            await self.ok("POST", f"/apis/admissionregistration.k8s.io/v1/{plural}", config)


def gadgets(namespace: str = "default", name: str = "") -> str:
    """The path of gadgets in ``namespace`` (of one gadget with ``name``)."""
    path = f"/apis/{GROUP}/v1/namespaces/{namespace}/gadgets"
    return f"{path}/{name}" if name else path
