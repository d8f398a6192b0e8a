"""Admission policies enforced by the embedded API server, driven by kubectl with YAML manifests.

Each test applies a ValidatingAdmissionPolicy or MutatingAdmissionPolicy and its binding
as raw YAML, then shows the verdict as kubectl reports it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pyctrl._apiserver.options import install
from pyctrl.envtest import Environment
from tests.kubectl import Kubectl

from .test_webhooks_support import dead_url

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = [pytest.mark.kubectl, pytest.mark.needs_builtin_kinds]

DOCS_PAGE = (Path(__file__).resolve().parents[2] / "docs" / "envtest-server.md").read_text()

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


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[tuple[Environment, Kubectl]]:
    async with Environment() as env:
        yield env, Kubectl(env.kubeconfig_path, tmp_path / "cache", "default")


@pytest.mark.embedded_only
async def test_audit_action_adds_the_validation_failure_annotation(
    cluster: tuple[Environment, Kubectl],
) -> None:
    """An Audit binding admits the write and records the audit annotation of the failure."""
    env, kubectl = cluster
    assert env.server is not None
    await kubectl("apply", "-f", "-", stdin=REPLICA_LIMIT.format(actions="Audit"))
    await kubectl("apply", "-f", "-", stdin=configmap("big", "9"))
    annotations = [a for r, a in env.server.policies.audit.records if r.name == "big"]
    assert annotations == [
        {
            "validation.policy.admission.k8s.io/validation_failure": (
                '[{"message":"replicas must be at most 5, got 9","policy":"replica-limit",'
                '"binding":"replica-limit-binding","expressionIndex":0,'
                '"validationActions":["Audit"]}]'
            )
        }
    ]


PARAM_LIMIT = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: param-limit
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["secrets"]
  validations:
  - expression: "size(object.data) <= int(params.data.max)"
    messageExpression: "'at most ' + params.data.max + ' keys'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: param-limit-binding
spec:
  policyName: param-limit
  validationActions: [Deny]
  paramRef: {name: limits, namespace: default, parameterNotFoundAction: Deny}
"""


def secret(name: str, keys: int) -> str:
    data = "".join(f"\n  k{i}: dg==" for i in range(keys))
    return f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\ndata:{data}\n"


async def test_a_param_change_takes_effect_without_restart(kubectl: Kubectl) -> None:
    """Editing the ConfigMap a binding refers to changes the next verdict at once."""
    await kubectl("apply", "-f", "-", stdin=PARAM_LIMIT)
    missing = await kubectl("apply", "-f", "-", stdin=secret("s0", 1), check=False)
    assert "failed to configure binding: no params found for policy binding with `Deny` " in (
        missing.err
    )
    await kubectl("create", "configmap", "limits", "--from-literal=max=1")
    denied = await kubectl("apply", "-f", "-", stdin=secret("s1", 2), check=False)
    assert "denied request: at most 1 keys" in denied.err, denied.err
    await kubectl("patch", "configmap", "limits", "-p", '{"data":{"max":"3"}}')
    await kubectl("apply", "-f", "-", stdin=secret("s1", 2))


DEFAULT_LABEL = """
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: default-tier
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["configmaps"]
  matchConditions:
  - name: no-tier
    expression: "!has(object.metadata.labels) || !('tier' in object.metadata.labels)"
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{labels: {'tier': 'standard'}}}"
  - patchType: JSONPatch
    jsonPatch:
      expression: >-
        [JSONPatch{op: 'add', path: '/metadata/annotations', value: {}},
        JSONPatch{op: 'add', path: '/metadata/annotations/' +
        jsonpatch.escapeKey('example.com/set-by'), value: 'policy'}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: default-tier-binding
spec:
  policyName: default-tier
"""


async def test_a_mutating_policy_sets_a_default(kubectl: Kubectl) -> None:
    """A MutatingAdmissionPolicy's apply configuration and JSON patch reach the stored object."""
    await kubectl("apply", "-f", "-", stdin=DEFAULT_LABEL)
    await kubectl("apply", "-f", "-", stdin=configmap("plain", "1"))
    stored = await kubectl.json("configmap", "plain")
    assert stored["metadata"]["labels"] == {"tier": "standard"}
    assert stored["metadata"]["annotations"] == {"example.com/set-by": "policy"}
    await kubectl("apply", "-f", "-", stdin=configmap("gold", "1", "{tier: gold}"))
    assert (await kubectl.json("configmap", "gold"))["metadata"]["labels"] == {"tier": "gold"}


