"""Defaults and validation of admission policies and bindings (``pkg/apis/admissionregistration``).

As ``SetDefaults_*`` and ``validation.go`` of kube-apiserver for
ValidatingAdmissionPolicy(Binding) and MutatingAdmissionPolicy(Binding): every CEL
expression is compiled when the object is written, and one that does not compile is
refused with 422 naming the field (``spec.validations[0].expression: Invalid value:
"...": compilation failed: ERROR: <input>:1:8: ...``).
"""

from __future__ import annotations

from typing import Any, Final

from pyctrl._apimachinery.field import (
    Cause,
    field_duplicate,
    field_invalid,
    field_not_supported,
    field_required,
)
from pyctrl._apiserver.admission.plugin.cel import compile_expression

__all__ = [
    "default_binding",
    "default_policy",
    "validate_binding",
    "validate_mutating_policy",
    "validate_validating_policy",
]

_FAILURE_POLICIES: Final = ["Fail", "Ignore"]
_MATCH_POLICIES: Final = ["Equivalent", "Exact"]
_REASONS: Final = ["Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized"]
_ACTIONS: Final = ["Audit", "Deny", "Warn"]
_NOT_FOUND_ACTIONS: Final = ["Allow", "Deny"]
_PATCH_TYPES: Final = ["ApplyConfiguration", "JSONPatch"]
_REINVOCATION: Final = ["IfNeeded", "Never"]


def _dicts(items: Any) -> list[dict[str, Any]]:
    """A list field's entries, a non-object entry as an empty one."""
    return [i if isinstance(i, dict) else {} for i in items or []]


def _default_match(match: Any) -> None:
    if not isinstance(match, dict):
        return
    match.setdefault("matchPolicy", "Equivalent")
    match.setdefault("namespaceSelector", {})
    match.setdefault("objectSelector", {})
    for key in ("resourceRules", "excludeResourceRules"):
        for rule in match.get(key) or []:
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")


def default_policy(obj: dict[str, Any], *, mutating: bool) -> None:
    """``SetDefaults_{Validating,Mutating}AdmissionPolicySpec``."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("failurePolicy", "Fail")
    if mutating:
        spec.setdefault("reinvocationPolicy", "Never")
    _default_match(spec.get("matchConstraints"))


def default_binding(obj: dict[str, Any]) -> None:
    """``SetDefaults_*AdmissionPolicyBindingSpec``."""
    spec = obj.get("spec")
    if isinstance(spec, dict):
        _default_match(spec.get("matchResources"))


def _expression(
    value: Any, path: str, variables: list[str], *, mutating: bool = False
) -> list[Cause]:
    """An expression that must be present and compile."""
    if not isinstance(value, str) or not value.strip():
        return [field_required(path, "expression is not specified")]
    compiled = compile_expression(value, variables, constructors=mutating)
    return [field_invalid(path, value, compiled.error)] if compiled.error else []


def _supported(value: Any, path: str, allowed: list[str], *, required: bool = True) -> list[Cause]:
    if value is None:
        return [field_required(path)] if required else []
    return [] if value in allowed else [field_not_supported(path, value, allowed)]


def _named_expressions(
    items: Any, path: str, key: str, variables: list[str], *, name_key: str = "name"
) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, item in enumerate(_dicts(items)):
        name = item.get(name_key)
        if not name:
            causes.append(field_required(f"{path}[{i}].{name_key}"))
        elif name in seen:
            causes.append(field_duplicate(f"{path}[{i}].{name_key}", name))
        else:
            seen.add(str(name))
        causes += _expression(item.get(key), f"{path}[{i}].{key}", variables)
    return causes


def _match_resources(match: Any, path: str, *, rules_required: bool) -> list[Cause]:
    if not isinstance(match, dict):
        return [field_required(path)] if rules_required else []
    causes = _supported(match.get("matchPolicy"), f"{path}.matchPolicy", _MATCH_POLICIES)
    if rules_required and not match.get("resourceRules"):
        causes.append(field_required(f"{path}.resourceRules"))
    return causes


def _param_kind(spec: dict[str, Any]) -> list[Cause]:
    kind = spec.get("paramKind")
    if kind is None:
        return []
    kind = kind if isinstance(kind, dict) else {}
    causes = []
    if not kind.get("apiVersion"):
        causes.append(field_required("spec.paramKind.apiVersion"))
    if not kind.get("kind"):
        causes.append(field_required("spec.paramKind.kind"))
    return causes


def _common(spec: dict[str, Any]) -> tuple[list[Cause], list[str]]:
    """What both kinds of policy share: failure policy, params, match, variables, conditions."""
    causes = _supported(spec.get("failurePolicy"), "spec.failurePolicy", _FAILURE_POLICIES)
    causes += _param_kind(spec)
    causes += _match_resources(
        spec.get("matchConstraints"), "spec.matchConstraints", rules_required=True
    )
    variables: list[str] = []
    for i, variable in enumerate(_dicts(spec.get("variables"))):
        name = str(variable.get("name") or "")
        if not name:
            causes.append(field_required(f"spec.variables[{i}].name"))
        causes += _expression(
            variable.get("expression"), f"spec.variables[{i}].expression", variables
        )
        variables.append(name)
    causes += _named_expressions(
        spec.get("matchConditions"), "spec.matchConditions", "expression", variables
    )
    return causes, variables


def validate_validating_policy(obj: dict[str, Any]) -> list[Cause]:
    """``ValidateValidatingAdmissionPolicy``'s spec rules."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    causes, variables = _common(spec)
    validations = spec.get("validations") or []
    if not validations and not spec.get("auditAnnotations"):
        causes.append(
            field_required(
                "spec.validations", "validations or auditAnnotations must contain at least one item"
            )
        )
    for i, validation in enumerate(_dicts(validations)):
        path = f"spec.validations[{i}]"
        causes += _expression(validation.get("expression"), f"{path}.expression", variables)
        message_expression = validation.get("messageExpression")
        if message_expression is not None:
            causes += _expression(message_expression, f"{path}.messageExpression", variables)
        message = validation.get("message")
        if isinstance(message, str) and ("\n" in message.strip() or "\r" in message.strip()):
            causes.append(
                field_invalid(f"{path}.message", message, "message must not contain line breaks")
            )
        causes += _supported(validation.get("reason"), f"{path}.reason", _REASONS, required=False)
    causes += _named_expressions(
        spec.get("auditAnnotations"),
        "spec.auditAnnotations",
        "valueExpression",
        variables,
        name_key="key",
    )
    return causes


