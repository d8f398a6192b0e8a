"""MySrv's defaulting and validating webhooks: their rules, served by the operator, and in use.

Three layers: the rules themselves; the operator's HTTPS webhook server answering
AdmissionReviews as kube-apiserver sends them; and kubectl against the embedded API
server with the webhook configurations installed, which calls the webhooks on every
write as a cluster does.
"""

from __future__ import annotations

import base64
import json
import ssl
import uuid
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest
from examples.mysrv import make_operator
from examples.mysrv.api import MySrv
from examples.mysrv.dns import DNSZone
from examples.mysrv.webhooks import INJECT_LABEL, MySrvDefaulter, MySrvValidator

from pyctrl.testing import eventually
from pyctrl.webhook import InvalidObjectError

from .conftest import EXAMPLES, operator_running

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    from pyctrl.envtest import Environment
    from pyctrl.manager import Manager

    from .conftest import Kubectl, WebhookCerts

MUTATE = "/mutate-myapp-example-com-v1alpha1-mysrv"
VALIDATE = "/validate-myapp-example-com-v1alpha1-mysrv"


def mysrv(**spec: Any) -> dict[str, Any]:
    """A MySrv named ``web`` with the given spec, as JSON."""
    return {
        "apiVersion": "myapp.example.com/v1alpha1",
        "kind": "MySrv",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": spec,
    }


def typed(**spec: Any) -> MySrv:
    return MySrv.model_validate(mysrv(**spec))


# -- the rules ------------------------------------------------------------------------


async def test_the_defaulter_sets_port_80_when_missing() -> None:
    """A MySrv without a port gets port 80."""
    obj = typed(name="web")
    await MySrvDefaulter().default(obj)
    assert obj.spec.port == 80


async def test_the_defaulter_keeps_a_given_port() -> None:
    """A port the user gave is left alone."""
    obj = typed(name="web", port=8080)
    await MySrvDefaulter().default(obj)
    assert obj.spec.port == 8080


async def test_a_missing_name_is_refused() -> None:
    """Creating a MySrv without spec.name is denied with a Required cause."""
    with pytest.raises(InvalidObjectError) as caught:
        await MySrvValidator().validate_create(typed(port=80))
    assert caught.value.message == "spec.name: Required value"
    assert [(e.field, e.reason) for e in caught.value.errors] == [
        ("spec.name", "FieldValueRequired")
    ]


async def test_a_name_that_is_no_label_value_is_refused() -> None:
    """spec.name labels pods, so it must be a valid label value."""
    with pytest.raises(InvalidObjectError, match=r"^spec\.name: Invalid value: \"Cloud CMP\""):
        await MySrvValidator().validate_create(typed(name="Cloud CMP", port=80))


@pytest.mark.parametrize("port", [0, -1, 65536])
async def test_a_port_out_of_range_is_refused(port: int) -> None:
    """Ports outside 1-65535 are denied, naming the value."""
    with pytest.raises(InvalidObjectError) as caught:
        await MySrvValidator().validate_create(typed(name="web", port=port))
    assert caught.value.message == (
        f"spec.port: Invalid value: {port}: must be between 1 and 65535, inclusive"
    )


async def test_every_bad_field_is_named_at_once() -> None:
    """A MySrv with several problems is told about all of them."""
    with pytest.raises(InvalidObjectError) as caught:
        await MySrvValidator().validate_create(typed(port=70000))
    assert [e.field for e in caught.value.errors] == ["spec.name", "spec.port"]


@pytest.mark.parametrize("port", [80, 443, 1024, 8080, 65535])
async def test_valid_ports_pass_without_warning(port: int) -> None:
    """Unprivileged ports and the usual HTTP ones are accepted silently."""
    assert await MySrvValidator().validate_create(typed(name="web", port=port)) is None


async def test_a_privileged_port_passes_with_a_warning() -> None:
    """A port below 1024 other than 80 and 443 is allowed, with a warning for the user."""
    warnings = await MySrvValidator().validate_create(typed(name="web", port=22))
    assert list(warnings or ()) == [
        "spec.port 22 is a privileged port: the pod needs NET_BIND_SERVICE to bind it"
    ]


async def test_the_name_cannot_change() -> None:
    """spec.name is immutable: an update changing it is denied."""
    with pytest.raises(InvalidObjectError, match=r"^spec\.name: .*field is immutable$"):
        await MySrvValidator().validate_update(typed(name="web"), typed(name="api"))


async def test_an_update_keeping_the_name_is_validated_like_a_create() -> None:
    """An update to a bad port is denied like a create."""
    with pytest.raises(InvalidObjectError, match=r"^spec\.port: "):
        await MySrvValidator().validate_update(
            typed(name="web", port=80), typed(name="web", port=0)
        )


