"""Dependent resources and workflows, end to end on the embedded API server.

A ``Web`` primary wants a ConfigMap, a Deployment using it, and (while
``spec.expose``) a Service in front of the Deployment once the Deployment is ready. The
embedded server runs no Deployment controller: the tests write the Deployment's status.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Annotated, Any

import pytest
from kubernetes_asyncio.client import (
    V1ConfigMap,
    V1Deployment,
    V1ObjectMeta,
    V1Secret,
    V1Service,
    V1ServicePort,
    V1ServiceSpec,
)
from pydantic import Field

from pyctrl.builder import controller_managed_by
from pyctrl.client import Client, InterceptorClient, InterceptorFuncs, MergePatch, apply_config_for
from pyctrl.crd import ListType, crd_for
from pyctrl.dependent import Dependent, Outcome, Workflow, WorkflowError
from pyctrl.envtest import Environment
from pyctrl.errors import NotFoundError
from pyctrl.manager import Manager, Options
from pyctrl.meta import Condition, KubeModel, ObjectMeta, find_status_condition
from pyctrl.resource import CustomResource, Unstructured
from pyctrl.testing import eventually, gone_eventually, object_eventually, running

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


class WebSpec(KubeModel):
    """What a Web wants."""

    image: str = "nginx"
    expose: bool = True


class WebStatus(KubeModel):
    """The conditions the workflow writes."""

    conditions: Annotated[list[Condition], ListType("map", keys=("type",))] = Field(
        default_factory=list
    )


class Web(CustomResource, group="test.pyctrl.dev", version="v1"):
    """The primary."""

    spec: WebSpec = Field(default_factory=WebSpec)
    status: WebStatus = Field(default_factory=WebStatus)


def labels(web: Web) -> dict[str, str]:
    return {"app": web.metadata.name or ""}


def config_map_for(web: Web) -> V1ConfigMap:
    return V1ConfigMap(
        metadata=V1ObjectMeta(name=f"{web.metadata.name}-config"), data={"image": web.spec.image}
    )


def deployment_for(web: Web) -> Any:
    # Only the fields this operator cares about: an apply configuration, not a full model.
    return apply_config_for(V1Deployment)(
        metadata={"name": web.metadata.name},
        spec={
            "replicas": 1,
            "selector": {"matchLabels": labels(web)},
            "template": {
                "metadata": {"labels": labels(web)},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": web.spec.image,
                            "envFrom": [{"configMapRef": {"name": f"{web.metadata.name}-config"}}],
                        }
                    ]
                },
            },
        },
    )


def service_for(web: Web) -> V1Service:
    return V1Service(
        metadata=V1ObjectMeta(name=web.metadata.name),
        spec=V1ServiceSpec(selector=labels(web), ports=[V1ServicePort(port=80, target_port=8080)]),
    )


config = Dependent(V1ConfigMap, desired=config_map_for, name="Config")
deployment = Dependent(V1Deployment, desired=deployment_for, depends_on=[config])
service = Dependent(
    V1Service,
    desired=service_for,
    depends_on=[deployment],
    activation=lambda web: web.spec.expose,
)
WORKFLOW = Workflow([service, deployment, config], field_manager="web-operator")


class Writes:
    """Counts the writes made through a client, in order."""

    def __init__(self) -> None:
        self.log: list[tuple[str, str, str]] = []

    def funcs(self) -> InterceptorFuncs:
        def record(verb: str) -> Any:
            async def call(client: Client, obj: Any, *args: Any, **kwargs: Any) -> Any:
                data = client.scheme.to_dict(obj)
                self.log.append((verb, data["kind"], data["metadata"]["name"]))
                return await getattr(client, verb)(obj, *args, **kwargs)

            return call

        async def subresource_patch(
            client: Client, name: str, obj: Any, *args: Any, **kwargs: Any
        ) -> Any:
            self.log.append((f"{name}.patch", type(obj).__name__, obj.metadata.name))
            return await client.subresource(name).patch(obj, *args, **kwargs)

        return InterceptorFuncs(
            create=record("create"),
            update=record("update"),
            patch=record("patch"),
            apply=record("apply"),
            delete=record("delete"),
            subresource_patch=subresource_patch,
        )


class WebReconciler:
    """Runs the workflow; remembers the resourceVersions of the primaries it reconciled."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.seen: list[str] = []

    async def reconcile_object(self, web: Web) -> None:
        try:
            await WORKFLOW.reconcile(self.client, web)
        finally:
            self.seen.append(web.metadata.resource_version or "")


