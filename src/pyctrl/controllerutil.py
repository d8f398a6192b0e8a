"""Helpers every reconciler needs: owner references, create-or-update, finalizers.

Mirrors controller-runtime's ``pkg/controller/controllerutil`` and ``pkg/finalizer``.

Owner references:

- `set_controller_reference(owner, obj)` marks ``owner`` as *the* controller of ``obj``
  (``controller: true, blockOwnerDeletion: true``): the garbage collector deletes
  ``obj`` with its owner, and ``Owns(...)`` watches map ``obj``'s events to the owner.
  An object has at most one controller: `AlreadyOwnedError` if another one holds it.
  A namespaced owner must be in the object's namespace; a cluster-scoped object cannot
  have a namespaced owner.
- `set_owner_reference`, `remove_owner_reference`, `has_owner_reference`.
- `get_controller_of(obj)`: the owner reference of ``obj``'s controller, or None
  (apimachinery's ``metav1.GetControllerOf``).
- `get_reference(obj)`: an `pyctrl.meta.ObjectReference` to ``obj`` at its current
  resourceVersion (client-go's ``reference.GetReference``).

Create or update, reporting what happened (`OperationResult`):

- `create_or_update(client, obj, mutate)` reads the object, runs ``mutate`` on it
  (or on ``obj`` if it does not exist), then creates, updates, or does nothing when
  ``mutate`` changed nothing;
- `create_or_patch` does the same with a merge patch, and patches status separately.

Finalizers, in memory (`add_finalizer`, `remove_finalizer`, `contains_finalizer`) and
on the server without clobbering other controllers' finalizers (`patch_add_finalizer`,
`patch_remove_finalizer`: JSON patches guarded by ``test`` operations, as kube-rs does).
`Finalizers` is a registry: it adds its keys while the object lives, runs each
finalizer when the object is being deleted, and removes a key once its finalizer ran.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol, TypeVar

from pyctrl import _executor
from pyctrl.client import Client, JSONPatch, MergeFrom, MergePatch, json_pointer
from pyctrl.errors import NotFoundError, PyctrlError, SchemeError
from pyctrl.meta import ObjectReference, OwnerReference
from pyctrl.resource import CustomResource, OwnerRef, accessor
from pyctrl.scheme import Scheme, default_scheme

__all__ = [
    "AlreadyOwnedError",
    "Finalizer",
    "FinalizerResult",
    "Finalizers",
    "OperationResult",
    "SyncFinalizer",
    "add_finalizer",
    "contains_finalizer",
    "create_or_patch",
    "create_or_update",
    "get_controller_of",
    "get_reference",
    "has_controller_reference",
    "has_owner_reference",
    "patch_add_finalizer",
    "patch_remove_finalizer",
    "remove_finalizer",
    "remove_owner_reference",
    "set_controller_reference",
    "set_owner_reference",
]

T = TypeVar("T")


class AlreadyOwnedError(PyctrlError):
    """The object already has a different controller owner.

    Attributes:
        kind: The owned object's kind, e.g. ``Deployment``.
        name: The owned object's name.
        namespace: The owned object's namespace (empty if cluster-scoped).
        owner: The controller reference it already has.
    """

    def __init__(
        self, kind: str, name: str, namespace: str, owner: OwnerRef, wanted: OwnerRef
    ) -> None:
        self.kind, self.name, self.namespace, self.owner = kind, name, namespace, owner
        where = f"{namespace}/{name}" if namespace else name
        super().__init__(
            f"{kind} {where!r} is already controlled by {owner.kind} {owner.name!r}; "
            f"cannot also be controlled by {wanted.kind} {wanted.name!r}"
        )


class OperationResult(StrEnum):
    """What `create_or_update` / `create_or_patch` did."""

    UNCHANGED = "unchanged"
    CREATED = "created"
    UPDATED = "updated"
    UPDATED_STATUS = "updatedStatus"
    UPDATED_STATUS_ONLY = "updatedStatusOnly"


def _namespaced(obj: Any, scheme: Scheme) -> bool | None:
    if isinstance(obj, CustomResource):
        return type(obj).resource_info().namespaced
    return None  # unknown without a REST mapping: judged by the namespace field


def _owner_ref(owner: Any, scheme: Scheme, *, controller: bool | None) -> OwnerRef:
    meta = accessor(owner)
    if not meta.uid:
        raise ValueError(
            f"owner {meta.name!r} has no uid: read it from the API server before referencing it"
        )
    gvk = scheme.gvk_for(owner)
    return OwnerRef(
        api_version=gvk.api_version,
        kind=gvk.kind,
        name=meta.name,
        uid=meta.uid,
        controller=controller,
        block_owner_deletion=True if controller else None,
    )


def _check_scope(owner: Any, obj: Any, scheme: Scheme) -> None:
    owner_meta, obj_meta = accessor(owner), accessor(obj)
    owner_namespaced = _namespaced(owner, scheme)
    if owner_namespaced is None:
        owner_namespaced = bool(owner_meta.namespace)
    if not owner_namespaced:
        return
    if not obj_meta.namespace:
        raise ValueError(
            f"cluster-scoped object {obj_meta.name!r} must not have a namespace-scoped owner "
            f"(owner {owner_meta.namespace}/{owner_meta.name})"
        )
    if owner_meta.namespace != obj_meta.namespace:
        raise ValueError(
            f"cross-namespace owner references are disallowed: owner "
            f"{owner_meta.namespace}/{owner_meta.name}, object {obj_meta.namespace}/{obj_meta.name}"
        )


def _same(a: OwnerRef, b: OwnerRef) -> bool:
    return a.group == b.group and a.kind == b.kind and a.name == b.name


def _upsert(obj: Any, ref: OwnerRef) -> None:
    meta = accessor(obj)
    refs = meta.owner_references
    for index, existing in enumerate(refs):
        if _same(existing, ref):
            refs[index] = ref
            break
    else:
        refs.append(ref)
    meta.owner_references = refs


def set_controller_reference(owner: Any, obj: Any, *, scheme: Scheme | None = None) -> None:
    """Make ``owner`` the controller of ``obj`` (in memory; write ``obj`` afterwards).

    Raises:
        AlreadyOwnedError: another object is already ``obj``'s controller.
        ValueError: the owner has no uid, or the scopes/namespaces do not allow it.
    """
    scheme = scheme or default_scheme()
    ref = _owner_ref(owner, scheme, controller=True)
    _check_scope(owner, obj, scheme)
    meta = accessor(obj)
    for existing in meta.owner_references:
        if existing.controller and not _same(existing, ref):
            kind = _kind_of(obj, scheme)
            raise AlreadyOwnedError(kind, meta.name or "", meta.namespace or "", existing, ref)
    _upsert(obj, ref)


def _kind_of(obj: Any, scheme: Scheme) -> str:
    try:
        return scheme.gvk_for(obj).kind
    except SchemeError:
        return type(obj).__name__


def set_owner_reference(owner: Any, obj: Any, *, scheme: Scheme | None = None) -> None:
    """Add (or refresh) a non-controller owner reference to ``owner`` on ``obj``."""
    scheme = scheme or default_scheme()
    _check_scope(owner, obj, scheme)
    _upsert(obj, _owner_ref(owner, scheme, controller=None))


def remove_owner_reference(owner: Any, obj: Any, *, scheme: Scheme | None = None) -> bool:
    """Remove the owner reference to ``owner``; return True if there was one."""
    scheme = scheme or default_scheme()
    target = _owner_ref(owner, scheme, controller=None)
    meta = accessor(obj)
    refs = meta.owner_references
    kept = [r for r in refs if not _same(r, target)]
    meta.owner_references = kept
    return len(kept) != len(refs)


def has_owner_reference(owner: Any, obj: Any, *, scheme: Scheme | None = None) -> bool:
    """True if ``obj`` references ``owner`` (as controller or not)."""
    target = _owner_ref(owner, scheme or default_scheme(), controller=None)
    return any(_same(r, target) for r in accessor(obj).owner_references)


def has_controller_reference(obj: Any) -> bool:
    """True if ``obj`` has a controller owner."""
    return any(r.controller for r in accessor(obj).owner_references)


def get_controller_of(obj: Any) -> OwnerReference | None:
    """The owner reference marked ``controller: true`` on ``obj``, or None.

    apimachinery's ``metav1.GetControllerOf``; kubebuilder's CronJob tutorial indexes
    Jobs by it::

        owner = get_controller_of(job)
        if owner is None or owner.api_version != "batch.tutorial.kubebuilder.io/v1" \
                or owner.kind != "CronJob":
            return []
        return [owner.name]
    """
    for ref in accessor(obj).owner_references:
        if ref.controller:
            return OwnerReference.model_validate(ref.to_dict())
    return None


def get_reference(obj: Any, *, scheme: Scheme | None = None) -> ObjectReference:
    """An `ObjectReference` to ``obj``: its kind, namespace, name, uid and resourceVersion.

    client-go's ``reference.GetReference`` (controller-runtime's ``ref.GetReference``):
    the kind comes from the object's type through ``scheme`` (the default scheme unless
    given), so it works for typed objects whose ``kind`` field is empty.

    Raises:
        pyctrl.errors.SchemeError: the scheme does not know the object's type.
    """
    gvk = (scheme or default_scheme()).gvk_for(obj)
    meta = accessor(obj)
    return ObjectReference(
        api_version=gvk.api_version,
        kind=gvk.kind,
        namespace=meta.namespace or None,
        name=meta.name or None,
        uid=meta.uid or None,
        resource_version=meta.resource_version or None,
    )


# -- finalizers --------------------------------------------------------------------------


def contains_finalizer(obj: Any, finalizer: str) -> bool:
    """True if ``obj`` carries the finalizer."""
    return finalizer in accessor(obj).finalizers


def add_finalizer(obj: Any, finalizer: str) -> bool:
    """Add the finalizer in memory; return True if it was missing."""
    meta = accessor(obj)
    current = meta.finalizers
    if finalizer in current:
        return False
    meta.finalizers = [*current, finalizer]
    return True


def remove_finalizer(obj: Any, finalizer: str) -> bool:
    """Remove the finalizer in memory; return True if it was present."""
    meta = accessor(obj)
    current = meta.finalizers
    if finalizer not in current:
        return False
    meta.finalizers = [f for f in current if f != finalizer]
    return True


async def patch_add_finalizer(client: Client, obj: T, finalizer: str) -> T:
    """Add the finalizer on the server with a guarded JSON patch; return the new object.

    The patch tests the current finalizer list (or, when there is none, the
    resourceVersion), so a concurrent change by another controller makes it fail with
    ``InvalidError``/``ConflictError`` instead of being overwritten: re-read and retry.
    """
    meta = accessor(obj)
    if finalizer in meta.finalizers:
        return obj
    path = json_pointer("metadata", "finalizers")
    ops: list[dict[str, Any]]
    if meta.finalizers:
        ops = [
            {"op": "test", "path": path, "value": meta.finalizers},
            {"op": "add", "path": path + "/-", "value": finalizer},
        ]
    else:
        ops = [
            {
                "op": "test",
                "path": json_pointer("metadata", "resourceVersion"),
                "value": meta.resource_version,
            },
            {"op": "add", "path": path, "value": [finalizer]},
        ]
    return await client.patch(obj, JSONPatch(ops))


async def patch_remove_finalizer(client: Client, obj: T, finalizer: str) -> T:
    """Remove the finalizer on the server with a guarded JSON patch; return the new object.

    The patch tests that the finalizer is still at the index it had, so another
    controller's concurrent change to the list is never overwritten.
    """
    finalizers = accessor(obj).finalizers
    if finalizer not in finalizers:
        return obj
    index = finalizers.index(finalizer)
    item = json_pointer("metadata", "finalizers", index)
    ops = [{"op": "test", "path": item, "value": finalizer}, {"op": "remove", "path": item}]
    return await client.patch(obj, JSONPatch(ops))


@dataclass(frozen=True, slots=True)
class FinalizerResult:
    """What running finalizers changed: the object's metadata, and/or its status."""

    updated: bool = False
    status_updated: bool = False


