"""The cache's informer map: one shared informer per type, created on first use.

As controller-runtime's ``pkg/cache/internal/informers.go``: `Informers` keys informers
by kind and metadata-only view, builds each from the cache's options (its `ByObject`
selectors, transform and namespaces, its shards), runs them in the cache's task group
once the cache starts (at once for those asked for later), and stops one on removal.
"""

from __future__ import annotations

import contextvars
import functools
from typing import TYPE_CHECKING, Any

from pyctrl.cache._informer import InformerConfig, SharedInformer
from pyctrl.cache._listwatch import RESTSource
from pyctrl.cache._optional import ServedKinds, informer_served
from pyctrl.cache._options import ByObject, field_selector_string, selector_string
from pyctrl.cache._sharded import UID_INDEX, ShardedSource, shard_objects
from pyctrl.log import get_logger
from pyctrl.meta import GroupVersionKind
from pyctrl.resource import PartialObjectMetadata, Unstructured

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

    from pyctrl.cache._namespaces import NamespaceScope
    from pyctrl.cache._options import CacheOptions
    from pyctrl.client import RESTClient, RESTMapper
    from pyctrl.clock import Clock
    from pyctrl.scheme import Scheme
    from pyctrl.sharding import SlotAssignment

__all__ = ["InformerKey", "Informers"]

InformerKey = tuple[GroupVersionKind, bool]
"""(kind, metadata only): what an informer is kept under."""

_log = get_logger("pyctrl.cache")
_UNTYPED: tuple[type[Any], ...] = (Unstructured, PartialObjectMetadata, dict)


def _reset(shared: SharedInformer, _stopped: object = None) -> None:
    shared.reset()


def _uid_of(obj: dict[str, Any]) -> list[str]:
    uid = (obj.get("metadata") or {}).get("uid")
    return [uid] if uid else []


