"""Built-in types over HTTP: create, get, list, watch and delete, and their server defaults.

Each type is exercised the same way (a create answering 201 with the defaults
kube-apiserver's ``SetDefaults_*`` functions fill in, a get returning it, a strict update
writing it back unchanged, a list, and a watch opened at the created resourceVersion that
reports its deletion), so the suite runs unchanged against a real cluster. The defaults
asserted are those of k8s.io/kubernetes/pkg/apis/{apps,batch,rbac,admissionregistration}/v1/
defaults.go.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
import pytest

from tests.envtest.conftest import unique

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.envtest.conftest import Kube

# Built-in kinds: the CRD-only server has none.
pytestmark = pytest.mark.needs_builtin_kinds

_IMAGE = "registry.example/app:1.0"
_RBAC = "rbac.authorization.k8s.io"


def _template(labels: dict[str, str], restart: str = "Always") -> dict[str, Any]:
    return {
        "metadata": {"labels": labels},
        "spec": {"restartPolicy": restart, "containers": [{"name": "app", "image": _IMAGE}]},
    }


def _check_pod_template(template: dict[str, Any], restart: str = "Always") -> None:
    """SetDefaults_PodSpec and SetDefaults_Container (pkg/apis/core/v1/defaults.go)."""
    spec = template["spec"]
    assert spec["restartPolicy"] == restart
    assert spec["dnsPolicy"] == "ClusterFirst"
    assert spec["schedulerName"] == "default-scheduler"
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["securityContext"] == {}
    container = spec["containers"][0]
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["terminationMessagePath"] == "/dev/termination-log"
    assert container["terminationMessagePolicy"] == "File"


def _webhook(name: str) -> dict[str, Any]:
    # Rules that match nothing the suite writes: the webhook is never called.
    return {
        "name": f"{name}.hooks.pyctrl.dev",
        "clientConfig": {"service": {"namespace": "default", "name": "hooks"}},
        "rules": [
            {
                "apiGroups": ["hooks.pyctrl.dev"],
                "apiVersions": ["v1"],
                "operations": ["CREATE"],
                "resources": ["nothings"],
            }
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }


def _check_webhook(obj: dict[str, Any], *, mutating: bool) -> None:
    """SetDefaults_{Mutating,Validating}Webhook, SetDefaults_Rule, SetDefaults_ServiceReference."""
    hook = obj["webhooks"][0]
    assert hook["failurePolicy"] == "Fail"
    assert hook["matchPolicy"] == "Equivalent"
    assert hook["namespaceSelector"] == {}
    assert hook["objectSelector"] == {}
    assert hook["timeoutSeconds"] == 10
    assert hook["rules"][0]["scope"] == "*"
    assert hook["clientConfig"]["service"]["port"] == 443
    if mutating:
        assert hook["reinvocationPolicy"] == "Never"
    else:
        assert "reinvocationPolicy" not in hook


@dataclass(frozen=True)
class Case:
    """One built-in type: where it lives, a valid object, and what the server fills in."""

    id: str
    api: str
    plural: str
    kind: str
    namespaced: bool
    body: Callable[[str, str], dict[str, Any]]
    """(name, namespace) -> the object to create."""
    check: Callable[[dict[str, Any]], None]
    """Asserts the defaults of the created object."""


def _service_account(name: str, ns: str) -> dict[str, Any]:
    return {"metadata": {"name": name}}


def _check_service_account(obj: dict[str, Any]) -> None:
    # No defaults, and no token secrets since Kubernetes 1.24.
    assert set(obj) == {"apiVersion", "kind", "metadata"}


def _replica_set(name: str, ns: str) -> dict[str, Any]:
    labels = {"app": name}
    return {"spec": {"selector": {"matchLabels": labels}, "template": _template(labels)}}


def _check_replica_set(obj: dict[str, Any]) -> None:
    assert obj["spec"]["replicas"] == 1
    _check_pod_template(obj["spec"]["template"])


def _stateful_set(name: str, ns: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "spec": {
            "serviceName": name,
            "selector": {"matchLabels": labels},
            "template": _template(labels),
        }
    }


def _check_stateful_set(obj: dict[str, Any]) -> None:
    spec = obj["spec"]
    assert spec["replicas"] == 1
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["revisionHistoryLimit"] == 10
    assert spec["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    }
    _check_pod_template(spec["template"])


def _daemon_set(name: str, ns: str) -> dict[str, Any]:
    labels = {"app": name}
    return {"spec": {"selector": {"matchLabels": labels}, "template": _template(labels)}}


def _check_daemon_set(obj: dict[str, Any]) -> None:
    spec = obj["spec"]
    assert spec["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
    }
    assert spec["revisionHistoryLimit"] == 10
    _check_pod_template(spec["template"])


def _job(name: str, ns: str) -> dict[str, Any]:
    return {"spec": {"template": _template({"app": name}, restart="Never")}}


def _check_job(obj: dict[str, Any]) -> None:
    spec = obj["spec"]
    uid = obj["metadata"]["uid"]
    name = obj["metadata"]["name"]
    assert spec["completions"] == 1
    assert spec["parallelism"] == 1
    assert spec["backoffLimit"] == 6
    assert spec["completionMode"] == "NonIndexed"
    assert spec["suspend"] is False
    assert spec["manualSelector"] is False
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed"
    # The job strategy generates the selector and the template labels it selects.
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    labels = spec["template"]["metadata"]["labels"]
    assert labels["app"] == name
    assert labels["batch.kubernetes.io/controller-uid"] == uid
    assert labels["batch.kubernetes.io/job-name"] == name
    # A Job without labels of its own takes its template's.
    assert obj["metadata"]["labels"] == labels
    _check_pod_template(spec["template"], restart="Never")


def _cron_job(name: str, ns: str) -> dict[str, Any]:
    return {
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {"spec": {"template": _template({"app": name}, restart="OnFailure")}},
        }
    }


def _check_cron_job(obj: dict[str, Any]) -> None:
    spec = obj["spec"]
    assert spec["concurrencyPolicy"] == "Allow"
    assert spec["suspend"] is False
    assert spec["successfulJobsHistoryLimit"] == 3
    assert spec["failedJobsHistoryLimit"] == 1
    _check_pod_template(spec["jobTemplate"]["spec"]["template"], restart="OnFailure")


_RULES = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]


def _role(name: str, ns: str) -> dict[str, Any]:
    return {"rules": _RULES}


def _check_role(obj: dict[str, Any]) -> None:
    assert obj["rules"] == _RULES


def _binding(name: str, ns: str) -> dict[str, Any]:
    # Neither roleRef nor the User subject names its API group: both are defaulted.
    return {
        "roleRef": {"kind": "ClusterRole", "name": "view"},
        "subjects": [
            {"kind": "User", "name": "alice"},
            {"kind": "ServiceAccount", "name": "robot", "namespace": ns or "default"},
        ],
    }


def _check_binding(obj: dict[str, Any]) -> None:
    """SetDefaults_RoleBinding / ClusterRoleBinding and SetDefaults_Subject."""
    assert obj["roleRef"] == {"apiGroup": _RBAC, "kind": "ClusterRole", "name": "view"}
    user, robot = obj["subjects"]
    assert user == {"apiGroup": _RBAC, "kind": "User", "name": "alice"}
    assert "apiGroup" not in robot


def _lease(name: str, ns: str) -> dict[str, Any]:
    return {"spec": {"holderIdentity": "pod-a", "leaseDurationSeconds": 15}}


def _check_lease(obj: dict[str, Any]) -> None:
    assert obj["spec"] == {"holderIdentity": "pod-a", "leaseDurationSeconds": 15}


def _core_event(name: str, ns: str) -> dict[str, Any]:
    return {
        "involvedObject": {"kind": "ConfigMap", "name": "cm", "namespace": ns, "apiVersion": "v1"},
        "reason": "Tested",
        "message": "something happened",
        "type": "Normal",
        "source": {"component": "pyctrl-tests"},
        "firstTimestamp": "2024-05-01T10:00:00Z",
        "lastTimestamp": "2024-05-01T10:00:00Z",
        "count": 1,
    }


def _check_core_event(obj: dict[str, Any]) -> None:
    assert obj["involvedObject"]["name"] == "cm"
    assert (obj["reason"], obj["message"], obj["type"], obj["count"]) == (
        "Tested",
        "something happened",
        "Normal",
        1,
    )


def _events_event(name: str, ns: str) -> dict[str, Any]:
    return {
        "eventTime": "2024-05-01T10:00:00.000000Z",
        "reportingController": "pyctrl.dev/tests",
        "reportingInstance": "tests-1",
        "action": "Testing",
        "reason": "Tested",
        "type": "Normal",
        "note": "something happened",
        "regarding": {"kind": "ConfigMap", "name": "cm", "namespace": ns, "apiVersion": "v1"},
    }


def _check_events_event(obj: dict[str, Any]) -> None:
    assert obj["regarding"]["name"] == "cm"
    assert (obj["note"], obj["reportingController"], obj["action"]) == (
        "something happened",
        "pyctrl.dev/tests",
        "Testing",
    )


def _webhook_configuration(name: str, ns: str) -> dict[str, Any]:
    return {"webhooks": [_webhook(name)]}


CASES = [
    Case(
        "serviceaccounts",
        "/api/v1",
        "serviceaccounts",
        "ServiceAccount",
        True,
        _service_account,
        _check_service_account,
    ),
    Case(
        "replicasets",
        "/apis/apps/v1",
        "replicasets",
        "ReplicaSet",
        True,
        _replica_set,
        _check_replica_set,
    ),
    Case(
        "statefulsets",
        "/apis/apps/v1",
        "statefulsets",
        "StatefulSet",
        True,
        _stateful_set,
        _check_stateful_set,
    ),
    Case(
        "daemonsets",
        "/apis/apps/v1",
        "daemonsets",
        "DaemonSet",
        True,
        _daemon_set,
        _check_daemon_set,
    ),
    Case("jobs", "/apis/batch/v1", "jobs", "Job", True, _job, _check_job),
    Case("cronjobs", "/apis/batch/v1", "cronjobs", "CronJob", True, _cron_job, _check_cron_job),
    Case("roles", f"/apis/{_RBAC}/v1", "roles", "Role", True, _role, _check_role),
    Case(
        "rolebindings",
        f"/apis/{_RBAC}/v1",
        "rolebindings",
        "RoleBinding",
        True,
        _binding,
        _check_binding,
    ),
    Case(
        "clusterroles",
        f"/apis/{_RBAC}/v1",
        "clusterroles",
        "ClusterRole",
        False,
        _role,
        _check_role,
    ),
    Case(
        "clusterrolebindings",
        f"/apis/{_RBAC}/v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        False,
        _binding,
        _check_binding,
    ),
    Case("leases", "/apis/coordination.k8s.io/v1", "leases", "Lease", True, _lease, _check_lease),
    Case("events", "/api/v1", "events", "Event", True, _core_event, _check_core_event),
    Case(
        "events.k8s.io",
        "/apis/events.k8s.io/v1",
        "events",
        "Event",
        True,
        _events_event,
        _check_events_event,
    ),
    Case(
        "mutatingwebhookconfigurations",
        "/apis/admissionregistration.k8s.io/v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        False,
        _webhook_configuration,
        lambda obj: _check_webhook(obj, mutating=True),
    ),
    Case(
        "validatingwebhookconfigurations",
        "/apis/admissionregistration.k8s.io/v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        False,
        _webhook_configuration,
        lambda obj: _check_webhook(obj, mutating=False),
    ),
]


async def _deleted_event(
    kube: Kube, collection: str, params: dict[str, str], delete: Callable[[], Any]
) -> dict[str, Any]:
    """Open a watch, run ``delete``, and return the DELETED event the watch reports."""
    async with kube.stream(collection, params=params) as resp:
        await delete()
        async with asyncio.timeout(10):
            async for line in resp.content:
                if not line.strip():
                    continue
                event: dict[str, Any] = orjson.loads(line)
                if event["type"] == "DELETED":
                    return event
    raise AssertionError("the watch ended without a DELETED event")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_builtin_type_lifecycle(kube: Kube, ns: str, case: Case) -> None:
    """Create (with defaults), get, put back, list, watch the deletion of, and delete a type."""
    name = unique(f"{case.plural[:10]}-")
    namespace = ns if case.namespaced else ""
    group_version = case.api.removeprefix("/api/").removeprefix("/apis/")
    collection = case.api + (f"/namespaces/{ns}" if case.namespaced else "") + f"/{case.plural}"
    body = {"apiVersion": group_version, "kind": case.kind, "metadata": {"name": name}}
    body.update({k: v for k, v in case.body(name, namespace).items() if k != "metadata"})

    status, created, headers = await kube.post(collection, body)
    assert status == 201, created
    assert "Warning" not in headers
    assert (created["apiVersion"], created["kind"]) == (group_version, case.kind)
    assert created["metadata"]["name"] == name
    assert created["metadata"].get("namespace", "") == namespace
    case.check(created)

    got = await kube.get_ok(f"{collection}/{name}")
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    case.check(got)
    # Everything the server filled in is a field of the type: the object goes back as is.
    status, replaced, _ = await kube.put(
        f"{collection}/{name}", got, params={"fieldValidation": "Strict"}
    )
    assert status == 200, replaced
    case.check(replaced)

    status, listing, _ = await kube.get(
        collection, params={"fieldSelector": f"metadata.name={name}"}
    )
    assert status == 200, listing
    assert listing["kind"] == f"{case.kind}List"
    assert [item["metadata"]["name"] for item in listing["items"]] == [name]

    async def delete() -> None:
        status, answer, _ = await kube.delete(
            f"{collection}/{name}", {"propagationPolicy": "Background"}
        )
        assert status == 200, answer

    params = {
        "resourceVersion": created["metadata"]["resourceVersion"],
        "fieldSelector": f"metadata.name={name}",
    }
    event = await _deleted_event(kube, collection, params, delete)
    assert event["object"]["kind"] == case.kind
    assert event["object"]["metadata"]["uid"] == created["metadata"]["uid"]
    status, _, _ = await kube.get(f"{collection}/{name}")
    assert status == 404


async def test_events_of_both_groups_share_storage(kube: Kube, ns: str) -> None:
    """An events.k8s.io Event reads back as a core Event with the fields renamed."""
    body = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "shared"}}
    body.update(_events_event("shared", ns))
    await kube.create_ok(f"/apis/events.k8s.io/v1/namespaces/{ns}/events", body)
    core = await kube.get_ok(f"/api/v1/namespaces/{ns}/events/shared")
    assert core["involvedObject"]["name"] == "cm"
    assert core["message"] == "something happened"
    assert core["reportingComponent"] == "pyctrl.dev/tests"
