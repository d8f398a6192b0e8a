"""``pyctrl generate``: admission policies written with the other manifests, checked first."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import yaml

from tests.helm import helm_path
from tests.kubectl import kubectl_path

from .conftest import OPERATOR_MODULE, read_tree
from .test_packaging import _key, _objects, _run

if TYPE_CHECKING:
    from .conftest import Workspace

POLICIES = """
from kubernetes_asyncio.client import V1ConfigMap, V1Deployment
from pyctrl.policy import (
    Binding, MutatingPolicy, ParamRef, ValidatingPolicy, Validation, at_most, in_range, param,
    required, set_default,
)

size_rules = ValidatingPolicy(
    name="gadget-size",
    for_=Gadget,
    validations=[in_range("spec.size", 1, 10), Validation({rule!r}, message="size is even")],
)
replicas_limit = ValidatingPolicy(
    name="replicas-limit",
    for_=V1Deployment,
    params=V1ConfigMap,
    validations=[at_most("spec.replicas", param("data.maxReplicas", as_int=True))],
    bindings=[
        Binding(
            param_ref=ParamRef(name="replicas-limit", namespace="gadget-system"),
            validation_actions=("Warn", "Audit"),
            namespace_selector={{"matchLabels": {{"limits": "on"}}}},
        )
    ],
)
size_default = MutatingPolicy(
    name="gadget-size-default", for_=Gadget, mutations=[set_default("spec.size", 3)]
)
operator = Operator(
    name="gadget", types=[Gadget], setup=setup, policies=[size_rules, replicas_limit, size_default]
)
"""


def _module(workspace: Workspace, rule: str = "object.spec.size % 2 == 0") -> None:
    source = OPERATOR_MODULE.replace("{group}", "gadgets.example.com")
    source = source.replace('operator = Operator(name="gadget", types=[Gadget], setup=setup)\n', "")
    workspace.module("gadgets", source + POLICIES.format(rule=rule))


def test_generate_writes_the_policies_their_bindings_and_kustomizations(
    workspace: Workspace,
) -> None:
    """config/policy/ holds each policy and binding; config/default installs it."""
    _module(workspace)
    result = workspace.invoke("generate", "gadgets:operator")
    assert result.exit_code == 0, result.output
    tree = read_tree(workspace.root / "config")
    objects = list(yaml.safe_load_all(tree["policy/policies.yaml"]))
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ValidatingAdmissionPolicy", "gadget-size"),
        ("ValidatingAdmissionPolicyBinding", "gadget-size-binding"),
        ("ValidatingAdmissionPolicy", "replicas-limit"),
        ("ValidatingAdmissionPolicyBinding", "replicas-limit-binding"),
        ("MutatingAdmissionPolicy", "gadget-size-default"),
        ("MutatingAdmissionPolicyBinding", "gadget-size-default-binding"),
    ]
    size, _, limit, limit_binding, default, _ = objects
    assert size["spec"]["matchConstraints"] == {
        "resourceRules": [
            {
                "apiGroups": ["gadgets.example.com"],
                "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": ["gadgets"],
                "scope": "Namespaced",
            }
        ]
    }
    assert size["spec"]["validations"][1] == {
        "expression": "object.spec.size % 2 == 0",
        "message": "size is even",
    }
    assert limit["spec"]["paramKind"] == {"apiVersion": "v1", "kind": "ConfigMap"}
    assert limit_binding["spec"] == {
        "policyName": "replicas-limit",
        "paramRef": {
            "name": "replicas-limit",
            "namespace": "gadget-system",
            "parameterNotFoundAction": "Deny",
        },
        "matchResources": {"namespaceSelector": {"matchLabels": {"limits": "on"}}},
        "validationActions": ["Warn", "Audit"],
    }
    assert default["spec"]["mutations"][0]["patchType"] == "ApplyConfiguration"
    assert yaml.safe_load(tree["policy/kustomization.yaml"])["resources"] == ["policies.yaml"]
    assert "../policy" in yaml.safe_load(tree["default/kustomization.yaml"])["resources"]


def test_the_params_editor_role_names_the_bound_params(workspace: Workspace) -> None:
    """rbac/ gains a ClusterRole editing exactly the ConfigMap the binding names."""
    _module(workspace)
    assert workspace.invoke("generate", "rbac", "gadgets:operator").exit_code == 0
    role = yaml.safe_load((workspace.root / "config/rbac/policy_params_role.yaml").read_text())
    assert role["metadata"]["name"] == "gadget-policy-params-editor"
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": ["replicas-limit"],
            "verbs": ["get", "list", "watch", "update", "patch", "delete"],
        },
    ]


def test_the_installer_and_the_chart_carry_the_policies(workspace: Workspace) -> None:
    """install.yaml and the Helm chart's templates hold the same policy objects."""
    _module(workspace)
    assert workspace.invoke("generate", "installer", "gadgets:operator").exit_code == 0
    installed = list(yaml.safe_load_all((workspace.root / "dist/install.yaml").read_text()))
    kinds = [o["kind"] for o in installed]
    assert kinds.count("ValidatingAdmissionPolicy") == 2
    assert kinds.count("MutatingAdmissionPolicyBinding") == 1
    assert workspace.invoke("generate", "helm", "gadgets:operator").exit_code == 0
    chart = read_tree(workspace.root / "dist/chart")
    assert "name: gadget-size-default" in chart["templates/policy_policies.yaml"]


