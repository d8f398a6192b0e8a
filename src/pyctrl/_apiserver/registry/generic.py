"""The generic registry of the embedded server: one store per served resource.

This is kube-apiserver's generic Store (k8s.io/apiserver/pkg/registry/generic/registry
store.go), without HTTP. kube-apiserver builds one ``Store`` per resource when it installs
the resource's storage, with that resource's strategy; the handlers call it. Here:

- :class:`ResourceStore` is the store of one served type (one version of one resource):
  get, list, create, update, patch (JSON, merge, strategic merge, server-side apply),
  delete and deletecollection, the status, scale and finalize subresources, optimistic
  concurrency on ``resourceVersion``, dry runs. It holds its type's strategy, found once
  when it is built.
- :class:`Stores` builds the stores: every registered type's when the server starts, a
  CRD's types' when the CRD controller registers them (`Stores.set_crd_types`).

Each write reads one `options.RequestContext`, which the request's handler builds. The
parts live beside this module: `writes` (create, update, patch: ``Store.Create``,
``GuaranteedUpdate``; :class:`ResourceStore` is a `writes.Writer`), `deletion` (graceful
deletion, finalizers, propagation), `listing` (selectors, ``resourceVersion`` semantics,
continue-token paging), `apply` (server-side apply and managedFields), `decoding` (the
codec), `conversion` (versions), `scale` (``/scale``); `rest` is the strategy interface
and `strategies` which type has which.

The built-in controllers (`controllers`: garbage collector, namespace and CRD cleanup)
write through `Stores.update_internal` and `Stores.delete_internal`, which find the store
of a storage key and skip admission, as kube-controller-manager's requests do not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.admission.chain import Admission
from pyctrl._apiserver.apimachinery.errors import StatusError, not_found
from pyctrl._apiserver.registry import listing as _listing
from pyctrl._apiserver.registry.apiextensions.customresourcedefinition import CRDReconciler
from pyctrl._apiserver.registry.conversion import Converter
from pyctrl._apiserver.registry.core.namespace import IMMORTAL_NAMESPACES, NamespaceStrategy
from pyctrl._apiserver.registry.decoding import check_type_meta
from pyctrl._apiserver.registry.deletion import (
    check_preconditions,
    delete_object,
    validate_delete_options,
)
from pyctrl._apiserver.registry.listing import CONTINUE_EXPIRED, Lister, ListResult
from pyctrl._apiserver.registry.meta import (
    CRDS,
    NAMESPACES,
    SERVICES,
    canonical_order,
    deep_copy,
    meta_of,
    now_rfc3339,
    ro_meta,
    set_condition,
)
from pyctrl._apiserver.registry.options import DeleteOptions, RequestContext, WriteResult
from pyctrl._apiserver.registry.scale import scale_of
from pyctrl._apiserver.registry.strategies import Strategies
from pyctrl._apiserver.registry.writes import Writer

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyctrl._apiserver.admission.interfaces import AdmissionHook, ConversionHook
    from pyctrl._apiserver.apimachinery.fields import FieldSelector, LabelSelector
    from pyctrl._apiserver.registry.rest import Strategy
    from pyctrl._apiserver.scheme.resources import Registry, ResourceType
    from pyctrl._apiserver.storage.store import StorageKey, Store

__all__ = [
    "CONTINUE_EXPIRED",
    "CRDS",
    "IMMORTAL_NAMESPACES",
    "NAMESPACES",
    "SERVICES",
    "CRDReconciler",
    "DeleteOptions",
    "ListResult",
    "RequestContext",
    "ResourceStore",
    "Stores",
    "WriteResult",
    "canonical_order",
    "deep_copy",
    "meta_of",
    "now_rfc3339",
    "set_condition",
]


class ResourceStore(Writer):
    """The store of one served resource type: every verb, with the type's strategy.

    Built by `Stores` (one per registered type); creates, updates and patches are
    `writes.Writer`'s.
    """

    def __init__(
        self,
        rt: ResourceType,
        strategy: Strategy,
        storage: Store,
        converter: Converter,
        admission: Admission,
        *,
        lister: Lister,
    ) -> None:
        super().__init__(rt, strategy, storage, converter, admission)
        self.lister = lister
        """Lists, with the snapshots of paginated lists (shared by the server's stores)."""
        self.fields_of = _listing.fields_of(rt)
        """The field-selector values of a stored object."""

    # --- conversions ------------------------------------------------------------------------

    def converts_by_webhook(self) -> bool:
        """Whether stored objects reach this version through the CRD's conversion webhook."""
        return self.rt.version != self.rt.storage_version and (
            self.converter.hook_for(self.rt) is not None
        )

    def to_external(self, stored: dict[str, Any]) -> dict[str, Any]:
        """A stored object as this version shows it, without the conversion webhook."""
        return self.converter.to_external(self.rt, stored)

    async def external(self, stored: dict[str, Any]) -> dict[str, Any]:
        """One stored object at this version (through the conversion webhook if any)."""
        return await self.converter.external(self.rt, stored)

    async def external_many(self, stored: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Stored objects at this version, converted in one webhook call if any."""
        return await self.converter.external_many(self.rt, stored)

    # --- reads ------------------------------------------------------------------------------

    def check_field_selector(self, sel: FieldSelector) -> None:
        """400 ``field label not supported`` for labels this type does not expose."""
        _listing.check_field_selector(self.rt, sel)

    def get_stored(self, namespace: str, name: str) -> dict[str, Any]:
        """The stored object or 404."""
        rt = self.rt
        obj = self.storage.get(rt.storage_key, namespace if rt.namespaced else "", name)
        if obj is None:
            raise not_found(rt.group, rt.plural, name)
        return obj

    def list_stored(
        self,
        namespace: str | None,
        *,
        labels: LabelSelector,
        fields: FieldSelector,
        limit: int = 0,
        continue_token: str = "",
        resource_version: str = "",
        resource_version_match: str = "",
    ) -> ListResult:
        """List semantics: selectors, pagination with continue tokens, resourceVersion."""
        return self.lister.list_stored(
            self.rt,
            namespace,
            labels=labels,
            fields=fields,
            limit=limit,
            continue_token=continue_token,
            resource_version=resource_version,
            resource_version_match=resource_version_match,
        )

    def scale_of(self, obj: dict[str, Any]) -> dict[str, Any]:
        """The ``autoscaling/v1`` ``Scale`` of an object with a scale subresource."""
        return scale_of(self.rt, obj)

    # --- namespaces/<name>/finalize ------------------------------------------------------------

    async def finalize(self, ctx: RequestContext, name: str, body: dict[str, Any]) -> WriteResult:
        """PUT of ``namespaces/<name>/finalize``: replace only ``spec.finalizers``."""
        strategy = self.strategy
        if not isinstance(strategy, NamespaceStrategy):
            raise not_found(self.rt.group, f"{self.rt.plural}/finalize", name)
        check_type_meta(self.rt, body)
        return await self.guaranteed_update(
            ctx,
            "",
            name,
            strategy.finalize(name, body),
            subresource="finalize",
            create_allowed=False,
        )

    # --- delete ---------------------------------------------------------------------------------

    async def delete(
        self, namespace: str, name: str, opts: DeleteOptions
    ) -> tuple[dict[str, Any], int]:
        """DELETE: returns (response body, HTTP status)."""
        rt = self.rt
        validate_delete_options(opts)
        stored = self.get_stored(namespace, name)
        self.strategy.before_delete(rt, name)
        check_preconditions(rt, stored, opts)
        existing = await self.external(stored)
        await self._validate_admission(
            "DELETE", None, existing, namespace=namespace, name=name, subresource="", ctx=opts
        )
        result, deleted = self.delete_core(namespace if rt.namespaced else "", name, opts)
        code = 200
        if not deleted and opts.orphan_dependents is False:
            code = 202
        if result.get("kind") == "Status":
            return result, code
        return await self.external(result), code

    def delete_core(
        self, ns_key: str, name: str, opts: DeleteOptions
    ) -> tuple[dict[str, Any], bool]:
        """store.Delete: finalizers, graceful deletion, GC finalizers; (stored result, deleted)."""
        return delete_object(self.storage, self.strategy, self.rt, ns_key, name, opts=opts)

    async def delete_collection(
        self,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        opts: DeleteOptions,
    ) -> list[dict[str, Any]]:
        """DELETE on a collection: deletes every selected object; returns them as listed."""
        validate_delete_options(opts)
        listed = self.list_stored(namespace, labels=labels, fields=fields)
        for obj in listed.items:
            meta = ro_meta(obj)
            try:
                await self.delete(
                    meta.get("namespace") or "",
                    meta["name"],
                    DeleteOptions(
                        propagation=opts.propagation,
                        orphan_dependents=opts.orphan_dependents,
                        grace_period=opts.grace_period,
                        dry_run=opts.dry_run,
                        raw=opts.raw,
                    ),
                )
            except StatusError as exc:
                if exc.code != 404:
                    raise
        return listed.items


class Stores:
    """The stores of one server's resources, each built once, when its type is registered.

    Args:
        storage: The server's objects.
        registry: The served types; the stores of its types are built here.
        admission: The server's admission hooks (the list: hooks added later run too).
        conversion: The conversion webhook of CRDs with a Webhook strategy, when set.
    """

    def __init__(
        self,
        storage: Store,
        registry: Registry,
        *,
        admission: list[AdmissionHook],
        conversion: Callable[[], ConversionHook | None],
    ) -> None:
        self.storage = storage
        """The server's objects (`storage.store.Store`)."""
        self.registry = registry
        """The served types."""
        self.admission = Admission(admission)
        """The admission hooks every write through a store runs."""
        self.strategies = Strategies(storage)
        """The strategy of each type."""
        self.converter = Converter(registry, conversion)
        """Conversion between served and storage versions."""
        self.lister = Lister(storage)
        """Lists, with the snapshots of paginated lists."""
        self._by_type: dict[int, ResourceStore] = {}
        for rt in registry.all():
            self._add(rt)

    def _build(self, rt: ResourceType) -> ResourceStore:
        return ResourceStore(
            rt,
            self.strategies.for_type(rt),
            self.storage,
            self.converter,
            self.admission,
            lister=self.lister,
        )

    def _add(self, rt: ResourceType) -> None:
        self._by_type[id(rt)] = self._build(rt)

    def for_type(self, rt: ResourceType) -> ResourceStore:
        """The store of ``rt`` (one the registry does not hold gets a store of its own)."""
        found = self._by_type.get(id(rt))
        if found is not None and found.rt is rt:
            return found
        return self._build(rt)

    def set_crd_types(self, crd_name: str, types: list[ResourceType]) -> None:
        """Serve the types a CRD defines now (empty: none); their stores are built here."""
        for rt in self.registry.crd_types(crd_name):
            self._by_type.pop(id(rt), None)
        self.registry.set_crd_types(crd_name, types)
        for rt in types:
            self._add(rt)

    def drop_snapshots(self) -> None:
        """Forget cached list snapshots (after a compaction)."""
        self.lister.drop_snapshots()

    # --- the controllers' writes ---------------------------------------------------------------

    def update_internal(
        self,
        key: StorageKey,
        namespace: str,
        name: str,
        mutate: Callable[[dict[str, Any]], bool],
        *,
        manager: str = "kube-controller-manager",
        subresource: str = "",
    ) -> dict[str, Any] | None:
        """`Writer.update_internal` by the store of the storage ``key`` (None: none)."""
        rt = self.registry.storage_type(key)
        if rt is None:
            return None
        return self.for_type(rt).update_internal(
            namespace, name, mutate, manager=manager, subresource=subresource
        )

    def delete_internal(
        self,
        key: StorageKey,
        namespace: str,
        name: str,
        *,
        propagation: str | None = None,
        uid: str | None = None,
    ) -> None:
        """A controller's delete (no admission); missing objects are fine."""
        rt = self.registry.storage_type(key)
        if rt is None:
            self.storage.drop_key(key)
            return
        stored = self.storage.get(key, namespace, name)
        if stored is None:
            return
        if uid is not None and ro_meta(stored).get("uid") != uid:
            return
        try:
            self.for_type(rt).delete_core(namespace, name, DeleteOptions(propagation=propagation))
        except StatusError as exc:
            if exc.code != 404:
                raise
