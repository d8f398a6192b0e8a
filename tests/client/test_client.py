"""pyctrl.client.Client against the embedded API server: verbs, types, patches, errors."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, TypeVar

import pytest
from kubernetes_asyncio.client import (
    V1ConfigMap,
    V1Container,
    V1Deployment,
    V1DeploymentSpec,
    V1LabelSelector,
    V1Namespace,
    V1ObjectMeta,
    V1OwnerReference,
    V1Pod,
    V1PodSpec,
    V1PodTemplateSpec,
)

from pyctrl.client import (
    Client,
    JSONPatch,
    MergeFrom,
    MergePatch,
    NoKindMatchError,
    ObjectList,
    PatchError,
    Preconditions,
    Reader,
    StrategicMergeFrom,
    json_pointer,
)
from pyctrl.errors import (
    AlreadyExistsError,
    BadRequestError,
    ConflictError,
    InvalidError,
    NotFoundError,
    ignore_not_found,
)
from pyctrl.manager import Manager, Options
from pyctrl.meta import GroupVersionKind, ObjectMeta
from pyctrl.resource import PartialObjectMetadata, Unstructured
from pyctrl.testing import eventually, running
from tests.client.conftest import GADGET_CRD, Gadget, Widget, WidgetSpec, WidgetStatus

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyctrl.envtest import Environment
    from pyctrl.labels import Selector

T = TypeVar("T")

CONFIGMAP = GroupVersionKind("", "v1", "ConfigMap")


def configmap(name: str, namespace: str = "default", **labels: str) -> V1ConfigMap:
    return V1ConfigMap(
        metadata=V1ObjectMeta(name=name, namespace=namespace, labels=labels or None),
        data={"key": "value"},
    )


def widget(name: str = "w", namespace: str = "default", **spec: Any) -> Widget:
    return Widget(metadata=ObjectMeta(name=name, namespace=namespace), spec=WidgetSpec(**spec))


def deployment(name: str = "web", *containers: str) -> V1Deployment:
    return V1Deployment(
        metadata=V1ObjectMeta(name=name, namespace="default"),
        spec=V1DeploymentSpec(
            replicas=1,
            selector=V1LabelSelector(match_labels={"app": name}),
            template=V1PodTemplateSpec(
                metadata=V1ObjectMeta(labels={"app": name}),
                spec=V1PodSpec(
                    containers=[V1Container(name=c, image=f"{c}:1") for c in containers]
                ),
            ),
        ),
    )


# create / get / list ----------------------------------------------------------------------


async def test_create_returns_a_new_stored_object(client: Client) -> None:
    """create returns the stored object as a new instance; the argument is left untouched."""
    obj = configmap("c1")
    created = await client.create(obj)
    assert isinstance(created, V1ConfigMap)
    assert created is not obj
    assert created.metadata.uid
    assert created.metadata.resource_version
    assert obj.metadata.uid is None


async def test_get_returns_the_callers_type(client: Client) -> None:
    """get returns a kubernetes-asyncio model for a built-in type and a Widget for a CR."""
    await client.create(configmap("c1"))
    await client.create(widget("w1", size=4))
    cm = await client.get(V1ConfigMap, "c1", "default")
    w = await client.get(Widget, "w1", "default")
    assert isinstance(cm, V1ConfigMap)
    assert cm.data == {"key": "value"}
    assert isinstance(w, Widget)
    assert w.spec.size == 4


async def test_get_results_are_independent_copies(client: Client) -> None:
    """Changing an object from get does not change what the next get returns."""
    await client.create(widget("w1"))
    first = await client.get(Widget, "w1", "default")
    first.spec.size = 99
    second = await client.get(Widget, "w1", "default")
    assert second.spec.size == 1


async def test_get_missing_object_raises_not_found(client: Client) -> None:
    """get of an absent object raises NotFoundError, which ignore_not_found swallows."""
    with pytest.raises(NotFoundError) as info:
        await client.get(V1ConfigMap, "absent", "default")
    assert info.value.name == "absent"
    with ignore_not_found():
        await client.get(V1ConfigMap, "absent", "default")


async def test_get_of_a_namespaced_kind_needs_a_namespace(client: Client) -> None:
    """get of a namespaced kind without a namespace is refused before any request."""
    with pytest.raises(ValueError, match="ConfigMap is namespaced"):
        await client.get(V1ConfigMap, "c1")


async def test_get_of_a_cluster_scoped_kind(client: Client) -> None:
    """Cluster-scoped kinds are read without a namespace."""
    ns = await client.get(V1Namespace, "default")
    assert ns.metadata.name == "default"


async def test_create_of_a_namespaced_object_needs_its_namespace(client: Client) -> None:
    """Creating a namespaced object without metadata.namespace is refused, naming the kind."""
    with pytest.raises(ValueError, match="create ConfigMap 'c1' needs a namespace"):
        await client.create(V1ConfigMap(metadata=V1ObjectMeta(name="c1")))


async def test_create_existing_object_raises_already_exists(client: Client) -> None:
    """Creating an object whose name is taken raises AlreadyExistsError."""
    await client.create(configmap("c1"))
    with pytest.raises(AlreadyExistsError):
        await client.create(configmap("c1"))


async def test_create_with_generate_name(client: Client) -> None:
    """An object with only generateName gets a generated name."""
    created = await client.create(
        V1ConfigMap(metadata=V1ObjectMeta(generate_name="gen-", namespace="default"))
    )
    assert created.metadata.name.startswith("gen-")
    with pytest.raises(ValueError, match=r"set metadata\.name or metadata\.generateName"):
        await client.create(V1ConfigMap(metadata=V1ObjectMeta(namespace="default")))


async def test_dry_run_create_persists_nothing(client: Client) -> None:
    """A dry-run create answers with the object but stores nothing."""
    answered = await client.create(configmap("dry"), dry_run=True)
    assert answered.metadata.name == "dry"
    with pytest.raises(NotFoundError):
        await client.get(V1ConfigMap, "dry", "default")


async def test_list_filters_by_namespace_and_labels(client: Client) -> None:
    """list filters by namespace, and by label selector given as a string or mapping."""
    await client.create(V1Namespace(metadata=V1ObjectMeta(name="other")))
    await client.create(configmap("a", app="web"))
    await client.create(configmap("b", app="db"))
    await client.create(configmap("c", "other", app="web"))

    async def names(**options: Any) -> list[str]:
        page = await client.list(V1ConfigMap, **options)
        return sorted(f"{o.metadata.namespace}/{o.metadata.name}" for o in page)

    assert await names(namespace="default", labels={"app": "web"}) == ["default/a"]
    assert await names(labels="app in (web)") == ["default/a", "other/c"]
    assert await names(namespace="other") == ["other/c"]


async def test_list_filters_by_field_selector(client: Client) -> None:
    """list passes field selectors, given as a string or a mapping."""
    await client.create(configmap("a"))
    await client.create(configmap("b"))
    page = await client.list(V1ConfigMap, namespace="default", fields={"metadata.name": "b"})
    assert [o.metadata.name for o in page] == ["b"]
    page = await client.list(V1ConfigMap, namespace="default", fields="metadata.name!=b")
    assert "b" not in [o.metadata.name for o in page]


async def test_list_pages_with_limit_and_continue(client: Client) -> None:
    """limit and continue_ page through a list; the last page has no continue token."""
    for i in range(5):
        await client.create(widget(f"w{i}"))
    first = await client.list(Widget, namespace="default", limit=2)
    assert isinstance(first, ObjectList)
    assert len(first) == 2
    assert first.continue_
    assert first.remaining_item_count == 3
    seen = [w.metadata.name for w in first]
    token: str | None = first.continue_
    while token:
        page = await client.list(Widget, namespace="default", limit=2, continue_=token)
        seen += [w.metadata.name for w in page]
        token = page.continue_
    assert seen == [f"w{i}" for i in range(5)]
    assert first.resource_version


async def test_list_items_have_their_kind(client: Client) -> None:
    """Built-in list items, sent without apiVersion and kind, come back with them set."""
    await client.create(configmap("a"))
    page = await client.list(V1ConfigMap, namespace="default")
    assert {(o.api_version, o.kind) for o in page} == {("v1", "ConfigMap")}


# update / status --------------------------------------------------------------------------


async def test_update_returns_the_new_version(client: Client) -> None:
    """update stores the change and returns the object with a new resourceVersion."""
    created = await client.create(widget("w1"))
    created.spec.color = "blue"
    updated = await client.update(created)
    assert updated.spec.color == "blue"
    assert updated.metadata.resource_version != created.metadata.resource_version


async def test_update_from_a_stale_read_conflicts(client: Client) -> None:
    """Updating an object read before someone else's update raises ConflictError."""
    created = await client.create(widget("w1"))
    stale = created.model_copy(deep=True)
    created.spec.size = 2
    await client.update(created)
    stale.spec.size = 3
    with pytest.raises(ConflictError):
        await client.update(stale)