class Informers:
    """The informers of a cache, by kind and view (see the module documentation).

    Args:
        rest, mapper, scheme, options, clock, random: As the cache's own.
        scope: The namespaces informers without namespaces of their own follow.
    """

    def __init__(
        self,
        rest: RESTClient,
        mapper: RESTMapper,
        scheme: Scheme,
        options: CacheOptions,
        *,
        clock: Clock,
        random: Callable[[], float],
        scope: NamespaceScope,
    ) -> None:
        self._rest = rest
        self._mapper = mapper
        self._scheme = scheme
        self._options = options
        self._clock = clock
        self._random = random
        self._scope = scope
        self._by_type: dict[GroupVersionKind, ByObject] = {
            self.gvk_of(key): value for key, value in options.by_type.items()
        }
        self._metadata_only = {self.gvk_of(key) for key in options.metadata_only}
        self.informers: dict[InformerKey, SharedInformer] = {}
        """Every informer, by kind and view."""
        self._shards: dict[GroupVersionKind, SlotAssignment] = {}
        self.sources: dict[InformerKey, RESTSource] = {}
        """The source each informer lists and watches through."""
        self._tasks: dict[InformerKey, asyncio.Task[None]] = {}
        # Informers that follow the cache-wide namespaces (no ByObject namespaces of their own).
        self._followers: set[InformerKey] = set()
        self._tg: asyncio.TaskGroup | None = None
        self._served: ServedKinds | None = None  # once an optional informer is asked for
        self._stopping: dict[InformerKey, asyncio.Task[None]] = {}

    def gvk_of(self, key: type[Any] | GroupVersionKind) -> GroupVersionKind:
        """The kind of a type (a kind is its own)."""
        if isinstance(key, GroupVersionKind):
            return key
        return self._scheme.gvk_for(key)

    # running ---------------------------------------------------------------------------

    def start(self, tg: asyncio.TaskGroup) -> None:
        """Run every informer in ``tg`` (the namespace follower's first), and later ones too."""
        self._tg = tg
        follower = self._scope.follower
        if follower is not None:
            tg.create_task(
                follower.run(),
                name=f"informer {follower.informer.description}",
                context=contextvars.Context(),
            )
        if self._served is not None:
            self._run_served_kinds()
        for key, shared in self.informers.items():
            if shared.served:
                self._run(key, shared)

    def stop(self) -> None:
        """Forget the task group (the cache's `start` has ended)."""
        self._tg = None

    def _run(self, key: InformerKey, shared: SharedInformer) -> None:
        assert self._tg is not None
        # A fresh context: an informer asked for inside a reconcile must not log as it.
        self._tasks[key] = self._tg.create_task(
            self._informer_main(key, shared),
            name=f"informer {shared.description}",
            context=contextvars.Context(),
        )

    async def _informer_main(self, key: InformerKey, shared: SharedInformer) -> None:
        follower = self._scope.follower
        if follower is not None and key in self._followers:
            # Which namespaces to watch is not known before the selected ones are listed.
            await follower.known.wait()
            shared.set_scope(self._scope.namespaces)
        await shared.run()

    def every(self) -> list[SharedInformer]:
        """Every active informer: not the optional ones of kinds not served now."""
        every = [shared for shared in self.informers.values() if shared.served]
        if self._scope.follower is not None:
            every.append(self._scope.follower.informer)
        if self._served is not None:
            every.append(self._served.informer)
        return every

    def inactive(self) -> list[SharedInformer]:
        """The optional informers whose kinds are not served now."""
        return [shared for shared in self.informers.values() if not shared.served]

    # optional kinds --------------------------------------------------------------------

    def _make_optional(self, shared: SharedInformer) -> None:
        """Run a new informer only while its kind is served (`pyctrl.cache._optional`)."""
        shared.optional = True
        if self._served is None:
            self._served = ServedKinds(
                self._rest,
                self._mapper,
                self._scheme,
                self._options,
                clock=self._clock,
                random=self._random,
                changed=self._served_changed,
            )
            if self._tg is not None:
                self._run_served_kinds()
        shared.served = shared.gvk in self._served.served
        informer_served.labels(shared.description).set(1 if shared.served else 0)

    def is_served(self, gvk: GroupVersionKind) -> bool | None:
        """Whether optional ``gvk`` is served now; None when no optional informer has it."""
        optional = [s for key, s in self.informers.items() if key[0] == gvk and s.optional]
        return optional[0].served if optional else None

    def _run_served_kinds(self) -> None:
        assert self._tg is not None
        assert self._served is not None
        self._tg.create_task(
            self._served.informer.run(),
            name="informer of served kinds",
            context=contextvars.Context(),
        )

    def _served_changed(self, gvk: GroupVersionKind, served: bool) -> None:
        for key, shared in list(self.informers.items()):
            if key[0] != gvk or not shared.optional or shared.served == served:
                continue
            shared.served = served
            informer_served.labels(shared.description).set(1 if served else 0)
            if served:
                _log.info("optional kind served: starting its informer", type=shared.description)
                stopping = self._stopping.pop(key, None)
                if stopping is not None and not stopping.done():
                    # Back before the old run ended: start once it has (and was reset).
                    stopping.add_done_callback(functools.partial(self._restart, key))
                elif self._tg is not None:
                    self._run(key, shared)
                continue
            _log.info("optional kind no longer served: informer stopped", type=shared.description)
            task = self._tasks.pop(key, None)
            if task is None:
                continue
            task.cancel()
            task.add_done_callback(functools.partial(_reset, shared))
            self._stopping[key] = task

    def _restart(self, key: InformerKey, _stopped: object = None) -> None:
        shared = self.informers.get(key)
        if shared is not None and shared.served and self._tg is not None and key not in self._tasks:
            self._run(key, shared)

    def unsynced(self) -> list[str]:
        """Each informer not synced yet, with its last error."""
        return [
            s.description + (f" (last error: {s.last_error()})" if s.last_error() else "")
            for s in self.every()
            if not s.synced()
        ]

    def problems(self) -> list[str]:
        """Each informer not synced or not healthy, and why."""
        problems = []
        for shared in self.every():
            synced, healthy = shared.synced(), shared.healthy()
            if synced and healthy:
                continue
            what = " and ".join(
                word for word, bad in (("not synced", not synced), ("failing", not healthy)) if bad
            )
            error = shared.last_error()
            problems.append(f"{shared.description}: {what}" + (f" ({error})" if error else ""))
        return problems

    def rescope(self, scope: tuple[str, ...] | None) -> None:
        """Have every informer that follows the cache-wide namespaces watch ``scope``."""
        for key in self._followers:
            shared = self.informers.get(key)
            if shared is not None:
                shared.set_scope(scope)

    # informers -------------------------------------------------------------------------

    def key(
        self, type_: type[Any], gvk: GroupVersionKind | None, metadata_only: bool | None
    ) -> InformerKey:
        """The informer key of a Python type (and kind, for untyped ones).

        Raises:
            TypeError: ``type_`` is not a type, or is untyped and no ``gvk`` was given.
            ValueError: ``gvk`` is not ``type_``'s kind.
        """
        if not isinstance(type_, type):
            raise TypeError(f"expected a type (e.g. V1Pod or Unstructured), got {type_!r}")
        if type_ in _UNTYPED:
            if gvk is None:
                raise TypeError(
                    f"{type_.__name__} does not say which kind it is: "
                    "pass gvk=GroupVersionKind(...)"
                )
        else:
            own = self._scheme.gvk_for(type_)
            if gvk is not None and gvk != own:
                raise ValueError(f"gvk={gvk} does not match {type_.__qualname__}, which is {own}")
            gvk = own
        if metadata_only is None:
            by_type = self._by_type.get(gvk)
            metadata_only = (
                type_ is PartialObjectMetadata
                or gvk in self._metadata_only
                or bool(by_type and by_type.metadata_only)
            )
        return gvk, metadata_only

    def get(
        self, gvk: GroupVersionKind, metadata_only: bool, *, optional: bool = False
    ) -> SharedInformer:
        """The informer of a kind and view, created (and started, if running) on first use.

        ``optional`` makes a new informer run only while its kind is served (an existing
        one keeps what it is).
        """
        key = (gvk, metadata_only)
        shared = self.informers.get(key)
        if shared is not None:
            return shared
        options = self._options
        by_type = self._by_type.get(gvk) or ByObject()
        source_args: dict[str, Any] = {
            "label_selector": selector_string(by_type.labels),
            "field_selector": field_selector_string(by_type.fields),
            "metadata_only": metadata_only,
        }
        assignment = self._shards.get(gvk)
        source = (
            RESTSource(self._rest, self._mapper, gvk, **source_args)
            if assignment is None
            else ShardedSource(self._rest, self._mapper, gvk, assignment=assignment, **source_args)
        )
        follows = by_type.namespaces is None
        scope = self._scope.namespaces
        config = InformerConfig.for_cache(
            options,
            namespaces=tuple(by_type.namespaces or ()) if not follows else scope or (),
            transform=by_type.transform or options.default_transform,
            metadata_only=metadata_only,
            resync_period=options.sync_period,
        )
        shared = SharedInformer(
            gvk=gvk,
            source=source,
            config=config,
            scheme=self._scheme,
            clock=self._clock,
            random=self._random,
        )
        if assignment is not None:
            shared.add_index(UID_INDEX, _uid_of)
            shard_objects.labels(shared.description).set_function(lambda: len(shared.store))
        if follows:
            self._followers.add(key)
            shared.set_scope(scope)
        self.informers[key] = shared
        self.sources[key] = source
        if optional:
            self._make_optional(shared)
        if self._tg is not None and shared.served:
            self._run(key, shared)
        return shared

    def shard(self, gvk: GroupVersionKind, assignment: SlotAssignment) -> None:
        """Cache only the objects of ``gvk`` in ``assignment``'s slots (see ``Cache.shard``).

        Raises:
            RuntimeError: an informer for the type exists already (unsharded).
        """
        if self._shards.get(gvk) is assignment:
            return
        if any(key[0] == gvk for key in self.informers):
            raise RuntimeError(
                f"Cache.shard({gvk.kind}): an informer for it exists already; "
                "shard a type before anything reads or watches it"
            )
        self._shards[gvk] = assignment

    def remove(self, key: InformerKey) -> SharedInformer | None:
        """Stop the informer under ``key`` and forget it; the informer, if there was one."""
        shared = self.informers.pop(key, None)
        if shared is None:
            return None
        self.sources.pop(key, None)
        self._followers.discard(key)
        task = self._tasks.pop(key, None)
        if task is not None:
            task.cancel()
        _log.info("informer removed", type=shared.description)
        return shared
