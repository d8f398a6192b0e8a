"""pyctrl.client patches: merge and strategic diffs, JSON patches, apply configurations."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes_asyncio.client import (
    V1Deployment,
    V1DeploymentSpec,
    V1LabelSelector,
    V1ObjectMeta,
    V1PodTemplateSpec,
)

from pyctrl._apiserver.fieldmanager.patch import json_merge_patch, strategic_merge_patch
from pyctrl.client import (
    APPLY_PATCH,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    Apply,
    JSONPatch,
    MergeFrom,
    MergePatch,
    Patch,
    PatchError,
    RawPatch,
    StrategicMergeFrom,
    apply_configuration,
    json_pointer,
)
from pyctrl.client._strategic import merge_diff, strategic_diff
from pyctrl.meta import ObjectMeta
from pyctrl.resource import Unstructured
from pyctrl.scheme import default_scheme
from tests.client.conftest import Widget, WidgetSpec


def data(patch: Patch, obj: Any) -> Any:
    return orjson.loads(patch.data(obj, default_scheme()))


def pod(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "d", "resourceVersion": "7"},
        "spec": spec,
    }


# merge patches ----------------------------------------------------------------------------


def test_merge_diff_sends_only_changes_and_nulls_removals() -> None:
    """A merge diff holds changed values, nulls for removed keys, and nothing unchanged."""
    original = {"a": 1, "b": {"c": 2, "d": 3}, "e": [1, 2], "gone": "x"}
    modified = {"a": 1, "b": {"c": 20, "d": 3}, "e": [1, 2, 3], "new": True}
    assert merge_diff(original, modified) == {
        "b": {"c": 20},
        "e": [1, 2, 3],
        "new": True,
        "gone": None,
    }
    assert merge_diff(original, copy.deepcopy(original)) == {}


def test_merge_diff_tells_true_from_one() -> None:
    """A value changing from 1 to true is a change, although Python says 1 == True."""
    assert merge_diff({"a": 1, "b": [1]}, {"a": True, "b": [True]}) == {"a": True, "b": [True]}


json_values = st.recursive(
    st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text("abc", max_size=2), inner, max_size=3)
    ),
    max_leaves=10,
)
json_objects = st.dictionaries(st.text("abcd", max_size=2), json_values, max_size=4)


@given(json_objects, json_objects)
@settings(max_examples=60, deadline=None)
def test_merge_diff_applied_gives_the_modified_object(
    original: dict[str, Any], modified: dict[str, Any]
) -> None:
    """Applying the merge diff to the original yields the modified object."""
    assert json_merge_patch(original, merge_diff(original, modified)) == modified


def test_merge_from_snapshots_the_original() -> None:
    """MergeFrom diffs against the object as it was when the patch was made."""
    widget = Widget(metadata=ObjectMeta(name="w", resource_version="3"))
    patch = MergeFrom(widget)
    widget.spec.size = 5
    widget.spec.tags.append("x")
    assert patch.content_type == MERGE_PATCH
    assert data(patch, widget) == {"spec": {"size": 5, "tags": ["x"]}}


def test_merge_from_works_with_kubernetes_models() -> None:
    """MergeFrom of a kubernetes-asyncio model diffs its wire form."""
    deploy = V1Deployment(
        metadata=V1ObjectMeta(name="web"),
        spec=V1DeploymentSpec(replicas=1, selector=V1LabelSelector(), template=V1PodTemplateSpec()),
    )
    patch = MergeFrom(deploy)
    deploy.spec.replicas = 3
    assert data(patch, deploy) == {"spec": {"replicas": 3}}


def test_merge_from_with_optimistic_lock_sends_the_resource_version() -> None:
    """With optimistic_lock, the snapshot's resourceVersion goes in the patch."""
    widget = Widget(metadata=ObjectMeta(name="w", resource_version="3"))
    patch = MergeFrom(widget, optimistic_lock=True)
    widget.spec.color = "blue"
    widget.metadata.resource_version = "99"
    assert data(patch, widget) == {"spec": {"color": "blue"}, "metadata": {"resourceVersion": "3"}}


