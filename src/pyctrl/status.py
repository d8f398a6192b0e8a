"""Readiness: is an object done reconciling, and if not, why not (kstatus' rules).

``ready(obj)`` computes what sigs.k8s.io/cli-utils' ``kstatus`` computes, from the
object alone, for any object form (typed, `pyctrl.resource.Unstructured`, dict)::

    readiness = ready(deployment)
    if not readiness:
        print(readiness.reason, readiness.message)   # LessAvailable Available: 0/1

First the rules every kind shares: an object being deleted is ``Terminating``; one whose
``status.observedGeneration`` differs from ``metadata.generation`` is ``InProgress``
(``LatestGenerationNotObserved``); a ``Stalled=True`` condition is ``Failed`` and a
``Reconciling=True`` one ``InProgress``. Then the kind's own rules:

- Deployment: replicas, updated, available and ready counts reach ``spec.replicas``, no
  extra pods, ``Progressing`` (``NewReplicaSetAvailable``) and ``Available`` true;
  ``ProgressDeadlineExceeded`` is ``Failed``;
- StatefulSet (``OnDelete`` strategy is always current), ReplicaSet, DaemonSet: the
  replica counts of their status, partitions and revisions;
- Job: ``Complete`` or ``Suspended`` is current, ``Failed`` is failed, a started job is
  current, a job not started in progress;
- PersistentVolumeClaim: ``Bound``; Service: a ``LoadBalancer`` needs a cluster IP;
- Pod: ``Succeeded``/``Failed`` phases are done, ``Running`` needs ``Ready``,
  ``CrashLoopBackOff`` is failed, ``Pending`` is in progress (unschedulable for longer
  than `SCHEDULE_WINDOW`: failed);
- ConfigMap, Secret and other kinds without rules: current;
- custom resources: a ``Ready`` condition decides when there is one (its own
  ``observedGeneration``, when set, must be the object's generation).

`Readiness` is truthy when the status is ``Current``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from pyctrl.resource import Unstructured
from pyctrl.scheme import default_scheme

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from pyctrl.scheme import Scheme

__all__ = ["Readiness", "ready"]

Status = Literal["Current", "InProgress", "Failed", "Terminating"]

SCHEDULE_WINDOW = 15.0
"""Seconds a Pod may be unschedulable before it is ``Failed`` (kstatus' ``ScheduleWindow``)."""


@dataclass(frozen=True, slots=True)
class Readiness:
    """What `ready` found: kstatus' status, and a reason and message when not current.

    Attributes:
        status: ``Current`` (ready), ``InProgress``, ``Failed`` or ``Terminating``.
        reason: CamelCase reason, e.g. ``LessAvailable`` ("" when ready).
        message: What is missing, e.g. ``Available: 0/1``.
    """

    status: Status
    reason: str = ""
    message: str = ""

    def __bool__(self) -> bool:
        return self.status == "Current"


def _current(message: str) -> Readiness:
    return Readiness("Current", "", message)


def _progress(reason: str, message: str) -> Readiness:
    return Readiness("InProgress", reason, message)


def _failed(reason: str, message: str) -> Readiness:
    return Readiness("Failed", reason, message)


def _at(obj: Mapping[str, Any], path: str) -> Any:
    """The value at the dotted ``path``, or None."""
    value: Any = obj
    for key in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _int(obj: Mapping[str, Any], path: str, default: int) -> int:
    value = _at(obj, path)
    return default if value is None else int(value)


def _str(obj: Mapping[str, Any], path: str, default: str = "") -> str:
    value = _at(obj, path)
    return default if value is None else str(value)


def _conditions(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    status = obj.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    return [c for c in conditions or () if isinstance(c, dict)]


def _condition(obj: Mapping[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in _conditions(obj) if c.get("type") == type_), None)


def _is_true(obj: Mapping[str, Any], type_: str) -> bool:
    condition = _condition(obj, type_)
    return condition is not None and condition.get("status") == "True"


def _generic(obj: Mapping[str, Any]) -> Readiness | None:
    metadata = obj.get("metadata") or {}
    if metadata.get("deletionTimestamp"):
        return Readiness("Terminating", "Terminating", "Resource scheduled for deletion")
    generation = metadata.get("generation")
    observed = (obj.get("status") or {}).get("observedGeneration")
    if generation is not None and observed is not None and int(observed) != int(generation):
        kind = obj.get("kind", "Object")
        return _progress(
            "LatestGenerationNotObserved",
            f"{kind} generation is {generation}, but latest observed generation is {observed}",
        )
    for condition in _conditions(obj):
        if condition.get("status") != "True":
            continue
        if condition.get("type") == "Reconciling":
            return _progress(str(condition.get("reason") or "Reconciling"), _msg(condition))
        if condition.get("type") == "Stalled":
            return _failed(str(condition.get("reason") or "Stalled"), _msg(condition))
    return None


def _msg(condition: Mapping[str, Any]) -> str:
    return str(condition.get("message") or "")


def _replicas(
    spec: int, counts: list[tuple[str, str, int]], status_replicas: int
) -> Readiness | None:
    """The first count below ``spec`` (in order), else extra pods, else None."""
    for reason, label, count in counts:
        if spec > count:
            return _progress(reason, f"{label}: {count}/{spec}")
    if status_replicas > spec:
        return _progress("ExtraPods", f"Pending termination: {status_replicas - spec}")
    return None


def _deployment(obj: Mapping[str, Any]) -> Readiness:  # noqa: PLR0911 - kstatus' steps, in order
    progressing = _int(obj, "spec.progressDeadlineSeconds", 2**31 - 1) == 2**31 - 1
    available = False
    for condition in _conditions(obj):
        if condition.get("type") == "Progressing":
            if condition.get("reason") == "ProgressDeadlineExceeded":
                return _failed("ProgressDeadlineExceeded", "Progress deadline exceeded")
            if condition.get("status") == "True" and (
                condition.get("reason") == "NewReplicaSetAvailable"
            ):
                progressing = True
        elif condition.get("type") == "Available" and condition.get("status") == "True":
            available = True
    spec = _int(obj, "spec.replicas", 1)
    replicas = _int(obj, "status.replicas", 0)
    updated = _int(obj, "status.updatedReplicas", 0)
    found = _replicas(
        spec,
        [("LessReplicas", "Replicas", replicas), ("LessUpdated", "Updated", updated)],
        replicas,
    )
    if found is not None:
        return found
    available_count = _int(obj, "status.availableReplicas", 0)
    if updated > available_count:
        return _progress("LessAvailable", f"Available: {available_count}/{updated}")
    ready_count = _int(obj, "status.readyReplicas", 0)
    if spec > ready_count:
        return _progress("LessReady", f"Ready: {ready_count}/{spec}")
    if not progressing:
        return _progress("ReplicaSetNotAvailable", "ReplicaSet not Available")
    if not available:
        return _progress("DeploymentNotAvailable", "Deployment not Available")
    return _current(f"Deployment is available. Replicas: {replicas}")


def _statefulset(obj: Mapping[str, Any]) -> Readiness:  # noqa: PLR0911 - kstatus' steps
    if _str(obj, "spec.updateStrategy.type") == "OnDelete":
        return _current("StatefulSet is using the ondelete update strategy")
    spec = _int(obj, "spec.replicas", 1)
    replicas = _int(obj, "status.replicas", 0)
    found = _replicas(
        spec,
        [
            ("LessReplicas", "Replicas", replicas),
            ("LessReady", "Ready", _int(obj, "status.readyReplicas", 0)),
        ],
        replicas,
    )
    if found is not None:
        return found
    updated = _int(obj, "status.updatedReplicas", 0)
    partition = _int(obj, "spec.updateStrategy.rollingUpdate.partition", -1)
    if partition != -1:
        if updated < spec - partition:
            return _progress("PartitionRollout", f"updated: {updated}/{spec - partition}")
        return _current(f"Partition rollout complete. updated: {updated}")
    current = _int(obj, "status.currentReplicas", 0)
    if spec > current:
        return _progress("LessCurrent", f"current: {current}/{spec}")
    if _str(obj, "status.currentRevision") != _str(obj, "status.updateRevision"):
        return _progress("RevisionMismatch", "Waiting for updated revision to match current")
    return _current(f"All replicas scheduled as expected. Replicas: {replicas}")


def _replicaset(obj: Mapping[str, Any]) -> Readiness:
    if _is_true(obj, "ReplicaFailure"):
        return _progress("ReplicaFailure", "Replica Failure condition. Check Pods")
    spec = _int(obj, "spec.replicas", 1)
    replicas = _int(obj, "status.replicas", 0)
    found = _replicas(
        spec,
        [
            ("LessLabelled", "Labelled", _int(obj, "status.fullyLabeledReplicas", 0)),
            ("LessAvailable", "Available", _int(obj, "status.availableReplicas", 0)),
            ("LessReady", "Ready", _int(obj, "status.readyReplicas", 0)),
        ],
        replicas,
    )
    return _current(f"ReplicaSet is available. Replicas: {replicas}") if found is None else found


def _daemonset(obj: Mapping[str, Any]) -> Readiness:
    kind = "DaemonSet"
    if (obj.get("metadata") or {}).get("generation") is None:
        return _progress("NoGeneration", f"{kind} metadata.generation not found")
    if (obj.get("status") or {}).get("observedGeneration") is None:
        return _progress("NoObservedGeneration", f"{kind} status.observedGeneration not found")
    desired = _int(obj, "status.desiredNumberScheduled", -1)
    if desired == -1:
        return _progress("NoDesiredNumber", "Missing .status.desiredNumberScheduled")
    found = _replicas(
        desired,
        [
            ("LessCurrent", "Current", _int(obj, "status.currentNumberScheduled", 0)),
            ("LessUpdated", "Updated", _int(obj, "status.updatedNumberScheduled", 0)),
            ("LessAvailable", "Available", _int(obj, "status.numberAvailable", 0)),
            ("LessReady", "Ready", _int(obj, "status.numberReady", 0)),
        ],
        0,
    )
    if found is not None:
        return found
    return _current(f"All replicas scheduled as expected. Replicas: {desired}")


def _job(obj: Mapping[str, Any]) -> Readiness:
    parallelism = _int(obj, "spec.parallelism", 1)
    completions = _int(obj, "spec.completions", parallelism)
    succeeded = _int(obj, "status.succeeded", 0)
    failed = _int(obj, "status.failed", 0)
    if _is_true(obj, "Complete"):
        return _current(f"Job Completed. succeeded: {succeeded}/{completions}")
    if _is_true(obj, "Failed"):
        return _failed("JobFailed", f"Job Failed. failed: {failed}/{completions}")
    if _is_true(obj, "Suspended"):
        return _current("Job is suspended")
    if not _str(obj, "status.startTime"):
        return _progress("JobNotStarted", "Job not started")
    active = _int(obj, "status.active", 0)
    return _current(f"Job in progress. success:{succeeded}, active: {active}, failed: {failed}")


def _pvc(obj: Mapping[str, Any]) -> Readiness:
    phase = _str(obj, "status.phase", "unknown")
    if phase != "Bound":
        return _progress("NotBound", f"PVC is not Bound. phase: {phase}")
    return _current("PVC is Bound")


def _service(obj: Mapping[str, Any]) -> Readiness:
    if _str(obj, "spec.type", "ClusterIP") == "LoadBalancer" and not _str(obj, "spec.clusterIP"):
        return _progress("NoIPAssigned", "ClusterIP not set. Service type: LoadBalancer")
    return _current("Service is ready")


def _pod(obj: Mapping[str, Any]) -> Readiness:  # noqa: PLR0911 - one answer per phase
    phase = _str(obj, "status.phase")
    if phase == "Succeeded":
        return _current("Pod has completed successfully")
    if phase == "Failed":
        return _current("Pod has completed, but not successfully")
    if phase == "Running":
        if _is_true(obj, "Ready"):
            return _current("Pod is Ready")
        looping = [
            str(s.get("name"))
            for s in (obj.get("status") or {}).get("containerStatuses") or ()
            if ((s.get("state") or {}).get("waiting") or {}).get("reason") == "CrashLoopBackOff"
        ]
        if looping:
            message = f"Containers in CrashLoop state: {','.join(looping)}"
            return _failed("ContainerCrashLooping", message)
        return _progress("PodRunningNotReady", "Pod is running but is not Ready")
    if phase == "Pending":
        scheduled = _condition(obj, "PodScheduled")
        if scheduled and (scheduled.get("status"), scheduled.get("reason")) == (
            "False",
            "Unschedulable",
        ):
            if _age(obj) < SCHEDULE_WINDOW:
                return _progress("PodNotScheduled", "Pod has not been scheduled")
            return _failed("PodUnschedulable", "Pod could not be scheduled")
        return _progress("PodPending", "Pod is in the Pending phase")
    return _progress("PodNotObserved", "Pod phase not available")


def _age(obj: Mapping[str, Any]) -> float:
    """Seconds since ``metadata.creationTimestamp`` (0 when unknown)."""
    created = _str(obj, "metadata.creationTimestamp")
    if not created:
        return 0.0
    try:
        when = datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return (datetime.now(UTC) - when).total_seconds()


def _custom(obj: Mapping[str, Any]) -> Readiness:
    condition = _condition(obj, "Ready")
    if condition is None:
        return _current("Resource is current")
    generation = (obj.get("metadata") or {}).get("generation")
    observed = condition.get("observedGeneration")
    if generation is not None and observed is not None and int(observed) != int(generation):
        return _progress(
            "LatestGenerationNotObserved",
            f"Ready describes generation {observed}, the object is at {generation}",
        )
    if condition.get("status") == "True":
        return _current(_msg(condition) or "Resource is Ready")
    return _progress(str(condition.get("reason") or "NotReady"), _msg(condition))


_RULES: dict[str, Callable[[Mapping[str, Any]], Readiness]] = {
    "apps/Deployment": _deployment,
    "apps/StatefulSet": _statefulset,
    "apps/DaemonSet": _daemonset,
    "apps/ReplicaSet": _replicaset,
    "batch/Job": _job,
    "PersistentVolumeClaim": _pvc,
    "Service": _service,
    "Pod": _pod,
}
_ALWAYS_READY = frozenset({"ConfigMap", "Secret", "batch/CronJob", "policy/PodDisruptionBudget"})


def ready(obj: Any, *, scheme: Scheme | None = None) -> Readiness:
    """Whether ``obj`` is ready (kstatus' ``Current``), and why not; see the module docs.

    Args:
        obj: Any object form: a custom resource, a kubernetes-asyncio model,
            `pyctrl.resource.Unstructured` or a dict (its wire form).
        scheme: Serialises typed objects (default: the default scheme).
    """
    if isinstance(obj, Unstructured):
        data: Mapping[str, Any] = obj.object
    elif isinstance(obj, dict):
        data = obj
    else:
        data = (scheme or default_scheme()).to_dict(obj)
    generic = _generic(data)
    if generic is not None:
        return generic
    group = str(data.get("apiVersion") or "").rpartition("/")[0]
    kind = str(data.get("kind") or "")
    key = f"{group}/{kind}" if group else kind
    if key in _ALWAYS_READY:
        return _current("Resource is always ready")
    rule = _RULES.get(key)
    return rule(data) if rule is not None else _custom(data)
