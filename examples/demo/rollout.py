"""A stand-in for kube-controller-manager and the kubelets: Deployments become available.

The embedded API server, like envtest, runs no workload controllers: a Deployment gets no
ReplicaSet, no pods, and its status stays empty. In a cluster, the Deployment controller
and the kubelets would report the replicas available once the pods are ready. The demo
plays that part with a small pyctrl controller: a Deployment's replicas are reported
available `delay` seconds after its current generation is first seen, so a changed
Deployment rolls out again.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from kubernetes_asyncio.client import V1Deployment

from pyctrl.builder import controller_managed_by
from pyctrl.client import MergePatch
from pyctrl.errors import NotFoundError
from pyctrl.reconcile import Request, Result

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyctrl.client import Client
    from pyctrl.manager import Manager

__all__ = ["RolloutSimulator", "add_rollout_simulator"]


class RolloutSimulator:
    """Reports a Deployment's replicas available ``delay`` seconds after each new generation.

    Args:
        client: Reads Deployments and writes their status.
        delay: Seconds a rollout takes.
        clock: Monotonic seconds (a fake in tests).
    """

    def __init__(
        self, client: Client, *, delay: float = 1.5, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.client = client
        self.delay = delay
        self.clock = clock
        self._started: dict[tuple[str, int], float] = {}

    async def reconcile(self, request: Request) -> Result | None:
        """Move one Deployment's status towards "every replica available"."""
        try:
            deployment = await self.client.get(V1Deployment, request.name, request.namespace)
        except NotFoundError:
            return None
        generation = deployment.metadata.generation or 0
        wanted = 1 if deployment.spec.replicas is None else deployment.spec.replicas
        started = self._started.setdefault((deployment.metadata.uid, generation), self.clock())
        remaining = started + self.delay - self.clock()
        available = 0 if remaining > 0 else wanted
        status = deployment.status
        reported = status is not None and (
            status.observed_generation,
            status.replicas or 0,
            status.available_replicas or 0,
        ) == (generation, wanted, available)
        if not reported:
            await self._report(deployment, generation, wanted, available=available)
        return Result(requeue_after=remaining) if remaining > 0 else None

    async def _report(
        self, deployment: V1Deployment, generation: int, wanted: int, *, available: int
    ) -> None:
        done = available == wanted
        status: dict[str, Any] = {
            "observedGeneration": generation,
            "replicas": wanted,
            "updatedReplicas": wanted,
            "readyReplicas": available,
            "availableReplicas": available,
            "unavailableReplicas": wanted - available,
            "conditions": [
                {
                    "type": "Available",
                    "status": "True" if done else "False",
                    "reason": "MinimumReplicasAvailable" if done else "MinimumReplicasUnavailable",
                    "message": f"{available}/{wanted} replicas available",
                }
            ],
        }
        await self.client.status().patch(deployment, MergePatch({"status": status}))


def add_rollout_simulator(manager: Manager, *, delay: float = 1.5) -> RolloutSimulator:
    """Add the simulator to ``manager`` as a controller of Deployments; return it."""
    simulator = RolloutSimulator(manager.client, delay=delay)
    controller_managed_by(manager).for_(V1Deployment).named("deployment-rollout").complete(
        simulator
    )
    return simulator
