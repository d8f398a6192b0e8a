"""Generated policies enforced by the embedded API server, as kubectl shows them.

The policies are made with `pyctrl.policy` and applied as the YAML ``pyctrl generate``
writes; kubectl then creates and edits objects under them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from examples.mysrv.api import MySrv
from kubernetes_asyncio.client import V1ConfigMap, V1Deployment

from pyctrl.crd import crd_for, to_yaml
from pyctrl.envtest import Environment
from pyctrl.policy import (
    Binding,
    MutatingPolicy,
    ParamRef,
    ValidatingPolicy,
    at_most,
    in_range,
    param,
    policy_manifests,
    required,
    set_default,
)
from tests.kubectl import Kubectl

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

pytestmark = pytest.mark.kubectl


@pytest.fixture
async def kubectl(tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with Environment(crds=[crd_for(MySrv)]) as env:
        yield Kubectl(env.kubeconfig_path, tmp_path / "cache", "default")


def _rules(*actions: str) -> ValidatingPolicy:
    return ValidatingPolicy(
        name="mysrv-rules",
        for_=MySrv,
        validations=[required("spec.name"), in_range("spec.port", 1, 65535)],
        bindings=[Binding(validation_actions=actions)],
    )


def _mysrv(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "myapp.example.com/v1alpha1",
        "kind": "MySrv",
        "metadata": {"name": name},
        "spec": spec,
    }


def _deployment(replicas: int) -> dict[str, Any]:
    labels = {"app": "web"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    }


async def _install(kubectl: Kubectl, *policies: ValidatingPolicy | MutatingPolicy) -> None:
    await kubectl("apply", "-f", "-", stdin=to_yaml(policy_manifests(policies)))


async def test_a_generated_policy_denies_with_its_message(kubectl: Kubectl) -> None:
    """A typed helper's message is what kubectl prints when the policy denies."""
    await _install(kubectl, _rules("Deny"))
    run = await kubectl(
        "apply", "-f", "-", stdin=_mysrv("web", {"name": "web", "port": 0}), check=False
    )
    assert run.code == 1
    assert run.err == (
        "The mysrvs \"web\" is invalid: : ValidatingAdmissionPolicy 'mysrv-rules' with binding "
        "'mysrv-rules-binding' denied request: spec.port must be between 1 and 65535\n"
    )
    await kubectl("apply", "-f", "-", stdin=_mysrv("web", {"name": "web", "port": 8080}))


async def test_a_warn_binding_admits_with_a_warning(kubectl: Kubectl) -> None:
    """Under Warn, the object is stored and kubectl prints the rule's message as a warning."""
    await _install(kubectl, _rules("Warn"))
    run = await kubectl("apply", "-f", "-", stdin=_mysrv("web", {"port": 80}))
    assert (
        "Warning: Validation failed for ValidatingAdmissionPolicy 'mysrv-rules' with binding "
        "'mysrv-rules-binding': spec.name is required"
    ) in run.err
    assert (await kubectl.json("mysrv", "web"))["spec"] == {"port": 80}


async def test_a_param_change_takes_effect_without_restart(kubectl: Kubectl) -> None:
    """Lowering the ConfigMap's limit makes the next write of the same Deployment fail."""
    limit = ValidatingPolicy(
        name="replicas-limit",
        for_=V1Deployment,
        params=V1ConfigMap,
        validations=[at_most("spec.replicas", param("data.maxReplicas", as_int=True))],
        bindings=[Binding(param_ref=ParamRef(name="replicas-limit", namespace="default"))],
    )
    await _install(kubectl, limit)
    await kubectl("create", "configmap", "replicas-limit", "--from-literal=maxReplicas=10")
    await kubectl("apply", "-f", "-", stdin=_deployment(7))
    await kubectl("patch", "configmap", "replicas-limit", "-p", '{"data":{"maxReplicas":"5"}}')
    run = await kubectl("apply", "-f", "-", stdin=_deployment(8), check=False)
    assert run.code == 1
    assert "denied request: spec.replicas must be at most 5\n" in run.err
    await kubectl("apply", "-f", "-", stdin=_deployment(4))


async def test_a_mutating_policy_sets_a_default(kubectl: Kubectl) -> None:
    """`set_default` fills in an absent port and leaves a given one alone."""
    await _install(
        kubectl,
        MutatingPolicy(name="mysrv-port", for_=MySrv, mutations=[set_default("spec.port", 80)]),
    )
    await kubectl("apply", "-f", "-", stdin=_mysrv("plain", {"name": "plain"}))
    await kubectl("apply", "-f", "-", stdin=_mysrv("custom", {"name": "custom", "port": 8080}))
    assert (await kubectl.json("mysrv", "plain"))["spec"] == {"name": "plain", "port": 80}
    assert (await kubectl.json("mysrv", "custom"))["spec"] == {"name": "custom", "port": 8080}
