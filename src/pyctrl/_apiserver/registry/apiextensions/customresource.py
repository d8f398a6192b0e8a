"""Custom resources (apiextensions-apiserver's pkg/registry/customresource).

A custom resource is decoded, pruned and defaulted through its CRD's structural schema
(again after mutating webhooks), validated by it (OpenAPI and CEL rules), and its status
is dropped on create and kept out of main-resource updates when the CRD has a status
subresource. While its CRD is terminating, no new object is created or updated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiextensions.pruning import apply_defaults, prune, reapply_is_noop
from pyctrl._apiextensions.validation import validate
from pyctrl._apiserver.apimachinery.errors import Cause, method_not_allowed
from pyctrl._apiserver.registry.decoding import decode_custom
from pyctrl._apiserver.registry.meta import CRDS, OBJECT_META_FIELDS
from pyctrl._apiserver.registry.rest import Strategy
from pyctrl._apiserver.scheme import builtin as _builtin_schema

if TYPE_CHECKING:
    from pyctrl._apiserver.registry.options import WriteOptions
    from pyctrl._apiserver.scheme.resources import ResourceType
    from pyctrl._apiserver.storage.store import Store

__all__ = ["CustomResourceStrategy"]


class CustomResourceStrategy(Strategy):
    """The rules of every custom resource, read from its CRD."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def decode(self, rt: ResourceType, obj: dict[str, Any], opts: WriteOptions) -> None:
        """Prune what the schema does not declare (reported as ``fieldValidation`` asks)."""
        decode_custom(rt, obj, opts)

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """The schema's defaults."""
        if rt.schema is not None:
            apply_defaults(obj, rt.schema)

    def after_mutating_admission(
        self, rt: ResourceType, operation: str, obj: dict[str, Any], mutated: bool
    ) -> None:
        """Prune and default again what the webhooks returned."""
        if rt.schema is None:
            return
        # An update's object was pruned and defaulted just before (and only its
        # managedFields changed since): unless admission changed it, a second pass would
        # change nothing. A create's status was dropped since; its defaults come back here.
        if operation == "UPDATE" and not mutated and reapply_is_noop(rt.schema):
            return
        prune(obj, rt.schema)
        apply_defaults(obj, rt.schema)

    def apply_errors(self, rt: ResourceType, applied: dict[str, Any]) -> list[str]:
        """structured-merge-diff's errors of a custom resource's apply patch.

        The first undeclared metadata field (the walk stops there), then the schema's own
        walk (`_builtin_schema.custom_resource_apply_errors`); paths have a leading dot
        (``.spec.bogus: field not declared in schema``).
        """
        errors: list[str] = []
        meta = applied.get("metadata")
        if type(meta) is dict:
            undeclared = next((key for key in meta if key not in OBJECT_META_FIELDS), None)
            if undeclared is not None:
                errors.append(f".metadata.{undeclared}: field not declared in schema")
        if rt.schema is not None:
            errors.extend(_builtin_schema.custom_resource_apply_errors(rt.schema, applied))
        return errors

    def check_writable(self, rt: ResourceType, verb: str) -> None:
        """405 while the CRD is terminating."""
        crd = self._store.get(CRDS, "", rt.crd_name)
        if crd is None:
            return
        for cond in (crd.get("status") or {}).get("conditions") or []:
            if cond.get("type") == "Terminating" and cond.get("status") == "True":
                err = method_not_allowed()
                err.message = f"{verb} not allowed while custom resource definition is terminating"
                err.group = rt.group
                err.kind = rt.plural
                raise err

    def reset_status_on_create(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """A created custom resource has no status (the status subresource sets it)."""
        obj.pop("status", None)

    def validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> list[Cause]:
        """The schema's validation, with its CEL rules and ratcheting against ``old``."""
        if rt.schema is None:
            return []
        return [Cause(fc.reason, fc.message, fc.field) for fc in validate(obj, rt.schema, old=old)]

    def drop_status(self, obj: dict[str, Any]) -> None:
        """A ``/status`` write without a status removes it."""
        obj.pop("status", None)
