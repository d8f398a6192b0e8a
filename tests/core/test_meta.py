"""pyctrl.meta: metadata models, conditions and type identities."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pyctrl.meta import (
    Condition,
    GroupVersionKind,
    GroupVersionResource,
    ObjectMeta,
    find_status_condition,
    format_time,
    is_status_condition_false,
    is_status_condition_true,
    remove_status_condition,
    set_status_condition,
)

T0 = datetime(2024, 5, 1, 10, 0, 0, tzinfo=UTC)
T1 = datetime(2024, 5, 1, 11, 0, 0, tzinfo=UTC)


def test_object_meta_round_trips_wire_json() -> None:
    """ObjectMeta reads camelCase JSON and writes back the same, unknown fields included."""
    wire = {
        "name": "a",
        "namespace": "ns",
        "creationTimestamp": "2024-05-01T10:00:00Z",
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "K", "name": "o", "uid": "u", "blockOwnerDeletion": True}
        ],
        "managedFields": [{"manager": "m", "operation": "Apply", "fieldsV1": {"f:spec": {}}}],
        "futureField": {"x": 1},
    }
    meta = ObjectMeta.from_dict(wire)
    assert meta.creation_timestamp == T0
    assert meta.owner_references is not None
    assert meta.owner_references[0].block_owner_deletion is True
    assert meta.to_dict() == wire


def test_snake_case_names_are_accepted_on_input() -> None:
    """Python callers may use snake_case names when building models."""
    meta = ObjectMeta(name="x", generate_name="x-", resource_version="7")
    assert meta.to_dict() == {"name": "x", "generateName": "x-", "resourceVersion": "7"}


def test_format_time_matches_the_api_server() -> None:
    """Times print as RFC 3339 UTC with Z, seconds or microseconds."""
    naive = datetime(2024, 5, 1, 10, 0, 0, 123456)
    assert format_time(naive) == "2024-05-01T10:00:00Z"
    assert format_time(naive, micro=True) == "2024-05-01T10:00:00.123456Z"


def test_set_condition_appends_with_a_transition_time() -> None:
    """A new condition type is appended and stamped with a transition time."""
    conditions: list[Condition] = []
    assert set_status_condition(conditions, Condition(type="Ready", status="False", reason="X"))
    assert conditions[0].last_transition_time is not None


def test_transition_time_moves_only_when_status_changes() -> None:
    """Changing reason or message keeps the time; changing status moves it."""
    conditions = [Condition(type="Ready", status="False", reason="A", last_transition_time=T0)]
    assert set_status_condition(conditions, Condition(type="Ready", status="False", reason="B"))
    assert conditions[0].reason == "B"
    assert conditions[0].last_transition_time == T0
    new = Condition(type="Ready", status="True", reason="Up", last_transition_time=T1)
    assert set_status_condition(conditions, new)
    assert conditions[0].last_transition_time == T1
    assert conditions[0].status == "True"


def test_setting_an_identical_condition_reports_no_change() -> None:
    """Setting the same condition again reports False, so no status write is needed."""
    conditions = [Condition(type="Ready", status="True", reason="Up", last_transition_time=T0)]
    same = Condition(type="Ready", status="True", reason="Up")
    assert not set_status_condition(conditions, same)
    assert conditions[0].last_transition_time == T0


def test_find_remove_and_truth_helpers() -> None:
    """find, remove and the is_true/is_false helpers behave like apimachinery's."""
    conditions = [
        Condition(type="Ready", status="True"),
        Condition(type="Degraded", status="False"),
    ]
    assert find_status_condition(conditions, "Ready") is conditions[0]
    assert find_status_condition(conditions, "Missing") is None
    assert is_status_condition_true(conditions, "Ready")
    assert is_status_condition_false(conditions, "Degraded")
    assert not is_status_condition_true(conditions, "Missing")
    assert remove_status_condition(conditions, "Ready")
    assert not remove_status_condition(conditions, "Ready")
    assert [c.type for c in conditions] == ["Degraded"]


def test_group_version_kind_api_version() -> None:
    """The core group prints as a bare version; others as group/version."""
    assert GroupVersionKind("", "v1", "Pod").api_version == "v1"
    assert GroupVersionKind.from_api_version("apps/v1", "Deployment") == GroupVersionKind(
        "apps", "v1", "Deployment"
    )
    assert str(GroupVersionResource("apps", "v1", "deployments")) == "apps/v1, Resource=deployments"
    with pytest.raises(ValueError, match="invalid apiVersion"):
        GroupVersionKind.from_api_version("apps/", "Deployment")
