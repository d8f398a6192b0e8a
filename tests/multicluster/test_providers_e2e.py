"""The static and ClusterProfile providers, and the fleet's bookkeeping, on embedded servers."""

from __future__ import annotations

import asyncio
import base64
import copy
from typing import TYPE_CHECKING, Any

import pytest
from kubernetes_asyncio.client import V1ConfigMap

from pyctrl import metrics
from pyctrl.builder import controller_managed_by
from pyctrl.cluster import Cluster, Fleet
from pyctrl.errors import ClusterNotFoundError
from pyctrl.manager import Manager
from pyctrl.meta import GroupVersionKind
from pyctrl.providers import CLUSTER_PROFILE, ClusterProfileProvider, StaticProvider
from pyctrl.reconcile import Request, Result
from pyctrl.resource import Unstructured
from pyctrl.testing import eventually, object_eventually, running

from .conftest import NAMESPACE, config_map, options

if TYPE_CHECKING:
    from pyctrl.envtest import Environment, EnvironmentFleet

EVENTS_V1 = GroupVersionKind("events.k8s.io", "v1", "Event")

# The ClusterProfile CRD's shape (multicluster.x-k8s.io, cluster-inventory-api), reduced to
# what the provider reads.
CLUSTER_PROFILE_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "clusterprofiles.multicluster.x-k8s.io"},
    "spec": {
        "group": "multicluster.x-k8s.io",
        "names": {
            "kind": "ClusterProfile",
            "listKind": "ClusterProfileList",
            "plural": "clusterprofiles",
            "singular": "clusterprofile",
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            },
                            "status": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            },
                        },
                    }
                },
            }
        ],
    },
}


class Recorder:
    def __init__(self, manager: Manager) -> None:
        self.manager = manager

    async def reconcile(self, request: Request) -> Result:
        if not request.name.endswith("-seen"):
            client = self.manager.client.for_cluster(request.cluster)
            await client.apply(
                config_map(f"{request.name}-seen"), field_manager="recorder", force=True
            )
        return Result()


@pytest.mark.envtest_fleet(names=["hub", "east", "west"])
async def test_static_provider_engages_each_cluster_and_local_opt_in(
    envtest_fleet: EnvironmentFleet,
) -> None:
    """StaticProvider engages its clusters; multicluster(local=True) also watches the hub."""
    provider = StaticProvider(
        {"east": envtest_fleet["east"].config, "west": envtest_fleet["west"].kubeconfig_path}
    )
    manager = Manager(envtest_fleet["hub"].config, options(cluster_provider=provider))
    controller_managed_by(manager).for_(V1ConfigMap).multicluster(local=True).complete(
        Recorder(manager)
    )
    async with running(manager):
        for name in ("east", "west"):
            await manager.fleet.wait_engaged(name)
        assert manager.get_cluster("") is manager.local_cluster
        for name in ("", "east", "west"):
            await manager.get_cluster(name).client.create(config_map(f"at-{name or 'hub'}"))
        for name in ("", "east", "west"):
            await object_eventually(
                manager, V1ConfigMap, f"at-{name or 'hub'}-seen", NAMESPACE, cluster=name
            )


def profile(name: str, env: Environment, provider: str = "token-access") -> Unstructured:
    configuration = env.config
    assert configuration.ssl_ca_cert is not None
    with open(configuration.ssl_ca_cert, "rb") as ca:
        ca_data = base64.b64encode(ca.read()).decode()
    obj = Unstructured.new(CLUSTER_PROFILE, name=name, namespace="fleet-system")
    obj.object["spec"] = {"displayName": name, "clusterManager": {"name": "test"}}
    obj.object["status"] = {
        "accessProviders": [
            {
                "name": provider,
                "cluster": {
                    "server": configuration.host,
                    "certificate-authority-data": ca_data,
                },
            }
        ]
    }
    return obj


def token_of(env: Environment) -> str:
    assert env.token is not None
    return env.token


@pytest.mark.envtest(crds=[CLUSTER_PROFILE_CRD])
@pytest.mark.envtest_fleet(names=["hub", "member"])
async def test_cluster_profile_provider_engages_from_access_providers(
    envtest_fleet: EnvironmentFleet,
) -> None:
    """A ClusterProfile whose access provider the consumer knows engages its cluster."""
    hub, member = envtest_fleet["hub"], envtest_fleet["member"]
    provider = ClusterProfileProvider(
        {"token-access": {"token": token_of(member)}}, namespace="fleet-system"
    )
    manager = Manager(hub.config, options(cluster_provider=provider))
    controller_managed_by(manager).for_(V1ConfigMap).multicluster().complete(Recorder(manager))
    async with running(manager):
        await manager.client.create(
            Unstructured(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fleet-system"}}
            )
        )
        created = await manager.client.create(profile("member", member))
        # The status subresource holds the access providers.
        created.object["status"] = profile("member", member).object["status"]
        await manager.client.status().update(created)
        await manager.fleet.wait_engaged("fleet-system/member")
        cluster = manager.get_cluster("fleet-system/member")
        assert cluster.config.host == member.config.host
        await cluster.client.create(config_map("via-profile"))
        await object_eventually(
            manager, V1ConfigMap, "via-profile-seen", NAMESPACE, cluster="fleet-system/member"
        )
        await manager.client.delete(created)
        await manager.fleet.wait_engaged("fleet-system/member", engaged=False)


def test_cluster_profile_without_known_access_provider_gives_no_kubeconfig() -> None:
    """Only access providers the consumer has credentials for are used."""
    provider = ClusterProfileProvider({"mine": {"token": "t"}})
    obj = Unstructured.new(CLUSTER_PROFILE, name="p", namespace="ns")
    obj.object["status"] = {
        "accessProviders": [{"name": "theirs", "cluster": {"server": "https://x"}}],
        "credentialProviders": [{"name": "mine", "cluster": {"server": "https://y"}}],
    }
    kubeconfig = provider.kubeconfig(obj)
    assert kubeconfig is not None
    assert kubeconfig["clusters"][0]["cluster"]["server"] == "https://y"
    assert kubeconfig["users"][0]["user"] == {"token": "t"}
    obj.object["status"] = {"accessProviders": [{"name": "theirs", "cluster": {"server": "x"}}]}
    assert provider.kubeconfig(obj) is None


async def test_fleet_names_what_is_engaged_when_a_cluster_is_missing(envtest: Environment) -> None:
    """get() of a cluster never engaged names the ones that are."""
    manager = Manager(envtest.config, options())
    await manager.engage("one", Cluster(envtest.config))
    with pytest.raises(ClusterNotFoundError, match=r"'two' is not engaged \(engaged: one\)"):
        manager.get_cluster("two")
    with pytest.raises(ValueError, match="needs a name"):
        await manager.engage("", Cluster(envtest.config))
    await manager.disengage("one")
    assert manager.fleet.names == ()
    await manager.rest.aclose()


async def test_a_cluster_that_cannot_sync_is_dropped_and_others_run_on(
    envtest: Environment,
) -> None:
    """An unreachable cluster fails alone: logged, counted, disengaged; a healthy one stays."""
    fleet = Fleet(sync_timeout=0.5, stop_timeout=5)
    informed: list[str] = []

    def watch_config_maps(name: str, cluster: Cluster) -> list[Any]:
        cluster.cache.get_informer(V1ConfigMap)  # something to sync
        informed.append(name)
        return []

    fleet.add_watcher(watch_config_maps)
    unreachable = copy.deepcopy(envtest.config)
    unreachable.host = "https://127.0.0.1:1"
    failed = metrics.cluster_engagements_total.labels("broken", "failed")
    before = failed._value.get()
    async with asyncio.timeout(30), asyncio.TaskGroup() as tg:
        task = tg.create_task(fleet.start())
        await fleet.engage("healthy", Cluster(envtest.config))
        await fleet.engage("broken", Cluster(unreachable))
        await fleet.wait_engaged("healthy")
        await fleet.wait_engaged("broken", engaged=False, timeout=20)
        assert fleet.names == ("healthy",)
        assert fleet.get("healthy").cache.synced()
        task.cancel()
    assert sorted(informed) == ["broken", "healthy"]
    assert failed._value.get() == before + 1


@pytest.mark.envtest_fleet(names=["hub", "member"])
async def test_an_engaged_clusters_recorder_writes_events_there(
    envtest_fleet: EnvironmentFleet,
) -> None:
    """get_event_recorder_for on an engaged cluster records into that cluster, not the hub."""
    manager = Manager(
        envtest_fleet["hub"].config,
        options(cluster_provider=StaticProvider({"member": envtest_fleet["member"].config})),
    )
    assert manager.local_cluster.get_event_recorder_for("x") is manager.get_event_recorder_for("x")
    async with running(manager):
        await manager.fleet.wait_engaged("member")
        member = manager.get_cluster("member")
        target = await member.client.create(config_map("noted"))
        member.get_event_recorder_for("noter").event(target, "Normal", "Noted", "seen")

        async def recorded() -> bool:
            events = await member.api_reader.list(Unstructured, gvk=EVENTS_V1, namespace=NAMESPACE)
            return any(e.object.get("reason") == "Noted" for e in events)

        await eventually(recorded, message="the Event in the member cluster")
        hub_events = await manager.api_reader.list(Unstructured, gvk=EVENTS_V1, namespace=NAMESPACE)
        assert not [e for e in hub_events if e.object.get("reason") == "Noted"]
