"""Create, update and patch: kube-apiserver's ``Store.Create`` and ``Store.Update``.

The write pipeline of kube-apiserver (handlers/create.go, update.go, patch.go and
registry/generic/registry/store.go)::

    decode (drop unknown fields) -> default -> managedFields
           -> mutating admission -> system fields -> validation -> validating admission
           -> storage

An update is a ``GuaranteedUpdate`` (`Writer.guaranteed_update`): read the live object,
compute the new one from it (a PUT body, a patch, an apply, a Scale), run the pipeline, and
write it only if the live object did not change meanwhile, else try again. Each type's rules
come from its strategy (`rest.Strategy`, found by `strategies.Strategies`).
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
from pyctrl._apiserver.registry.rest import before_create, before_update, validate
from pyctrl._apiserver.registry.scale import scale_of, scale_update
from pyctrl._apiserver.storage.store import KeyExistsError, KeyNotFoundError, RVMismatchError

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyctrl._apiserver.admission.chain import Admission
    from pyctrl._apiserver.registry.conversion import Converter
    from pyctrl._apiserver.registry.options import WriteOptions
    from pyctrl._apiserver.registry.rest import Strategy
    from pyctrl._apiserver.registry.strategies import Strategies
    from pyctrl._apiserver.scheme.resources import Registry, ResourceType
    from pyctrl._apiserver.storage.store import StorageKey, Store

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


def _reset_status_on_create(strategy: Strategy, rt: ResourceType, obj: dict[str, Any]) -> None:
    """The status a created object starts with, for a type with a ``/status`` subresource."""
    if rt.has_status:
        strategy.reset_status_on_create(rt, obj)


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
    """Creates, updates and patches of one store, through its types' strategies."""

    def __init__(
        self,
        store: Store,
        registry: Registry,
        strategies: Strategies,
        converter: Converter,
        admission: Admission,
    ) -> None:
        self.store = store
        self.registry = registry
        self.strategies = strategies
        self.converter = converter
        self.admission = admission

    async def _mutate(
        self,
        rt: ResourceType,
        operation: str,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        *,
        namespace: str,
        subresource: str,
        opts: WriteOptions,
    ) -> dict[str, Any]:
        """Mutating admission, then the type's decoding of what the webhooks returned."""
        return await self.admission.mutate(
            rt,
            operation,
            obj,
            old,
            namespace=namespace,
            subresource=subresource,
            opts=opts,
            strategy=self.strategies.for_type(rt),
        )

    # --- create -------------------------------------------------------------------------------

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
        strategy = self.strategies.for_type(rt)
        if not skip_type_check:
            check_type_meta(rt, obj)
        # kube-apiserver decodes the body before anything else looks at it.
        strategy.decode(rt, obj, opts)
        _set_namespace(rt, namespace, obj)
        meta = meta_of(obj)
        strategy.check_writable(rt, "create")
        check_namespace_lifecycle(self.store, rt, namespace, meta.get("name") or "")
        if meta.get("resourceVersion"):
            raise internal("resourceVersion should not be set on objects to be created")
        strategy.default(rt, obj)
        _reset_status_on_create(strategy, rt, obj)
        track(strategy, rt, None, obj, opts.field_manager)
        obj = await self._mutate(
            rt, "CREATE", obj, None, namespace=namespace, subresource="", opts=opts
        )
        return await self._create_prepared(rt, namespace, obj, opts)

    async def _create_prepared(
        self, rt: ResourceType, namespace: str, obj: dict[str, Any], opts: WriteOptions
    ) -> dict[str, Any]:
        """``Store.Create`` of an admitted object: system fields, validation, storage."""
        strategy = self.strategies.for_type(rt)
        ns_key = namespace if rt.namespaced else ""
        generate = bool(meta_of(obj).get("generateName")) and not meta_of(obj).get("name")
        attempts = _GENERATE_ATTEMPTS if generate else 1
        for attempt in range(attempts):
            candidate = deep_copy(obj) if attempts > 1 else obj
            before_create(strategy, rt, candidate)
            validate(strategy, rt, candidate, None)
            name = meta_of(candidate)["name"]
            await self.admission.validate(
                rt,
                "CREATE",
                obj=candidate,
                old=None,
                namespace=namespace,
                name=name,
                subresource="",
                dry_run=opts.dry_run,
                options=opts.raw,
                warnings=opts.warnings,
            )
            existing = self.store.get(rt.storage_key, ns_key, name)
            if existing is not None:
                if attempt + 1 < attempts:
                    continue
                err = already_exists(rt.group, rt.plural, name)
                if ro_meta(existing).get("deletionTimestamp"):
                    err.message = f"object is being deleted: {err.message}"
                raise err
            strategy.begin_create(rt, candidate, dry_run=opts.dry_run)
            candidate = canonical_order(candidate)
            if opts.dry_run:
                meta_of(candidate).pop("resourceVersion", None)
                return candidate
            stored = await self.converter.internal(rt, candidate)
            try:
                event = self.store.create(rt.storage_key, stored)
            except KeyExistsError:
                raise already_exists(rt.group, rt.plural, name) from None
            strategy.after_create(rt, name)
            return await self.converter.external(rt, event.obj)
        raise internal("unreachable: generateName retries exhausted")

    # --- update / patch -----------------------------------------------------------------------

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
        check_type_meta(rt, body)
        # Decoded once, before anything else looks at it, as kube-apiserver does.
        self.strategies.for_type(rt).decode(rt, body, opts)
        check_url_name(body, name)

        def compute(existing: dict[str, Any] | None) -> dict[str, Any]:
            del existing
            return deep_copy(body)

        return await self.guaranteed_update(
            rt,
            namespace,
            name,
            compute,
            opts,
            subresource=subresource,
            create_allowed=self.strategies.for_type(rt).allow_create_on_update and not subresource,
            decoded=True,
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
        opts.patch_type = patch_type
        opts.patch = patch
        if patch_type == "apply":
            applied = check_apply(self.strategies.for_type(rt), rt, namespace, name, patch)
            return await self.guaranteed_update(
                rt,
                namespace,
                name,
                apply_patch(
                    self.strategies.for_type(rt),
                    rt,
                    namespace,
                    name,
                    applied,
                    opts=opts,
                    subresource=subresource,
                ),
                opts,
                subresource=subresource,
                create_allowed=not subresource,
                is_apply=True,
            )
        return await self.guaranteed_update(
            rt,
            namespace,
            name,
            _patch_step(rt, name, patch_type, patch),
            opts,
            subresource=subresource,
            create_allowed=False,
        )

    async def guaranteed_update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        compute: Callable[[dict[str, Any] | None], dict[str, Any]],
        opts: WriteOptions,
        *,
        subresource: str,
        create_allowed: bool,
        is_apply: bool = False,
        decoded: bool = False,
    ) -> tuple[dict[str, Any], bool]:
        """``GuaranteedUpdate``: read, compute the new object, write if nothing changed since.

        ``compute`` turns a copy of the live object (None when there is none) into the
        new one; the loop retries when the object changed meanwhile, and creates it when
        missing if ``create_allowed``. Returns (external object, created).
        """
        ns_key = namespace if rt.namespaced else ""
        for _ in range(_UPDATE_ATTEMPTS):
            existing_stored = self.store.get(rt.storage_key, ns_key, name)
            if existing_stored is None:
                if not create_allowed:
                    raise not_found(rt.group, rt.plural, name)
                new = await self._create_on_update(
                    rt, namespace, name, compute, opts, is_apply=is_apply, decoded=decoded
                )
                try:
                    return await self._create_prepared(rt, namespace, new, opts), True
                except StatusError as exc:
                    if exc.reason == "AlreadyExists":
                        continue
                    raise
            done = await self._try_update(
                rt,
                namespace,
                name,
                existing_stored,
                compute=compute,
                opts=opts,
                subresource=subresource,
                is_apply=is_apply,
                decoded=decoded,
            )
            if done is not None:
                return done, False
        raise conflict(rt.group, rt.plural, name)

    async def _create_on_update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        compute: Callable[[dict[str, Any] | None], dict[str, Any]],
        opts: WriteOptions,
        *,
        is_apply: bool,
        decoded: bool,
    ) -> dict[str, Any]:
        """The admitted object an update or apply creates when there is none."""
        strategy = self.strategies.for_type(rt)
        new = compute(None)
        check_type_meta(rt, new)
        check_url_name(new, name)
        if not decoded:
            strategy.decode(rt, new, opts)
        _set_namespace(rt, namespace, new)
        strategy.check_writable(rt, "create")
        check_namespace_lifecycle(self.store, rt, namespace, name)
        meta_of(new).pop("resourceVersion", None)
        strategy.default(rt, new)
        _reset_status_on_create(strategy, rt, new)
        if not is_apply:
            track(strategy, rt, None, new, opts.field_manager)
        return await self._mutate(
            rt, "CREATE", new, None, namespace=namespace, subresource="", opts=opts
        )

    async def _try_update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        existing_stored: dict[str, Any],
        *,
        compute: Callable[[dict[str, Any] | None], dict[str, Any]],
        opts: WriteOptions,
        subresource: str,
        is_apply: bool,
        decoded: bool,
    ) -> dict[str, Any] | None:
        """One attempt of the update loop: the external result, or None to try again."""
        strategy = self.strategies.for_type(rt)
        if subresource == "":
            strategy.check_writable(rt, "update")
        existing = await self.converter.external(rt, existing_stored)
        new = await self._admitted_update(
            strategy,
            rt,
            existing,
            compute(deep_copy(existing)),
            namespace=namespace,
            name=name,
            opts=opts,
            subresource=subresource,
            is_apply=is_apply,
            decoded=decoded,
        )
        self._check_resource_version(strategy, rt, name, new, existing_stored)
        before_update(strategy, rt, new, existing, subresource)
        validate(strategy, rt, new, existing)
        await self.admission.validate(
            rt,
            "UPDATE",
            obj=new,
            old=existing,
            namespace=namespace,
            name=name,
            subresource=subresource,
            dry_run=opts.dry_run,
            options=opts.raw,
            warnings=opts.warnings,
        )
        if self.store.get(rt.storage_key, namespace if rt.namespaced else "", name) is not (
            existing_stored
        ):
            return None
        new = canonical_order(new)
        stored_new = await self.converter.internal(rt, new)
        result = self._commit_update(strategy, rt, existing_stored, stored_new, opts.dry_run)
        if result is existing_stored:
            return existing
        if result is stored_new and opts.dry_run:
            return new
        out = await self.converter.external(rt, result)
        if not opts.dry_run:
            strategy.after_update(rt, name)
        return out

    async def _admitted_update(
        self,
        strategy: Strategy,
        rt: ResourceType,
        existing: dict[str, Any],
        new: dict[str, Any],
        *,
        namespace: str,
        name: str,
        opts: WriteOptions,
        subresource: str,
        is_apply: bool,
        decoded: bool,
    ) -> dict[str, Any]:
        """The computed object of an update, decoded, defaulted, tracked and admitted."""
        check_type_meta(rt, new)
        check_url_name(new, name)
        # Decoding sees the whole body: unknown fields of a status a write then ignores
        # are reported too.
        if not decoded:
            strategy.decode(rt, new, opts)
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
            track(strategy, rt, existing, new, opts.field_manager, subresource=subresource)
        return await self._mutate(
            rt, "UPDATE", new, existing, namespace=namespace, subresource=subresource, opts=opts
        )

    @staticmethod
    def _check_resource_version(
        strategy: Strategy,
        rt: ResourceType,
        name: str,
        new: dict[str, Any],
        existing_stored: dict[str, Any],
    ) -> None:
        """The update's resourceVersion: the live one if unset (where allowed), else equal."""
        new_meta = meta_of(new)
        existing_rv = ro_meta(existing_stored).get("resourceVersion") or ""
        new_rv = new_meta.get("resourceVersion") or ""
        if not new_rv:
            if not strategy.allow_unconditional_update:
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
        self,
        strategy: Strategy,
        rt: ResourceType,
        existing_stored: dict[str, Any],
        stored_new: dict[str, Any],
        dry_run: bool,
    ) -> dict[str, Any]:
        """Store an update; a no-op update stores nothing; returns the stored result."""
        key = rt.storage_key
        meta = ro_meta(existing_stored)
        if strategy.should_delete_during_update(stored_new, existing_stored):
            if not dry_run:
                self.store.delete(key, meta.get("namespace") or "", meta["name"])
            return stored_new
        if is_noop(stored_new, existing_stored):
            return existing_stored
        if dry_run:
            return stored_new
        try:
            event = self.store.update(key, stored_new, meta.get("resourceVersion") or "")
        except (KeyNotFoundError, RVMismatchError):
            raise conflict(rt.group, rt.plural, meta.get("name", "")) from None
        return event.obj

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
        rt = self.registry.storage_type(key)
        if rt is None:
            return None
        stored = self.store.get(key, namespace, name)
        if stored is None:
            return None
        new = deep_copy(stored)
        if not mutate(new):
            return stored
        strategy = self.strategies.for_type(rt)
        track(strategy, rt, stored, new, manager, subresource=subresource)
        return self._commit_update(strategy, rt, stored, new, False)

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
        """PUT or PATCH of the scale subresource; returns the new Scale.

        The body, or the patched Scale, is decoded as ``autoscaling/v1`` ``Scale``: unknown
        fields are warned about or refused by ``fieldValidation`` (in ``opts.warnings``).
        """
        opts.patch_type = patch_type
        opts.patch = patch
        compute = scale_update(
            rt, name, scale_body=scale_body, patch_type=patch_type, patch=patch, opts=opts
        )
        result, _ = await self.guaranteed_update(
            rt, namespace, name, compute, opts, subresource="scale", create_allowed=False
        )
        return scale_of(rt, result)
