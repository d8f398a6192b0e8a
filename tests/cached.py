"""Cached objects for unit tests: what an informer hands a `CachedEventHandler`, by hand."""

from __future__ import annotations

from typing import Any

import orjson

from pyctrl.cache import CachedObject
from pyctrl.cache._store import Entry, decode
from pyctrl.scheme import default_scheme


class Decodes:
    """Decodes stored entries as an informer does, counting each decode."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, entry: Entry, type_: type[Any]) -> Any:
        self.count += 1
        return decode(entry.data, type_, scheme=default_scheme())

    def cached(self, obj: dict[str, Any], type_: type[Any]) -> CachedObject[Any]:
        """``obj`` (its JSON form) as the cache would hand it over, decoded by this."""
        meta = obj["metadata"]
        entry = Entry(orjson.dumps(obj), meta.get("resourceVersion", "1"), meta.get("labels"))
        return CachedObject((meta.get("namespace", ""), meta["name"]), entry, type_, self)


def typed(obj: dict[str, Any], type_: type[Any]) -> Any:
    """``obj`` decoded into ``type_`` as the cache would."""
    return decode(orjson.dumps(obj), type_, scheme=default_scheme())
