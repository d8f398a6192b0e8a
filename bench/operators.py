"""The two operators the controller benchmark compares, doing the same work.

Each reconciles ``BenchItem`` objects (bench.pyctrl.dev/v1): when ``status.observed``
differs from ``spec.value`` it writes ``status.observed = spec.value`` through the status
subresource. Both act on spec changes only, each the idiomatic way: pyctrl with the
``GenerationChanged`` predicate (controller-runtime's ``GenerationChangedPredicate``),
kopf with an update handler on ``field="spec"``; both still receive, and discard, the
events of their own status writes.

Run as ``python -m bench.operators pyctrl|kopf`` with KUBECONFIG set.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

from pydantic import Field

from pyctrl.meta import KubeModel
from pyctrl.resource import CustomResource

GROUP, VERSION, PLURAL = "bench.pyctrl.dev", "v1", "benchitems"


class BenchSpec(KubeModel):
    value: int = 0
    stamp: float = 0.0


class BenchStatus(KubeModel):
    observed: int = -1


class BenchItem(CustomResource, group=GROUP, version=VERSION):
    spec: BenchSpec = Field(default_factory=BenchSpec)
    status: BenchStatus = Field(default_factory=BenchStatus)


async def run_pyctrl(workers: int, *, record_triggers: bool = True) -> None:
    from pyctrl.builder import controller_managed_by
    from pyctrl.client import MergePatch
    from pyctrl.config import get_config
    from pyctrl.controller import Options as ControllerOptions
    from pyctrl.log import configure
    from pyctrl.manager import Manager, Options
    from pyctrl.predicate import GenerationChanged
    from pyctrl.reconcile import Result

    configure(level="WARNING")
    manager = Manager(await get_config(), Options(metrics_bind_address="0"))

    class Reconciler:
        async def reconcile_object(self, obj: BenchItem) -> Result:
            if obj.status.observed != obj.spec.value:
                await manager.client.status().patch(
                    obj, MergePatch({"status": {"observed": obj.spec.value}})
                )
            return Result()

    (
        controller_managed_by(manager)
        .for_(BenchItem)
        # Reconcile spec changes only, as kopf's handler below (field="spec") runs only
        # for them: the operator's own status writes do not come back as work.
        .with_event_filter(GenerationChanged())
        .with_options(
            ControllerOptions(max_concurrent_reconciles=workers, record_triggers=record_triggers)
        )
        .complete(Reconciler())
    )
    await manager.run()


def run_kopf() -> None:
    import kopf

    logging.getLogger().setLevel(logging.WARNING)

    @kopf.on.startup()
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False
        settings.watching.server_timeout = 300
        settings.persistence.finalizer = "bench.pyctrl.dev/kopf-finalizer"

    @kopf.on.login()
    def login(**kwargs: Any) -> Any:
        return kopf.login_with_kubeconfig(**kwargs)

    @kopf.on.resume(GROUP, VERSION, PLURAL)
    @kopf.on.create(GROUP, VERSION, PLURAL)
    @kopf.on.update(GROUP, VERSION, PLURAL, field="spec")
    def handle(spec: Any, status: Any, patch: Any, **_: Any) -> None:
        value = spec.get("value", 0)
        if status.get("observed") != value:
            patch.status["observed"] = value

    kopf.run(standalone=True, clusterwide=True)


def main(argv: list[str]) -> None:
    which = argv[0] if argv else ""
    if which in ("pyctrl", "pyctrl-noprov"):
        # pyctrl-noprov: the same operator with provenance (record_triggers) off.
        workers = int(argv[1]) if len(argv) > 1 else 8
        asyncio.run(run_pyctrl(workers, record_triggers=which == "pyctrl"))
    elif which == "kopf":
        run_kopf()
    else:
        raise SystemExit(
            "usage: python -m bench.operators pyctrl [workers] | pyctrl-noprov [workers] | kopf"
        )


if __name__ == "__main__":
    # Run the importable module's copy: pydantic resolves the models' annotations in the
    # module they were defined in, which under ``python -m cProfile`` is not ``__main__``.
    from bench.operators import main as _main

    _main(sys.argv[1:])
