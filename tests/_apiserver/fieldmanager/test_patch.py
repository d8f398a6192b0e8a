"""JSON merge patch, JSON patch and strategic merge patch, checked against kube-apiserver."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pyctrl._apiserver.fieldmanager.patch import (
    PatchError,
    json_merge_patch,
    json_patch,
    strategic_merge_patch,
    supports_strategic_merge,
)

GENERIC_INVALID = "the server rejected our request due to an error in our request"


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "labels": {"app": "web", "tier": "frontend"},
            "finalizers": ["example.com/a", "example.com/b"],
        },
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
            },
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "web:1",
                            "args": ["--port=8080", "--verbose"],
                            "ports": [
                                {"containerPort": 8080, "protocol": "TCP"},
                                {"containerPort": 9090, "name": "metrics"},
                            ],
                            "env": [
                                {"name": "MODE", "value": "prod"},
                                {"name": "LEVEL", "value": "info"},
                            ],
                            "volumeMounts": [{"name": "cfg", "mountPath": "/etc/cfg"}],
                        },
                        {"name": "sidecar", "image": "proxy:1"},
                    ],
                    "volumes": [{"name": "cfg", "configMap": {"name": "web-cfg"}}],
                    "tolerations": [{"key": "a", "operator": "Exists"}],
                },
            },
        },
    }


def smp(original: dict[str, Any], patch: Any, kind: str = "Deployment") -> dict[str, Any]:
    group = "apps" if kind == "Deployment" else ""
    return strategic_merge_patch(original, patch, group=group, version="v1", kind=kind)


def containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = obj["spec"]["template"]["spec"]["containers"]
    return result


def pod(containers: list[dict[str, Any]], **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", **meta},
        "spec": {"containers": containers},
    }


# --- JSON merge patch -----------------------------------------------------------------------


def test_merge_patch_merges_objects_and_null_deletes() -> None:
    """A merge patch merges nested objects key by key and a null removes a key."""
    out = json_merge_patch(
        deployment(),
        {"metadata": {"labels": {"tier": None, "env": "prod"}}, "spec": {"replicas": 5}},
    )
    assert out["metadata"]["labels"] == {"app": "web", "env": "prod"}
    assert out["spec"]["replicas"] == 5
    assert out["spec"]["strategy"]["type"] == "RollingUpdate"


def test_merge_patch_replaces_lists_whole() -> None:
    """A merge patch replaces a list instead of merging its items."""
    out = json_merge_patch(
        deployment(),
        {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "web:2"}]}}}},
    )
    assert containers(out) == [{"name": "app", "image": "web:2"}]


def test_merge_patch_drops_nulls_inside_added_objects() -> None:
    """Null members of an object the patch adds are not stored (RFC 7386)."""
    out = json_merge_patch({"metadata": {"name": "x"}}, {"data": {"a": "1", "b": None}})
    assert out["data"] == {"a": "1"}


def test_merge_patch_leaves_arguments_untouched() -> None:
    """A merge patch returns a new object and changes neither argument."""
    original = deployment()
    patch = {"metadata": {"labels": {"tier": None}}}
    before = (copy.deepcopy(original), copy.deepcopy(patch))
    json_merge_patch(original, patch)
    assert (original, patch) == before


@pytest.mark.parametrize("body", [None, 3, "x"])
def test_merge_patch_of_non_object_is_bad_request(body: Any) -> None:
    """A merge patch body that is not a JSON object is 400 "Invalid JSON Patch"."""
    with pytest.raises(PatchError) as info:
        json_merge_patch(deployment(), body)
    assert (info.value.code, info.value.reason, info.value.message) == (
        400,
        "BadRequest",
        "Invalid JSON Patch",
    )


def test_merge_patch_of_list_is_invalid() -> None:
    """A list body yields a list, not an object: 422 Invalid."""
    with pytest.raises(PatchError) as info:
        json_merge_patch(deployment(), [1])
    assert (info.value.code, info.value.reason) == (422, "Invalid")


# --- JSON patch -----------------------------------------------------------------------------


def test_json_patch_applies_operations_in_order() -> None:
    """add, replace, remove, copy and move run in order on the object."""
    out = json_patch(
        deployment(),
        [
            {"op": "test", "path": "/spec/replicas", "value": 2},
            {"op": "replace", "path": "/spec/replicas", "value": 4},
            {"op": "add", "path": "/metadata/labels/env", "value": "prod"},
            {"op": "remove", "path": "/metadata/labels/tier"},
            {"op": "add", "path": "/metadata/finalizers/-", "value": "example.com/c"},
            {"op": "copy", "from": "/metadata/labels/env", "path": "/metadata/labels/copy"},
            {"op": "move", "from": "/metadata/labels/copy", "path": "/metadata/labels/moved"},
        ],
    )
    assert out["spec"]["replicas"] == 4
    assert out["metadata"]["labels"] == {"app": "web", "env": "prod", "moved": "prod"}
    assert out["metadata"]["finalizers"][-1] == "example.com/c"


def test_json_patch_failed_test_is_invalid_with_generic_message() -> None:
    """A test op that does not hold is 422 Invalid with kube-apiserver's generic message."""
    with pytest.raises(PatchError) as info:
        json_patch(deployment(), [{"op": "test", "path": "/spec/replicas", "value": 3}])
    err = info.value
    assert (err.code, err.reason, err.message) == (422, "Invalid", GENERIC_INVALID)
    assert err.detail == "testing value /spec/replicas failed: test failed"


