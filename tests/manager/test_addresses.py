"""The running servers' addresses: bind port 0, read where each server listens."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
import aiohttp.web

from pyctrl.certs import generate_ca, issue_serving_cert, write_cert_dir
from pyctrl.manager import Manager
from pyctrl.testing import running
from pyctrl.webhook import Server as WebhookServer

from .conftest import options

if TYPE_CHECKING:
    from pyctrl.envtest import Environment

DOCS = Path(__file__).parents[2] / "docs"


class Echo:
    """A review handler answering any review body with an empty object."""

    name = "echo"

    async def review(self, body: Any) -> aiohttp.web.Response:
        return aiohttp.web.json_response({})


async def test_each_server_bound_to_port_0_says_where_it_listens(
    env: Environment, tmp_path: Path
) -> None:
    """Metrics, probes, debug and webhooks on free ports: the addresses answer HTTP."""
    write_cert_dir(tmp_path, issue_serving_cert(generate_ca("test-ca"), ["127.0.0.1"]))
    webhooks = WebhookServer(host="127.0.0.1", port=0, cert_dir=tmp_path)
    webhooks.register("/echo", Echo())
    manager = Manager(
        env.config,
        options(
            health_probe_bind_address="127.0.0.1:0",
            debug_bind_address="127.0.0.1:0",
            webhook_server=webhooks,
        ),
    )
    addresses = ("metrics_address", "health_probe_address", "debug_address", "webhook_address")
    assert [getattr(manager, name) for name in addresses] == [None] * 4
    async with running(manager), aiohttp.ClientSession() as http:
        found = {name: getattr(manager, name) for name in addresses}
        for name, address in found.items():
            assert re.fullmatch(r"127\.0\.0\.1:[1-9][0-9]*", address or ""), (name, address)
        async with http.get(f"http://{manager.metrics_address}/metrics") as response:
            assert response.status == 200
            assert "controller_runtime" in await response.text()
        async with http.get(f"http://{manager.health_probe_address}/readyz") as response:
            assert (response.status, await response.text()) == (200, "ok")
        async with http.post(
            f"https://{manager.webhook_address}/echo", json={}, ssl=False
        ) as response:
            assert response.status == 200
    assert [getattr(manager, name) for name in addresses] == [None] * 4


async def test_the_production_page_test_example_runs() -> None:
    """docs/production.md's "Testing it without a cluster" example, executed as written."""
    page = (DOCS / "production.md").read_text()
    section = page[page.index("## Testing it without a cluster") :]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    namespace: dict[str, Any] = {}
    exec(compile(code[1], "docs/production.md", "exec", dont_inherit=True), namespace)
    await namespace["test_metrics_answer_only_allowed_users"]()
