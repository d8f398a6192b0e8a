"""The per-type strategy interface and the common steps every write runs around it.

kube-apiserver's generic Store (`generic`) runs the same create, update and delete for
every resource; what differs per type is its strategy (``k8s.io/apiserver/pkg/registry/rest``:
``RESTCreateStrategy``, ``RESTUpdateStrategy``, ``RESTDeleteStrategy``,
``RESTGracefulDeleteStrategy``, ``ResetFieldsStrategy``), implemented in
``pkg/registry/<group>/<kind>/strategy.go``. :class:`Strategy` is that interface with the
behaviour of a type without rules of its own; the modules under ``core/``, ``batch/`` and
``apiextensions/`` override what their type needs.

`before_create`, `before_update` and `validate` are ``rest.BeforeCreate`` and
``rest.BeforeUpdate`` (create.go, update.go): the system metadata every type gets, then the
strategy's own preparation and validation.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any, ClassVar, Self

from pyctrl._apiserver.apimachinery.errors import invalid
from pyctrl._apiserver.registry import validation as _validation
from pyctrl._apiserver.registry.decoding import clean_meta, decode_builtin
from pyctrl._apiserver.registry.meta import CRDS, deep_copy, meta_of, now_rfc3339, ro_meta
from pyctrl._apiserver.registry.validation.meta import meta_update
from pyctrl._apiserver.scheme import builtin as _builtin_schema
from pyctrl._ids import secure_uuid4

if TYPE_CHECKING:
    from pyctrl._apimachinery.field import Cause
    from pyctrl._apiserver.registry.options import DeleteOptions, RequestContext
    from pyctrl._apiserver.registry.printing import Printer
    from pyctrl._apiserver.scheme.resources import ResourceType
    from pyctrl._apiserver.storage.store import Store

__all__ = ["Strategy", "before_create", "before_update", "validate"]

_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_MAX_GENERATED_PREFIX = 58


class Strategy:
    """The rules of one resource type; this base class is the default of every type.

    A kind's strategy holds everything kube-apiserver keeps per kind: the facts below
    (its ``RESTCreateStrategy`` / ``RESTUpdateStrategy`` / ``RESTDeleteStrategy`` flags),
    its table `printer`, its reset fields, and the hooks that decode, default, validate
    and prepare its objects. Each hook receives the `ResourceType` (the version and names
    the request addressed, its schema) and changes the object in place unless it says
    otherwise. The kind's merge metadata (list types, merge keys) is shared with the
    client, so it lives in the floor, `pyctrl._apimachinery.merge_keys`.
    """

    # --- the kind's facts ----------------------------------------------------------------

    has_generation: ClassVar[bool] = False
    """Whether ``metadata.generation`` counts changes outside metadata and status."""
    allow_create_on_update: ClassVar[bool] = False
    """``AllowCreateOnUpdate``: whether a PUT of a missing object creates it."""
    allow_unconditional_update: ClassVar[bool] = True
    """``AllowUnconditionalUpdate``: whether an update may leave out ``resourceVersion``."""
    return_deleted_object: ClassVar[bool] = False
    """``ReturnDeletedObject``: whether a delete answers the object, not a Success Status."""
    create_checks_metadata: ClassVar[bool] = True
    """Whether `validate_create` checks the object metadata (``ValidateObjectMeta``); then
    kube-apiserver's common checks after it, which would find nothing more, are skipped."""
    name_rule: ClassVar[str] = "subdomain"
    """The names the kind accepts: ``subdomain`` (DNS-1123 subdomain), ``label`` (DNS-1123
    label), ``label1035`` (DNS-1035 label) or ``path`` (any path segment name)."""
    default_gc_policy: ClassVar[str] = "Background"
    """``DefaultGarbageCollectionPolicy``: ``Background``, ``Orphan`` or ``Unsupported``."""
    initial_status: ClassVar[dict[str, Any] | None] = None
    """The status a created object starts with (None: the status written is kept, or
    dropped where `reset_status_on_create` says)."""
    printer: ClassVar[Printer | None] = None
    """The kind's table (``kubectl get``'s columns); None: Name and Created At."""

    @classmethod
    def for_store(cls, store: Store) -> Self:
        """The strategy of one server (a kind that follows the store overrides this)."""
        del store
        return cls()

    # --- decoding and defaults (the codec) -----------------------------------------------

    def decode(self, rt: ResourceType, obj: dict[str, Any], opts: RequestContext) -> None:
        """Drop the fields the kind does not declare, as decoding the request body does."""
        found = decode_builtin(rt.group, rt.version, rt.kind, obj, opts)
        if found is not None:
            found.drop()
        clean_meta(obj)

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """Apply the kind's defaults (``SetDefaults_<Kind>``, the defaulting of decoding)."""

    def after_mutating_admission(
        self, rt: ResourceType, operation: str, obj: dict[str, Any], mutated: bool
    ) -> None:
        """Decode again what mutating webhooks returned (``mutated``: whether any did)."""

    def apply_errors(self, rt: ResourceType, applied: dict[str, Any]) -> list[str]:
        """Why an apply patch does not convert to the type's typed value (empty: it does)."""
        return _builtin_schema.apply_errors(rt.group, rt.version, rt.kind, applied)

    # --- create (RESTCreateStrategy) -----------------------------------------------------

    def reset_fields(self, rt: ResourceType, subresource: str) -> list[str]:
        """``GetResetFields``: the fields an endpoint ignores (and owns for no one)."""
        if subresource == "status":
            return ["spec"]
        if subresource:
            return []
        return ["status"] if rt.has_status else []

    def check_writable(self, rt: ResourceType, verb: str) -> None:
        """Refuse a ``create`` or an ``update`` the type accepts no longer."""

    def reset_status_on_create(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """Set the status a created object starts with (for a type with ``/status``)."""
        if self.initial_status is not None:
            obj["status"] = deep_copy(self.initial_status)

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``PrepareForCreate``: the type's own fields, after the system metadata is set."""

    def begin_create(self, rt: ResourceType, obj: dict[str, Any], *, dry_run: bool) -> None:
        """Take what a new object holds (e.g. a Service's IP) just before it is stored."""

    def after_create(self, rt: ResourceType, name: str) -> None:
        """React to the object ``name`` having been created (not on a dry run)."""

    # --- validation ----------------------------------------------------------------------

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        """Everything checked on a write of a built-in object, in kube-apiserver's order.

        The common metadata checks of ``rest.BeforeCreate`` and ``rest.BeforeUpdate``
        around the kind's `validate_create`, `validate_update` or `validate_status_update`.
        """
        status_rules = type(self).validate_status_update is not Strategy.validate_status_update
        return _validation.validate_builtin_object(self, rt, obj, old, status_rules=status_rules)

    def validate_create(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        """``Validate``: the kind's rules for a new object (here: its metadata)."""
        return _validation.default_create(rt, obj, self.name_rule)

    def validate_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any]
    ) -> list[Cause]:
        """``ValidateUpdate``: the metadata update, then the create rules."""
        kube = _validation.kube_group(rt)
        return meta_update(obj, old, kube=kube) + self.validate_create(rt, obj)

    def validate_status_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any]
    ) -> list[Cause] | None:
        """The status strategy's ``ValidateUpdate``; None: the kind has none of its own."""
        del rt, obj, old
        return None

    # --- update (RESTUpdateStrategy) -----------------------------------------------------

    def status_projection(
        self, rt: ResourceType, existing: dict[str, Any], new: dict[str, Any]
    ) -> dict[str, Any]:
        """A ``/status`` write: the existing object with the new status and metadata version."""
        out = deep_copy(existing)
        out_meta = meta_of(out)
        new_meta = meta_of(new)
        out_meta["resourceVersion"] = new_meta.get("resourceVersion", "")
        if "managedFields" in new_meta:
            out_meta["managedFields"] = new_meta["managedFields"]
        if "status" in new:
            out["status"] = new["status"]
        else:
            self.drop_status(out)
        return out

    def drop_status(self, obj: dict[str, Any]) -> None:
        """What a ``/status`` write without a status leaves (an empty status)."""
        obj["status"] = {}

    def prepare_for_update(
        self, rt: ResourceType, new: dict[str, Any], existing: dict[str, Any], subresource: str
    ) -> None:
        """``PrepareForUpdate``: keep what the type does not let an update change."""

    def after_update(self, rt: ResourceType, name: str) -> None:
        """React to the object ``name`` having been updated (not on a dry run)."""

    def should_delete_during_update(self, new: dict[str, Any], existing: dict[str, Any]) -> bool:
        """Whether an update completes a pending deletion (its last finalizer went)."""
        old_meta = ro_meta(existing)
        if ro_meta(new).get("finalizers"):
            return False
        if not old_meta.get("deletionTimestamp"):
            return False
        grace = old_meta.get("deletionGracePeriodSeconds")
        return grace is None or grace == 0

    # --- delete (RESTDeleteStrategy) -----------------------------------------------------

    def before_delete(self, rt: ResourceType, name: str) -> None:
        """Refuse to delete the object ``name`` (e.g. an immortal namespace)."""

    def delete(
        self, store: Store, rt: ResourceType, stored: dict[str, Any], opts: DeleteOptions
    ) -> tuple[dict[str, Any], bool] | None:
        """A type's own delete: (stored result, deleted), or None for the generic one."""
        del store, rt, stored, opts
        return None

    def check_graceful_delete(
        self, rt: ResourceType, stored: dict[str, Any], opts: DeleteOptions
    ) -> int | None:
        """``CheckGracefulDelete``: the grace period in seconds, or None if not graceful."""
        del rt, stored, opts
        return None


