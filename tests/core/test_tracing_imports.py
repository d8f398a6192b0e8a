"""Tracing is an optional extra: without it pyctrl never tries to import OpenTelemetry.

Each test runs a fresh interpreter: what is imported is process state.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

# A whole operator: the embedded API server, a manager, a controller whose reconcile
# makes a client call. A finder first on sys.meta_path records every attempt to import
# an opentelemetry module, whether or not it is installed.
OPERATOR = """
import asyncio, sys

attempts = []

class Spy:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "opentelemetry":
            attempts.append(name)
        return None

sys.meta_path.insert(0, Spy())

from pyctrl.builder import controller_managed_by
from pyctrl.crd import crd_for
from pyctrl.envtest import Environment
from pyctrl.manager import Manager, Options
from pyctrl.meta import ObjectMeta
from pyctrl.resource import CustomResource

class Item(CustomResource, group="example.com", version="v1"):
    pass

async def main():
    async with Environment(crds=[crd_for(Item)]) as env:
        manager = Manager(env.config, Options(metrics_bind_address="0"))
        done = asyncio.Event()

        class Reconciler:
            async def reconcile(self, request):
                await manager.client.get(Item, request.name, request.namespace)
                done.set()

        controller_managed_by(manager).for_(Item).complete(Reconciler())
        async with asyncio.TaskGroup() as tg:
            task = tg.create_task(manager.start())
            await manager.wait_started()
            await manager.client.create(Item(metadata=ObjectMeta(name="a", namespace="default")))
            async with asyncio.timeout(30):
                await done.wait()
            task.cancel()
    loaded = [m for m, module in sys.modules.items() if m.startswith("opentelemetry") and module]
    print("reconciled", attempts, sorted(loaded))

asyncio.run(main())
"""


def _run(prelude: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(prelude) + OPERATOR],
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_an_operator_never_tries_to_import_opentelemetry() -> None:
    """With the extra installed but unused, an operator's whole run attempts no otel import."""
    assert _run("") == "reconciled [] []"


def test_an_operator_runs_where_opentelemetry_cannot_be_imported() -> None:
    """Where OpenTelemetry is absent (any import of it fails), an operator runs unchanged."""
    blocker = """
    import sys
    sys.modules["opentelemetry"] = None  # what an uninstalled package looks like
    """
    assert _run(blocker) == "reconciled [] []"
