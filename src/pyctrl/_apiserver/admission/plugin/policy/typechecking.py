"""Type checking a ValidatingAdmissionPolicy's expressions (``policy/validating/typechecking.go``).

kube-apiserver compiles each ``spec.validations[i].expression`` and ``messageExpression``
once more with ``object`` and ``oldObject`` typed from the schema of every kind the
policy's ``resourceRules`` name (no wildcards; subresources skipped) and ``params`` typed
from ``paramKind``'s, and reports what does not check in the policy's
``status.typeChecking.expressionWarnings`` (``{fieldRef, warning}``, the warning being
``<group>/<version>, Kind=<Kind>: <cel-go issues>`` per kind). The policy is enforced
either way.

The caller resolves the schemas (the ValidatingAdmissionPolicy strategy: a CRD's
``openAPIV3Schema``, a built-in kind's OpenAPI definition); a kind whose schema cannot be
resolved is skipped, as kube-apiserver skips it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from pyctrl._apiextensions.cel import DYN, CelCompileError, T, compile_env, schema_type
from pyctrl._apiserver.admission.plugin.cel import ADMISSION_VARIABLES

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["type_check"]

MAX_TYPES_TO_CHECK: Final = 10


def _rule_types(
    rules: list[Any], resolve: Callable[[str, str, str], tuple[str, dict[str, Any]] | None]
) -> list[tuple[str, T]]:
    """``typesToCheck``: ``(gvk text, object type)`` of each resolvable kind, sorted."""
    found: dict[tuple[str, str, str], T] = {}
    for rule in rules:
        if not isinstance(rule, dict):
            continue
        groups = [str(g) for g in rule.get("apiGroups") or []]
        versions = [str(v) for v in rule.get("apiVersions") or []]
        if not groups or not versions or any("*" in x for x in groups + versions):
            continue
        resources = [str(r) for r in rule.get("resources") or [] if "*" not in r and "/" not in r]
        for group in sorted(groups):
            for version in sorted(versions):
                for resource in sorted(resources):
                    resolved = resolve(group, version, resource)
                    if resolved is None:
                        continue
                    kind, schema = resolved
                    declared = schema_type(schema, True)
                    if declared is not None:
                        found[(group, version, kind)] = declared
    ordered = sorted(found.items())[:MAX_TYPES_TO_CHECK]
    return [(f"{g}/{v}, Kind={k}", t) for (g, v, k), t in ordered]


def _check(expression: str, types: list[tuple[str, T]], params: T, variables: list[str]) -> str:
    """The warning of one expression across the kinds ('' if it checks everywhere)."""
    messages = []
    for gvk, object_type in types:
        decls = {**ADMISSION_VARIABLES, "object": object_type, "oldObject": object_type}
        decls["params"] = params
        try:
            compile_env(expression.strip(), decls, lazy=dict.fromkeys(variables, DYN))
        except CelCompileError as exc:
            messages.append(f"{gvk}: {exc}\n")
    return "\n".join(messages)


def type_check(
    policy: dict[str, Any],
    resolve: Callable[[str, str, str], tuple[str, dict[str, Any]] | None],
    resolve_kind: Callable[[str, str], dict[str, Any] | None],
) -> list[dict[str, str]]:
    """``TypeChecker.Check``: the policy's ``expressionWarnings``.

    Args:
        policy: The ValidatingAdmissionPolicy.
        resolve: ``(group, version, resource)`` -> ``(kind, openAPIV3Schema)``, or None.
        resolve_kind: ``(apiVersion, kind)`` -> the param kind's schema, or None.
    """
    spec = policy.get("spec") or {}
    types = _rule_types((spec.get("matchConstraints") or {}).get("resourceRules") or [], resolve)
    if not types:
        return []
    params: T = DYN
    param_kind = spec.get("paramKind")
    if isinstance(param_kind, dict):
        schema = resolve_kind(str(param_kind.get("apiVersion") or ""), str(param_kind.get("kind")))
        params = (schema_type(schema, True) if schema else None) or DYN
    variables = [str(v.get("name")) for v in spec.get("variables") or [] if isinstance(v, dict)]
    warnings = []
    for i, validation in enumerate(spec.get("validations") or []):
        if not isinstance(validation, dict):
            continue
        for key in ("expression", "messageExpression"):
            expression = validation.get(key)
            if not isinstance(expression, str) or not expression:
                continue
            warning = _check(expression, types, params, variables)
            if warning:
                warnings.append({"fieldRef": f"spec.validations[{i}].{key}", "warning": warning})
    return warnings
