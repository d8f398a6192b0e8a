"""Lists and watches of one type over the API server, for reflectors."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import orjson

from pyctrl.cache._jsonlist import ListDecoder
from pyctrl.cache._reflector import ListPage

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from pyctrl.client import RESTClient, RESTMapper
    from pyctrl.meta import GroupVersionKind

__all__ = ["RESTSource"]

_META_LIST = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json"
_META_WATCH = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io,application/json"
_JSON = "application/json"
# Seconds a list response may go without any data before it counts as stalled.
_LIST_READ_TIMEOUT = 60.0


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

    def _list_query(
        self, limit: int | None, continue_: str | None, resource_version: str, match: str | None
    ) -> dict[str, str]:
        query = self._selectors()
        if limit:
            query["limit"] = str(limit)
        if continue_:
            query["continue"] = continue_
        if resource_version:
            query["resourceVersion"] = resource_version
        if match:
            query["resourceVersionMatch"] = match
        return query

    @contextlib.asynccontextmanager
    async def list_stream(
        self,
        *,
        namespace: str | None,
        limit: int | None,
        continue_: str | None,
        resource_version: str = "",
        resource_version_match: str | None = None,
    ) -> AsyncIterator[_StreamedList]:
        """One page of the list, its items decoded as the body arrives.

        Raises `pyctrl.errors.APIError` on entry if the server refuses the list;
        iterating raises `pyctrl.cache.MalformedListError` if the body is not a list.
        """
        query = self._list_query(limit, continue_, resource_version, resource_version_match)
        async with self._rest.stream(
            self._path(namespace),
            query=query,
            accept=_META_LIST if self._metadata_only else _JSON,
            read_timeout=_LIST_READ_TIMEOUT,
            lines=False,
        ) as chunks:
            yield _StreamedList(self, chunks)

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
        query = self._list_query(limit, continue_, resource_version, resource_version_match)
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


class _StreamedList:
    """A list response's items as they are decoded, then its metadata."""

    def __init__(self, source: RESTSource, chunks: AsyncIterator[bytes]) -> None:
        self._source = source
        self._chunks = chunks
        self._decoder = ListDecoder(f"{source._gvk.api_version}/{source._gvk.kind}")
        self._done = False

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        decoder = self._decoder
        async for chunk in self._chunks:
            for item in decoder.feed(chunk):
                yield item
        for item in decoder.close():
            yield item
        self._source.list_metadata = decoder.metadata
        self._done = True

    def _metadata(self) -> dict[str, Any]:
        if not self._done:
            raise RuntimeError("a streamed list's metadata is known once its items are read")
        return self._decoder.metadata

    @property
    def resource_version(self) -> str:
        """The list's ``metadata.resourceVersion``."""
        return str(self._metadata().get("resourceVersion") or "")

    @property
    def continue_(self) -> str | None:
        """The token for the next page, or None on the last."""
        return self._metadata().get("continue") or None