async def test_binding_selectors_narrow_the_policy(kubectl: Kubectl) -> None:
    """A binding's objectSelector limits the policy to the labelled objects."""
    await kubectl("apply", "-f", "-", stdin=REPLICA_LIMIT.format(actions="Deny"))
    narrowed = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "replica-limit-binding"},
        "spec": {
            "policyName": "replica-limit",
            "validationActions": ["Deny"],
            "matchResources": {"objectSelector": {"matchLabels": {"checked": "yes"}}},
        },
    }
    await kubectl("apply", "-f", "-", stdin=narrowed)
    await kubectl("apply", "-f", "-", stdin=configmap("free", "9"))
    run = await kubectl(
        "apply", "-f", "-", stdin=configmap("held", "9", "{checked: 'yes'}"), check=False
    )
    assert "denied request: replicas must be at most 5, got 9" in run.err, run.err


BROKEN = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: broken
spec:
  failurePolicy: {policy}
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["configmaps"]
  validations:
  - expression: "object.data.missing == 'x'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: broken-binding
spec:
  policyName: broken
  validationActions: [Deny]
"""


async def test_failure_policy_decides_a_runtime_error(kubectl: Kubectl) -> None:
    """A CEL error denies under failurePolicy Fail and is ignored under Ignore."""
    await kubectl("apply", "-f", "-", stdin=BROKEN.format(policy="Fail"))
    run = await kubectl("apply", "-f", "-", stdin=configmap("a", "1"), check=False)
    assert (
        "denied request: expression 'object.data.missing == 'x'' resulted in error: "
        "no such key: missing" in run.err
    ), run.err
    await kubectl("apply", "-f", "-", stdin=BROKEN.format(policy="Ignore"))
    await kubectl("apply", "-f", "-", stdin=configmap("a", "1"))


async def test_invalid_cel_is_refused_naming_the_field(kubectl: Kubectl) -> None:
    """A policy whose expression does not compile is refused with 422 naming its field."""
    bad = REPLICA_LIMIT.format(actions="Deny").replace(
        "int(object.data.replicas) <= 5", "object.data.replicas <="
    )
    run = await kubectl("apply", "-f", "-", stdin=bad, check=False)
    assert 'The ValidatingAdmissionPolicy "replica-limit" is invalid' in run.err, run.err
    assert "spec.validations[0].expression: Invalid value:" in run.err
    assert "compilation failed: ERROR: <input>:1:" in run.err


WEBHOOK_WITH_CONDITION = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: conditional
webhooks:
- name: conditional.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig: {{url: "{url}"}}
  rules:
  - apiGroups: [""]
    apiVersions: ["v1"]
    operations: ["CREATE"]
    resources: ["configmaps"]
  matchConditions:
  - name: only-checked
    expression: "has(object.metadata.labels) && 'checked' in object.metadata.labels"
"""


@pytest.mark.embedded_only
async def test_webhook_match_conditions_skip_the_webhook(
    cluster: tuple[Environment, Kubectl],
) -> None:
    """A webhook whose matchConditions are false is not called; true ones call it."""
    env, kubectl = cluster
    assert env.server is not None
    install(env.server)
    await kubectl("apply", "-f", "-", stdin=WEBHOOK_WITH_CONDITION.format(url=dead_url()))
    await kubectl("apply", "-f", "-", stdin=configmap("skipped", "1"))
    run = await kubectl(
        "apply", "-f", "-", stdin=configmap("called", "1", "{checked: 'yes'}"), check=False
    )
    assert 'failed calling webhook "conditional.example.com"' in run.err, run.err


WIDGET_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
"""

WIDGET_POLICY = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: widget-size
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["example.com"]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["widgets"]
  validations:
  - expression: "object.spec.size <= 10"
  - expression: "object.spec.colour == 'red'"
"""


