"""A client whose calls go through functions you give: controller-runtime's ``client/interceptor``.

For tests that need one call to fail, or to see what a reconciler writes, without a fake
API server::

    async def failing_update(client, obj, **options):
        raise ConflictError(code=409, reason="Conflict", message="injected")

    client = InterceptorClient(manager.client, InterceptorFuncs(update=failing_update))

Each function receives the wrapped client first, then the call's own arguments, and
returns what the call returns; it may call the wrapped client itself (to pass the call on,
or to change its arguments or its result). Calls without a function go straight to the
wrapped client. ``apply`` is a patch unless an ``apply`` function is given.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, TypeVar

from pyctrl.client._client import Client, SubResourceClient

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyctrl.client._patch import Patch
    from pyctrl.client._reader import ObjectList
    from pyctrl.labels import Selector
    from pyctrl.meta import GroupVersionKind

__all__ = ["InterceptorClient", "InterceptorFuncs"]

T = TypeVar("T")

Interceptor = Callable[..., Awaitable[Any]]
"""``async def f(client, *args, **kwargs)``: the wrapped client, then the call's arguments."""


@dataclass(frozen=True)
class InterceptorFuncs:
    """The functions an `InterceptorClient` calls instead of the wrapped client's methods.

    Each is ``async def f(client, *args, **kwargs)``, called with the wrapped client and
    the arguments of the call it replaces (``get(client, type_, name, namespace, gvk=...)``,
    ``update(client, obj, dry_run=..., field_manager=...)``...). The ``subresource_*``
    functions get the subresource's name after the client:
    ``subresource_update(client, "status", obj, body=..., ...)``.
    """

    get: Interceptor | None = None
    list: Interceptor | None = None
    create: Interceptor | None = None
    update: Interceptor | None = None
    patch: Interceptor | None = None
    apply: Interceptor | None = None
    delete: Interceptor | None = None
    delete_all_of: Interceptor | None = None
    subresource_get: Interceptor | None = None
    subresource_create: Interceptor | None = None
    subresource_update: Interceptor | None = None
    subresource_patch: Interceptor | None = None

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if value is not None and not callable(value):
                raise TypeError(f"InterceptorFuncs.{item.name} must be callable, got {value!r}")


class InterceptorClient(Client):
    """A `Client` that routes calls through `InterceptorFuncs` (see the module documentation).

    Args:
        client: The client that does the work.
        funcs: The functions to call instead of its methods.
    """

    def __init__(self, client: Client, funcs: InterceptorFuncs) -> None:
        if not isinstance(funcs, InterceptorFuncs):
            raise TypeError(f"funcs must be InterceptorFuncs, got {type(funcs).__qualname__}")
        self.__dict__.update(client.__dict__)
        self._owns_rest = False
        self.wrapped = client
        """The wrapped client, for functions that pass calls on."""
        self.funcs = funcs

    async def get(
        self,
        type_: type[T],
        name: str,
        namespace: str | None = None,
        *,
        gvk: GroupVersionKind | None = None,
    ) -> T:
        """`Client.get`, through ``funcs.get`` if set."""
        result: T = await self._via(self.funcs.get, "get", type_, name, namespace, gvk=gvk)
        return result

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
        """`Client.list`, through ``funcs.list`` if set."""
        result: ObjectList[T] = await self._via(
            self.funcs.list,
            "list",
            type_,
            namespace=namespace,
            labels=labels,
            fields=fields,
            limit=limit,
            continue_=continue_,
            gvk=gvk,
        )
        return result

    async def create(self, obj: T, *, dry_run: bool = False, field_manager: str | None = None) -> T:
        """`Client.create`, through ``funcs.create`` if set."""
        result: T = await self._via(
            self.funcs.create, "create", obj, dry_run=dry_run, field_manager=field_manager
        )
        return result

    async def update(self, obj: T, *, dry_run: bool = False, field_manager: str | None = None) -> T:
        """`Client.update`, through ``funcs.update`` if set."""
        result: T = await self._via(
            self.funcs.update, "update", obj, dry_run=dry_run, field_manager=field_manager
        )
        return result

    async def patch(
        self,
        obj: T,
        patch: Patch,
        *,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> T:
        """`Client.patch`, through ``funcs.patch`` if set."""
        result: T = await self._via(
            self.funcs.patch, "patch", obj, patch, dry_run=dry_run, field_manager=field_manager
        )
        return result

    async def apply(
        self,
        obj: T,
        *,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> T:
        """`Client.apply`, through ``funcs.apply`` if set, else as a patch (``funcs.patch``)."""
        if self.funcs.apply is not None:
            result: T = await self.funcs.apply(
                self.wrapped, obj, field_manager=field_manager, force=force, dry_run=dry_run
            )
            return result
        return await super().apply(obj, field_manager=field_manager, force=force, dry_run=dry_run)

    async def delete(self, obj: Any, **options: Any) -> None:
        """`Client.delete` (same options), through ``funcs.delete`` if set."""
        await self._via(self.funcs.delete, "delete", obj, **options)

    async def delete_all_of(self, type_: type[Any], **options: Any) -> None:
        """`Client.delete_all_of` (same options), through ``funcs.delete_all_of`` if set."""
        await self._via(self.funcs.delete_all_of, "delete_all_of", type_, **options)

    def status(self) -> SubResourceClient:
        """`Client.status`, through the ``subresource_*`` functions."""
        return _InterceptedSubResource(self, self.wrapped.status())

    def subresource(self, name: str) -> SubResourceClient:
        """`Client.subresource`, through the ``subresource_*`` functions."""
        return _InterceptedSubResource(self, self.wrapped.subresource(name))

    async def _via(self, func: Interceptor | None, verb: str, *args: Any, **kwargs: Any) -> Any:
        if func is not None:
            return await func(self.wrapped, *args, **kwargs)
        return await getattr(self.wrapped, verb)(*args, **kwargs)


class _InterceptedSubResource(SubResourceClient):
    """A subresource client whose calls go through the ``subresource_*`` functions."""

    def __init__(self, owner: InterceptorClient, inner: SubResourceClient) -> None:
        self.__dict__.update(inner.__dict__)
        self._owner = owner
        self._inner = inner

    async def _call(self, func: Interceptor | None, verb: str, *args: Any, **kwargs: Any) -> Any:
        if func is not None:
            return await func(self._owner.wrapped, self.name, *args, **kwargs)
        return await getattr(self._inner, verb)(*args, **kwargs)

    async def get(self, obj: T, *, type_: type[Any] | None = None) -> Any:
        """`SubResourceClient.get`, through ``subresource_get`` if set."""
        return await self._call(self._owner.funcs.subresource_get, "get", obj, type_=type_)

    async def create(self, obj: Any, body: Any, **options: Any) -> Any:
        """`SubResourceClient.create`, through ``subresource_create`` if set."""
        return await self._call(
            self._owner.funcs.subresource_create, "create", obj, body, **options
        )

    async def update(self, obj: T, **options: Any) -> Any:
        """`SubResourceClient.update`, through ``subresource_update`` if set."""
        return await self._call(self._owner.funcs.subresource_update, "update", obj, **options)

    async def patch(self, obj: T, patch: Patch, **options: Any) -> Any:
        """`SubResourceClient.patch`, through ``subresource_patch`` if set."""
        return await self._call(self._owner.funcs.subresource_patch, "patch", obj, patch, **options)
