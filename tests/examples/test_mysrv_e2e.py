"""The MySrv operator end to end: kubectl against the embedded API server, the operator running.

Like envtest, the embedded server runs no workload controllers: Deployments get no pods,
so tests play kube-controller-manager by writing a Deployment's status themselves.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from examples.mysrv import make_operator
from examples.mysrv.api import FINALIZER
from examples.mysrv.dns import DNSZone

from pyctrl.testing import eventually

from .conftest import EXAMPLES, operator_running

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    from pyctrl.envtest import Environment
    from pyctrl.manager import Manager

    from .conftest import Kubectl

MYSRV = EXAMPLES / "mysrv"
SAMPLES = MYSRV / "samples"


@pytest.fixture
def crds() -> Sequence[Any]:
    return [MYSRV / "config" / "crd"]


@pytest.fixture
def zone() -> DNSZone:
    return DNSZone()


@pytest.fixture(params=["workflow", "handwritten"])
async def operator(
    env: Environment, zone: DNSZone, request: pytest.FixtureRequest
) -> AsyncIterator[Manager]:
    """The operator, with its children as a workflow or written by hand: same behaviour."""
    handwritten = request.param == "handwritten"
    operator = make_operator(dns=zone, webhooks=False, handwritten=handwritten)
    async with operator_running(operator, env) as manager:
        yield manager


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    for cond in obj.get("status", {}).get("conditions", []):
        if cond["type"] == type_:
            return dict(cond)
    return {}


async def get(kubectl: Kubectl, *what: str) -> dict[str, Any] | None:
    run = await kubectl("get", *what, "-o", "json", check=False)
    if run.code != 0:
        assert "NotFound" in run.err, run.err
        return None
    return dict(json.loads(run.out))


async def settled(kubectl: Kubectl, name: str) -> dict[str, Any]:
    """Wait until the operator has reconciled the current generation of MySrv ``name``."""
    latest: dict[str, Any] = {}

    async def reconciled() -> bool:
        nonlocal latest
        latest = await get(kubectl, "mysrv", name) or {}
        status = latest.get("status", {})
        return (
            bool(latest)
            and status.get("observedGeneration") == latest["metadata"]["generation"]
            and condition(latest, "DNSRegistered").get("status") == "True"
        )

    await eventually(reconciled)
    return latest


async def apply_samples(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", str(SAMPLES))
    await settled(kubectl, "mysrv-sample")
    await settled(kubectl, "mysrv-hello")


async def set_available_replicas(kubectl: Kubectl, name: str, available: int) -> None:
    """Do what kube-controller-manager would once the pods are ready."""
    status = {"replicas": 1, "readyReplicas": available, "availableReplicas": available}
    await kubectl(
        "patch",
        "deployment",
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": status}),
    )


async def events_of(kubectl: Kubectl, name: str) -> list[dict[str, Any]]:
    listed = await kubectl.json("events.events.k8s.io")
    return [e for e in listed["items"] if e["regarding"]["name"] == name]


@pytest.mark.usefixtures("operator")
async def test_applied_samples_get_an_owned_deployment_and_service(kubectl: Kubectl) -> None:
    """kubectl apply of the samples yields a Deployment and a Service per MySrv, owned by it."""
    await apply_samples(kubectl)
    mysrv = await get(kubectl, "mysrv", "mysrv-sample")
    deployment = await get(kubectl, "deployment", "mysrv-sample")
    service = await get(kubectl, "service", "mysrv-sample")
    assert mysrv is not None
    assert deployment is not None
    assert service is not None
    for owned in (deployment, service):
        [owner] = owned["metadata"]["ownerReferences"]
        assert owner["uid"] == mysrv["metadata"]["uid"]
        assert (owner["kind"], owner["controller"], owner["blockOwnerDeletion"]) == (
            "MySrv",
            True,
            True,
        )
    selector = {"app.kubernetes.io/name": "CloudCMP", "app.kubernetes.io/instance": "mysrv-sample"}
    assert deployment["spec"]["selector"]["matchLabels"] == selector
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["args"] == ["netexec", "--http-port=8080"]
    assert container["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]
    assert service["spec"]["selector"] == selector
    assert [(p["port"], p["targetPort"]) for p in service["spec"]["ports"]] == [(8080, 8080)]


@pytest.mark.usefixtures("operator")
async def test_status_reports_url_conditions_and_generation(kubectl: Kubectl) -> None:
    """Status carries the Service URL, the observed generation and both conditions."""
    await apply_samples(kubectl)
    mysrv = await settled(kubectl, "mysrv-sample")
    status = mysrv["status"]
    assert status["url"] == "http://mysrv-sample.default.svc.cluster.local:8080"
    assert status["observedGeneration"] == 1
    assert status["availableReplicas"] == 0
    available = condition(mysrv, "Available")
    assert (available["status"], available["reason"]) == ("False", "ReplicasUnavailable")
    assert condition(mysrv, "DNSRegistered")["reason"] == "Registered"


@pytest.mark.usefixtures("operator")
async def test_a_mysrv_without_port_is_served_on_port_80(kubectl: Kubectl) -> None:
    """The portless sample gets a Service on port 80 and an URL that says so."""
    await apply_samples(kubectl)
    mysrv = await settled(kubectl, "mysrv-hello")
    service = await get(kubectl, "service", "mysrv-hello")
    assert service is not None
    assert [p["port"] for p in service["spec"]["ports"]] == [80]
    assert mysrv["status"]["url"] == "http://mysrv-hello.default.svc.cluster.local:80"


@pytest.mark.usefixtures("operator")
async def test_kubectl_get_shows_the_printer_columns(kubectl: Kubectl) -> None:
    """`kubectl get mysrv` (and its short name) prints app, port, availability and URL."""
    await apply_samples(kubectl)
    out = (await kubectl("get", "ms", "mysrv-sample")).out.splitlines()
    assert out[0].split() == ["NAME", "APP", "PORT", "AVAILABLE", "URL", "AGE"]
    assert out[1].split()[:5] == [
        "mysrv-sample",
        "CloudCMP",
        "8080",
        "False",
        "http://mysrv-sample.default.svc.cluster.local:8080",
    ]


@pytest.mark.usefixtures("operator")
async def test_available_follows_the_deployment(kubectl: Kubectl) -> None:
    """Available turns True when the Deployment's replica is available, and False again after."""
    await apply_samples(kubectl)
    await set_available_replicas(kubectl, "mysrv-sample", 1)

    async def available(expected: str) -> bool:
        mysrv = await get(kubectl, "mysrv", "mysrv-sample") or {}
        return condition(mysrv, "Available").get("status") == expected

    await eventually(lambda: available("True"))
    mysrv = await get(kubectl, "mysrv", "mysrv-sample")
    assert mysrv is not None
    assert mysrv["status"]["availableReplicas"] == 1
    assert condition(mysrv, "Available")["reason"] == "MinimumReplicasAvailable"
    await set_available_replicas(kubectl, "mysrv-sample", 0)
    await eventually(lambda: available("False"))


