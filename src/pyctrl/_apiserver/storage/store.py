"""In-memory object storage with one global resourceVersion, an event history and listeners.

The store plays etcd's part for the embedded API server. Objects are plain JSON dicts, stored
once per (storage key, namespace, name) and never mutated after they are stored: every write
stores a new dict, so readers can hand stored dicts to the encoder without copying. Every
committed change gets the next value of one global integer ``resourceVersion``, is appended to a
bounded history (what watches resume from) and is handed synchronously to the listeners (the
watch fan-out, the garbage collector).

Like etcd, the store refuses to write an object whose encoding exceeds etcd's default
``--max-request-bytes`` (1.5 MiB, `MAX_REQUEST_BYTES`), with kube-apiserver's answer to
that failure (500, ``etcdserver: request is too large``). It also refuses (400) an object
nested deeper than `MAX_OBJECT_DEPTH`, which the server could not encode in a list, a
watch event or a Table (orjson encodes 254 levels); the server checks request bodies
against the same bound (`check_nesting`) before it processes them.

The history also lets the store answer reads "as of" an older resourceVersion (consistent
paginated lists, ``resourceVersionMatch=Exact``) by undoing the events after it, as long as
those events are still retained; older reads raise :class:`TooOld`, which the server answers
with 410 Expired as kube-apiserver does after an etcd compaction.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from pyctrl._apimachinery.meta import ro_meta
from pyctrl._apiserver.apimachinery.errors import bad_request, storage_request_too_large

StorageKey = tuple[str, str]
"""(group, plural) of the storage one or more resource types read and write."""

MAX_REQUEST_BYTES = 1536 * 1024
"""etcd's default ``--max-request-bytes``: the largest write it accepts."""

MAX_OBJECT_DEPTH = 246
"""The deepest object stored: orjson's 254 levels less room for list and Table wrappers."""
_ORJSON_MAX_DEPTH = 254

ObjKey = tuple[str, str]
"""(namespace, name); namespace '' for cluster-scoped objects."""


class StoreEvent:
    """One committed change: ADDED, MODIFIED or DELETED, with the object before and after."""

    __slots__ = ("cache", "key", "name", "namespace", "obj", "prev", "rv", "type")

    def __init__(
        self,
        rv: int,
        type_: str,
        key: StorageKey,
        *,
        namespace: str,
        name: str,
        obj: dict[str, Any],
        prev: dict[str, Any] | None,
    ) -> None:
        self.rv = rv
        self.type = type_
        self.key = key
        self.namespace = namespace
        self.name = name
        self.obj = obj
        self.prev = prev
        self.cache: dict[Any, bytes] = {}


class KeyExistsError(Exception):
    """create() of a key that exists (apiserver storage's ``KeyExists``).

    Named apart from `pyctrl.errors.AlreadyExistsError`, the API error the server answers with.
    """


class KeyNotFoundError(Exception):
    """update()/delete() of a key that does not exist (storage's ``KeyNotFound``)."""


class RVMismatchError(Exception):
    """update()/delete() whose expected resourceVersion is not the stored one."""


class TooOld(Exception):  # noqa: N818 - names the condition like kube's "too old resource version"
    """A read or watch asked for a resourceVersion older than the retained history."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


Listener = Callable[[StoreEvent], None]


def key_order(where: ObjKey) -> str:
    """The part of an object's etcd key that orders lists: ``namespace/name``, or ``name``."""
    namespace, name = where
    return f"{namespace}/{name}" if namespace else name


def _namespace_order(namespace: str) -> str:
    # No namespace holds a "/": comparing "<ns>/" prefixes orders whole keys.
    return namespace + "/"


