"""Raw JSON requests to the environment's API server, whatever its mode.

The environment installs CRDs and webhook configurations with plain REST calls through
kubernetes_asyncio's ``ApiClient``, so every authentication method its ``Configuration``
supports (bearer token, client certificate, exec plugins of a kubeconfig) works.
"""

from __future__ import annotations

from typing import Any

import orjson
from kubernetes_asyncio import client as k8s_client

from pyctrl.errors import APIError

__all__ = ["Rest"]


class Rest:
    """Raw JSON requests through kubernetes_asyncio (every auth method it supports)."""

    def __init__(self, configuration: k8s_client.Configuration) -> None:
        self._api = k8s_client.ApiClient(configuration)

    async def request(
        self, method: str, path: str, body: Any = None, *, request_timeout: float = 30.0
    ) -> Any:
        """Send ``body`` as JSON to ``path``; the decoded JSON answer (None if empty).

        Raises:
            pyctrl.errors.APIError: The status is not 2xx (the per-status subclass).
        """
        response = await self._api.call_api(
            path,
            method,
            header_params={"Accept": "application/json", "Content-Type": "application/json"},
            body=body,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=request_timeout,
        )
        try:
            data = await response.read()
        finally:
            response.release()
        if not 200 <= response.status < 300:
            raise APIError.from_status(response.status, data, response.headers.get("Retry-After"))
        return orjson.loads(data) if data else None

    async def aclose(self) -> None:
        """Close the underlying ``ApiClient``."""
        await self._api.close()
