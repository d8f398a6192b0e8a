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

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.apimachinery.errors import Cause, field_required
from pyctrl._apiserver.registry.validation import apps as _apps
from pyctrl._apiserver.registry.validation import core as _core
from pyctrl._apiserver.registry.validation import events as _events
from pyctrl._apiserver.registry.validation import meta as _meta
from pyctrl._apiserver.registry.validation import service as _service
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
    "base64_problem",
    "name_problems",
    "validate_builtin",
    "validate_builtin_object",
    "validate_meta_update",
    "validate_object_meta",
]

Obj = dict[str, Any]
_Create = Callable[[Obj], list[Cause]]
_Update = Callable[[Obj, Obj], list[Cause]]

# Groups whose validation uses core's ValidateObjectMeta (with its finalizer-name check).
_KUBE_GROUPS = frozenset({"", "apps", "batch", "coordination.k8s.io"})
_WORKLOADS = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"})


def validate_object_meta(rt: ResourceType, obj: Obj) -> list[Cause]:
    """``ValidateObjectMeta`` for a create (or the new object of an update)."""
    if not isinstance(obj.get("metadata"), dict):
        return [field_required("metadata", "")]
    return _meta.object_meta(obj, rt.name_rule, namespaced=rt.namespaced)


def validate_meta_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateObjectMetaUpdate``: immutable metadata, no finalizers added while deleting."""
    return _meta.meta_update(new, old)


def _default_create(rt: ResourceType) -> _Create:
    kube = rt.storage_key[0] in _KUBE_GROUPS

    def create(obj: Obj) -> list[Cause]:
        return _meta.object_meta(obj, rt.name_rule, namespaced=rt.namespaced, kube=kube)

    return create


def _strategy(rt: ResourceType) -> tuple[_Create, _Update | None, _Update | None]:
    """(Validate, ValidateUpdate, status ValidateUpdate) of ``rt``'s strategy."""
    group, kind = rt.storage_key[0], rt.kind
    if group == "" and kind == "Event":
        strict = rt.group == "events.k8s.io"

        def event(obj: Obj) -> list[Cause]:
            return _events.validate_event(obj, strict=strict)

        def event_update(obj: Obj, old: Obj) -> list[Cause]:
            return _events.validate_event_update(obj, old, strict=strict)

        return event, event_update, None
    if group == "" and kind == "Service":
        return (
            _service.validate_service_create,
            _service.validate_service_update_allocating,
            _service.validate_service_status_update,
        )
    if group == "" and kind == "ConfigMap":
        return _core.validate_configmap, _core.validate_configmap_update, None
    if group == "" and kind == "Secret":
        return _core.validate_secret, _core.validate_secret_update, None
    if group == "" and kind == "Namespace":
        return (
            _core.validate_namespace,
            lambda obj, old: _meta.meta_update(obj, old, kube=True),
            _core.validate_namespace_status_update,
        )
    if group == "" and kind == "Pod":
        return _core.validate_pod, None, None
    if group == "apps" and kind in _WORKLOADS:
        return (
            lambda obj: _apps.validate_workload(obj, None),
            _apps.validate_workload,
            None,
        )
    if group == "batch" and kind == "Job":
        return _apps.validate_job, None, None
    if group == "coordination.k8s.io" and kind == "Lease":
        return _apps.validate_lease, None, None
    return _default_create(rt), None, None


def _as_storage(rt: ResourceType, obj: Obj) -> Obj:
    """The object in the internal (storage) shape the validators read."""
    return rt.to_storage(obj) if rt.to_storage is not None and rt.group == "events.k8s.io" else obj


def _is_status_write(obj: Obj, old: Obj) -> bool:
    """A write of ``/status``: only the status changed (a main-resource write keeps it)."""
    if obj.get("status") == old.get("status"):
        return False
    return all(obj.get(k) == old.get(k) for k in {*obj, *old} if k not in ("status", "metadata"))


def validate_builtin(rt: ResourceType, obj: Obj, old: Obj | None) -> list[Cause]:
    """The type's strategy validation of a built-in object (create, update or status update)."""
    create, update, status_update = _strategy(rt)
    obj = _as_storage(rt, obj)
    if old is None:
        return create(obj)
    old = _as_storage(rt, old)
    if status_update is not None and _is_status_write(obj, old):
        return status_update(obj, old)
    if update is not None:
        return update(obj, old)
    kube = rt.storage_key[0] in _KUBE_GROUPS
    return _meta.meta_update(obj, old, kube=kube) + create(obj)


def validate_builtin_object(rt: ResourceType, obj: Obj, old: Obj | None) -> list[Cause]:
    """Everything kube-apiserver checks on a write of a built-in object, in its order."""
    if not isinstance(obj.get("metadata"), dict):
        return [field_required("metadata", "")]
    common = _meta.object_meta(_as_storage(rt, obj), "path", namespaced=rt.namespaced)
    if old is None:
        return validate_builtin(rt, obj, old) or common
    update = _meta.meta_update(_as_storage(rt, obj), _as_storage(rt, old))
    return common + update + validate_builtin(rt, obj, old)
