"""The typed helpers: the CEL they write, and that it decides as their Python twin does."""

from __future__ import annotations

from typing import Any

import pytest
from examples.mysrv.api import MySrv
from kubernetes_asyncio.client import V1ConfigMap, V1Deployment

from pyctrl.policy import (
    Binding,
    Evaluation,
    ParamRef,
    ValidatingPolicy,
    Validation,
    at_least,
    at_most,
    immutable,
    in_range,
    label_required,
    matches,
    one_of,
    param,
    required,
    set_default,
)


def test_required_tests_every_level_of_the_path() -> None:
    """`required` checks each parent with has(), so an absent spec is not an error."""
    rule = required("spec.name")
    assert rule.expression == "has(object.spec) && has(object.spec.name)"
    assert rule.message == "spec.name is required"


def test_in_range_holds_when_the_field_is_absent() -> None:
    """`in_range` constrains a set field and lets an absent one pass."""
    rule = in_range("spec.port", 1, 65535)
    assert rule.expression == (
        "!(has(object.spec) && has(object.spec.port)) || "
        "(object.spec.port >= 1 && object.spec.port <= 65535)"
    )
    assert rule.message == "spec.port must be between 1 and 65535"
    assert at_least("spec.port", 1).message == "spec.port must be at least 1"


def test_snake_case_paths_become_wire_names() -> None:
    """A Python attribute path is written camelCase, as the wire names are."""
    rule = at_most("spec.max_replicas", 5)
    assert "object.spec.maxReplicas <= 5" in rule.expression
    assert rule.message == "spec.maxReplicas must be at most 5"


def test_a_param_bound_reads_params_and_says_its_value() -> None:
    """A bound from the params reads ``params`` and the message expression shows its value."""
    rule = at_most("spec.replicas", param("data.maxReplicas", as_int=True))
    assert rule.expression.endswith("(object.spec.replicas <= int(params.data.maxReplicas))")
    assert rule.message_expression == (
        "'spec.replicas must be ' + 'at most ' + string(int(params.data.maxReplicas))"
    )


def test_matches_one_of_immutable_and_labels_write_the_expected_cel() -> None:
    """Each helper's expression, as generated."""
    assert matches("spec.name", "^[a-z]+$").expression == (
        '!(has(object.spec) && has(object.spec.name)) || object.spec.name.matches("^[a-z]+$")'
    )
    assert one_of("spec.tier", ["gold", "silver"]).expression == (
        '!(has(object.spec) && has(object.spec.tier)) || object.spec.tier in ["gold", "silver"]'
    )
    assert immutable("spec.name").expression == (
        "request.operation != 'UPDATE' || ((has(object.spec) && has(object.spec.name)) == "
        "(has(oldObject.spec) && has(oldObject.spec.name)) && (!(has(object.spec) && "
        "has(object.spec.name)) || object.spec.name == oldObject.spec.name))"
    )
    assert label_required("team").expression == (
        'has(object.metadata.labels) && "team" in object.metadata.labels'
    )


def test_set_default_applies_only_when_absent() -> None:
    """`set_default` is an ApplyConfiguration that sets nothing when the field is there."""
    mutation = set_default("spec.port", 80)
    assert mutation.to_dict() == {
        "patchType": "ApplyConfiguration",
        "applyConfiguration": {
            "expression": "has(object.spec) && has(object.spec.port) ? Object{} : "
            "Object{spec: Object.spec{port: 80}}"
        },
    }


def test_a_path_that_cel_cannot_name_is_refused() -> None:
    """An empty segment or a name CEL cannot express is an error when the rule is made."""
    with pytest.raises(ValueError, match="not a dotted field path"):
        required("spec..name")
    with pytest.raises(ValueError, match="cannot be named in CEL"):
        required("spec.0port")


RULES = ValidatingPolicy(
    name="mysrv-rules",
    for_=MySrv,
    validations=[
        required("spec.name"),
        in_range("spec.port", 1, 65535),
        matches("spec.name", "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"),
        one_of("spec.port", [80, 443, 8080]),
        immutable("spec.name"),
        label_required("team"),
    ],
)


def _srv(name: str | None = None, port: Any = None, labels: dict[str, str] | None = None) -> Any:
    spec = {k: v for k, v in (("name", name), ("port", port)) if v is not None}
    meta: dict[str, Any] = {"name": "x", "namespace": "default"}
    if labels is not None:
        meta["labels"] = labels
    return {
        "apiVersion": "myapp.example.com/v1alpha1",
        "kind": "MySrv",
        "metadata": meta,
        "spec": spec,
    }


TEAM = {"team": "a"}
CASES: list[tuple[Any, Any, list[str]]] = [
    (_srv("web", 80, TEAM), None, []),
    (_srv("web", None, TEAM), None, []),
    (_srv(None, 80, TEAM), None, ["spec.name is required"]),
    (
        _srv("web", 0, TEAM),
        None,
        ["spec.port must be between 1 and 65535", "spec.port must be one of 80, 443, 8080"],
    ),
    (_srv("web", 9000, TEAM), None, ["spec.port must be one of 80, 443, 8080"]),
    (_srv("Web", 443, TEAM), None, ["spec.name must match ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"]),
    (_srv("web", 80), None, ["label team is required"]),
    (_srv("web", 80, {"other": "x"}), None, ["label team is required"]),
    (_srv("web", 80, TEAM), _srv("web", 443, TEAM), []),
    (_srv("api", 80, TEAM), _srv("web", 80, TEAM), ["spec.name is immutable"]),
    (
        _srv(None, 80, TEAM),
        _srv("web", 80, TEAM),
        ["spec.name is required", "spec.name is immutable"],
    ),
]


@pytest.mark.parametrize(("obj", "old", "expected"), CASES)
def test_the_cel_and_the_python_twin_decide_alike(obj: Any, old: Any, expected: list[str]) -> None:
    """Evaluated here, each helper's CEL fails exactly where its Python check does."""
    assert RULES.evaluate(obj, old) == expected
    operation = "UPDATE" if old is not None else "CREATE"
    evaluation = Evaluation(obj, old, operation=operation)
    python = [v.message for v in RULES.validations if v.check and not v.check(evaluation)]
    assert python == expected


def test_param_rules_evaluate_against_the_params() -> None:
    """A ConfigMap param's string is parsed, and the message says the limit."""
    policy = ValidatingPolicy(
        name="replicas-limit",
        for_=V1Deployment,
        params=V1ConfigMap,
        validations=[at_most("spec.replicas", param("data.maxReplicas", as_int=True))],
        bindings=[Binding(param_ref=ParamRef(name="limits", namespace="default"))],
    )
    limits = {"data": {"maxReplicas": "5"}}
    assert policy.evaluate({"spec": {"replicas": 7}}, params=limits) == [
        "spec.replicas must be at most 5"
    ]
    assert policy.evaluate({"spec": {"replicas": 5}}, params=limits) == []
    check = policy.validations[0].check
    assert check is not None
    assert not check(Evaluation({"spec": {"replicas": 7}}, params=limits))


def test_message_expression_wins_and_falls_back_to_message() -> None:
    """A message expression that evaluates is the message; else ``message``, else the rule."""
    policy = ValidatingPolicy(
        name="p",
        for_=MySrv,
        validations=[
            Validation(
                "false", message="static", message_expression="'port ' + string(object.spec.port)"
            ),
            Validation(
                "false", message="static", message_expression="object.metadata.annotations['none']"
            ),
            Validation("1 == 2"),
        ],
    )
    assert policy.evaluate(_srv("a", 80)) == ["port 80", "static", "failed expression: 1 == 2"]