async def test_an_object_being_deleted_is_let_through() -> None:
    """Removing a finalizer from an invalid object being deleted is not blocked."""
    old = typed(port=0)
    data = mysrv(port=0)
    data["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    assert await MySrvValidator().validate_update(old, MySrv.model_validate(data)) is None


async def test_deletes_are_allowed() -> None:
    """Any MySrv may be deleted."""
    assert await MySrvValidator().validate_delete(typed(name="web")) is None


# -- served over HTTPS by the operator --------------------------------------------------


@pytest.fixture
def crds() -> Sequence[Any]:
    return [EXAMPLES / "mysrv" / "config" / "crd"]


@pytest.fixture
async def operator(env: Environment, webhook_certs: WebhookCerts) -> AsyncIterator[Manager]:
    operator = make_operator(dns=DNSZone(), webhooks=True)
    async with operator_running(
        operator, env, f"--webhook-cert-dir={webhook_certs.cert_dir}"
    ) as manager:
        yield manager


def review(operation: str, obj: dict[str, Any] | None, old: dict[str, Any] | None = None) -> Any:
    """An AdmissionReview as kube-apiserver sends it for MySrvs."""
    request: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": {"group": "myapp.example.com", "version": "v1alpha1", "kind": "MySrv"},
        "resource": {"group": "myapp.example.com", "version": "v1alpha1", "resource": "mysrvs"},
        "operation": operation,
        "namespace": "default",
        "name": "web",
        "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters"]},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


async def post(manager: Manager, certs: WebhookCerts, path: str, body: Any) -> dict[str, Any]:
    """POST a review to the operator's webhook server over TLS, trusting only the test CA."""
    context = ssl.create_default_context(cadata=certs.ca_pem.decode())
    url = f"https://127.0.0.1:{manager.webhook_server.port}{path}"
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, json=body, ssl=context) as response,
    ):
        assert response.status == 200, await response.text()
        answer = await response.json()
    response_body: dict[str, Any] = answer["response"]
    assert response_body["uid"] == body["request"]["uid"]
    return response_body


async def test_the_served_defaulter_answers_with_a_patch_setting_the_port(
    operator: Manager, webhook_certs: WebhookCerts
) -> None:
    """The mutating webhook answers a portless MySrv with a JSON patch adding port 80."""
    answer = await post(operator, webhook_certs, MUTATE, review("CREATE", mysrv(name="web")))
    assert answer["allowed"] is True
    assert answer["patchType"] == "JSONPatch"
    patch = json.loads(base64.b64decode(answer["patch"]))
    # The decoded object also gains its empty status; the API server drops status on create.
    assert [op for op in patch if op["path"] != "/status"] == [
        {"op": "add", "path": "/spec/port", "value": 80}
    ]


async def test_the_served_validator_denies_with_the_causes(
    operator: Manager, webhook_certs: WebhookCerts
) -> None:
    """The validating webhook denies a bad MySrv with a 422 Invalid status naming each field."""
    answer = await post(operator, webhook_certs, VALIDATE, review("CREATE", mysrv(port=70000)))
    assert answer["allowed"] is False
    status = answer["status"]
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert status["message"] == (
        "spec.name: Required value; "
        "spec.port: Invalid value: 70000: must be between 1 and 65535, inclusive"
    )
    assert [c["field"] for c in status["details"]["causes"]] == ["spec.name", "spec.port"]


async def test_the_served_validator_refuses_a_name_change(
    operator: Manager, webhook_certs: WebhookCerts
) -> None:
    """An UPDATE review changing spec.name is denied."""
    body = review("UPDATE", mysrv(name="api", port=80), old=mysrv(name="web", port=80))
    answer = await post(operator, webhook_certs, VALIDATE, body)
    assert answer["allowed"] is False
    assert "field is immutable" in answer["status"]["message"]


async def test_the_served_validator_returns_warnings(
    operator: Manager, webhook_certs: WebhookCerts
) -> None:
    """An allowed MySrv on a privileged port comes back with a warning for kubectl to print."""
    answer = await post(
        operator, webhook_certs, VALIDATE, review("CREATE", mysrv(name="web", port=22))
    )
    assert answer["allowed"] is True
    assert answer["warnings"] == [
        "spec.port 22 is a privileged port: the pod needs NET_BIND_SERVICE to bind it"
    ]


# -- through the API server: kubectl with the webhook configurations installed ------------


@pytest.fixture
async def admitted(env: Environment, operator: Manager, webhook_certs: WebhookCerts) -> Manager:
    """The operator running, and the API server calling its webhooks."""
    await env.install_webhooks(operator.webhook_server, ca_bundle=webhook_certs.ca_pem)
    return operator


