"""A leader-elected operator process for the fencing test: it writes marks non-stop.

``python -m tests.manager.fenced_operator IDENTITY`` (with ``KUBECONFIG`` set) leads the
Lease ``default/fence-test`` and, while leading, reconciles the ConfigMaps ``ticker-*``,
each in a reconcile that never ends: every ``TICK`` seconds it creates one ConfigMap
``mark-IDENTITY-TICKER-N`` labelled with the writer, so the server's resourceVersions give the
order of every write that reached it. A paused process resumes inside that reconcile,
its next write already due.
"""

from __future__ import annotations

import asyncio
import sys

from kubernetes_asyncio.client import V1ConfigMap, V1ObjectMeta

from pyctrl import log
from pyctrl.builder import controller_managed_by
from pyctrl.config import get_config
from pyctrl.controller import Options as ControllerOptions
from pyctrl.manager import Manager, Options
from pyctrl.reconcile import Request, Result

LEASE, RENEW, RETRY = 5.0, 3.5, 0.5
TICK = 0.03
TICKERS = 3


async def main(identity: str) -> None:
    """Run the manager until the Lease is lost (or a signal)."""
    log.configure(level="INFO")
    manager = Manager(
        await get_config(),
        Options(
            leader_election=True,
            leader_election_id="fence-test",
            leader_election_namespace="default",
            lease_duration=LEASE,
            renew_deadline=RENEW,
            retry_period=RETRY,
            identity=identity,
            metrics_bind_address="0",
        ),
    )
    marks = 0

    class Stamp:
        async def reconcile(self, request: Request) -> Result:
            nonlocal marks
            if not request.name.startswith("ticker"):
                return Result()
            while True:
                marks += 1
                meta = V1ObjectMeta(
                    name=f"mark-{identity}-{request.name}-{marks}",
                    namespace="default",
                    labels={"writer": identity},
                )
                await manager.client.create(V1ConfigMap(metadata=meta))
                await asyncio.sleep(TICK)

    controller_managed_by(manager).for_(V1ConfigMap).with_options(
        ControllerOptions(max_concurrent_reconciles=TICKERS)
    ).complete(Stamp())
    await manager.run()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
