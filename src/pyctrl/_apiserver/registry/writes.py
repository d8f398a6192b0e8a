"""Create, update and patch: kube-apiserver's ``Store.Create`` and ``Store.Update``.

The write pipeline of kube-apiserver (handlers/create.go, update.go, patch.go and
registry/generic/registry/store.go)::

    decode (drop unknown fields) -> default -> managedFields
           -> mutating admission -> system fields -> validation -> validating admission
           -> storage

An update is a ``GuaranteedUpdate`` (`Writer.guaranteed_update`): read the live object,
compute the new one from it (a PUT body, a patch, an apply, a Scale), run the pipeline, and
write it only if the live object did not change meanwhile, else try again. Each type's rules
come from its strategy (`rest.Strategy`), which the resource's store (`generic.ResourceStore`,
a `Writer`) holds from the moment it is built: no write looks it up. Every write reads one
`options.RequestContext`, built by the request's handler.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from pyctrl._apimachinery.field import field_invalid
from pyctrl._apiserver.admission.plugin.namespace.lifecycle import check_namespace_lifecycle
from pyctrl._apiserver.apimachinery.errors import (
    StatusError,
    already_exists,
    bad_request,
    conflict,
    internal,
    invalid,
    not_found,
)
from pyctrl._apiserver.fieldmanager import patch as _patch
from pyctrl._apiserver.registry.apply import apply_patch, check_apply, track
from pyctrl._apiserver.registry.decoding import check_type_meta, check_url_name
from pyctrl._apiserver.registry.meta import canonical_order, deep_copy, meta_of, ro_meta
from pyctrl._apiserver.registry.options import RequestContext, WriteResult
from pyctrl._apiserver.registry.rest import before_create, before_update, validate
from pyctrl._apiserver.registry.scale import scale_of, scale_update
from pyctrl._apiserver.storage.store import KeyExistsError, KeyNotFoundError, RVMismatchError

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyctrl._apiserver.admission.chain import Admission, AdmissionOptions
    from pyctrl._apiserver.registry.conversion import Converter
    from pyctrl._apiserver.registry.rest import Strategy
    from pyctrl._apiserver.scheme.resources import ResourceType
    from pyctrl._apiserver.storage.store import Store

__all__ = ["Writer"]

_GENERATE_ATTEMPTS = 8
_UPDATE_ATTEMPTS = 16

_ABSENT: Final[Any] = object()


def is_noop(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """Whether an update changes nothing but the times of managedFields entries."""
    # Most updates change something outside metadata: look there first.
    for key in new.keys() | old.keys():
        if key != "metadata" and new.get(key, _ABSENT) != old.get(key, _ABSENT):
            return False
    if new.get("metadata", _ABSENT) == old.get("metadata", _ABSENT):
        return True
    return bool(strip_managed_times(new) == strip_managed_times(old))


def strip_managed_times(obj: dict[str, Any]) -> Any:
    meta = ro_meta(obj)
    entries = meta.get("managedFields")
    if not entries:
        return obj
    out = dict(obj)
    out["metadata"] = dict(
        meta,
        managedFields=[{k: v for k, v in e.items() if k != "time"} for e in entries],
    )
    return out


def _set_namespace(rt: ResourceType, namespace: str, obj: dict[str, Any]) -> None:
    """The request's namespace on a namespaced object (400 if the body names another)."""
    meta = meta_of(obj)
    if rt.namespaced:
        body_ns = meta.get("namespace")
        if body_ns and body_ns != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on "
                "the request"
            )
        meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)


def _patch_step(
    rt: ResourceType, name: str, patch_type: str, patch: Any
) -> Callable[[dict[str, Any] | None], dict[str, Any]]:
    """The update loop's step of a JSON, merge or strategic merge patch."""

    def compute(existing: dict[str, Any] | None) -> dict[str, Any]:
        if existing is None:
            raise not_found(rt.group, rt.plural, name)
        try:
            if patch_type == "json":
                result = _patch.json_patch(existing, patch)
            elif patch_type == "merge":
                # ``existing`` is the update loop's private copy.
                result = _patch.json_merge_patch(existing, patch, in_place=True)
            else:
                result = _patch.strategic_merge_patch(
                    existing, patch, group=rt.group, version=rt.version, kind=rt.kind
                )
        except _patch.PatchError as exc:
            raise StatusError(exc.code, exc.reason, exc.message, details=False) from None
        if not isinstance(result, dict):
            raise bad_request("the patched object is not an object")
        return result

    return compute


