"""Deletion: graceful deletion, finalizers and garbage-collection propagation.

kube-apiserver's ``Store.Delete`` (k8s.io/apiserver/pkg/registry/generic/registry/store.go)
with ``rest.BeforeDelete`` (pkg/registry/rest/delete.go): the delete options are checked
(`validate_delete_options`, `check_preconditions`); an object with finalizers, or whose
type deletes gracefully (`Strategy.check_graceful_delete`), is marked with a
``deletionTimestamp`` instead of removed; the ``orphan`` and ``foregroundDeletion``
finalizers follow the propagation policy (`gc_finalizers`,
``deletionFinalizersForGarbageCollection``); a type with its own delete (Namespaces,
CustomResourceDefinitions) takes over through `Strategy.delete`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apimachinery.field import Cause, field_invalid, field_not_supported
from pyctrl._apiserver.apimachinery.errors import StatusError, invalid, not_found
from pyctrl._apiserver.registry.meta import deep_copy, meta_of, now_rfc3339, ro_meta, shift_time
from pyctrl._apiserver.storage.store import KeyNotFoundError

if TYPE_CHECKING:
    from pyctrl._apiserver.registry.options import DeleteOptions
    from pyctrl._apiserver.registry.rest import Strategy
    from pyctrl._apiserver.scheme.resources import ResourceType
    from pyctrl._apiserver.storage.store import Store

__all__ = [
    "check_preconditions",
    "delete_object",
    "finalize_delete",
    "gc_finalizers",
    "status_success",
    "validate_delete_options",
    "write_deleting",
]


def validate_delete_options(opts: DeleteOptions) -> None:
    """``ValidateDeleteOptions``: 422 for contradicting or unknown options."""
    causes: list[Cause] = []
    if opts.orphan_dependents is not None and opts.propagation is not None:
        causes.append(
            field_invalid(
                "propagationPolicy",
                opts.propagation,
                "orphanDependents and deletionPropagation cannot be both set",
            )
        )
    if opts.propagation is not None and opts.propagation not in (
        "Foreground",
        "Background",
        "Orphan",
    ):
        causes.append(
            field_not_supported(
                "propagationPolicy",
                opts.propagation,
                ["Foreground", "Background", "Orphan", "nil"],
            )
        )
    if causes:
        raise invalid("meta.k8s.io", "DeleteOptions", "", causes)


def check_preconditions(rt: ResourceType, stored: dict[str, Any], opts: DeleteOptions) -> None:
    """409 when the UID or resourceVersion precondition does not match the stored object."""
    meta = ro_meta(stored)
    target = f"{rt.kind}.{rt.group}" if rt.group else rt.kind
    name = meta.get("name", "")
    if opts.uid is not None and opts.uid != meta.get("uid"):
        raise StatusError(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on {target} "{name}": the UID in the '
            f"precondition ({opts.uid}) does not match the UID in record ({meta.get('uid')}). "
            "The object might have been deleted and then recreated",
            name=name,
            group=rt.group,
            kind=rt.kind,
        )
    if opts.resource_version is not None and opts.resource_version != meta.get("resourceVersion"):
        raise StatusError(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on {target} "{name}": the ResourceVersion in the '
            f"precondition ({opts.resource_version}) does not match the ResourceVersion in "
            f"record ({meta.get('resourceVersion')}). The object might have been modified",
            name=name,
            group=rt.group,
            kind=rt.kind,
        )


def gc_finalizers(
    strategy: Strategy, meta: dict[str, Any], opts: DeleteOptions
) -> tuple[bool, list[str]]:
    """``deletionFinalizersForGarbageCollection``: (whether they change, the new list)."""
    current = list(meta.get("finalizers") or [])
    if strategy.default_gc_policy == "Unsupported":
        return False, current
    orphan = _should_orphan(strategy, current, opts)
    foreground = _should_foreground(current, opts)
    new = [f for f in current if f not in ("orphan", "foregroundDeletion")]
    if orphan:
        new.append("orphan")
    if foreground:
        new.append("foregroundDeletion")
    if set(new) == set(current):
        return False, current
    return True, new


def _should_orphan(strategy: Strategy, finalizers: list[str], opts: DeleteOptions) -> bool:
    if opts.orphan_dependents is not None:
        return opts.orphan_dependents
    if opts.propagation is not None:
        return opts.propagation == "Orphan"
    for f in finalizers:
        if f == "orphan":
            return True
        if f == "foregroundDeletion":
            return False
    return strategy.default_gc_policy == "Orphan"


def _should_foreground(finalizers: list[str], opts: DeleteOptions) -> bool:
    if opts.orphan_dependents is not None:
        return False
    if opts.propagation is not None:
        return opts.propagation == "Foreground"
    for f in finalizers:
        if f == "foregroundDeletion":
            return True
        if f == "orphan":
            return False
    return False


def delete_object(  # noqa: PLR0912 - the generic Store's Delete: preconditions, grace, finalizers, propagation
    store: Store,
    strategy: Strategy,
    rt: ResourceType,
    ns_key: str,
    name: str,
    *,
    opts: DeleteOptions,
) -> tuple[dict[str, Any], bool]:
    """``Store.Delete``: finalizers, graceful deletion, GC finalizers; (stored result, deleted).

    Raises:
        StatusError: 404 when the object is not stored.
    """
    key = rt.storage_key
    stored = store.get(key, ns_key, name)
    if stored is None:
        raise not_found(rt.group, rt.plural, name)
    custom = strategy.delete(store, rt, stored, opts)
    if custom is not None:
        return custom
    meta = ro_meta(stored)
    new = deep_copy(stored)
    new_meta = meta_of(new)
    graceful = False
    period = 0
    if meta.get("deletionTimestamp"):
        grace = int(meta.get("deletionGracePeriodSeconds") or 0)
        if grace:
            # Only a shorter grace period may be asked for while deletion is pending.
            if opts.grace_period is None or max(opts.grace_period, 0) >= grace:
                return finalize_delete(strategy, rt, stored), False
            period = max(opts.grace_period, 0)
            graceful = True
            new_meta["deletionTimestamp"] = shift_time(
                str(meta["deletionTimestamp"]), period - grace
            )
            new_meta["deletionGracePeriodSeconds"] = period
    else:
        checked = strategy.check_graceful_delete(rt, stored, opts)
        if checked is not None:
            graceful = True
            period = checked
    update_fins, fins = gc_finalizers(strategy, meta, opts)
    if update_fins:
        if fins:
            new_meta["finalizers"] = fins
        else:
            new_meta.pop("finalizers", None)
    pending = bool(new_meta.get("finalizers"))
    if graceful or pending:
        _mark_deleting(meta, new_meta, graceful=graceful, period=period)
        out = write_deleting(store, rt, stored, new, opts.dry_run)
        if pending or period > 0:
            return out, False
        stored = out
    if opts.dry_run:
        return finalize_delete(strategy, rt, stored), True
    try:
        event = store.delete(key, ns_key, name)
    except KeyNotFoundError:
        raise not_found(rt.group, rt.plural, name) from None
    return finalize_delete(strategy, rt, event.obj), True


def _mark_deleting(
    meta: dict[str, Any], new_meta: dict[str, Any], *, graceful: bool, period: int
) -> None:
    """``updateForGracefulDeletionAndFinalizers``: stamp the deletion on ``new_meta``."""
    if graceful:
        if not meta.get("deletionTimestamp"):
            new_meta["deletionTimestamp"] = now_rfc3339(period)
            new_meta["deletionGracePeriodSeconds"] = period
            if int(new_meta.get("generation") or 0) > 0:
                new_meta["generation"] = int(new_meta["generation"]) + 1
        return
    if not new_meta.get("deletionTimestamp"):
        if int(new_meta.get("generation") or 0) > 0:
            new_meta["generation"] = int(new_meta["generation"]) + 1
        new_meta["deletionTimestamp"] = now_rfc3339()
    new_meta["deletionGracePeriodSeconds"] = 0


def write_deleting(
    store: Store, rt: ResourceType, stored: dict[str, Any], new: dict[str, Any], dry_run: bool
) -> dict[str, Any]:
    """Store ``new``, the marked-for-deletion form of ``stored`` (not on a dry run)."""
    if dry_run or new == stored:
        return new
    meta = ro_meta(stored)
    event = store.update(rt.storage_key, new, meta.get("resourceVersion") or "")
    return event.obj


def finalize_delete(strategy: Strategy, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """What a delete answers: the object for types that return it, else a Success Status."""
    if strategy.return_deleted_object:
        return obj
    return status_success(rt, obj)


def status_success(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """The Success ``Status`` naming the deleted ``obj``."""
    meta = ro_meta(obj)
    details: dict[str, Any] = {"name": meta.get("name", "")}
    if rt.group:
        details["group"] = rt.group
    details["kind"] = rt.plural
    if meta.get("uid"):
        details["uid"] = meta["uid"]
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }
