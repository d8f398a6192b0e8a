"""The REST mapper: from a kind to its resource name, scope and URL, through discovery."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyctrl.client._errors import NoKindMatchError, NoResourceMatchError
from pyctrl.errors import NotFoundError
from pyctrl.meta import GroupVersionKind, GroupVersionResource

if TYPE_CHECKING:
    from pyctrl.client._rest import RESTClient

__all__ = ["RESTMapper", "RESTMapping"]


@dataclass(frozen=True, slots=True)
class RESTMapping:
    """Where objects of one kind live in the API.

    Attributes:
        gvk: The kind.
        resource: The resource serving it (``apps/v1 deployments``).
        namespaced: Whether objects live in namespaces.
        verbs: The verbs the resource supports, as discovery lists them.
        subresources: The subresources it serves (``status``, ``scale``...).
    """

    gvk: GroupVersionKind
    resource: GroupVersionResource
    namespaced: bool
    verbs: frozenset[str] = frozenset()
    subresources: frozenset[str] = frozenset()


@dataclass
class _GroupVersion:
    by_kind: dict[str, RESTMapping] = field(default_factory=dict)
    by_resource: dict[str, RESTMapping] = field(default_factory=dict)
    found: bool = True  # False: the server does not serve this group version at all


def _group_version_path(group: str, version: str) -> str:
    return f"/api/{version}" if not group else f"/apis/{group}/{version}"


def _parse_resource_list(group: str, version: str, body: dict[str, Any]) -> _GroupVersion:
    result = _GroupVersion()
    subresources: dict[str, set[str]] = {}
    entries = [e for e in body.get("resources") or () if isinstance(e, dict)]
    for entry in entries:
        name = str(entry.get("name", ""))
        if "/" in name:
            parent, _, sub = name.partition("/")
            subresources.setdefault(parent, set()).add(sub)
    for entry in entries:
        name = str(entry.get("name", ""))
        kind = str(entry.get("kind", ""))
        if not name or "/" in name or not kind:
            continue
        mapping = RESTMapping(
            gvk=GroupVersionKind(group, version, kind),
            resource=GroupVersionResource(group, version, name),
            namespaced=bool(entry.get("namespaced")),
            verbs=frozenset(str(v) for v in entry.get("verbs") or ()),
            subresources=frozenset(subresources.get(name, ())),
        )
        # The first resource listed for a kind is its main one, as client-go's mapper keeps.
        result.by_kind.setdefault(kind, mapping)
        result.by_resource[name] = mapping
    return result


class RESTMapper:
    """Maps kinds to resources from the API server's discovery documents.

    Lazy, like controller-runtime's default mapper: a group version's resource list is
    fetched the first time one of its kinds is asked for, and fetched again when a kind
    or resource is not in it (a CustomResourceDefinition installed since), so a new CRD
    is found without a restart. Concurrent lookups share one fetch.

    Args:
        rest: The client to read discovery with.
    """

    def __init__(self, rest: RESTClient) -> None:
        self._rest = rest
        self._group_versions: dict[tuple[str, str], _GroupVersion] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._generation: dict[tuple[str, str], int] = {}

    async def _refreshed(self, group: str, version: str, seen: int) -> _GroupVersion:
        """The group version's resources, fetched anew unless a fetch finished since ``seen``.

        Lookups that miss at the same time wait for one fetch instead of each making one.
        """
        key = (group, version)
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            if self._generation.get(key, 0) > seen and key in self._group_versions:
                return self._group_versions[key]
            try:
                response = await self._rest.request("GET", _group_version_path(group, version))
                result = _parse_resource_list(group, version, response.json())
            except NotFoundError:
                result = _GroupVersion(found=False)
            self._group_versions[key] = result
            self._generation[key] = self._generation.get(key, 0) + 1
            return result

    async def mapping_for(self, gvk: GroupVersionKind) -> RESTMapping:
        """The resource serving ``gvk``.

        Raises:
            NoKindMatchError: The server does not serve the kind, even after re-reading
                discovery.
        """
        key = (gvk.group, gvk.version)
        known = self._group_versions.get(key)
        if known is not None and (mapping := known.by_kind.get(gvk.kind)) is not None:
            return mapping
        fresh = await self._refreshed(gvk.group, gvk.version, self._generation.get(key, 0))
        mapping = fresh.by_kind.get(gvk.kind)
        if mapping is None:
            detail = (
                f"the server does not serve {gvk.api_version}"
                if not fresh.found
                else "is the CustomResourceDefinition installed?"
            )
            raise NoKindMatchError(gvk, detail)
        return mapping

    async def kind_for(self, resource: GroupVersionResource) -> GroupVersionKind:
        """The kind a resource serves.

        Raises:
            NoResourceMatchError: The server does not serve the resource.
        """
        return (await self.mapping_for_resource(resource)).gvk

    async def mapping_for_resource(self, resource: GroupVersionResource) -> RESTMapping:
        """The mapping of a resource, found by its plural name.

        Raises:
            NoResourceMatchError: The server does not serve the resource.
        """
        key = (resource.group, resource.version)
        known = self._group_versions.get(key)
        if known is not None and (mapping := known.by_resource.get(resource.resource)):
            return mapping
        fresh = await self._refreshed(
            resource.group, resource.version, self._generation.get(key, 0)
        )
        mapping = fresh.by_resource.get(resource.resource)
        if mapping is None:
            raise NoResourceMatchError(resource)
        return mapping

    def reset(self) -> None:
        """Forget everything learned; the next lookups read discovery again."""
        self._group_versions.clear()

    @staticmethod
    def path(
        mapping: RESTMapping,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> str:
        """The URL path of a collection, an object, or an object's subresource.

        ``namespace`` is ignored for cluster-scoped resources; for a namespaced resource,
        None means all namespaces (valid for list and watch only).
        """
        resource = mapping.resource
        parts = [_group_version_path(resource.group, resource.version)]
        if mapping.namespaced and namespace:
            parts.append(f"namespaces/{namespace}")
        parts.append(resource.resource)
        if name:
            parts.append(name)
            if subresource:
                parts.append(subresource)
        elif subresource:
            raise ValueError(f"subresource {subresource!r} needs an object name")
        return "/".join(parts)
