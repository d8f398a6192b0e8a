"""managedFields tracking and server-side apply, checked against kube-apiserver's output."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from pyctrl._apiserver.fieldmanager.managedfields import (
    ApplyConflict,
    Conflict,
    conflict_status_message,
    server_side_apply,
    track_update,
)
from pyctrl._apiserver.fieldmanager.patch import PatchError, json_merge_patch

T0, T1, T2, T3 = (f"2024-05-01T10:00:0{i}Z" for i in range(4))
APPS = {"api_version": "apps/v1", "group": "apps", "kind": "Deployment"}
CORE_CM = {"api_version": "v1", "group": "", "kind": "ConfigMap"}


def deployment(
    *,
    replicas: int | None = 3,
    labels: dict[str, str] | None = None,
    containers: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": containers or [{"name": "app", "image": "web:1"}]},
            },
        },
    }
    if replicas is not None:
        obj["spec"]["replicas"] = replicas
    if labels is not None:
        obj["metadata"]["labels"] = labels
    return obj


# The kinds these tests write, and whether each has a status subresource (its strategy's
# reset fields then make the main endpoint ignore status).
_HAS_STATUS = {"Deployment": True, "Service": True, "ConfigMap": False, "Widget": True}


def reset_fields(kind: str, subresource: str = "") -> tuple[str, ...]:
    """What the kind's strategy resets on ``subresource`` (``GetResetFields``)."""
    if subresource == "status":
        return ("spec",)
    return ("status",) if not subresource and _HAS_STATUS[kind] else ()


def apply(
    live: dict[str, Any] | None,
    config: dict[str, Any],
    manager: str,
    *,
    now: str = T0,
    force: bool = False,
    **kw: Any,
) -> dict[str, Any]:
    target = kw.pop("target", APPS)
    kw.setdefault("reset_fields", reset_fields(target["kind"], kw.get("subresource", "")))
    return server_side_apply(live, config, manager=manager, force=force, now=now, **target, **kw)


def update(
    old: dict[str, Any] | None,
    new: dict[str, Any],
    manager: str,
    *,
    now: str = T1,
    target: dict[str, str] = APPS,
    **kw: Any,
) -> dict[str, Any]:
    kw.setdefault("reset_fields", reset_fields(target["kind"], kw.get("subresource", "")))
    track_update(
        old,
        new,
        manager=manager,
        now=now,
        api_version=target["api_version"],
        group=target["group"],
        kind=target["kind"],
        **kw,
    )
    return new


def entries(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """managedFields by manager name."""
    return {e["manager"]: e for e in obj["metadata"].get("managedFields", [])}


def fields(obj: dict[str, Any], manager: str) -> dict[str, Any]:
    result: dict[str, Any] = entries(obj)[manager]["fieldsV1"]
    return result


# --- updates --------------------------------------------------------------------------------


def test_apply_then_updates_match_kube_apply_managed_fields_test() -> None:
    """kube's TestApplyManagedFields: an updater takes data.key, grouped under one entry."""
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "test-cm", "namespace": "default", "labels": {"test-label": "test"}},
        "data": {"key": "value"},
    }
    obj = apply(None, cm, "apply_test", now=T0, target=CORE_CM)
    first = json_merge_patch(obj, {"data": {"new-key": "value"}})
    update(obj, first, "updater", now=T1, target=CORE_CM)
    second = json_merge_patch(first, {"data": {"key": "new value"}})
    update(first, second, "updater", now=T2, target=CORE_CM)
    assert second["metadata"]["managedFields"] == [
        {
            "manager": "apply_test",
            "operation": "Apply",
            "apiVersion": "v1",
            "time": T0,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:test-label": {}}}},
        },
        {
            "manager": "updater",
            "operation": "Update",
            "apiVersion": "v1",
            "time": T2,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:key": {}, "f:new-key": {}}},
        },
    ]


