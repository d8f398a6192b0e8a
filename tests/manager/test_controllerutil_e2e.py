"""pyctrl.controllerutil against the embedded API server: owners, create-or-*, finalizers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from kubernetes_asyncio.client import (
    V1ConfigMap,
    V1Container,
    V1Deployment,
    V1DeploymentSpec,
    V1LabelSelector,
    V1ObjectMeta,
    V1PodSpec,
    V1PodTemplateSpec,
)

from pyctrl.client import Client
from pyctrl.controllerutil import (
    AlreadyOwnedError,
    FinalizerResult,
    Finalizers,
    OperationResult,
    add_finalizer,
    contains_finalizer,
    create_or_patch,
    create_or_update,
    has_controller_reference,
    has_owner_reference,
    patch_add_finalizer,
    patch_remove_finalizer,
    remove_finalizer,
    remove_owner_reference,
    set_controller_reference,
    set_owner_reference,
)
from pyctrl.errors import InvalidError, NotFoundError
from pyctrl.meta import ObjectMeta

from .conftest import Widget, WidgetSpec

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from pyctrl.envtest import Environment

FINALIZER = "test.pyctrl.dev/cleanup"


@pytest.fixture
async def client(env: Environment) -> AsyncIterator[Client]:
    async with Client.from_config(env.config) as client:
        yield client


async def _widget(client: Client, name: str, **spec: Any) -> Widget:
    return await client.create(
        Widget(metadata=ObjectMeta(name=name, namespace="default"), spec=WidgetSpec(**spec))
    )


def _configmap(name: str, namespace: str = "default") -> V1ConfigMap:
    return V1ConfigMap(metadata=V1ObjectMeta(name=name, namespace=namespace))


def _deployment(name: str) -> V1Deployment:
    return V1Deployment(metadata=V1ObjectMeta(name=name, namespace="default"))


def _whole_spec(image: str) -> V1DeploymentSpec:
    """A Deployment spec as a reconciler builds it: none of the server's defaults in it."""
    labels = {"app": "web"}
    return V1DeploymentSpec(
        selector=V1LabelSelector(match_labels=labels),
        template=V1PodTemplateSpec(
            metadata=V1ObjectMeta(labels=labels),
            spec=V1PodSpec(containers=[V1Container(name="web", image=image)]),
        ),
    )


@pytest.mark.parametrize("write", [create_or_update, create_or_patch])
async def test_a_whole_spec_mutate_the_server_stores_as_is_is_unchanged(
    client: Client, write: Any
) -> None:
    """A mutate replacing a whole spec is "unchanged" when the server stores nothing new."""
    image = "nginx:1"

    def mutate(deployment: V1Deployment) -> None:
        deployment.spec = _whole_spec(image)

    result, created = await write(client, _deployment("whole"), mutate)
    assert result == OperationResult.CREATED
    # The server defaulted fields the mutate leaves out: the next mutate drops them again.
    assert created.spec.progress_deadline_seconds == 600
    result, same = await write(client, _deployment("whole"), mutate)
    assert result == OperationResult.UNCHANGED
    assert same.metadata.resource_version == created.metadata.resource_version
    image = "nginx:2"
    result, updated = await write(client, _deployment("whole"), mutate)
    assert result == OperationResult.UPDATED
    assert updated.metadata.resource_version != created.metadata.resource_version
    assert updated.spec.template.spec.containers[0].image == "nginx:2"


def test_operation_results_are_controller_runtimes() -> None:
    """OperationResult values are controller-runtime's strings."""
    assert [r.value for r in OperationResult] == [
        "unchanged",
        "created",
        "updated",
        "updatedStatus",
        "updatedStatusOnly",
    ]


