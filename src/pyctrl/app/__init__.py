"""Operators as applications: one object gives the process entry point and the manifests.

An operator package declares an `Operator`: its name, its custom resource types, and a
``setup`` function that registers controllers (and webhooks) on a Manager::

    async def setup(manager: Manager) -> None:
        controller_managed_by(manager).for_(MySrv).owns(V1Deployment).complete(...)
        webhook_managed_by(manager).for_(MySrv).with_defaulter(...).complete()

    operator = Operator(name="mysrv", types=[MySrv], setup=setup)

    if __name__ == "__main__":
        operator.main()

`Operator.main` is the ``main.go`` kubebuilder scaffolds: it parses the usual flags
(``--kubeconfig``, ``--context``, ``--metrics-bind-address`` ``:8080``,
``--health-probe-bind-address`` ``:8081``, ``--leader-elect``,
``--leader-election-namespace`` (default: the pod's own namespace), ``--namespace``,
``--log-format`` ``json|console``, ``--log-level``, ``--webhook-port``,
``--webhook-cert-dir``, ``--metrics-secure``, ``--metrics-cert-dir``,
``--debug-bind-address``), resolves the configuration (KUBECONFIG or in-cluster), builds the
Manager, calls ``setup`` and runs until SIGTERM.

The command line lives in ``_flags``, the manager's assembly in ``_assembly`` and the
manifests in ``_manifests``; `Operator` ties them together.

`Operator.manifests` is what ``controller-gen`` and kustomize produce, generated from
the same Python: CustomResourceDefinitions, least-privilege RBAC, the manager's
Deployment, webhook configurations (certificates from cert-manager, or managed by the
operator itself: ``Operator(cert_mode="self-managed")``, `self_managed_certificates`),
and the secure metrics wiring (the roles the
authn/authz filter needs, a ``metrics-reader`` role for scrapers, the metrics Service and
a ServiceMonitor). RBAC is derived from what ``setup`` registers:
the reconciled type may be read and updated (status and finalizers included), owned
types may be fully managed, other watched types are read-only; Events, leader-election
Leases and the operator's own ``extra_rules`` are added. ``pyctrl generate`` writes
them to files, with kustomizations; `Operator.render_installer` gives them as one
``install.yaml`` and `Operator.render_chart` as a Helm chart.
"""

from __future__ import annotations

from pyctrl.app._assembly import self_managed_certificates
from pyctrl.app._manifests import METRICS_PORT
from pyctrl.app._operator import CERT_MODES, Operator, Setup
from pyctrl.app._packaging import installer_objects, kustomizations
from pyctrl.app._spec import PolicyRule

__all__ = [
    "CERT_MODES",
    "METRICS_PORT",
    "Operator",
    "PolicyRule",
    "Setup",
    "installer_objects",
    "kustomizations",
    "self_managed_certificates",
]
