"""Benchmark: MySrv's children as a workflow of dependents against the hand-written form.

Both forms of the MySrv reconciler (`examples.mysrv.controller.MySrvReconciler`, whose
Deployment and Service are a `pyctrl.dependent.Workflow`, and
`examples.mysrv.handwritten.HandwrittenMySrvReconciler`, which writes them with
``create_or_update``) run in the same process against one embedded API server, each on
``--objects`` MySrvs of its own namespace. Once every MySrv has converged (its children
exist, its status is written), each form reconciles every MySrv ``--rounds`` times more,
with nothing changed: the steady state a controller spends most of its life in. Measured
per steady-state reconcile:

- API calls: HTTP requests to the API server (``rest_client_requests_total``), with
  the manager's client, which reads from its cache (``cached``), and with a client that
  reads from the API server (``direct``);
- CPU: the operator process's CPU time (``time.process_time``).

The forms run ``BENCH_REPEAT`` times (3 by default) in alternating order; the table
gives medians and the ratio workflow / hand-written.

Run: ``python -m bench dependents`` (or ``main()``, which returns the numbers).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyctrl.client import Client
    from pyctrl.manager import Manager

REPEAT = int(os.environ.get("BENCH_REPEAT", "3"))
FORMS = ("workflow", "handwritten")
MODES = ("cached", "direct")


def _requests() -> float:
    from pyctrl.metrics import rest_client_requests_total

    return sum(
        sample.value
        for metric in rest_client_requests_total.collect()
        for sample in metric.samples
        if sample.name.endswith("_total")
    )


def _reconciler(form: str, manager: Manager, client: Client, zone: Any) -> Any:
    from examples.mysrv.controller import MySrvReconciler
    from examples.mysrv.handwritten import HandwrittenMySrvReconciler

    kind = MySrvReconciler if form == "workflow" else HandwrittenMySrvReconciler
    return kind(client, manager.get_event_recorder_for("bench"), zone)


async def _converge(manager: Manager, reconciler: Any, namespace: str, objects: int) -> None:
    """Reconcile every MySrv until a pass leaves its resourceVersion as it was."""
    from examples.mysrv.api import MySrv

    from pyctrl.testing import eventually

    async def all_cached() -> bool:
        return len((await manager.client.list(MySrv, namespace=namespace)).items) == objects

    await eventually(all_cached, within=60)
    for _ in range(5):
        listed = await manager.client.list(MySrv, namespace=namespace)
        before = {o.metadata.name: o.metadata.resource_version for o in listed.items}
        for obj in listed.items:
            await reconciler.reconcile_object(obj)
        for obj in listed.items:
            await manager.cache.wait_for_own_writes(MySrv, obj.metadata.name, namespace)

        async def children_cached() -> bool:
            from kubernetes_asyncio.client import V1Deployment, V1Service

            deployments = await manager.client.list(V1Deployment, namespace=namespace)
            services = await manager.client.list(V1Service, namespace=namespace)
            return len(deployments.items) == len(services.items) == objects

        await eventually(children_cached, within=60)
        after = await manager.client.list(MySrv, namespace=namespace)
        if {o.metadata.name: o.metadata.resource_version for o in after.items} == before:
            return
    raise RuntimeError(f"{namespace}: the MySrvs did not converge in 5 passes")


async def _steady(reconciler: Any, reader: Client, namespace: str, rounds: int) -> dict[str, float]:
    """API calls and CPU per reconcile of the converged MySrvs, read through ``reader``."""
    from examples.mysrv.api import MySrv

    listed = (await reader.list(MySrv, namespace=namespace)).items
    requests, cpu = _requests(), time.process_time()
    for _ in range(rounds):
        for obj in listed:
            await reconciler.reconcile_object(obj.model_copy(deep=True))
    count = rounds * len(listed)
    return {
        "api_calls": (_requests() - requests) / count,
        "cpu_us": (time.process_time() - cpu) / count * 1e6,
    }


async def _side(env: Any, form: str, run: int, objects: int, rounds: int) -> dict[str, Any]:
    from examples.mysrv.api import MySrv, MySrvSpec
    from examples.mysrv.dns import DNSZone
    from kubernetes_asyncio.client import V1Deployment, V1Namespace, V1ObjectMeta, V1Service

    from pyctrl.client import Client
    from pyctrl.log import configure
    from pyctrl.manager import Manager, Options
    from pyctrl.meta import ObjectMeta
    from pyctrl.testing import running

    configure(level="WARNING")
    namespace = f"{form}-{run}"
    manager = Manager(env.config, Options(metrics_bind_address="0"))
    async with running(manager), Client.from_config(env.config) as direct:
        for type_ in (MySrv, V1Deployment, V1Service):
            manager.cache.get_informer(type_)
        await manager.cache.wait_for_cache_sync()
        await direct.create(V1Namespace(metadata=V1ObjectMeta(name=namespace)))
        for index in range(objects):
            await direct.create(
                MySrv(
                    metadata=ObjectMeta(name=f"srv-{index}", namespace=namespace),
                    spec=MySrvSpec(name=f"app{index}", port=8080),
                )
            )
        zone = DNSZone()  # one zone: records registered while converging stay registered
        await _converge(
            manager, _reconciler(form, manager, manager.client, zone), namespace, objects
        )
        cached = await _steady(
            _reconciler(form, manager, manager.client, zone), manager.client, namespace, rounds
        )
        uncached = await _steady(
            _reconciler(form, manager, direct, zone), direct, namespace, rounds
        )
    return {"cached": cached, "direct": uncached}


async def _run(objects: int, rounds: int) -> dict[str, Any]:
    from examples.mysrv.api import MySrv

    from pyctrl.crd import crd_for
    from pyctrl.envtest import Environment

    runs: dict[str, list[dict[str, Any]]] = {form: [] for form in FORMS}
    async with Environment(crds=[crd_for(MySrv)]) as env:
        for run in range(REPEAT):
            order = FORMS if run % 2 == 0 else tuple(reversed(FORMS))
            for form in order:
                runs[form].append(await _side(env, form, run, objects, rounds))
    return {
        form: {
            mode: {
                figure: statistics.median(r[mode][figure] for r in results)
                for figure in ("api_calls", "cpu_us")
            }
            for mode in MODES
        }
        for form, results in runs.items()
    }


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else (1.0 if a == b else None)


def _table(results: dict[str, Any]) -> dict[str, Any]:
    ratios: dict[str, Any] = {}
    print(f"{'mode':8} {'figure':24} {'workflow':>10} {'handwritten':>12} {'ratio':>7}")
    for mode in MODES:
        for figure, label in (
            ("api_calls", "API calls / reconcile"),
            ("cpu_us", "CPU µs / reconcile"),
        ):
            mine, peer = results["workflow"][mode][figure], results["handwritten"][mode][figure]
            ratio = _ratio(mine, peer)
            ratios[f"{mode}.{figure}"] = ratio
            shown = "n/a" if ratio is None else f"{ratio:.2f}"
            print(f"{mode:8} {label:24} {mine:10.2f} {peer:12.2f} {shown:>7}")
    return ratios


def main(objects: int = 20, rounds: int = 20) -> dict[str, Any]:
    """Run the benchmark, print a table with ratios, and return the numbers."""
    results = asyncio.run(_run(objects, rounds))
    results["ratios"] = _table(results)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    main(args.objects, args.rounds)
