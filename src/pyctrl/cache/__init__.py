"""Package cache keeps a local, always up-to-date copy of the cluster objects a manager reads.

Like controller-runtime's ``pkg/cache`` (built on client-go's shared informers), a
`Cache` runs one informer per type, shared by every controller and every read that
asks for that type. An informer lists its type (page by page), then watches it from the
list's resourceVersion with bookmarks on, and keeps a store in step:

- a watch that ends (server timeout, dropped connection, silent for too long) is
  re-established from the last resourceVersion seen;
- ``410 Gone`` (history compacted) leads to a re-list that replaces the store
  atomically, delivering deletes (``delete_state_unknown=True``) for objects that
  vanished meanwhile;
- failures are retried with exponential backoff (800 ms to 30 s, jittered, reset after
  two healthy minutes), logged, and reported: an informer never dies silently. Its
  state, last error, reconnects and sync time are in `Cache.status`, its health in
  `Cache.healthy` and `Cache.check_ready` (a readiness check), and in the
  ``pyctrl_informer_synced``, ``pyctrl_informer_healthy`` and
  ``pyctrl_informer_reconnects_total`` metrics;
- a type the API server does not serve yet (CRD not installed) is looked up again and
  again, with a clear log line, until it appears.

Event handlers (`ResourceEventHandler`: ``add``, ``update``, ``delete``) registered on
an `Informer` receive typed copies of objects, in order, each handler from its own task;
initial-list adds are flagged, and a periodic resync (10 h, jittered) sends an update
with equal old and new resourceVersions for every object. A `CachedEventHandler` (what a
controller's sources register) is given `CachedObject` s instead: the stored entries,
decoded into typed objects only when asked for.

Reads (`Cache.get`, `Cache.list`) are served from memory and return new objects the
caller may modify. Objects are stored compactly: their JSON encoding after a transform
(`strip_managed_fields` by default), plus labels and field-index values, and decoded
into the requested type on each read. `CacheOptions` and `ByObject` choose namespaces,
label and field selectors, transforms, metadata-only types and resync periods;
`Cache.index_field` adds field indexes for ``list(..., fields={...})``.

Day-2 features: the cached namespaces can change at run time (`Cache.set_namespaces`,
or `CacheOptions.namespace_selector` to follow labelled namespaces live);
`Cache.remove_informer` stops an informer; reads never go behind the client's own
writes (`CacheOptions.read_your_own_writes`, on by default); lists are streamed
(``sendInitialEvents``) where the server can, else served from its watch cache
(``resourceVersion=0``) with client-go's fallbacks.

`Cache.shard` makes a type's informers sharded (KEP-5866): they cache only the objects
in the slots a `pyctrl.sharding.SlotAssignment` holds, asking the API server for those
alone through ``shardSelector`` and filtering by themselves when it ignores it.
"""

from __future__ import annotations

from pyctrl.cache._backoff import BackoffPolicy
from pyctrl.cache._cache import Cache
from pyctrl.cache._cached import CachedObject
from pyctrl.cache._consistency import compare_resource_versions
from pyctrl.cache._errors import CacheNotReadyError, CacheNotStartedError, ResourceNotCachedError
from pyctrl.cache._informer import HandlerRegistration, Informer, InformerStatus
from pyctrl.cache._jsonlist import MalformedListError
from pyctrl.cache._options import ByObject, CacheOptions, Transform, strip_managed_fields
from pyctrl.cache._processor import (
    CachedEventHandler,
    ResourceEventHandler,
    ResourceEventHandlerFuncs,
)
from pyctrl.cache._sharded import (
    ShardsChangedError,
    cached_in_slots,
    cached_uid,
    keys_in_slots,
)

__all__ = [
    "BackoffPolicy",
    "ByObject",
    "Cache",
    "CacheNotReadyError",
    "CacheNotStartedError",
    "CacheOptions",
    "CachedEventHandler",
    "CachedObject",
    "HandlerRegistration",
    "Informer",
    "InformerStatus",
    "MalformedListError",
    "ResourceEventHandler",
    "ResourceEventHandlerFuncs",
    "ResourceNotCachedError",
    "ShardsChangedError",
    "Transform",
    "cached_in_slots",
    "cached_uid",
    "compare_resource_versions",
    "keys_in_slots",
    "strip_managed_fields",
]
