"""Webhooks for any kind, end to end: built-in kinds, Unstructured, sub-resources, raw handlers.

A Manager registers the webhooks through the public builder; the embedded API server
gets the generated configurations (`Environment.install_webhooks`) and calls them on
writes from kubectl and from pyctrl's client, as a cluster does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest
from kubernetes_asyncio.client import Configuration, V1Container, V1Deployment, V1Pod
from pydantic import Field

from pyctrl.builder import webhook_managed_by
from pyctrl.client import RESTClient
from pyctrl.crd import crd_for
from pyctrl.envtest import Environment
from pyctrl.errors import APIError, ForbiddenError, InvalidError
from pyctrl.manager import Manager
from pyctrl.meta import GroupVersionKind, KubeModel
from pyctrl.resource import CustomResource, Unstructured
from pyctrl.testing import running
from pyctrl.webhook import (
    AdmissionRequest,
    AdmissionResponse,
    InvalidObjectError,
    Rule,
    Server,
    WebhookOptions,
    allowed,
    current_request,
    denied,
    register_admission,
)
from tests.kubectl import Kubectl
from tests.manager.conftest import options

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

INJECT = "example.com/inject-sidecar"


class SidecarInjector:
    """Adds a ``proxy`` container to a Pod (a Pod-mutating webhook on a built-in kind)."""

    async def default(self, obj: V1Pod) -> None:
        containers = obj.spec.containers
        if not any(c.name == "proxy" for c in containers):
            containers.append(V1Container(name="proxy", image="envoyproxy/envoy:v1.31"))


class DeploymentPolicy:
    """Refuses more than 5 replicas; warns when a Deployment has no app label."""

    async def validate_create(self, obj: V1Deployment) -> list[str] | None:
        return self._check(obj)

    async def validate_update(self, old: V1Deployment, new: V1Deployment) -> list[str] | None:
        return self._check(new)

    async def validate_delete(self, obj: V1Deployment) -> list[str] | None:
        return None

    @staticmethod
    def _check(obj: V1Deployment) -> list[str] | None:
        warnings = [] if (obj.metadata.labels or {}).get("app") else ["metadata.labels.app unset"]
        replicas = obj.spec.replicas or 0
        if replicas > 5:
            raise InvalidObjectError(f"spec.replicas {replicas} is over 5", warnings=warnings)
        return warnings or None


CONFIGMAP = GroupVersionKind("", "v1", "ConfigMap")


class ConfigMapKeys:
    """An Unstructured ConfigMap may not hold a ``password`` key; defaults ``owner``."""

    async def default(self, obj: Unstructured) -> None:
        obj.set_nested(current_request().user_info.username, "metadata", "annotations", "owner")

    async def validate_create(self, obj: Unstructured) -> list[str] | None:
        if "password" in (obj.get_nested("data") or {}):
            raise InvalidObjectError("data.password: Forbidden: use a Secret")
        return None

    async def validate_update(self, old: Unstructured, new: Unstructured) -> list[str] | None:
        return await self.validate_create(new)

    async def validate_delete(self, obj: Unstructured) -> list[str] | None:
        return None


class GizmoSpec(KubeModel):
    size: int = 1


class GizmoStatus(KubeModel):
    phase: str = ""


class Gizmo(CustomResource, group="test.pyctrl.dev", version="v1"):
    """A custom resource with a status sub-resource."""

    spec: GizmoSpec = Field(default_factory=GizmoSpec)
    status: GizmoStatus = Field(default_factory=GizmoStatus)


class GizmoPhases:
    """Only known phases; the request's sub-resource is recorded for the test."""

    def __init__(self) -> None:
        self.subresources: list[str] = []

    async def validate_create(self, obj: Gizmo) -> list[str] | None:
        return None

    async def validate_update(self, old: Gizmo, new: Gizmo) -> list[str] | None:
        self.subresources.append(current_request().sub_resource)
        if new.status.phase not in ("", "Ready", "Failed"):
            raise InvalidObjectError(f"status.phase: Unsupported value: {new.status.phase!r}")
        return None

    async def validate_delete(self, obj: Gizmo) -> list[str] | None:
        return None


class ProtectedNamespaces:
    """A raw handler: refuses the DELETE of a Namespace labelled ``protected=true``."""

    def __init__(self) -> None:
        self.requests: list[AdmissionRequest] = []

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        self.requests.append(request)
        labels = ((request.old_object or {}).get("metadata") or {}).get("labels") or {}
        if labels.get("protected") == "true":
            return denied(f"namespace {request.name} is protected", code=403)
        return allowed("namespace deleted")


