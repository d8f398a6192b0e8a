"""pyctrl.scheme: types to GroupVersionKinds and back."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes_asyncio.client import (
    CoreV1Event,
    EventsV1Event,
    V1ConfigMap,
    V1Deployment,
    V1Lease,
    V1ObjectMeta,
)
from pydantic import Field

from pyctrl.errors import SchemeError
from pyctrl.meta import GroupVersionKind, KubeModel
from pyctrl.resource import CustomResource, Unstructured
from pyctrl.scheme import Scheme, default_scheme

DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "ns", "creationTimestamp": "2024-05-01T10:00:00Z"},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}]
            },
        },
    },
}


class WidgetSpec(KubeModel):
    size: int = 1


class Widget(CustomResource, group="example.com", version="v1"):
    spec: WidgetSpec = Field(default_factory=WidgetSpec)


@pytest.mark.parametrize(
    ("model", "gvk"),
    [
        (V1Deployment, GroupVersionKind("apps", "v1", "Deployment")),
        (V1ConfigMap, GroupVersionKind("", "v1", "ConfigMap")),
        (CoreV1Event, GroupVersionKind("", "v1", "Event")),
        (EventsV1Event, GroupVersionKind("events.k8s.io", "v1", "Event")),
        (V1Lease, GroupVersionKind("coordination.k8s.io", "v1", "Lease")),
    ],
)
def test_builtin_models_map_to_their_gvk(model: type, gvk: GroupVersionKind) -> None:
    """kubernetes-asyncio models are known by group, version and kind, both ways."""
    scheme = default_scheme()
    assert scheme.gvk_for(model) == gvk
    assert scheme.type_for(gvk) is model


def test_builtin_model_round_trips_through_the_wire_form() -> None:
    """A Deployment decodes into nested models and encodes back to the same JSON."""
    scheme = default_scheme()
    deployment = scheme.from_dict(DEPLOYMENT, V1Deployment)
    assert deployment.spec.template.spec.containers[0].ports[0].container_port == 80
    assert deployment.metadata.creation_timestamp == datetime(2024, 5, 1, 10, tzinfo=UTC)
    assert scheme.to_dict(deployment) == DEPLOYMENT


def test_custom_resources_need_no_registration_to_be_identified() -> None:
    """A CustomResource class is identified by its own declaration."""
    scheme = Scheme()
    assert scheme.gvk_for(Widget) == GroupVersionKind("example.com", "v1", "Widget")
    assert scheme.type_for(Widget.gvk()) is None
    scheme.add(Widget)
    assert scheme.type_for(Widget.gvk()) is Widget


def test_from_dict_without_a_type_uses_the_registry_or_unstructured() -> None:
    """Without a type, registered kinds decode typed and unknown kinds as Unstructured."""
    scheme = Scheme()
    scheme.add(Widget)
    typed: object = scheme.from_dict(
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {}}
    )
    assert isinstance(typed, Widget)
    other: object = scheme.from_dict(
        {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {}}
    )
    assert isinstance(other, Unstructured)


def test_to_dict_sets_type_fields_and_copies() -> None:
    """to_dict always sets apiVersion and kind and never returns the caller's dict."""
    scheme = default_scheme()
    cm = V1ConfigMap(metadata=V1ObjectMeta(name="a"), data={"k": "v"})
    assert scheme.to_dict(cm)["apiVersion"] == "v1"
    source: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}}
    copied = scheme.to_dict(source)
    copied["data"]["k"] = "x"
    assert source["data"]["k"] == "v"


def test_unknown_types_are_refused_clearly() -> None:
    """An unregistered class without an identity gets an error explaining what to do."""
    scheme = Scheme()

    class Stranger:
        pass

    with pytest.raises(SchemeError, match="not a known Kubernetes type"):
        scheme.gvk_for(Stranger)
    with pytest.raises(SchemeError, match="no apiVersion and kind"):
        scheme.gvk_for({"metadata": {}})


def test_registering_a_taken_gvk_is_refused() -> None:
    """Two types cannot share one GroupVersionKind."""
    scheme = Scheme()
    scheme.add(Widget)

    class Widget2(CustomResource, group="example.com", version="v1", kind="Widget"):
        pass

    with pytest.raises(SchemeError, match="already registered"):
        scheme.add(Widget2)


def test_data_that_does_not_fit_the_type_is_reported() -> None:
    """Decoding malformed data raises SchemeError naming the type."""
    scheme = default_scheme()
    with pytest.raises(SchemeError, match="does not fit Widget"):
        scheme.from_dict(
            {"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"size": "big"}}, Widget
        )
    with pytest.raises(SchemeError, match="invalid timestamp"):
        scheme.from_dict({"metadata": {"creationTimestamp": "yesterday"}}, V1ConfigMap)
