"""The write path's shortcuts give exactly what the plain computations give.

Pruning reports the fields it drops while it walks (instead of diffing a copy), and an
update skips the second prune-and-default after admission when it cannot change anything.
Each shortcut is checked against the computation it replaces, on generated objects.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pyctrl._apiextensions.pruning import apply_defaults, prune, reapply_is_noop

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "default": {"size": 1},
            "properties": {
                "size": {"type": "integer", "default": 1},
                "color": {"type": "string", "nullable": True},
                "ports": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"port": {"type": "integer"}, "name": {"type": "string"}},
                    },
                },
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {
                        "known": {"type": "object", "properties": {"a": {"type": "integer"}}}
                    },
                },
                "closed": {"type": "object", "additionalProperties": False},
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {
                        "spec": {"type": "object", "properties": {"x": {"type": "string"}}}
                    },
                },
            },
        },
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    },
}

KEYS = st.sampled_from(
    (
        *("spec", "status", "size", "color", "ports", "port", "name", "labels", "free", "known"),
        *("a", "closed", "template", "metadata", "apiVersion", "kind", "extra", "x", "ready"),
        "junk",
    )
)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=25,
)
OBJECTS = st.dictionaries(KEYS, VALUES, max_size=5)


def _reference_dropped(before: Any, after: Any, prefix: str = "") -> list[str]:
    """The paths of ``before`` missing from ``after``: how dropped fields were found before."""
    out: list[str] = []
    if isinstance(before, dict) and isinstance(after, dict):
        for key, value in before.items():
            path = f"{prefix}.{key}" if prefix else key
            if key not in after:
                out.append(path)
            else:
                out.extend(_reference_dropped(value, after[key], path))
    elif isinstance(before, list) and isinstance(after, list):
        for i, (b, a) in enumerate(zip(before, after, strict=False)):
            out.extend(_reference_dropped(b, a, f"{prefix}[{i}]"))
    return out


def _without_embedded(schema: dict[str, Any]) -> dict[str, Any]:
    plain = copy.deepcopy(schema)
    del plain["properties"]["spec"]["properties"]["template"]
    return plain


PLAIN = _without_embedded(SCHEMA)


@settings(max_examples=300, deadline=None)
@given(OBJECTS)
def test_prune_reports_the_fields_a_comparison_finds(obj: dict[str, Any]) -> None:
    """prune(unknown=...) lists the dropped paths, in order, that diffing a copy would list."""
    for schema in (SCHEMA, PLAIN):
        expected = copy.deepcopy(obj)
        prune(expected, schema)
        reported: list[str] = []
        pruned = copy.deepcopy(obj)
        prune(pruned, schema, unknown=reported)
        assert pruned == expected
        assert reported == _reference_dropped(obj, pruned)


def test_prune_reports_nested_unknown_fields() -> None:
    """Unknown fields are reported with their full path, list indexes included."""
    obj = {
        "spec": {"ports": [{"port": 1, "extra": 2}], "bogus": 1, "free": {"kept": 1}},
        "junk": True,
    }
    unknown: list[str] = []
    prune(obj, PLAIN, unknown=unknown)
    assert unknown == ["spec.ports[0].extra", "spec.bogus", "junk"]
    assert obj == {"spec": {"ports": [{"port": 1}], "free": {"kept": 1}}}


def _prune_and_default(obj: dict[str, Any], schema: dict[str, Any]) -> None:
    prune(obj, schema)
    apply_defaults(obj, schema)


@settings(max_examples=300, deadline=None)
@given(OBJECTS)
def test_second_pass_is_a_no_op_where_it_is_skipped(obj: dict[str, Any]) -> None:
    """Where reapply_is_noop holds, pruning and defaulting twice equals doing it once."""
    assert reapply_is_noop(PLAIN)
    once = copy.deepcopy(obj)
    _prune_and_default(once, PLAIN)
    twice = copy.deepcopy(once)
    _prune_and_default(twice, PLAIN)
    assert twice == once


def test_embedded_resources_need_the_second_pass() -> None:
    """A schema with embedded resources (whose metadata is coerced) always gets it."""
    assert not reapply_is_noop(SCHEMA)


def test_an_unpruned_default_needs_the_second_pass() -> None:
    """A default holding a field the schema does not know is pruned by a second pass."""
    schema = copy.deepcopy(PLAIN)
    schema["properties"]["spec"]["default"] = {"size": 1, "unknown": True}
    assert not reapply_is_noop(schema)
    obj: dict[str, Any] = {}
    _prune_and_default(obj, schema)
    again = copy.deepcopy(obj)
    _prune_and_default(again, schema)
    assert again != obj


def test_a_default_with_a_removable_null_needs_the_second_pass() -> None:
    """A default carrying a null the schema does not allow is cleaned by a second pass."""
    schema = copy.deepcopy(PLAIN)
    schema["properties"]["status"]["default"] = {"ready": None}
    assert not reapply_is_noop(schema)