class EvictionGuard:
    """A raw handler on ``pods/eviction``: records evictions, refuses them when told to."""

    def __init__(self) -> None:
        self.requests: list[AdmissionRequest] = []
        self.refuse = False

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        self.requests.append(request)
        if self.refuse:
            return denied(f"critical pods stay: {request.name}")
        return allowed()


@dataclass
class Cluster:
    """The API server, the manager's client, kubectl and the handlers' state."""

    env: Environment
    manager: Manager
    kubectl: Kubectl
    phases: GizmoPhases
    namespaces: ProtectedNamespaces
    evictions: EvictionGuard


def setup_webhooks(
    manager: Manager,
    phases: GizmoPhases,
    namespaces: ProtectedNamespaces,
    evictions: EvictionGuard,
) -> None:
    """Register every webhook of this file through the public API."""
    (
        webhook_managed_by(manager)
        .for_(V1Pod)
        .with_defaulter(
            SidecarInjector(),
            WebhookOptions(
                object_selector={"matchLabels": {INJECT: "true"}},
                failure_policy="Fail",
                timeout_seconds=5,
                reinvocation_policy="IfNeeded",
            ),
        )
        .with_defaulter_custom_path("/inject-sidecar")
        .complete()
    )
    (
        webhook_managed_by(manager)
        .for_(V1Deployment)
        .with_validator(DeploymentPolicy(), WebhookOptions(operations=["CREATE", "UPDATE"]))
        .complete()
    )
    (
        webhook_managed_by(manager)
        .for_(Unstructured, CONFIGMAP)
        .with_defaulter(
            ConfigMapKeys(),
            WebhookOptions(namespace_selector={"matchLabels": {"policy": "on"}}),
        )
        .with_validator(
            ConfigMapKeys(),
            WebhookOptions(namespace_selector={"matchLabels": {"policy": "on"}}),
        )
        .complete()
    )
    (
        webhook_managed_by(manager)
        .for_(Gizmo)
        .with_validator(phases, WebhookOptions(subresources=["status"], match_policy="Exact"))
        .complete()
    )
    register_admission(
        manager.webhook_server,
        "/guard-evictions",
        evictions,
        options=WebhookOptions(
            rules=[Rule(["CREATE"], [""], ["v1"], ["pods/eviction"], scope="Namespaced")]
        ),
    )
    register_admission(
        manager.webhook_server,
        "/protect-namespaces",
        namespaces,
        options=WebhookOptions(
            rules=[Rule(["DELETE"], [""], ["v1"], ["namespaces"], scope="Cluster")],
            failure_policy="Ignore",
        ),
    )


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with Environment(crds=[crd_for(Gizmo)]) as env:
        manager = Manager(
            env.config,
            options(webhook_server=Server(host="127.0.0.1", port=0, cert_dir=env.webhook_cert_dir)),
        )
        phases, namespaces, evictions = GizmoPhases(), ProtectedNamespaces(), EvictionGuard()
        setup_webhooks(manager, phases, namespaces, evictions)
        async with running(manager):
            await env.install_webhooks(manager.webhook_server)
            kubectl = Kubectl(env.kubeconfig_path, tmp_path / "kubectl-cache", "default")
            yield Cluster(env, manager, kubectl, phases, namespaces, evictions)


def pod(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
    }


def deployment(name: str, replicas: int, labels: dict[str, str] | None = None) -> dict[str, Any]:
    selector = {"run": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": selector},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            },
        },
    }


pytestmark = pytest.mark.kubectl


async def test_a_pod_created_with_kubectl_gets_its_sidecar(cluster: Cluster) -> None:
    """A labelled Pod applied with kubectl is stored with the injected container."""
    await cluster.kubectl("apply", "-f", "-", stdin=pod("web", {INJECT: "true"}))
    stored = await cluster.kubectl.json("pod", "web")
    assert [c["name"] for c in stored["spec"]["containers"]] == ["app", "proxy"]


async def test_the_object_selector_keeps_other_pods_untouched(cluster: Cluster) -> None:
    """A Pod without the label is not sent to the webhook: its containers are as written."""
    await cluster.kubectl("apply", "-f", "-", stdin=pod("plain", {}))
    stored = await cluster.kubectl.json("pod", "plain")
    assert [c["name"] for c in stored["spec"]["containers"]] == ["app"]