def test_json_patch_test_tells_booleans_from_numbers() -> None:
    """JSON equality in a test op: true is not 1 (Python would say it is)."""
    obj = {"metadata": {"name": "x"}, "spec": {"paused": True}}
    with pytest.raises(PatchError):
        json_patch(obj, [{"op": "test", "path": "/spec/paused", "value": 1}])
    assert json_patch(obj, [{"op": "test", "path": "/spec/paused", "value": True}]) == obj


def test_json_patch_removing_missing_path_is_invalid() -> None:
    """remove of a path that does not exist is 422 with evanphx/json-patch's wording."""
    with pytest.raises(PatchError) as info:
        json_patch(deployment(), [{"op": "remove", "path": "/spec/paused"}])
    assert info.value.code == 422
    assert info.value.detail == (
        'remove operation does not apply: doc is missing path: "/spec/paused": missing value'
    )


def test_json_patch_replace_of_missing_key_is_invalid() -> None:
    """replace needs the target to exist."""
    with pytest.raises(PatchError) as info:
        json_patch(deployment(), [{"op": "replace", "path": "/spec/paused", "value": True}])
    assert info.value.code == 422


def test_json_patch_unknown_op_is_invalid() -> None:
    """An operation kind outside RFC 6902 is 422."""
    with pytest.raises(PatchError) as info:
        json_patch(deployment(), [{"op": "frobnicate", "path": "/spec"}])
    assert info.value.code == 422
    assert info.value.detail == "Unexpected kind: frobnicate: unknown object type"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"op": "add", "path": "/x", "value": 1},
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
        ),
        (["add"], "json: cannot unmarshal string into Go value of type jsonpatch.Operation"),
    ],
)
def test_json_patch_body_not_a_list_of_ops_is_bad_request(body: Any, message: str) -> None:
    """A body that is not a JSON array of operation objects is 400 BadRequest."""
    with pytest.raises(PatchError) as info:
        json_patch(deployment(), body)
    assert (info.value.code, info.value.reason, info.value.message) == (
        400,
        "BadRequest",
        message,
    )


def test_json_patch_over_the_operation_limit_is_too_large() -> None:
    """More than 10,000 operations is 413, as kube-apiserver limits it."""
    ops = [{"op": "test", "path": "/spec/replicas", "value": 2}] * 10_001
    with pytest.raises(PatchError) as info:
        json_patch(deployment(), ops)
    assert (info.value.code, info.value.reason) == (413, "RequestEntityTooLarge")


def test_json_patch_leaves_arguments_untouched() -> None:
    """JSON patch neither changes the object nor lets the result alias the operations."""
    original = deployment()
    value = {"team": "a"}
    ops = [{"op": "add", "path": "/metadata/annotations", "value": value}]
    out = json_patch(original, ops)
    out["metadata"]["annotations"]["team"] = "b"
    assert original == deployment()
    assert value == {"team": "a"}