async def test_update_ignores_status_and_status_writer_sets_it(client: Client) -> None:
    """A main-resource update leaves status alone; status().update changes only status."""
    created = await client.create(widget("w1"))
    created.status = WidgetStatus(phase="Ready", ready=1)
    created.spec.size = 7
    updated = await client.update(created)
    assert (updated.spec.size, updated.status.phase) == (7, "")
    updated.status.phase = "Ready"
    updated.spec.size = 8
    after_status = await client.status().update(updated)
    assert isinstance(after_status, Widget)
    assert (after_status.spec.size, after_status.status.phase) == (7, "Ready")


async def test_status_patch(client: Client) -> None:
    """status().patch applies a merge patch to the status subresource."""
    created = await client.create(widget("w1"))
    patch = MergeFrom(created)
    created.status.ready = 3
    patched = await client.status().patch(created, patch)
    assert patched.status.ready == 3


async def test_field_owner_is_recorded(client: Client) -> None:
    """Writes name the client's field owner, or the call's field_manager, in managedFields."""
    created = await client.create(configmap("c1"))
    assert [f.manager for f in created.metadata.managed_fields] == ["pyctrl-test"]
    created.data = {"key": "other"}
    updated = await client.update(created, field_manager="someone-else")
    assert {f.manager for f in updated.metadata.managed_fields} == {"pyctrl-test", "someone-else"}


