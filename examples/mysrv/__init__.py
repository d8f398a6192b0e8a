"""MySrv: an example operator that runs a small HTTP service per custom resource.

A MySrv (``myapp.example.com/v1alpha1``) names an application and a port::

    apiVersion: myapp.example.com/v1alpha1
    kind: MySrv
    metadata:
      name: mysrv-sample
    spec:
      name: CloudCMP
      port: 8080

and the operator keeps a Deployment, a Service and an external DNS record for it, and
reports in ``status`` whether the service is available and where it answers. It is the
operator-sdk tutorial operator of the same name, written with pyctrl:

- `examples.mysrv.api`: the types, the single source of the CRD;
- `examples.mysrv.controller`: the reconciler, its Deployment and Service declared as a
  `pyctrl.dependent.Workflow`; `examples.mysrv.handwritten` the same children written
  by hand;
- `examples.mysrv.webhooks`: defaulting and validating webhooks, and a Pod sidecar
  injector (a webhook on a built-in kind);
- `examples.mysrv.dns`: the simulated DNS provider the finalizer cleans up.

`operator` is the whole operator: ``python -m examples.mysrv`` runs it (flags:
``--help``) and ``await operator.write_manifests("examples/mysrv/config")`` regenerates
its manifests. As kubebuilder's scaffold does, ``ENABLE_WEBHOOKS=false`` runs it without
its webhooks, which need a serving certificate (``--webhook-cert-dir``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from kubernetes_asyncio.client import V1Pod

from examples.mysrv.api import MySrv
from examples.mysrv.controller import WORKFLOW, MySrvReconciler
from examples.mysrv.dns import DNSProvider, zone_from_environment
from examples.mysrv.handwritten import HandwrittenMySrvReconciler
from examples.mysrv.webhooks import (
    SIDECAR_OPTIONS,
    MySrvDefaulter,
    MySrvValidator,
    SidecarInjector,
)
from pyctrl.app import Operator
from pyctrl.builder import controller_managed_by, webhook_managed_by

if TYPE_CHECKING:
    from pyctrl.manager import Manager

__all__ = ["CONTROLLER_NAME", "make_operator", "operator"]

CONTROLLER_NAME = "mysrv-controller"
"""The controller's name: in metrics, logs, and as the reporter of its Events."""


def _webhooks_enabled() -> bool:
    return os.environ.get("ENABLE_WEBHOOKS", "true").strip().lower() != "false"


def make_operator(
    *, dns: DNSProvider | None = None, webhooks: bool | None = None, handwritten: bool = False
) -> Operator:
    """Build the MySrv operator.

    Args:
        dns: The external DNS zone (default: `examples.mysrv.dns.zone_from_environment`,
            created when the manager is set up).
        webhooks: Register the webhooks (default: unless ``ENABLE_WEBHOOKS=false``).
        handwritten: Manage the Deployment and the Service with the hand-written
            ``create_or_update`` form (`examples.mysrv.handwritten`) instead of the
            workflow.

    Returns:
        The operator: run it with ``main()``, generate its manifests with ``manifests()``.
    """

    async def setup(manager: Manager) -> None:
        form = HandwrittenMySrvReconciler if handwritten else MySrvReconciler
        reconciler = form(
            manager.client,
            manager.get_event_recorder_for(CONTROLLER_NAME),
            dns if dns is not None else zone_from_environment(),
        )
        (
            controller_managed_by(manager)
            .for_(MySrv)
            .dependents(WORKFLOW)
            .named(CONTROLLER_NAME)
            .complete(reconciler)
        )
        if webhooks if webhooks is not None else _webhooks_enabled():
            (
                webhook_managed_by(manager)
                .for_(MySrv)
                .with_defaulter(MySrvDefaulter())
                .with_validator(MySrvValidator())
                .complete()
            )
            (
                webhook_managed_by(manager)
                .for_(V1Pod)
                .with_defaulter(SidecarInjector(), SIDECAR_OPTIONS)
                .complete()
            )

    return Operator(name="mysrv", types=[MySrv], setup=setup)


operator = make_operator()
"""The operator as ``python -m examples.mysrv`` and ``pyctrl generate`` use it."""
