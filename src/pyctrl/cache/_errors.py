"""Errors the cache raises."""

from __future__ import annotations

from pyctrl.errors import PyctrlError

__all__ = ["CacheNotReadyError", "CacheNotStartedError"]


class CacheNotStartedError(PyctrlError):
    """The cache was read before `Cache.start` began (controller-runtime's ErrCacheNotStarted)."""


class CacheNotReadyError(PyctrlError):
    """Raised by the readiness check: names the informers not synced or not healthy."""
