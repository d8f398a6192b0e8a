"""docs/dependents.md: its examples run against the embedded API server; MySrv's are real."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
from typing import Any

from pyctrl.client import Client
from pyctrl.crd import crd_for
from pyctrl.envtest import Environment
from pyctrl.manager import Manager, Options

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "dependents.md"
MYSRV = "## MySrv, both ways"


def blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.DOTALL)


async def test_the_examples_run_in_order() -> None:
    """Every example before the MySrv section runs, as one module, and its asserts hold."""
    # The first block is the page's prelude: the names a reader has in hand, given below.
    examples = blocks(DOC.read_text().split(MYSRV)[0])[1:]
    namespace: dict[str, Any] = {}
    # The first block declares the types, whose CRD the server needs before the rest.
    exec(compile(examples[0], str(DOC), "exec", dont_inherit=True), namespace)
    async with (
        Environment(crds=[crd_for(namespace["Web"])]) as env,
        Client.from_config(env.config) as client,
    ):
        namespace["client"] = client
        namespace["manager"] = Manager(env.config, Options(metrics_bind_address="0"))
        for block in examples[1:]:
            code = compile(
                block, str(DOC), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True
            )
            result = eval(code, namespace)
            if inspect.isawaitable(result):
                await result


def test_the_mysrv_forms_shown_are_the_example_code() -> None:
    """The MySrv snippets are copied verbatim from the example, whose e2e tests run both."""
    sources = "".join(
        (ROOT / "examples" / "mysrv" / name).read_text()
        for name in ("controller.py", "handwritten.py")
    )
    shown = blocks(DOC.read_text().split(MYSRV)[1])
    assert len(shown) == 5
    for block in shown:
        assert block in sources, block.splitlines()[0]