@pytest.mark.usefixtures("operator")
async def test_availability_changes_are_recorded_as_events(kubectl: Kubectl) -> None:
    """Becoming available is a Normal Event; losing it again a Warning."""
    await apply_samples(kubectl)
    await set_available_replicas(kubectl, "mysrv-sample", 1)

    async def recorded(type_: str, reason: str) -> bool:
        return any(
            (e["type"], e["reason"]) == (type_, reason)
            for e in await events_of(kubectl, "mysrv-sample")
        )

    await eventually(lambda: recorded("Normal", "MinimumReplicasAvailable"))
    await set_available_replicas(kubectl, "mysrv-sample", 0)
    await eventually(lambda: recorded("Warning", "ReplicasUnavailable"))


@pytest.mark.usefixtures("operator")
async def test_events_tell_what_the_controller_created(kubectl: Kubectl) -> None:
    """The controller reports creating the Deployment, the Service and the DNS record."""
    await apply_samples(kubectl)

    async def all_recorded() -> bool:
        notes = {(e["reason"], e["note"]) for e in await events_of(kubectl, "mysrv-sample")}
        return {
            ("Created", "Created Deployment default/mysrv-sample"),
            ("Created", "Created Service default/mysrv-sample"),
        } <= notes and any(reason == "DNSRecordRegistered" for reason, _ in notes)

    await eventually(all_recorded)
    events = await events_of(kubectl, "mysrv-sample")
    assert {e["reportingController"] for e in events} == {"mysrv-controller"}


