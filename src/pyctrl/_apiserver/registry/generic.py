"""The generic registry of the embedded server: what each verb does to stored objects.

This is kube-apiserver's generic Store (k8s.io/apiserver/pkg/registry/generic/registry
store.go), without HTTP: create, get, list, update, patch (JSON, merge, strategic merge,
server-side apply), delete and deletecollection, the status and scale subresources,
optimistic concurrency on ``resourceVersion``, dry runs. :class:`API` is its face; its
parts live beside it:

- `writes`: create, update and patch (``Store.Create``, ``GuaranteedUpdate``);
- `deletion`: graceful deletion, finalizers, propagation (``Store.Delete``);
- `listing`: selectors, ``resourceVersion`` semantics, continue-token paging;
- `admit`: admission calls and the NamespaceLifecycle check; `apply`: server-side apply
  and managedFields; `decoding`: the codec; `conversion`: versions; `scale`: ``/scale``;
- `rest`: the per-type strategy interface, and `strategies` which type has which (one
  module per kind under ``core/``, ``apps/``, ``batch/``, ``coordination/``,
  ``admissionregistration/``, ``rbac/``, ``networking/``, ``apiextensions/``, holding the
  kind's defaults and validation; the default for every other type).

:class:`API` is driven by the HTTP layer (`endpoints.server`) and by the built-in
controllers (`controllers`: garbage collector, namespace and CRD cleanup), which use the
``*_internal`` methods that skip admission as kube-controller-manager's requests do not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.admission.chain import Admission
from pyctrl._apiserver.apimachinery.errors import StatusError, not_found
from pyctrl._apiserver.registry import listing as _listing
from pyctrl._apiserver.registry.apiextensions.customresourcedefinition import CRDReconciler
from pyctrl._apiserver.registry.conversion import Converter
from pyctrl._apiserver.registry.core.namespace import IMMORTAL_NAMESPACES
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
from pyctrl._apiserver.registry.options import DeleteOptions, WriteOptions
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
    "API",
    "CONTINUE_EXPIRED",
    "CRDS",
    "IMMORTAL_NAMESPACES",
    "NAMESPACES",
    "SERVICES",
    "CRDReconciler",
    "DeleteOptions",
    "ListResult",
    "WriteOptions",
    "canonical_order",
    "deep_copy",
    "meta_of",
    "now_rfc3339",
    "set_condition",
]


class API:
    """The verbs on stored objects, as kube-apiserver's registry implements them."""

    def __init__(
        self,
        store: Store,
        registry: Registry,
        *,
        admission: list[AdmissionHook],
        conversion: Callable[[], ConversionHook | None],
    ) -> None:
        self.store = store
        self.registry = registry
        self.admission = Admission(admission)
        """The admission hooks every write through the API runs."""
        self.strategies = Strategies(store)
        """The strategy of each type."""
        self.converter = Converter(registry, conversion)
        """Conversion between served and storage versions."""
        self.lister = Lister(store)
        """Lists, with the snapshots of paginated lists."""
        self.writer = Writer(store, registry, self.strategies, self.converter, self.admission)
        """Creates, updates and patches."""

    def strategy_for(self, rt: ResourceType) -> Strategy:
        """The strategy of ``rt``: its type's own, the custom resources', or the default."""
        return self.strategies.for_type(rt)

    # --- conversions ------------------------------------------------------------------------

    def to_external(self, rt: ResourceType, stored: dict[str, Any]) -> dict[str, Any]:
        """A stored object as ``rt``'s version shows it (the stored dict itself when equal)."""
        return self.converter.to_external(rt, stored)

    def to_storage(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """An object of ``rt``'s version in its storage version."""
        return self.converter.to_storage(rt, obj)

    async def external_many(
        self, rt: ResourceType, stored: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """Convert stored objects to ``rt``'s version, through the conversion hook if any."""
        return await self.converter.external_many(rt, stored)

    async def external(self, rt: ResourceType, stored: dict[str, Any]) -> dict[str, Any]:
        """Convert one stored object to ``rt``'s version."""
        return await self.converter.external(rt, stored)

    def storage_rt(self, rt: ResourceType) -> ResourceType:
        """The type of ``rt``'s storage version (the type itself for single-version types)."""
        return self.converter.storage_rt(rt)

    # --- reads ------------------------------------------------------------------------------

    def field_labels(self, rt: ResourceType) -> frozenset[str]:
        """Field selector labels ``rt`` supports."""
        return _listing.field_labels(rt)

    def check_field_selector(self, rt: ResourceType, sel: FieldSelector) -> None:
        """400 ``field label not supported`` for labels ``rt`` does not expose."""
        _listing.check_field_selector(rt, sel)

    def fields_of(self, rt: ResourceType) -> Callable[[dict[str, Any]], dict[str, str]]:
        """A function giving the field-selector values of a stored object."""
        return _listing.fields_of(rt)

    def get_stored(self, rt: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        """The stored object or 404."""
        obj = self.store.get(rt.storage_key, namespace if rt.namespaced else "", name)
        if obj is None:
            raise not_found(rt.group, rt.plural, name)
        return obj

    def list_stored(
        self,
        rt: ResourceType,
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
            rt,
            namespace,
            labels=labels,
            fields=fields,
            limit=limit,
            continue_token=continue_token,
            resource_version=resource_version,
            resource_version_match=resource_version_match,
        )

    def drop_snapshots(self) -> None:
        """Forget cached list snapshots (after a compaction)."""
        self.lister.drop_snapshots()

    def scale_of(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """The ``autoscaling/v1`` ``Scale`` of an object with a scale subresource."""
        return scale_of(rt, obj)

    # --- writes -------------------------------------------------------------------------------

    def check_type_meta(self, rt: ResourceType, obj: dict[str, Any], *, kind: str = "") -> None:
        """400 when the body's apiVersion/kind do not fit the endpoint; fill them in when absent."""
        check_type_meta(rt, obj, kind=kind)

    async def create(
        self,
        rt: ResourceType,
        namespace: str,
        obj: dict[str, Any],
        opts: WriteOptions,
        *,
        skip_type_check: bool = False,
    ) -> dict[str, Any]:
        """POST: create ``obj`` (decoded body) in ``namespace``; returns the external object."""
        return await self.writer.create(rt, namespace, obj, opts, skip_type_check=skip_type_check)

    async def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: dict[str, Any],
        *,
        opts: WriteOptions,
        subresource: str = "",
    ) -> tuple[dict[str, Any], bool]:
        """PUT: replace an object (or its status); returns (external object, created)."""
        return await self.writer.update(
            rt, namespace, name, body, opts=opts, subresource=subresource
        )

    async def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        patch_type: str,
        patch: Any,
        *,
        opts: WriteOptions,
        subresource: str = "",
    ) -> tuple[dict[str, Any], bool]:
        """PATCH with one of the four patch types; returns (external object, created)."""
        return await self.writer.patch(
            rt, namespace, name, patch_type, patch, opts=opts, subresource=subresource
        )

    async def finalize_namespace(
        self, rt: ResourceType, name: str, body: dict[str, Any], opts: WriteOptions
    ) -> tuple[dict[str, Any], bool]:
        """PUT of ``namespaces/<name>/finalize``: replace only ``spec.finalizers``."""
        self.check_type_meta(rt, body)
        strategy = self.strategies.namespaces
        return await self.writer.guaranteed_update(
            rt,
            "",
            name,
            strategy.finalize(name, body),
            opts,
            subresource="finalize",
            create_allowed=False,
        )

    async def update_scale(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        *,
        scale_body: dict[str, Any] | None,
        patch_type: str,
        patch: Any,
        opts: WriteOptions,
    ) -> dict[str, Any]:
        """PUT or PATCH of the scale subresource; returns the new Scale."""
        return await self.writer.update_scale(
            rt,
            namespace,
            name,
            scale_body=scale_body,
            patch_type=patch_type,
            patch=patch,
            opts=opts,
        )

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
        """A controller's read-modify-write of a stored object (no admission, no validation).

        ``mutate`` changes the copy in place and returns whether it changed anything.
        """
        return self.writer.update_internal(
            key, namespace, name, mutate, manager=manager, subresource=subresource
        )

    # --- delete ---------------------------------------------------------------------------------

    def validate_delete_options(self, opts: DeleteOptions) -> None:
        """``ValidateDeleteOptions``: 422 for contradicting or unknown options."""
        validate_delete_options(opts)

    async def delete(
        self, rt: ResourceType, namespace: str, name: str, opts: DeleteOptions
    ) -> tuple[dict[str, Any], int]:
        """DELETE: returns (response body, HTTP status)."""
        validate_delete_options(opts)
        stored = self.get_stored(rt, namespace, name)
        self.strategy_for(rt).before_delete(rt, name)
        check_preconditions(rt, stored, opts)
        existing = await self.external(rt, stored)
        await self.admission.validate(
            rt,
            "DELETE",
            obj=None,
            old=existing,
            namespace=namespace,
            name=name,
            subresource="",
            dry_run=opts.dry_run,
            options=opts.raw,
            warnings=opts.warnings,
        )
        result, deleted = self.delete_core(rt, namespace if rt.namespaced else "", name, opts)
        code = 200
        if not deleted and opts.orphan_dependents is False:
            code = 202
        if result.get("kind") == "Status":
            return result, code
        return await self.external(rt, result), code

    def delete_core(
        self, rt: ResourceType, ns_key: str, name: str, opts: DeleteOptions
    ) -> tuple[dict[str, Any], bool]:
        """store.Delete: finalizers, graceful deletion, GC finalizers; (stored result, deleted)."""
        return delete_object(self.store, self.strategies.for_type(rt), rt, ns_key, name, opts=opts)

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
            self.store.drop_key(key)
            return
        stored = self.store.get(key, namespace, name)
        if stored is None:
            return
        if uid is not None and ro_meta(stored).get("uid") != uid:
            return
        try:
            self.delete_core(rt, namespace, name, DeleteOptions(propagation=propagation))
        except StatusError as exc:
            if exc.code != 404:
                raise

    async def delete_collection(
        self,
        rt: ResourceType,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        opts: DeleteOptions,
    ) -> list[dict[str, Any]]:
        """DELETE on a collection: deletes every selected object; returns them as listed."""
        validate_delete_options(opts)
        listed = self.list_stored(rt, namespace, labels=labels, fields=fields)
        for obj in listed.items:
            meta = ro_meta(obj)
            try:
                await self.delete(
                    rt,
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