def test_check_reports_a_changed_rule(workspace: Workspace) -> None:
    """`generate --check` finds the policy file stale after a rule changes."""
    _module(workspace)
    assert workspace.invoke("generate", "gadgets:operator").exit_code == 0
    assert workspace.invoke("generate", "--check", "gadgets:operator").exit_code == 0
    _module(workspace, rule="object.spec.size % 2 == 1")
    sys.modules.pop("gadgets", None)  # the command imports the edited module afresh
    result = workspace.invoke("generate", "--check", "gadgets:operator")
    assert result.exit_code == 1
    assert "stale: config/policy/policies.yaml (differs)" in result.stdout


def test_a_type_error_fails_generation_naming_the_rule(workspace: Workspace) -> None:
    """A rule reading a field the kind lacks stops generate with the policy and rule named."""
    _module(workspace, rule="object.spec.sise % 2 == 0")
    result = workspace.invoke("generate", "gadgets:operator")
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    first = result.stderr.splitlines()[0]
    assert first.startswith("error: cannot render the manifests of gadgets:operator: PolicyError: ")
    assert (
        "policy \"gadget-size\" validations[1]: undefined field 'sise' (line 1, column 12, "
        "for gadgets.example.com/v1 Gadget)"
    ) in first
    assert " | object.spec.sise % 2 == 0" in result.stderr
    assert not (workspace.root / "config").exists()


def test_generate_policy_writes_only_the_policies(workspace: Workspace) -> None:
    """`generate policy` writes config/policy/ and nothing else."""
    _module(workspace)
    result = workspace.invoke("generate", "policy", "gadgets:operator")
    assert result.exit_code == 0, result.output
    assert sorted(read_tree(workspace.root / "config")) == [
        "policy/kustomization.yaml",
        "policy/policies.yaml",
    ]


def test_kustomize_and_helm_render_the_installers_policies(workspace: Workspace) -> None:
    """`kubectl kustomize config/default` and `helm template` give install.yaml's objects."""
    _module(workspace)
    for what in ("all", "installer", "helm"):
        result = workspace.invoke("generate", what, "gadgets:operator")
        assert result.exit_code == 0, result.output
    installer = _objects((workspace.root / "dist/install.yaml").read_text())
    built = _objects(_run(kubectl_path(), "kustomize", str(workspace.root / "config/default")))
    assert built == installer
    rendered = _objects(_run(helm_path(), "template", "gadget", str(workspace.root / "dist/chart")))
    assert sorted(rendered, key=_key) == sorted(installer, key=_key)
    assert ("MutatingAdmissionPolicy", "gadget-size-default") in {_key(o) for o in rendered}