async def test_type_checking_warnings_reach_the_policy_status(kubectl: Kubectl) -> None:
    """An expression naming a field the kind's schema lacks is reported in status.typeChecking."""
    await kubectl("apply", "-f", "-", stdin=WIDGET_CRD)
    await kubectl("wait", "--for=condition=Established", "crd/widgets.example.com")
    await kubectl("apply", "-f", "-", stdin=WIDGET_POLICY)
    status = (await kubectl.json("validatingadmissionpolicy", "widget-size"))["status"]
    assert status["observedGeneration"] == 1
    assert status["typeChecking"] == {
        "expressionWarnings": [
            {
                "fieldRef": "spec.validations[1].expression",
                "warning": "example.com/v1, Kind=Widget: ERROR: <input>:1:12: undefined field "
                "'colour'\n | object.spec.colour == 'red'\n | ...........^\n",
            }
        ]
    }


AUTHZ_POLICY = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: reader-must-exist
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["configmaps"]
  variables:
  - name: reader
    expression: "authorizer.serviceAccount(object.metadata.namespace, 'reader')"
  validations:
  - expression: >-
      variables.reader.group('').resource('configmaps')
      .namespace(object.metadata.namespace).check('list').allowed()
    message: the reader service account cannot list configmaps here
  - expression: "namespaceObject.metadata.name == object.metadata.namespace"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: reader-must-exist-binding
spec:
  policyName: reader-must-exist
  validationActions: [Deny]
"""

READER_RBAC = """
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: configmap-reader}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: configmap-reader}
subjects:
- {kind: ServiceAccount, name: reader, namespace: default}
"""


async def test_the_authorizer_variable_follows_the_server_rbac(kubectl: Kubectl) -> None:
    """authorizer checks answer from the server's RBAC: a RoleBinding turns a denial around."""
    await kubectl("apply", "-f", "-", stdin=AUTHZ_POLICY)
    run = await kubectl("apply", "-f", "-", stdin=configmap("a", "1"), check=False)
    assert "the reader service account cannot list configmaps here" in run.err, run.err
    await kubectl("apply", "-f", "-", stdin=READER_RBAC)
    await kubectl("apply", "-f", "-", stdin=configmap("a", "1"))


async def test_the_documented_policy_refuses_as_documented(kubectl: Kubectl) -> None:
    """docs/envtest-server.md's policy, applied with kubectl, prints the documented refusal."""
    section = DOCS_PAGE.split("\n## Admission policies\n", 1)[1]
    manifest = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    shown = section.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    await kubectl("apply", "-f", "-", stdin=manifest)
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 9,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    }
    run = await kubectl("apply", "-f", "-", stdin=deployment, check=False)
    assert shown[0] == "$ kubectl apply -f big-deployment.yaml"
    assert run.err == shown[1] + "\n"


