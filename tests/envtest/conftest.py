"""Fixtures of the API server conformance suite: an `Environment` and HTTP clients of it.

The tests talk HTTPS to whatever ``Environment()`` starts: pyctrl's embedded API server by
default, an existing cluster with ``USE_EXISTING_CLUSTER=true`` (``KUBECONFIG`` names it),
or kube-apiserver and etcd with ``KUBEBUILDER_ASSETS``. Each test gets its own namespace
and unique names for what it creates outside it, so tests share a cluster safely.

Tests that need more than a cluster carry a marker and are deselected at collection where
the mode cannot give it: ``embedded_only`` (the fault API, the embedded server's internals
or constructor options) outside the embedded mode, ``needs_controllers`` (the garbage
collector and the namespace controller of kube-controller-manager) in the binaries mode,
which runs kube-apiserver alone, and ``needs_builtin_kinds`` (built-in kinds such as
Namespaces or ConfigMaps, root discovery ``/api`` and ``/apis``, OpenAPI, kubectl, which
resolves kinds through them) against the CRD-only server: the binaries mode with
``kube-apiextensions`` instead of ``kube-apiserver`` (``tests/realserver.py`` builds it).
Against that
server the ``ns`` fixture names a namespace without creating it: custom resources need
no Namespace object there.
"""

from __future__ import annotations

import contextlib
import copy
import os
import uuid
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from kubernetes_asyncio import client as k8s_client

from pyctrl.envtest import Environment, _binaries

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterable

    import aiohttp
    from multidict import CIMultiDict

    from pyctrl._apiserver.endpoints.server import APIServer
    from pyctrl.envtest import Mode

# What each marker needs, by the servers that lack it ("crd-only": kube-apiextensions).
_NEEDS: dict[str, tuple[frozenset[str], str]] = {
    "embedded_only": (
        frozenset({"existing", "binaries", "crd-only"}),
        "pyctrl's embedded API server",
    ),
    "needs_controllers": (
        frozenset({"binaries", "crd-only"}),
        "kube-controller-manager's controllers",
    ),
    "needs_builtin_kinds": (
        frozenset({"crd-only"}),
        "built-in kinds, root discovery or OpenAPI (kube-apiserver's own APIs)",
    ),
    "needs_crd_only_server": (
        frozenset({"embedded", "existing", "binaries"}),
        "the real CRD-only server (KUBEBUILDER_ASSETS from `nox -s realserver`)",
    ),
}
_DESELECTED = pytest.StashKey[list[str]]()


def envtest_mode() -> Mode:
    """The mode ``Environment()`` starts in, from the environment variables."""
    return Environment().resolve_mode()


def crd_only() -> bool:
    """Whether the server under test is the CRD-only server (kube-apiextensions)."""
    if envtest_mode() != "binaries":
        return False
    found = _binaries.find_binaries(os.environ["KUBEBUILDER_ASSETS"], source="KUBEBUILDER_ASSETS")
    return "kube-apiserver" not in found


