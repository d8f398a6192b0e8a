"""Events (kube-apiserver's pkg/registry/core/event/strategy.go).

core/v1 and events.k8s.io/v1 Events share one storage; the events.k8s.io view is
validated strictly (``ValidateEventCreate`` for the v1 API), the core one leniently.

Validation (pkg/apis/core/validation/events.go): Events written through ``v1`` (core) get
the legacy checks only: the namespace of the involved object matches the Event's, and a
new-style Event (with ``eventTime``) names its reporting controller and instance, action and
reason. Events written through ``events.k8s.io/v1`` also get their metadata checked and the
strict rules: ``eventTime`` and a valid ``type`` required, the deprecated fields unset, a
series of at least two; on update most fields are immutable. Causes name the internal
(core) fields, as kube-apiserver's do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiextensions.names import is_qualified_name
from pyctrl._apimachinery.field import Cause, field_invalid, field_required
from pyctrl._apimachinery.gofmt import GoStruct
from pyctrl._apimachinery.meta import ro_meta
from pyctrl._apiserver.registry.printing import (
    INTEGER,
    STRING,
    Cells,
    Printer,
    age,
)
from pyctrl._apiserver.registry.rest import Strategy
from pyctrl._apiserver.registry.validation import meta as _meta

if TYPE_CHECKING:
    from datetime import datetime

    from pyctrl._apimachinery.field import Cause
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["EventStrategy"]


def _event(obj: dict[str, Any], now: datetime) -> Cells:
    involved = obj.get("involvedObject") or obj.get("regarding") or {}
    last = obj.get("lastTimestamp") or obj.get("eventTime") or ro_meta(obj).get("creationTimestamp")
    first = obj.get("firstTimestamp") or obj.get("eventTime") or last
    source = obj.get("source") or {}
    source_text = source.get("component") or obj.get("reportingComponent") or ""
    if source.get("host"):
        source_text = f"{source_text}, {source['host']}"
    return [
        age(last, now),
        obj.get("type", ""),
        obj.get("reason", ""),
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        involved.get("fieldPath", ""),
        source_text,
        (obj.get("message") or obj.get("note") or "").strip(),
        age(first, now),
        int(obj.get("count") or 1),
        ro_meta(obj).get("name", ""),
    ]


class EventStrategy(Strategy):
    """The rules of Events."""

    allow_create_on_update = True
    # A core/v1 Event's Validate checks its namespace and involved object, not its
    # metadata (legacyValidateEvent): the common checks after it do.
    create_checks_metadata = False

    printer = Printer(
        (
            ("Last Seen", STRING, 0),
            ("Type", STRING, 0),
            ("Reason", STRING, 0),
            ("Object", STRING, 0),
            ("Subobject", STRING, 1),
            ("Source", STRING, 1),
            ("Message", STRING, 0),
            ("First Seen", STRING, 1),
            ("Count", INTEGER, 1),
            ("Name", STRING, 1),
        ),
        _event,
    )

    def validate_create(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        """``Validate``."""
        return validate_event(obj, strict=rt.group == "events.k8s.io")

    def validate_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any]
    ) -> list[Cause]:
        """``ValidateUpdate``."""
        return validate_event_update(obj, old, strict=rt.group == "events.k8s.io")


# --- ValidateEventCreate, ValidateEventUpdate (pkg/apis/core/validation/events.go) -------

_LIMITS = (("reportingInstance", 128), ("action", 128), ("reason", 128))
_NOTE_LIMIT = 1024
# (field path, core JSON key) of the fields an update through events.k8s.io may not change.
_IMMUTABLE = (
    ("involvedObject", "involvedObject"),
    ("reason", "reason"),
    ("message", "message"),
    ("source", "source"),
    ("firstTimestamp", "firstTimestamp"),
    ("lastTimestamp", "lastTimestamp"),
    ("count", "count"),
    ("reason", "reason"),
    ("type", "type"),
    ("eventTime", "eventTime"),
    ("action", "action"),
    ("related", "related"),
    ("reportingController", "reportingComponent"),
    ("reportingInstance", "reportingInstance"),
)
_REFERENCE_FIELDS = (
    ("Kind", "kind"),
    ("Namespace", "namespace"),
    ("Name", "name"),
    ("UID", "uid"),
    ("APIVersion", "apiVersion"),
    ("ResourceVersion", "resourceVersion"),
    ("FieldPath", "fieldPath"),
)


def _internal(key: str, value: Any) -> Any:
    """A field's value as the internal Go type prints it in a field error (no JSON tags)."""
    if key in ("involvedObject", "related"):
        if not isinstance(value, dict):
            return None if key == "related" else GoStruct((k, "") for k, _ in _REFERENCE_FIELDS)
        return GoStruct((k, value.get(j) or "") for k, j in _REFERENCE_FIELDS)
    if key == "source":
        source = value if isinstance(value, dict) else {}
        return GoStruct(Component=source.get("component") or "", Host=source.get("host") or "")
    if key == "count":
        return value or 0
    if key in ("firstTimestamp", "lastTimestamp", "eventTime"):
        return value or None
    return value or ""


