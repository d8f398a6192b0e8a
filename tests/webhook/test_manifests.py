"""Webhook configuration manifests generated from what is registered."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

import pytest

from pyctrl.app import Operator
from pyctrl.builder import webhook_managed_by
from pyctrl.webhook import (
    ClientConfig,
    MatchCondition,
    Server,
    WebhookOptions,
    conversion_stanza,
    register_defaulter,
    register_validator,
    webhook_configurations,
)

from .conftest import Checks, Defaults, MySrv, ThermostatV1, ThermostatV1alpha1

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyctrl.manager import Manager


def _server() -> Server:
    server = Server()
    register_defaulter(server, MySrv, Defaults())
    register_validator(server, MySrv, Checks())
    return server


def test_service_configurations_with_cert_manager() -> None:
    """Production manifests point at the Service and ask cert-manager to inject the CA."""
    client = ClientConfig(
        service_name="webhook-service",
        service_namespace="mysrv-system",
        cert_manager_certificate="mysrv-system/serving-cert",
    )
    mutating, validating = webhook_configurations(_server(), client)
    assert mutating["kind"] == "MutatingWebhookConfiguration"
    assert mutating["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": "mysrv-system/serving-cert"
    }
    hook = mutating["webhooks"][0]
    assert hook["clientConfig"] == {
        "service": {
            "name": "webhook-service",
            "namespace": "mysrv-system",
            "path": "/mutate-myapp-example-com-v1alpha1-mysrv",
            "port": 443,
        }
    }
    assert hook["rules"] == [
        {
            "apiGroups": ["myapp.example.com"],
            "apiVersions": ["v1alpha1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["mysrvs"],
            "scope": "Namespaced",
        }
    ]
    assert hook["admissionReviewVersions"] == ["v1"]
    assert hook["sideEffects"] == "None"
    assert validating["webhooks"][0]["rules"][0]["operations"] == ["CREATE", "UPDATE", "DELETE"]
    assert validating["webhooks"][0]["name"] == "vmysrv-v1alpha1.myapp.example.com"


def test_url_configurations_carry_the_ca_bundle() -> None:
    """Local manifests point at a URL with the CA bundle inline."""
    client = ClientConfig(url="https://127.0.0.1:9443", ca_bundle=b"PEM")
    mutating, _ = webhook_configurations(_server(), client)
    config = mutating["webhooks"][0]["clientConfig"]
    assert config["url"] == "https://127.0.0.1:9443/mutate-myapp-example-com-v1alpha1-mysrv"
    assert base64.b64decode(config["caBundle"]) == b"PEM"
    assert "annotations" not in mutating["metadata"]


def test_match_conditions_are_emitted_as_match_conditions() -> None:
    """WebhookOptions.match_conditions become the webhook's matchConditions, in order."""
    server = Server()
    conditions = [
        MatchCondition("not-kube-system", "request.namespace != 'kube-system'"),
        MatchCondition("example.com/has-size", "has(object.spec.size)"),
    ]
    register_validator(server, MySrv, Checks(), options=WebhookOptions(match_conditions=conditions))
    (validating,) = webhook_configurations(server, ClientConfig(url="https://h:1"))
    assert validating["webhooks"][0]["matchConditions"] == [
        {"name": "not-kube-system", "expression": "request.namespace != 'kube-system'"},
        {"name": "example.com/has-size", "expression": "has(object.spec.size)"},
    ]


def test_match_conditions_without_any_leave_the_field_out() -> None:
    """A webhook without match conditions has no matchConditions field."""
    mutating, _ = webhook_configurations(_server(), ClientConfig(url="https://h:1"))
    assert "matchConditions" not in mutating["webhooks"][0]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: MatchCondition("Bad Name!", "true"), "must be a qualified name"),
        (lambda: MatchCondition("ok", "  "), "needs an expression"),
        (
            lambda: WebhookOptions(
                match_conditions=[MatchCondition("a", "true"), MatchCondition("a", "false")]
            ),
            "must be unique",
        ),
        (
            lambda: WebhookOptions(
                match_conditions=[MatchCondition(f"c{i}", "true") for i in range(65)]
            ),
            "at most 64",
        ),
    ],
)
def test_bad_match_conditions_are_refused(make: Callable[[], object], message: str) -> None:
    """Invalid match conditions fail when the options are made, naming the problem."""
    with pytest.raises(ValueError, match=message):
        make()


def test_conversion_stanza() -> None:
    """The CRD conversion stanza names the /convert path and review version v1."""
    stanza = conversion_stanza(ClientConfig(url="https://h:1"))
    assert stanza == {
        "strategy": "Webhook",
        "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {"url": "https://h:1/convert"},
        },
    }


def test_nothing_registered_means_no_manifests() -> None:
    """An empty server yields no configuration objects."""
    assert webhook_configurations(Server(), ClientConfig()) == []


async def test_operator_manifests_wire_conversion_through_cert_manager() -> None:
    """A converted kind's CRD gets the /convert stanza and the inject-ca-from annotation."""

    def setup(manager: Manager) -> None:
        webhook_managed_by(manager).for_(ThermostatV1).with_conversion(
            ThermostatV1alpha1
        ).complete()
        webhook_managed_by(manager).for_(MySrv).with_validator(Checks()).complete()

    operator = Operator(
        name="climate", types=[ThermostatV1, ThermostatV1alpha1, MySrv], setup=setup
    )
    files = await operator.manifests()
    service = ClientConfig(
        service_name="climate-webhook-service",
        service_namespace="climate-system",
        cert_manager_certificate="climate-system/climate-serving-cert",
    )
    [thermostats] = files["crd/thermostats.climate.example.com.yaml"]
    assert thermostats["spec"]["conversion"] == conversion_stanza(service)
    assert thermostats["spec"]["conversion"]["webhook"]["clientConfig"]["service"] == {
        "name": "climate-webhook-service",
        "namespace": "climate-system",
        "path": "/convert",
        "port": 443,
    }
    assert thermostats["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": "climate-system/climate-serving-cert"
    }
    assert [v["name"] for v in thermostats["spec"]["versions"]] == ["v1", "v1alpha1"]
    # A kind without conversion keeps the default strategy and no annotation.
    [mysrvs] = files["crd/mysrvs.myapp.example.com.yaml"]
    assert "conversion" not in mysrvs["spec"]
    assert "annotations" not in mysrvs["metadata"]
    kinds = [o["kind"] for o in files["webhook/manifests.yaml"]]
    assert "ValidatingWebhookConfiguration" in kinds
    assert "MutatingWebhookConfiguration" not in kinds