async def test_with_field_owner_changes_only_the_manager(client: Client) -> None:
    """with_field_owner gives a client writing as another manager, sharing the connection."""
    other = client.with_field_owner("second")
    created = await other.create(configmap("c1"))
    assert [f.manager for f in created.metadata.managed_fields] == ["second"]
    assert other.rest is client.rest
    assert client.field_owner == "pyctrl-test"


# patch ------------------------------------------------------------------------------------


async def test_merge_from_patch_changes_only_what_changed(client: Client) -> None:
    """A MergeFrom patch keeps a concurrent change to another field."""
    created = await client.create(widget("w1", size=1, color="red"))
    mine = created.model_copy(deep=True)
    created.spec.color = "green"
    await client.update(created)
    patch = MergeFrom(mine)
    mine.spec.size = 5
    patched = await client.patch(mine, patch)
    assert (patched.spec.size, patched.spec.color) == (5, "green")


async def test_merge_from_with_optimistic_lock_conflicts_on_change(client: Client) -> None:
    """With optimistic_lock, a patch from a stale snapshot raises ConflictError."""
    created = await client.create(widget("w1"))
    patch = MergeFrom(created, optimistic_lock=True)
    bumped = created.model_copy(deep=True)
    bumped.spec.color = "green"
    await client.update(bumped)
    created.spec.size = 5
    with pytest.raises(ConflictError):
        await client.patch(created, patch)


async def test_json_patch_test_operation_guards_finalizers(client: Client) -> None:
    """A JSON patch whose test holds adds the finalizer; a stale test fails with 422."""
    created = await client.create(widget("w1"))
    add = JSONPatch(
        [
            {"op": "test", "path": "/metadata/resourceVersion", "value": "0"},
        ]
    )
    with pytest.raises(InvalidError):
        await client.patch(created, add)
    add = JSONPatch(
        [
            {"op": "add", "path": json_pointer("metadata", "finalizers"), "value": []},
            {"op": "add", "path": "/metadata/finalizers/-", "value": "test.pyctrl.dev/cleanup"},
        ]
    )
    patched = await client.patch(created, add)
    assert patched.metadata.finalizers == ["test.pyctrl.dev/cleanup"]
    remove = JSONPatch(
        [
            {"op": "test", "path": "/metadata/finalizers/0", "value": "test.pyctrl.dev/cleanup"},
            {"op": "remove", "path": "/metadata/finalizers/0"},
        ]
    )
    cleaned = await client.patch(patched, remove)
    assert not cleaned.metadata.finalizers


