"""Lists and watches of one type over the API server, for reflectors."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import orjson

from pyctrl.cache._reflector import ListPage

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from pyctrl.client import RESTClient, RESTMapper
    from pyctrl.meta import GroupVersionKind

__all__ = ["RESTSource"]

_META_LIST = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json"
_META_WATCH = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io,application/json"
_JSON = "application/json"


class RESTSource:
    """Resolves, lists and watches one type through a RESTClient and a RESTMapper.

    Args:
        rest: The HTTP client.
        mapper: Maps the GroupVersionKind to its resource.
        gvk: The type.
        label_selector: Sent with every list and watch.
        field_selector: Sent with every list and watch.
        metadata_only: Ask the server for ``PartialObjectMetadata``.
    """

    def __init__(
        self,
        rest: RESTClient,
        mapper: RESTMapper,
        gvk: GroupVersionKind,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
    ) -> None:
        self._rest = rest
        self._mapper = mapper
        self._gvk = gvk
        self._labels = label_selector
        self._fields = field_selector
        self._metadata_only = metadata_only
        self.plural: str | None = None
        self._namespaced = False
        self.list_metadata: dict[str, Any] = {}
        """The ``metadata`` of the last list page received."""

    async def namespaced(self) -> bool:
        """Resolve the resource; raises `pyctrl.client.NoKindMatchError` if not served."""
        mapping = await self._mapper.mapping_for(self._gvk)
        self.plural = str(mapping.resource.resource)
        self._namespaced = bool(mapping.namespaced)
        return self._namespaced

    def _path(self, namespace: str | None) -> str:
        gvk = self._gvk
        base = f"/apis/{gvk.group}/{gvk.version}" if gvk.group else f"/api/{gvk.version}"
        if namespace and self._namespaced:
            return f"{base}/namespaces/{namespace}/{self.plural}"
        return f"{base}/{self.plural}"

    def _selectors(self) -> dict[str, str]:
        query: dict[str, str] = {}
        if self._labels:
            query["labelSelector"] = self._labels
        if self._fields:
            query["fieldSelector"] = self._fields
        return query

    async def list(
        self,
        *,
        namespace: str | None,
        limit: int | None,
        continue_: str | None,
        resource_version: str = "",
        resource_version_match: str | None = None,
    ) -> ListPage:
        """One page of the list, at ``resource_version`` (a consistent read when empty)."""
        query = self._selectors()
        if limit:
            query["limit"] = str(limit)
        if continue_:
            query["continue"] = continue_
        if resource_version:
            query["resourceVersion"] = resource_version
        if resource_version_match:
            query["resourceVersionMatch"] = resource_version_match
        response = await self._rest.request(
            "GET",
            self._path(namespace),
            query=query,
            accept=_META_LIST if self._metadata_only else _JSON,
        )
        body = response.json()
        if not isinstance(body, dict):
            raise ValueError(f"list of {self._gvk} answered with a {type(body).__name__}")
        metadata = body.get("metadata") or {}
        self.list_metadata = metadata
        items = body.get("items") or []
        return ListPage(
            items=[item for item in items if isinstance(item, dict)],
            resource_version=str(metadata.get("resourceVersion") or ""),
            continue_=metadata.get("continue") or None,
        )

    @contextlib.asynccontextmanager
    async def watch(
        self,
        *,
        namespace: str | None,
        resource_version: str,
        timeout_seconds: int,
        idle_timeout: float | None,
        send_initial_events: bool = False,
    ) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        """A watch with bookmarks from ``resource_version``; yields decoded events.

        With ``send_initial_events``, a streaming list (see `ListerWatcher.watch`).
        """
        query = self._selectors()
        query.update(
            watch="true",
            allowWatchBookmarks="true",
            timeoutSeconds=str(timeout_seconds),
        )
        if resource_version or not send_initial_events:
            query["resourceVersion"] = resource_version
        if send_initial_events:
            query["sendInitialEvents"] = "true"
            query["resourceVersionMatch"] = "NotOlderThan"
        async with self._rest.stream(
            self._path(namespace),
            query=query,
            accept=_META_WATCH if self._metadata_only else _JSON,
            read_timeout=idle_timeout if idle_timeout is not None else timeout_seconds + 60.0,
        ) as lines:
            yield _decoded(lines)


async def _decoded(lines: AsyncIterator[bytes]) -> AsyncIterator[dict[str, Any]]:
    async for line in lines:
        if not line.strip():
            continue
        event = orjson.loads(line)
        if not isinstance(event, dict):
            raise ValueError(f"watch sent a {type(event).__name__}, not an event")
        yield event
