"""Events in two groups: ``v1`` (core) and ``events.k8s.io/v1``, one storage.

kube-apiserver stores Events once (as core Events) and converts through its internal type
(pkg/apis/events/v1/conversion.go): ``regarding`` is ``involvedObject``, ``note`` is
``message``, ``reportingController`` is ``reportingComponent``, the ``deprecated*`` fields
are ``source``, ``firstTimestamp``, ``lastTimestamp`` and ``count``. It answers with Go's
JSON encoding of the typed object, so the fields without ``omitempty`` (or of struct type)
are always there: ``eventTime`` (``null`` when unset), ``regarding`` and
``deprecatedSource`` (``{}``), the deprecated timestamps (``null``) in events.k8s.io/v1;
``involvedObject``, ``source``, the timestamps, ``reportingComponent`` and
``reportingInstance`` in core/v1. Storage keeps only the fields that carry a value.
"""

from __future__ import annotations

from typing import Any

# (events.k8s.io/v1 field, core/v1 field), in the order of events/v1's Go struct.
_RENAMES: tuple[tuple[str, str], ...] = (
    ("eventTime", "eventTime"),
    ("series", "series"),
    ("reportingController", "reportingComponent"),
    ("reportingInstance", "reportingInstance"),
    ("action", "action"),
    ("reason", "reason"),
    ("regarding", "involvedObject"),
    ("related", "related"),
    ("note", "message"),
    ("type", "type"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
)
_V1_TO_CORE = dict(_RENAMES)
_CORE_TO_V1 = {core: v1 for v1, core in _RENAMES}

# events.k8s.io/v1 fields Go always writes, and the value they have when unset.
_V1_ALWAYS: dict[str, Any] = {
    "eventTime": None,
    "regarding": {},
    "deprecatedSource": {},
    "deprecatedFirstTimestamp": None,
    "deprecatedLastTimestamp": None,
}
# core/v1 fields, in the order of core's Go struct, and whether Go always writes them.
_CORE_FIELDS: tuple[tuple[str, bool, Any], ...] = (
    ("involvedObject", True, {}),
    ("reason", False, ""),
    ("message", False, ""),
    ("source", True, {}),
    ("firstTimestamp", True, None),
    ("lastTimestamp", True, None),
    ("count", False, 0),
    ("type", False, ""),
    ("eventTime", True, None),
    ("series", False, None),
    ("action", False, ""),
    ("related", False, None),
    ("reportingComponent", True, ""),
    ("reportingInstance", True, ""),
)


def _empty(value: Any) -> bool:
    return value is None or (value in ("", 0, {}) and not isinstance(value, bool))


def _head(obj: dict[str, Any], api_version: str) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "Event", "apiVersion": api_version}
    if "metadata" in obj:
        out["metadata"] = obj["metadata"]
    return out


def _series_v1(series: Any) -> Any:
    if not isinstance(series, dict):
        return series
    return {"count": series.get("count", 0), "lastObservedTime": series.get("lastObservedTime")}


def compact_core(obj: dict[str, Any]) -> dict[str, Any]:
    """A core Event as stored: only the fields that carry a value (unknown keys kept)."""
    out = _head(obj, "v1")
    for key, value in obj.items():
        if key in ("kind", "apiVersion", "metadata"):
            continue
        if key in _CORE_TO_V1 and _empty(value):
            continue
        out[key] = value
    return out


def core_view(stored: dict[str, Any]) -> dict[str, Any]:
    """A stored Event as core/v1 answers it (Go's encoding of ``v1.Event``)."""
    out = _head(stored, "v1")
    for key, always, zero in _CORE_FIELDS:
        value = stored.get(key)
        if not _empty(value):
            out[key] = value
        elif always:
            out[key] = zero
    for key, value in stored.items():
        if key not in out and key not in _CORE_TO_V1:
            out[key] = value
    return out


def events_v1_to_core(obj: dict[str, Any]) -> dict[str, Any]:
    """An events.k8s.io/v1 Event as the stored core Event (only fields with a value)."""
    out = _head(obj, "v1")
    for key, value in obj.items():
        if key in ("kind", "apiVersion", "metadata") or _empty(value):
            continue
        out[_V1_TO_CORE.get(key, key)] = value
    return out


def core_to_events_v1(stored: dict[str, Any]) -> dict[str, Any]:
    """A stored core Event as events.k8s.io/v1 answers it (Go's encoding of the v1 type)."""
    out = _head(stored, "events.k8s.io/v1")
    for v1_key, core_key in _RENAMES:
        value = stored.get(core_key)
        if v1_key == "series":
            value = _series_v1(value)
        if not _empty(value):
            out[v1_key] = value
        elif v1_key in _V1_ALWAYS:
            out[v1_key] = _V1_ALWAYS[v1_key]
    return out
