"""The start-up check accepts a server without the core group (a CRD-only server).

apiextensions-apiserver run alone serves no ``/api`` and no root discovery; its OpenAPI
index still needs valid credentials, so the check asks for it when ``/api`` is 404.
"""

from __future__ import annotations

import pytest
from aiohttp import web

from pyctrl._kubernetes import Configuration
from pyctrl.client import RESTClient
from pyctrl.errors import ConnectionCheckError


async def _check(openapi_status: int) -> None:
    async def openapi(request: web.Request) -> web.Response:
        del request
        return web.json_response({"paths": {}}, status=openapi_status)

    app = web.Application()
    app.router.add_get("/openapi/v3", openapi)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    configuration = Configuration()
    configuration.host = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        async with RESTClient(configuration) as rest:
            await rest.check_connection(timeout=10)
    finally:
        await runner.cleanup()


async def test_a_server_without_the_core_group_passes_the_check() -> None:
    """``/api`` is 404 but the OpenAPI index answers: the server is there."""
    await _check(200)


async def test_a_server_refusing_both_fails_the_check_clearly() -> None:
    """Neither ``/api`` nor ``/openapi/v3``: the error names both paths."""
    with pytest.raises(ConnectionCheckError, match=r"refused discovery \(GET /api, /openapi/v3\)"):
        await _check(403)
