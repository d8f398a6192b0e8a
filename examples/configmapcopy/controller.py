"""Copy labelled ConfigMaps from the hub to every engaged cluster (multicluster-runtime's example).

The operator runs in the *hub* cluster. Each ConfigMap there labelled
``pyctrl.dev/copy: "true"`` is copied, with the same namespace, name, data and label, into
every cluster the manager engages; a copy that drifts or is deleted in a member is
restored; a hub ConfigMap deleted (or unlabelled) has its copies deleted. Clusters come
from a `pyctrl.cluster.Provider`: by default kubeconfig Secrets in the operator's
namespace (`pyctrl.providers.KubeconfigSecretProvider`).

Every reconcile is about one ConfigMap in one member cluster: ``request.cluster`` names
it. Three things enqueue such requests:

- the copies' own events in each member (``for_(...).multicluster()``), so drift and
  deletions there are repaired;
- the hub's ConfigMaps (a raw source on the hub's cache), mapped to one request per
  engaged cluster;
- a cluster being engaged (a fleet watcher), which enqueues every labelled hub ConfigMap
  for it, so a new member gets its copies at once.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING, Any

from kubernetes_asyncio.client import V1ConfigMap, V1ObjectMeta

from pyctrl.builder import controller_managed_by
from pyctrl.config import get_config
from pyctrl.errors import NotFoundError
from pyctrl.handler import EnqueueRequestsFromMapFunc
from pyctrl.log import get_logger
from pyctrl.manager import Manager, Options
from pyctrl.predicate import label_selector
from pyctrl.providers import KubeconfigSecretProvider
from pyctrl.reconcile import Request, Result
from pyctrl.source import Kind

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Sequence

    from pyctrl.cluster import Cluster, Provider
    from pyctrl.controller import Controller

__all__ = ["COPY_LABEL", "ConfigMapCopier", "main", "setup"]

COPY_LABEL = "pyctrl.dev/copy"
"""The label (value ``"true"``) marking a hub ConfigMap to copy."""

FIELD_MANAGER = "configmap-copier"

_log = get_logger("examples.configmapcopy")


class ConfigMapCopier:
    """Makes one member cluster's copy of one hub ConfigMap match the hub."""

    def __init__(self, manager: Manager) -> None:
        self.manager = manager

    async def reconcile(self, request: Request) -> Result:
        """Apply the hub's ConfigMap to ``request.cluster``, or delete the copy there."""
        member = self.manager.client.for_cluster(request.cluster)
        try:
            source = await self.manager.client.get(V1ConfigMap, request.name, request.namespace)
        except NotFoundError:
            source = None
        if source is None or (source.metadata.labels or {}).get(COPY_LABEL) != "true":
            try:
                await member.delete(copy_of(request, {}))
                _log.info("copy deleted")
            except NotFoundError:
                pass
            return Result()
        await member.apply(
            copy_of(request, source.data or {}), field_manager=FIELD_MANAGER, force=True
        )
        _log.info("copy applied")
        return Result()


def copy_of(request: Request, data: dict[str, str]) -> V1ConfigMap:
    """The copy of the hub ConfigMap ``request`` names, with ``data``."""
    return V1ConfigMap(
        api_version="v1",
        kind="ConfigMap",
        metadata=V1ObjectMeta(
            name=request.name, namespace=request.namespace, labels={COPY_LABEL: "true"}
        ),
        data=data,
    )


def setup(manager: Manager) -> Controller:
    """Build the copier's controller on ``manager`` (whose provider engages the members)."""
    labelled = label_selector({COPY_LABEL: "true"})

    def to_every_cluster(obj: Any) -> list[Request]:
        meta = obj.metadata
        return [Request(meta.namespace, meta.name, name) for name in manager.fleet.names]

    controller = (
        controller_managed_by(manager)
        .named("configmap-copier")
        .for_(V1ConfigMap, labelled)
        .multicluster()
        .watches_raw_source(
            Kind(manager.cache, V1ConfigMap, EnqueueRequestsFromMapFunc(to_every_cluster), labelled)
        )
        .complete(ConfigMapCopier(manager))
    )

    def on_engaged(
        name: str, cluster: Cluster
    ) -> Sequence[Callable[[], Coroutine[Any, Any, None]]]:
        async def enqueue_hub_config_maps() -> None:
            for obj in await manager.client.list(V1ConfigMap, labels={COPY_LABEL: "true"}):
                meta = obj.metadata
                controller.queue.add(Request(meta.namespace, meta.name, name))

        return [enqueue_hub_config_maps]

    manager.fleet.add_watcher(on_engaged)
    return controller


def manager_for(config: Any, provider: Provider, **options: Any) -> Manager:
    """The hub's manager, engaging what ``provider`` finds, with the copier set up."""
    manager = Manager(config, Options(cluster_provider=provider, **options))
    setup(manager)
    return manager


async def run(argv: list[str] | None = None) -> None:
    """Run the copier against the current kubeconfig's cluster (the hub)."""
    parser = argparse.ArgumentParser(prog="python -m examples.configmapcopy")
    parser.add_argument(
        "--namespace", default="default", help="where the members' kubeconfig Secrets are"
    )
    parser.add_argument("--metrics-bind-address", default=":8080")
    args = parser.parse_args(argv)
    config = await get_config()
    manager = manager_for(
        config,
        KubeconfigSecretProvider(args.namespace),
        metrics_bind_address=args.metrics_bind_address,
    )
    await manager.run()


def main(argv: list[str] | None = None) -> None:
    """The process entry point."""
    asyncio.run(run(argv))
