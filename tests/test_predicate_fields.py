"""pyctrl.predicate's field predicates: FieldChanged, FieldEquals, FieldMatches."""

from __future__ import annotations

import datetime
import enum
import re
from typing import Any

import pytest
from kubernetes_asyncio.client import (
    V1Container,
    V1Deployment,
    V1DeploymentSpec,
    V1LabelSelector,
    V1ObjectMeta,
    V1PodSpec,
    V1PodTemplateSpec,
)
from pydantic import Field, field_validator

from pyctrl import predicate
from pyctrl.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent
from pyctrl.meta import KubeModel, ObjectMeta
from pyctrl.resource import CustomResource, PartialObjectMetadata, Unstructured

from .cached import Decodes, typed


class GadgetSpec(KubeModel):
    """A spec with a camelCase field."""

    replica_count: int = 1
    mode: str = "fast"


class Gadget(CustomResource, group="test.pyctrl.dev", version="v1"):
    """A typed resource for the tests."""

    spec: GadgetSpec = Field(default_factory=GadgetSpec)


def _gadget(replicas: int = 1, mode: str = "fast", **labels: str) -> Gadget:
    return Gadget(
        metadata=ObjectMeta(name="g", namespace="ns", labels=labels or None),
        spec=GadgetSpec(replica_count=replicas, mode=mode),
    )


def _deployment(image: str, replicas: int = 1) -> V1Deployment:
    return V1Deployment(
        metadata=V1ObjectMeta(name="d", namespace="ns"),
        spec=V1DeploymentSpec(
            replicas=replicas,
            selector=V1LabelSelector(match_labels={"app": "d"}),
            template=V1PodTemplateSpec(
                spec=V1PodSpec(containers=[V1Container(name="c", image=image)])
            ),
        ),
    )


def test_field_changed_passes_only_updates_of_the_named_fields() -> None:
    """FieldChanged('spec.replicaCount') passes a replica change, drops a mode change."""
    p = predicate.FieldChanged("spec.replicaCount")
    assert p.update(UpdateEvent(_gadget(1), _gadget(2)))
    assert not p.update(UpdateEvent(_gadget(1, "fast"), _gadget(1, "slow")))
    assert p.create(CreateEvent(_gadget()))
    assert p.delete(DeleteEvent(_gadget()))
    assert p.generic(GenericEvent(_gadget()))


def test_field_changed_watches_any_of_several_fields_including_maps() -> None:
    """With several paths any one changing passes; a label map change counts."""
    p = predicate.FieldChanged("spec.replicaCount", "metadata.labels")
    assert p.update(UpdateEvent(_gadget(1, app="a"), _gadget(1, app="b")))
    assert not p.update(UpdateEvent(_gadget(1, "fast", app="a"), _gadget(1, "slow", app="a")))


def test_field_changed_reads_kubernetes_asyncio_models_by_wire_name() -> None:
    """A nested list item of a kubernetes-asyncio model is reached by its JSON path."""
    p = predicate.FieldChanged("spec.template.spec.containers.0.image")
    assert p.update(UpdateEvent(_deployment("a:1"), _deployment("a:2")))
    assert not p.update(UpdateEvent(_deployment("a:1", 1), _deployment("a:1", 3)))


def test_field_changed_counts_appearing_and_vanishing_fields() -> None:
    """A field that appears or vanishes is a change; unstructured objects work too."""
    old = Unstructured({"metadata": {"name": "u"}, "spec": {}})
    new = Unstructured({"metadata": {"name": "u"}, "spec": {"x": 1}})
    p = predicate.FieldChanged("spec.x")
    assert p.update(UpdateEvent(old, new))
    assert p.update(UpdateEvent(new, old))
    assert not p.update(UpdateEvent(old, old))


