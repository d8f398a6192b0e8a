"""The titled snippets of docs/controllers.md and docs/production.md run against envtest."""

from __future__ import annotations

import re
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from pyctrl import CustomResource, KubeModel, Manager, Request, Result, controller_managed_by
from pyctrl.controller import Options
from pyctrl.crd import crd_for
from pyctrl.envtest import Environment
from pyctrl.manager import Options as ManagerOptions
from pyctrl.meta import ObjectMeta
from pyctrl.testing import object_eventually, running
from pyctrl.watchdog import WatchdogOptions

DOCS = Path(__file__).resolve().parents[2] / "docs"
_FENCE = re.compile(r'^```python title="(?P<title>[^"]*)"\n(?P<body>.*?)^```$', re.M | re.S)
TITLES = {
    "controllers.md": [
        "retry budget",
        "blocking reconciler",
        "reconcile everything",
        "optional kind",
    ],
    "production.md": ["watchdog options"],
}


class MySrvSpec(KubeModel):
    """The docs' example spec."""

    image: str = "nginx"


class MySrvStatus(KubeModel):
    """The docs' example status."""

    url: str | None = None


class MySrv(CustomResource, group="docs.pyctrl.dev", version="v1"):
    """The custom resource the docs' snippets reconcile."""

    spec: MySrvSpec = Field(default_factory=MySrvSpec)
    status: MySrvStatus = Field(default_factory=MySrvStatus)


class ServiceMonitor(CustomResource, group="monitoring.coreos.com", version="v1"):
    """prometheus-operator's ServiceMonitor, not installed here."""


class MySrvReconciler:
    """A reconciler with nothing to do (the page's prelude has one that does more)."""

    def __init__(self, client: object) -> None:
        self.client = client

    async def reconcile(self, request: Request) -> Result | None:
        return None


PRELUDE = {
    "MySrv": MySrv,
    "ServiceMonitor": ServiceMonitor,
    "MySrvReconciler": MySrvReconciler,
    "Manager": Manager,
    "Request": Request,
    "Result": Result,
    "Options": Options,
    "controller_managed_by": controller_managed_by,
}


def _snippets() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for page, titles in TITLES.items():
        text = (DOCS / page).read_text()
        blocks = {m["title"]: textwrap.dedent(m["body"]) for m in _FENCE.finditer(text)}
        found.extend((f"{page}: {title}", blocks[title]) for title in titles)
    return found


def _run(code: str, name: str) -> dict[str, Any]:
    module = types.ModuleType("docs_snippet")
    module.__dict__.update(PRELUDE)
    sys.modules[module.__name__] = module
    try:
        exec(compile(code, name, "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return module.__dict__


@pytest.mark.parametrize(("name", "code"), _snippets(), ids=[n for n, _ in _snippets()])
async def test_snippet_runs(name: str, code: str) -> None:
    """Each snippet executes; a setup(manager) runs a Manager that reconciles a MySrv."""
    namespace = _run(code, name)
    if "options" in namespace:
        assert isinstance(namespace["options"], ManagerOptions)
        assert isinstance(namespace["options"].watchdog, WatchdogOptions)
    setup = namespace.get("setup")
    if setup is None:
        return
    async with Environment(crds=[crd_for(MySrv)]) as env:
        manager = Manager(env.config, ManagerOptions(metrics_bind_address="0"))
        setup(manager)
        async with running(manager):
            await manager.client.create(MySrv(metadata=ObjectMeta(name="web", namespace="default")))
            if "BlockingReconciler" in namespace:
                await object_eventually(
                    manager.api_reader, MySrv, "web", "default", lambda s: s.status.url is not None
                )


def test_every_titled_snippet_is_run() -> None:
    """No titled python block of the two pages is left out of the list above."""
    for page, titles in TITLES.items():
        found = [m["title"] for m in _FENCE.finditer((DOCS / page).read_text())]
        assert found == titles