@pytest.mark.usefixtures("operator")
async def test_kubectl_describe_shows_status_and_events(kubectl: Kubectl) -> None:
    """`kubectl describe mysrv` shows the conditions and the controller's Events."""
    await apply_samples(kubectl)

    async def described() -> bool:
        out = (await kubectl("describe", "mysrv", "mysrv-sample")).out
        return "Created Deployment default/mysrv-sample" in out

    await eventually(described)
    out = (await kubectl("describe", "mysrv", "mysrv-sample")).out
    assert "URL:                     http://mysrv-sample.default.svc.cluster.local:8080" in out
    assert "mysrv-controller  Created Service default/mysrv-sample" in out


@pytest.mark.usefixtures("operator")
async def test_a_deleted_service_comes_back(kubectl: Kubectl) -> None:
    """Deleting the owned Service wakes the controller, which creates it again."""
    await apply_samples(kubectl)
    old = await get(kubectl, "service", "mysrv-sample")
    assert old is not None
    await kubectl("delete", "service", "mysrv-sample")

    async def recreated() -> bool:
        new = await get(kubectl, "service", "mysrv-sample")
        return new is not None and new["metadata"]["uid"] != old["metadata"]["uid"]

    await eventually(recreated)


@pytest.mark.usefixtures("operator")
async def test_a_drifted_deployment_is_put_back(kubectl: Kubectl) -> None:
    """Edits to what the controller owns in the Deployment are undone; other fields stay."""
    await apply_samples(kubectl)
    drift = {
        "metadata": {"labels": {"team": "web"}},
        "spec": {
            "replicas": 3,
            "template": {
                "spec": {"containers": [{"name": "app", "image": "nginx", "args": ["sleep"]}]}
            },
        },
    }
    await kubectl(
        "patch", "deployment", "mysrv-sample", "--type=strategic", "-p", json.dumps(drift)
    )

    async def restored() -> bool:
        deployment = await get(kubectl, "deployment", "mysrv-sample") or {}
        spec = deployment.get("spec", {})
        [container] = spec.get("template", {}).get("spec", {}).get("containers", [{}])
        return bool(
            spec.get("replicas") == 1
            and container.get("image") == "registry.k8s.io/e2e-test-images/agnhost:2.53"
            and container.get("args") == ["netexec", "--http-port=8080"]
        )

    await eventually(restored)
    deployment = await get(kubectl, "deployment", "mysrv-sample")
    assert deployment is not None
    assert deployment["metadata"]["labels"]["team"] == "web"


@pytest.mark.usefixtures("operator")
async def test_a_port_change_reaches_deployment_service_and_status(kubectl: Kubectl) -> None:
    """Changing spec.port updates the container, the Service and the URL, at generation 2."""
    await apply_samples(kubectl)
    await kubectl("patch", "mysrv", "mysrv-sample", "--type=merge", "-p", '{"spec":{"port":9090}}')

    async def rolled() -> bool:
        mysrv = await get(kubectl, "mysrv", "mysrv-sample") or {}
        status = mysrv.get("status", {})
        return bool(
            status.get("observedGeneration") == 2 and status.get("url", "").endswith(":9090")
        )

    await eventually(rolled)
    deployment = await get(kubectl, "deployment", "mysrv-sample")
    service = await get(kubectl, "service", "mysrv-sample")
    assert deployment is not None
    assert service is not None
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["ports"][0]["containerPort"] == 9090
    assert [p["port"] for p in service["spec"]["ports"]] == [9090]
    notes = {e["note"] for e in await events_of(kubectl, "mysrv-sample")}
    assert "Updated Deployment default/mysrv-sample" in notes