def test_create_of_defaulted_deployment_matches_kubectl_create() -> None:
    """A created Deployment gets the entry kube-apiserver writes for kubectl create."""
    obj: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "nginx",
            "namespace": "default",
            "uid": "9b3c",
            "resourceVersion": "1",
            "generation": 1,
            "creationTimestamp": T0,
            "labels": {"app": "nginx"},
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {
                "metadata": {"labels": {"app": "nginx"}},
                "spec": {
                    "containers": [
                        {
                            "name": "nginx",
                            "image": "nginx",
                            "resources": {},
                            "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "File",
                            "imagePullPolicy": "Always",
                        }
                    ],
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst",
                    "securityContext": {},
                    "schedulerName": "default-scheduler",
                },
            },
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
            },
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
        },
        "status": {},
    }
    update(None, obj, "kubectl-create", now=T0)
    assert obj["metadata"]["managedFields"] == [
        {
            "manager": "kubectl-create",
            "operation": "Update",
            "apiVersion": "apps/v1",
            "time": T0,
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {
                    "f:progressDeadlineSeconds": {},
                    "f:replicas": {},
                    "f:revisionHistoryLimit": {},
                    "f:selector": {},
                    "f:strategy": {
                        "f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}},
                        "f:type": {},
                    },
                    "f:template": {
                        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                        "f:spec": {
                            "f:containers": {
                                'k:{"name":"nginx"}': {
                                    ".": {},
                                    "f:image": {},
                                    "f:imagePullPolicy": {},
                                    "f:name": {},
                                    "f:resources": {},
                                    "f:terminationMessagePath": {},
                                    "f:terminationMessagePolicy": {},
                                }
                            },
                            "f:dnsPolicy": {},
                            "f:restartPolicy": {},
                            "f:schedulerName": {},
                            "f:securityContext": {},
                            "f:terminationGracePeriodSeconds": {},
                        },
                    },
                },
            },
        }
    ]


def test_created_custom_resource_owns_spec_itself() -> None:
    """A custom resource is created from an empty object, so ``f:spec`` gets ``"."``."""
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    obj["spec"] = {"size": 3}
    track_update(
        None,
        obj,
        manager="kubectl-create",
        api_version="example.com/v1",
        now=T0,
        schema=WIDGET_SCHEMA,
        group="example.com",
        kind="Widget",
        reset_fields=reset_fields("Widget"),
    )
    assert fields(obj, "kubectl-create") == {"f:spec": {".": {}, "f:size": {}}}


def test_service_ports_are_keyed_by_port_and_default_protocol() -> None:
    """Service ports are keyed on port and protocol; a missing protocol is TCP."""
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "namespace": "default"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
    }
    update(None, svc, "creator", target={"api_version": "v1", "group": "", "kind": "Service"})
    assert fields(svc, "creator") == {
        "f:spec": {
            "f:ports": {
                ".": {},
                'k:{"port":80,"protocol":"TCP"}': {".": {}, "f:port": {}, "f:targetPort": {}},
            },
            "f:selector": {},
        }
    }


def test_owner_references_and_finalizers_shapes() -> None:
    """ownerReferences are keyed by uid and owned whole; finalizers are a set of values."""
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "c",
            "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "o", "uid": "u-1"}],
            "finalizers": ["example.com/cleanup"],
        },
    }
    update(None, cm, "controller", target=CORE_CM)
    assert fields(cm, "controller") == {
        "f:metadata": {
            "f:finalizers": {".": {}, 'v:"example.com/cleanup"': {}},
            "f:ownerReferences": {".": {}, 'k:{"uid":"u-1"}': {}},
        }
    }


def test_update_moves_ownership_of_changed_fields() -> None:
    """A field an updater changes leaves its previous manager's entry."""
    obj = apply(None, deployment(replicas=3), "alice")
    edited = copy.deepcopy(obj)
    edited["spec"]["replicas"] = 7
    update(obj, edited, "kubectl-edit", now=T1)
    assert "f:replicas" not in fields(edited, "alice")["f:spec"]
    assert fields(edited, "kubectl-edit") == {"f:spec": {"f:replicas": {}}}
    assert entries(edited)["kubectl-edit"]["time"] == T1


