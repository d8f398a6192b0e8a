"""Multi-cluster controllers end to end: a hub manager, a fleet engaged by kubeconfig Secrets."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest
from kubernetes_asyncio.client import V1ConfigMap
from structlog.contextvars import merge_contextvars
from structlog.testing import capture_logs

from pyctrl.builder import controller_managed_by
from pyctrl.client import Client
from pyctrl.controller import Options as ControllerOptions
from pyctrl.errors import ClusterNotFoundError
from pyctrl.log import get_logger
from pyctrl.manager import Manager
from pyctrl.providers import KubeconfigSecretProvider
from pyctrl.reconcile import Request, Result
from pyctrl.testing import eventually, object_eventually, running

from .conftest import NAMESPACE, config_map, exists, kubeconfig_secret, options

if TYPE_CHECKING:
    from pyctrl.envtest import EnvironmentFleet

_log = get_logger("tests.multicluster")


class Copier:
    """Writes ``<name>-seen`` next to every ConfigMap not named so, in the request's cluster."""

    def __init__(self, manager: Manager) -> None:
        self.manager = manager
        self.calls: list[Request] = []

    async def reconcile(self, request: Request) -> Result:
        if request.name.endswith("-seen"):
            return Result()
        self.calls.append(request)
        _log.info("copying")
        client = self.manager.client.for_cluster(request.cluster)
        marker = config_map(f"{request.name}-seen", cluster=request.cluster)
        await client.apply(marker, field_manager="copier", force=True)
        return Result()


def hub_manager(fleet: EnvironmentFleet) -> Manager:
    return Manager(
        fleet["hub"].config,
        options(cluster_provider=KubeconfigSecretProvider(NAMESPACE)),
    )


@pytest.mark.envtest_fleet(names=["hub", "a", "b", "c"])
async def test_event_in_b_reconciles_with_cluster_b_and_writes_only_there(
    envtest_fleet: EnvironmentFleet,
) -> None:
    """Three engaged clusters: a ConfigMap made in b reconciles as cluster="b", written in b."""
    manager = hub_manager(envtest_fleet)
    copier = Copier(manager)
    controller = controller_managed_by(manager).for_(V1ConfigMap).multicluster().complete(copier)
    assert controller.queue.fair
    async with running(manager):
        for name in ("a", "b", "c"):
            await manager.client.create(kubeconfig_secret(name, envtest_fleet[name]))
        for name in ("a", "b", "c"):
            await manager.fleet.wait_engaged(name)
        assert manager.fleet.names == ("a", "b", "c")
        b = manager.get_cluster("b")
        with capture_logs(processors=[merge_contextvars]) as logs:
            await b.client.create(config_map("web"))
            await object_eventually(manager, V1ConfigMap, "web-seen", NAMESPACE, cluster="b")
        assert copier.calls == [Request(NAMESPACE, "web", "b")]
        for name in ("hub", "a", "c"):
            async with Client.from_config(envtest_fleet[name].config) as client:
                assert not await exists(client, "web-seen"), name
    assert any(
        line.get("cluster") == "b" and line.get("name") == "web" and "reconcile_id" in line
        for line in logs
    ), "the reconcile's log lines name its cluster"


@pytest.mark.envtest_fleet(names=["hub", "a", "b"])
async def test_kubeconfig_secret_deleted_disengages_and_readded_reengages(
    envtest_fleet: EnvironmentFleet,
) -> None:
    """Deleting b's Secret disengages b alone; re-adding it engages b again, and events flow."""
    manager = hub_manager(envtest_fleet)
    copier = Copier(manager)
    controller_managed_by(manager).for_(V1ConfigMap).multicluster().complete(copier)
    async with running(manager):
        for name in ("a", "b"):
            await manager.client.create(kubeconfig_secret(name, envtest_fleet[name]))
            await manager.fleet.wait_engaged(name)
        first_b = manager.get_cluster("b")

        await manager.client.delete(kubeconfig_secret("b", envtest_fleet["b"]))
        await manager.fleet.wait_engaged("b", engaged=False)
        with pytest.raises(ClusterNotFoundError, match="'b' is not engaged"):
            manager.client.for_cluster("b")
        # a keeps running: its events are still reconciled.
        await manager.get_cluster("a").client.create(config_map("during"))
        await object_eventually(manager, V1ConfigMap, "during-seen", NAMESPACE, cluster="a")

        await manager.client.create(kubeconfig_secret("b", envtest_fleet["b"]))
        await manager.fleet.wait_engaged("b")
        second_b = manager.get_cluster("b")
        assert second_b is not first_b
        await second_b.client.create(config_map("after"))
        await object_eventually(manager, V1ConfigMap, "after-seen", NAMESPACE, cluster="b")
        assert Request(NAMESPACE, "after", "b") in copier.calls


