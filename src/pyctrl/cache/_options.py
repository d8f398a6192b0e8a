"""Cache options: what to watch, how to filter and transform it, how to recover."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from pyctrl.cache._backoff import BackoffPolicy
from pyctrl.labels import Selector, SelectorError
from pyctrl.labels import parse as parse_labels

if TYPE_CHECKING:
    from pyctrl.meta import GroupVersionKind

__all__ = ["ByObject", "CacheOptions", "Transform", "check_namespaces", "strip_managed_fields"]

Transform: TypeAlias = Callable[[dict[str, Any]], dict[str, Any]]
"""A function applied to every object (its decoded JSON) before the cache stores it.

It may modify the dict in place and return it, or return a new one. It must keep
``metadata.name``, ``metadata.namespace`` and ``metadata.resourceVersion``.
"""


def strip_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """Drop ``metadata.managedFields``: the default transform.

    Reconcilers rarely read managed fields, and they are often the bulk of a small object.
    """
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
    return obj


def check_namespaces(where: str, namespaces: Iterable[str] | None) -> tuple[str, ...] | None:
    """Validated, de-duplicated namespace names (None stays None).

    Raises:
        TypeError: a single string was given.
        ValueError: a name is empty or not a string.
    """
    if namespaces is None:
        return None
    if isinstance(namespaces, str):
        raise TypeError(
            f"{where}: namespaces must be a list of names, not the string {namespaces!r}"
        )
    for ns in namespaces:
        if not isinstance(ns, str) or not ns:
            raise ValueError(f"{where}: namespace names must be non-empty strings, got {ns!r}")
    return tuple(dict.fromkeys(namespaces))


def selector_string(labels: str | Mapping[str, str] | Selector | None) -> str | None:
    """The label selector in its string form (validated), or None for everything."""
    if labels is None:
        return None
    selector = labels if isinstance(labels, Selector) else parse_labels(labels)
    return str(selector) or None


def field_requirements(fields: str | Mapping[str, str] | None) -> list[tuple[str, str]]:
    """Parse an exact-match field selector (``a=b,c==d`` or a mapping).

    Raises:
        ValueError: the selector uses ``!=`` or is malformed.
    """
    if fields is None:
        return []
    if isinstance(fields, Mapping):
        return [(str(k), str(v)) for k, v in fields.items()]
    requirements = []
    for raw in fields.split(","):
        part = raw.strip()
        if not part:
            continue
        if "!=" in part:
            raise ValueError(
                f"field selector {fields!r}: the cache only serves exact matches (field=value)"
            )
        key, sep, value = part.partition("==") if "==" in part else part.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"field selector {fields!r}: {part!r} is not field=value")
        requirements.append((key.strip(), value.strip()))
    return requirements


def field_selector_string(fields: str | Mapping[str, str] | None) -> str | None:
    """A field selector for the API server, from a string or a mapping."""
    if fields is None:
        return None
    if isinstance(fields, Mapping):
        return ",".join(f"{k}={v}" for k, v in fields.items()) or None
    return fields or None


@dataclass(frozen=True)
class ByObject:
    """Per-type cache options (controller-runtime's ``cache.ByObject``).

    Attributes:
        labels: Only cache objects matching this label selector (sent to the server).
        fields: Only cache objects matching this field selector (sent to the server).
        transform: Replaces `CacheOptions.default_transform` for this type.
        namespaces: Replaces `CacheOptions.namespaces` for this type; empty for all.
        metadata_only: Cache only metadata for this type, however it is asked for.
    """

    labels: str | Mapping[str, str] | Selector | None = None
    fields: str | Mapping[str, str] | None = None
    transform: Transform | None = None
    namespaces: Sequence[str] | None = None
    metadata_only: bool | None = None

    def __post_init__(self) -> None:
        try:
            selector_string(self.labels)
        except SelectorError as exc:
            raise SelectorError(f"ByObject.labels: {exc}") from None
        if isinstance(self.fields, str):
            field_selector_string(self.fields)
        object.__setattr__(self, "namespaces", check_namespaces("ByObject", self.namespaces))
        if self.transform is not None and not callable(self.transform):
            raise TypeError(f"ByObject.transform must be callable, got {self.transform!r}")


@dataclass(frozen=True)
class CacheOptions:
    """Options of a `pyctrl.cache.Cache` (controller-runtime's ``cache.Options``).

    Attributes:
        namespaces: Namespaces to cache namespaced types in; empty for all of them.
        by_type: Per-type options, keyed by Python type (``V1Pod``, a `CustomResource`)
            or `GroupVersionKind`.
        default_transform: Applied to every object before it is stored, unless a
            `ByObject` gives its own; `strip_managed_fields` by default, None for none.
        sync_period: Base seconds between resyncs, when every handler is given an update
            (same resourceVersion) for every object. Each informer jitters it by a factor
            in [0.9, 1.1). 10 hours by default; None turns resyncs off.
        metadata_only: Types (or GroupVersionKinds) of which only metadata is cached.
        backoff: How failed lists and watches are retried.
        page_size: Objects per list page.
        min_watch_timeout: Each watch asks the server to end it after a random time in
            [min, 2*min) seconds (5 minutes by default), spreading reconnects out.
        watch_idle_timeout: A watch that sends nothing for this long (not even a
            bookmark) is presumed dead and re-established. None disables the watchdog.
        unhealthy_after: An informer whose lists or watches keep failing for this long
            reports itself unhealthy (readiness fails) until it recovers.
        sync_timeout: How long a read (`Cache.get`, `Cache.list`) of a type whose
            informer has not synced yet waits for it, before raising
            `pyctrl.errors.CacheSyncTimeoutError` with the informer's last error
            (2 minutes, controller-runtime's ``CacheSyncTimeout``). None waits forever.
        namespace_selector: Follow the namespaces whose labels match this selector,
            live: a namespace is watched from the moment it matches and dropped (its
            objects leave the cache, with deletes to handlers) when it stops matching
            or is deleted. Replaces ``namespaces``; costs one metadata-only watch of
            Namespaces.
        reader_fail_on_missing_informer: A read (`Cache.get`, `Cache.list`) of a type
            that has no informer yet raises `ResourceNotCachedError` instead of
            starting one (controller-runtime's ``ReaderFailOnMissingInformer``).
        read_your_own_writes: A cached read of an object written through the
            manager's client, and the next reconcile of its key, wait until the cache
            shows that write (or a newer version); after a delete, until the object
            has left the cache. On by default.
        own_writes_timeout: How long such a read waits at most, counted from the write
            (5 seconds); then it goes on with what the cache has, logs a warning and
            counts ``pyctrl_cache_own_write_waits_total{result="timeout"}``.
        watch_list: List by streaming (a watch with ``sendInitialEvents=true``, as
            client-go 1.35 does by default) when the server supports it; servers that
            refuse it are listed page by page.
    """

    namespaces: Sequence[str] = ()
    by_type: Mapping[type[Any] | GroupVersionKind, ByObject] = field(default_factory=dict)
    default_transform: Transform | None = strip_managed_fields
    sync_period: float | None = 10 * 3600.0
    metadata_only: Collection[type[Any] | GroupVersionKind] = ()
    backoff: BackoffPolicy = field(default_factory=BackoffPolicy)
    page_size: int | None = 500
    min_watch_timeout: float = 300.0
    watch_idle_timeout: float | None = 330.0
    unhealthy_after: float = 30.0
    sync_timeout: float | None = 120.0
    namespace_selector: str | Mapping[str, str] | Selector | None = None
    reader_fail_on_missing_informer: bool = False
    read_your_own_writes: bool = True
    own_writes_timeout: float = 5.0
    watch_list: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "namespaces", check_namespaces("CacheOptions", self.namespaces) or ()
        )
        if self.namespace_selector is not None:
            try:
                selector_string(self.namespace_selector)
            except SelectorError as exc:
                raise SelectorError(f"CacheOptions.namespace_selector: {exc}") from None
            if self.namespaces:
                raise ValueError("CacheOptions: give namespaces or namespace_selector, not both")
        if not _is_number(self.own_writes_timeout) or self.own_writes_timeout <= 0:
            raise ValueError(
                f"CacheOptions.own_writes_timeout must be > 0 seconds, "
                f"got {self.own_writes_timeout!r}"
            )
        for name in ("sync_period", "watch_idle_timeout", "sync_timeout"):
            value = getattr(self, name)
            if value is not None and (not _is_number(value) or value <= 0):
                raise ValueError(f"CacheOptions.{name} must be > 0 seconds or None, got {value!r}")
        for name in ("min_watch_timeout", "unhealthy_after"):
            value = getattr(self, name)
            if not _is_number(value) or value < 0:
                raise ValueError(f"CacheOptions.{name} must be >= 0 seconds, got {value!r}")
        if self.page_size is not None and (
            not isinstance(self.page_size, int) or self.page_size <= 0
        ):
            raise ValueError(f"CacheOptions.page_size must be > 0 or None, got {self.page_size!r}")
        for key, value in self.by_type.items():
            if not isinstance(value, ByObject):
                raise TypeError(f"CacheOptions.by_type[{key!r}] must be a ByObject, got {value!r}")
        if self.default_transform is not None and not callable(self.default_transform):
            raise TypeError(
                f"CacheOptions.default_transform must be callable or None, "
                f"got {self.default_transform!r}"
            )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)