def test_update_that_changes_nothing_adds_no_entry() -> None:
    """A write that changes no field leaves managedFields as they were."""
    obj = apply(None, deployment(), "alice")
    same = copy.deepcopy(obj)
    update(obj, same, "noop")
    assert same["metadata"]["managedFields"] == obj["metadata"]["managedFields"]


def test_removed_field_leaves_every_entry_and_empty_entries_go() -> None:
    """Removing the only field a manager owned drops that manager's entry."""
    obj = deployment()
    update(None, obj, "creator", now=T0)
    labelled = json_merge_patch(obj, {"metadata": {"labels": {"team": "a"}}})
    update(obj, labelled, "labeller", now=T1)
    assert fields(labelled, "labeller") == {"f:metadata": {"f:labels": {".": {}, "f:team": {}}}}
    unlabelled = json_merge_patch(labelled, {"metadata": {"labels": None}})
    update(labelled, unlabelled, "cleaner", now=T2)
    assert set(entries(unlabelled)) == {"creator"}


def test_same_manager_accumulates_and_keeps_latest_time() -> None:
    """Updates by one manager merge into one entry with the latest time."""
    obj = deployment()
    update(None, obj, "ctl", now=T0)
    scaled = json_merge_patch(obj, {"spec": {"paused": True}})
    update(obj, scaled, "ctl", now=T2)
    entry = entries(scaled)["ctl"]
    assert entry["time"] == T2
    assert "f:paused" in entry["fieldsV1"]["f:spec"]
    assert "f:replicas" in entry["fieldsV1"]["f:spec"]


def test_update_entries_are_per_api_version() -> None:
    """The same manager writing through another apiVersion gets another entry."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    update(None, cm, "m", target=CORE_CM)
    changed = json_merge_patch(cm, {"data": {"b": "2"}})
    track_update(
        cm,
        changed,
        manager="m",
        api_version="v1beta9",
        now=T2,
        group="",
        kind="ConfigMap",
        reset_fields=(),
    )
    versions = sorted(e["apiVersion"] for e in changed["metadata"]["managedFields"])
    assert versions == ["v1", "v1beta9"]


def test_status_subresource_writes_are_tagged_and_status_only() -> None:
    """Writes through /status get ``subresource: status``; the main endpoint ignores status."""
    obj = deployment()
    obj["status"] = {"replicas": 0}
    update(None, obj, "creator", now=T0)
    assert "f:status" not in fields(obj, "creator")
    with_status = json_merge_patch(obj, {"status": {"replicas": 3, "readyReplicas": 3}})
    update(obj, with_status, "deployment-controller", now=T1, subresource="status")
    entry = entries(with_status)["deployment-controller"]
    assert entry["subresource"] == "status"
    assert entry["fieldsV1"] == {"f:status": {"f:readyReplicas": {}, "f:replicas": {}}}


def test_subresource_write_ignores_requested_managed_fields() -> None:
    """A status write keeps the live entries even if the request carries others."""
    obj = deployment()
    update(None, obj, "creator", now=T0)
    new = json_merge_patch(obj, {"status": {"replicas": 1}})
    new["metadata"]["managedFields"] = [{"manager": "forged"}]
    update(obj, new, "ctl", subresource="status")
    assert set(entries(new)) == {"creator", "ctl"}


def test_request_can_clear_managed_fields() -> None:
    """kube's TestClearManagedFieldsWithMergePatch: ``[{}]`` clears managedFields."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    obj = apply(None, cm, "apply_test", target=CORE_CM)
    cleared = json_merge_patch(obj, {"metadata": {"managedFields": [{}]}})
    update(obj, cleared, "", target=CORE_CM)
    assert "managedFields" not in cleared["metadata"]