def envtest_server() -> str:
    """The server the suite runs against: the mode, or "crd-only" for kube-apiextensions."""
    return "crd-only" if crd_only() else envtest_mode()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the tests whose marker needs what the current server lacks."""
    mode = envtest_server()
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    notes: list[str] = []
    for marker, (lacking, what) in _NEEDS.items():
        if mode not in lacking:
            continue
        count = sum(1 for item in items if item.get_closest_marker(marker) is not None)
        if count:
            notes.append(
                f"{count} {marker} tests deselected: they need {what}, "
                f"which the {mode} server lacks"
            )
    if not notes:
        return
    for item in items:
        lacking_modes = [
            lacking
            for marker, (lacking, _) in _NEEDS.items()
            if item.get_closest_marker(marker) is not None
        ]
        (dropped if any(mode in lacking for lacking in lacking_modes) else keep).append(item)
    config.hook.pytest_deselected(items=dropped)
    items[:] = keep
    config.stash[_DESELECTED] = notes


def pytest_report_collectionfinish(config: pytest.Config) -> list[str]:
    """Say which tests the mode deselected, and why."""
    return [f"envtest: {note}" for note in config.stash.get(_DESELECTED, [])]


class Kube:
    """Raw HTTP requests through a kubernetes_asyncio ApiClient: (status, body, headers).

    Requests go over the client's own session (its TLS settings and client certificate)
    with its credentials, so they reach any cluster the client's configuration reaches.
    """

    def __init__(self, api: k8s_client.ApiClient) -> None:
        self.api = api
        self.base = str(api.configuration.host)

    @property
    def session(self) -> aiohttp.ClientSession:
        """The ApiClient's aiohttp session."""
        session: aiohttp.ClientSession = self.api.rest_client.pool_manager
        return session

    async def _headers(self, accept: str | None, headers: dict[str, str] | None) -> dict[str, str]:
        sent: dict[str, str] = {}
        for setting in (await self.api.configuration.auth_settings()).values():
            sent[setting["key"]] = setting["value"]
        if accept is not None:
            sent["Accept"] = accept
        sent.update(headers or {})
        return sent

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
    ) -> tuple[int, Any, CIMultiDict[str]]:
        sent = await self._headers(accept, headers)
        data: bytes | None = raw
        if body is not None:
            data = orjson.dumps(body)
        if data is not None:
            sent["Content-Type"] = content_type
        async with self.session.request(
            method,
            self.base + path,
            data=data,
            headers=sent,
            params=params,
            allow_redirects=False,
        ) as resp:
            text = await resp.read()
            try:
                decoded: Any = orjson.loads(text) if text else None
            except orjson.JSONDecodeError:
                decoded = text.decode()
            return resp.status, decoded, resp.headers.copy()

    async def get(self, path: str, **kw: Any) -> tuple[int, Any, CIMultiDict[str]]:
        return await self.request("GET", path, **kw)

    async def post(self, path: str, body: Any, **kw: Any) -> tuple[int, Any, CIMultiDict[str]]:
        return await self.request("POST", path, body=body, **kw)

    async def put(self, path: str, body: Any, **kw: Any) -> tuple[int, Any, CIMultiDict[str]]:
        return await self.request("PUT", path, body=body, **kw)

    async def patch(
        self, path: str, body: Any, patch_type: str = "merge", **kw: Any
    ) -> tuple[int, Any, CIMultiDict[str]]:
        content_type = {
            "merge": "application/merge-patch+json",
            "json": "application/json-patch+json",
            "strategic": "application/strategic-merge-patch+json",
            "apply": "application/apply-patch+yaml",
        }[patch_type]
        return await self.request("PATCH", path, body=body, content_type=content_type, **kw)

    async def delete(
        self, path: str, body: Any = None, **kw: Any
    ) -> tuple[int, Any, CIMultiDict[str]]:
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

    @contextlib.asynccontextmanager
    async def stream(
        self, path: str, *, params: dict[str, str] | None = None, accept: str | None = None
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """Open a watch on ``path`` (``watch=true`` plus ``params``); it must answer 200."""
        query = {"watch": "true", **(params or {})}
        async with self.session.get(
            self.base + path,
            headers=await self._headers(accept, None),
            params=query,
        ) as resp:
            assert resp.status == 200, await resp.text()
            yield resp

    async def watch_lines(
        self,
        path: str,
        *,
        stop: Callable[[list[dict[str, Any]]], bool],
        params: dict[str, str] | None = None,
        accept: str | None = None,
    ) -> list[dict[str, Any]]:
        """Open a watch and collect events until ``stop(events)`` is true or the stream ends."""
        events: list[dict[str, Any]] = []
        async with self.stream(path, params=params, accept=accept) as resp:
            async for line in resp.content:
                if not line.strip():
                    continue
                events.append(orjson.loads(line))
                if stop(events):
                    break
        return events


# kube-controller-manager publishes this ConfigMap into every namespace of a cluster; the
# embedded server and a bare kube-apiserver (binaries mode) do not.
PUBLISHED_CONFIGMAPS = frozenset({"kube-root-ca.crt"})


def own(names: Iterable[str]) -> list[str]:
    """``names`` without those of the ConfigMaps a cluster publishes in every namespace."""
    return [name for name in names if name not in PUBLISHED_CONFIGMAPS]


def unique(prefix: str) -> str:
    """A name no other test uses: ``prefix`` and eight hex digits."""
    return f"{prefix}{uuid.uuid4().hex[:8]}"


def deployment(
    name: str,
    *,
    container: dict[str, Any] | None = None,
    pod: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """An apps/v1 Deployment of one ``nginx`` container named ``app``, labelled ``app: name``.

    ``container`` adds fields to the container, ``pod`` to the pod spec, and keyword
    arguments to the Deployment's spec.
    """
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [{"name": "app", "image": "nginx:1.27", **(container or {})}],
                    **(pod or {}),
                },
            },
            **spec,
        },
    }


def anonymous_config(env: Environment, token: str | None = None) -> k8s_client.Configuration:
    """``env.config`` without credentials (no client certificate), or with only ``token``."""
    config = copy.deepcopy(env.config)
    config.cert_file = None
    config.key_file = None
    config.refresh_api_key_hook = None
    config.api_key = {} if token is None else {"BearerToken": f"Bearer {token}"}
    return config


def server_config(server: APIServer, token: str) -> k8s_client.Configuration:
    """A configuration for an `APIServer` a test started itself (plain HTTP or trusted)."""
    config = k8s_client.Configuration()
    config.host = server.url
    config.api_key = {"BearerToken": f"Bearer {token}"}
    return config


@pytest.fixture
async def env() -> AsyncIterator[Environment]:
    """The API server under test: a fresh embedded one per test, or the existing cluster."""
    async with Environment() as environment:
        yield environment


@pytest.fixture
async def api_client(env: Environment) -> AsyncIterator[k8s_client.ApiClient]:
    """A kubernetes_asyncio ApiClient of ``env``."""
    async with k8s_client.ApiClient(env.config) as api:
        yield api


@pytest.fixture
def kube(api_client: k8s_client.ApiClient) -> Kube:
    """A raw HTTP client of ``env``."""
    return Kube(api_client)


@pytest.fixture
async def ns(env: Environment, kube: Kube) -> AsyncIterator[str]:
    """A fresh namespace for one test (deleted afterwards on a shared cluster).

    The CRD-only server has no Namespace kind: there the name is only reserved.
    """
    name = unique("test-")
    if env.crd_only:
        yield name
        return
    await kube.create_ok("/api/v1/namespaces", {"metadata": {"name": name}})
    yield name
    if env.mode != "embedded":
        await kube.delete(f"/api/v1/namespaces/{name}")
