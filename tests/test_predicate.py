"""pyctrl.predicate: event filters."""

from __future__ import annotations

from typing import Any

from pyctrl import predicate
from pyctrl.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent


def _obj(rv: str = "1", generation: int = 1, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "a",
            "namespace": "ns",
            "resourceVersion": rv,
            "generation": generation,
            **meta,
        },
    }


def test_generation_changed_drops_status_only_updates() -> None:
    """GenerationChanged passes spec changes and drops updates that keep the generation."""
    p = predicate.GenerationChanged()
    assert not p.update(UpdateEvent(_obj("1", 1), _obj("2", 1)))
    assert p.update(UpdateEvent(_obj("1", 1), _obj("2", 2)))
    assert p.create(CreateEvent(_obj()))
    assert p.delete(DeleteEvent(_obj()))
    assert p.generic(GenericEvent(_obj()))


def test_resource_version_changed_drops_resyncs() -> None:
    """ResourceVersionChanged drops updates whose resourceVersion is unchanged."""
    p = predicate.ResourceVersionChanged()
    assert not p.update(UpdateEvent(_obj("5"), _obj("5")))
    assert p.update(UpdateEvent(_obj("5"), _obj("6")))


def test_label_and_annotation_changed() -> None:
    """LabelChanged and AnnotationChanged pass only when their maps differ."""
    old = _obj(labels={"a": "1"}, annotations={"n": "1"})
    relabelled = _obj(labels={"a": "2"}, annotations={"n": "1"})
    reannotated = _obj(labels={"a": "1"}, annotations={"n": "2"})
    assert predicate.LabelChanged().update(UpdateEvent(old, relabelled))
    assert not predicate.LabelChanged().update(UpdateEvent(old, reannotated))
    assert predicate.AnnotationChanged().update(UpdateEvent(old, reannotated))
    assert not predicate.AnnotationChanged().update(UpdateEvent(old, relabelled))


def test_label_selector_filters_every_event_kind() -> None:
    """label_selector passes only objects whose labels match, for every event kind."""
    p = predicate.label_selector("app=web")
    web, db = _obj(labels={"app": "web"}), _obj(labels={"app": "db"})
    assert p.create(CreateEvent(web))
    assert not p.create(CreateEvent(db))
    assert p.update(UpdateEvent(db, web))
    assert not p.update(UpdateEvent(web, db))
    assert p.delete(DeleteEvent(web))
    assert not p.generic(GenericEvent(db))
    assert predicate.label_selector({"matchLabels": {"app": "db"}}).create(CreateEvent(db))


def test_combinators() -> None:
    """and_, or_ and not_ combine predicates logically."""
    gen, labels = predicate.GenerationChanged(), predicate.LabelChanged()
    only_labels = UpdateEvent(_obj(labels={"a": "1"}), _obj(labels={"a": "2"}))
    assert not predicate.and_(gen, labels).update(only_labels)
    assert predicate.or_(gen, labels).update(only_labels)
    assert predicate.not_(gen).update(only_labels)
    assert predicate.and_().create(CreateEvent(_obj()))
    assert not predicate.or_().create(CreateEvent(_obj()))


def test_funcs_adapter() -> None:
    """Funcs calls the given functions and passes event kinds without one."""
    p = predicate.Funcs(on_create=lambda e: e.is_in_initial_list)
    assert isinstance(p, predicate.Predicate)
    assert p.create(CreateEvent(_obj(), is_in_initial_list=True))
    assert not p.create(CreateEvent(_obj()))
    assert p.update(UpdateEvent(_obj(), _obj()))
