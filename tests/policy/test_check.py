"""Type-checking: every expression compiled against the kinds' schemas, errors naming it."""

from __future__ import annotations

from typing import Any

import pytest
from examples.mysrv.api import MySrv
from kubernetes_asyncio.client import V1ConfigMap, V1CustomResourceDefinition, V1Deployment
from pydantic import Field

from pyctrl.meta import KubeModel
from pyctrl.policy import (
    AuditAnnotation,
    Binding,
    MatchCondition,
    MutatingPolicy,
    Mutation,
    ParamRef,
    PolicyError,
    ResourceRule,
    ValidatingPolicy,
    Validation,
    Variable,
)
from pyctrl.resource import CustomResource


class LimitsSpec(KubeModel):
    max_replicas: int = 3


class Limits(CustomResource, group="policy.example.com", version="v1", namespaced=False):
    spec: LimitsSpec = Field(default_factory=LimitsSpec)


def _policy(*validations: str, **options: Any) -> ValidatingPolicy:
    return ValidatingPolicy(
        name="replicas-limit",
        for_=options.pop("for_", V1Deployment),
        validations=[Validation(v) for v in validations],
        **options,
    )


def test_an_undefined_field_is_named_with_the_policy_and_the_rule() -> None:
    """The error says which policy, which validation, where, and for which kind."""
    with pytest.raises(PolicyError) as caught:
        _policy("object.spec.replicas <= 5", "object.spec.replica <= 5").check()
    assert str(caught.value) == (
        "policy \"replicas-limit\" validations[1]: undefined field 'replica' "
        "(line 1, column 12, for apps/v1 Deployment)\n"
        " | object.spec.replica <= 5\n"
        " | ...........^"
    )


def test_a_built_in_kinds_fields_are_typed() -> None:
    """Deployment's replicas is an int: comparing it with a string is refused."""
    with pytest.raises(
        PolicyError, match=r"no matching overload for '_<=_' applied to '\(int, string\)'"
    ):
        _policy("object.spec.replicas <= '5'").check()
    _policy(
        "object.spec.template.spec.containers.all(c, c.image.startsWith('registry.example.com/'))",
        "object.metadata.labels['app'] == object.metadata.name",
        "request.userInfo.username != 'system:anonymous' && !request.dryRun",
        "namespaceObject.metadata.name != 'kube-system'",
    ).check()


def test_a_validation_must_be_a_bool_and_a_message_expression_a_string() -> None:
    """Result types are checked as kube-apiserver checks them."""
    with pytest.raises(PolicyError, match=r"validations\[0\]: must evaluate to bool, not int"):
        _policy("object.spec.replicas").check()
    policy = ValidatingPolicy(
        name="p",
        for_=V1Deployment,
        validations=[Validation("true", message_expression="object.spec.replicas")],
    )
    with pytest.raises(
        PolicyError, match=r"validations\[0\].messageExpression: must evaluate to string"
    ):
        policy.check()


def test_variables_are_typed_in_order_and_named_when_wrong() -> None:
    """A variable's type is its expression's; a later one may use an earlier one."""
    variables = [
        Variable("replicas", "object.spec.replicas"),
        Variable("doubled", "variables.replicas * 2"),
    ]
    _policy("variables.doubled <= 10", variables=variables).check()
    with pytest.raises(PolicyError, match=r"validations\[0\]: undefined field 'tripled'"):
        _policy("variables.tripled <= 10", variables=variables).check()
    with pytest.raises(
        PolicyError, match=r"variables\[0\] \(replicas\): undefined field 'replica'"
    ):
        _policy("true", variables=[Variable("replicas", "object.spec.replica")]).check()
    with pytest.raises(PolicyError, match=r"found no matching overload for '_\+_'"):
        _policy("variables.replicas + 'x' == 'y'", variables=variables[:1]).check()


def test_match_conditions_and_audit_annotations_are_checked() -> None:
    """Match conditions must be bools; audit annotation values strings."""
    with pytest.raises(PolicyError, match=r"matchConditions\[0\]: must evaluate to bool"):
        _policy("true", match_conditions=[MatchCondition("c", "object.metadata.name")]).check()
    annotation = AuditAnnotation("replicas", "object.spec.replicas")
    with pytest.raises(PolicyError, match=r"auditAnnotations\[0\].valueExpression: must evaluate"):
        _policy("true", audit_annotations=[annotation]).check()