async def test_a_denied_deployment_prints_the_message_and_warnings(cluster: Cluster) -> None:
    """kubectl shows the webhook's denial message and its warnings, and stores nothing."""
    run = await cluster.kubectl("apply", "-f", "-", stdin=deployment("big", 9), check=False)
    assert run.code != 0
    assert (
        'The request is invalid: error when creating "STDIN": admission webhook '
        '"vdeployment-v1.apps" denied the request: spec.replicas 9 is over 5'
    ) in run.err
    assert "Warning: metadata.labels.app unset" in run.err
    missing = await cluster.kubectl("get", "deployment", "big", check=False)
    assert "NotFound" in missing.err


async def test_an_allowed_deployment_gets_the_warning_only(cluster: Cluster) -> None:
    """An allowed write still relays the validator's warnings to kubectl."""
    run = await cluster.kubectl("apply", "-f", "-", stdin=deployment("small", 2))
    assert "Warning: metadata.labels.app unset" in run.err
    quiet = await cluster.kubectl("apply", "-f", "-", stdin=deployment("labelled", 2, {"app": "x"}))
    assert "Warning" not in quiet.err


async def test_unstructured_webhooks_apply_in_selected_namespaces_only(cluster: Cluster) -> None:
    """Unstructured ConfigMap webhooks default and deny only in namespaces the selector picks."""
    client = cluster.manager.client
    await cluster.kubectl("create", "namespace", "guarded")
    await cluster.kubectl("label", "namespace", "guarded", "policy=on")
    secret = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"password": "x"}}
    with pytest.raises(InvalidError, match=r"data\.password: Forbidden: use a Secret"):
        await client.create(
            Unstructured({**secret, "metadata": {"name": "a", "namespace": "guarded"}})
        )
    created = await client.create(
        Unstructured({**secret, "metadata": {"name": "a", "namespace": "default"}})
    )
    assert "owner" not in created.annotations
    fine = await client.create(
        Unstructured(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "b", "namespace": "guarded"},
                "data": {"user": "x"},
            }
        )
    )
    assert fine.annotations["owner"] == "admin"


async def test_status_updates_reach_a_validator_that_asks_for_them(cluster: Cluster) -> None:
    """With subresources=["status"], a status update is validated and may be denied."""
    client = cluster.manager.client
    gizmo = await client.create(
        Gizmo.model_validate({"metadata": {"name": "g", "namespace": "default"}})
    )
    gizmo.status.phase = "Ready"
    gizmo = await client.status().update(gizmo)
    gizmo.status.phase = "Exploded"
    with pytest.raises(APIError, match=r"status\.phase: Unsupported value: 'Exploded'"):
        await client.status().update(gizmo)
    assert cluster.phases.subresources == ["status", "status"]
    gizmo.spec.size = 3
    gizmo.status.phase = "Ready"
    await client.update(gizmo)
    assert cluster.phases.subresources[-1] == ""


async def test_a_raw_handler_guards_namespace_deletes(cluster: Cluster) -> None:
    """The raw handler gets the whole DELETE request of a Namespace and may refuse it."""
    await cluster.kubectl("create", "namespace", "keep")
    await cluster.kubectl("label", "namespace", "keep", "protected=true")
    await cluster.kubectl("create", "namespace", "scratch")
    refused = await cluster.kubectl("delete", "namespace", "keep", "--wait=false", check=False)
    assert refused.code != 0
    assert (
        'admission webhook "protect-namespaces.pyctrl.dev" denied the request: '
        "namespace keep is protected"
    ) in refused.err
    ok = await cluster.kubectl("delete", "namespace", "scratch", "--wait=false")
    assert "Warning: namespace deleted" in ok.err
    request = cluster.namespaces.requests[-1]
    assert (request.operation, request.name, request.kind.kind) == (
        "DELETE",
        "scratch",
        "Namespace",
    )
    assert request.old_object is not None
    assert request.old_object["metadata"]["name"] == "scratch"
    assert request.user_info.username == "admin"