LIMIT_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: limits.example.com
spec:
  group: example.com
  scope: Cluster
  names: {plural: limits, singular: limit, kind: Limit, listKind: LimitList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              maxKeys: {type: integer}
"""

CRD_PARAM_POLICY = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: key-limit
spec:
  paramKind: {apiVersion: example.com/v1, kind: Limit}
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["configmaps"]
  validations:
  - expression: "size(object.data) <= params.spec.maxKeys"
    messageExpression: "'limit ' + params.metadata.name + ' allows ' + string(params.spec.maxKeys)"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: key-limit-binding
spec:
  policyName: key-limit
  validationActions: [Deny]
  paramRef:
    selector: {matchLabels: {enforced: "yes"}}
    parameterNotFoundAction: Allow
"""


def limit(name: str, max_keys: int, enforced: str) -> str:
    return (
        f"apiVersion: example.com/v1\nkind: Limit\nmetadata:\n  name: {name}\n"
        f"  labels: {{enforced: '{enforced}'}}\nspec: {{maxKeys: {max_keys}}}\n"
    )


async def test_custom_resource_params_selected_by_label(kubectl: Kubectl) -> None:
    """Each custom resource the paramRef selector matches is a parameter; none found: Allow."""
    await kubectl("apply", "-f", "-", stdin=LIMIT_CRD)
    await kubectl("wait", "--for=condition=Established", "crd/limits.example.com")
    await kubectl("apply", "-f", "-", stdin=CRD_PARAM_POLICY)
    await kubectl("apply", "-f", "-", stdin=configmap("free", "1"))
    await kubectl("apply", "-f", "-", stdin=limit("lax", 5, "yes"))
    await kubectl("apply", "-f", "-", stdin=limit("strict", 0, "no"))
    await kubectl("apply", "-f", "-", stdin=configmap("one", "1"))
    await kubectl("label", "limit", "strict", "enforced=yes", "--overwrite")
    run = await kubectl("apply", "-f", "-", stdin=configmap("two", "1"), check=False)
    assert "denied request: limit strict allows 0" in run.err, run.err


FAILING_MUTATION = """
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: bad-patch
spec:
  failurePolicy: Fail
  matchConstraints:
    namespaceSelector: {matchLabels: {team: a}}
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["configmaps"]
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: "[JSONPatch{op: 'remove', path: '/spec/nothing'}]"
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: bad-patch-binding
spec:
  policyName: bad-patch
"""


async def test_a_failing_mutation_refuses_in_selected_namespaces_only(kubectl: Kubectl) -> None:
    """A patch that does not apply refuses with 403 under Fail, only where the namespace matches."""
    await kubectl("apply", "-f", "-", stdin=FAILING_MUTATION)
    await kubectl("apply", "-f", "-", stdin=configmap("elsewhere", "1"))
    await kubectl("create", "namespace", "team-a")
    await kubectl("label", "namespace", "team-a", "team=a")
    run = await kubectl(
        "apply", "-n", "team-a", "-f", "-", stdin=configmap("here", "1"), check=False
    )
    # Reason Invalid (kubectl words it so) on a 403, with the policy error as the cause.
    assert run.err.startswith(
        "The configmaps \"here\" is invalid: : policy 'bad-patch' with binding "
        "'bad-patch-binding' denied request: JSONPath: remove operation does not apply"
    ), run.err


async def test_the_policy_kinds_are_served(kubectl: Kubectl) -> None:
    """Discovery lists the four kinds, cluster-scoped, in admissionregistration.k8s.io/v1."""
    run = await kubectl("api-resources", "--api-group=admissionregistration.k8s.io", "-o", "name")
    assert set(run.out.split()) >= {
        "validatingadmissionpolicies.admissionregistration.k8s.io",
        "validatingadmissionpolicybindings.admissionregistration.k8s.io",
        "mutatingadmissionpolicies.admissionregistration.k8s.io",
        "mutatingadmissionpolicybindings.admissionregistration.k8s.io",
    }
    await kubectl("apply", "-f", "-", stdin=DEFAULT_LABEL)
    listed = await kubectl(
        "get", "mutatingadmissionpolicies,mutatingadmissionpolicybindings", "-o", "name"
    )
    assert listed.out.split() == [
        "mutatingadmissionpolicy.admissionregistration.k8s.io/default-tier",
        "mutatingadmissionpolicybinding.admissionregistration.k8s.io/default-tier-binding",
    ]
    stored = await kubectl.json("mutatingadmissionpolicy", "default-tier")
    assert stored["spec"]["failurePolicy"] == "Fail"
    assert stored["spec"]["reinvocationPolicy"] == "Never"
    assert stored["spec"]["matchConstraints"]["matchPolicy"] == "Equivalent"


def mutating_policy(name: str, reinvocation: str, condition: str, labels: str) -> str:
    return f"""
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: {name}
spec:
  reinvocationPolicy: {reinvocation}
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["configmaps"]
  matchConditions:
  - name: when
    expression: "{condition}"
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{{metadata: Object.metadata{{labels: {labels}}}}}"
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: {name}
spec:
  policyName: {name}
"""


async def test_if_needed_policies_run_again_after_a_later_change(kubectl: Kubectl) -> None:
    """An IfNeeded policy sees what a later policy added; the result is validated again."""
    has_b = "has(object.metadata.labels) && 'b' in object.metadata.labels"
    await kubectl(
        "apply", "-f", "-", stdin=mutating_policy("a-first", "IfNeeded", has_b, "{'seen': 'b'}")
    )
    await kubectl(
        "apply", "-f", "-", stdin=mutating_policy("b-second", "Never", "true", "{'b': 'x'}")
    )
    await kubectl("apply", "-f", "-", stdin=configmap("c", "1"))
    labels = (await kubectl.json("configmap", "c"))["metadata"]["labels"]
    assert labels == {"b": "x", "seen": "b"}
    bad = mutating_policy("c-bad", "Never", "true", "{'bad': 'not a valid value!'}")
    await kubectl("apply", "-f", "-", stdin=bad)
    run = await kubectl("apply", "-f", "-", stdin=configmap("d", "1"), check=False)
    assert 'The ConfigMap "d" is invalid: metadata.labels: Invalid value: "not a valid value!"' in (
        run.err
    ), run.err


async def test_excluded_resource_names_are_not_checked(kubectl: Kubectl) -> None:
    """excludeResourceRules with resourceNames keep named objects out of the policy."""
    policy = REPLICA_LIMIT.format(actions="Deny").replace(
        '      resources: ["configmaps"]\n  validations:',
        '      resources: ["configmaps"]\n'
        "    excludeResourceRules:\n"
        '    - {apiGroups: [""], apiVersions: ["v1"], operations: ["*"], resources: ["configmaps"],'
        " resourceNames: [exempt]}\n"
        "  validations:",
    )
    await kubectl("apply", "-f", "-", stdin=policy)
    await kubectl("apply", "-f", "-", stdin=configmap("exempt", "9"))
    run = await kubectl("apply", "-f", "-", stdin=configmap("checked", "9"), check=False)
    assert "replicas must be at most 5, got 9" in run.err, run.err


TWO_VERSIONS_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo, listKind: GizmoList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
"""

V1_ONLY_POLICY = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: v1-only
spec:
  matchConstraints:
    matchPolicy: {policy}
    resourceRules:
    - apiGroups: ["example.com"]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["gizmos"]
  validations:
  - expression: "false"
    messageExpression: >-
      'seen as ' + request.kind.version + ', asked as ' + request.requestKind.version
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: v1-only
spec:
  policyName: v1-only
  validationActions: [Deny]
"""


def gizmo(name: str) -> str:
    return f"apiVersion: example.com/v2\nkind: Gizmo\nmetadata:\n  name: {name}\n"


async def test_match_policy_decides_whether_other_versions_match(kubectl: Kubectl) -> None:
    """Equivalent matches a v2 request to a v1 rule (seen as v1); Exact does not."""
    await kubectl("apply", "-f", "-", stdin=TWO_VERSIONS_CRD)
    await kubectl("wait", "--for=condition=Established", "crd/gizmos.example.com")
    await kubectl("apply", "-f", "-", stdin=V1_ONLY_POLICY.format(policy="Exact"))
    await kubectl("apply", "-f", "-", stdin=gizmo("exact"))
    await kubectl("apply", "-f", "-", stdin=V1_ONLY_POLICY.format(policy="Equivalent"))
    run = await kubectl("apply", "-f", "-", stdin=gizmo("equivalent"), check=False)
    assert "denied request: seen as v1, asked as v2" in run.err, run.err


AUDITED = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: audited
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["configmaps"]
  auditAnnotations:
  - key: replicas
    valueExpression: "'replicas=' + object.data.replicas"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: audited
spec:
  policyName: audited
  validationActions: [Audit]
"""


@pytest.mark.embedded_only
async def test_audit_annotations_are_published_under_the_policy_name(
    cluster: tuple[Environment, Kubectl],
) -> None:
    """An auditAnnotations entry becomes the request's '<policy>/<key>' annotation."""
    env, kubectl = cluster
    assert env.server is not None
    await kubectl("apply", "-f", "-", stdin=AUDITED)
    await kubectl("apply", "-f", "-", stdin=configmap("seen", "4"))
    annotations = [a for r, a in env.server.policies.audit.records if r.name == "seen"]
    assert annotations == [{"audited/replicas": "replicas=4"}]


async def test_kubectl_get_prints_kube_apiserver_columns(kubectl: Kubectl) -> None:
    """Policies list their validations and paramKind, bindings their policy and paramRef."""
    await kubectl("apply", "-f", "-", stdin=PARAM_LIMIT)
    policies = await kubectl("get", "validatingadmissionpolicies")
    assert policies.out.split("\n")[0].split() == ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"]
    assert policies.out.split("\n")[1].split()[:3] == ["param-limit", "1", "v1/ConfigMap"]
    bindings = await kubectl("get", "validatingadmissionpolicybindings")
    assert bindings.out.split("\n")[0].split() == ["NAME", "POLICYNAME", "PARAMREF", "AGE"]
    assert bindings.out.split("\n")[1].split()[:3] == [
        "param-limit-binding",
        "param-limit",
        "default/limits",
    ]
