"""pyctrl.status.ready: kstatus' readiness rules per kind, and the testing waiter."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio.client import V1Deployment, V1DeploymentStatus, V1ObjectMeta

from pyctrl.client import Client, MergePatch
from pyctrl.envtest import Environment
from pyctrl.resource import Unstructured
from pyctrl.status import Readiness, ready
from pyctrl.testing import wait_ready


def obj(api_version: str, kind: str, spec: Any = None, status: Any = None, **meta: Any) -> Any:
    out: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": meta}
    if spec is not None:
        out["spec"] = spec
    if status is not None:
        out["status"] = status
    return out


def cond(type_: str, status: str = "True", reason: str = "", **more: Any) -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, **more}


AVAILABLE = {
    "replicas": 2,
    "updatedReplicas": 2,
    "readyReplicas": 2,
    "availableReplicas": 2,
    "observedGeneration": 1,
    "conditions": [cond("Available"), cond("Progressing", reason="NewReplicaSetAvailable")],
}


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ({}, Readiness("InProgress", "LessReplicas", "Replicas: 0/2")),
        (
            {**AVAILABLE, "updatedReplicas": 1},
            Readiness("InProgress", "LessUpdated", "Updated: 1/2"),
        ),
        (
            {**AVAILABLE, "replicas": 3},
            Readiness("InProgress", "ExtraPods", "Pending termination: 1"),
        ),
        (
            {**AVAILABLE, "availableReplicas": 1},
            Readiness("InProgress", "LessAvailable", "Available: 1/2"),
        ),
        ({**AVAILABLE, "readyReplicas": 1}, Readiness("InProgress", "LessReady", "Ready: 1/2")),
        (
            {**AVAILABLE, "conditions": [cond("Available")]},
            Readiness("InProgress", "ReplicaSetNotAvailable", "ReplicaSet not Available"),
        ),
        (
            {**AVAILABLE, "conditions": [cond("Progressing", "False", "ProgressDeadlineExceeded")]},
            Readiness("Failed", "ProgressDeadlineExceeded", "Progress deadline exceeded"),
        ),
        (
            {**AVAILABLE, "observedGeneration": 0},
            Readiness(
                "InProgress",
                "LatestGenerationNotObserved",
                "Deployment generation is 1, but latest observed generation is 0",
            ),
        ),
    ],
)
def test_deployment_rules(status: dict[str, Any], expected: Readiness) -> None:
    """A Deployment is ready once every count reaches spec.replicas and it progressed."""
    deployment = obj(
        "apps/v1",
        "Deployment",
        {"replicas": 2, "progressDeadlineSeconds": 600},
        status,
        generation=1,
    )
    assert ready(deployment) == expected
    assert not ready(deployment)


def test_an_available_deployment_is_ready_in_every_form() -> None:
    """Typed, Unstructured and dict forms of the same Deployment are all ready."""
    data = obj("apps/v1", "Deployment", {"replicas": 2}, AVAILABLE, generation=1)
    assert ready(data)
    assert ready(Unstructured(data)).status == "Current"
    typed = V1Deployment(
        metadata=V1ObjectMeta(name="w", generation=1),
        status=V1DeploymentStatus(
            replicas=1,
            updated_replicas=1,
            ready_replicas=1,
            available_replicas=1,
            observed_generation=1,
        ),
    )
    assert ready(typed).reason == "DeploymentNotAvailable"


@pytest.mark.parametrize(
    ("data", "status", "reason"),
    [
        (
            obj("apps/v1", "StatefulSet", {"replicas": 2}, {"replicas": 2, "readyReplicas": 1}),
            "InProgress",
            "LessReady",
        ),
        (
            obj(
                "apps/v1",
                "StatefulSet",
                {"replicas": 1},
                {
                    "replicas": 1,
                    "readyReplicas": 1,
                    "currentReplicas": 1,
                    "currentRevision": "a",
                    "updateRevision": "b",
                },
            ),
            "InProgress",
            "RevisionMismatch",
        ),
        (obj("apps/v1", "StatefulSet", {"updateStrategy": {"type": "OnDelete"}}), "Current", ""),
        (
            obj(
                "apps/v1",
                "StatefulSet",
                {"replicas": 3, "updateStrategy": {"rollingUpdate": {"partition": 2}}},
                {"replicas": 3, "readyReplicas": 3, "updatedReplicas": 0},
            ),
            "InProgress",
            "PartitionRollout",
        ),
        (
            obj(
                "apps/v1",
                "ReplicaSet",
                {"replicas": 1},
                {"replicas": 1, "fullyLabeledReplicas": 1, "availableReplicas": 0},
            ),
            "InProgress",
            "LessAvailable",
        ),
        (
            obj("apps/v1", "ReplicaSet", {}, {"conditions": [cond("ReplicaFailure")]}),
            "InProgress",
            "ReplicaFailure",
        ),
        (
            obj("apps/v1", "DaemonSet", {}, {"observedGeneration": 1}, generation=1),
            "InProgress",
            "NoDesiredNumber",
        ),
        (obj("apps/v1", "DaemonSet", {}, {}, generation=1), "InProgress", "NoObservedGeneration"),
        (
            obj(
                "apps/v1",
                "DaemonSet",
                {},
                {
                    "observedGeneration": 1,
                    "desiredNumberScheduled": 2,
                    "currentNumberScheduled": 2,
                    "updatedNumberScheduled": 2,
                    "numberAvailable": 2,
                    "numberReady": 2,
                },
                generation=1,
            ),
            "Current",
            "",
        ),
        (obj("batch/v1", "Job", {}, {}), "InProgress", "JobNotStarted"),
        (obj("batch/v1", "Job", {}, {"startTime": "2026-01-01T00:00:00Z"}), "Current", ""),
        (obj("batch/v1", "Job", {}, {"conditions": [cond("Failed")]}), "Failed", "JobFailed"),
        (obj("v1", "PersistentVolumeClaim", {}, {"phase": "Pending"}), "InProgress", "NotBound"),
        (obj("v1", "PersistentVolumeClaim", {}, {"phase": "Bound"}), "Current", ""),
        (obj("v1", "Service", {"type": "LoadBalancer"}), "InProgress", "NoIPAssigned"),
        (obj("v1", "Service", {"type": "LoadBalancer", "clusterIP": "10.0.0.1"}), "Current", ""),
        (obj("v1", "Pod", {}, {"phase": "Running"}), "InProgress", "PodRunningNotReady"),
        (
            obj(
                "v1",
                "Pod",
                {},
                {
                    "phase": "Running",
                    "containerStatuses": [
                        {"name": "app", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
                    ],
                },
            ),
            "Failed",
            "ContainerCrashLooping",
        ),
        (obj("v1", "Pod", {}, {"phase": "Running", "conditions": [cond("Ready")]}), "Current", ""),
        (obj("v1", "Pod", {}, {"phase": "Pending"}), "InProgress", "PodPending"),
        (
            obj(
                "v1",
                "Pod",
                {},
                {
                    "phase": "Pending",
                    "conditions": [cond("PodScheduled", "False", "Unschedulable")],
                },
                creationTimestamp="2020-01-01T00:00:00Z",
            ),
            "Failed",
            "PodUnschedulable",
        ),
        (
            obj(
                "v1",
                "Pod",
                {},
                {
                    "phase": "Pending",
                    "conditions": [cond("PodScheduled", "False", "Unschedulable")],
                },
            ),
            "InProgress",
            "PodNotScheduled",
        ),
        (obj("v1", "ConfigMap"), "Current", ""),
        (
            obj("v1", "ConfigMap", deletionTimestamp="2026-01-01T00:00:00Z"),
            "Terminating",
            "Terminating",
        ),
    ],
)
def test_builtin_kind_rules(data: dict[str, Any], status: str, reason: str) -> None:
    """Each built-in kind follows kstatus' rule for it."""
    result = ready(data)
    assert (result.status, result.reason) == (status, reason), result


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (None, Readiness("Current", "", "Resource is current")),
        (
            {"conditions": [cond("Ready", "False", "Waiting", message="db down")]},
            Readiness("InProgress", "Waiting", "db down"),
        ),
        (
            {"conditions": [cond("Ready", observedGeneration=1)]},
            Readiness(
                "InProgress",
                "LatestGenerationNotObserved",
                "Ready describes generation 1, the object is at 2",
            ),
        ),
        (
            {"conditions": [cond("Ready", observedGeneration=2, message="up")]},
            Readiness("Current", "", "up"),
        ),
        (
            {"conditions": [cond("Stalled", reason="BadSpec", message="no")]},
            Readiness("Failed", "BadSpec", "no"),
        ),
        (
            {"conditions": [cond("Reconciling", reason="Scaling", message="2/3")]},
            Readiness("InProgress", "Scaling", "2/3"),
        ),
    ],
)
def test_custom_resources_follow_ready_and_observed_generation(
    status: dict[str, Any] | None, expected: Readiness
) -> None:
    """A custom resource's Ready condition decides, at the object's generation."""
    assert ready(obj("example.com/v1", "Thing", {}, status, generation=2)) == expected


async def test_wait_ready_waits_for_the_deployment_and_names_the_reason() -> None:
    """wait_ready returns once the Deployment is ready; a timeout says what was missing."""
    async with Environment() as env, Client.from_config(env.config) as client:
        deployment = Unstructured(
            obj(
                "apps/v1",
                "Deployment",
                {
                    "replicas": 1,
                    "selector": {"matchLabels": {"a": "b"}},
                    "template": {
                        "metadata": {"labels": {"a": "b"}},
                        "spec": {"containers": [{"name": "c", "image": "x"}]},
                    },
                },
                name="web",
                namespace="default",
            )
        )
        created = await client.create(deployment)
        with pytest.raises(
            AssertionError, match=r"not ready within 0.2 s \(InProgress: LessReplicas"
        ):
            await wait_ready(client, V1Deployment, "web", "default", within=0.2)
        status = {
            **AVAILABLE,
            "replicas": 1,
            "updatedReplicas": 1,
            "readyReplicas": 1,
            "availableReplicas": 1,
            "observedGeneration": created.generation,
        }
        await client.status().patch(created, MergePatch({"status": status}))
        live = await wait_ready(client, V1Deployment, "web", "default")
        assert live.status.available_replicas == 1