async def test_create_or_update_reports_created_unchanged_updated(client: Client) -> None:
    """create_or_update creates, then writes nothing for the same state, then updates."""
    color = "red"

    def mutate(cm: V1ConfigMap) -> None:
        cm.data = {"color": color}

    result, created = await create_or_update(client, _configmap("cou"), mutate)
    assert result == OperationResult.CREATED
    assert created.metadata.uid
    result, same = await create_or_update(client, _configmap("cou"), mutate)
    assert result == OperationResult.UNCHANGED
    assert same.metadata.resource_version == created.metadata.resource_version
    color = "blue"

    async def mutate_async(cm: V1ConfigMap) -> None:
        mutate(cm)

    result, updated = await create_or_update(client, _configmap("cou"), mutate_async)
    assert result == OperationResult.UPDATED
    live = await client.get(V1ConfigMap, "cou", "default")
    assert live.data == {"color": "blue"}
    assert live.metadata.resource_version == updated.metadata.resource_version


async def test_create_or_update_refuses_a_renaming_mutate(client: Client) -> None:
    """A mutate that changes the name is refused before anything is written."""

    def rename(cm: V1ConfigMap) -> None:
        cm.metadata.name = "other"

    with pytest.raises(ValueError, match="must not change the object's name"):
        await create_or_update(client, _configmap("renamed"), rename)
    with pytest.raises(NotFoundError):
        await client.get(V1ConfigMap, "other", "default")


async def test_create_or_patch_reports_each_kind_of_change(client: Client) -> None:
    """create_or_patch tells created, unchanged, updated, updatedStatus, updatedStatusOnly."""
    desired: dict[str, Any] = {"size": 1, "map": ""}

    def mutate(widget: Widget) -> None:
        widget.spec.size = desired["size"]
        widget.status.config_map = desired["map"]

    def fresh() -> Widget:
        return Widget(metadata=ObjectMeta(name="cop", namespace="default"))

    desired["map"] = "first"
    result, created = await create_or_patch(client, fresh(), mutate)
    assert result == OperationResult.CREATED
    assert created.status.config_map == "first"
    assert (await create_or_patch(client, fresh(), mutate))[0] == OperationResult.UNCHANGED
    desired["size"] = 2
    assert (await create_or_patch(client, fresh(), mutate))[0] == OperationResult.UPDATED
    desired["map"] = "second"
    assert (await create_or_patch(client, fresh(), mutate))[0] == (
        OperationResult.UPDATED_STATUS_ONLY
    )
    desired["size"], desired["map"] = 3, "third"
    result, patched = await create_or_patch(client, fresh(), mutate)
    assert result == OperationResult.UPDATED_STATUS
    live = await client.get(Widget, "cop", "default")
    assert (live.spec.size, live.status.config_map) == (3, "third")
    assert live.metadata.resource_version == patched.metadata.resource_version


async def test_controller_reference_is_set_once_and_refuses_a_second_controller(
    client: Client,
) -> None:
    """set_controller_reference marks one controller owner; a second one is AlreadyOwnedError."""
    first, second = await _widget(client, "owner-a"), await _widget(client, "owner-b")
    cm = _configmap("owned")
    set_controller_reference(first, cm)
    set_controller_reference(first, cm)
    with pytest.raises(AlreadyOwnedError) as raised:
        set_controller_reference(second, cm)
    assert str(raised.value) == (
        "ConfigMap 'default/owned' is already controlled by Widget 'owner-a'; "
        "cannot also be controlled by Widget 'owner-b'"
    )
    assert (raised.value.kind, raised.value.name, raised.value.namespace) == (
        "ConfigMap",
        "owned",
        "default",
    )
    assert raised.value.owner.name == "owner-a"
    cm = await client.create(cm)
    [ref] = cm.metadata.owner_references
    assert (ref.api_version, ref.kind, ref.name, ref.uid) == (
        "test.pyctrl.dev/v1",
        "Widget",
        "owner-a",
        first.metadata.uid,
    )
    assert (ref.controller, ref.block_owner_deletion) == (True, True)
    assert has_controller_reference(cm)