async def test_strategic_merge_from_patches_one_container(client: Client) -> None:
    """A strategic merge patch changes one container and keeps one added concurrently."""
    created = await client.create(deployment("web", "main"))
    mine = await client.get(V1Deployment, "web", "default")
    created.spec.template.spec.containers.append(V1Container(name="theirs", image="t:1"))
    await client.update(created)
    patch = StrategicMergeFrom(mine)
    mine.spec.template.spec.containers[0].image = "main:2"
    patched = await client.patch(mine, patch)
    images = {c.name: c.image for c in patched.spec.template.spec.containers}
    assert images == {"main": "main:2", "theirs": "t:1"}


async def test_strategic_merge_from_custom_resource_sends_nothing(
    env: Environment, client: Client
) -> None:
    """StrategicMergeFrom of a custom resource raises PatchError before any request."""
    created = await client.create(widget("w1"))
    with pytest.raises(PatchError, match="not supported"):
        await client.patch(created, StrategicMergeFrom(created))


async def test_patch_of_unstructured_with_merge_patch(client: Client) -> None:
    """A MergePatch on an Unstructured object returns an Unstructured result."""
    await client.create(configmap("c1"))
    target = Unstructured.new(CONFIGMAP, "c1", "default")
    patched = await client.patch(target, MergePatch({"data": {"extra": "1"}}))
    assert isinstance(patched, Unstructured)
    assert patched.get_nested("data") == {"key": "value", "extra": "1"}


async def test_patch_needs_a_patch_object(client: Client) -> None:
    """Passing something that is not a Patch is a TypeError naming it."""
    with pytest.raises(TypeError, match=r"patch must be a pyctrl\.client Patch"):
        await client.patch(widget("w1"), {"spec": {}})  # type: ignore[arg-type]


# server-side apply ------------------------------------------------------------------------


async def test_apply_creates_and_updates(client: Client) -> None:
    """apply creates an absent object and later changes only the fields it sets."""
    applied = await client.apply(widget("w1", size=2))
    assert applied.spec.size == 2
    again = await client.apply(
        Widget(metadata=ObjectMeta(name="w1", namespace="default"), spec=WidgetSpec(size=3))
    )
    assert again.spec.size == 3
    assert [f.manager for f in again.metadata.managed_fields or ()] == ["pyctrl-test"]


async def test_apply_conflict_and_force(client: Client) -> None:
    """Applying a field another manager owns conflicts, unless forced."""
    await client.apply(widget("w1", size=2), field_manager="first")
    with pytest.raises(ConflictError):
        await client.apply(widget("w1", size=5), field_manager="second")
    forced = await client.apply(widget("w1", size=5), field_manager="second", force=True)
    assert forced.spec.size == 5


async def test_apply_needs_a_field_manager(env: Environment) -> None:
    """Server-side apply without any field manager is refused before sending."""
    async with Client.from_config(env.config) as anonymous:
        with pytest.raises(ValueError, match="needs a field manager"):
            await anonymous.apply(widget("w1"))


async def test_status_apply(client: Client) -> None:
    """status().apply sets the status fields it names."""
    await client.create(widget("w1"))
    status = Widget(
        metadata=ObjectMeta(name="w1", namespace="default"), status=WidgetStatus(phase="Up")
    )
    applied = await client.status().apply(status, force=True)
    assert applied.status.phase == "Up"


# delete -----------------------------------------------------------------------------------


async def test_delete_removes_the_object(client: Client) -> None:
    """delete removes the object; deleting it again raises NotFoundError."""
    created = await client.create(configmap("c1"))
    await client.delete(created)
    with pytest.raises(NotFoundError):
        await client.get(V1ConfigMap, "c1", "default")
    with pytest.raises(NotFoundError):
        await client.delete(created)


