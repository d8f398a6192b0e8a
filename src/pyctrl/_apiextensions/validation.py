"""Validation of a custom object against its schema: the entry point that runs every check."""

from __future__ import annotations

from typing import Any

from pyctrl._apiextensions.cel_rules import BLOCKING_REASONS, Unchanged, cel_errors
from pyctrl._apiextensions.listtype import listtype_errors
from pyctrl._apiextensions.nodes import compile_schema
from pyctrl._apiextensions.objectmeta import embedded_meta_errors
from pyctrl._apiextensions.openapi import NO_OLD, openapi_errors
from pyctrl._apimachinery.field import Cause, field_invalid


def validate(
    obj: dict[str, Any], schema: dict[str, Any], *, old: dict[str, Any] | None = None
) -> list[Cause]:
    """Validate a custom resource against its version's ``openAPIV3Schema``.

    Runs what kube-apiserver's custom resource strategy runs after the object metadata
    checks: the OpenAPI schema (types, formats, bounds, lengths, patterns, enums,
    required fields, ``anyOf``/``allOf``/``oneOf``/``not``), the TypeMeta and ObjectMeta
    of embedded resources, ``x-kubernetes-list-type`` set/map uniqueness and the
    ``x-kubernetes-validations`` CEL rules. CEL rules are skipped, with one cause saying
    so, when an earlier error of kind Required, NotSupported, TooLong, TooMany or
    TypeInvalid makes the object unfit for them.

    With ``old`` (an update) errors in parts of the object equal to their correlated old
    values are dropped (ratcheting), list-type errors only count if ``old`` had none, and
    transition rules (rules using ``oldSelf``) run where an old value correlates.

    Args:
        obj: The object after pruning and defaulting.
        schema: The version's ``openAPIV3Schema``; compiled once and cached by identity.
        old: The stored object on update, else None.

    Returns:
        The causes; empty when the object is valid.
    """
    node = compile_schema(schema)
    errs = openapi_errors(node, obj, None, NO_OLD if old is None else old)
    if node.has_embedded:
        errs += embedded_meta_errors(obj, node, None, False)
    if node.has_list_types and (old is None or not listtype_errors(node, old, None)):
        errs += listtype_errors(node, obj, None)
    if node.has_cel:
        if any(e.reason in BLOCKING_REASONS for e in errs):
            errs.append(
                field_invalid(
                    None,
                    None,
                    "some validation rules were not checked because the object was invalid; "
                    "correct the "
                    "existing errors to complete validation",
                )
            )
        else:
            root_unchanged = Unchanged(obj, NO_OLD if old is None else old, None)
            errs += cel_errors(
                node,
                obj,
                old,
                old is not None,
                None,
                is_resource_root=True,
                unchanged=root_unchanged,
            )
    return errs
