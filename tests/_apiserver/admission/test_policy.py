"""ValidatingAdmissionPolicy decisions, refusals and the validation of policy objects."""

from __future__ import annotations

from typing import Any

import pytest

from pyctrl._apimachinery.merge_keys import builtin_root
from pyctrl._apiserver.admission.interfaces import AdmissionRequest
from pyctrl._apiserver.admission.plugin.policy.mutating import merge_apply
from pyctrl._apiserver.admission.plugin.policy.validating import (
    Decision,
    denial_error,
    evaluate,
    parse_policy,
)
from pyctrl._apiserver.registry.validation.admissionpolicy import (
    validate_binding,
    validate_mutating_policy,
    validate_validating_policy,
)
from pyctrl._apiserver.scheme.resources import builtin_types

RULES = {
    "matchPolicy": "Equivalent",
    "resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["*"]}],
}


def policy(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p"},
        "spec": {"failurePolicy": "Fail", "matchConstraints": RULES, **spec},
    }


def env(obj: dict[str, Any]) -> dict[str, Any]:
    return {"object": obj, "params": None, "variables": None}


@pytest.mark.parametrize(
    ("validation", "message"),
    [
        (
            {"expression": "object.n < 2", "messageExpression": "'n is ' + string(object.n)"},
            "n is 3",
        ),
        (
            {"expression": "object.n < 2", "messageExpression": "object.missing", "message": "m"},
            "m",
        ),
        ({"expression": "object.n < 2", "messageExpression": "'a\\nb'", "message": "m"}, "m"),
        ({"expression": " object.n < 2 "}, "failed expression: object.n < 2"),
    ],
)
def test_the_denial_message_falls_back_in_kube_apiserver_order(
    validation: dict[str, Any], message: str
) -> None:
    """messageExpression, else message, else the expression; multi-line results are dropped."""
    compiled = parse_policy(policy(validations=[validation]))
    (decision,) = evaluate(compiled, env({"n": 3})).denials
    assert decision.message == message
    assert decision.reason == "Invalid"


def test_a_runtime_error_follows_the_failure_policy() -> None:
    """An evaluation error is a denial under Fail and nothing under Ignore."""
    broken = [{"expression": "object.missing > 1"}]
    (decision,) = evaluate(parse_policy(policy(validations=broken)), env({})).denials
    assert (
        decision.message
        == "expression 'object.missing > 1' resulted in error: no such key: missing"
    )
    ignored = parse_policy(policy(validations=broken, failurePolicy="Ignore"))
    assert evaluate(ignored, env({})).denials == []


def test_audit_annotations_publish_strings_and_skip_null() -> None:
    """valueExpression strings become annotations; null and blank ones are left out."""
    compiled = parse_policy(
        policy(
            auditAnnotations=[
                {"key": "size", "valueExpression": "'n=' + string(object.n)"},
                {"key": "none", "valueExpression": "null"},
                {"key": "blank", "valueExpression": "'  '"},
            ]
        )
    )
    assert evaluate(compiled, env({"n": 3})).annotations == [("size", "n=3")]


def _request(plural: str, name: str) -> AdmissionRequest:
    rt = next(t for t in builtin_types() if t.plural == plural)
    return AdmissionRequest("u", "CREATE", rt, "", "ns", name, {}, None, False, {})


def test_the_refusal_carries_the_reason_and_its_code() -> None:
    """A Forbidden reason answers 403, the default Invalid 422, the message as the cause."""
    request = _request("deployments", "web")
    err = denial_error(request, "p", "b", Decision("too big"))
    message = "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: too big"
    assert (err.code, err.reason) == (422, "Invalid")
    assert err.message == f'deployments.apps "web" is forbidden: {message}'
    assert [c.message for c in err.causes] == [message]
    forbidden = denial_error(request, "p", "", Decision("no", "Forbidden"))
    assert (forbidden.code, forbidden.reason) == (403, "Forbidden")
    assert forbidden.message.endswith("ValidatingAdmissionPolicy 'p' denied request: no")


def test_policy_validation_names_each_bad_field() -> None:
    """Bad expressions, reasons and missing pieces are reported at their field paths."""
    causes = validate_validating_policy(
        policy(
            variables=[{"name": "v", "expression": "object."}],
            validations=[
                {"expression": "variables.v", "messageExpression": "1 +", "reason": "Nope"}
            ],
            matchConditions=[{"name": "c", "expression": "variables.w"}],
            auditAnnotations=[{"key": "k", "valueExpression": ""}],
        )
    )
    fields = [c.field for c in causes]
    assert fields == [
        "spec.variables[0].expression",
        "spec.matchConditions[0].expression",
        "spec.validations[0].messageExpression",
        "spec.validations[0].reason",
        "spec.auditAnnotations[0].valueExpression",
    ]
    assert "compilation failed: ERROR: <input>:1:" in causes[0].message