async def test_generated_configurations_carry_every_option(cluster: Cluster) -> None:
    """Selectors, policies, timeouts, sub-resources and custom paths reach the stored configs."""
    stored = json.loads(
        (
            await cluster.kubectl(
                "get", "mutatingwebhookconfigurations,validatingwebhookconfigurations", "-o", "json"
            )
        ).out
    )
    hooks = {h["name"]: h for c in stored["items"] for h in c["webhooks"]}
    sidecar = hooks["mpod-v1.core.pyctrl.dev"]
    assert sidecar["clientConfig"]["url"].endswith("/inject-sidecar")
    assert sidecar["objectSelector"] == {"matchLabels": {INJECT: "true"}}
    assert (sidecar["timeoutSeconds"], sidecar["reinvocationPolicy"]) == (5, "IfNeeded")
    assert sidecar["rules"][0]["resources"] == ["pods"]
    assert hooks["vdeployment-v1.apps"]["rules"][0]["operations"] == ["CREATE", "UPDATE"]
    gizmo = hooks["vgizmo-v1.test.pyctrl.dev"]
    assert gizmo["rules"][0]["resources"] == ["gizmos", "gizmos/status"]
    assert gizmo["matchPolicy"] == "Exact"
    assert hooks["vconfigmap-v1.core.pyctrl.dev"]["namespaceSelector"] == {
        "matchLabels": {"policy": "on"}
    }
    raw = hooks["protect-namespaces.pyctrl.dev"]
    assert (raw["failurePolicy"], raw["rules"][0]["scope"]) == ("Ignore", "Cluster")


def test_bad_webhook_options_are_refused_with_the_reason() -> None:
    """Wrong option values and a raw handler without rules are refused, naming the problem."""
    with pytest.raises(ValueError, match="failure_policy 'Sometimes' is not one of Fail, Ignore"):
        WebhookOptions(failure_policy="Sometimes")
    with pytest.raises(ValueError, match=r"timeout_seconds must be within 1..30, got 60"):
        WebhookOptions(timeout_seconds=60)
    with pytest.raises(ValueError, match="operation 'CONNECT' is not one of"):
        WebhookOptions(operations=["CONNECT"])
    with pytest.raises(ValueError, match="needs WebhookOptions"):
        register_admission(Server(), "/x", ProtectedNamespaces(), options=WebhookOptions())
    manager = Manager(Configuration(host="https://cluster.invalid"))
    with pytest.raises(ValueError, match="needs the GroupVersionKind"):
        webhook_managed_by(manager).for_(Unstructured).with_validator(ConfigMapKeys()).complete()


async def test_a_forbidden_raw_denial_keeps_its_code(cluster: Cluster) -> None:
    """The raw handler's 403 reaches pyctrl's client as a ForbiddenError."""
    await cluster.kubectl("create", "namespace", "vault")
    await cluster.kubectl("label", "namespace", "vault", "protected=true")
    async with RESTClient(cluster.env.config) as rest:
        with pytest.raises(ForbiddenError, match="namespace vault is protected"):
            await rest.request("DELETE", "/api/v1/namespaces/vault")


async def test_the_review_names_the_user_who_made_the_request(cluster: Cluster) -> None:
    """A write with another user's token reaches the webhook with that user's userInfo."""
    admin = cluster.kubectl
    await admin("create", "namespace", "teams")
    await admin("label", "namespace", "teams", "policy=on")
    token = cluster.env.add_user("erin", ["team-a"])
    await admin(
        "create", "role", "cm-writer", "--verb=create,get", "--resource=configmaps", "-n", "teams"
    )
    await admin(
        "create", "rolebinding", "erin-cm", "--role=cm-writer", "--group=team-a", "-n", "teams"
    )
    await admin(
        f"--token={token}", "create", "configmap", "notes", "--from-literal=a=b", "-n", "teams"
    )
    stored = await admin.json("configmap", "notes", "-n", "teams")
    assert stored["metadata"]["annotations"]["owner"] == "erin"


async def test_a_raw_handler_sees_and_refuses_pod_evictions(cluster: Cluster) -> None:
    """An Eviction reaches the pods/eviction webhook as the object; a denial keeps the Pod."""
    await cluster.kubectl("apply", "-f", "-", stdin=pod("victim", {}))
    await cluster.kubectl("apply", "-f", "-", stdin=pod("critical", {"tier": "critical"}))

    async def evict(name: str) -> None:
        eviction = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": "default"},
        }
        async with RESTClient(cluster.env.config) as rest:
            path = f"/api/v1/namespaces/default/pods/{name}/eviction"
            response = await rest.request("POST", path, body=json.dumps(eviction).encode())
            assert response.status == 201

    await evict("victim")
    gone = await cluster.kubectl("get", "pod", "victim", check=False)
    assert "NotFound" in gone.err
    [request] = cluster.evictions.requests
    assert (request.operation, request.sub_resource, request.name) == (
        "CREATE",
        "eviction",
        "victim",
    )
    assert (request.kind.group, request.kind.kind) == ("policy", "Eviction")
    assert request.object is not None
    assert request.object["kind"] == "Eviction"
    cluster.evictions.refuse = True
    with pytest.raises(ForbiddenError, match="critical pods stay"):
        await evict("critical")
    await cluster.kubectl("get", "pod", "critical")
