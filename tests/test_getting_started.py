"""docs/getting-started.md: its Python blocks run as written, and its test runs twice at once."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

DOC = Path(__file__).resolve().parents[1] / "docs" / "getting-started.md"


def run_page() -> dict[str, Any]:
    """Execute the page's Python blocks in order, as one module; return its namespace."""
    namespace: dict[str, Any] = {"__name__": "getting_started"}
    for block in re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL):
        # Compiled apart from this module's __future__ imports, as a reader would run them.
        exec(compile(block, str(DOC), "exec", dont_inherit=True), namespace)
    return namespace


async def test_two_managers_of_the_page_run_side_by_side() -> None:
    """The page's test passes, twice at once: its managers bind no fixed metrics or probe ports."""
    page = run_page()
    async with asyncio.timeout(45):
        await asyncio.gather(page["test_reconciles"](), page["test_reconciles"]())


async def test_the_pages_manager_binds_no_port() -> None:
    """The manager the page builds for tests has metrics and health probes switched off."""
    page = run_page()
    async with page["Environment"](crds=[page["crd_for"](page["MySrv"])]) as env:
        manager = await page["operator"].create_manager(env.config)
    assert (manager.options.metrics_bind_address, manager.options.health_probe_bind_address) == (
        "0",
        "0",
    )
