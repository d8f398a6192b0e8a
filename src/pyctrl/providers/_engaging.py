"""What the providers that follow objects of the local cluster share."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import TYPE_CHECKING, Any

from pyctrl.cluster import Cluster, config_from_kubeconfig
from pyctrl.errors import ConfigError
from pyctrl.log import get_logger

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyctrl.cache import CachedObject, Informer
    from pyctrl.cluster import Aware

__all__ = ["Engaging"]

_log = get_logger("pyctrl.providers")


class Engaging:
    """Engages a cluster per object of the local cluster, again when its kubeconfig changes.

    It is its informer's `pyctrl.cache.CachedEventHandler`: an object is decoded only
    when `_seen` uses it, never for a delete or an object the provider passes over.
    """

    def __init__(self) -> None:
        self._engaged: dict[str, str] = {}  # cluster name -> digest of its kubeconfig
        self._aware: Aware | None = None
        self._local: Cluster | None = None

    async def _follow(self, aware: Aware, local: Cluster, informer: Informer[Any]) -> None:
        """Receive ``informer``'s events (as its handler) until cancelled."""
        self._aware, self._local = aware, local
        registration = informer.add_cached_event_handler(self)
        try:
            await asyncio.Event().wait()
        finally:
            registration.remove()

    async def add(self, obj: CachedObject[Any], is_in_initial_list: bool) -> None:
        """An object appeared."""
        await self._seen(obj)

    async def update(self, old: CachedObject[Any], new: CachedObject[Any]) -> None:
        """An object changed."""
        await self._seen(new)

    async def delete(self, obj: CachedObject[Any], delete_state_unknown: bool) -> None:
        """An object is gone: disengage its cluster."""
        await self._gone(obj.namespace, obj.name)

    async def _seen(self, obj: CachedObject[Any]) -> None:
        """Engage, re-engage or disengage the cluster of a new or changed object."""
        raise NotImplementedError

    async def _gone(self, namespace: str, name: str) -> None:
        """Disengage the cluster of a deleted object."""
        raise NotImplementedError

    async def _engage(self, name: str, kubeconfig: bytes | Mapping[str, Any], origin: str) -> None:
        """Engage ``name`` with ``kubeconfig`` unless it is engaged with that one already."""
        text = (
            kubeconfig if isinstance(kubeconfig, bytes) else json.dumps(kubeconfig, sort_keys=True)
        )
        digest = hashlib.sha256(text if isinstance(text, bytes) else text.encode()).hexdigest()
        if self._engaged.get(name) == digest:
            return
        assert self._aware is not None
        assert self._local is not None
        try:
            config = await config_from_kubeconfig(kubeconfig)
        except ConfigError as exc:
            _log.error("cluster access unusable", origin=origin, cluster=name, error=str(exc))
            await self._drop(name)
            return
        self._engaged[name] = digest
        await self._aware.engage(name, Cluster(config, name=name, scheme=self._local.scheme))

    async def _drop(self, name: str) -> None:
        """Disengage ``name`` if this provider engaged it."""
        if self._engaged.pop(name, None) is not None:
            assert self._aware is not None
            await self._aware.disengage(name)
