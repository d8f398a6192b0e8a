"""A Manager-driven operator end to end on whatever server the suite runs against.

Start, reconcile, status written, leader election on a Lease, shutdown (the Lease
released). On the embedded server in `nox -s tests`, and in `nox -s realserver` on the
real CRD-only API server (kube-apiextensions and etcd), which serves custom resources
only: no core group (``GET /api`` answers 404), no ``coordination.k8s.io`` Lease and no
Events. There the test installs ``leases.coordination.k8s.io`` as a CRD, approved with
the ``api-approved.kubernetes.io`` annotation a ``*.k8s.io`` group requires, so that
leader election reads and writes a real server's storage through the same paths as on a
full cluster (docs/envtest-server.md says why).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from pydantic import Field

from pyctrl.builder import controller_managed_by
from pyctrl.client import RESTClient
from pyctrl.crd import crd_for
from pyctrl.errors import NotFoundError
from pyctrl.manager import Manager, Options
from pyctrl.meta import KubeModel
from pyctrl.resource import CustomResource
from pyctrl.testing import eventually, object_eventually, running

if TYPE_CHECKING:
    from pyctrl.client import Client
    from pyctrl.envtest import Environment

LEASES = "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"


class GizmoSpec(KubeModel):
    """What the operator is asked for."""

    size: int = 1


class GizmoStatus(KubeModel):
    """What it reports."""

    observed_generation: int = 0
    doubled: int = 0


class Gizmo(CustomResource, group="realserver.pyctrl.dev", version="v1"):
    """A custom resource the operator reconciles."""

    spec: GizmoSpec = Field(default_factory=GizmoSpec)
    status: GizmoStatus = Field(default_factory=GizmoStatus)


class GizmoReconciler:
    """Writes twice the size into the status, with the generation it saw."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def reconcile_object(self, gizmo: Gizmo) -> None:
        status = GizmoStatus(
            observed_generation=gizmo.metadata.generation or 0, doubled=2 * gizmo.spec.size
        )
        if gizmo.status != status:
            gizmo.status = status
            await self.client.status().update(gizmo)


def lease_crd() -> dict[str, Any]:
    """coordination.k8s.io/v1 Lease as a CRD, for a server that serves custom resources only."""
    time = {"type": "string", "format": "date-time"}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": "leases.coordination.k8s.io",
            # A *.k8s.io group needs this approval (KEP-1111); the Lease API is approved.
            "annotations": {
                "api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/78458"
            },
        },
        "spec": {
            "group": "coordination.k8s.io",
            "scope": "Namespaced",
            "names": {"plural": "leases", "singular": "lease", "kind": "Lease"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {
                                        "holderIdentity": {"type": "string"},
                                        "leaseDurationSeconds": {"type": "integer"},
                                        "acquireTime": time,
                                        "renewTime": time,
                                        "leaseTransitions": {"type": "integer"},
                                        "strategy": {"type": "string"},
                                        "preferredHolder": {"type": "string"},
                                    },
                                }
                            },
                        }
                    },
                }
            ],
        },
    }


async def _serves_leases(rest: RESTClient) -> bool:
    try:
        await rest.request("GET", "/apis/coordination.k8s.io/v1")
    except NotFoundError:
        return False
    return True


async def _holder(rest: RESTClient, path: str) -> str:
    spec = (await rest.request("GET", path)).json()["spec"]
    return str(spec.get("holderIdentity") or "")


async def test_an_operator_starts_reconciles_leads_and_stops(env: Environment, ns: str) -> None:
    """The whole life of a Manager-driven operator, with leader election on a Lease."""
    async with RESTClient(env.config) as rest:
        await env.install_crds([crd_for(Gizmo)])
        if not await _serves_leases(rest):
            await env.install_crds([lease_crd()])
        lease_name = f"gizmo-{uuid.uuid4().hex[:8]}"
        manager = Manager(
            env.config,
            Options(
                metrics_bind_address="127.0.0.1:0",
                health_probe_bind_address="127.0.0.1:0",
                leader_election=True,
                leader_election_id=lease_name,
                leader_election_namespace=ns,
                leader_election_release_on_cancel=True,
                identity="gizmo-operator-1",
                cache_sync_timeout=20,
            ),
        )
        controller_managed_by(manager).for_(Gizmo).complete(GizmoReconciler(manager.client))
        lease_path = LEASES.format(namespace=ns, name=lease_name)
        async with running(manager):
            await manager.elected()
            assert await _holder(rest, lease_path) == "gizmo-operator-1"
            await manager.client.create(
                Gizmo(metadata={"name": "g1", "namespace": ns}, spec={"size": 3})
            )
            done = await object_eventually(
                manager.api_reader, Gizmo, "g1", ns, lambda g: g.status.doubled == 6
            )
            assert done.status.observed_generation == done.metadata.generation
            gizmo = await manager.api_reader.get(Gizmo, "g1", ns)
            gizmo.spec.size = 5
            await manager.client.update(gizmo)
            await object_eventually(
                manager.api_reader, Gizmo, "g1", ns, lambda g: g.status.doubled == 10
            )

        async def released() -> bool:
            return await _holder(rest, lease_path) == ""

        # Shutdown released the Lease: the next replica takes over at once.
        await eventually(released, within=10)