async def test_owner_reference_helpers(client: Client) -> None:
    """set/has/remove_owner_reference manage plain owners next to the controller owner."""
    controller, other = await _widget(client, "ctl"), await _widget(client, "plain")
    cm = _configmap("shared")
    set_owner_reference(other, cm)
    assert not has_controller_reference(cm)
    set_controller_reference(controller, cm)
    cm = await client.create(cm)
    assert has_owner_reference(other, cm)
    assert has_owner_reference(controller, cm)
    assert {(r.name, bool(r.controller)) for r in cm.metadata.owner_references} == {
        ("plain", False),
        ("ctl", True),
    }
    assert remove_owner_reference(other, cm)
    assert not remove_owner_reference(other, cm)
    cm = await client.update(cm)
    assert [r.name for r in cm.metadata.owner_references] == ["ctl"]
    assert not has_owner_reference(other, cm)


async def test_owner_references_across_namespaces_are_refused(client: Client) -> None:
    """An owner in another namespace is refused, naming both objects."""
    owner = await _widget(client, "elsewhere")
    with pytest.raises(ValueError, match="cross-namespace owner references are disallowed"):
        set_controller_reference(owner, _configmap("cm", namespace="kube-system"))


async def test_finalizer_helpers_in_memory_and_on_the_server(client: Client) -> None:
    """add/remove/contains work in memory; the patch helpers never clobber another finalizer."""
    widget = await _widget(client, "fin")
    assert not contains_finalizer(widget, FINALIZER)
    assert add_finalizer(widget, FINALIZER)
    assert not add_finalizer(widget, FINALIZER)
    assert contains_finalizer(widget, FINALIZER)
    assert remove_finalizer(widget, FINALIZER)
    assert not remove_finalizer(widget, FINALIZER)

    stale = await client.get(Widget, "fin", "default")
    widget = await patch_add_finalizer(client, stale, FINALIZER)
    assert widget.metadata.finalizers == [FINALIZER]
    with pytest.raises(InvalidError):
        # Written from a copy read before ours: the guarded patch refuses to overwrite.
        await patch_add_finalizer(client, stale, "other.dev/cleanup")
    widget = await patch_add_finalizer(client, widget, "other.dev/cleanup")
    widget = await patch_remove_finalizer(client, widget, FINALIZER)
    live = await client.get(Widget, "fin", "default")
    assert live.metadata.finalizers == ["other.dev/cleanup"]


class Cleanup:
    """A finalizer that records the objects it cleaned up, failing while told to."""

    def __init__(self, result: FinalizerResult | None = None) -> None:
        self.cleaned: list[str] = []
        self.fail = False
        self.result = result or FinalizerResult()

    async def finalize(self, obj: Any) -> FinalizerResult:
        if self.fail:
            raise RuntimeError("external system unavailable")
        self.cleaned.append(obj.metadata.name)
        return self.result


async def test_finalizers_registry_adds_runs_and_removes(client: Client) -> None:
    """The registry adds its keys to a live object; on deletion runs each, then drops its key."""
    plain, reporting = Cleanup(), Cleanup(FinalizerResult(updated=True, status_updated=True))
    finalizers = Finalizers()
    finalizers.register(FINALIZER, plain)
    finalizers.register("test.pyctrl.dev/report", reporting)
    with pytest.raises(ValueError, match="already registered"):
        finalizers.register(FINALIZER, Cleanup())

    widget = await _widget(client, "registry")
    assert await finalizers.finalize(widget) == FinalizerResult(updated=True)
    assert await finalizers.finalize(widget) == FinalizerResult()
    widget = await client.update(widget)
    await client.delete(widget)
    widget = await client.get(Widget, "registry", "default")
    assert widget.metadata.deletion_timestamp is not None

    plain.fail = True
    with pytest.raises(ExceptionGroup, match="finalizers failed"):
        await finalizers.finalize(widget)
    assert widget.metadata.finalizers == [FINALIZER]
    assert reporting.cleaned == ["registry"]
    widget = await client.update(widget)

    plain.fail = False
    assert await finalizers.finalize(widget) == FinalizerResult(updated=True)
    assert plain.cleaned == ["registry"]
    await client.update(widget)
    with pytest.raises(NotFoundError):
        await client.get(Widget, "registry", "default")