@pytest.fixture
async def world() -> AsyncIterator[tuple[Manager, Writes, WebReconciler]]:
    async with Environment(crds=[crd_for(Web)]) as env:
        manager = Manager(env.config, Options(metrics_bind_address="0"))
        writes = Writes()
        reconciler = WebReconciler(InterceptorClient(manager.client, writes.funcs()))
        controller_managed_by(manager).for_(Web).dependents(WORKFLOW).complete(reconciler)
        async with running(manager):
            yield manager, writes, reconciler


def condition(web: Web, type_: str) -> Condition | None:
    return find_status_condition(web.status.conditions, type_)


async def make_deployment_ready(client: Client, name: str) -> None:
    """Play the Deployment controller: every replica updated, ready and available."""
    live = await client.get(V1Deployment, name, "default")
    status = {
        "observedGeneration": live.metadata.generation,
        "replicas": 1,
        "updatedReplicas": 1,
        "readyReplicas": 1,
        "availableReplicas": 1,
        "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
        ],
    }
    await client.status().patch(live, MergePatch({"status": status}))


async def served(manager: Manager, name: str) -> Web:
    """Create a Web, make its Deployment ready, and wait for its Service."""
    web = await manager.client.create(Web(metadata=ObjectMeta(name=name, namespace="default")))
    await object_eventually(manager.api_reader, V1Deployment, name, "default")
    await make_deployment_ready(manager.client, name)
    await object_eventually(manager.api_reader, V1Service, name, "default")
    return web


async def steady(manager: Manager, reconciler: WebReconciler, web: Web) -> Web:
    """Poke the primary (an annotation: no new generation) and wait for its reconcile."""
    poked = await manager.client.patch(
        web, MergePatch({"metadata": {"annotations": {"poke": str(len(reconciler.seen))}}})
    )
    version = poked.metadata.resource_version or ""

    async def reconciled() -> bool:
        return version in reconciler.seen

    await eventually(reconciled)
    return poked


async def test_children_are_applied_in_order_and_the_service_waits_for_the_deployment(
    world: tuple[Manager, Writes, WebReconciler],
) -> None:
    """ConfigMap, then Deployment; the Service only once the Deployment is ready."""
    manager, writes, _ = world
    reader = manager.api_reader
    await manager.client.create(Web(metadata=ObjectMeta(name="a", namespace="default")))

    def waiting_for_the_deployment(web: Web) -> bool:
        found = condition(web, "ServiceReady")
        return found is not None and found.reason == "Waiting"

    web = await object_eventually(reader, Web, "a", "default", waiting_for_the_deployment)
    with pytest.raises(NotFoundError):
        await reader.get(V1Service, "a", "default")
    assert [w[1] for w in writes.log if w[0] == "apply"][:2] == ["ConfigMap", "Deployment"]
    not_ready = condition(web, "DeploymentReady")
    assert not_ready is not None
    assert (not_ready.status, not_ready.reason, not_ready.message) == (
        "False",
        "LessReplicas",
        "Replicas: 0/1",
    )
    waiting = condition(web, "ServiceReady")
    assert waiting is not None
    assert waiting.message == "waiting for Deployment (LessReplicas)"
    aggregate = condition(web, "Ready")
    assert aggregate is not None
    assert (aggregate.status, aggregate.reason, aggregate.observed_generation) == (
        "False",
        "DependentNotReady",
        web.metadata.generation,
    )
    assert "Deployment: LessReplicas: Replicas: 0/1" in aggregate.message
    applies_before = len([w for w in writes.log if w[0] == "apply"])

    await make_deployment_ready(manager.client, "a")
    svc = await object_eventually(reader, V1Service, "a", "default")
    applied = [w[1] for w in writes.log if w[0] == "apply"]
    assert applied[applies_before:] == ["Service"]
    assert svc.metadata.labels == {
        "pyctrl.io/workflow": "web-operator",
        "pyctrl.io/primary-uid": web.metadata.uid,
    }
    [owner] = svc.metadata.owner_references
    assert (owner.kind, owner.name, owner.uid, owner.controller) == (
        "Web",
        "a",
        web.metadata.uid,
        True,
    )

    def all_ready(web: Web) -> bool:
        found = condition(web, "Ready")
        return found is not None and found.status == "True"

    web = await object_eventually(reader, Web, "a", "default", all_ready)
    types = {c.type: c.status for c in web.status.conditions}
    assert types == {
        "ConfigReady": "True",
        "DeploymentReady": "True",
        "ServiceReady": "True",
        "Ready": "True",
    }


