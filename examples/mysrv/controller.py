"""The MySrv controller: one reconcile brings the world in line with a MySrv.

For each MySrv, `MySrvReconciler` makes sure that

1. the MySrv carries the ``myapp.example.com/dns-record`` finalizer, before anything
   outside the cluster exists that would need cleaning up;
2. a Deployment and a Service of the MySrv's name exist, are controlled by it (owner
   references: the garbage collector deletes them with it, and their events wake this
   controller) and match the spec: whoever edits or deletes them, the next reconcile puts
   them back;
3. the external DNS record ``<name>.<namespace>.apps.example.com`` points at the Service;
4. ``status`` says what was observed: ``Available`` (from the Deployment's available
   replicas), ``DNSRegistered``, the generation it describes, and the Service's URL.

When the MySrv is deleted, the reconcile deletes the DNS record and then removes the
finalizer; the API server then lets the MySrv go, and the garbage collector its
Deployment and Service. What the controller decides is also told as Events
(``kubectl describe mysrv``).

Every step is idempotent and computed from what is, never from what the last reconcile
did, so a reconcile can be repeated, interrupted or skipped without harm.

The Deployment and the Service are `pyctrl.dependent.Dependent` resources of one
`pyctrl.dependent.Workflow` (`WORKFLOW`): their desired state is declared by
`deployment_for` and `service_for`, and the workflow applies them by server-side apply
as ``mysrv-operator``, writes nothing when they already match, and adds their readiness
(``DeploymentReady``, ``ServiceReady``, ``Ready``) to the MySrv's conditions.
`examples.mysrv.handwritten` is the same operator with the children written by hand
(``create_or_update``), as before pyctrl had workflows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubernetes_asyncio.client import (
    V1Container,
    V1ContainerPort,
    V1Deployment,
    V1DeploymentSpec,
    V1HTTPGetAction,
    V1LabelSelector,
    V1ObjectMeta,
    V1PodSpec,
    V1PodTemplateSpec,
    V1Probe,
    V1Service,
    V1ServicePort,
    V1ServiceSpec,
)

from examples.mysrv.api import AVAILABLE, DNS_REGISTERED, FINALIZER, MySrv, MySrvStatus
from examples.mysrv.webhooks import message, spec_errors
from pyctrl.client import MergePatch
from pyctrl.controllerutil import patch_add_finalizer, patch_remove_finalizer
from pyctrl.dependent import Dependent, Workflow, WorkflowError
from pyctrl.log import get_logger
from pyctrl.meta import Condition, find_status_condition, set_status_condition

if TYPE_CHECKING:
    from examples.mysrv.dns import DNSProvider
    from pyctrl.client import Client
    from pyctrl.recorder import EventRecorder

__all__ = [
    "APP_CONTAINER",
    "APP_IMAGE",
    "MANAGED_BY",
    "WORKFLOW",
    "ZONE",
    "MySrvReconciler",
    "deployment_for",
    "dns_name",
    "selector_labels",
    "service_for",
    "service_url",
]

APP_IMAGE = "registry.k8s.io/e2e-test-images/agnhost:2.53"
"""The image the Deployment runs: Kubernetes' test server, answering HTTP on any port."""

APP_CONTAINER = "app"
"""The name of the container the controller manages in the Deployment's pods."""

MANAGED_BY = "mysrv-operator"
"""The ``app.kubernetes.io/managed-by`` label of every object the controller creates."""

ZONE = "apps.example.com"
"""The DNS zone, outside the cluster, where each MySrv gets a record."""

_log = get_logger("mysrv")


def selector_labels(mysrv: MySrv) -> dict[str, str]:
    """The labels that select a MySrv's pods (fixed for its lifetime: selectors are immutable)."""
    return {
        "app.kubernetes.io/name": mysrv.spec.name or "",
        "app.kubernetes.io/instance": mysrv.metadata.name or "",
    }


def service_url(mysrv: MySrv) -> str:
    """Where the MySrv's Service answers inside the cluster."""
    return f"http://{_service_host(mysrv)}:{mysrv.spec.effective_port()}"


