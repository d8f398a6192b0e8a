"""Webhook configuration manifests generated from what is registered."""

from __future__ import annotations

import base64

from pyctrl.webhook import (
    ClientConfig,
    Server,
    conversion_stanza,
    register_defaulter,
    register_validator,
    webhook_configurations,
)

from .conftest import Checks, Defaults, MySrv


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