class Writer:
    """Creates, updates and patches of one resource type, through its strategy.

    The base of that type's store (`generic.ResourceStore`): ``rt`` and ``strategy`` are
    fixed when the store is built.
    """

    def __init__(
        self,
        rt: ResourceType,
        strategy: Strategy,
        storage: Store,
        converter: Converter,
        admission: Admission,
    ) -> None:
        self.rt = rt
        """The resource type (one version of one resource)."""
        self.strategy = strategy
        """The type's rules (`rest.Strategy`)."""
        self.storage = storage
        """Where the objects are kept (`storage.store.Store`)."""
        self.converter = converter
        """Conversion between the served and storage versions."""
        self.admission = admission
        """The admission chain every write runs."""

    async def _mutate(
        self,
        operation: str,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        *,
        namespace: str,
        subresource: str,
        ctx: RequestContext,
    ) -> dict[str, Any]:
        """Mutating admission, then the type's decoding of what the webhooks returned."""
        return await self.admission.mutate(
            self.rt,
            operation,
            obj,
            old,
            namespace=namespace,
            subresource=subresource,
            opts=ctx,
            strategy=self.strategy,
        )

    async def _validate_admission(
        self,
        operation: str,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        *,
        namespace: str,
        name: str,
        subresource: str,
        ctx: AdmissionOptions,
    ) -> None:
        """Validating admission of a write (or a delete: ``ctx`` its `DeleteOptions`)."""
        await self.admission.validate(
            self.rt,
            operation,
            obj=obj,
            old=old,
            namespace=namespace,
            name=name,
            subresource=subresource,
            opts=ctx,
        )

    # --- create -------------------------------------------------------------------------------

    async def create(
        self,
        ctx: RequestContext,
        namespace: str,
        obj: dict[str, Any],
        *,
        skip_type_check: bool = False,
    ) -> dict[str, Any]:
        """POST: create ``obj`` (decoded body) in ``namespace``; returns the external object."""
        rt = self.rt
        if not skip_type_check:
            check_type_meta(rt, obj)
        # kube-apiserver decodes the body before anything else looks at it.
        self.strategy.decode(rt, obj, ctx)
        _set_namespace(rt, namespace, obj)
        meta = meta_of(obj)
        self.strategy.check_writable(rt, "create")
        check_namespace_lifecycle(self.storage, rt, namespace, meta.get("name") or "")
        if meta.get("resourceVersion"):
            raise internal("resourceVersion should not be set on objects to be created")
        self.strategy.default(rt, obj)
        if rt.has_status:
            self.strategy.reset_status_on_create(rt, obj)
        track(self.strategy, rt, None, obj, ctx.field_manager)
        obj = await self._mutate("CREATE", obj, None, namespace=namespace, subresource="", ctx=ctx)
        return await self._create_prepared(ctx, namespace, obj)

    async def _create_prepared(
        self, ctx: RequestContext, namespace: str, obj: dict[str, Any]
    ) -> dict[str, Any]:
        """``Store.Create`` of an admitted object: system fields, validation, storage."""
        rt, strategy = self.rt, self.strategy
        ns_key = namespace if rt.namespaced else ""
        meta = meta_of(obj)
        generate = bool(meta.get("generateName")) and not meta.get("name")
        attempts = _GENERATE_ATTEMPTS if generate else 1
        for attempt in range(attempts):
            candidate = deep_copy(obj) if attempts > 1 else obj
            before_create(strategy, rt, candidate)
            validate(strategy, rt, candidate, None)
            name = meta_of(candidate)["name"]
            await self._validate_admission(
                "CREATE", candidate, None, namespace=namespace, name=name, subresource="", ctx=ctx
            )
            existing = self.storage.get(rt.storage_key, ns_key, name)
            if existing is not None:
                if attempt + 1 < attempts:
                    continue
                err = already_exists(rt.group, rt.plural, name)
                if ro_meta(existing).get("deletionTimestamp"):
                    err.message = f"object is being deleted: {err.message}"
                raise err
            strategy.begin_create(rt, candidate, dry_run=ctx.dry_run)
            candidate = canonical_order(candidate)
            if ctx.dry_run:
                meta_of(candidate).pop("resourceVersion", None)
                return candidate
            stored = await self.converter.internal(rt, candidate)
            try:
                event = self.storage.create(rt.storage_key, stored)
            except KeyExistsError:
                raise already_exists(rt.group, rt.plural, name) from None
            strategy.after_create(rt, name)
            return await self.converter.external(rt, event.obj)
        raise internal("unreachable: generateName retries exhausted")

    # --- update / patch -----------------------------------------------------------------------

    async def update(
        self,
        ctx: RequestContext,
        namespace: str,
        name: str,
        body: dict[str, Any],
        *,
        subresource: str = "",
    ) -> WriteResult:
        """PUT: replace an object (or its status); returns the external object and created."""
        rt = self.rt
        check_type_meta(rt, body)
        # Decoded once, before anything else looks at it, as kube-apiserver does.
        self.strategy.decode(rt, body, ctx)
        check_url_name(body, name)

        def compute(existing: dict[str, Any] | None) -> dict[str, Any]:
            del existing
            return deep_copy(body)

        return await self.guaranteed_update(
            ctx,
            namespace,
            name,
            compute,
            subresource=subresource,
            create_allowed=self.strategy.allow_create_on_update and not subresource,
            decoded=True,
        )

    async def patch(
        self, ctx: RequestContext, namespace: str, name: str, *, subresource: str = ""
    ) -> WriteResult:
        """PATCH with the context's patch (one of the four types); object and created."""
        rt = self.rt
        if ctx.patch_type == "apply":
            applied = check_apply(self.strategy, rt, namespace, name, ctx.patch)
            return await self.guaranteed_update(
                ctx,
                namespace,
                name,
                apply_patch(
                    self.strategy, rt, namespace, name, applied, opts=ctx, subresource=subresource
                ),
                subresource=subresource,
                create_allowed=not subresource,
                is_apply=True,
            )
        return await self.guaranteed_update(
            ctx,
            namespace,
            name,
            _patch_step(rt, name, ctx.patch_type, ctx.patch),
            subresource=subresource,
            create_allowed=False,
        )

    async def guaranteed_update(
        self,
        ctx: RequestContext,
        namespace: str,
        name: str,
        compute: Callable[[dict[str, Any] | None], dict[str, Any]],
        *,
        subresource: str,
        create_allowed: bool,
        is_apply: bool = False,
        decoded: bool = False,
    ) -> WriteResult:
        """``GuaranteedUpdate``: read, compute the new object, write if nothing changed since.

        ``compute`` turns a copy of the live object (None when there is none) into the
        new one; the loop retries when the object changed meanwhile, and creates it when
        missing if ``create_allowed``.
        """
        rt = self.rt
        ns_key = namespace if rt.namespaced else ""
        for _ in range(_UPDATE_ATTEMPTS):
            existing_stored = self.storage.get(rt.storage_key, ns_key, name)
            if existing_stored is None:
                if not create_allowed:
                    raise not_found(rt.group, rt.plural, name)
                new = await self._create_on_update(
                    ctx, namespace, name, compute, is_apply=is_apply, decoded=decoded
                )
                try:
                    return WriteResult(await self._create_prepared(ctx, namespace, new), True)
                except StatusError as exc:
                    if exc.reason == "AlreadyExists":
                        continue
                    raise
            done = await self._try_update(
                ctx,
                namespace,
                name,
                existing_stored,
                compute=compute,
                subresource=subresource,
                is_apply=is_apply,
                decoded=decoded,
            )
            if done is not None:
                return WriteResult(done, False)
        raise conflict(rt.group, rt.plural, name)

    async def _create_on_update(
        self,
        ctx: RequestContext,
        namespace: str,
        name: str,
        compute: Callable[[dict[str, Any] | None], dict[str, Any]],
        *,
        is_apply: bool,
        decoded: bool,
    ) -> dict[str, Any]:
        """The admitted object an update or apply creates when there is none."""
        rt = self.rt
        new = compute(None)
        check_type_meta(rt, new)
        check_url_name(new, name)
        if not decoded:
            self.strategy.decode(rt, new, ctx)
        _set_namespace(rt, namespace, new)
        self.strategy.check_writable(rt, "create")
        check_namespace_lifecycle(self.storage, rt, namespace, name)
        meta_of(new).pop("resourceVersion", None)
        self.strategy.default(rt, new)
        if rt.has_status:
            self.strategy.reset_status_on_create(rt, new)
        if not is_apply:
            track(self.strategy, rt, None, new, ctx.field_manager)
        return await self._mutate("CREATE", new, None, namespace=namespace, subresource="", ctx=ctx)

    async def _try_update(
        self,
        ctx: RequestContext,
        namespace: str,
        name: str,
        existing_stored: dict[str, Any],
        *,
        compute: Callable[[dict[str, Any] | None], dict[str, Any]],
        subresource: str,
        is_apply: bool,
        decoded: bool,
    ) -> dict[str, Any] | None:
        """One attempt of the update loop: the external result, or None to try again."""
        rt, strategy = self.rt, self.strategy
        if subresource == "":
            strategy.check_writable(rt, "update")
        existing = await self.converter.external(rt, existing_stored)
        new = await self._admitted_update(
            ctx,
            existing,
            compute(deep_copy(existing)),
            namespace=namespace,
            name=name,
            subresource=subresource,
            is_apply=is_apply,
            decoded=decoded,
        )
        self._check_resource_version(name, new, existing_stored)
        before_update(strategy, rt, new, existing, subresource)
        validate(strategy, rt, new, existing)
        await self._validate_admission(
            "UPDATE",
            new,
            existing,
            namespace=namespace,
            name=name,
            subresource=subresource,
            ctx=ctx,
        )
        if self.storage.get(rt.storage_key, namespace if rt.namespaced else "", name) is not (
            existing_stored
        ):
            return None
        new = canonical_order(new)
        stored_new = await self.converter.internal(rt, new)
        result = self._commit_update(existing_stored, stored_new, ctx.dry_run)
        if result is existing_stored:
            return existing
        if result is stored_new and ctx.dry_run:
            return new
        out = await self.converter.external(rt, result)
        if not ctx.dry_run:
            strategy.after_update(rt, name)
        return out

    async def _admitted_update(
        self,
        ctx: RequestContext,
        existing: dict[str, Any],
        new: dict[str, Any],
        *,
        namespace: str,
        name: str,
        subresource: str,
        is_apply: bool,
        decoded: bool,
    ) -> dict[str, Any]:
        """The computed object of an update, decoded, defaulted, tracked and admitted."""
        rt, strategy = self.rt, self.strategy
        check_type_meta(rt, new)
        check_url_name(new, name)
        # Decoding sees the whole body: unknown fields of a status a write then ignores
        # are reported too.
        if not decoded:
            strategy.decode(rt, new, ctx)
        _set_namespace(rt, namespace, new)
        if subresource == "status":
            new = strategy.status_projection(rt, existing, new)
        elif rt.has_status:
            if "status" in existing:
                new["status"] = deep_copy(existing["status"])
            else:
                new.pop("status", None)
        strategy.default(rt, new)
        if not is_apply:
            track(self.strategy, rt, existing, new, ctx.field_manager, subresource=subresource)
        return await self._mutate(
            "UPDATE", new, existing, namespace=namespace, subresource=subresource, ctx=ctx
        )

    def _check_resource_version(
        self, name: str, new: dict[str, Any], existing_stored: dict[str, Any]
    ) -> None:
        """The update's resourceVersion: the live one if unset (where allowed), else equal."""
        rt = self.rt
        new_meta = meta_of(new)
        existing_rv = ro_meta(existing_stored).get("resourceVersion") or ""
        new_rv = new_meta.get("resourceVersion") or ""
        if not new_rv:
            if not self.strategy.allow_unconditional_update:
                raise invalid(
                    rt.group,
                    rt.plural,
                    name,
                    [
                        field_invalid(
                            "metadata.resourceVersion", 0, "must be specified for an update"
                        )
                    ],
                )
            new_meta["resourceVersion"] = existing_rv
        elif new_rv != existing_rv:
            raise conflict(rt.group, rt.plural, name)

    def _commit_update(
        self, existing_stored: dict[str, Any], stored_new: dict[str, Any], dry_run: bool
    ) -> dict[str, Any]:
        """Store an update; a no-op update stores nothing; returns the stored result."""
        key = self.rt.storage_key
        meta = ro_meta(existing_stored)
        if self.strategy.should_delete_during_update(stored_new, existing_stored):
            if not dry_run:
                self.storage.delete(key, meta.get("namespace") or "", meta["name"])
            return stored_new
        if is_noop(stored_new, existing_stored):
            return existing_stored
        if dry_run:
            return stored_new
        try:
            event = self.storage.update(key, stored_new, meta.get("resourceVersion") or "")
        except (KeyNotFoundError, RVMismatchError):
            raise conflict(self.rt.group, self.rt.plural, meta.get("name", "")) from None
        return event.obj

    def update_internal(
        self,
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
        stored = self.storage.get(self.rt.storage_key, namespace, name)
        if stored is None:
            return None
        new = deep_copy(stored)
        if not mutate(new):
            return stored
        track(self.strategy, self.rt, stored, new, manager, subresource=subresource)
        return self._commit_update(stored, new, False)

    async def update_scale(
        self,
        ctx: RequestContext,
        namespace: str,
        name: str,
        *,
        scale_body: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """PUT (``scale_body``) or PATCH (the context's patch) of ``/scale``; the new Scale.

        The body, or the patched Scale, is decoded as ``autoscaling/v1`` ``Scale``: unknown
        fields are warned about or refused by ``fieldValidation`` (in ``ctx.warnings``).
        """
        rt = self.rt
        compute = scale_update(
            rt, name, scale_body=scale_body, patch_type=ctx.patch_type, patch=ctx.patch, opts=ctx
        )
        result, _ = await self.guaranteed_update(
            ctx, namespace, name, compute, subresource="scale", create_allowed=False
        )
        return scale_of(rt, result)
