"""Custom resources (apiextensions-apiserver's pkg/registry/customresource).

A custom resource is decoded, pruned and defaulted through its CRD's structural schema
(again after mutating webhooks), validated by it (OpenAPI and CEL rules), and its status
is dropped on create and kept out of main-resource updates when the CRD has a status
subresource. While its CRD is terminating, no new object is created or updated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

from pyctrl._apiextensions.pruning import apply_defaults, prune, reapply_is_noop
from pyctrl._apiextensions.validation import validate
from pyctrl._apimachinery.field import Cause, field_invalid
from pyctrl._apimachinery.gofmt import go_print, go_type
from pyctrl._apiserver.apimachinery.errors import method_not_allowed
from pyctrl._apiserver.registry.decoding import decode_custom
from pyctrl._apiserver.registry.meta import CRDS, OBJECT_META_FIELDS
from pyctrl._apiserver.registry.rest import Strategy
from pyctrl._apiserver.scheme import builtin as _builtin_schema

if TYPE_CHECKING:
    from pyctrl._apiserver.registry.options import RequestContext
    from pyctrl._apiserver.scheme.resources import ResourceType
    from pyctrl._apiserver.storage.store import Store

__all__ = ["CustomResourceStrategy", "scale_causes"]


class CustomResourceStrategy(Strategy):
    """The rules of every custom resource, read from its CRD."""

    has_generation = True
    allow_unconditional_update = False

    @classmethod
    def for_store(cls, store: Store) -> Self:
        """The strategy of the server whose store is ``store``."""
        return cls(store)

    def __init__(self, store: Store) -> None:
        self._store = store

    def decode(self, rt: ResourceType, obj: dict[str, Any], opts: RequestContext) -> None:
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
        """The schema's validation (CEL rules, ratcheting against ``old``), then the scale's.

        With a scale subresource, the replicas at its paths must be integers from 0 to
        2^31-1 and the label selector a string (``ValidateScaleSpec``,
        ``ValidateScaleStatus``), reported at the CRD's paths as written (``.spec.replicas``).
        """
        causes: list[Cause] = []
        if rt.schema is not None:
            causes = validate(obj, rt.schema, old=old)
        if rt.scale_paths is not None:
            causes.extend(scale_causes(obj, rt.scale_paths))
        return causes

    def drop_status(self, obj: dict[str, Any]) -> None:
        """A ``/status`` write without a status removes it."""
        obj.pop("status", None)


_MAX_INT32 = 2**31 - 1


def _nested(obj: dict[str, Any], path: str, want: type, go_want: str) -> tuple[Any, str]:
    """``unstructured.NestedInt64``/``NestedString`` at a scale path: (value, accessor error).

    A missing field is the zero value without error, as in Go.
    """
    fields = path.lstrip(".").split(".")
    value: Any = obj
    for i, name in enumerate(fields):
        if not isinstance(value, dict):
            where = "." + ".".join(fields[: i + 1])
            return want(), (
                f"{where} accessor error: {go_print(value)} is of the type {go_type(value)}, "
                "expected map[string]interface{}"
            )
        if name not in value:
            return want(), ""
        value = value[name]
    if type(value) is not want:
        where = "." + ".".join(fields)
        return want(), (
            f"{where} accessor error: {go_print(value)} is of the type {go_type(value)}, "
            f"expected {go_want}"
        )
    return value, ""


def _replicas_causes(obj: dict[str, Any], path: str) -> list[Cause]:
    replicas, error = _nested(obj, path, int, "int64")
    if error:
        return [field_invalid(path, replicas, error)]
    if replicas < 0:
        return [field_invalid(path, replicas, "should be a non-negative integer")]
    if replicas > _MAX_INT32:
        return [field_invalid(path, replicas, f"should be less than or equal to {_MAX_INT32}")]
    return []


def scale_causes(obj: dict[str, Any], paths: tuple[str, str, str | None]) -> list[Cause]:
    """apiextensions' ``ValidateScaleSpec`` and ``ValidateScaleStatus`` of a custom resource."""
    spec_path, status_path, selector_path = paths
    causes = _replicas_causes(obj, spec_path) + _replicas_causes(obj, status_path)
    if selector_path:
        selector, error = _nested(obj, selector_path, str, "string")
        if error:
            causes.append(field_invalid(selector_path, selector, error))
    return causes