async def test_delete_with_a_wrong_uid_precondition_conflicts(client: Client) -> None:
    """A uid precondition that does not match makes delete fail with ConflictError."""
    created = await client.create(configmap("c1"))
    with pytest.raises(ConflictError):
        await client.delete(created, preconditions=Preconditions(uid="not-the-uid"))
    await client.delete(
        created,
        preconditions=Preconditions(
            uid=created.metadata.uid, resource_version=created.metadata.resource_version
        ),
        propagation_policy="Foreground",
        grace_period_seconds=0,
    )


async def test_dry_run_delete_keeps_the_object(client: Client) -> None:
    """A dry-run delete leaves the object in place."""
    created = await client.create(configmap("c1"))
    await client.delete(created, dry_run=True)
    assert (await client.get(V1ConfigMap, "c1", "default")).metadata.uid == created.metadata.uid


async def test_delete_of_an_object_with_finalizers_only_marks_it(client: Client) -> None:
    """An object with a finalizer gets a deletionTimestamp instead of disappearing."""
    w = widget("w1")
    w.metadata.finalizers = ["test.pyctrl.dev/keep"]
    await client.create(w)
    await client.delete(w)
    marked = await client.get(Widget, "w1", "default")
    assert marked.metadata.deletion_timestamp is not None


async def test_delete_options_are_validated(client: Client) -> None:
    """A bad propagation policy or a negative grace period is refused before sending."""
    with pytest.raises(ValueError, match="propagation_policy must be one of"):
        await client.delete(widget("w1"), propagation_policy="Sideways")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="grace_period_seconds must be >= 0"):
        await client.delete(widget("w1"), grace_period_seconds=-1)


def owned_configmap(name: str, owner: V1ConfigMap, *finalizers: str) -> V1ConfigMap:
    """A ConfigMap that ``owner`` owns (blocking its foreground deletion)."""
    cm = configmap(name)
    cm.metadata.owner_references = [
        V1OwnerReference(
            api_version="v1",
            kind="ConfigMap",
            name=owner.metadata.name,
            uid=owner.metadata.uid,
            block_owner_deletion=True,
        )
    ]
    if finalizers:
        cm.metadata.finalizers = list(finalizers)
    return cm


async def exists(client: Client, name: str) -> bool:
    try:
        await client.get(V1ConfigMap, name, "default")
    except NotFoundError:
        return False
    return True


async def test_orphan_propagation_keeps_the_dependents(client: Client) -> None:
    """Deleting an owner with Orphan leaves its dependents, freed of their owner reference."""
    owner = await client.create(configmap("owner"))
    await client.create(owned_configmap("dependent", owner))
    await client.delete(owner, propagation_policy="Orphan")

    async def orphaned() -> bool:
        dependent = await client.get(V1ConfigMap, "dependent", "default")
        return not await exists(client, "owner") and not dependent.metadata.owner_references

    await eventually(orphaned)


async def test_background_propagation_deletes_the_dependents_after_the_owner(
    client: Client,
) -> None:
    """Background deletes the owner at once, then the GC deletes the dependents.

    The owner carries the ``orphan`` finalizer, so without the policy it would orphan them.
    """
    owner = configmap("owner")
    owner.metadata.finalizers = ["orphan"]
    owner = await client.create(owner)
    await client.create(owned_configmap("dependent", owner))
    await client.delete(owner, propagation_policy="Background")
    assert not await exists(client, "owner")

    async def dependent_gone() -> bool:
        return not await exists(client, "dependent")

    await eventually(dependent_gone)


async def test_foreground_propagation_keeps_the_owner_until_its_dependents_are_gone(
    client: Client,
) -> None:
    """Foreground marks the owner, deletes the dependents first, and the owner goes last."""
    owner = await client.create(configmap("owner"))
    held = await client.create(owned_configmap("dependent", owner, "test.pyctrl.dev/hold"))
    await client.delete(owner, propagation_policy="Foreground")

    async def dependent_deleting() -> bool:
        dependent = await client.get(V1ConfigMap, "dependent", "default")
        return dependent.metadata.deletion_timestamp is not None

    await eventually(dependent_deleting)
    marked = await client.get(V1ConfigMap, "owner", "default")
    assert marked.metadata.deletion_timestamp is not None
    assert marked.metadata.finalizers == ["foregroundDeletion"]
    await client.patch(held, JSONPatch([{"op": "remove", "path": "/metadata/finalizers"}]))

    async def both_gone() -> bool:
        return not await exists(client, "owner") and not await exists(client, "dependent")

    await eventually(both_gone)


