"""The same typed rules as a webhook and as a policy give the same verdicts.

One namespace is guarded by a validating webhook serving `ValidatingPolicy.validator`
(the rules' Python twins), another by the generated ValidatingAdmissionPolicy (their
CEL, enforced by the API server); twenty writes are made in both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from examples.mysrv.api import MySrv, MySrvSpec

from pyctrl.builder import webhook_managed_by
from pyctrl.crd import crd_for
from pyctrl.envtest import Environment
from pyctrl.errors import InvalidError
from pyctrl.manager import Manager, Options
from pyctrl.meta import ObjectMeta
from pyctrl.policy import (
    Binding,
    ValidatingPolicy,
    immutable,
    in_range,
    label_required,
    matches,
    policy_manifests,
    required,
)
from pyctrl.resource import Unstructured
from pyctrl.testing import running
from pyctrl.webhook import Server, WebhookOptions

if TYPE_CHECKING:
    from pyctrl.client import Client

RULES = ValidatingPolicy(
    name="mysrv-rules",
    for_=MySrv,
    validations=[
        required("spec.name"),
        in_range("spec.port", 1, 65535),
        matches("spec.name", "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"),
        immutable("spec.name"),
        label_required("team"),
    ],
    bindings=[Binding(namespace_selector={"matchLabels": {"guard": "policy"}})],
)
TEAM = {"team": "web"}
# (name, spec name, port, labels) of each create.
CREATES: list[tuple[str, str | None, int | None, dict[str, str] | None]] = [
    ("ok", "web", 80, TEAM),
    ("no-port", "web", None, TEAM),
    ("low-edge", "web", 1, TEAM),
    ("high-edge", "web", 65535, TEAM),
    ("port-zero", "web", 0, TEAM),
    ("port-high", "web", 65536, TEAM),
    ("port-negative", "web", -5, TEAM),
    ("no-name", None, 80, TEAM),
    ("nothing", None, None, TEAM),
    ("upper", "Web", 80, TEAM),
    ("dash-end", "web-", 80, TEAM),
    ("dotted", "web.app", 80, TEAM),
    ("digits", "8080", 8080, TEAM),
    ("no-labels", "web", 80, None),
    ("other-label", "web", 80, {"tier": "front"}),
    ("two-wrongs", "Web", 0, None),
]
# (object created first, new spec name, new port) of each update.
UPDATES: list[tuple[str, str | None, int | None]] = [
    ("ok", "web", 443),
    ("no-port", "api", None),
    ("low-edge", None, 1),
    ("high-edge", "web", 0),
]


def _mysrv(namespace: str, name: str, spec_name: Any, port: Any, labels: Any) -> MySrv:
    meta = ObjectMeta(name=name, namespace=namespace, labels=labels)
    return MySrv(metadata=meta, spec=MySrvSpec(name=spec_name, port=port))


async def _verdicts(client: Client, namespace: str) -> list[bool]:
    """Whether each create, then each update, was admitted in ``namespace``."""
    verdicts = []
    for name, spec_name, port, labels in CREATES:
        try:
            await client.create(_mysrv(namespace, name, spec_name, port, labels))
        except InvalidError:
            verdicts.append(False)
        else:
            verdicts.append(True)
    for name, spec_name, port in UPDATES:
        current = await client.get(MySrv, name, namespace=namespace)
        current.spec = MySrvSpec(name=spec_name, port=port)
        try:
            await client.update(current)
        except InvalidError:
            verdicts.append(False)
        else:
            verdicts.append(True)
    return verdicts


async def _namespace(client: Client, name: str, guard: str) -> None:
    meta = {"name": name, "labels": {"guard": guard}}
    await client.create(Unstructured({"apiVersion": "v1", "kind": "Namespace", "metadata": meta}))


async def test_webhook_and_policy_from_the_same_rules_agree() -> None:
    """Twenty writes: the webhook admits exactly those the policy admits."""
    async with Environment(crds=[crd_for(MySrv)]) as env:
        server = Server(host="127.0.0.1", port=0, cert_dir=env.webhook_cert_dir)
        manager = Manager(env.config, Options(metrics_bind_address="0", webhook_server=server))
        selector = {"matchLabels": {"guard": "webhook"}}
        webhook_managed_by(manager).for_(MySrv).with_validator(
            RULES.validator(), WebhookOptions(namespace_selector=selector)
        ).complete()
        async with running(manager):
            await env.install_webhooks(manager.webhook_server)
            client = manager.client
            for obj in policy_manifests([RULES]):
                await client.create(Unstructured(obj))
            await _namespace(client, "by-webhook", "webhook")
            await _namespace(client, "by-policy", "policy")
            by_webhook = await _verdicts(client, "by-webhook")
            by_policy = await _verdicts(client, "by-policy")
    assert len(by_webhook) == 20
    assert by_webhook == by_policy
    # Not a vacuous agreement: what both admit is what the rules say.
    names = [write[0] for write in [*CREATES, *UPDATES]]
    admitted = [name for name, ok in zip(names, by_policy, strict=True) if ok]
    assert admitted == ["ok", "no-port", "low-edge", "high-edge", "digits", "ok"]