async def test_steady_state_makes_no_writes_and_keeps_other_managers_labels(
    world: tuple[Manager, Writes, WebReconciler],
) -> None:
    """Reconciles of an unchanged primary write nothing; another manager's label survives."""
    manager, writes, reconciler = world
    reader = manager.api_reader
    await served(manager, "b")
    live = await reader.get(V1Deployment, "b", "default")
    await manager.client.patch(
        live, MergePatch({"metadata": {"labels": {"team": "payments"}}}), field_manager="kubectl"
    )
    web = await reader.get(Web, "b", "default")
    await steady(manager, reconciler, web)  # settles whatever the label and readiness woke
    before = list(writes.log)
    web = await steady(manager, reconciler, await reader.get(Web, "b", "default"))
    assert writes.log == before
    deployment_now = await reader.get(V1Deployment, "b", "default")
    assert deployment_now.metadata.labels == {
        "pyctrl.io/workflow": "web-operator",
        "pyctrl.io/primary-uid": web.metadata.uid,
        "team": "payments",
    }
    # A changed spec is applied again, and the other manager's label still stays.
    await manager.client.patch(web, MergePatch({"spec": {"image": "nginx:2"}}))

    def rolled(deployment: V1Deployment) -> bool:
        return deployment.spec.template.spec.containers[0].image == "nginx:2"

    rolled_out = await object_eventually(reader, V1Deployment, "b", "default", rolled)
    assert (rolled_out.metadata.labels or {}).get("team") == "payments"


async def test_drift_is_put_back_and_a_disabled_dependent_is_pruned(
    world: tuple[Manager, Writes, WebReconciler],
) -> None:
    """A child edited by someone else is re-applied; spec.expose=false deletes the Service."""
    manager, _, _ = world
    reader = manager.api_reader
    web = await served(manager, "c")
    cm = await reader.get(V1ConfigMap, "c-config", "default")
    await manager.client.patch(cm, MergePatch({"data": {"image": "evil"}}), field_manager="other")

    def restored(cm: V1ConfigMap) -> bool:
        return (cm.data or {}).get("image") == "nginx"

    await object_eventually(reader, V1ConfigMap, "c-config", "default", restored)
    await manager.client.patch(web, MergePatch({"spec": {"expose": False}}))
    await gone_eventually(reader, V1Service, "c", "default")

    def service_condition_gone(web: Web) -> bool:
        found = condition(web, "Ready")
        return (
            condition(web, "ServiceReady") is None
            and found is not None
            and (found.status == "True" and found.observed_generation == web.metadata.generation)
        )

    await object_eventually(reader, Web, "c", "default", service_condition_gone)