def test_request_can_set_managed_fields() -> None:
    """Managed fields sent with an update replace the live ones."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    obj = apply(None, cm, "apply_test", target=CORE_CM)
    mine = {
        "manager": "importer",
        "operation": "Update",
        "apiVersion": "v1",
        "time": T0,
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {"f:a": {}}},
    }
    new = copy.deepcopy(obj)
    new["metadata"]["managedFields"] = [mine]
    update(obj, new, "x", target=CORE_CM)
    assert new["metadata"]["managedFields"] == [mine]


def test_invalid_requested_managed_fields_fall_back_to_live() -> None:
    """Managed fields that do not decode are ignored in favour of the live ones."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    obj = apply(None, cm, "apply_test", target=CORE_CM)
    new = copy.deepcopy(obj)
    new["metadata"]["managedFields"] = [{"manager": "x", "operation": "Delete"}]
    update(obj, new, "x", target=CORE_CM)
    assert new["metadata"]["managedFields"] == obj["metadata"]["managedFields"]


def test_more_than_ten_updaters_fold_into_ancient_changes() -> None:
    """The oldest Update entries beyond ten merge into ``ancient-changes``."""
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    update(None, obj, "m00", now="2024-05-01T10:00:00Z", target=CORE_CM)
    for i in range(1, 12):
        new = json_merge_patch(obj, {"data": {f"k{i}": "v"}})
        update(obj, new, f"m{i:02}", now=f"2024-05-01T10:00:{i:02}Z", target=CORE_CM)
        obj = new
    managers = [e["manager"] for e in obj["metadata"]["managedFields"]]
    assert len(managers) == 10
    assert managers[0] == "ancient-changes"
    assert fields(obj, "ancient-changes") == {"f:data": {".": {}, "f:k1": {}, "f:k2": {}}}


# --- server-side apply ----------------------------------------------------------------------


def test_apply_creates_object_with_apply_entry() -> None:
    """Apply on no object creates it, owning exactly the applied fields."""
    obj = apply(None, deployment(), "alice")
    assert obj["spec"]["replicas"] == 3
    assert obj["metadata"]["managedFields"] == [
        {
            "manager": "alice",
            "operation": "Apply",
            "apiVersion": "apps/v1",
            "time": T0,
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:spec": {
                    "f:replicas": {},
                    "f:selector": {},
                    "f:template": {
                        "f:metadata": {"f:labels": {"f:app": {}}},
                        "f:spec": {
                            "f:containers": {
                                'k:{"name":"app"}': {".": {}, "f:image": {}, "f:name": {}}
                            }
                        },
                    },
                }
            },
        }
    ]


def test_apply_entry_serializes_like_kube() -> None:
    """kube's TestApplyConvertsManagedFieldsVersion: same fieldsV1 bytes, key order included."""
    live = deployment()
    update(None, live, "creator", now=T0)
    config = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"sidecar_version": "release"}},
        "spec": {
            "template": {"spec": {"containers": [{"name": "sidecar", "image": "sidecar:latest"}]}}
        },
    }
    obj = apply(live, config, "sidecar_controller", now=T1)
    assert orjson.dumps(fields(obj, "sidecar_controller")) == (
        b'{"f:metadata":{"f:labels":{"f:sidecar_version":{}}},"f:spec":{"f:template":'
        b'{"f:spec":{"f:containers":{"k:{\\"name\\":\\"sidecar\\"}":{".":{},"f:image":{},'
        b'"f:name":{}}}}}}}'
    )
    names = [c["name"] for c in obj["spec"]["template"]["spec"]["containers"]]
    assert names == ["app", "sidecar"]


