"""Object helpers of the registry: metadata access, copies, times, field order, conditions.

What every part of the registry does to a stored object's JSON (kube-apiserver reaches
the same through ``meta.Accessor`` and the typed structs): read or create ``metadata``,
copy a value, stamp RFC 3339 times, order fields as kube-apiserver serializes them, and
set a status condition. The storage keys of the types other parts single out are here too.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar, cast

import orjson

from pyctrl._apimachinery.meta import meta_of, ro_meta
from pyctrl._apiserver.storage.keys import CRDS, NAMESPACES

if TYPE_CHECKING:
    from pyctrl._apiserver.storage.store import StorageKey

__all__ = [
    "CRDS",
    "NAMESPACES",
    "OBJECT_META_FIELDS",
    "SERVICES",
    "canonical_order",
    "deep_copy",
    "meta_of",
    "now_rfc3339",
    "ro_meta",
    "set_condition",
    "shift_time",
]

SERVICES: StorageKey = ("", "services")
"""The storage key of Services."""

OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)
"""The fields of ``metav1.ObjectMeta`` (any other ``metadata`` field is unknown)."""

_T = TypeVar("_T")

_now_cache: list[Any] = [0, ""]


def now_rfc3339(delta_seconds: float = 0.0) -> str:
    """The current UTC time (plus ``delta_seconds``) as RFC 3339 with second precision."""
    second = int(time.time() + delta_seconds)
    if second != _now_cache[0]:
        text = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        if delta_seconds:
            return text
        _now_cache[0], _now_cache[1] = second, text
    return str(_now_cache[1])


def shift_time(timestamp: str, seconds: int) -> str:
    """An RFC 3339 ``timestamp`` moved by ``seconds`` (now plus ``seconds`` if unparsable)."""
    try:
        moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return now_rfc3339(seconds)
    return (moment + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def deep_copy(value: _T) -> _T:
    """Copy a JSON value (faster than ``copy.deepcopy`` for plain JSON)."""
    return cast("_T", orjson.loads(orjson.dumps(value)))


_META_ORDER = (
    "name",
    "generateName",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
)


def canonical_order(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with its fields in the order kube-apiserver serializes them."""
    out: dict[str, Any] = {}
    for key in ("kind", "apiVersion"):
        if key in obj:
            out[key] = obj[key]
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        ordered = {k: meta[k] for k in _META_ORDER if k in meta}
        if len(ordered) != len(meta):
            ordered.update((k, v) for k, v in meta.items() if k not in ordered)
        out["metadata"] = ordered
    for key, value in obj.items():
        if key not in out and key != "status":
            out[key] = value
    if "status" in obj:
        out["status"] = obj["status"]
    return out


def set_condition(obj: dict[str, Any], type_: str, status: str, reason: str, message: str) -> bool:
    """Set a status condition (lastTransitionTime changes only with the status)."""
    conditions = obj.setdefault("status", {}).setdefault("conditions", [])
    for cond in conditions:
        if cond.get("type") == type_:
            changed = bool(
                cond.get("status") != status
                or cond.get("reason") != reason
                or cond.get("message") != message
            )
            if cond.get("status") != status:
                cond["lastTransitionTime"] = now_rfc3339()
            cond["status"] = status
            cond["reason"] = reason
            cond["message"] = message
            return changed
    conditions.append(
        {
            "type": type_,
            "status": status,
            "lastTransitionTime": now_rfc3339(),
            "reason": reason,
            "message": message,
        }
    )
    return True