def test_params_are_typed_from_the_param_kind() -> None:
    """A custom resource's params have its schema; without params, ``params`` is null."""
    binding = Binding(param_ref=ParamRef(name="default"))
    _policy(
        "object.spec.replicas <= params.spec.maxReplicas", params=Limits, bindings=[binding]
    ).check()
    with pytest.raises(PolicyError, match="undefined field 'max'"):
        _policy(
            "object.spec.replicas <= params.spec.max", params=Limits, bindings=[binding]
        ).check()
    with pytest.raises(PolicyError, match="null_type"):
        _policy("object.spec.replicas <= params.spec.maxReplicas").check()
    _policy(
        "object.spec.replicas <= int(params.data['max'])", params=V1ConfigMap, bindings=[binding]
    ).check()


def test_each_kind_of_the_policy_is_checked() -> None:
    """A rule is checked for every kind matched: a field one of them lacks is refused."""
    with pytest.raises(PolicyError, match=r"for myapp\.example\.com/v1alpha1 MySrv"):
        _policy("object.spec.replicas > 0", for_=[V1Deployment, MySrv]).check()


def test_a_recursive_built_in_kind_is_dynamic() -> None:
    """A CustomResourceDefinition has no finite schema: its fields are not checked."""
    _policy("object.spec.anything == 1", for_=V1CustomResourceDefinition).check()


def test_untyped_rules_check_names_only() -> None:
    """Explicit resource rules without kinds: ``object`` is dynamic, names still checked."""
    rules = [ResourceRule(["example.com"], ["v1"], ["widgets"])]
    _policy("object.spec.anything > 1", for_=(), rules=rules).check()
    with pytest.raises(PolicyError, match="undeclared reference to 'obj'"):
        _policy("obj.spec.anything > 1", for_=(), rules=rules).check()
    # With a kind as well, the kind types the expressions.
    with pytest.raises(PolicyError, match="undefined field 'anything'"):
        _policy("object.spec.anything > 1", rules=rules).check()


def test_mutations_are_checked_inside_their_constructions() -> None:
    """The values in Object{...} are compiled against the schema."""
    policy = MutatingPolicy(
        name="m",
        for_=MySrv,
        mutations=[
            Mutation.apply_configuration("Object{spec: Object.spec{port: object.spec.prt}}")
        ],
    )
    with pytest.raises(PolicyError, match=r'policy "m" mutations\[0\]: undefined field \'prt\''):
        policy.check()


def test_declarations_are_checked_when_made() -> None:
    """Malformed policies and bindings fail at once, saying what is wrong."""
    with pytest.raises(ValueError, match="needs a param_ref"):
        _policy("true", params=Limits)
    with pytest.raises(ValueError, match="has a param_ref"):
        _policy("true", bindings=[Binding(param_ref=ParamRef(name="x"))])
    with pytest.raises(ValueError, match="both Deny and Warn"):
        Binding(validation_actions=("Deny", "Warn"))
    with pytest.raises(ValueError, match="matches nothing"):
        ValidatingPolicy(name="p", validations=[Validation("true")])
    with pytest.raises(ValueError, match="exactly one of name and selector"):
        ParamRef()
    with pytest.raises(ValueError, match="reason 'Teapot'"):
        Validation("true", reason="Teapot")
    with pytest.raises(ValueError, match="operation 'PATCH'"):
        _policy("true", operations=("PATCH",))


def test_a_json_patch_mutation_is_checked_and_written() -> None:
    """A JSONPatch mutation compiles in the policy environment and keeps its wire form."""
    patch = Mutation.json_patch(
        "has(object.metadata.labels) ? [] : "
        '[JSONPatch{op: "add", path: "/metadata/labels", value: {"team": object.spec.name}}]'
    )
    policy = MutatingPolicy(name="labels", for_=MySrv, mutations=[patch])
    [manifest, _binding] = policy.manifests()
    assert manifest["spec"]["mutations"] == [
        {"patchType": "JSONPatch", "jsonPatch": {"expression": patch.expression}}
    ]
    wrong = Mutation.json_patch('[JSONPatch{op: "add", path: "/x", value: object.spec.nam}]')
    with pytest.raises(PolicyError, match=r"mutations\[0\]: undefined field 'nam'"):
        MutatingPolicy(name="labels", for_=MySrv, mutations=[wrong]).check()
