"""Fixtures for the embedded API server tests: a running server and clients for it."""

from __future__ import annotations

import datetime
import ssl
import uuid
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson
import pytest
from kubernetes_asyncio import client as k8s_client

from pyctrl.envtest._server import APIServer

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path

TOKEN = "test-token"


class Kube:
    """A thin raw HTTP client for one API server: returns (status, decoded body, headers)."""

    def __init__(self, session: aiohttp.ClientSession, base: str, token: str = TOKEN) -> None:
        self.session = session
        self.base = base
        self.token = token

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        raw: bytes | None = None,
        content_type: str = "application/json",
        accept: str | None = None,
        headers: dict[str, str] | None = None,
        params: dict[str, str] | None = None,
    ) -> tuple[int, Any, dict[str, str]]:
        hdrs = {"Authorization": f"Bearer {self.token}"}
        if accept is not None:
            hdrs["Accept"] = accept
        data: bytes | None = raw
        if body is not None:
            data = orjson.dumps(body)
        if data is not None:
            hdrs["Content-Type"] = content_type
        if headers:
            hdrs.update(headers)
        async with self.session.request(
            method, self.base + path, data=data, headers=hdrs, params=params
        ) as resp:
            text = await resp.read()
            try:
                decoded: Any = orjson.loads(text) if text else None
            except orjson.JSONDecodeError:
                decoded = text.decode()
            return resp.status, decoded, dict(resp.headers)

    async def get(self, path: str, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        return await self.request("GET", path, **kw)

    async def post(self, path: str, body: Any, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        return await self.request("POST", path, body=body, **kw)

    async def put(self, path: str, body: Any, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        return await self.request("PUT", path, body=body, **kw)

    async def patch(
        self, path: str, body: Any, patch_type: str = "merge", **kw: Any
    ) -> tuple[int, Any, dict[str, str]]:
        content_type = {
            "merge": "application/merge-patch+json",
            "json": "application/json-patch+json",
            "strategic": "application/strategic-merge-patch+json",
            "apply": "application/apply-patch+yaml",
        }[patch_type]
        return await self.request("PATCH", path, body=body, content_type=content_type, **kw)

    async def delete(
        self, path: str, body: Any = None, **kw: Any
    ) -> tuple[int, Any, dict[str, str]]:
        return await self.request("DELETE", path, body=body, **kw)

    async def create_ok(self, path: str, body: Any, **kw: Any) -> dict[str, Any]:
        """POST that must succeed; returns the created object."""
        status, obj, _ = await self.post(path, body, **kw)
        assert status == 201, obj
        assert isinstance(obj, dict)
        return obj

    async def get_ok(self, path: str, **kw: Any) -> dict[str, Any]:
        """GET that must succeed."""
        status, obj, _ = await self.get(path, **kw)
        assert status == 200, obj
        assert isinstance(obj, dict)
        return obj

    async def watch_lines(
        self,
        path: str,
        *,
        stop: Callable[[list[dict[str, Any]]], bool],
        params: dict[str, str] | None = None,
        accept: str | None = None,
    ) -> list[dict[str, Any]]:
        """Open a watch and collect events until ``stop(events)`` is true or the stream ends."""
        hdrs = {"Authorization": f"Bearer {self.token}"}
        if accept is not None:
            hdrs["Accept"] = accept
        query = {"watch": "1"}
        query.update(params or {})
        events: list[dict[str, Any]] = []
        async with self.session.get(self.base + path, headers=hdrs, params=query) as resp:
            assert resp.status == 200
            async for line in resp.content:
                if not line.strip():
                    continue
                events.append(orjson.loads(line))
                if stop(events):
                    break
        return events


@pytest.fixture
async def server() -> AsyncIterator[APIServer]:
    """A started embedded API server over plain HTTP."""
    async with APIServer(tokens=[TOKEN], ssl_context=None, bookmark_interval=0.2) as srv:
        yield srv


@pytest.fixture
async def kube(server: APIServer) -> AsyncIterator[Kube]:
    """A raw HTTP client of ``server``."""
    async with aiohttp.ClientSession() as session:
        yield Kube(session, server.url)


@pytest.fixture
async def ns(kube: Kube) -> str:
    """A fresh namespace for one test."""
    name = f"test-{uuid.uuid4().hex[:8]}"
    await kube.create_ok("/api/v1/namespaces", {"metadata": {"name": name}})
    return name


@pytest.fixture
async def api_client(server: APIServer) -> AsyncIterator[k8s_client.ApiClient]:
    """A kubernetes_asyncio ApiClient talking to ``server`` over its real socket."""
    configuration = k8s_client.Configuration()
    configuration.host = server.url
    configuration.api_key = {"BearerToken": f"Bearer {TOKEN}"}
    async with k8s_client.ApiClient(configuration) as api:
        yield api


def make_self_signed(directory: Path) -> tuple[Path, Path]:
    """A throwaway self-signed serving certificate for 127.0.0.1 (cert, key paths)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "envtest-test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path = directory / "tls.crt"
    key_path = directory / "tls.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@pytest.fixture
async def tls_server(tmp_path: Path) -> AsyncIterator[tuple[APIServer, ssl.SSLContext]]:
    """A started embedded API server over HTTPS, with a client SSL context trusting it."""
    cert, key = make_self_signed(tmp_path)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    client_ctx = ssl.create_default_context(cafile=str(cert))
    async with APIServer(tokens=[TOKEN], ssl_context=server_ctx) as srv:
        yield srv, client_ctx