def dns_name(mysrv: MySrv) -> str:
    """The MySrv's record in the external zone: ``<name>.<namespace>.apps.example.com``."""
    return f"{mysrv.metadata.name}.{mysrv.metadata.namespace}.{ZONE}"


def _service_host(mysrv: MySrv) -> str:
    return f"{mysrv.metadata.name}.{mysrv.metadata.namespace}.svc.cluster.local"


class MySrvReconciler:
    """Reconciles one MySrv; see the module documentation.

    Args:
        client: Reads (from the cache) and writes (to the API server).
        recorder: Records Events about MySrvs.
        dns: The external DNS zone.
    """

    def __init__(self, client: Client, recorder: EventRecorder, dns: DNSProvider) -> None:
        self.client = client
        self.recorder = recorder
        self.dns = dns

    async def reconcile_object(self, obj: MySrv) -> None:
        """Bring the Deployment, the Service, the DNS record and the status in line with ``obj``."""
        if obj.metadata.deletion_timestamp is not None:
            await self._finalize(obj)
            return
        status = obj.status.model_copy(deep=True)
        status.observed_generation = obj.metadata.generation
        try:
            await self._converge(obj, status)
        except Exception:
            # The conditions say what went wrong; the error makes the reconcile retry.
            await self._write_status(obj, status)
            raise
        await self._write_status(obj, status)

    async def _converge(self, obj: MySrv, status: MySrvStatus) -> None:
        errors = spec_errors(obj.spec)
        if errors:
            # The validating webhook refuses such objects; this one got in without it.
            # Nothing to retry until the spec changes, and that wakes the controller.
            set_status_condition(
                status.conditions, _condition(obj, AVAILABLE, False, "InvalidSpec", message(errors))
            )
            self.recorder.event(obj, "Warning", "InvalidSpec", message(errors))
            return
        obj = await patch_add_finalizer(self.client, obj, FINALIZER)
        deployment = await self.apply_children(obj, status)
        status.url = service_url(obj)
        await self._register_dns(obj, status)
        observed = deployment.status
        available = (observed.available_replicas or 0) if observed is not None else 0
        wanted = deployment.spec.replicas or 0
        status.available_replicas = available
        summary = f"{available}/{wanted} replicas available"
        if available >= wanted > 0:
            condition = _condition(obj, AVAILABLE, True, "MinimumReplicasAvailable", summary)
        else:
            condition = _condition(obj, AVAILABLE, False, "ReplicasUnavailable", summary)
        set_status_condition(status.conditions, condition)

    async def apply_children(self, obj: MySrv, status: MySrvStatus) -> V1Deployment:
        """Apply the Deployment and the Service; return the Deployment as it now is."""
        try:
            result = await WORKFLOW.reconcile(self.client, obj, write_status=False)
        except WorkflowError as exc:
            exc.result.set_conditions(status.conditions)
            raise
        result.set_conditions(status.conditions)
        for child in ("Deployment", "Service"):
            self.tell_written(obj, child, result[child].operation.value)
        deployment: V1Deployment = result["Deployment"].object
        return deployment

    def tell_written(self, owner: MySrv, kind: str, operation: str) -> None:
        """Record an Event (and a log line) for a child that was created or updated."""
        if operation not in ("created", "updated"):
            return
        verb = operation.capitalize()
        where = f"{owner.metadata.namespace}/{owner.metadata.name}"
        self.recorder.event(owner, "Normal", verb, f"{verb} {kind} {where}")
        _log.info("owned object written", kind=kind, result=operation)

    async def _register_dns(self, obj: MySrv, status: MySrvStatus) -> None:
        name, target = dns_name(obj), _service_host(obj)
        try:
            changed = await self.dns.upsert(name, target)
        except Exception as exc:
            reason = f"cannot register {name}: {exc}"
            set_status_condition(
                status.conditions,
                _condition(obj, DNS_REGISTERED, False, "RegistrationFailed", reason),
            )
            self.recorder.event(obj, "Warning", "RegistrationFailed", reason)
            raise
        if changed:
            self.recorder.event(obj, "Normal", "DNSRecordRegistered", f"{name} -> {target}")
        set_status_condition(
            status.conditions,
            _condition(obj, DNS_REGISTERED, True, "Registered", f"{name} -> {target}"),
        )

    async def _finalize(self, obj: MySrv) -> None:
        if FINALIZER not in (obj.metadata.finalizers or ()):
            return
        name = dns_name(obj)
        try:
            deleted = await self.dns.delete(name)
        except Exception as exc:
            # Keep the finalizer: the record must not outlive the MySrv unnoticed.
            self.recorder.event(obj, "Warning", "CleanupFailed", f"cannot delete {name}: {exc}")
            raise
        if deleted:
            self.recorder.event(obj, "Normal", "DNSRecordDeleted", f"deleted {name}")
        await patch_remove_finalizer(self.client, obj, FINALIZER)
        _log.info("finalized", name=obj.metadata.name, record=name)

    async def _write_status(self, obj: MySrv, status: MySrvStatus) -> None:
        if status.to_dict() == obj.status.to_dict():
            return
        await self.client.status().patch(obj, MergePatch({"status": status.to_dict()}))
        was, now = _available(obj.status), _available(status)
        # A new MySrv is unavailable at first: only changes are worth telling.
        if now is not None and (was.status if was else "False") != now.status:
            if now.status == "True":
                self.recorder.event(obj, "Normal", now.reason, now.message)
            else:
                self.recorder.event(obj, "Warning", now.reason, now.message)