def test_apply_of_only_identity_fields_leaves_no_entry() -> None:
    """kube's TestApplyRemovesEmptyManagedFields: name and namespace are never owned."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "d"}}
    obj = apply(None, cm, "apply_test", target=CORE_CM)
    obj = apply(obj, cm, "apply_test", target=CORE_CM)
    assert "managedFields" not in obj["metadata"]


def test_apply_removes_fields_no_longer_applied() -> None:
    """kube's TestApplyRemoveContainerPort: a port applied before and omitted now is gone."""
    with_port = deployment(
        containers=[{"name": "nginx", "image": "nginx:latest", "ports": [{"containerPort": 80}]}]
    )
    obj = apply(None, with_port, "apply_test")
    assert fields(obj, "apply_test")["f:spec"]["f:template"]["f:spec"]["f:containers"][
        'k:{"name":"nginx"}'
    ]["f:ports"] == {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}}
    without = deployment(containers=[{"name": "nginx", "image": "nginx:latest"}])
    obj = apply(obj, without, "apply_test", now=T1)
    assert "ports" not in obj["spec"]["template"]["spec"]["containers"][0]


def test_apply_keeps_dropped_fields_another_manager_owns() -> None:
    """A label the applier drops stays if another applier applied it too."""
    obj = apply(None, deployment(labels={"a": "1", "b": "2"}), "alice")
    obj = apply(obj, deployment(labels={"b": "2"}, replicas=None), "bob", now=T1)
    obj = apply(obj, deployment(labels={"a": "1"}), "alice", now=T2)
    assert obj["metadata"]["labels"] == {"a": "1", "b": "2"}
    obj = apply(obj, deployment(labels={"a": "1"}, replicas=None), "alice", now=T3)
    assert "replicas" not in obj["spec"]
    assert obj["spec"]["selector"] == {"matchLabels": {"app": "web"}}


def test_apply_drops_label_nobody_else_owns() -> None:
    """A label only the applier owned is removed when it stops applying it."""
    obj = apply(None, deployment(labels={"a": "1", "b": "2"}), "alice")
    obj = apply(obj, deployment(labels={"a": "1"}), "alice", now=T1)
    assert obj["metadata"]["labels"] == {"a": "1"}
    assert fields(obj, "alice")["f:metadata"] == {"f:labels": {"f:a": {}}}


def test_apply_keeps_dropped_field_an_updater_changed() -> None:
    """Fields changed since by an updater belong to it and survive the applier dropping them."""
    obj = apply(None, deployment(replicas=3), "alice")
    edited = json_merge_patch(obj, {"spec": {"replicas": 5}})
    update(obj, edited, "kubectl-edit")
    obj = apply(edited, deployment(replicas=None), "alice", now=T2)
    assert obj["spec"]["replicas"] == 5


def test_two_appliers_share_a_field_with_equal_values() -> None:
    """Applying the value another manager applied is no conflict: both own it."""
    obj = apply(None, deployment(replicas=3), "alice")
    obj = apply(obj, deployment(replicas=3), "bob", now=T1)
    assert "f:replicas" in fields(obj, "alice")["f:spec"]
    assert "f:replicas" in fields(obj, "bob")["f:spec"]


def test_apply_conflict_with_another_applier() -> None:
    """Changing a field another applier owns raises ApplyConflict with kube's message."""
    obj = apply(None, deployment(replicas=3), "alice")
    with pytest.raises(ApplyConflict) as info:
        apply(obj, deployment(replicas=5), "bob", now=T1)
    err = info.value
    assert err.conflicts == [("alice", ".spec.replicas")]
    assert err.message == 'Apply failed with 1 conflict: conflict with "alice": .spec.replicas'
    assert err.causes == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "alice"',
            "field": ".spec.replicas",
        }
    ]