def before_create(strategy: Strategy, rt: ResourceType, obj: dict[str, Any]) -> None:
    """``rest.BeforeCreate``'s metadata: name, uid, times, generation; then the strategy's."""
    meta = meta_of(obj)
    if meta.get("generateName") and not meta.get("name"):
        prefix = str(meta["generateName"])[:_MAX_GENERATED_PREFIX]
        meta["name"] = prefix + "".join(random.choices(_GENERATE_ALPHABET, k=5))
    meta["uid"] = secure_uuid4()
    meta["creationTimestamp"] = now_rfc3339()
    meta.pop("deletionTimestamp", None)
    meta.pop("deletionGracePeriodSeconds", None)
    # A placeholder keeps the field's position; the store fills in the real version.
    meta["resourceVersion"] = ""
    if strategy.has_generation:
        meta["generation"] = 1
    else:
        meta.pop("generation", None)
    strategy.prepare_for_create(rt, obj)


def _non_meta(obj: dict[str, Any], drop_status: bool) -> dict[str, Any]:
    skip = {"metadata", "status"} if drop_status else {"metadata"}
    return {k: v for k, v in obj.items() if k not in skip and k not in ("apiVersion", "kind")}


def before_update(
    strategy: Strategy,
    rt: ResourceType,
    new: dict[str, Any],
    existing: dict[str, Any],
    subresource: str,
) -> None:
    """``rest.BeforeUpdate``'s metadata: what an update keeps, the generation; the strategy's."""
    new_meta = meta_of(new)
    old_meta = ro_meta(existing)
    if not new_meta.get("uid") and old_meta.get("uid"):
        new_meta["uid"] = old_meta["uid"]
    if old_meta.get("creationTimestamp"):
        new_meta["creationTimestamp"] = old_meta["creationTimestamp"]
    for key in ("deletionTimestamp", "deletionGracePeriodSeconds"):
        if key in old_meta:
            new_meta[key] = old_meta[key]
        else:
            new_meta.pop(key, None)
    if "generation" in old_meta:
        new_meta["generation"] = old_meta["generation"]
    else:
        new_meta.pop("generation", None)
    new_meta.pop("selfLink", None)
    if strategy.has_generation and subresource != "status":
        drop_status = rt.has_status
        if _non_meta(new, drop_status) != _non_meta(existing, drop_status):
            new_meta["generation"] = int(old_meta.get("generation") or 0) + 1
    strategy.prepare_for_update(rt, new, existing, subresource)


def validate(
    strategy: Strategy, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
) -> None:
    """422 with every problem of the object's metadata and of the type's own rules."""
    if not rt.crd_name and rt.storage_key != CRDS:
        # Built-in kinds: the common checks and the type's strategy, in kube's order.
        causes = strategy.validate(rt, obj, old)
        if causes:
            name = ro_meta(obj).get("name") or ro_meta(obj).get("generateName") or ""
            # The internal type's kind names the error: core's Event for events.k8s.io too.
            raise invalid(rt.storage_key[0], rt.kind, name, causes)
        return
    causes = _validation.validate_object_meta(rt, obj, strategy.name_rule)
    if old is not None:
        # kube-apiserver checks the metadata update twice: with the common fields
        # (rest.BeforeUpdate) and again in the strategy's ValidateUpdate; both errors
        # are reported.
        meta_update = _validation.validate_meta_update(obj, old)
        causes.extend(meta_update)
        causes.extend(meta_update)
    causes.extend(strategy.validate(rt, obj, old))
    if causes:
        name = ro_meta(obj).get("name") or ro_meta(obj).get("generateName") or ""
        raise invalid(rt.group, rt.kind, name, causes)