def test_json_patch_result_must_be_an_object() -> None:
    """Replacing the whole document with a list is 422."""
    with pytest.raises(PatchError) as info:
        json_patch(deployment(), [{"op": "replace", "path": "", "value": [1]}])
    assert info.value.code == 422


# --- strategic merge patch: which kinds -----------------------------------------------------


@pytest.mark.parametrize(
    ("group", "expected"),
    [("", True), ("apps", True), ("batch", True), ("example.com", False)],
)
def test_strategic_merge_supported_for_builtin_groups_only(group: str, expected: bool) -> None:
    """Built-in kinds have Go types for strategic merge patch; custom resources do not."""
    assert supports_strategic_merge(group, "v1", "Thing") is expected


def test_strategic_merge_of_custom_resource_is_unsupported_media_type() -> None:
    """kube-apiserver answers 415 to a strategic merge patch of a custom resource."""
    with pytest.raises(PatchError) as info:
        strategic_merge_patch({}, {}, group="example.com", version="v1", kind="Widget")
    assert (info.value.code, info.value.reason) == (415, "UnsupportedMediaType")
    assert "application/merge-patch+json" in info.value.message


# --- strategic merge patch: merge keys ------------------------------------------------------


def test_containers_merge_by_name() -> None:
    """Patching one container by name leaves the other containers alone."""
    out = smp(
        deployment(),
        {"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "proxy:2"}]}}}},
    )
    assert [(c["name"], c["image"]) for c in containers(out)] == [
        ("app", "web:1"),
        ("sidecar", "proxy:2"),
    ]
    assert (
        containers(out)[0]["env"]
        == deployment()["spec"]["template"]["spec"]["containers"][0]["env"]
    )


def test_new_container_goes_first() -> None:
    """Without ``$setElementOrder`` a new item sorts before the server's items, as in kube."""
    out = smp(
        deployment(),
        {"spec": {"template": {"spec": {"containers": [{"name": "debug", "image": "busybox"}]}}}},
    )
    assert [c["name"] for c in containers(out)] == ["debug", "app", "sidecar"]


def test_env_merges_by_name_inside_a_container() -> None:
    """env merges by name within the container matched by name."""
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "app", "env": [{"name": "LEVEL", "value": "debug"}]}]
                }
            }
        }
    }
    out = smp(deployment(), patch)
    assert containers(out)[0]["env"] == [
        {"name": "MODE", "value": "prod"},
        {"name": "LEVEL", "value": "debug"},
    ]


def test_container_ports_merge_by_container_port() -> None:
    """Container ports merge on containerPort."""
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "app", "ports": [{"containerPort": 9090, "name": "prom"}]}
                    ]
                }
            }
        }
    }
    ports = containers(smp(deployment(), patch))[0]["ports"]
    assert ports == [
        {"containerPort": 8080, "protocol": "TCP"},
        {"containerPort": 9090, "name": "prom"},
    ]


def test_service_ports_merge_by_port() -> None:
    """Service ports merge on port."""
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s"},
        "spec": {
            "selector": {"app": "web"},
            "ports": [{"port": 80, "targetPort": 8080}, {"port": 443, "targetPort": 8443}],
        },
    }
    out = smp(svc, {"spec": {"ports": [{"port": 443, "targetPort": 9443}]}}, kind="Service")
    assert out["spec"]["ports"] == [
        {"port": 80, "targetPort": 8080},
        {"port": 443, "targetPort": 9443},
    ]


def test_lists_without_patch_strategy_are_replaced() -> None:
    """args and tolerations have no patch strategy: the patch's list replaces them."""
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "tolerations": [{"key": "b", "operator": "Exists"}],
                    "containers": [{"name": "app", "args": ["--quiet"]}],
                }
            }
        }
    }
    out = smp(deployment(), patch)
    assert out["spec"]["template"]["spec"]["tolerations"] == [{"key": "b", "operator": "Exists"}]
    assert containers(out)[0]["args"] == ["--quiet"]