def test_apply_conflict_with_updater_names_its_api_version() -> None:
    """A conflict with an Update entry says which apiVersion it used."""
    obj = apply(None, deployment(replicas=3), "alice")
    edited = json_merge_patch(obj, {"spec": {"replicas": 5}})
    update(obj, edited, "kubectl-edit")
    with pytest.raises(ApplyConflict) as info:
        apply(edited, deployment(replicas=4), "alice", now=T2)
    assert info.value.causes[0]["message"] == 'conflict with "kubectl-edit" using apps/v1'
    assert info.value.message == (
        'Apply failed with 1 conflict: conflict with "kubectl-edit" using apps/v1: .spec.replicas'
    )
    status = info.value.status()
    assert (status["code"], status["reason"]) == (409, "Conflict")


def test_many_conflicts_are_grouped_by_manager() -> None:
    """Several conflicts list each manager once, then its fields."""
    obj = apply(None, deployment(replicas=3), "alice")
    edited = json_merge_patch(obj, {"spec": {"replicas": 5}})
    update(obj, edited, "kubectl-edit")
    config = deployment(replicas=9, containers=[{"name": "app", "image": "web:2"}])
    with pytest.raises(ApplyConflict) as info:
        apply(edited, config, "carol", now=T2)
    assert info.value.message == (
        'Apply failed with 2 conflicts: conflicts with "alice":\n'
        '- .spec.template.spec.containers[name="app"].image\n'
        'conflicts with "kubectl-edit" using apps/v1:\n'
        "- .spec.replicas"
    )


def test_force_apply_takes_ownership() -> None:
    """With force the field changes and moves to the applier."""
    obj = apply(None, deployment(replicas=3), "alice")
    obj = apply(obj, deployment(replicas=5), "bob", now=T1, force=True)
    assert obj["spec"]["replicas"] == 5
    assert "f:replicas" not in fields(obj, "alice")["f:spec"]
    assert "f:replicas" in fields(obj, "bob")["f:spec"]


def test_noop_apply_keeps_object_and_time() -> None:
    """Re-applying the same configuration changes neither the object nor the entry's time."""
    obj = apply(None, deployment(), "alice", now=T0)
    again = apply(obj, deployment(), "alice", now=T3)
    assert again == obj


def test_apply_merges_containers_by_name_and_keeps_others() -> None:
    """Associative lists merge by key: another manager's container stays."""
    obj = apply(None, deployment(), "alice")
    sidecar = deployment(replicas=None, containers=[{"name": "proxy", "image": "envoy"}])
    del sidecar["spec"]["selector"]
    obj = apply(obj, sidecar, "mesh", now=T1)
    names = [c["name"] for c in obj["spec"]["template"]["spec"]["containers"]]
    assert names == ["app", "proxy"]


def test_apply_replaces_atomic_lists() -> None:
    """An atomic list (args) is replaced whole and owned as a leaf."""
    obj = apply(None, deployment(containers=[{"name": "app", "args": ["a", "b"]}]), "alice")
    obj = apply(obj, deployment(containers=[{"name": "app", "args": ["c"]}]), "alice", now=T1)
    container = obj["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["c"]
    owned = fields(obj, "alice")["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert owned['k:{"name":"app"}']["f:args"] == {}


def test_apply_of_wrong_kind_is_bad_request() -> None:
    """An apply patch for another kind is 400 "invalid object type"."""
    config = deployment()
    config["kind"] = "ReplicaSet"
    with pytest.raises(PatchError) as info:
        apply(None, config, "alice")
    assert (info.value.code, info.value.message) == (
        400,
        "invalid object type: apps/v1, Kind=ReplicaSet",
    )


def test_apply_with_managed_fields_is_bad_request() -> None:
    """An apply patch may not carry managedFields."""
    config = deployment()
    config["metadata"]["managedFields"] = []
    with pytest.raises(PatchError) as info:
        apply(None, config, "alice")
    assert (info.value.code, info.value.message) == (400, "metadata.managedFields must be nil")


def test_apply_with_duplicate_keys_fails_like_kube() -> None:
    """Duplicate list keys in an apply patch are kube's typed-conversion error (500)."""
    config = deployment(containers=[{"name": "app"}, {"name": "app"}])
    with pytest.raises(PatchError) as info:
        apply(None, config, "alice")
    assert info.value.code == 500
    assert info.value.message == (
        "failed to create typed patch object (apps/v1, Kind=Deployment): "
        '.spec.template.spec.containers: duplicate entries for key [name="app"]'
    )


# --- custom resources -----------------------------------------------------------------------

WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "properties": {
                "size": {"type": "integer"},
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name", "protocol"],
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "protocol": {"type": "string", "default": "TCP"},
                            "port": {"type": "integer"},
                        },
                    },
                },
                "tags": {
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "string"},
                },
                "command": {"type": "array", "items": {"type": "string"}},
                "selector": {
                    "type": "object",
                    "x-kubernetes-map-type": "atomic",
                    "additionalProperties": {"type": "string"},
                },
                "config": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        },
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    },
}
WIDGET = {"api_version": "example.com/v1", "group": "example.com", "kind": "Widget"}


