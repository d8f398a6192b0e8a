"""`ValidatingPolicy.validator`: the typed rules' Python twins as a webhook validator."""

from __future__ import annotations

import pytest
from examples.mysrv.api import MySrv, MySrvSpec
from kubernetes_asyncio.client import (
    V1ConfigMap,
    V1Container,
    V1Deployment,
    V1DeploymentSpec,
    V1LabelSelector,
    V1ObjectMeta,
    V1PodSpec,
    V1PodTemplateSpec,
)

from pyctrl.meta import ObjectMeta
from pyctrl.policy import (
    Binding,
    ParamRef,
    PolicyError,
    ValidatingPolicy,
    Validation,
    at_most,
    immutable,
    in_range,
    param,
    required,
)
from pyctrl.webhook import InvalidObjectError

RULES = [required("spec.name"), in_range("spec.port", 1, 65535), immutable("spec.name")]


def _srv(name: str | None, port: int | None) -> MySrv:
    return MySrv(metadata=ObjectMeta(name="x", namespace="d"), spec=MySrvSpec(name=name, port=port))


async def test_a_failed_rule_denies_with_every_message() -> None:
    """Deny: the failed rules' messages, joined, are the denial."""
    validator = ValidatingPolicy(name="p", for_=MySrv, validations=RULES).validator()
    assert await validator.validate_create(_srv("web", 80)) is None
    with pytest.raises(InvalidObjectError) as denied:
        await validator.validate_create(_srv(None, 0))
    assert str(denied.value) == "spec.name is required; spec.port must be between 1 and 65535"
    with pytest.raises(InvalidObjectError, match=r"spec\.name is immutable"):
        await validator.validate_update(_srv("web", 80), _srv("api", 80))
    assert await validator.validate_delete(_srv(None, 0)) is None  # DELETE is not matched


async def test_a_warn_binding_turns_failures_into_warnings() -> None:
    """Warn: the messages come back as warnings and the write is allowed."""
    policy = ValidatingPolicy(
        name="p", for_=MySrv, validations=RULES, bindings=[Binding(validation_actions=("Warn",))]
    )
    warnings = await policy.validator().validate_create(_srv("web", 0))
    assert warnings == ["spec.port must be between 1 and 65535"]


async def test_params_come_from_the_given_function() -> None:
    """A param bound reads what ``params`` returns for each request."""
    limits = {"data": {"maxReplicas": "5"}}
    policy = ValidatingPolicy(
        name="replicas-limit",
        for_=V1Deployment,
        params=V1ConfigMap,
        validations=[at_most("spec.replicas", param("data.maxReplicas", as_int=True))],
        bindings=[Binding(param_ref=ParamRef(name="limits", namespace="default"))],
    )
    validator = policy.validator(params=lambda: limits)
    template = V1PodTemplateSpec(spec=V1PodSpec(containers=[V1Container(name="web")]))
    spec = V1DeploymentSpec(replicas=7, selector=V1LabelSelector(), template=template)
    deployment = V1Deployment(metadata=V1ObjectMeta(name="web"), spec=spec)
    with pytest.raises(InvalidObjectError, match=r"^spec\.replicas must be at most 5$"):
        await validator.validate_create(deployment)
    limits["data"]["maxReplicas"] = "10"
    assert await validator.validate_create(deployment) is None


def test_a_rule_without_python_cannot_become_a_webhook() -> None:
    """A hand-written CEL rule has no Python twin: the validator is refused, naming it."""
    policy = ValidatingPolicy(name="p", for_=MySrv, validations=[*RULES, Validation("true")])
    with pytest.raises(PolicyError, match=r'policy "p" validations\[3\]: written in CEL'):
        policy.validator()
    allowed = Validation("true", check=lambda evaluation: True)
    ValidatingPolicy(name="p", for_=MySrv, validations=[*RULES, allowed]).validator()