def _involved_namespace(event: dict[str, Any]) -> str:
    involved = event.get("involvedObject")
    return str((involved or {}).get("namespace") or "") if isinstance(involved, dict) else ""


def legacy(event: dict[str, Any]) -> list[Cause]:
    """``legacyValidateEvent``."""
    causes: list[Cause] = []
    namespace = str(ro_meta(event).get("namespace") or "")
    involved_ns = _involved_namespace(event)
    mismatch = field_invalid(
        "involvedObject.namespace", involved_ns, "does not match event.namespace"
    )
    if not event.get("eventTime"):
        if (not involved_ns and namespace not in ("", "default")) or (
            involved_ns and namespace != involved_ns
        ):
            causes.append(mismatch)
    else:
        if not involved_ns and namespace not in ("default", "kube-system"):
            causes.append(mismatch)
        controller = str(event.get("reportingComponent") or "")
        if not controller:
            causes.append(field_required("reportingController"))
        causes.extend(
            field_invalid("reportingController", controller, p)
            for p in is_qualified_name(controller)
        )
        for key, limit in _LIMITS:
            value = str(event.get(key) or "")
            if not value:
                causes.append(field_required(key))
            if len(value) > limit:
                causes.append(field_invalid(key, "", f"can have at most {limit} characters"))
        if len(str(event.get("message") or "")) > _NOTE_LIMIT:
            causes.append(
                field_invalid("message", "", f"can have at most {_NOTE_LIMIT} characters")
            )
    causes.extend(
        field_invalid("namespace", namespace, p)
        for p in _meta.name_problems(namespace, "subdomain")
    )
    return causes


def _series(event: dict[str, Any]) -> list[Cause]:
    series = event.get("series")
    if not isinstance(series, dict):
        return []
    causes: list[Cause] = []
    count = series.get("count") or 0
    if not isinstance(count, int) or count < 2:
        causes.append(field_invalid("series.count", "", "should be at least 2"))
    if not series.get("lastObservedTime"):
        causes.append(field_required("series.lastObservedTime"))
    return causes


def validate_event(event: dict[str, Any], *, strict: bool) -> list[Cause]:
    """``ValidateEventCreate``; ``strict`` for requests of events.k8s.io/v1."""
    causes = legacy(event)
    if not strict:
        return causes
    causes.extend(_meta.object_meta(event, "subdomain", namespaced=True, kube=True))
    causes.extend(_series(event))
    if not event.get("eventTime"):
        causes.append(field_required("eventTime"))
    kind = event.get("type") or ""
    if kind not in ("Normal", "Warning"):
        causes.append(field_invalid("type", "", f"has invalid value: {kind}"))
    for key in ("firstTimestamp", "lastTimestamp", "count"):
        if event.get(key):
            causes.append(field_invalid(key, "", "needs to be unset"))
    source = event.get("source")
    if isinstance(source, dict) and (source.get("component") or source.get("host")):
        causes.append(field_invalid("source", "", "needs to be unset"))
    return causes


def validate_event_update(
    event: dict[str, Any], old: dict[str, Any], *, strict: bool
) -> list[Cause]:
    """``ValidateEventUpdate``; ``strict`` for requests of events.k8s.io/v1."""
    causes = legacy(event)
    if not strict:
        return causes
    causes.extend(_meta.meta_update(event, old, kube=True))
    if event.get("series") != old.get("series"):
        causes.extend(_series(event))
    for path, key in _IMMUTABLE:
        new_value, old_value = _internal(key, event.get(key)), _internal(key, old.get(key))
        if new_value != old_value:
            causes.append(field_invalid(path, new_value, _meta.IMMUTABLE_MSG))
    return causes
