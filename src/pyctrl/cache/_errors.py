"""Errors the cache raises."""

from __future__ import annotations

from pyctrl.errors import PyctrlError

__all__ = ["CacheNotReadyError", "CacheNotStartedError", "ResourceNotCachedError"]


class CacheNotStartedError(PyctrlError):
    """The cache was read before `Cache.start` began (controller-runtime's ErrCacheNotStarted)."""


class CacheNotReadyError(PyctrlError):
    """Raised by the readiness check: names the informers not synced or not healthy."""


class ResourceNotCachedError(PyctrlError):
    """A read of a type with no informer, with ``reader_fail_on_missing_informer`` set.

    controller-runtime's ``ErrResourceNotCached``; distinct from a 404: the object may
    well exist, the cache just does not watch its type.
    """
