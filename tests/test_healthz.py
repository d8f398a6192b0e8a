"""pyctrl.healthz: probe endpoints."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import aiohttp
import pytest

from pyctrl.healthz import ProbeServer, ping, run_checks

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


class Toggle:
    """A readiness check whose verdict the test controls."""

    def __init__(self) -> None:
        self.reason: str | None = "cache not synced"

    async def __call__(self) -> None:
        if self.reason:
            raise RuntimeError(self.reason)


@pytest.fixture
async def served() -> AsyncIterator[tuple[str, Toggle]]:
    toggle = Toggle()
    server = ProbeServer(
        "127.0.0.1", 0, healthz={"ping": ping}, readyz={"ping": ping, "cache": toggle}
    )
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(server.start())
        async with asyncio.timeout(5):
            await server.wait_started()
        yield f"http://127.0.0.1:{server.port}", toggle
        task.cancel()


async def _get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url) as resp:
        return resp.status, await resp.text()


async def test_healthz_passes_with_ok(served: tuple[str, Toggle]) -> None:
    """A passing /healthz answers 200 with the body ok."""
    base, _ = served
    assert await _get(f"{base}/healthz") == (200, "ok")


async def test_readyz_fails_then_passes_as_the_check_changes(served: tuple[str, Toggle]) -> None:
    """/readyz reports the failing check with its reason, and ok once it passes."""
    base, toggle = served
    status, body = await _get(f"{base}/readyz")
    assert status == 500
    assert "[+]ping ok" in body
    assert "[-]cache failed: cache not synced" in body
    toggle.reason = None
    assert await _get(f"{base}/readyz") == (200, "ok")
    status, body = await _get(f"{base}/readyz?verbose")
    assert status == 200
    assert "[+]cache ok" in body


async def test_exclude_and_single_checks(served: tuple[str, Toggle]) -> None:
    """Exclude skips a check; /readyz/<name> runs one check; unknown names are 404."""
    base, _ = served
    assert await _get(f"{base}/readyz?exclude=cache") == (200, "ok")
    assert (await _get(f"{base}/readyz/cache"))[0] == 500
    assert await _get(f"{base}/readyz/ping") == (200, "ok")
    assert (await _get(f"{base}/readyz/nope"))[0] == 404


async def test_run_checks_reports_failures_by_name() -> None:
    """Plain checks run, excluded ones do not, and a message-less failure is named by type."""

    def bad() -> None:
        raise ValueError

    results = await run_checks({"ok": ping, "bad": bad, "skip": bad}, exclude=frozenset({"skip"}))
    assert results == {"ok": None, "bad": "ValueError"}