def test_optimistic_lock_needs_a_resource_version() -> None:
    """An optimistic lock on an object never read from the server is refused."""
    with pytest.raises(PatchError, match="needs an original with a resourceVersion"):
        MergeFrom(Widget(metadata=ObjectMeta(name="w")), optimistic_lock=True)


def test_merge_patch_sends_the_mapping() -> None:
    """MergePatch sends the given mapping as a merge patch."""
    patch = MergePatch({"metadata": {"labels": {"a": None}}})
    assert (patch.content_type, data(patch, {})) == (
        MERGE_PATCH,
        {"metadata": {"labels": {"a": None}}},
    )


# strategic merge patches ------------------------------------------------------------------


def test_strategic_merge_from_refuses_custom_resources() -> None:
    """StrategicMergeFrom of a custom resource fails before any request, suggesting others."""
    with pytest.raises(
        PatchError, match=r"not supported for test\.pyctrl\.dev/v1, Kind=Widget.*MergeFrom"
    ):
        StrategicMergeFrom(Widget(metadata=ObjectMeta(name="w")))
    unstructured = Unstructured({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway"})
    with pytest.raises(PatchError, match="custom resource"):
        StrategicMergeFrom(unstructured)


def test_strategic_diff_patches_containers_by_name() -> None:
    """A changed container is sent by name with only its change, in order."""
    original = pod(containers=[{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}])
    modified = copy.deepcopy(original)
    modified["spec"]["containers"][1]["image"] = "b:2"
    patch = StrategicMergeFrom(Unstructured(original))
    assert patch.content_type == STRATEGIC_MERGE_PATCH
    assert data(patch, Unstructured(modified)) == {
        "spec": {
            "containers": [{"name": "b", "image": "b:2"}],
            "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
        }
    }


def test_strategic_diff_deletes_removed_items_by_key() -> None:
    """A removed container becomes a $patch: delete item naming it."""
    original = pod(containers=[{"name": "a"}, {"name": "b"}])
    modified = pod(containers=[{"name": "b"}])
    assert strategic_diff(original, modified, group="", kind="Pod")["spec"] == {
        "containers": [{"name": "a", "$patch": "delete"}],
        "$setElementOrder/containers": [{"name": "b"}],
    }


def test_strategic_diff_merges_finalizers_as_a_set() -> None:
    """Finalizers are added and removed with set directives, leaving others' finalizers be."""
    original = {"metadata": {"finalizers": ["a", "b"]}}
    modified = {"metadata": {"finalizers": ["b", "c"]}}
    assert strategic_diff(original, modified, group="", kind="ConfigMap") == {
        "metadata": {
            "finalizers": ["c"],
            "$deleteFromPrimitiveList/finalizers": ["a"],
            "$setElementOrder/finalizers": ["b", "c"],
        }
    }


def test_strategic_diff_sends_atomic_lists_whole() -> None:
    """Lists without a merge strategy (tolerations, args) are sent complete."""
    original = pod(tolerations=[{"key": "a"}], containers=[{"name": "c", "args": ["x"]}])
    modified = pod(tolerations=[{"key": "b"}], containers=[{"name": "c", "args": ["x", "y"]}])
    assert strategic_diff(original, modified, group="", kind="Pod")["spec"] == {
        "tolerations": [{"key": "b"}],
        "containers": [{"name": "c", "args": ["x", "y"]}],
        "$setElementOrder/containers": [{"name": "c"}],
    }


def test_strategic_diff_merges_what_the_server_merges() -> None:
    """The diff reads the server's merge keys: a Pod's resourceClaimStatuses merge by name."""
    claims = [{"name": "gpu", "resourceClaimName": "a"}, {"name": "nic", "resourceClaimName": "b"}]
    original = {**pod(), "status": {"resourceClaimStatuses": claims}}
    modified = copy.deepcopy(original)
    modified["status"]["resourceClaimStatuses"][1]["resourceClaimName"] = "c"
    patch = strategic_diff(original, modified, group="", kind="Pod")
    assert patch["status"]["resourceClaimStatuses"] == [{"name": "nic", "resourceClaimName": "c"}]
    merged = strategic_merge_patch(original, patch, group="", version="v1", kind="Pod")
    assert merged == modified


WORKLOADS: list[dict[str, Any]] = [
    {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "finalizers": ["a", "b"],
            "ownerReferences": [{"uid": "1", "name": "o", "kind": "K", "apiVersion": "v1"}],
            "labels": {"app": "web"},
        },
        "spec": {
            "replicas": 1,
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "image": "web:1",
                            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                            "ports": [{"containerPort": 80}, {"containerPort": 443}],
                            "volumeMounts": [{"name": "v", "mountPath": "/v"}],
                        },
                        {"name": "side", "image": "side:1"},
                    ],
                    "volumes": [{"name": "v", "emptyDir": {}}],
                    "tolerations": [{"key": "t"}],
                },
            },
        },
        "status": {"conditions": [{"type": "Available", "status": "True"}]},
    },
    {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "svc"},
        "spec": {"ports": [{"port": 80, "protocol": "TCP"}, {"port": 443, "protocol": "TCP"}]},
    },
]