def widget(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": spec,
    }


def wapply(
    live: dict[str, Any] | None, config: dict[str, Any], manager: str, **kw: Any
) -> dict[str, Any]:
    return apply(live, config, manager, target=WIDGET, schema=WIDGET_SCHEMA, **kw)


def test_crd_list_map_items_are_keyed_with_schema_defaults() -> None:
    """x-kubernetes-list-type map keys items by its map keys, filling schema defaults."""
    obj = wapply(None, widget(ports=[{"name": "http", "port": 80}]), "alice")
    assert fields(obj, "alice") == {
        "f:spec": {
            "f:ports": {'k:{"name":"http","protocol":"TCP"}': {".": {}, "f:name": {}, "f:port": {}}}
        }
    }


def test_crd_list_map_items_of_two_appliers_merge() -> None:
    """Two appliers each own their item; dropping one's item keeps the other's."""
    obj = wapply(None, widget(ports=[{"name": "http", "port": 80}]), "alice")
    obj = wapply(obj, widget(ports=[{"name": "metrics", "port": 9090}]), "bob", now=T1)
    assert [p["name"] for p in obj["spec"]["ports"]] == ["http", "metrics"]
    obj = wapply(obj, widget(size=1), "alice", now=T2)
    assert obj["spec"]["ports"] == [{"name": "metrics", "port": 9090}]


def test_crd_set_items_are_owned_by_value() -> None:
    """x-kubernetes-list-type set owns each value; appliers' values merge."""
    obj = wapply(None, widget(tags=["a", "b"]), "alice")
    obj = wapply(obj, widget(tags=["c"]), "bob", now=T1)
    assert obj["spec"]["tags"] == ["a", "b", "c"]
    assert fields(obj, "bob") == {"f:spec": {"f:tags": {'v:"c"': {}}}}


def test_crd_atomic_list_conflicts_as_a_whole() -> None:
    """A list without a list type is atomic: changing it conflicts with its owner."""
    obj = wapply(None, widget(command=["run"]), "alice")
    with pytest.raises(ApplyConflict) as info:
        wapply(obj, widget(command=["run", "--fast"]), "bob", now=T1)
    assert info.value.conflicts == [("alice", ".spec.command")]


def test_crd_atomic_map_is_owned_whole() -> None:
    """x-kubernetes-map-type atomic is replaced and owned as one leaf."""
    obj = wapply(None, widget(selector={"a": "1", "b": "2"}), "alice")
    obj = wapply(obj, widget(selector={"c": "3"}), "alice", now=T1)
    assert obj["spec"]["selector"] == {"c": "3"}
    assert fields(obj, "alice") == {"f:spec": {"f:selector": {}}}


def test_crd_granular_map_entries_are_owned_one_by_one() -> None:
    """A map with additionalProperties owns each entry; appliers share it."""
    obj = wapply(None, widget(config={"a": "1"}), "alice")
    obj = wapply(obj, widget(config={"b": "2"}), "bob", now=T1)
    assert obj["spec"]["config"] == {"a": "1", "b": "2"}
    assert fields(obj, "bob") == {"f:spec": {"f:config": {"f:b": {}}}}