def test_finalizers_merge_as_a_set_in_kube_order() -> None:
    """A merging list of strings keeps patch order, then server-only items where they fit."""
    out = smp(deployment(), {"metadata": {"finalizers": ["example.com/c", "example.com/a"]}})
    assert out["metadata"]["finalizers"] == ["example.com/c", "example.com/a", "example.com/b"]


def test_merging_primitive_list_keeps_patch_order_like_kube() -> None:
    """kube's "preserve the order from the patch in a merging int list": [1,2,3] + [3,1]."""
    obj = pod([], finalizers=["1", "2", "3"])
    out = smp(obj, {"metadata": {"finalizers": ["3", "1"]}}, kind="Pod")
    assert out["metadata"]["finalizers"] == ["2", "3", "1"]


def test_owner_references_merge_by_uid() -> None:
    """ownerReferences merge on uid."""
    obj = pod([], ownerReferences=[{"uid": "1", "name": "a", "kind": "X", "apiVersion": "v1"}])
    ref = {"uid": "2", "name": "b", "kind": "X", "apiVersion": "v1"}
    out = smp(obj, {"metadata": {"ownerReferences": [ref]}}, kind="Pod")
    assert sorted(r["uid"] for r in out["metadata"]["ownerReferences"]) == ["1", "2"]


def test_status_conditions_merge_by_type() -> None:
    """status.conditions of a Deployment merge on type."""
    obj = deployment()
    obj["status"] = {
        "conditions": [
            {"type": "Available", "status": "True"},
            {"type": "Progressing", "status": "True"},
        ]
    }
    out = smp(obj, {"status": {"conditions": [{"type": "Available", "status": "False"}]}})
    assert out["status"]["conditions"] == [
        {"type": "Available", "status": "False"},
        {"type": "Progressing", "status": "True"},
    ]


def test_null_deletes_and_nulls_in_new_values_are_dropped() -> None:
    """null removes a field; null members of a newly added object are discarded."""
    out = smp(
        deployment(),
        {"metadata": {"labels": {"tier": None}, "annotations": {"a": "1", "b": None}}},
    )
    assert out["metadata"]["labels"] == {"app": "web"}
    assert out["metadata"]["annotations"] == {"a": "1"}


def test_strategic_patch_leaves_arguments_untouched() -> None:
    """Strategic merge patch changes neither the original nor the patch."""
    original = deployment()
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "$patch": "delete"}]}}}}
    saved = copy.deepcopy(patch)
    smp(original, patch)
    assert original == deployment()
    assert patch == saved


# --- strategic merge patch: directives ------------------------------------------------------


def test_patch_delete_item_removes_it_from_the_list() -> None:
    """``$patch: delete`` with a merge key deletes that item."""
    patch = {
        "spec": {"template": {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}}
    }
    assert [c["name"] for c in containers(smp(deployment(), patch))] == ["app"]


def test_patch_replace_item_replaces_the_list() -> None:
    """``$patch: replace`` as a list item makes the other patch items the whole list."""
    patch = {
        "spec": {
            "template": {
                "spec": {"containers": [{"$patch": "replace"}, {"name": "only", "image": "only:1"}]}
            }
        }
    }
    assert containers(smp(deployment(), patch)) == [{"name": "only", "image": "only:1"}]


def test_patch_replace_in_map_replaces_the_map() -> None:
    """``$patch: replace`` in an object replaces the object instead of merging."""
    out = smp(deployment(), {"metadata": {"labels": {"$patch": "replace", "new": "1"}}})
    assert out["metadata"]["labels"] == {"new": "1"}


def test_patch_delete_in_map_empties_it() -> None:
    """``$patch: delete`` in an object leaves it empty."""
    out = smp(deployment(), {"spec": {"strategy": {"$patch": "delete"}}})
    assert out["spec"]["strategy"] == {}


def test_patch_merge_directive_in_map_is_rejected_like_kube() -> None:
    """kube-apiserver does not accept ``$patch: merge`` in an object (500, no reason)."""
    with pytest.raises(PatchError) as info:
        smp(deployment(), {"metadata": {"labels": {"$patch": "merge", "x": "1"}}})
    assert (info.value.code, info.value.reason) == (500, "")
    assert info.value.message == "unknown patch type: merge in map: map[$patch:merge x:1]"