def test_field_value_returns_json_forms_and_none_for_missing() -> None:
    """field_value gives models as their JSON dicts and None for a missing path."""
    assert predicate.field_value(_gadget(3), "spec") == {"replicaCount": 3, "mode": "fast"}
    assert predicate.field_value(_gadget(), "spec.nothing.here") is None
    assert predicate.field_value(_deployment("x"), "spec.selector.matchLabels") == {"app": "d"}
    assert predicate.field_value({"a": [{"b": 1}]}, "a.5.b") is None


def test_field_equals_filters_every_event_kind_on_the_value() -> None:
    """FieldEquals passes events of objects whose field has the value, and no others."""
    p = predicate.FieldEquals("spec.mode", "slow")
    assert p.create(CreateEvent(_gadget(mode="slow")))
    assert not p.create(CreateEvent(_gadget(mode="fast")))
    assert p.update(UpdateEvent(_gadget(mode="fast"), _gadget(mode="slow")))
    assert not p.delete(DeleteEvent(_gadget(mode="fast")))
    assert p.generic(GenericEvent(_gadget(mode="slow")))


def test_field_matches_takes_a_regex_or_a_function() -> None:
    """FieldMatches matches whole strings by regex, or calls a function of the value."""
    tier = predicate.FieldMatches("metadata.labels.tier", r"web|api")
    assert tier.create(CreateEvent(_gadget(tier="api")))
    assert not tier.create(CreateEvent(_gadget(tier="api-2")))
    assert not tier.create(CreateEvent(_gadget()))
    compiled = predicate.FieldMatches("spec.mode", re.compile("f.*"))
    assert compiled.create(CreateEvent(_gadget(mode="fast")))
    big = predicate.FieldMatches("spec.replicaCount", lambda n: n is not None and n > 2)
    assert big.update(UpdateEvent(_gadget(1), _gadget(3)))
    assert not big.update(UpdateEvent(_gadget(3), _gadget(1)))


def test_field_predicates_compose_with_and_or_not() -> None:
    """Field predicates combine with and_, or_ and not_ like the others."""
    scaled_while_slow = predicate.and_(
        predicate.FieldChanged("spec.replicaCount"), predicate.FieldEquals("spec.mode", "slow")
    )
    assert scaled_while_slow.update(UpdateEvent(_gadget(1, "slow"), _gadget(2, "slow")))
    assert not scaled_while_slow.update(UpdateEvent(_gadget(1, "fast"), _gadget(2, "fast")))
    unless_fast = predicate.not_(predicate.FieldEquals("spec.mode", "fast"))
    assert unless_fast.create(CreateEvent(_gadget(mode="slow")))
    either = predicate.or_(predicate.FieldChanged("spec.mode"), predicate.LabelChanged())
    assert either.update(UpdateEvent(_gadget(app="a"), _gadget(app="b")))


@pytest.mark.parametrize("path", ["", "spec..x", ".spec", 3])
def test_bad_field_paths_are_refused_naming_the_path(path: Any) -> None:
    """An empty or malformed path is refused with an error that quotes it."""
    with pytest.raises(ValueError, match="invalid field path"):
        predicate.FieldChanged(path)


def test_field_changed_needs_a_path_and_field_matches_a_test() -> None:
    """FieldChanged() without paths and FieldMatches with a non-test are refused."""
    with pytest.raises(ValueError, match="at least one"):
        predicate.FieldChanged()
    with pytest.raises(TypeError, match="regular expression or a function"):
        predicate.FieldMatches("spec.mode", 3)  # type: ignore[arg-type]


# -- events from the cache: fields read from the JSON, the same answers --------------------


class Tier(enum.Enum):
    """An enum field: its model value is not its JSON value."""

    WEB = "web"


class TrimmedSpec(KubeModel):
    """A spec with a field validator, an enum and a plain field."""

    name: str = ""
    tier: Tier | None = None
    size: int | None = None

    @field_validator("name")
    @classmethod
    def _trimmed(cls, value: str) -> str:
        return value.strip()


class Trimmed(CustomResource, group="test.pyctrl.dev", version="v1"):
    """A typed resource whose JSON does not always tell its fields' values."""

    spec: TrimmedSpec = Field(default_factory=TrimmedSpec)


