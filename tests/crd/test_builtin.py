"""kubernetes-asyncio models as fields of custom resources: Python and the generated schema."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes_asyncio.client import (
    V1ContainerPort,
    V1ControllerRevision,
    V1JobTemplateSpec,
    V1JSONSchemaProps,
)
from pydantic import ValidationError

from pyctrl.crd import crd_for, schema_for, structural_errors
from pyctrl.errors import SchemaError
from pyctrl.meta import KubeModel
from tests.crd.builtin_models import CronJob, Worker

CRONJOB: dict[str, Any] = {
    "apiVersion": "batch.tutorial.kubebuilder.io/v1",
    "kind": "CronJob",
    "metadata": {"name": "hello", "namespace": "default"},
    "spec": {
        "schedule": "*/1 * * * *",
        "concurrencyPolicy": "Allow",
        "jobTemplate": {
            "spec": {
                "backoffLimit": 2,
                "template": {
                    "metadata": {"labels": {"app": "hello"}},
                    "spec": {
                        "restartPolicy": "OnFailure",
                        "containers": [
                            {
                                "name": "hello",
                                "image": "busybox",
                                "args": ["date"],
                                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                                "resources": {"limits": {"cpu": "500m", "memory": "64Mi"}},
                                "readinessProbe": {"httpGet": {"port": "http", "path": "/"}},
                            }
                        ],
                    },
                },
            }
        },
    },
    "status": {"lastScheduleTime": "2024-05-01T10:00:00Z"},
}


def _at(schema: dict[str, Any], *path: str) -> dict[str, Any]:
    node = schema
    for key in path:
        node = node["items"] if key == "[*]" else node["properties"][key]
    return node


def _pod_spec(schema: dict[str, Any]) -> dict[str, Any]:
    return _at(schema, "spec", "jobTemplate", "spec", "template", "spec")


def test_builtin_field_decodes_into_the_model_and_round_trips() -> None:
    """A V1JobTemplateSpec field decodes the camelCase wire form and encodes it back unchanged."""
    cronjob = CronJob.from_dict(CRONJOB)
    template = cronjob.spec.job_template
    assert isinstance(template, V1JobTemplateSpec)
    container = template.spec.template.spec.containers[0]
    assert container.ports == [V1ContainerPort(container_port=8080, protocol="TCP")]
    assert cronjob.status.last_schedule_time == datetime(2024, 5, 1, 10, tzinfo=UTC)
    assert cronjob.to_dict() == CRONJOB


def test_builtin_field_accepts_a_model_instance_and_python_names() -> None:
    """A model instance is taken as is, and snake_case keys are accepted like camelCase ones."""
    built = CronJob.from_dict(CRONJOB).spec.job_template
    again = CronJob.model_validate(
        {"spec": {"schedule": "@daily", "job_template": built}}
    ).spec.job_template
    assert again is built
    snake = CronJob.model_validate(
        {"spec": {"schedule": "@daily", "job_template": {"spec": {"backoff_limit": 3,
         "template": {"spec": {"containers": [{"name": "c"}]}}}}}}
    )  # fmt: skip
    assert snake.to_dict()["spec"]["jobTemplate"]["spec"]["backoffLimit"] == 3


def test_invalid_builtin_value_is_refused_with_its_path() -> None:
    """A non-integer container port fails validation, the error naming the wire path."""
    bad = json.loads(json.dumps(CRONJOB))
    container = bad["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    container["ports"] = [{"containerPort": "eighty"}]
    with pytest.raises(ValidationError) as refused:
        CronJob.from_dict(bad)
    (error,) = refused.value.errors()
    assert error["loc"] == (
        "spec", "jobTemplate", "spec", "template", "spec", "containers", 0, "ports", 0,
        "containerPort",
    )  # fmt: skip
    assert error["type"] == "int_type"


def test_missing_required_builtin_field_is_refused() -> None:
    """A container without its required name is refused, as the API server would."""
    with pytest.raises(ValidationError, match=r"containers\.0\.name"):
        CronJob.model_validate(
            {"spec": {"schedule": "@daily",
             "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}}}
        )  # fmt: skip


def test_quantity_int_or_string_and_time_fields_round_trip() -> None:
    """Quantity, IntOrString and Time next to built-in models keep their wire forms."""
    wire: dict[str, Any] = {
        "apiVersion": "pool.example.com/v1",
        "kind": "Worker",
        "metadata": {"name": "w"},
        "spec": {
            "template": {"spec": {"containers": [{"name": "w", "image": "img"}]}},
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "imagePullSecrets": [{"name": "registry"}],
            "memory": "1Gi",
            "port": 8080,
        },
    }
    assert Worker.from_dict(wire).to_dict() == wire
    with pytest.raises(ValidationError, match="not a quantity"):
        Worker.from_dict({**wire, "spec": {**wire["spec"], "memory": "lots"}})


def test_generated_schema_is_structural_and_carries_upstream_extensions() -> None:
    """The embedded PodSpec has list-map keys, int-or-string ports, defaults for map keys."""
    schema = schema_for(CronJob)
    assert structural_errors(schema) == []
    pod = _pod_spec(schema)
    containers = pod["properties"]["containers"]
    assert containers["x-kubernetes-list-type"] == "map"
    assert containers["x-kubernetes-list-map-keys"] == ["name"]
    assert containers["items"]["required"] == ["name"]
    ports = containers["items"]["properties"]["ports"]
    assert ports["x-kubernetes-list-map-keys"] == ["containerPort", "protocol"]
    assert ports["items"]["properties"]["protocol"]["default"] == "TCP"
    assert ports["items"]["properties"]["containerPort"]["type"] == "integer"
    http_port = _at(pod, "containers", "[*]", "readinessProbe", "httpGet", "port")
    assert http_port == {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
        "description": http_port["description"],
    }
    assert "Name or number of the port" in http_port["description"]
    # Strategic-merge-patch extensions do not exist in CRD schemas.
    assert "x-kubernetes-patch-merge-key" not in json.dumps(schema)
    # ObjectMeta inside the templates keeps labels and annotations, as elsewhere in pyctrl.
    labels = _at(schema, "spec", "jobTemplate", "spec", "template", "metadata", "labels")
    assert labels == {"type": "object", "additionalProperties": {"type": "string"}}
    assert _at(schema, "status", "active", "[*]", "uid")["type"] == "string"
    assert _at(schema, "status", "lastScheduleTime")["format"] == "date-time"


def test_free_form_builtin_values_preserve_unknown_fields() -> None:
    """A RawExtension (ControllerRevision.data) keeps whatever it holds."""

    class Holder(KubeModel):
        revision: V1ControllerRevision

    schema = schema_for(Holder)
    data = _at(schema, "revision", "data")
    assert data["x-kubernetes-preserve-unknown-fields"] is True
    assert structural_errors(schema) == []


def test_recursive_builtin_type_is_refused_naming_the_field() -> None:
    """V1JSONSchemaProps refers to itself: SchemaError names the field and the cycle."""

    class Holder(KubeModel):
        schema_: V1JSONSchemaProps

    with pytest.raises(SchemaError, match=r"Holder\.schema_ .*V1JSONSchemaProps is recursive"):
        schema_for(Holder)


def test_max_description_length_cuts_at_sentence_ends_and_zero_drops() -> None:
    """Descriptions are cut back to a sentence end, or removed with 0, as controller-gen's."""
    full = crd_for(CronJob)
    short = crd_for(CronJob, max_description_length=60)
    none = crd_for(CronJob, max_description_length=0)
    assert len(json.dumps(full)) > 2 * len(json.dumps(short))
    text = json.dumps(short)
    pod = _pod_spec(short["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    image = pod["properties"]["containers"]["items"]["properties"]["image"]["description"]
    # cut at 60, then back to the last period, as controller-gen (which only sees runes)
    assert image == "Container image name. More info: https://kubernetes."
    assert all(len(d) <= 60 for d in _descriptions(short))
    assert '"description"' not in json.dumps(none)
    assert "x-kubernetes-list-map-keys" in text
    with pytest.raises(SchemaError, match="max_description_length"):
        crd_for(CronJob, max_description_length=-1)


def _descriptions(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["description"]] if isinstance(node.get("description"), str) else []
        return own + [d for v in node.values() for d in _descriptions(v)]
    if isinstance(node, list):
        return [d for v in node for d in _descriptions(v)]
    return []
