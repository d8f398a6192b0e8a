"""The server's controllers, one per concern, each in a task of one TaskGroup.

As kube-controller-manager (and apiextensions-apiserver's controllers) beside a real
kube-apiserver: the garbage collector, the namespace controller and the CRD controller each
hear the store's events, queue their own typed work and drain it in their own task. The
tasks belong to one `asyncio.TaskGroup`: a controller's error cancels the others and ends
`ControllerManager.run` with that error; cancelling `run` stops them all (no controller
work awaits anything but its queue, so shutdown is bounded by one item's processing).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.controllers.crd import CRDController
from pyctrl._apiserver.controllers.garbagecollector import GarbageCollector
from pyctrl._apiserver.controllers.namespace import NamespaceController

if TYPE_CHECKING:
    from pyctrl._apiserver.controllers.queue import WorkQueue
    from pyctrl._apiserver.registry.generic import Stores
    from pyctrl._apiserver.storage.watch import WatchHub

__all__ = ["ControllerManager"]

_log = logging.getLogger("pyctrl.envtest.server")


class ControllerManager:
    """The garbage collector, namespace controller and CRD controller of one server.

    Args:
        stores: The stores of the server's resources (the controllers write through them).
        hub: The server's watch fan-out (the CRD controller closes watches of types that go).
        garbage_collector: Whether the garbage collector runs.
    """

    def __init__(self, stores: Stores, hub: WatchHub, *, garbage_collector: bool) -> None:
        self.crds = CRDController(stores, hub)
        """The CRD controller (the one way to reach it)."""
        self.namespaces = NamespaceController(stores, garbage_collector=garbage_collector)
        """The namespace controller."""
        self.garbage_collector = GarbageCollector(stores) if garbage_collector else None
        """The garbage collector (None when the server runs without one)."""

    def _queues(self) -> list[WorkQueue[Any]]:
        queues: list[WorkQueue[Any]] = [self.crds.queue, self.namespaces.queue]
        if self.garbage_collector is not None:
            queues.append(self.garbage_collector.queue)
        return queues

    async def run(self) -> None:
        """Run every controller until cancelled; the first controller's error is raised."""
        try:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(self.crds.run(), name="apiserver-crd-controller")
                tg.create_task(self.namespaces.run(), name="apiserver-namespace-controller")
                if self.garbage_collector is not None:
                    tg.create_task(self.garbage_collector.run(), name="apiserver-garbage-collector")
        except ExceptionGroup as group:
            for error in group.exceptions[1:]:
                _log.error("another controller failed too", exc_info=error)
            raise group.exceptions[0] from None

    async def wait_idle(self) -> None:
        """Return once every controller's queue is empty at the same moment."""
        while True:
            queues = self._queues()
            for queue in queues:
                await queue.wait_idle()
            if all(queue.idle for queue in queues):
                return
