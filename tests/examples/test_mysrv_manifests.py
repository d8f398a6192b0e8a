"""MySrv's checked-in files: generated manifests and samples.

The manifests under ``examples/mysrv/config`` are generated from the Python types and
setup; when they drift from what the code generates, the first test fails and says how
to regenerate them.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from examples.mysrv import operator
from examples.mysrv.api import MySrv
from examples.mysrv.webhooks import MySrvDefaulter, MySrvValidator

from .conftest import EXAMPLES

MYSRV = EXAMPLES / "mysrv"
CONFIG = MYSRV / "config"
REGENERATE = "python -m pyctrl.cli generate examples.mysrv:operator --out examples/mysrv/config"


def load(relative: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((CONFIG / relative).read_text()) if d]


async def test_checked_in_manifests_match_what_the_code_generates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every generated file is checked in, unchanged, and nothing stale is left beside them."""
    monkeypatch.delenv("ENABLE_WEBHOOKS", raising=False)
    rendered = await operator.render_manifests()
    on_disk = {
        str(path.relative_to(CONFIG)): path.read_text()
        for sub in ("crd", "rbac", "manager", "webhook", "prometheus", "default")
        for path in sorted((CONFIG / sub).glob("*.yaml"))
    }
    assert sorted(on_disk) == sorted(rendered), f"stale file list; regenerate: {REGENERATE}"
    for name, text in rendered.items():
        assert on_disk[name] == text, f"config/{name} is stale; regenerate: {REGENERATE}"


def test_the_crd_is_the_mysrv_type() -> None:
    """The CRD serves myapp.example.com/v1alpha1 MySrv, namespaced, with a status subresource."""
    [crd] = load("crd/mysrvs.myapp.example.com.yaml")
    spec = crd["spec"]
    assert (spec["group"], spec["names"]["kind"], spec["scope"]) == (
        "myapp.example.com",
        "MySrv",
        "Namespaced",
    )
    [version] = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}
    props = version["schema"]["openAPIV3Schema"]["properties"]
    assert set(props["spec"]["properties"]) == {"name", "port"}
    assert set(props["status"]["properties"]) == {
        "conditions",
        "observedGeneration",
        "availableReplicas",
        "url",
    }


def test_rbac_grants_only_what_the_controller_uses() -> None:
    """The ClusterRole lists exactly the verbs the controller needs, and no wildcard."""
    [role] = load("rbac/role.yaml")
    rules = {
        (group, resource): sorted(rule["verbs"])
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    full = sorted(["create", "delete", "get", "list", "patch", "update", "watch"])
    assert rules == {
        ("myapp.example.com", "mysrvs"): ["get", "list", "patch", "update", "watch"],
        ("myapp.example.com", "mysrvs/status"): ["get", "patch", "update"],
        ("myapp.example.com", "mysrvs/finalizers"): ["update"],
        ("apps", "deployments"): full,
        ("", "services"): full,
        ("", "events"): ["create", "patch"],
        ("events.k8s.io", "events"): ["create", "patch"],
    }


def test_the_manager_runs_with_leader_election_and_probes_as_non_root() -> None:
    """The manager Deployment runs the operator image with the usual flags, unprivileged."""
    namespace, deployment = load("manager/manager.yaml")
    assert namespace["metadata"]["name"] == "mysrv-system"
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["image"] == operator.image
    assert "--leader-elect" in container["args"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["serviceAccountName"] == "mysrv-controller-manager"


def test_both_webhooks_are_configured_for_mysrvs() -> None:
    """Mutating and validating webhooks for mysrvs, and the Pod injector with its selector."""
    documents = load("webhook/manifests.yaml")
    by_kind = {d["kind"]: d for d in documents}
    [pods, mutating] = by_kind["MutatingWebhookConfiguration"]["webhooks"]
    [validating] = by_kind["ValidatingWebhookConfiguration"]["webhooks"]
    assert mutating["clientConfig"]["service"]["path"] == "/mutate-myapp-example-com-v1alpha1-mysrv"
    assert validating["clientConfig"]["service"]["path"] == (
        "/validate-myapp-example-com-v1alpha1-mysrv"
    )
    assert mutating["rules"][0]["operations"] == ["CREATE", "UPDATE"]
    assert validating["rules"][0]["operations"] == ["CREATE", "UPDATE", "DELETE"]
    assert mutating["rules"][0]["resources"] == ["mysrvs"]
    assert pods["clientConfig"]["service"]["path"] == "/mutate--v1-pod"
    assert pods["objectSelector"] == {"matchLabels": {"myapp.example.com/inject-sidecar": "true"}}
    assert (pods["rules"][0]["apiGroups"], pods["rules"][0]["resources"]) == ([""], ["pods"])
    assert (pods["failurePolicy"], pods["sideEffects"], pods["timeoutSeconds"]) == (
        "Fail",
        "None",
        5,
    )


SAMPLES = {
    path.name: yaml.safe_load(path.read_text()) for path in (MYSRV / "samples").glob("*.yaml")
}


def test_there_are_samples_with_and_without_a_port() -> None:
    """The samples show both an explicit port and the default one."""
    ports = [sample["spec"].get("port") for sample in SAMPLES.values()]
    assert None in ports
    assert any(port is not None for port in ports)


@pytest.mark.parametrize("name", sorted(SAMPLES))
async def test_each_sample_passes_the_webhooks(name: str) -> None:
    """Each sample is a MySrv that the defaulting and validating webhooks accept as is."""
    sample = MySrv.model_validate(SAMPLES[name])
    await MySrvDefaulter().default(sample)
    assert await MySrvValidator().validate_create(sample) is None