async def test_grace_period_seconds_shortens_a_pods_graceful_deletion(client: Client) -> None:
    """A scheduled pod deleted with grace_period_seconds=5 gets 5 s, not 30; 0 ends it."""
    pod = await client.create(
        V1Pod(
            metadata=V1ObjectMeta(name="p", namespace="default"),
            spec=V1PodSpec(
                node_name="node-1",
                termination_grace_period_seconds=30,
                containers=[V1Container(name="c", image="c:1")],
            ),
        )
    )
    await client.delete(pod, grace_period_seconds=5)
    terminating = await client.get(V1Pod, "p", "default")
    assert terminating.metadata.deletion_timestamp is not None
    assert terminating.metadata.deletion_grace_period_seconds == 5
    await client.delete(pod, grace_period_seconds=0)
    with pytest.raises(NotFoundError):
        await client.get(V1Pod, "p", "default")


async def test_dry_run_writes_persist_nothing(client: Client) -> None:
    """Dry-run update, patch, apply and delete_all_of return results but change nothing."""
    created = await client.create(configmap("c1"))
    created.data = {"key": "updated"}
    assert (await client.update(created, dry_run=True)).data == {"key": "updated"}
    patched = await client.patch(created, MergePatch({"data": {"key": "patched"}}), dry_run=True)
    assert patched.data == {"key": "patched"}
    applied = await client.apply(widget("w1", size=4), dry_run=True)
    assert applied.spec.size == 4
    await client.delete_all_of(V1ConfigMap, namespace="default", dry_run=True)
    stored = await client.get(V1ConfigMap, "c1", "default")
    assert stored.data == {"key": "value"}
    assert stored.metadata.resource_version == created.metadata.resource_version
    with pytest.raises(NotFoundError):
        await client.get(Widget, "w1", "default")


async def test_field_validation_strict_refuses_unknown_fields(
    env: Environment, client: Client
) -> None:
    """Strict field validation refuses an unknown field (400); by default it is pruned."""
    widget_gvk = GroupVersionKind("test.pyctrl.dev", "v1", "Widget")
    obj = Unstructured.new(widget_gvk, "w1", "default")
    obj.object["spec"] = {"size": 1, "colour": "typo"}
    async with Client.from_config(env.config, field_validation="Strict") as strict:
        with pytest.raises(BadRequestError, match=r'unknown field "spec\.colour"'):
            await strict.create(obj)
    created = await client.create(obj)
    assert created.get_nested("spec") == {"size": 1}
    with pytest.raises(ValueError, match="field_validation must be one of"):
        Client(client.rest, field_validation="Loose")  # type: ignore[arg-type]


async def test_delete_all_of_deletes_only_matching_objects(client: Client) -> None:
    """delete_all_of deletes the objects its selector matches in the namespace."""
    await client.create(configmap("a", app="web"))
    await client.create(configmap("b", app="web"))
    await client.create(configmap("c", app="db"))
    await client.delete_all_of(V1ConfigMap, namespace="default", labels={"app": "web"})
    left = await client.list(V1ConfigMap, namespace="default", labels="app")
    assert [o.metadata.name for o in left] == ["c"]


async def test_delete_all_of_a_namespaced_kind_needs_a_namespace(client: Client) -> None:
    """delete_all_of without a namespace for a namespaced kind is refused."""
    with pytest.raises(ValueError, match="delete_all_of ConfigMap needs a namespace"):
        await client.delete_all_of(V1ConfigMap)


# unstructured and metadata-only -----------------------------------------------------------


async def test_unstructured_objects_need_a_kind(client: Client) -> None:
    """Reading Unstructured needs gvk=; with it, the object comes back as Unstructured."""
    await client.create(configmap("c1"))
    with pytest.raises(ValueError, match="pass gvk="):
        await client.get(Unstructured, "c1", "default")
    got = await client.get(Unstructured, "c1", "default", gvk=CONFIGMAP)
    assert isinstance(got, Unstructured)
    assert (got.kind, got.get_nested("data", "key")) == ("ConfigMap", "value")