BAD = {
    "apiVersion": "myapp.example.com/v1alpha1",
    "kind": "MySrv",
    "metadata": {"name": "bad"},
    "spec": {"port": 70000},
}


@pytest.mark.usefixtures("admitted")
async def test_kubectl_apply_of_a_portless_mysrv_stores_port_80(kubectl: Kubectl) -> None:
    """The defaulting webhook fills in the port of the sample that names none."""
    await kubectl("apply", "-f", str(EXAMPLES / "mysrv" / "samples"))
    hello = await kubectl.json("mysrv", "mysrv-hello")
    sample = await kubectl.json("mysrv", "mysrv-sample")
    assert hello["spec"] == {"name": "hello", "port": 80}
    assert sample["spec"] == {"name": "CloudCMP", "port": 8080}


@pytest.mark.usefixtures("admitted")
async def test_kubectl_prints_the_validation_denial(kubectl: Kubectl) -> None:
    """kubectl fails, naming each bad field, and nothing is stored."""
    run = await kubectl("apply", "-f", "-", stdin=BAD, check=False)
    assert run.code == 1
    assert "spec.name: Required value" in run.err
    assert "spec.port: Invalid value: 70000: must be between 1 and 65535, inclusive" in run.err
    missing = await kubectl("get", "mysrv", "bad", check=False)
    assert "NotFound" in missing.err


@pytest.mark.usefixtures("admitted")
async def test_kubectl_prints_the_validators_warning(kubectl: Kubectl) -> None:
    """An allowed MySrv on a privileged port is stored, and kubectl shows the warning."""
    ssh = {**BAD, "metadata": {"name": "ssh"}, "spec": {"name": "ssh", "port": 22}}
    run = await kubectl("apply", "-f", "-", stdin=ssh)
    assert (
        "Warning: spec.port 22 is a privileged port: the pod needs NET_BIND_SERVICE to bind it"
        in run.err
    )


@pytest.mark.usefixtures("admitted")
async def test_kubectl_cannot_change_the_name(kubectl: Kubectl) -> None:
    """A patch of spec.name is refused as immutable; the stored name stays."""
    await kubectl("apply", "-f", str(EXAMPLES / "mysrv" / "samples"))
    patch = '{"spec":{"name":"other"}}'
    run = await kubectl("patch", "mysrv", "mysrv-hello", "--type=merge", "-p", patch, check=False)
    assert run.code == 1
    assert 'spec.name: Invalid value: "other": field is immutable' in run.err
    assert (await kubectl.json("mysrv", "mysrv-hello"))["spec"]["name"] == "hello"


@pytest.mark.usefixtures("admitted")
async def test_a_mysrv_still_deletes_through_its_finalizer(kubectl: Kubectl) -> None:
    """With the webhooks called on every write, deletion and finalizer removal go through."""
    await kubectl("apply", "-f", str(EXAMPLES / "mysrv" / "samples"))

    async def finalizer_added() -> bool:
        mysrv = await kubectl.json("mysrv", "mysrv-hello")
        return bool(mysrv["metadata"].get("finalizers"))

    await eventually(finalizer_added)
    await kubectl("delete", "mysrv", "mysrv-hello", "--timeout=20s")
    assert "NotFound" in (await kubectl("get", "mysrv", "mysrv-hello", check=False)).err


def _pod(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "nginx",
                    "volumeMounts": [{"name": "logs", "mountPath": "/var/log/app"}],
                }
            ],
            "volumes": [{"name": "logs", "emptyDir": {}}],
        },
    }


@pytest.mark.usefixtures("admitted")
async def test_kubectl_created_pod_gets_the_log_agent_sidecar(kubectl: Kubectl) -> None:
    """A Pod labelled for injection is stored with the log-agent sharing its log volume."""
    await kubectl("apply", "-f", "-", stdin=_pod("web", {INJECT_LABEL: "true"}))
    stored = await kubectl.json("pod", "web")
    containers = {c["name"]: c for c in stored["spec"]["containers"]}
    assert list(containers) == ["app", "log-agent"]
    assert containers["log-agent"]["volumeMounts"] == [
        {"name": "logs", "mountPath": "/var/log/app", "readOnly": True}
    ]


@pytest.mark.usefixtures("admitted")
async def test_unlabelled_pods_keep_their_containers(kubectl: Kubectl) -> None:
    """The object selector keeps the injector away from Pods that did not ask for it."""
    await kubectl("apply", "-f", "-", stdin=_pod("plain", {"app": "x"}))
    stored = await kubectl.json("pod", "plain")
    assert [c["name"] for c in stored["spec"]["containers"]] == ["app"]
