"""A client scoped to one namespace: controller-runtime's ``NewNamespacedClient``.

Every call on a namespaced kind happens in the client's namespace: reads and lists that
name no namespace get it, objects written without one get it (on a copy: the caller's
object is never changed), and a call that names another namespace is refused with a
`ValueError` rather than quietly sent elsewhere. Cluster-scoped kinds pass through.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, TypeVar

from pyctrl.client._client import Client, SubResourceClient
from pyctrl.resource import Unstructured, accessor

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyctrl.client._patch import Patch
    from pyctrl.client._reader import ObjectList
    from pyctrl.labels import Selector
    from pyctrl.meta import GroupVersionKind

__all__ = ["NamespacedClient"]

T = TypeVar("T")


def _with_namespace(obj: T, namespace: str) -> T:
    clone = copy.deepcopy(obj)
    if isinstance(clone, Unstructured):
        clone.metadata["namespace"] = namespace
    elif isinstance(clone, dict):
        clone.setdefault("metadata", {})["namespace"] = namespace
    else:
        accessor(clone)  # gives a model without metadata an empty one
        clone.metadata.namespace = namespace  # type: ignore[attr-defined]
    return clone


class NamespacedClient(Client):
    """A `Client` whose every call on namespaced kinds is in ``namespace``.

    Args:
        client: The client that does the work.
        namespace: The namespace.

    Raises:
        ValueError: ``namespace`` is empty.
    """

    def __init__(self, client: Client, namespace: str) -> None:
        if not isinstance(namespace, str) or not namespace:
            raise ValueError(f"NamespacedClient needs a namespace name, got {namespace!r}")
        self.__dict__.update(client.__dict__)
        self._owns_rest = False
        self.wrapped = client
        """The client that does the work."""
        self.namespace = namespace

    async def _namespaced(self, gvk: GroupVersionKind) -> bool:
        return bool((await self.mapper.mapping_for(gvk)).namespaced)

    def _check(self, namespace: str | None, what: str) -> str:
        if namespace and namespace != self.namespace:
            raise ValueError(
                f"{what}: namespace {namespace!r} does not match the namespace "
                f"{self.namespace!r} of the NamespacedClient"
            )
        return self.namespace

    async def _scope_type(
        self, type_: type[Any], gvk: GroupVersionKind | None, namespace: str | None, what: str
    ) -> str | None:
        kind = self.wrapped._api.gvk_of_type(type_, gvk)
        if not await self._namespaced(kind):
            return namespace
        return self._check(namespace, f"{what} {kind.kind}")

    async def _scope_object(self, obj: T, what: str) -> T:
        gvk = self.scheme.gvk_for(obj)
        if not await self._namespaced(gvk):
            return obj
        namespace = accessor(obj).namespace
        self._check(namespace, f"{what} {gvk.kind} {accessor(obj).name!r}")
        return obj if namespace else _with_namespace(obj, self.namespace)

    async def get(
        self,
        type_: type[T],
        name: str,
        namespace: str | None = None,
        *,
        gvk: GroupVersionKind | None = None,
    ) -> T:
        """`Client.get` in the client's namespace."""
        namespace = await self._scope_type(type_, gvk, namespace, "get")
        return await self.wrapped.get(type_, name, namespace, gvk=gvk)

    async def list(
        self,
        type_: type[T],
        *,
        namespace: str | None = None,
        labels: str | Mapping[str, str] | Selector | None = None,
        fields: str | Mapping[str, str] | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        gvk: GroupVersionKind | None = None,
    ) -> ObjectList[T]:
        """`Client.list` in the client's namespace."""
        namespace = await self._scope_type(type_, gvk, namespace, "list")
        return await self.wrapped.list(
            type_,
            namespace=namespace,
            labels=labels,
            fields=fields,
            limit=limit,
            continue_=continue_,
            gvk=gvk,
        )

    async def create(self, obj: T, *, dry_run: bool = False, field_manager: str | None = None) -> T:
        """`Client.create` in the client's namespace."""
        obj = await self._scope_object(obj, "create")
        return await self.wrapped.create(obj, dry_run=dry_run, field_manager=field_manager)

    async def update(self, obj: T, *, dry_run: bool = False, field_manager: str | None = None) -> T:
        """`Client.update` in the client's namespace."""
        obj = await self._scope_object(obj, "update")
        return await self.wrapped.update(obj, dry_run=dry_run, field_manager=field_manager)

    async def patch(
        self,
        obj: T,
        patch: Patch,
        *,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> T:
        """`Client.patch` in the client's namespace."""
        obj = await self._scope_object(obj, "patch")
        return await self.wrapped.patch(obj, patch, dry_run=dry_run, field_manager=field_manager)

    async def delete(self, obj: Any, **options: Any) -> None:
        """`Client.delete` (same options) in the client's namespace."""
        obj = await self._scope_object(obj, "delete")
        await self.wrapped.delete(obj, **options)

    async def delete_all_of(
        self, type_: type[Any], *, namespace: str | None = None, **options: Any
    ) -> None:
        """`Client.delete_all_of` (same options) in the client's namespace."""
        gvk = options.get("gvk")
        namespace = await self._scope_type(type_, gvk, namespace, "delete_all_of")
        await self.wrapped.delete_all_of(type_, namespace=namespace, **options)

    def status(self) -> SubResourceClient:
        """`Client.status` in the client's namespace."""
        return _NamespacedSubResource(self, self.wrapped.status())

    def subresource(self, name: str) -> SubResourceClient:
        """`Client.subresource` in the client's namespace."""
        return _NamespacedSubResource(self, self.wrapped.subresource(name))


class _NamespacedSubResource(SubResourceClient):
    """A subresource client whose objects are scoped to the owner's namespace."""

    def __init__(self, owner: NamespacedClient, inner: SubResourceClient) -> None:
        self.__dict__.update(inner.__dict__)
        self._owner = owner
        self._inner = inner

    async def get(self, obj: T, *, type_: type[Any] | None = None) -> Any:
        """`SubResourceClient.get` in the owner's namespace."""
        return await self._inner.get(await self._owner._scope_object(obj, "get"), type_=type_)

    async def create(self, obj: Any, body: Any, **options: Any) -> Any:
        """`SubResourceClient.create` in the owner's namespace."""
        obj = await self._owner._scope_object(obj, "create")
        return await self._inner.create(obj, body, **options)

    async def update(self, obj: T, **options: Any) -> Any:
        """`SubResourceClient.update` in the owner's namespace."""
        obj = await self._owner._scope_object(obj, "update")
        return await self._inner.update(obj, **options)

    async def patch(self, obj: T, patch: Patch, **options: Any) -> Any:
        """`SubResourceClient.patch` in the owner's namespace."""
        obj = await self._owner._scope_object(obj, "patch")
        return await self._inner.patch(obj, patch, **options)
