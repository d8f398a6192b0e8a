"""List: label and field selectors, ``resourceVersion`` semantics, continue-token paging.

kube-apiserver's ``Store.List`` with the storage's paging (k8s.io/apiserver/pkg/storage:
``continue`` tokens are base64 JSON ``{"v": "meta.k8s.io/v1", "rv": ..., "start": ...}``).
A paginated list reads a snapshot of the store at the first page's resourceVersion, so
every page is consistent; a token older than the store's history is refused with 410 and
a fresh token to go on with (`CONTINUE_EXPIRED`).
"""

from __future__ import annotations

import base64
import binascii
import bisect
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from pyctrl._apimachinery.field import Cause
from pyctrl._apiserver.apimachinery.errors import (
    StatusError,
    bad_request,
    parse_resource_version,
    resource_expired,
    resource_version_problem,
)
from pyctrl._apiserver.apimachinery.fields import field_value
from pyctrl._apiserver.apimachinery.jsonpath import JSONPathError, find
from pyctrl._apiserver.registry.meta import ro_meta
from pyctrl._apiserver.storage.store import TooOld

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyctrl._apiserver.apimachinery.fields import FieldSelector, LabelSelector
    from pyctrl._apiserver.scheme.resources import ResourceType
    from pyctrl._apiserver.storage.store import StorageKey, Store

__all__ = [
    "CONTINUE_EXPIRED",
    "ListResult",
    "Lister",
    "check_field_selector",
    "field_labels",
    "fields_of",
    "parse_rv",
    "too_large",
]

CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted "
    "between the time the first chunk was returned and now may show up in the list."
)
"""The message of the 410 answering an expired continue token."""

_SNAPSHOTS = 16


@dataclass
class ListResult:
    """Objects of a list (stored form) and the list metadata."""

    items: list[dict[str, Any]]
    meta: dict[str, Any]


def field_labels(rt: ResourceType) -> frozenset[str]:
    """Field selector labels ``rt`` supports."""
    return frozenset(
        {"metadata.name", "metadata.namespace", *rt.field_labels}
        | {label for label, _ in rt.field_paths}
    )


def check_field_selector(rt: ResourceType, sel: FieldSelector) -> None:
    """400 ``field label not supported`` for labels ``rt`` does not expose."""
    supported = field_labels(rt)
    for req in sel.requirements:
        if req.field not in supported:
            raise bad_request(f"field label not supported: {req.field}")


def fields_of(rt: ResourceType) -> Callable[[dict[str, Any]], dict[str, str]]:
    """A function giving the field-selector values of a stored object."""
    labels = rt.field_labels
    paths = rt.field_paths
    convert = rt.from_storage

    def fields(stored: dict[str, Any]) -> dict[str, str]:
        obj = convert(stored) if convert is not None else stored
        meta = ro_meta(obj)
        out = {
            "metadata.name": str(meta.get("name", "")),
            "metadata.namespace": str(meta.get("namespace", "")),
        }
        for label in labels:
            out[label] = field_value(obj, label)
        for label, path in paths:
            try:
                found = find(obj, path)
            except JSONPathError:
                found = []
            value = found[0] if found else ""
            if isinstance(value, bool):
                out[label] = "true" if value else "false"
            else:
                out[label] = "" if value is None else str(value)
        return out

    return fields


def too_large(wanted: int, current: int) -> StatusError:
    """The 504 answering a resourceVersion newer than the store's (``current``)."""
    return StatusError(
        504,
        "Timeout",
        f"Timeout: Too large resource version: {wanted}, current: {current}",
        causes=[Cause("ResourceVersionTooLarge", "Too large resource version")],
        retry_after=1,
        details=True,
    )


def parse_rv(value: str) -> int:
    """A request's resourceVersion as a number; 400 when it is not one."""
    rv = parse_resource_version(value)
    if rv is None:
        raise bad_request(f"invalid resource version: {resource_version_problem(value)}")
    return rv


def _sort_key(obj: dict[str, Any]) -> str:
    meta = ro_meta(obj)
    ns = meta.get("namespace") or ""
    return f"{ns}/{meta.get('name', '')}" if ns else str(meta.get("name", ""))


def _encode_continue(rv: int, start: str) -> str:
    raw = orjson.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start + "\x00"})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, str]:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = orjson.loads(base64.urlsafe_b64decode(padded))
        if data.get("v") != "meta.k8s.io/v1":
            raise ValueError(
                "continue key is not valid: incorrect encoded start resourceVersion "
                "(version meta.k8s.io/v1)"
            )
        rv = int(data["rv"])
        start = str(data["start"])
    except (ValueError, KeyError, TypeError, binascii.Error, orjson.JSONDecodeError) as exc:
        message = str(exc)
        if not message.startswith("continue key is not valid"):
            message = f"continue key is not valid: {message}"
        raise bad_request(message) from None
    if start.endswith("\x00"):
        start = start[:-1]
    return rv, start