@pytest.mark.envtest_fleet(names=["hub", "a", "b"])
async def test_changed_kubeconfig_reengages_the_cluster(envtest_fleet: EnvironmentFleet) -> None:
    """A change of the Secret's kubeconfig engages a new Cluster in place of the old one."""
    manager = hub_manager(envtest_fleet)
    controller_managed_by(manager).for_(V1ConfigMap).multicluster().complete(Copier(manager))
    async with running(manager):
        await manager.client.create(kubeconfig_secret("member", envtest_fleet["a"]))
        await manager.fleet.wait_engaged("member")
        assert manager.get_cluster("member").config.host == envtest_fleet["a"].config.host
        await manager.client.apply(
            kubeconfig_secret("member", envtest_fleet["b"]), field_manager="test", force=True
        )
        host_b = envtest_fleet["b"].config.host

        async def moved() -> bool:
            try:
                cluster = manager.get_cluster("member")
            except ClusterNotFoundError:
                return False
            return cluster.config.host == host_b and cluster.cache.synced()

        await eventually(moved, within=20, message="member re-engaged at b's server")
        await manager.get_cluster("member").client.create(config_map("moved"))
        async with Client.from_config(envtest_fleet["b"].config) as b:
            await object_eventually(b, V1ConfigMap, "moved-seen", NAMESPACE)


@pytest.mark.envtest_fleet(names=["hub", "a", "b"])
async def test_fault_in_one_cluster_does_not_delay_another(
    envtest_fleet: EnvironmentFleet,
) -> None:
    """With a's watches dropped and its requests failing with 500, b's events reconcile."""
    manager = hub_manager(envtest_fleet)
    copier = Copier(manager)
    controller_managed_by(manager).for_(V1ConfigMap).multicluster().complete(copier)
    async with running(manager):
        for name in ("a", "b"):
            await manager.client.create(kubeconfig_secret(name, envtest_fleet[name]))
            await manager.fleet.wait_engaged(name)
        a = envtest_fleet["a"]
        async with Client.from_config(a.config) as direct:
            await direct.create(config_map("stuck"))  # before the faults: it exists in a
        a.faults.fail_next(100_000)  # every request to a fails with 500 ...
        a.faults.drop_watches()  # ... and its watches are cut, so a's informers re-list
        await manager.get_cluster("b").client.create(config_map("fresh"))
        await object_eventually(manager, V1ConfigMap, "fresh-seen", NAMESPACE, cluster="b")
        # a's copier writes failed meanwhile, or never started; b went ahead of it.
        assert Request(NAMESPACE, "fresh", "b") in copier.calls
        a.faults.clear()
        await object_eventually(
            manager, V1ConfigMap, "stuck-seen", NAMESPACE, cluster="a", within=30
        )


@pytest.mark.envtest_fleet(names=["hub", "a", "b"])
async def test_thousand_keys_in_one_cluster_do_not_delay_a_key_in_another(
    envtest_fleet: EnvironmentFleet,
) -> None:
    """With 1,000 of a's keys queued, b's one key is the next reconcile but one."""
    manager = hub_manager(envtest_fleet)
    gate = asyncio.Event()
    order: list[Request] = []

    async def reconcile(request: Request) -> Result:
        order.append(request)
        await gate.wait()
        return Result()

    class Gated:
        async def reconcile(self, request: Request) -> Result:
            return await reconcile(request)

    controller = (
        controller_managed_by(manager)
        .for_(V1ConfigMap)
        .multicluster()
        .with_options(ControllerOptions(max_concurrent_reconciles=1))
        .complete(Gated())
    )
    async with running(manager):
        for name in ("a", "b"):
            await manager.client.create(kubeconfig_secret(name, envtest_fleet[name]))
            await manager.fleet.wait_engaged(name)
        # The one worker is held by the first key; a's 1,000 keys queue up behind it.
        a = manager.get_cluster("a").client
        for start in range(0, 1000, 100):
            await asyncio.gather(
                *(a.create(config_map(f"flood-{i}")) for i in range(start, start + 100))
            )
        await eventually(
            lambda: _true(bool(order) and controller.queue.statistics().adds >= 1000),
            within=30,
            message="a's 1,000 keys queued behind a held reconcile",
        )
        queued = controller.queue.statistics().adds
        await manager.get_cluster("b").client.create(config_map("lone"))
        lone = Request(NAMESPACE, "lone", "b")
        await eventually(
            lambda: _true(controller.queue.statistics().adds > queued), message="b's key queued"
        )
        held = len(order)
        gate.set()
        await eventually(lambda: _true(lone in order), within=30, message="b's key reconciled")
        # b's key waited for the held reconcile and at most one of a's keys.
        assert order.index(lone) - held <= 1, order[held : order.index(lone) + 1]


async def _true(value: bool) -> bool:
    return value