_UTC_TIME = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {
        "name": "d",
        "namespace": "ns",
        "creationTimestamp": "2026-01-02T03:04:05Z",
        "labels": {"app": "d"},
    },
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "d"}},
        "template": {"spec": {"containers": [{"name": "c", "image": "a:1"}]}},
    },
}
TRIMMED: dict[str, Any] = {
    "apiVersion": "test.pyctrl.dev/v1",
    "kind": "Trimmed",
    "metadata": {"name": "t", "namespace": "ns"},
    "spec": {"name": " padded ", "tier": "web", "size": 3, "extra": {"x": 1}},
}


@pytest.mark.parametrize(
    ("type_", "obj", "path", "value", "decoded"),
    [
        (V1Deployment, DEPLOYMENT, "spec.template.spec.containers.0.image", "a:1", False),
        (V1Deployment, DEPLOYMENT, "spec.replicas", 2, False),
        (V1Deployment, DEPLOYMENT, "metadata.labels", {"app": "d"}, False),
        (V1Deployment, DEPLOYMENT, "spec.paused", None, False),
        (V1Deployment, DEPLOYMENT, "spec.unknown", None, True),  # the model drops it
        (V1Deployment, DEPLOYMENT, "metadata.creationTimestamp", _UTC_TIME, True),
        (V1Deployment, DEPLOYMENT, "spec.selector", {"matchLabels": {"app": "d"}}, True),
        (Unstructured, DEPLOYMENT, "spec.template.spec.containers.0.image", "a:1", False),
        (Trimmed, TRIMMED, "spec.size", 3, False),
        (Trimmed, TRIMMED, "spec.extra.x", 1, False),  # kept: extra="allow"
        (Trimmed, TRIMMED, "spec.name", "padded", True),  # a field validator's value
        (Trimmed, TRIMMED, "spec.tier", Tier.WEB, True),  # an enum member
        (Trimmed, TRIMMED, "apiVersion", "test.pyctrl.dev/v1", False),
        (Trimmed, {**TRIMMED, "apiVersion": None}, "apiVersion", "test.pyctrl.dev/v1", True),
        (Trimmed, {"metadata": TRIMMED["metadata"]}, "kind", "Trimmed", True),  # filled in
        (Trimmed, {"metadata": TRIMMED["metadata"]}, "spec.name", "", True),  # a default
        (Trimmed, {"metadata": TRIMMED["metadata"]}, "metadata.labels.app", None, False),
        (PartialObjectMetadata, DEPLOYMENT, "metadata.name", "d", False),
        (PartialObjectMetadata, DEPLOYMENT, "spec.replicas", None, True),  # not in the view
    ],
)
def test_field_predicates_read_a_cached_object_as_they_read_its_typed_object(
    type_: type[Any], obj: dict[str, Any], path: str, value: Any, decoded: bool
) -> None:
    """From the cache's JSON where it tells the typed object's value, else decoded."""
    decodes = Decodes()
    cached = decodes.cached(obj, type_)
    equals = predicate.FieldEquals(path, value)
    answer = equals.create(CreateEvent.cached(cached))
    assert decodes.count == int(decoded)
    assert answer == equals.create(CreateEvent(typed(obj, type_))), "the typed object's answer"
    assert answer is True


def test_field_changed_reads_both_cached_versions_undecoded() -> None:
    """FieldChanged on an update from the cache decodes neither version."""
    decodes = Decodes()
    newer = {**DEPLOYMENT, "spec": {**DEPLOYMENT["spec"], "replicas": 3}}
    event = UpdateEvent.cached(
        decodes.cached(DEPLOYMENT, V1Deployment), decodes.cached(newer, V1Deployment)
    )
    assert predicate.FieldChanged("spec.replicas").update(event)
    assert not predicate.FieldChanged("spec.template", "metadata.labels").update(event)
    assert decodes.count == 2  # spec.template is a model: read from the objects
    assert not predicate.FieldChanged("metadata.labels").update(event)
    assert decodes.count == 2  # each version decoded once, then reused