def test_a_policy_needs_rules_and_validations() -> None:
    """matchConstraints.resourceRules and validations (or auditAnnotations) are required."""
    causes = validate_validating_policy({"spec": {"failurePolicy": "Fail", "matchConstraints": {}}})
    assert [c.field for c in causes] == [
        "spec.matchConstraints.matchPolicy",
        "spec.matchConstraints.resourceRules",
        "spec.validations",
    ]


def test_binding_validation() -> None:
    """Actions are required, known and not Deny with Warn; a paramRef names or selects."""
    causes = validate_binding(
        {"spec": {"validationActions": ["Deny", "Warn", "Loud"], "paramRef": {"name": "x"}}},
        validating=True,
    )
    assert [c.field for c in causes] == [
        "spec.policyName",
        "spec.paramRef.parameterNotFoundAction",
        "spec.validationActions[2]",
        "spec.validationActions",
    ]


def test_mutating_policy_validation() -> None:
    """Each mutation needs a known patch type and an expression that compiles."""
    causes = validate_mutating_policy(
        policy(
            reinvocationPolicy="Never",
            mutations=[
                {
                    "patchType": "ApplyConfiguration",
                    "applyConfiguration": {"expression": "Object{"},
                },
                {"patchType": "Merge"},
            ],
        )
    )
    assert [c.field for c in causes] == [
        "spec.mutations[0].applyConfiguration.expression",
        "spec.mutations[1].patchType",
    ]


def test_apply_configurations_merge_lists_by_key() -> None:
    """Containers merge by name, maps field by field, atomic lists are replaced."""
    live = {
        "spec": {
            "containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}],
            "tolerations": [{"key": "x"}],
        }
    }
    applied = {
        "spec": {"containers": [{"name": "b", "image": "b:2"}], "tolerations": [{"key": "y"}]}
    }
    merged = merge_apply(live, applied, builtin_root("", "Pod"))
    assert merged["spec"]["containers"] == [
        {"name": "a", "image": "a:1"},
        {"name": "b", "image": "b:2"},
    ]
    assert merged["spec"]["tolerations"] == [{"key": "y"}]


def test_a_failed_json_patch_test_leaves_the_object_alone() -> None:
    """A JSONPatch whose test operation fails is not applied, and is no error."""
    from pyctrl._apiserver.admission.plugin.cel import compile_expression
    from pyctrl._apiserver.admission.plugin.policy.mutating import Mutation, apply_mutation

    rt = next(t for t in builtin_types() if t.plural == "configmaps")
    guarded = Mutation(
        "JSONPatch",
        compile_expression(
            "[JSONPatch{op: 'test', path: '/data/a', value: 'x'},"
            " JSONPatch{op: 'replace', path: '/data/a', value: 'y'}]",
            constructors=True,
        ),
    )
    obj = {"data": {"a": "z"}}
    assert apply_mutation(guarded, {}, obj, rt) == {"data": {"a": "z"}}
    assert apply_mutation(guarded, {}, {"data": {"a": "x"}}, rt) == {"data": {"a": "y"}}


def test_type_checking_covers_built_in_kinds() -> None:
    """A ConfigMap has no spec: a rule reading object.spec is reported in the status."""
    from pyctrl._apiserver.registry.admissionregistration.validatingadmissionpolicy import (
        ValidatingAdmissionPolicyStrategy,
    )
    from pyctrl._apiserver.storage.store import Store

    rt = next(t for t in builtin_types() if t.plural == "validatingadmissionpolicies")
    rules = [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]
    obj = {
        "metadata": {"name": "p", "generation": 1},
        "spec": {
            "matchConstraints": {"resourceRules": rules},
            "validations": [
                {"expression": "size(object.data) < 3"},
                {"expression": "object.spec.replicas < 3", "messageExpression": "'x'"},
            ],
        },
    }
    ValidatingAdmissionPolicyStrategy(Store(10)).prepare_for_create(rt, obj)
    assert obj["status"] == {
        "observedGeneration": 1,
        "typeChecking": {
            "expressionWarnings": [
                {
                    "fieldRef": "spec.validations[1].expression",
                    "warning": "/v1, Kind=ConfigMap: ERROR: <input>:1:7: undefined field 'spec'\n"
                    " | object.spec.replicas < 3\n | ......^\n",
                }
            ]
        },
    }