def edits(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """Several modified versions of a workload, each exercising a kind of list change."""
    out = []
    if obj["kind"] == "Deployment":
        containers = ["spec", "template", "spec", "containers"]

        def edit(fn: Any) -> None:
            new = copy.deepcopy(obj)
            fn(new)
            out.append(new)

        def at(o: dict[str, Any], path: list[str]) -> Any:
            for key in path:
                o = o[key]
            return o

        edit(lambda o: at(o, containers)[0].update(image="web:2"))
        edit(lambda o: at(o, containers).reverse())
        edit(lambda o: at(o, containers).pop(0))
        edit(lambda o: at(o, containers).append({"name": "new", "image": "n"}))
        edit(lambda o: at(o, containers)[0]["env"].pop(0))
        edit(lambda o: at(o, containers)[0]["env"].insert(0, {"name": "Z", "value": "z"}))
        edit(lambda o: at(o, containers)[0]["ports"].reverse())
        edit(lambda o: at(o, containers)[0].pop("volumeMounts"))
        edit(lambda o: o["metadata"]["finalizers"].remove("a"))
        edit(lambda o: o["metadata"]["finalizers"].insert(0, "z"))
        edit(lambda o: o["metadata"].update(finalizers=["b", "a"]))
        edit(lambda o: o["metadata"]["ownerReferences"].clear())
        edit(lambda o: at(o, ["spec", "template", "spec", "tolerations"]).append({"key": "u"}))
        edit(lambda o: at(o, ["spec", "template", "spec", "volumes"])[0].pop("emptyDir"))
        edit(lambda o: at(o, ["spec", "template", "spec", "volumes"])[0].update(secret={"a": 1}))
        edit(lambda o: o["status"]["conditions"].append({"type": "Progressing", "status": "T"}))
        edit(lambda o: o["spec"].update(replicas=3, paused=True))
        edit(lambda o: o["metadata"].pop("labels"))
    else:
        new = copy.deepcopy(obj)
        new["spec"]["ports"].reverse()
        new["spec"]["ports"][0]["targetPort"] = 8443
        out.append(new)
        new = copy.deepcopy(obj)
        new["spec"]["ports"].pop()
        out.append(new)
    return out


@pytest.mark.parametrize(
    ("original", "modified"),
    [(o, m) for o in WORKLOADS for m in edits(o)],
)
def test_strategic_diff_applied_by_the_server_gives_the_modified_object(
    original: dict[str, Any], modified: dict[str, Any]
) -> None:
    """The server's strategic merge of the diff turns the original into the modified object."""
    gvk = default_scheme().gvk_for(original)
    patch = strategic_diff(original, modified, group=gvk.group, kind=gvk.kind)
    merged = strategic_merge_patch(
        original, patch, group=gvk.group, version=gvk.version, kind=gvk.kind
    )
    assert merged == modified


def test_strategic_merge_from_keeps_a_concurrent_writers_container() -> None:
    """Changing one container does not remove a container someone else added meanwhile."""
    original = WORKLOADS[0]
    mine = copy.deepcopy(original)
    mine["spec"]["template"]["spec"]["containers"][0]["image"] = "web:2"
    theirs = copy.deepcopy(original)
    theirs["spec"]["template"]["spec"]["containers"].append({"name": "theirs", "image": "t"})
    patch = data(StrategicMergeFrom(Unstructured(original)), Unstructured(mine))
    merged = strategic_merge_patch(theirs, patch, group="apps", version="v1", kind="Deployment")
    names = [c["name"] for c in merged["spec"]["template"]["spec"]["containers"]]
    assert set(names) == {"main", "side", "theirs"}
    assert merged["spec"]["template"]["spec"]["containers"][0]["image"] == "web:2"


# JSON patches -----------------------------------------------------------------------------


def test_json_patch_sends_its_operations() -> None:
    """A JSONPatch sends its operations as a JSON array with the json-patch media type."""
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/finalizers", "value": ["a"]},
        {"op": "add", "path": "/metadata/finalizers/-", "value": "b"},
    ]
    patch = JSONPatch(ops)
    assert patch.content_type == JSON_PATCH
    assert data(patch, Widget()) == ops


