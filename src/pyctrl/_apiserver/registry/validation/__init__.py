"""Validation of object metadata and of the built-in types, worded as kube-apiserver words it.

Every write is validated before it is stored, in kube-apiserver's order and reporting every
problem at once. For a built-in kind (`validate_builtin_object`):

* create: the type's strategy (``pkg/registry/<group>/<kind>/strategy.go`` calling
  ``pkg/apis/<group>/validation``: metadata, then the type's own rules); only when that
  passes, the common metadata check of ``rest.BeforeCreate``;
* update: the common checks of ``rest.BeforeUpdate`` (the create-time metadata check and
  ``ValidateObjectMetaAccessorUpdate``), then the strategy's ``ValidateUpdate`` (which
  repeats the metadata checks, so kube-apiserver reports such errors more than once);
* a write of ``/status`` (recognised by a changed status, which no other write can change):
  the status strategy's rules (e.g. ``ValidateServiceStatusUpdate``).

Custom resources and CRDs use `validate_object_meta` and `validate_meta_update` here with
their schema validation. Each problem is a :class:`~pyctrl._apiserver.apimachinery.errors.Cause`;
the server answers 422 Invalid with all of them. Built-in validation covers the kinds and
rules listed in docs/envtest-server.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from pyctrl._apimachinery.field import Cause, field_required
from pyctrl._apiserver.registry.validation import meta as _meta
from pyctrl._apiserver.registry.validation.core import base64_problem
from pyctrl._apiserver.registry.validation.meta import (
    LABEL1035_MSG,
    LABEL1123_MSG,
    STANDARD_FINALIZERS,
    SUBDOMAIN_MSG,
    name_problems,
)

if TYPE_CHECKING:
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = [
    "LABEL1035_MSG",
    "LABEL1123_MSG",
    "STANDARD_FINALIZERS",
    "SUBDOMAIN_MSG",
    "KindRules",
    "base64_problem",
    "default_create",
    "kube_group",
    "name_problems",
    "validate_builtin",
    "validate_builtin_object",
    "validate_meta_update",
    "validate_object_meta",
]

Obj = dict[str, Any]

# Groups whose validation uses core's ValidateObjectMeta (with its finalizer-name check).
_KUBE_GROUPS = frozenset({"", "apps", "batch", "coordination.k8s.io"})


def validate_object_meta(rt: ResourceType, obj: Obj, name_rule: str) -> list[Cause]:
    """``ValidateObjectMeta`` for a create (or the new object of an update).

    ``name_rule``: the names the kind accepts (its strategy's `name_rule`).
    """
    if not isinstance(obj.get("metadata"), dict):
        return [field_required("metadata", "")]
    return _meta.object_meta(obj, name_rule, namespaced=rt.namespaced)


def validate_meta_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateObjectMetaUpdate``: immutable metadata, no finalizers added while deleting."""
    return _meta.meta_update(new, old)


def kube_group(rt: ResourceType) -> bool:
    """Whether ``rt``'s validation uses core's ``ValidateObjectMeta`` (finalizer names too)."""
    return rt.storage_key[0] in _KUBE_GROUPS


def default_create(rt: ResourceType, obj: Obj, name_rule: str) -> list[Cause]:
    """The ``Validate`` of a type without rules of its own: its object metadata."""
    return _meta.object_meta(obj, name_rule, namespaced=rt.namespaced, kube=kube_group(rt))


def _as_storage(rt: ResourceType, obj: Obj) -> Obj:
    """The object in the internal (storage) shape the validators read."""
    return rt.to_storage(obj) if rt.to_storage is not None and rt.group == "events.k8s.io" else obj


def _is_status_write(obj: Obj, old: Obj) -> bool:
    """A write of ``/status``: only the status changed (a main-resource write keeps it)."""
    if obj.get("status") == old.get("status"):
        return False
    return all(obj.get(k) == old.get(k) for k in {*obj, *old} if k not in ("status", "metadata"))


class KindRules(Protocol):
    """A built-in kind's validation, as its strategy (`pyctrl._apiserver.registry.rest`) has it."""

    @property
    def create_checks_metadata(self) -> bool:
        """Whether `validate_create` includes ``ValidateObjectMeta``.

        With a name rule at least as strict as a path segment's, as nearly every kind's
        ``Validate`` does.
        """
        ...

    def validate_create(self, rt: ResourceType, obj: Obj) -> list[Cause]:
        """``Validate``."""
        ...

    def validate_update(self, rt: ResourceType, obj: Obj, old: Obj) -> list[Cause]:
        """``ValidateUpdate``."""
        ...

    def validate_status_update(self, rt: ResourceType, obj: Obj, old: Obj) -> list[Cause] | None:
        """The status strategy's ``ValidateUpdate``; None for a kind without one."""
        ...


def validate_builtin(
    rules: KindRules, rt: ResourceType, obj: Obj, old: Obj | None, *, status_rules: bool
) -> list[Cause]:
    """The kind's strategy validation of a built-in object (create, update or status update).

    ``status_rules``: whether the kind has a status strategy of its own (only then is an
    update looked at as a write of ``/status``).
    """
    obj = _as_storage(rt, obj)
    if old is None:
        return rules.validate_create(rt, obj)
    old = _as_storage(rt, old)
    if status_rules and _is_status_write(obj, old):
        status = rules.validate_status_update(rt, obj, old)
        if status is not None:
            return status
    return rules.validate_update(rt, obj, old)


def validate_builtin_object(
    rules: KindRules, rt: ResourceType, obj: Obj, old: Obj | None, *, status_rules: bool
) -> list[Cause]:
    """Everything kube-apiserver checks on a write of a built-in object, in its order."""
    if not isinstance(obj.get("metadata"), dict):
        return [field_required("metadata", "")]
    stored = _as_storage(rt, obj)
    if old is None:
        # rest.BeforeCreate runs the common metadata checks (path-segment names) after
        # the kind's when those found nothing; they can find nothing more when the kind's
        # include ObjectMeta's (`KindRules.create_checks_metadata`).
        causes = rules.validate_create(rt, stored)
        if causes or rules.create_checks_metadata:
            return causes
        return _meta.object_meta(stored, "path", namespaced=rt.namespaced)
    common = _meta.object_meta(stored, "path", namespaced=rt.namespaced)
    update = _meta.meta_update(stored, _as_storage(rt, old))
    return common + update + validate_builtin(rules, rt, obj, old, status_rules=status_rules)