class Finalizer(Protocol):
    """Cleans up outside the cluster before an object is deleted."""

    async def finalize(self, obj: Any) -> FinalizerResult:
        """Clean up for ``obj``; raise to keep the finalizer (and retry later)."""
        ...


class SyncFinalizer(Protocol):
    """A `Finalizer` of blocking code: a plain ``def finalize``, run in a thread."""

    def finalize(self, obj: Any) -> FinalizerResult:
        """Clean up for ``obj``; raise to keep the finalizer (and retry later)."""
        ...


class Finalizers:
    """A registry of finalizers by key, run like controller-runtime's ``finalizer.Finalizers``.

    Example::

        finalizers = Finalizers()
        finalizers.register("myapp.example.com/cleanup", ExternalCleanup())
        result = await finalizers.finalize(obj)     # in memory
        if result.updated:
            obj = await client.update(obj)
    """

    def __init__(self) -> None:
        self._by_key: dict[str, Finalizer | SyncFinalizer] = {}

    def register(self, key: str, finalizer: Finalizer | SyncFinalizer) -> None:
        """Register a finalizer under ``key``; a key is registered once.

        A plain ``def finalize`` runs in a thread (`pyctrl.blocking`), never on the loop.
        """
        if key in self._by_key:
            raise ValueError(f"finalizer {key!r} is already registered")
        self._by_key[key] = finalizer

    async def finalize(self, obj: Any) -> FinalizerResult:
        """Add missing keys to a live object, or run and remove them on a deleting one.

        Errors from finalizers are collected; the keys of failed finalizers stay, and an
        ExceptionGroup is raised after the others ran, so the reconcile is retried.
        """
        meta = accessor(obj)
        updated = status_updated = False
        if meta.deletion_timestamp is None:
            for key in self._by_key:
                updated |= add_finalizer(obj, key)
            return FinalizerResult(updated=updated)
        errors: list[Exception] = []
        for key, finalizer in self._by_key.items():
            if not contains_finalizer(obj, key):
                continue
            try:
                result = await _executor.invoke(finalizer.finalize, obj)
            except Exception as exc:
                errors.append(exc)
                continue
            # The key goes whatever the finalizer reports: no short-circuit past the removal.
            removed = remove_finalizer(obj, key)
            updated |= removed or result.updated
            status_updated |= result.status_updated
        if errors:
            raise ExceptionGroup("finalizers failed", errors)
        return FinalizerResult(updated=updated, status_updated=status_updated)


