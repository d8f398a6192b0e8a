"""A built-in kind's rules live in its strategy: its table, its facts, its reset fields."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pyctrl._apiserver.registry.apiextensions.customresource import CustomResourceStrategy
from pyctrl._apiserver.registry.core.service import ServiceStrategy
from pyctrl._apiserver.registry.rest import Strategy
from pyctrl._apiserver.registry.strategies import KINDS, Strategies, kind_strategy
from pyctrl._apiserver.scheme.resources import Registry, ResourceType, builtin_types
from pyctrl._apiserver.storage.store import Store

NOW = datetime(2026, 1, 2, tzinfo=UTC)
PRINTED = sorted(key for key, cls in KINDS.items() if cls.printer is not None)


def _served(group: str, version: str, plural: str) -> ResourceType:
    rt = Registry(builtin_types()).lookup(group, version, plural)
    assert rt is not None
    return rt


@pytest.mark.parametrize("key", PRINTED, ids=["/".join(k) for k in PRINTED])
def test_a_kinds_printer_fills_one_cell_per_column(key: tuple[str, str]) -> None:
    """Every built-in printer fills one cell per column, even for an object without spec."""
    printer = KINDS[key].printer
    assert printer is not None
    obj = {"metadata": {"name": "x", "creationTimestamp": "2026-01-01T00:00:00Z"}}
    cells = printer.cells(obj, NOW)
    assert len(cells) == len(printer.columns)
    assert "x" in cells


# CRDs are validated as custom objects are (`registry.rest.validate`), not by these rules.
CREATED = sorted(
    (rt.group, rt.version, rt.plural)
    for rt in builtin_types()
    if "create" in rt.verbs and rt.group != "apiextensions.k8s.io"
)


@pytest.mark.parametrize("gvr", CREATED, ids=["/".join(k) for k in CREATED])
def test_every_kinds_create_rules_check_the_object_metadata(gvr: tuple[str, str, str]) -> None:
    """A create's metadata is checked, by the kind's rules where they say they do.

    The server skips kube-apiserver's common metadata checks after the kind's when these
    include ObjectMeta's (``create_checks_metadata``), which this holds them to.
    """
    rt = _served(*gvr)
    strategy = Strategies(Store()).for_type(rt)
    meta = {"name": "a/b", "labels": {"not a key!": "v"}}
    if rt.namespaced:
        meta["namespace"] = "default"
    obj = {"apiVersion": rt.api_version, "kind": rt.kind, "metadata": meta}
    # What the server reports (the common checks run after the kind's where needed)...
    fields = {cause.field for cause in strategy.validate(rt, obj, None)}
    assert {"metadata.name", "metadata.labels"} <= fields, fields
    if strategy.create_checks_metadata:
        # ...the kind's own rules find already, where it says they do.
        fields = {cause.field for cause in strategy.validate_create(rt, obj)}
        assert {"metadata.name", "metadata.labels"} <= fields, fields


def test_both_event_apis_share_the_core_event_strategy() -> None:
    """events.k8s.io Events are stored as core Events, so one strategy rules both."""
    core = _served("", "v1", "events")
    events_v1 = _served("events.k8s.io", "v1", "events")
    assert kind_strategy(events_v1) is kind_strategy(core) is KINDS[("", "events")]


def test_a_kind_without_rules_of_its_own_gets_the_default_strategy() -> None:
    """A built-in kind no strategy module claims is served by `Strategy` itself."""
    assert kind_strategy(_served("storage.k8s.io", "v1", "storageclasses")) is Strategy


def test_one_servers_strategies_follow_its_store() -> None:
    """Service and custom-resource strategies are built for the server's store."""
    strategies = Strategies(Store())
    assert isinstance(strategies.for_type(_served("", "v1", "services")), ServiceStrategy)
    custom = ResourceType("example.com", "v1", "Widget", "widgets", "widget", True, "WidgetList")
    assert strategies.for_type(custom) is strategies.default
    crd_type = ResourceType(
        "example.com", "v1", "Widget", "widgets", "widget", True, "WidgetList", crd_name="w"
    )
    assert isinstance(strategies.for_type(crd_type), CustomResourceStrategy)


@pytest.mark.parametrize(
    ("plural", "subresource", "reset"),
    [
        ("services", "", ["status"]),
        ("services", "status", ["spec"]),
        ("configmaps", "", []),
        ("pods", "eviction", []),
    ],
)
def test_reset_fields_follow_the_status_subresource(
    plural: str, subresource: str, reset: list[str]
) -> None:
    """The main endpoint of a kind with /status ignores status; /status ignores spec."""
    rt = _served("", "v1", plural)
    assert Strategy().reset_fields(rt, subresource) == reset
