"""`breaking_changes`: what a new CRD would break for stored objects, rule by rule."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pyctrl.crd import Change, breaking_changes


def _crd(schema: dict[str, Any], *, versions: tuple[str, ...] = ("v1",)) -> dict[str, Any]:
    return {
        "metadata": {"name": "things.example.com"},
        "spec": {
            "scope": "Namespaced",
            "versions": [
                {
                    "name": v,
                    "served": True,
                    "storage": i == 0,
                    "schema": {"openAPIV3Schema": copy.deepcopy(schema)},
                }
                for i, v in enumerate(versions)
            ],
        },
    }


def _spec(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"spec": {"type": "object", "properties": props}}}


def _rules(old: dict[str, Any], new: dict[str, Any], **kwargs: Any) -> list[tuple[str, str]]:
    return [(c.rule, c.field) for c in breaking_changes(old, new, **kwargs)]


def test_identical_and_loosened_crds_have_no_breaking_changes() -> None:
    """Adding optional fields, widening bounds and adding enum values break nothing."""
    old = _crd(_spec(port={"type": "integer", "minimum": 10, "maximum": 100},
                     mode={"type": "string", "enum": ["a"]}))  # fmt: skip
    new = _crd(_spec(port={"type": "integer", "minimum": 1},
                     mode={"type": "string", "enum": ["a", "b"]},
                     extra={"type": "string"}))  # fmt: skip
    assert breaking_changes(old, old) == []
    assert breaking_changes(old, new) == []


def test_nested_items_and_map_values_are_compared() -> None:
    """Changes inside list items and map values are named with [*] in the path."""
    old = _crd(_spec(
        ports={"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "port": {"type": "integer"}}}},
        labels={"type": "object", "additionalProperties": {"type": "string"}},
    ))  # fmt: skip
    new = copy.deepcopy(old)
    spec = new["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    del spec["properties"]["ports"]["items"]["properties"]["name"]
    spec["properties"]["labels"]["additionalProperties"] = {"type": "string", "maxLength": 8}
    assert _rules(old, new) == [
        ("removed-field", ".spec.ports[*].name"),
        ("tightened", ".spec.labels[*]"),
    ]


def test_a_new_required_field_with_a_default_is_not_breaking() -> None:
    """The API server fills a defaulted field in stored objects when it reads them."""
    old = _crd(_spec(a={"type": "string"}))
    new = copy.deepcopy(old)
    spec = new["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["b"] = {"type": "string", "default": "x"}
    spec["properties"]["c"] = {"type": "string"}
    spec["required"] = ["b", "c"]
    assert _rules(old, new) == [("new-required", ".spec.c")]


def test_dropping_preserve_unknown_fields_prunes_data() -> None:
    """A node that preserved unknown fields and no longer does loses them."""
    old = _crd(_spec(raw={"type": "object", "x-kubernetes-preserve-unknown-fields": True}))
    new = _crd(_spec(raw={"type": "object"}))
    assert _rules(old, new) == [("removed-field", ".spec.raw")]
    # A removed property under a node that preserves unknown fields keeps its values.
    keep_old = _crd(_spec(raw={"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                               "properties": {"a": {"type": "string"}}}))  # fmt: skip
    keep_new = _crd(_spec(raw={"type": "object", "x-kubernetes-preserve-unknown-fields": True}))
    assert breaking_changes(keep_old, keep_new) == []


def test_int_or_string_and_exclusive_bounds() -> None:
    """int-or-string to integer is a type change; a new exclusive bound is a tightening."""
    old = _crd(_spec(port={"x-kubernetes-int-or-string": True,
                           "anyOf": [{"type": "integer"}, {"type": "string"}]},
                     size={"type": "number", "minimum": 0}))  # fmt: skip
    new = _crd(_spec(port={"type": "integer"},
                     size={"type": "number", "minimum": 0, "exclusiveMinimum": True}))  # fmt: skip
    assert _rules(old, new) == [
        ("type-changed", ".spec.port"),
        ("tightened", ".spec.size"),
    ]


def test_versions_stored_and_served() -> None:
    """A stored version may not go; a served one going is reported apart, and allowable."""
    old = _crd(_spec(), versions=("v1", "v1beta1", "v1alpha1"))
    old["status"] = {"storedVersions": ["v1beta1", "v1"]}
    new = _crd(_spec(), versions=("v1",))
    changes = breaking_changes(old, new)
    assert [(c.rule, c.version) for c in changes] == [
        ("removed-stored-version", "v1beta1"),
        ("removed-served-version", "v1alpha1"),
    ]
    assert str(changes[1]) == (
        "things.example.com v1alpha1: version v1alpha1 is no longer served; its clients will "
        "fail [removed-served-version]"
    )
    # Given explicitly, stored versions win over the CRD's status.
    assert _rules(old, new, stored_versions=["v1"]) == [
        ("removed-served-version", ""),
        ("removed-served-version", ""),
    ]
    assert (
        breaking_changes(old, new, stored_versions=["v1"], allow=["removed-served-version"]) == []
    )


def test_allow_by_field_and_unknown_rules() -> None:
    """rule@field allows one change only; an unknown rule is an error listing the rules."""
    old = _crd(_spec(a={"type": "string"}, b={"type": "string"}))
    new = _crd(_spec())
    assert _rules(old, new, allow=["removed-field@.spec.a"]) == [("removed-field", ".spec.b")]
    with pytest.raises(ValueError, match="unknown rule"):
        breaking_changes(old, new, allow=["removed-fields"])
    assert "tightened" in Change.rules
