"""Admission policies enforced by the embedded API server, driven by kubectl with YAML manifests.

Each test applies a ValidatingAdmissionPolicy or MutatingAdmissionPolicy and its binding
as raw YAML, then shows the verdict as kubectl reports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from pyctrl.envtest import Environment
from tests.kubectl import Kubectl

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

pytestmark = pytest.mark.kubectl

REPLICA_LIMIT = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replica-limit
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["configmaps"]
  validations:
  - expression: "!('replicas' in object.data) || int(object.data.replicas) <= 5"
    messageExpression: "'replicas must be at most 5, got ' + object.data.replicas"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: replica-limit-binding
spec:
  policyName: replica-limit
  validationActions: [{actions}]
"""


def configmap(name: str, replicas: str, labels: str = "{}") -> str:
    return f"""
apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}
  labels: {labels}
data:
  replicas: "{replicas}"
"""


@pytest.fixture
async def kubectl(tmp_path: Path) -> AsyncIterator[Kubectl]:
    async with Environment() as env:
        yield Kubectl(env.kubeconfig_path, tmp_path / "cache", "default")


async def test_policy_denies_with_its_message(kubectl: Kubectl) -> None:
    """A Deny binding refuses the write with 422 and the policy's message, as kubectl shows it."""
    await kubectl("apply", "-f", "-", stdin=REPLICA_LIMIT.format(actions="Deny"))
    run = await kubectl("apply", "-f", "-", stdin=configmap("big", "9"), check=False)
    assert run.code == 1
    # What kubectl prints for kube-apiserver's answer (422 Invalid, the message as a cause).
    assert run.err == (
        "The configmaps \"big\" is invalid: : ValidatingAdmissionPolicy 'replica-limit' with "
        "binding 'replica-limit-binding' denied request: replicas must be at most 5, got 9\n"
    )
    await kubectl("apply", "-f", "-", stdin=configmap("small", "3"))


async def test_warn_action_sends_a_warning_kubectl_prints(kubectl: Kubectl) -> None:
    """A Warn binding admits the write and kubectl prints the policy's warning."""
    await kubectl("apply", "-f", "-", stdin=REPLICA_LIMIT.format(actions="Warn"))
    run = await kubectl("apply", "-f", "-", stdin=configmap("big", "9"))
    assert (
        "Warning: Validation failed for ValidatingAdmissionPolicy 'replica-limit' with binding "
        "'replica-limit-binding': replicas must be at most 5, got 9" in run.err
    ), run.err