def test_patch_merge_directive_in_list_is_rejected_like_kube() -> None:
    """``$patch: merge`` as a list item is kube-apiserver's "cannot yet be specified"."""
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "$patch": "merge"}]}}}}
    with pytest.raises(PatchError) as info:
        smp(deployment(), patch)
    assert info.value.message == "merging lists cannot yet be specified in the patch"


def test_retain_keys_clears_unlisted_fields() -> None:
    """``$retainKeys`` drops keys not listed (switching a Deployment to Recreate)."""
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    assert smp(deployment(), patch)["spec"]["strategy"] == {"type": "Recreate"}


def test_retain_keys_must_list_patched_fields() -> None:
    """A patched key missing from ``$retainKeys`` is 400 BadRequest."""
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {"maxSurge": 1}}}}
    with pytest.raises(PatchError) as info:
        smp(deployment(), patch)
    assert (info.value.code, info.value.message) == (400, "invalid patch format of retainKeys")


def test_retain_keys_must_be_a_list() -> None:
    """A ``$retainKeys`` that is not a list is 400."""
    with pytest.raises(PatchError) as info:
        smp(deployment(), {"spec": {"strategy": {"$retainKeys": "type"}}})
    assert info.value.code == 400


def test_delete_from_primitive_list() -> None:
    """``$deleteFromPrimitiveList/finalizers`` removes those values."""
    out = smp(
        deployment(), {"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/a"]}}
    )
    assert out["metadata"]["finalizers"] == ["example.com/b"]


def test_delete_from_primitive_list_without_field_is_bad_request() -> None:
    """A deletion directive without the ``/<field>`` suffix is 400."""
    with pytest.raises(PatchError) as info:
        smp(deployment(), {"metadata": {"$deleteFromPrimitiveList": ["example.com/a"]}})
    assert (info.value.code, info.value.message) == (400, "invalid patch format of primitive list")


def test_set_element_order_orders_merged_containers() -> None:
    """``$setElementOrder/containers`` sets the order of the merged list."""
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [
                        {"name": "sidecar"},
                        {"name": "new"},
                        {"name": "app"},
                    ],
                    "containers": [{"name": "new", "image": "new:1"}],
                }
            }
        }
    }
    assert [c["name"] for c in containers(smp(deployment(), patch))] == ["sidecar", "new", "app"]


def test_set_element_order_of_primitive_list() -> None:
    """kube's "$setElementOrder contains item that is not present in the int list"."""
    obj = pod([], finalizers=["1", "3"])
    out = smp(obj, {"metadata": {"$setElementOrder/finalizers": ["3", "2", "1"]}}, kind="Pod")
    assert out["metadata"]["finalizers"] == ["3", "1"]


def test_set_element_order_with_delete_and_server_only_items() -> None:
    """kube's "add map and delete map from merging list with conflict" (three-way case)."""
    obj = pod([{"name": "1", "image": "a"}, {"name": "4", "image": "c"}])
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "2"}, {"name": "3"}],
            "containers": [{"name": "2"}, {"name": "3"}, {"name": "1", "$patch": "delete"}],
        }
    }
    out = smp(obj, patch, kind="Pod")
    assert out["spec"]["containers"] == [{"name": "4", "image": "c"}, {"name": "2"}, {"name": "3"}]


def test_set_element_order_deletes_in_one_list_and_reorders_another() -> None:
    """kube's "delete and reorder in one list, reorder in another"."""
    obj = pod([{"name": "a"}, {"name": "b"}])
    obj["spec"]["initContainers"] = [{"name": "c"}, {"name": "d"}]
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "b"}],
            "$setElementOrder/initContainers": [{"name": "d"}, {"name": "c"}],
            "containers": [{"$patch": "delete", "name": "a"}],
        }
    }
    out = smp(obj, patch, kind="Pod")
    assert out["spec"]["containers"] == [{"name": "b"}]
    assert out["spec"]["initContainers"] == [{"name": "d"}, {"name": "c"}]