@pytest.mark.parametrize(
    ("op", "message"),
    [
        ({"op": "upsert", "path": "/a"}, "op must be one of"),
        ({"op": "add", "path": "a", "value": 1}, "path must be a JSON pointer"),
        ({"op": "replace", "path": "/a"}, "needs a value"),
        ({"op": "test", "path": "/a"}, "needs a value"),
        ({"op": "move", "path": "/a"}, "from must be a JSON pointer"),
    ],
)
def test_malformed_json_patch_operations_are_refused(op: dict[str, Any], message: str) -> None:
    """A malformed operation is refused with its index and what is wrong."""
    with pytest.raises(PatchError, match=f"operation 1.*{message}"):
        JSONPatch([{"op": "remove", "path": "/x"}, op])


def test_json_patch_diff_turns_original_into_modified() -> None:
    """JSONPatch.diff gives operations that transform the original into the modified."""
    original = Widget(metadata=ObjectMeta(name="w"), spec=WidgetSpec(tags=["a"]))
    modified = original.model_copy(deep=True)
    modified.spec.tags = ["a", "b"]
    modified.spec.size = 2
    patch = JSONPatch.diff(original, modified)
    result = jsonpatch.apply_patch(original.to_dict(), patch.operations)
    assert result == modified.to_dict()


def test_json_pointer_escapes_slashes_and_tildes() -> None:
    """json_pointer escapes '~' and '/' in keys as RFC 6901 says."""
    assert json_pointer("metadata", "annotations", "a.io/x~y") == "/metadata/annotations/a.io~1x~0y"
    assert json_pointer("spec", "items", 0) == "/spec/items/0"


# apply ------------------------------------------------------------------------------------


def test_apply_sends_only_the_fields_that_were_set() -> None:
    """An apply configuration of a typed object leaves out defaults nobody set."""
    widget = Widget(metadata=ObjectMeta(name="w", namespace="d"), spec=WidgetSpec(size=3))
    assert apply_configuration(widget, default_scheme()) == {
        "apiVersion": "test.pyctrl.dev/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "d"},
        "spec": {"size": 3},
    }


def test_apply_never_sends_managed_fields() -> None:
    """managedFields are stripped from apply configurations (the server refuses them)."""
    obj = Unstructured(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c", "managedFields": [{"manager": "x"}]},
            "data": {"a": "1"},
        }
    )
    patch = Apply(force=True)
    assert patch.content_type == APPLY_PATCH
    assert data(patch, obj) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c"},
        "data": {"a": "1"},
    }
    assert obj.metadata["managedFields"] == [{"manager": "x"}]


def test_raw_patch_checks_its_media_type() -> None:
    """A RawPatch with an unknown media type is refused."""
    assert RawPatch(MERGE_PATCH, b"{}").data(None, default_scheme()) == b"{}"
    with pytest.raises(PatchError, match="unknown patch media type"):
        RawPatch("application/json", b"{}")