def _available(status: MySrvStatus) -> Condition | None:
    return find_status_condition(status.conditions, AVAILABLE)


def _condition(obj: MySrv, type_: str, true: bool, reason: str, text: str) -> Condition:
    return Condition(
        type=type_,
        status="True" if true else "False",
        reason=reason,
        message=text,
        observed_generation=obj.metadata.generation,
    )


def _labels(mysrv: MySrv) -> dict[str, str]:
    return {**selector_labels(mysrv), "app.kubernetes.io/managed-by": MANAGED_BY}


def deployment_for(mysrv: MySrv) -> V1Deployment:
    """The Deployment a MySrv wants: only the fields this operator manages."""
    port = mysrv.spec.effective_port()
    container = V1Container(
        name=APP_CONTAINER,
        image=APP_IMAGE,
        args=["netexec", f"--http-port={port}"],
        ports=[V1ContainerPort(name="http", container_port=port, protocol="TCP")],
        readiness_probe=V1Probe(
            http_get=V1HTTPGetAction(path="/", port=port, scheme="HTTP"),
            period_seconds=10,
            timeout_seconds=1,
            success_threshold=1,
            failure_threshold=3,
        ),
    )
    return V1Deployment(
        metadata=V1ObjectMeta(name=mysrv.metadata.name, labels=_labels(mysrv)),
        spec=V1DeploymentSpec(
            replicas=1,
            selector=V1LabelSelector(match_labels=selector_labels(mysrv)),
            template=V1PodTemplateSpec(
                metadata=V1ObjectMeta(labels=_labels(mysrv)),
                spec=V1PodSpec(containers=[container]),
            ),
        ),
    )


def service_for(mysrv: MySrv) -> V1Service:
    """The Service a MySrv wants, in front of its pods."""
    port = mysrv.spec.effective_port()
    return V1Service(
        metadata=V1ObjectMeta(name=mysrv.metadata.name, labels=_labels(mysrv)),
        spec=V1ServiceSpec(
            type="ClusterIP",
            selector=selector_labels(mysrv),
            ports=[V1ServicePort(name="http", port=port, target_port=port, protocol="TCP")],
        ),
    )


_deployment = Dependent(V1Deployment, desired=deployment_for)
_service = Dependent(V1Service, desired=service_for)
WORKFLOW = Workflow([_deployment, _service], field_manager=MANAGED_BY)
"""The MySrv's children: its Deployment and its Service, applied as ``mysrv-operator``."""
