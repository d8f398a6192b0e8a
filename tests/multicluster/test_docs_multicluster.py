"""docs/multicluster.md: its Python blocks run, and its fleet test passes as written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pyctrl.envtest import EnvironmentFleet

PAGE = Path(__file__).resolve().parents[2] / "docs" / "multicluster.md"


def page_namespace() -> dict[str, Any]:
    """Execute the page's Python blocks in order, as one module; return its namespace."""
    namespace: dict[str, Any] = {}
    for block in re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.DOTALL):
        exec(compile(block, str(PAGE), "exec", dont_inherit=True), namespace)
    return namespace


@pytest.mark.envtest_fleet(names=["hub", "east", "west"])
async def test_docs_fleet_test_passes(envtest_fleet: EnvironmentFleet) -> None:
    """The page's reconciler and its fleet test run as written."""
    namespace = page_namespace()
    await namespace["test_stamps_land_in_their_cluster"](envtest_fleet)