# -- create or update --------------------------------------------------------------------

Mutate = Callable[[Any], Awaitable[None] | None]


async def _call(mutate: Mutate, obj: Any) -> None:
    result = mutate(obj)
    if inspect.isawaitable(result):
        await result


def _key(obj: Any) -> tuple[str, str]:
    meta = accessor(obj)
    if not meta.name:
        raise ValueError("create_or_update needs an object with metadata.name set")
    return meta.name, meta.namespace


def _check_key(before: tuple[str, str], obj: Any) -> None:
    if _key(obj) != before:
        raise ValueError("mutate must not change the object's name or namespace")


async def create_or_update(
    client: Client, obj: T, mutate: Mutate, *, scheme: Scheme | None = None
) -> tuple[OperationResult, T]:
    """Create ``obj`` or update the live object, after ``mutate`` sets the desired state.

    ``mutate`` (plain or coroutine function) is called with the live object when one
    exists, else with ``obj``; it edits in place and must not change name or namespace.
    Returns what happened and the object as the server now has it.
    """
    scheme = scheme or default_scheme()
    name, namespace = _key(obj)
    try:
        live = await client.get(
            type(obj), name, namespace or None, gvk=_gvk_if_untyped(obj, scheme)
        )
    except NotFoundError:
        await _call(mutate, obj)
        _check_key((name, namespace), obj)
        return OperationResult.CREATED, await client.create(obj)
    before, version = scheme.to_dict(live), accessor(live).resource_version
    await _call(mutate, live)
    _check_key((name, namespace), live)
    if scheme.to_dict(live) == before:
        return OperationResult.UNCHANGED, live
    updated = await client.update(live)
    # A mutate that replaces a whole spec drops the fields the server defaults: the
    # object differs from what we read, yet the server, defaulting them again, stores
    # nothing and keeps the resourceVersion. Nothing was updated.
    if accessor(updated).resource_version == version:
        return OperationResult.UNCHANGED, updated
    return OperationResult.UPDATED, updated


