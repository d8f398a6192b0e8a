"""Namespaces chosen at run time by a label selector, followed live.

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
from pyctrl.cache._processor import ResourceEventHandlerFuncs
from pyctrl.log import get_logger
from pyctrl.meta import GroupVersionKind
from pyctrl.resource import PartialObjectMetadata

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyctrl.cache._options import CacheOptions
    from pyctrl.client import RESTClient, RESTMapper
    from pyctrl.clock import Clock
    from pyctrl.scheme import Scheme

__all__ = ["NAMESPACE", "NamespaceFollower"]

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
            config=InformerConfig(
                metadata_only=True,
                transform=options.default_transform,
                resync_period=None,
                backoff=options.backoff,
                page_size=options.page_size,
                watch_list=options.watch_list,
                min_watch_timeout=options.min_watch_timeout,
                idle_timeout=options.watch_idle_timeout,
                unhealthy_after=options.unhealthy_after,
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