def test_crd_item_without_key_and_default_fails() -> None:
    """A list-map item missing a key field without default is kube's typed error."""
    with pytest.raises(PatchError) as info:
        wapply(None, widget(ports=[{"port": 80}]), "alice")
    assert info.value.code == 500
    assert 'omits key field "name"' in info.value.message


def test_crd_main_endpoint_apply_does_not_own_status() -> None:
    """Status applied through the main endpoint is not owned (it is reset there)."""
    config = widget(size=1)
    config["status"] = {"ready": True}
    obj = wapply(None, config, "alice")
    assert fields(obj, "alice") == {"f:spec": {"f:size": {}}}


def test_crd_status_subresource_apply_owns_status_only() -> None:
    """An apply through /status is its own entry owning status, not spec."""
    obj = wapply(None, widget(size=1), "alice")
    config = widget(size=2)
    config["status"] = {"ready": True}
    obj = wapply(obj, config, "operator", now=T1, subresource="status")
    entry = entries(obj)["operator"]
    assert entry["subresource"] == "status"
    assert entry["fieldsV1"] == {"f:status": {"f:ready": {}}}


# --- helpers --------------------------------------------------------------------------------


def test_conflict_status_message_from_plain_tuples() -> None:
    """conflict_status_message also formats plain (manager, path) pairs."""
    assert conflict_status_message([("mgr", ".spec.replicas")]) == (
        'Apply failed with 1 conflict: conflict with "mgr": .spec.replicas'
    )


def test_conflict_describes_subresource() -> None:
    """A conflicting manager that wrote through a subresource says so."""
    conflict = Conflict(
        manager="ctl", path=".status.x", operation="Update", api_version="v1", subresource="status"
    )
    assert conflict.message == 'conflict with "ctl" with subresource "status" using v1'


def test_update_with_untypable_object_keeps_live_entries() -> None:
    """kube's UpdateNoErrors: an object that does not fit its type keeps the live entries."""
    old = widget(ports=[{"name": "http", "port": 80}])
    track_update(None, old, manager="alice", now=T0, schema=WIDGET_SCHEMA, **_widget_target())
    new = copy.deepcopy(old)
    new["spec"]["ports"].append({"port": 81})
    track_update(old, new, manager="bob", now=T1, schema=WIDGET_SCHEMA, **_widget_target())
    assert new["metadata"]["managedFields"] == old["metadata"]["managedFields"]


def _widget_target() -> dict[str, Any]:
    return {
        "api_version": "example.com/v1",
        "group": "example.com",
        "kind": "Widget",
        "reset_fields": reset_fields("Widget"),
    }


def test_apply_result_shares_nothing_with_its_inputs() -> None:
    """The object apply returns can be changed without touching the live object or patch."""
    live = apply(None, deployment(labels={"a": "1"}), "alice")
    config = deployment(labels={"b": "2"})
    saved_live, saved_config = copy.deepcopy(live), copy.deepcopy(config)
    out = apply(live, config, "bob", now=T1)
    out["metadata"]["labels"]["c"] = "3"
    out["spec"]["template"]["spec"]["containers"][0]["image"] = "changed"
    assert (live, config) == (saved_live, saved_config)


def test_force_apply_over_updater_drops_its_emptied_entry() -> None:
    """An Update entry that loses its only field to a forced apply disappears."""
    obj = apply(None, deployment(replicas=3), "alice")
    edited = json_merge_patch(obj, {"spec": {"replicas": 5}})
    update(obj, edited, "kubectl-scale")
    out = apply(edited, deployment(replicas=4), "alice", now=T2, force=True)
    assert out["spec"]["replicas"] == 4
    assert set(entries(out)) == {"alice"}
