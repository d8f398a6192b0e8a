"""The namespaces a cache watches, and those chosen at run time by a label selector.

`NamespaceScope` holds the namespaces the cache's informers follow now: fixed by
`pyctrl.cache.CacheOptions.namespaces`, changed at run time by
`pyctrl.cache.Cache.set_namespaces`, or chosen by a `NamespaceFollower`.

`NamespaceFollower` watches the Namespaces whose labels match a selector (metadata only,
the selector sent to the API server) and tells the cache the set of their names each
time it changes. Because the server filters, a namespace that loses the label arrives as
a delete, like one that is deleted; a namespace being deleted (Terminating) stays
watched until it is gone, so that finalizers on its objects can still be handled.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from pyctrl.cache._informer import InformerConfig, SharedInformer
from pyctrl.cache._listwatch import RESTSource
from pyctrl.cache._options import selector_string
from pyctrl.cache._processor import ResourceEventHandlerFuncs
from pyctrl.errors import CacheSyncTimeoutError
from pyctrl.log import get_logger
from pyctrl.meta import GroupVersionKind
from pyctrl.resource import PartialObjectMetadata

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyctrl.cache._options import CacheOptions
    from pyctrl.client import RESTClient, RESTMapper
    from pyctrl.clock import Clock
    from pyctrl.scheme import Scheme

__all__ = ["NAMESPACE", "NamespaceFollower", "NamespaceScope"]

NAMESPACE = GroupVersionKind("", "v1", "Namespace")

_log = get_logger("pyctrl.cache")


class NamespaceFollower:
    """Follows the namespaces a label selector picks (see the module documentation).

    Args:
        selector: The label selector, in its string form.
        on_change: Called with the sorted names whenever the set changes, and once when
            the first list is complete.
        rest, mapper, scheme, options, clock, random: As the cache's own.
    """

    def __init__(
        self,
        selector: str,
        on_change: Callable[[tuple[str, ...]], None],
        *,
        rest: RESTClient,
        mapper: RESTMapper,
        scheme: Scheme,
        options: CacheOptions,
        clock: Clock,
        random: Callable[[], float],
    ) -> None:
        self.selector = selector
        self._on_change = on_change
        self._names: tuple[str, ...] | None = None
        self.informer = SharedInformer(
            gvk=NAMESPACE,
            source=RESTSource(rest, mapper, NAMESPACE, label_selector=selector, metadata_only=True),
            config=InformerConfig.for_cache(
                options, transform=options.default_transform, metadata_only=True
            ),
            scheme=scheme,
            clock=clock,
            random=random,
            description=f"v1/Namespace (metadata, {selector})",
        )
        self.known = asyncio.Event()
        """Set once the first list is complete and the set of names is known."""
        self.informer.add_listener(
            ResourceEventHandlerFuncs[Any](
                add_func=lambda _obj, _initial: self._changed(),
                update_func=lambda _old, _new: self._changed(),
                delete_func=lambda _obj, _unknown: self._changed(),
            ),
            PartialObjectMetadata,
        )

    @property
    def names(self) -> tuple[str, ...]:
        """The names of the namespaces selected now (empty until known)."""
        return self._names or ()

    def _changed(self) -> None:
        if not self.informer.synced():
            return  # the first list is reported whole, by run()
        self._publish()

    def _publish(self) -> None:
        names = tuple(sorted(name for (_, name), _entry in self.informer.store.items()))
        if names == self._names:
            return
        if self._names is not None:
            added = sorted(set(names) - set(self._names))
            dropped = sorted(set(self._names) - set(names))
            _log.info("selected namespaces changed", added=added, dropped=dropped)
        self._names = names
        self._on_change(names)

    async def run(self) -> None:
        """Watch the Namespaces until cancelled, reporting the first complete list at once."""
        async with asyncio.TaskGroup() as tg:
            tg.create_task(self.informer.run(), name=f"informer {self.informer.description}")
            await self.informer.wait_synced()
            self._publish()
            self.known.set()


class NamespaceScope:
    """The namespaces a cache's informers follow (those without namespaces of their own).

    Args:
        options: The cache's options (``namespaces``, ``namespace_selector``,
            ``sync_timeout``).
        on_change: Called with the names a ``namespace_selector`` picks, when they change.
        rest, mapper, scheme, clock, random: As the cache's own.
    """

    def __init__(
        self,
        options: CacheOptions,
        *,
        on_change: Callable[[tuple[str, ...]], None],
        rest: RESTClient,
        mapper: RESTMapper,
        scheme: Scheme,
        clock: Clock,
        random: Callable[[], float],
    ) -> None:
        self._options = options
        self._clock = clock
        self.follower: NamespaceFollower | None = None
        """Follows ``namespace_selector`` when the options give one."""
        if options.namespace_selector is not None:
            self.follower = NamespaceFollower(
                selector_string(options.namespace_selector) or "",
                on_change,
                rest=rest,
                mapper=mapper,
                scheme=scheme,
                options=options,
                clock=clock,
                random=random,
            )
        self.namespaces: tuple[str, ...] | None = tuple(options.namespaces) or None
        """The namespaces cached now; None for all of them."""
        if self.follower is not None:
            self.namespaces = ()
        self.dynamic = False
        """Whether the namespaces were set at run time (`pyctrl.cache.Cache.set_namespaces`)."""

    def set(self, scope: tuple[str, ...] | None) -> bool:
        """Follow ``scope`` from now on; whether it changed."""
        if scope == self.namespaces:
            return False
        _log.info("cached namespaces changed", namespaces=list(scope) if scope else scope)
        self.namespaces = scope
        return True

    async def wait_listed(self, shared: SharedInformer, namespace: str | None) -> None:
        """Wait until a namespace added at run time (each, for None) has been listed."""
        timeout = self._options.sync_timeout
        deadline = None if timeout is None else self._clock.now() + timeout
        try:
            async with self._clock.timeout_at(deadline):
                while not shared.namespace_synced(namespace):
                    await shared.wait_progress()
        except TimeoutError:
            error = shared.last_error()
            raise CacheSyncTimeoutError(
                f"namespace {namespace or '(all)'!r} of {shared.description} was not listed within "
                f"{timeout:g}s" + (f"; last error: {error}" if error else "")
            ) from None

    def check(self, shared: SharedInformer, namespace: str) -> bool:
        """Whether ``namespace`` is cached; raise if it never was meant to be."""
        watched = shared.scope
        if watched is None or namespace in watched:
            return True
        if self.dynamic or self.follower is not None:
            return False  # not cached now: its objects are not in the cache
        raise ValueError(
            f"namespace {namespace!r} is not cached for {shared.description}: "
            f"the cache watches only {', '.join(watched)}"
        )