@pytest.mark.usefixtures("operator")
async def test_the_dns_record_exists_while_the_mysrv_does(kubectl: Kubectl, zone: DNSZone) -> None:
    """Each MySrv gets a record in the external zone pointing at its Service."""
    await apply_samples(kubectl)
    assert await zone.records() == {
        "mysrv-sample.default.apps.example.com": "mysrv-sample.default.svc.cluster.local",
        "mysrv-hello.default.apps.example.com": "mysrv-hello.default.svc.cluster.local",
    }
    mysrv = await get(kubectl, "mysrv", "mysrv-sample")
    assert mysrv is not None
    assert mysrv["metadata"]["finalizers"] == [FINALIZER]


@pytest.mark.usefixtures("operator")
async def test_deleting_a_mysrv_removes_its_record_then_it_and_its_objects_go(
    kubectl: Kubectl, zone: DNSZone
) -> None:
    """kubectl delete waits for the finalizer: record deleted, MySrv gone, then GC'd dependents."""
    await apply_samples(kubectl)
    await kubectl("delete", "mysrv", "mysrv-sample", "--timeout=20s")
    assert await get(kubectl, "mysrv", "mysrv-sample") is None
    assert "mysrv-sample.default.apps.example.com" not in await zone.records()

    async def collected() -> bool:
        return (
            await get(kubectl, "deployment", "mysrv-sample") is None
            and await get(kubectl, "service", "mysrv-sample") is None
        )

    await eventually(collected)
    assert await get(kubectl, "deployment", "mysrv-hello") is not None


class FlakyZone(DNSZone):
    """A zone whose deletes fail while ``broken`` is set, like a provider outage."""

    broken = False

    async def delete(self, fqdn: str) -> bool:
        if self.broken:
            raise ConnectionError("DNS provider unreachable")
        return await super().delete(fqdn)


async def test_a_failed_cleanup_keeps_the_finalizer_until_it_succeeds(
    env: Environment, kubectl: Kubectl
) -> None:
    """While the record cannot be deleted the MySrv stays, with a Warning; then it goes."""
    zone = FlakyZone()
    async with operator_running(make_operator(dns=zone, webhooks=False), env):
        await apply_samples(kubectl)
        zone.broken = True
        await kubectl("delete", "mysrv", "mysrv-sample", "--wait=false")

        async def warned() -> bool:
            return any(
                e["reason"] == "CleanupFailed" and "DNS provider unreachable" in e["note"]
                for e in await events_of(kubectl, "mysrv-sample")
            )

        await eventually(warned)
        stuck = await get(kubectl, "mysrv", "mysrv-sample")
        assert stuck is not None
        assert stuck["metadata"]["deletionTimestamp"]
        assert stuck["metadata"]["finalizers"] == [FINALIZER]
        assert "mysrv-sample.default.apps.example.com" in await zone.records()
        zone.broken = False

        async def gone() -> bool:
            return await get(kubectl, "mysrv", "mysrv-sample") is None

        await eventually(gone)
        assert "mysrv-sample.default.apps.example.com" not in await zone.records()


@pytest.mark.usefixtures("operator")
async def test_a_mysrv_without_name_is_reported_and_left_alone(kubectl: Kubectl) -> None:
    """With the webhooks off, a nameless MySrv gets Available=False/InvalidSpec and no objects."""
    nameless = {
        "apiVersion": "myapp.example.com/v1alpha1",
        "kind": "MySrv",
        "metadata": {"name": "nameless"},
        "spec": {"port": 8080},
    }
    await kubectl("apply", "-f", "-", stdin=nameless)

    async def reported() -> bool:
        mysrv = await get(kubectl, "mysrv", "nameless") or {}
        return condition(mysrv, "Available").get("reason") == "InvalidSpec"

    await eventually(reported)
    mysrv = await get(kubectl, "mysrv", "nameless")
    assert mysrv is not None
    assert condition(mysrv, "Available")["message"] == "spec.name: Required value"
    assert await get(kubectl, "deployment", "nameless") is None
    assert "finalizers" not in mysrv["metadata"]
