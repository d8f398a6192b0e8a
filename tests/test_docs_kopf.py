"""docs/kopf.md: every pyctrl snippet runs, with a Manager on the embedded API server."""

from __future__ import annotations

import inspect
import re
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest

from pyctrl.crd import crd_for
from pyctrl.envtest import Environment
from pyctrl.manager import Manager, Options
from pyctrl.meta import ObjectMeta
from pyctrl.testing import gone_eventually, running
from pyctrl.webhook import Server

PAGE = Path(__file__).resolve().parents[1] / "docs" / "kopf.md"
_FENCE = re.compile(
    r'^(?P<indent> *)```python title="(?P<title>[^"]*)"\n(?P<body>.*?)^(?P=indent)```$', re.M | re.S
)


def snippets(title_prefix: str) -> list[tuple[str, str]]:
    """(heading, code) of every python block whose title starts with ``title_prefix``."""
    text = PAGE.read_text()
    found = []
    for match in _FENCE.finditer(text):
        if not match["title"].startswith(title_prefix):
            continue
        headings = re.findall(r"^## (.+)$", text[: match.start()], re.M)
        found.append((headings[-1] if headings else "top", textwrap.dedent(match["body"])))
    return found


PYCTRL = snippets("pyctrl")
PRELUDE, EXAMPLES = PYCTRL[0][1], PYCTRL[1:]


def _namespace(code: str) -> dict[str, Any]:
    """Run the prelude and ``code`` as one module (pydantic resolves its names there)."""
    module = types.ModuleType("kopf_doc_snippet")
    sys.modules[module.__name__] = module
    try:
        exec(compile(PRELUDE, f"{PAGE}:prelude", "exec"), module.__dict__)
        exec(compile(code, f"{PAGE}:snippet", "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return module.__dict__


def test_the_page_has_side_by_side_snippets() -> None:
    """The page pairs kopf code with pyctrl code, and has the shared types first."""
    assert "class KopfExample(CustomResource" in PRELUDE
    assert len(snippets("kopf")) >= 10
    assert len(EXAMPLES) >= 10


@pytest.mark.parametrize(
    "code", [code for _, code in EXAMPLES], ids=[f"{i}-{h}" for i, (h, _) in enumerate(EXAMPLES)]
)
async def test_snippet_runs(code: str) -> None:
    """The snippet executes; its setup(manager) runs a Manager through an object's life."""
    namespace = _namespace(code)
    kopf_example = namespace["KopfExample"]
    setup = namespace.get("setup")
    tests = [fn for name, fn in namespace.items() if name.startswith("test_") and callable(fn)]
    assert setup is not None or tests, "a snippet defines setup(manager) or a test"
    for test in tests:
        await test()
    if setup is None:
        return
    async with Environment(crds=[crd_for(kopf_example)]) as env:
        webhooks = Server(host="127.0.0.1", port=0, cert_dir=env.webhook_cert_dir)
        manager = Manager(env.config, Options(metrics_bind_address="0", webhook_server=webhooks))
        result = setup(manager)
        if inspect.isawaitable(result):
            await result
        async with running(manager):
            if webhooks.paths:  # the API server calls them for the object below
                await env.install_webhooks(webhooks)
            meta = ObjectMeta(name="example", namespace="default")
            created = await manager.client.create(kopf_example(metadata=meta))
            await manager.client.delete(created)
            # Gone once every finalizer the snippet added was released.
            await gone_eventually(manager.api_reader, kopf_example, "example", "default")
