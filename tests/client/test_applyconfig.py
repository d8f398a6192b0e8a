"""Apply configurations and extract: partial objects applied, owned fields read back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import pytest
from kubernetes_asyncio.client import V1ConfigMap, V1Deployment, V1ObjectMeta
from pydantic import Field, ValidationError

from pyctrl.client import Client, MergePatch, apply_config_for, extract
from pyctrl.crd import crd_for
from pyctrl.envtest import Environment
from pyctrl.meta import KubeModel
from pyctrl.resource import CustomResource, Unstructured

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


class PlanSpec(KubeModel):
    """Two required fields and a bounded one."""

    owner: str
    size: Annotated[int, Field(ge=1, le=9)]
    tier: str = "basic"


class Plan(CustomResource, group="test.pyctrl.dev", version="v1"):
    """A custom resource whose spec has required fields."""

    spec: PlanSpec


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    async with Environment(crds=[crd_for(Plan)]) as env, Client.from_config(env.config) as c:
        yield c


def test_a_partial_custom_resource_validates_and_sends_only_what_was_set() -> None:
    """The apply configuration of a model with required fields takes any subset of them."""
    config = apply_config_for(Plan)(metadata={"name": "a", "namespace": "ns"}, spec={"size": 3})
    assert config.to_apply() == {
        "apiVersion": "test.pyctrl.dev/v1",
        "kind": "Plan",
        "metadata": {"name": "a", "namespace": "ns"},
        "spec": {"size": 3},
    }
    assert apply_config_for(Plan) is apply_config_for(Plan)
    assert config.applies_to() is Plan
    with pytest.raises(ValidationError, match="size"):
        apply_config_for(Plan)(spec={"size": 10})  # the field's own bounds still hold


def test_a_builtin_apply_configuration_has_the_model_fields_all_optional() -> None:
    """V1Deployment's configuration takes snake_case or wire names, nested, and sends camelCase."""
    config = apply_config_for(V1Deployment)(
        metadata={"name": "web", "namespace": "ns"},
        spec={"replicas": 2, "template": {"spec": {"containers": [{"name": "app"}]}}},
    )
    assert config.to_apply() == {
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "app"}]}}},
    }
    by_wire = apply_config_for(V1Deployment).model_validate(
        {"spec": {"minReadySeconds": 5, "progressDeadlineSeconds": 60}}
    )
    assert by_wire.to_apply() == {"spec": {"minReadySeconds": 5, "progressDeadlineSeconds": 60}}


def test_a_type_without_fields_has_no_apply_configuration() -> None:
    """A class that is not a Kubernetes model is refused with its name."""
    with pytest.raises(TypeError, match="'int' has no apply configuration"):
        apply_config_for(int)


async def test_two_managers_apply_partial_objects_and_extract_their_own_fields(
    client: Client,
) -> None:
    """Each manager applies only its fields; extract returns each manager's, typed."""
    plan = apply_config_for(Plan)
    created: Any = await client.apply(
        plan(metadata={"name": "a", "namespace": "default"}, spec={"owner": "x", "size": 1}),
        field_manager="creator",
    )
    assert isinstance(created, Plan)
    assert created.spec.owner == "x"
    await client.apply(
        plan(metadata={"name": "a", "namespace": "default"}, spec={"size": 4}),
        field_manager="scaler",
        force=True,
    )
    live = await client.get(Plan, "a", "default")
    assert (live.spec.owner, live.spec.size) == ("x", 4)
    mine = extract(live, "scaler")
    assert mine.to_apply() == {
        "apiVersion": "test.pyctrl.dev/v1",
        "kind": "Plan",
        "metadata": {"name": "a", "namespace": "default"},
        "spec": {"size": 4},
    }
    assert extract(live, "creator").to_apply()["spec"] == {"owner": "x"}


async def test_extract_reads_keyed_list_items_of_a_builtin_kind(client: Client) -> None:
    """Containers (a list keyed by name) come back with their keys and owned fields only."""
    deployment = apply_config_for(V1Deployment)(
        metadata={"name": "web", "namespace": "default", "labels": {"app": "web"}},
        spec={
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            },
        },
    )
    applied: Any = await client.apply(deployment, field_manager="op")
    assert isinstance(applied, V1Deployment)
    await client.patch(applied, MergePatch({"metadata": {"labels": {"team": "x"}}}))
    live = await client.get(V1Deployment, "web", "default")
    mine = extract(live, "op")
    expected = {"apiVersion": "apps/v1", "kind": "Deployment", **deployment.to_apply()}
    assert mine.to_apply() == expected
    again = await client.apply(mine, field_manager="op")
    assert again.metadata.resource_version == live.metadata.resource_version
    assert again.metadata.labels == {"app": "web", "team": "x"}


async def test_extract_of_untyped_forms(client: Client) -> None:
    """Unstructured gives Unstructured, a dict a dict; a manager with nothing, the identity."""
    cm = V1ConfigMap(metadata=V1ObjectMeta(name="c", namespace="default"), data={"k": "v"})
    await client.apply(cm, field_manager="op")
    live = await client.get(Unstructured, "c", "default", gvk=client.gvk_for(V1ConfigMap))
    assert extract(live, "op").object["data"] == {"k": "v"}
    assert extract(live.object, "op")["data"] == {"k": "v"}
    assert extract(live.object, "nobody") == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default"},
    }
