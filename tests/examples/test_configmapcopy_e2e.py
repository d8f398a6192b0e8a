"""examples.configmapcopy: the hub's labelled ConfigMaps copied to every engaged cluster."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from examples.configmapcopy.controller import COPY_LABEL, manager_for
from kubernetes_asyncio.client import V1ConfigMap, V1ObjectMeta, V1Secret

from pyctrl.providers import KUBECONFIG_LABEL, KubeconfigSecretProvider
from pyctrl.testing import gone_eventually, object_eventually, running

if TYPE_CHECKING:
    from pyctrl.envtest import Environment, EnvironmentFleet

NS = "default"


def secret(name: str, env: Environment) -> V1Secret:
    return V1Secret(
        metadata=V1ObjectMeta(name=name, namespace=NS, labels={KUBECONFIG_LABEL: "true"}),
        string_data={"kubeconfig": env.kubeconfig_path.read_text()},
    )


def hub_config_map(name: str, labelled: bool = True, **data: str) -> V1ConfigMap:
    labels = {COPY_LABEL: "true"} if labelled else {}
    return V1ConfigMap(metadata=V1ObjectMeta(name=name, namespace=NS, labels=labels), data=data)


@pytest.mark.envtest_fleet(names=["hub", "east", "west"])
async def test_copies_follow_the_hub_to_every_engaged_cluster(
    envtest_fleet: EnvironmentFleet,
) -> None:
    """Copied on create, on engagement of a new member, on change; restored; deleted with it."""
    manager = manager_for(
        envtest_fleet["hub"].config, KubeconfigSecretProvider(NS), metrics_bind_address="0"
    )
    async with running(manager):
        await manager.client.create(secret("east", envtest_fleet["east"]))
        await manager.fleet.wait_engaged("east")
        await manager.client.create(hub_config_map("settings", color="blue"))
        await manager.client.create(hub_config_map("private", labelled=False, x="1"))

        def blue(cm: V1ConfigMap) -> bool:
            return (cm.data or {}).get("color") == "blue"

        await object_eventually(manager, V1ConfigMap, "settings", NS, blue, cluster="east")

        # A member engaged later gets the copies at once.
        await manager.client.create(secret("west", envtest_fleet["west"]))
        await object_eventually(manager, V1ConfigMap, "settings", NS, blue, cluster="west")

        # A change in the hub reaches every member.
        await manager.client.apply(
            hub_config_map("settings", color="green"), field_manager="test", force=True
        )
        for member in ("east", "west"):
            await object_eventually(
                manager,
                V1ConfigMap,
                "settings",
                NS,
                lambda cm: (cm.data or {}).get("color") == "green",
                cluster=member,
            )

        # A copy deleted in a member is restored.
        await manager.get_cluster("west").client.delete(hub_config_map("settings"))
        await object_eventually(manager, V1ConfigMap, "settings", NS, cluster="west")

        # Deleting the hub's ConfigMap deletes its copies; unlabelled ones were never copied.
        await manager.client.delete(hub_config_map("settings"))
        for member in ("east", "west"):
            await gone_eventually(manager, V1ConfigMap, "settings", NS, cluster=member)
            assert not await manager.get_cluster(member).api_reader.list(
                V1ConfigMap, namespace=NS, labels={COPY_LABEL: "true"}
            )
        for member in ("east", "west"):
            await gone_eventually(manager, V1ConfigMap, "private", NS, cluster=member, within=1)
