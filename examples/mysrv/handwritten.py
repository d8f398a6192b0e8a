"""MySrv's children written by hand: the reconciler before `pyctrl.dependent` existed.

`HandwrittenMySrvReconciler` is `examples.mysrv.controller.MySrvReconciler` with one
method replaced: `HandwrittenMySrvReconciler.apply_children` creates or updates the
Deployment and the Service with ``create_or_update`` and a ``mutate`` function each,
setting the owner reference, merging labels and editing only the fields it owns, the
way controller-runtime users write it. It is kept beside the workflow form for
docs/dependents.md, which shows the two side by side, and for ``bench/bench_dependents``,
which measures both. ``make_operator(handwritten=True)`` runs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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

from examples.mysrv.controller import (
    APP_CONTAINER,
    APP_IMAGE,
    MANAGED_BY,
    MySrvReconciler,
    selector_labels,
)
from pyctrl.controllerutil import create_or_update, set_controller_reference

if TYPE_CHECKING:
    from collections.abc import Callable

    from examples.mysrv.api import MySrv, MySrvStatus

__all__ = ["HandwrittenMySrvReconciler"]


class HandwrittenMySrvReconciler(MySrvReconciler):
    """`MySrvReconciler` with its Deployment and Service written by ``create_or_update``."""

    async def apply_children(self, obj: MySrv, status: MySrvStatus) -> V1Deployment:
        """Create or update the Deployment and the Service; return the Deployment."""
        deployment = await self._ensure(obj, _deployment_for(obj), _mutate_deployment(obj))
        await self._ensure(obj, _service_for(obj), _mutate_service(obj))
        return deployment  # type: ignore[no-any-return, unused-ignore]

    async def _ensure(self, owner: MySrv, obj: Any, mutate: Callable[[Any], None]) -> Any:
        result, live = await create_or_update(self.client, obj, mutate)
        self.tell_written(owner, type(obj).__name__.removeprefix("V1"), result.value)
        return live


def _deployment_for(mysrv: MySrv) -> V1Deployment:
    return V1Deployment(
        metadata=V1ObjectMeta(name=mysrv.metadata.name, namespace=mysrv.metadata.namespace),
        spec=V1DeploymentSpec(
            selector=V1LabelSelector(match_labels=selector_labels(mysrv)),
            template=V1PodTemplateSpec(
                metadata=V1ObjectMeta(),
                spec=V1PodSpec(containers=[V1Container(name=APP_CONTAINER)]),
            ),
        ),
    )


def _service_for(mysrv: MySrv) -> V1Service:
    return V1Service(
        metadata=V1ObjectMeta(name=mysrv.metadata.name, namespace=mysrv.metadata.namespace),
        spec=V1ServiceSpec(),
    )


def _labels(mysrv: MySrv, current: dict[str, str] | None) -> dict[str, str]:
    # Other people's labels stay; ours are put back if they were changed.
    return {**(current or {}), **selector_labels(mysrv), "app.kubernetes.io/managed-by": MANAGED_BY}


def _mutate_deployment(mysrv: MySrv) -> Callable[[V1Deployment], None]:
    port = mysrv.spec.effective_port()

    def mutate(deployment: V1Deployment) -> None:
        set_controller_reference(mysrv, deployment)
        deployment.metadata.labels = _labels(mysrv, deployment.metadata.labels)
        spec = deployment.spec
        spec.replicas = 1
        template = spec.template
        template.metadata = template.metadata or V1ObjectMeta()
        template.metadata.labels = _labels(mysrv, template.metadata.labels)
        containers = template.spec.containers
        container = next((c for c in containers if c.name == APP_CONTAINER), None)
        if container is None:
            container = V1Container(name=APP_CONTAINER)
            containers.insert(0, container)
        # Only the fields this controller owns: the API server's defaults for the rest
        # stay as they are, so an unchanged MySrv causes no write.
        container.image = APP_IMAGE
        container.args = ["netexec", f"--http-port={port}"]
        container.ports = [V1ContainerPort(name="http", container_port=port, protocol="TCP")]
        container.readiness_probe = V1Probe(
            http_get=V1HTTPGetAction(path="/", port=port, scheme="HTTP"),
            period_seconds=10,
            timeout_seconds=1,
            success_threshold=1,
            failure_threshold=3,
        )

    return mutate


def _mutate_service(mysrv: MySrv) -> Callable[[V1Service], None]:
    port = mysrv.spec.effective_port()

    def mutate(service: V1Service) -> None:
        set_controller_reference(mysrv, service)
        service.metadata.labels = _labels(mysrv, service.metadata.labels)
        service.spec.type = "ClusterIP"
        service.spec.selector = selector_labels(mysrv)
        service.spec.ports = [
            V1ServicePort(name="http", port=port, target_port=port, protocol="TCP")
        ]

    return mutate