async def test_unstructured_create_and_list(client: Client) -> None:
    """Unstructured objects are created and listed with their kind on each item."""
    created = await client.create(Unstructured.new(CONFIGMAP, "u1", "default", data={"x": "1"}))
    assert created.uid
    page = await client.list(Unstructured, namespace="default", gvk=CONFIGMAP)
    assert [(o.kind, o.name) for o in page] == [("ConfigMap", "u1")]


async def test_metadata_only_reads(client: Client) -> None:
    """PartialObjectMetadata reads carry the real kind and metadata but no body."""
    await client.create(widget("w1", size=9))
    gvk = Widget.gvk()
    meta = await client.get(PartialObjectMetadata, "w1", "default", gvk=gvk)
    assert (meta.gvk, meta.metadata.name) == (gvk, "w1")
    assert not hasattr(meta, "spec")
    page = await client.list(PartialObjectMetadata, namespace="default", gvk=gvk)
    assert [(m.kind, m.metadata.name) for m in page] == [("Widget", "w1")]


async def test_typed_gvk_must_match(client: Client) -> None:
    """A gvk= that contradicts a typed class is refused."""
    with pytest.raises(ValueError, match="does not match Widget"):
        await client.get(Widget, "w1", "default", gvk=CONFIGMAP)


# discovery --------------------------------------------------------------------------------


async def test_kind_of_a_crd_installed_after_start_is_found(
    env: Environment, client: Client
) -> None:
    """A kind unknown at first raises NoKindMatchError; once its CRD exists it is found."""
    with pytest.raises(NoKindMatchError, match='no matches for kind "Gadget"'):
        await client.get(Gadget, "g1")
    await env.install_crds([GADGET_CRD])
    created = await client.create(Gadget(metadata=ObjectMeta(name="g1")))
    assert created.metadata.namespace is None
    assert (await client.get(Gadget, "g1")).metadata.uid == created.metadata.uid


async def test_unserved_group_version_raises_no_kind_match(client: Client) -> None:
    """A kind in a group version the server does not serve raises NoKindMatchError."""
    with pytest.raises(NoKindMatchError, match=r"does not serve example\.com/v9"):
        await client.get(
            Unstructured, "x", "default", gvk=GroupVersionKind("example.com", "v9", "Thing")
        )


# subresources -----------------------------------------------------------------------------


async def test_scale_subresource_get_and_update(client: Client) -> None:
    """The scale subresource reads and writes a Deployment's replicas."""
    created = await client.create(deployment("web", "main"))
    scale = await client.subresource("scale").get(created)
    assert isinstance(scale, Unstructured)
    assert scale.get_nested("spec", "replicas") == 1
    scale.set_nested(3, "spec", "replicas")
    await client.subresource("scale").update(created, body=scale)
    assert (await client.get(V1Deployment, "web", "default")).spec.replicas == 3


async def test_subresource_names_are_checked(client: Client) -> None:
    """A subresource name with a slash is refused."""
    with pytest.raises(ValueError, match="invalid subresource name"):
        client.subresource("status/x")


# retries through faults -------------------------------------------------------------------


async def test_throttled_requests_are_retried(env: Environment, client: Client) -> None:
    """Two 429 answers with Retry-After are waited out and the create succeeds."""
    env.faults.fail_next(2, verb="create", code=429, retry_after=0)
    created = await client.create(configmap("c1"))
    assert created.metadata.uid


async def test_unavailable_server_beyond_retries_raises(env: Environment, client: Client) -> None:
    """More 503 answers than retries raise ServiceUnavailableError."""
    from pyctrl.errors import ServiceUnavailableError

    env.faults.fail_next(10, verb="get", code=503, retry_after=0)
    with pytest.raises(ServiceUnavailableError):
        await client.get(V1ConfigMap, "c1", "default")


# the cache-reading client -----------------------------------------------------------------