async def test_a_failing_dependent_stops_only_what_depends_on_it() -> None:
    """A dependent whose desired state fails blocks its dependents, not the others."""

    def broken(web: Web) -> V1ConfigMap:
        raise RuntimeError("no such template")

    def secret_for(web: Web) -> V1Secret:
        return V1Secret(metadata=V1ObjectMeta(name="s"), string_data={"k": "v"})

    failing = Dependent(V1ConfigMap, desired=broken, name="Broken")
    mistyped = Dependent(V1Secret, desired=config_map_for, name="Mistyped")
    after = Dependent(V1Secret, desired=secret_for, depends_on=[failing])
    fine = Dependent(V1ConfigMap, desired=config_map_for, name="Config", ready=None)
    workflow = Workflow([failing, after, fine, mistyped], field_manager="mixed")
    async with Environment(crds=[crd_for(Web)]) as env, Client.from_config(env.config) as client:
        web = await client.create(Web(metadata=ObjectMeta(name="d", namespace="default")))
        with pytest.raises(WorkflowError) as caught:
            await workflow.reconcile(client, web)
        result = caught.value.result
        assert [str(e) for e in caught.value.exceptions] == [
            "no such template",
            "Mistyped is a v1, Kind=Secret, but desired gave a v1, Kind=ConfigMap",
        ]
        assert (result["Broken"].outcome, result["Broken"].reason) == (
            Outcome.FAILED,
            "DesiredFailed",
        )
        assert result["Secret"].outcome is Outcome.WAITING
        assert result["Config"].outcome is Outcome.READY
        assert await client.get(V1ConfigMap, "d-config", "default")
        with pytest.raises(NotFoundError):
            await client.get(V1Secret, "s", "default")
        web = await client.get(Web, "d", "default")
        ready = condition(web, "Ready")
        assert ready is not None
        assert (ready.status, ready.reason) == ("False", "DependentFailed")
        assert "Broken: DesiredFailed: no such template" in ready.message


def test_workflows_refuse_cycles_duplicates_and_strangers() -> None:
    """A cycle, a duplicate name or a dependency outside the workflow is refused at once."""
    a = Dependent(V1ConfigMap, desired=config_map_for, name="A")
    b = Dependent(V1ConfigMap, desired=config_map_for, name="B", depends_on=[a])
    a.depends_on = (b,)
    with pytest.raises(ValueError, match="cycle: A, B"):
        Workflow([a, b], field_manager="x")
    with pytest.raises(ValueError, match="named ConfigMap more than once"):
        Workflow([Dependent(V1ConfigMap, desired=config_map_for)] * 2, field_manager="x")
    lone = Dependent(V1Secret, desired=config_map_for, depends_on=[config])
    with pytest.raises(ValueError, match="Secret depends on Config, which is not in the workflow"):
        Workflow([lone], field_manager="x")
    with pytest.raises(TypeError, match=r"a typed class .* not Unstructured"):
        Dependent(Unstructured, desired=config_map_for)
    assert [d.name for d in WORKFLOW.dependents] == ["Config", "Deployment", "Service"]
    assert WORKFLOW.owned_types() == [V1ConfigMap, V1Deployment, V1Service]


async def test_without_a_cache_the_owned_fields_decide_and_a_second_run_writes_nothing() -> None:
    """Read from the API server (managedFields kept), an unchanged primary costs no write."""
    workflow = Workflow(
        [Dependent(V1ConfigMap, desired=config_map_for, name="Config")], field_manager="direct"
    )
    writes = Writes()
    lists: list[str] = []

    async def list_(client: Client, type_: type[Any], **kwargs: Any) -> Any:
        lists.append(type_.__name__)
        return await client.list(type_, **kwargs)

    async with Environment(crds=[crd_for(Web)]) as env, Client.from_config(env.config) as plain:
        client = InterceptorClient(plain, dataclasses.replace(writes.funcs(), list=list_))
        web = await plain.create(Web(metadata=ObjectMeta(name="e", namespace="default")))
        first = await workflow.reconcile(client, web)
        assert first["Config"].operation == "created"
        assert [w[0] for w in writes.log] == ["apply", "status.patch"]
        assert lists == ["V1ConfigMap"]  # looking for children to prune
        web = await plain.get(Web, "e", "default")
        writes.log.clear()
        second = await workflow.reconcile(client, web)
        assert second["Config"].operation == "unchanged"
        assert writes.log == []
        assert lists == ["V1ConfigMap"]  # the same children wanted: no list again
        web.spec.image = "httpd"
        third = await workflow.reconcile(client, web)
        assert third["Config"].operation == "updated"
        assert third["Config"].object.data == {"image": "httpd"}