class Store:
    """All objects of all resources, with history and synchronous change listeners."""

    def __init__(self, history_size: int = 10_000) -> None:
        if history_size < 1:
            raise ValueError(f"history_size must be at least 1, got {history_size}")
        self.history_size = history_size
        self.rv = 0
        self._objects: dict[StorageKey, dict[str, dict[str, dict[str, Any]]]] = {}
        self._sorted: dict[tuple[StorageKey, str], list[str]] = {}
        self._history: list[StoreEvent] = []
        self._history_rvs: list[int] = []
        self.window_start = 0
        """Events after this resourceVersion are all retained."""
        self._uids: dict[str, tuple[StorageKey, str, str]] = {}
        self._owned: dict[str, set[tuple[StorageKey, str, str]]] = {}
        self._listeners: list[Listener] = []
        self._key_listeners: dict[StorageKey, list[Listener]] = {}

    # --- reads -----------------------------------------------------------------------------

    def get(self, key: StorageKey, namespace: str, name: str) -> dict[str, Any] | None:
        """The stored object, or None."""
        by_ns = self._objects.get(key)
        if by_ns is None:
            return None
        objs = by_ns.get(namespace)
        return None if objs is None else objs.get(name)

    def _sorted_names(self, key: StorageKey, namespace: str) -> list[str]:
        cached = self._sorted.get((key, namespace))
        if cached is None:
            cached = sorted(self._objects.get(key, {}).get(namespace, {}))
            self._sorted[(key, namespace)] = cached
        return cached

    def items(self, key: StorageKey, namespace: str | None) -> list[dict[str, Any]]:
        """Objects of ``key`` in ``namespace`` (None: all), in etcd key order."""
        by_ns = self._objects.get(key)
        if not by_ns:
            return []
        if namespace is not None:
            objs = by_ns.get(namespace)
            if not objs:
                return []
            return [objs[n] for n in self._sorted_names(key, namespace)]
        out: list[dict[str, Any]] = []
        # etcd orders keys ".../<namespace>/<name>": "a-b/x" sorts before "a/x".
        for ns in sorted(by_ns, key=_namespace_order):
            objs = by_ns[ns]
            out.extend(objs[n] for n in self._sorted_names(key, ns))
        return out

    def namespaces_of(self, key: StorageKey) -> list[str]:
        """Namespaces that hold at least one object of ``key``."""
        return [ns for ns, objs in self._objects.get(key, {}).items() if objs]

    def count(self, key: StorageKey, namespace: str | None = None) -> int:
        """How many objects of ``key`` (in ``namespace``) are stored."""
        by_ns = self._objects.get(key, {})
        if namespace is not None:
            return len(by_ns.get(namespace, {}))
        return sum(len(v) for v in by_ns.values())

    def has_any(self, key: StorageKey) -> bool:
        """Whether any object of ``key`` is stored (cheaper than `count`)."""
        return any(self._objects.get(key, {}).values())

    def keys(self) -> list[StorageKey]:
        """Storage keys that ever held an object."""
        return list(self._objects)

    def by_uid(self, uid: str) -> tuple[StorageKey, str, str] | None:
        """Where the live object with ``uid`` is stored."""
        return self._uids.get(uid)

    def dependents(self, owner_uid: str) -> list[tuple[StorageKey, str, str]]:
        """Objects whose ownerReferences name ``owner_uid``."""
        return sorted(self._owned.get(owner_uid, ()))

    def owner_uids(self) -> list[str]:
        """Every uid some object names as its owner."""
        return list(self._owned)

    # --- writes ----------------------------------------------------------------------------

    def _next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def create(self, key: StorageKey, obj: dict[str, Any]) -> StoreEvent:
        """Store a new object; sets its resourceVersion. Raises KeyExistsError."""
        meta = ro_meta(obj)
        ns = meta.get("namespace") or ""
        name = meta["name"]
        objs = self._objects.setdefault(key, {}).setdefault(ns, {})
        if name in objs:
            raise KeyExistsError(name)
        _check_size(obj)
        rv = self._next_rv()
        meta["resourceVersion"] = str(rv)
        objs[name] = obj
        self._sorted.pop((key, ns), None)
        self._index(key, ns, name, None, obj)
        return self._commit(
            StoreEvent(rv, "ADDED", key, namespace=ns, name=name, obj=obj, prev=None)
        )

    def update(self, key: StorageKey, obj: dict[str, Any], expected_rv: str) -> StoreEvent:
        """Replace a stored object if its resourceVersion is ``expected_rv``."""
        meta = ro_meta(obj)
        ns = meta.get("namespace") or ""
        name = meta["name"]
        objs = self._objects.get(key, {}).get(ns, {})
        prev = objs.get(name)
        if prev is None:
            raise KeyNotFoundError(name)
        if ro_meta(prev).get("resourceVersion") != expected_rv:
            raise RVMismatchError(name)
        _check_size(obj)
        rv = self._next_rv()
        meta["resourceVersion"] = str(rv)
        objs[name] = obj
        self._index(key, ns, name, prev, obj)
        return self._commit(
            StoreEvent(rv, "MODIFIED", key, namespace=ns, name=name, obj=obj, prev=prev)
        )

    def delete(
        self, key: StorageKey, namespace: str, name: str, expected_rv: str | None = None
    ) -> StoreEvent:
        """Remove an object; the event carries its last state at the deletion's version."""
        objs = self._objects.get(key, {}).get(namespace, {})
        prev = objs.get(name)
        if prev is None:
            raise KeyNotFoundError(name)
        if expected_rv is not None and ro_meta(prev).get("resourceVersion") != expected_rv:
            raise RVMismatchError(name)
        rv = self._next_rv()
        del objs[name]
        self._sorted.pop((key, namespace), None)
        self._index(key, namespace, name, prev, None)
        gone = dict(prev)
        gone["metadata"] = dict(ro_meta(prev), resourceVersion=str(rv))
        return self._commit(
            StoreEvent(rv, "DELETED", key, namespace=namespace, name=name, obj=gone, prev=prev)
        )

    def replace_silently(self, key: StorageKey, obj: dict[str, Any]) -> None:
        """Swap a stored object for an equivalent one without a new version or event.

        Used to apply defaults to stored custom resources after their CRD schema changed,
        which kube-apiserver does on every read from etcd.
        """
        meta = ro_meta(obj)
        ns = meta.get("namespace") or ""
        objs = self._objects.get(key, {}).get(ns, {})
        if meta["name"] in objs:
            objs[meta["name"]] = obj

    def drop_key(self, key: StorageKey) -> None:
        """Forget every object of ``key`` without events (its resource type is gone)."""
        by_ns = self._objects.pop(key, {})
        for ns, objs in by_ns.items():
            self._sorted.pop((key, ns), None)
            for name, obj in objs.items():
                self._index(key, ns, name, obj, None)

    def _index(
        self,
        key: StorageKey,
        ns: str,
        name: str,
        prev: dict[str, Any] | None,
        obj: dict[str, Any] | None,
    ) -> None:
        where = (key, ns, name)
        prev_meta = ro_meta(prev) if prev is not None else {}
        new_meta = ro_meta(obj) if obj is not None else {}
        prev_uid = prev_meta.get("uid")
        new_uid = new_meta.get("uid")
        if prev_uid and prev_uid != new_uid:
            self._uids.pop(prev_uid, None)
        if new_uid:
            self._uids[new_uid] = where
        prev_owners = {r.get("uid") for r in prev_meta.get("ownerReferences") or () if r.get("uid")}
        new_owners = {r.get("uid") for r in new_meta.get("ownerReferences") or () if r.get("uid")}
        if prev_owners == new_owners:
            return
        for uid in prev_owners - new_owners:
            deps = self._owned.get(uid)
            if deps is not None:
                deps.discard(where)
                if not deps:
                    del self._owned[uid]
        for uid in new_owners - prev_owners:
            self._owned.setdefault(uid, set()).add(where)

    def _commit(self, event: StoreEvent) -> StoreEvent:
        self._history.append(event)
        self._history_rvs.append(event.rv)
        if len(self._history) > 2 * self.history_size:
            drop = len(self._history) - self.history_size
            self.window_start = self._history_rvs[drop - 1]
            del self._history[:drop]
            del self._history_rvs[:drop]
        for listener in list(self._listeners):
            listener(event)
        keyed = self._key_listeners.get(event.key)
        if keyed:
            for listener in list(keyed):
                listener(event)
        return event

    # --- history ---------------------------------------------------------------------------

    def _effective_window(self) -> int:
        excess = len(self._history) - self.history_size
        if excess > 0:
            return max(self.window_start, self._history_rvs[excess - 1])
        return self.window_start

    def events_since(self, rv: int, key: StorageKey | None = None) -> list[StoreEvent]:
        """Events after ``rv`` (of ``key``); raises :class:`TooOld` past the history window."""
        window = self._effective_window()
        if rv < window:
            raise TooOld(rv, window)
        start = bisect.bisect_right(self._history_rvs, rv)
        events = self._history[start:]
        if key is None:
            return list(events)
        return [e for e in events if e.key == key]

    def state_at(self, key: StorageKey, namespace: str | None, rv: int) -> list[dict[str, Any]]:
        """The objects of ``key`` as they were at ``rv``, in key order."""
        if rv >= self.rv:
            return self.items(key, namespace)
        undo = self.events_since(rv, key)
        state: dict[tuple[str, str], dict[str, Any]] = {}
        for obj in self.items(key, namespace):
            m = ro_meta(obj)
            state[(m.get("namespace") or "", m["name"])] = obj
        for event in reversed(undo):
            if namespace is not None and event.namespace != namespace:
                continue
            where = (event.namespace, event.name)
            if event.prev is None:
                state.pop(where, None)
            else:
                state[where] = event.prev
        return [state[k] for k in sorted(state, key=key_order)]

    def compact(self) -> None:
        """Forget the whole history: watches resuming from before now get 410 Expired."""
        self._history.clear()
        self._history_rvs.clear()
        self.window_start = self.rv

    # --- listeners -------------------------------------------------------------------------

    def add_listener(self, listener: Listener, *, key: StorageKey | None = None) -> None:
        """Call ``listener`` synchronously with every committed event (of ``key`` only)."""
        if key is None:
            self._listeners.append(listener)
        else:
            self._key_listeners.setdefault(key, []).append(listener)

    def remove_listener(self, listener: Listener) -> None:
        """Stop calling ``listener``."""
        for listeners in (self._listeners, *self._key_listeners.values()):
            if listener in listeners:
                listeners.remove(listener)

    def all_objects(self) -> Iterator[tuple[StorageKey, dict[str, Any]]]:
        """Every stored object with its key (for namespace cleanup and tests)."""
        for key, by_ns in self._objects.items():
            for objs in by_ns.values():
                for obj in objs.values():
                    yield key, obj

    def in_namespace(self, namespace: str) -> Iterator[tuple[StorageKey, dict[str, Any]]]:
        """Every stored object in ``namespace``."""
        for key, by_ns in self._objects.items():
            for obj in list(by_ns.get(namespace, {}).values()):
                yield key, obj


def check_nesting(value: Any) -> int:
    """The size of ``value``'s JSON encoding; 400 if it is nested too deeply to store.

    One orjson pass measures both: the value is encoded inside as many lists as the
    wrappers of a list or a Table need, so it fails exactly when ``value`` is deeper
    than `MAX_OBJECT_DEPTH`. A value that is not JSON (a key that is not a string) has
    size 0 here: the response encoder reports it.
    """
    wrapped: Any = value
    for _ in range(_ORJSON_MAX_DEPTH - MAX_OBJECT_DEPTH):
        wrapped = [wrapped]
    try:
        encoded = orjson.dumps(wrapped)
    except TypeError as exc:  # orjson.JSONEncodeError too
        if "Recursion" not in str(exc):
            return 0
        raise bad_request(
            f"the object is nested more than {MAX_OBJECT_DEPTH} levels deep, "
            "deeper than this API server can store"
        ) from None
    return len(encoded) - 2 * (_ORJSON_MAX_DEPTH - MAX_OBJECT_DEPTH)


def _check_size(obj: dict[str, Any]) -> None:
    """Refuse, as etcd does, an object too large to write (and one nested too deeply)."""
    if check_nesting(obj) > MAX_REQUEST_BYTES:
        raise storage_request_too_large()