class RecordingReader:
    """A Reader that answers from a dict and records what was read."""

    def __init__(self, objects: dict[str, Any]) -> None:
        self.objects = objects
        self.reads: list[str] = []

    async def get(
        self,
        type_: type[T],
        name: str,
        namespace: str | None = None,
        *,
        gvk: GroupVersionKind | None = None,
    ) -> T:
        self.reads.append(f"get {name}")
        try:
            obj: T = self.objects[name]
        except KeyError:
            raise NotFoundError(code=404, reason="NotFound") from None
        return obj

    async def list(
        self,
        type_: type[T],
        *,
        namespace: str | None = None,
        labels: str | Mapping[str, str] | Selector | None = None,
        fields: str | Mapping[str, str] | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        gvk: GroupVersionKind | None = None,
    ) -> ObjectList[T]:
        self.reads.append("list")
        return ObjectList(items=list(self.objects.values()))


async def test_cached_client_reads_from_cache_and_writes_to_server(
    env: Environment, client: Client
) -> None:
    """With a cache, reads are served by it while writes and api_reader go to the server."""
    cached = widget("cached-only")
    cache = RecordingReader({"cached-only": cached})
    assert isinstance(cache, Reader)
    cached_client = Client(client.rest, cache=cache, field_owner="pyctrl-test")
    assert await cached_client.get(Widget, "cached-only", "default") is cached
    assert len(await cached_client.list(Widget)) == 1
    await cached_client.create(widget("real"))
    assert "real" not in cache.objects
    real = await cached_client.api_reader.get(Widget, "real", "default")
    assert real.metadata.uid
    assert cache.reads == ["get cached-only", "list"]


async def test_uncached_types_and_unstructured_bypass_the_cache(client: Client) -> None:
    """uncached_types, and Unstructured by default, are read from the API server."""
    await client.create(configmap("c1"))
    cache = RecordingReader({})
    cached_client = Client(client.rest, cache=cache, uncached_types=[V1ConfigMap])
    assert (await cached_client.get(V1ConfigMap, "c1", "default")).metadata.name == "c1"
    got = await cached_client.get(Unstructured, "c1", "default", gvk=CONFIGMAP)
    assert got.name == "c1"
    assert cache.reads == []


async def test_manager_options_choose_what_its_client_reads_through_the_cache(
    env: Environment,
) -> None:
    """Manager uncached_types are read from the server; cache_unstructured caches Unstructured."""
    default = Manager(env.config, Options(metrics_bind_address="0"))
    async with running(default):
        await default.client.create(configmap("c1"))
        await default.client.get(Unstructured, "c1", "default", gvk=CONFIGMAP)
        assert default.cache.status() == []
        await default.client.get(V1ConfigMap, "c1", "default")
        assert [s.gvk for s in default.cache.status()] == [CONFIGMAP]
    manager = Manager(
        env.config,
        Options(metrics_bind_address="0", uncached_types=[V1ConfigMap], cache_unstructured=True),
    )
    async with running(manager):
        await manager.client.create(configmap("c2"))
        assert (await manager.client.get(V1ConfigMap, "c2", "default")).data == {"key": "value"}
        assert len(await manager.client.list(V1ConfigMap, namespace="default")) == 2
        assert manager.cache.status() == []
        raw = await manager.client.get(Unstructured, "c2", "default", gvk=CONFIGMAP)
        assert raw.name == "c2"
        assert [s.gvk for s in manager.cache.status()] == [CONFIGMAP]


async def test_concurrent_requests_share_the_client(client: Client) -> None:
    """Many concurrent creates through one client all succeed."""
    created = await asyncio.gather(*(client.create(configmap(f"c{i}")) for i in range(30)))
    assert len({c.metadata.uid for c in created}) == 30


async def test_client_is_a_reader(client: Client) -> None:
    """The client satisfies the Reader protocol, as its api_reader does."""
    assert isinstance(client, Reader)
    assert isinstance(client.api_reader, Reader)


async def test_closing_a_client_leaves_a_shared_rest_client_open(client: Client) -> None:
    """aclose of a client built on someone else's RESTClient does not close it."""
    borrowed = Client(client.rest)
    await borrowed.aclose()
    assert (await client.get(V1Namespace, "default")).metadata.name == "default"