_SnapshotKey = tuple["StorageKey", str | None, int]


class Lister:
    """Lists of one store, with the snapshots paginated lists read their pages from."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._snapshots: OrderedDict[_SnapshotKey, list[dict[str, Any]]] = OrderedDict()
        self._snapshot_keys: dict[_SnapshotKey, list[str]] = {}

    def list_stored(
        self,
        rt: ResourceType,
        namespace: str | None,
        *,
        labels: LabelSelector,
        fields: FieldSelector,
        limit: int = 0,
        continue_token: str = "",
        resource_version: str = "",
        resource_version_match: str = "",
    ) -> ListResult:
        """List semantics: selectors, pagination with continue tokens, resourceVersion."""
        key = rt.storage_key
        ns = namespace if rt.namespaced else None
        start_after = ""
        if continue_token:
            rv, start_after = _decode_continue(continue_token)
            if rv < self.store.window_start or rv > self.store.rv:
                err = resource_expired(CONTINUE_EXPIRED)
                err.list_meta = {"continue": _encode_continue(self.store.rv, start_after)}
                raise err
            items = self._snapshot(key, ns, rv)
        else:
            rv, items = self._first_page(key, ns, limit, resource_version, resource_version_match)
        if start_after:
            items = self._after(items, key, ns, rv, start_after)
        if not labels.empty or not fields.empty:
            fields_of_stored = fields_of(rt)
            items = [
                o
                for o in items
                if labels.matches(ro_meta(o).get("labels"))
                and (fields.empty or fields.matches(fields_of_stored(o)))
            ]
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if limit and len(items) > limit:
            remaining = len(items) - limit
            items = items[:limit]
            meta["continue"] = _encode_continue(rv, _sort_key(items[-1]))
            if labels.empty and fields.empty:
                meta["remainingItemCount"] = remaining
        return ListResult(items, meta)

    def _first_page(
        self,
        key: StorageKey,
        ns: str | None,
        limit: int,
        resource_version: str,
        resource_version_match: str,
    ) -> tuple[int, list[dict[str, Any]]]:
        """The resourceVersion and items a list without a continue token reads."""
        rv = self.store.rv
        if resource_version and resource_version_match == "Exact":
            wanted = parse_rv(resource_version)
            if wanted > self.store.rv:
                raise too_large(wanted, self.store.rv)
            try:
                items = self._snapshot(key, ns, wanted)
            except TooOld as exc:
                raise resource_expired(str(exc)) from None
            return wanted, items
        if resource_version and resource_version != "0":
            wanted = parse_rv(resource_version)
            if wanted > self.store.rv:
                raise too_large(wanted, self.store.rv)
        items = self.store.items(key, ns) if not limit else self._snapshot(key, ns, rv)
        return rv, items

    def _snapshot(self, key: StorageKey, ns: str | None, rv: int) -> list[dict[str, Any]]:
        cache_key = (key, ns, rv)
        cached = self._snapshots.get(cache_key)
        if cached is not None:
            self._snapshots.move_to_end(cache_key)
            return cached
        try:
            items = self.store.state_at(key, ns, rv)
        except TooOld:
            raise resource_expired(CONTINUE_EXPIRED) from None
        self._snapshots[cache_key] = items
        while len(self._snapshots) > _SNAPSHOTS:
            evicted, _ = self._snapshots.popitem(last=False)
            self._snapshot_keys.pop(evicted, None)
        return items

    def _after(
        self, items: list[dict[str, Any]], key: StorageKey, ns: str | None, rv: int, start: str
    ) -> list[dict[str, Any]]:
        """The items of a snapshot (in key order) whose key sorts after ``start``."""
        cache_key = (key, ns, rv)
        keys = self._snapshot_keys.get(cache_key)
        if keys is None or len(keys) != len(items):
            # Each page of a paginated list starts here: sort keys are computed once per
            # snapshot, and the page found by bisection instead of a scan.
            keys = [_sort_key(o) for o in items]
            self._snapshot_keys[cache_key] = keys
        return items[bisect.bisect_right(keys, start) :]

    def drop_snapshots(self) -> None:
        """Forget cached list snapshots (after a compaction)."""
        self._snapshots.clear()
        self._snapshot_keys.clear()