def validate_mutating_policy(obj: dict[str, Any]) -> list[Cause]:
    """``ValidateMutatingAdmissionPolicy``'s spec rules."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    causes, variables = _common(spec)
    causes += _supported(spec.get("reinvocationPolicy"), "spec.reinvocationPolicy", _REINVOCATION)
    mutations = spec.get("mutations") or []
    if not mutations:
        causes.append(field_required("spec.mutations", "mutations must contain at least one item"))
    for i, mutation in enumerate(_dicts(mutations)):
        path = f"spec.mutations[{i}]"
        patch_type = mutation.get("patchType")
        causes += _supported(patch_type, f"{path}.patchType", _PATCH_TYPES)
        field = "applyConfiguration" if patch_type == "ApplyConfiguration" else "jsonPatch"
        body = mutation.get(field)
        if patch_type in _PATCH_TYPES:
            if not isinstance(body, dict):
                causes.append(field_required(f"{path}.{field}"))
            else:
                causes += _expression(
                    body.get("expression"), f"{path}.{field}.expression", variables, mutating=True
                )
    return causes


def _param_ref(ref: Any) -> list[Cause]:
    if ref is None:
        return []
    ref = ref if isinstance(ref, dict) else {}
    path = "spec.paramRef"
    causes: list[Cause] = []
    if ref.get("name") and ref.get("selector") is not None:
        causes.append(field_invalid(path, ref, "name and selector are mutually exclusive"))
    elif not ref.get("name") and ref.get("selector") is None:
        causes.append(field_required(path, "one of name or selector must be specified"))
    if ref.get("selector") is not None and ref.get("namespace") == "":
        causes.append(field_invalid(f"{path}.namespace", "", "namespace must be null or non-empty"))
    causes += _supported(
        ref.get("parameterNotFoundAction"), f"{path}.parameterNotFoundAction", _NOT_FOUND_ACTIONS
    )
    return causes


def validate_binding(obj: dict[str, Any], *, validating: bool) -> list[Cause]:
    """``Validate{Validating,Mutating}AdmissionPolicyBinding``'s spec rules."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    causes: list[Cause] = []
    if not spec.get("policyName"):
        causes.append(field_required("spec.policyName"))
    causes += _param_ref(spec.get("paramRef"))
    causes += _match_resources(
        spec.get("matchResources"), "spec.matchResources", rules_required=False
    )
    if validating:
        causes += _validation_actions(spec.get("validationActions"))
    return causes


def _validation_actions(actions: Any) -> list[Cause]:
    path = "spec.validationActions"
    if not actions:
        return [field_required(path, "at least one validation action is required")]
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, action in enumerate(actions):
        if action in seen:
            causes.append(field_duplicate(f"{path}[{i}]", action))
        seen.add(action)
        causes += _supported(action, f"{path}[{i}]", _ACTIONS)
    if "Deny" in seen and "Warn" in seen:
        causes.append(
            field_invalid(
                path,
                actions,
                "must not contain both Deny and Warn (repeating the same validation failure "
                "information in the API response and headers serves no purpose)",
            )
        )
    return causes