def test_set_element_order_keeps_server_items_in_place() -> None:
    """kube's "add an item in a list and preserve order" (three-way case)."""
    obj = pod([{"name": "1", "image": "a"}, {"name": "2", "image": "b", "tty": True}])
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "3"}, {"name": "1"}, {"name": "2"}],
            "containers": [{"name": "3", "image": "c"}],
        }
    }
    out = smp(obj, patch, kind="Pod")
    assert [c["name"] for c in out["spec"]["containers"]] == ["3", "1", "2"]
    assert out["spec"]["containers"][2] == {"name": "2", "image": "b", "tty": True}


def test_set_element_order_with_item_missing_from_list() -> None:
    """kube's "nested patch merge with empty list": server items after ordered ones."""
    obj = pod([{"name": "hello2"}])
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "hello"}, {"name": "doesntexist"}],
            "containers": [{"name": "hello"}],
        }
    }
    out = smp(obj, patch, kind="Pod")
    assert out["spec"]["containers"] == [{"name": "hello"}, {"name": "hello2"}]


def test_set_element_order_not_matching_patch_is_rejected() -> None:
    """Patch items in another order than ``$setElementOrder`` fail (500 like kube)."""
    obj = pod([{"name": "a"}, {"name": "b"}])
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
            "containers": [{"name": "b", "image": "x"}, {"name": "a", "image": "y"}],
        }
    }
    with pytest.raises(PatchError) as info:
        smp(obj, patch, kind="Pod")
    assert info.value.code == 500
    assert "doesn't match $setElementOrder list" in info.value.message


def test_item_without_merge_key_is_rejected() -> None:
    """A merging-list item without its merge key is kube's "does not contain declared merge key"."""
    patch = {"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}
    with pytest.raises(PatchError) as info:
        smp(deployment(), patch)
    assert (info.value.code, info.value.reason) == (500, "")
    assert info.value.message == "map: map[image:x] does not contain declared merge key: name"


def test_list_of_lists_is_invalid() -> None:
    """Merging lists whose items are lists is 422 (mergepatch.ErrNoListOfLists)."""
    obj = pod([], finalizers=[["a"]])
    with pytest.raises(PatchError) as info:
        smp(obj, {"metadata": {"finalizers": [["b"]]}}, kind="Pod")
    assert (info.value.code, info.value.detail) == (422, "lists of lists are not supported")


def test_patch_replace_at_top_level_replaces_the_object() -> None:
    """A top-level ``$patch: replace`` makes the patch the whole object."""
    out = smp(deployment(), {"$patch": "replace", "apiVersion": "apps/v1", "kind": "Deployment"})
    assert out == {"apiVersion": "apps/v1", "kind": "Deployment"}


def test_new_field_with_directive_is_not_added() -> None:
    """removeDirectives: a new object carrying ``$patch`` is dropped, as kube does."""
    out = smp(deployment(), {"spec": {"template": {"spec": {"affinity": {"$patch": "replace"}}}}})
    assert "affinity" not in out["spec"]["template"]["spec"]


def test_strategic_patch_body_must_be_an_object() -> None:
    """A strategic merge patch that is not an object is 400."""
    with pytest.raises(PatchError) as info:
        smp(deployment(), ["x"])
    assert (info.value.code, info.value.reason) == (400, "BadRequest")


def test_null_strategic_patch_changes_nothing() -> None:
    """A ``null`` body decodes to an empty patch."""
    assert smp(deployment(), None) == deployment()


def test_patch_delete_item_needs_its_merge_key() -> None:
    """A ``$patch: delete`` list item without the merge key fails like kube (500)."""
    patch = {"spec": {"template": {"spec": {"containers": [{"$patch": "delete"}]}}}}
    with pytest.raises(PatchError) as info:
        smp(deployment(), patch)
    assert info.value.message == "map: map[$patch:delete] does not contain declared merge key: name"


def test_json_patch_test_of_missing_path_against_null_passes() -> None:
    """evanphx/json-patch treats a missing path as equal to a null test value."""
    out = json_patch(deployment(), [{"op": "test", "path": "/spec/paused", "value": None}])
    assert out == deployment()