async def create_or_patch(
    client: Client, obj: T, mutate: Mutate, *, scheme: Scheme | None = None
) -> tuple[OperationResult, T]:
    """Like `create_or_update`, but writes a merge patch, and the status separately.

    Returns ``updated``, ``updatedStatus`` (both), ``updatedStatusOnly``, ``created``
    or ``unchanged``, and the object as the server now has it.
    """
    scheme = scheme or default_scheme()
    name, namespace = _key(obj)
    try:
        live = await client.get(
            type(obj), name, namespace or None, gvk=_gvk_if_untyped(obj, scheme)
        )
    except NotFoundError:
        await _call(mutate, obj)
        _check_key((name, namespace), obj)
        status = scheme.to_dict(obj).get("status")
        created = await client.create(obj)
        if status:
            created = await client.status().patch(created, MergePatch({"status": status}))
        return OperationResult.CREATED, created
    before = scheme.to_dict(live)
    snapshot = MergeFrom(live, scheme=scheme)
    await _call(mutate, live)
    _check_key((name, namespace), live)
    after = scheme.to_dict(live)
    main_changed = {k: v for k, v in after.items() if k != "status"} != {
        k: v for k, v in before.items() if k != "status"
    }
    status_changed = after.get("status") != before.get("status")
    result = live
    # As in create_or_update: a patch the server stores as a no-op (the resourceVersion
    # stays) changed nothing.
    version = accessor(live).resource_version
    if main_changed:
        result = await client.patch(live, snapshot)
        main_changed = accessor(result).resource_version != version
        version = accessor(result).resource_version
    if status_changed:
        result = await client.status().patch(result, MergePatch({"status": after.get("status")}))
        status_changed = accessor(result).resource_version != version
    if main_changed and status_changed:
        return OperationResult.UPDATED_STATUS, result
    if main_changed:
        return OperationResult.UPDATED, result
    if status_changed:
        return OperationResult.UPDATED_STATUS_ONLY, result
    return OperationResult.UNCHANGED, result


def _gvk_if_untyped(obj: Any, scheme: Scheme) -> Any:
    from pyctrl.resource import PartialObjectMetadata, Unstructured

    if isinstance(obj, Unstructured | PartialObjectMetadata | dict):
        return scheme.gvk_for(obj)
    return None
