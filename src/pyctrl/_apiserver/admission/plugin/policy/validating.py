"""ValidatingAdmissionPolicies: compiled, evaluated, and their decisions turned into answers.

As ``k8s.io/apiserver/pkg/admission/plugin/policy/validating/{validator,dispatcher}.go``:

- a policy whose ``matchConstraints`` match, and each of its bindings whose
  ``matchResources`` match, is evaluated once per parameter object
  (`pyctrl._apiserver.admission.plugin.policy.params`);
- ``matchConditions`` first: one false skips the policy; an error is a failure;
- each validation that is not true is a *denial* with its message (the
  ``messageExpression`` result, else ``message``, else ``failed expression: <expr>``) and
  its ``reason`` (``Invalid`` by default); an evaluation error is a failure;
- a failure is a denial under ``failurePolicy: Fail`` and ignored under ``Ignore``;
- a denial goes where the binding's ``validationActions`` send it: ``Deny`` refuses the
  request (``<resource> "<name>" is forbidden: ValidatingAdmissionPolicy '<p>' with
  binding '<b>' denied request: <message>``, code from the reason: 422 for Invalid, 403
  for Forbidden, 401, 413), ``Warn`` adds the warning ``Validation failed for
  ValidatingAdmissionPolicy '<p>' with binding '<b>': <message>``, ``Audit`` adds the
  audit annotation ``validation.policy.admission.k8s.io/validation_failure``;
- ``auditAnnotations`` add ``<policy>/<key>`` annotations (values of several bindings
  joined by ``, ``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import orjson

from pyctrl._apiextensions.cel import CelEvalError
from pyctrl._apimachinery.field import Cause
from pyctrl._apiserver.admission.plugin.cel import (
    Compiled,
    compile_expression,
    evaluate_match_conditions,
    evaluation_error,
)
from pyctrl._apiserver.admission.plugin.policy.generic import Binding, PolicyBase, common_fields
from pyctrl._apiserver.apimachinery.errors import StatusError, qualified

if TYPE_CHECKING:
    from pyctrl._apiserver.admission.interfaces import AdmissionRequest

__all__ = [
    "AuditSink",
    "Decision",
    "Policy",
    "Verdicts",
    "denial_error",
    "evaluate",
    "parse_policy",
]

logger = logging.getLogger("pyctrl.envtest.policies")

VALIDATION_FAILURE_KEY: Final = "validation.policy.admission.k8s.io/validation_failure"
MAX_MESSAGE_BYTES: Final = 5 * 1024
MAX_AUDIT_VALUE_BYTES: Final = 10 * 1024
_REASON_CODES: Final = {
    "Forbidden": 403,
    "Unauthorized": 401,
    "RequestEntityTooLarge": 413,
    "Invalid": 422,
}


@dataclass(frozen=True)
class Validation:
    """One ``spec.validations`` entry, compiled."""

    compiled: Compiled
    message: str
    message_expression: Compiled | None
    reason: str


@dataclass(frozen=True)
class AuditAnnotation:
    """One ``spec.auditAnnotations`` entry, compiled."""

    key: str
    compiled: Compiled


@dataclass(frozen=True)
class Policy(PolicyBase):
    """A stored ValidatingAdmissionPolicy, parsed and compiled (once per resourceVersion)."""

    validations: list[Validation]
    audit_annotations: list[AuditAnnotation]


def parse_policy(obj: dict[str, Any]) -> Policy:
    """Compile a ValidatingAdmissionPolicy."""
    spec = obj.get("spec") or {}
    common = common_fields(obj)
    names = list(common["variables"])
    validations = []
    for v in spec.get("validations") or []:
        if not isinstance(v, dict):
            continue
        message_expression = v.get("messageExpression")
        validations.append(
            Validation(
                compiled=compile_expression(str(v.get("expression") or ""), names),
                message=str(v.get("message") or ""),
                message_expression=compile_expression(message_expression, names)
                if isinstance(message_expression, str) and message_expression.strip()
                else None,
                reason=str(v.get("reason") or "Invalid"),
            )
        )
    return Policy(
        **common,
        validations=validations,
        audit_annotations=[
            AuditAnnotation(
                str(a.get("key") or ""),
                compile_expression(str(a.get("valueExpression") or ""), names),
            )
            for a in spec.get("auditAnnotations") or []
            if isinstance(a, dict)
        ],
    )


# --- evaluation ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """A denial (or a failure under ``Fail``) of one validation."""

    message: str
    reason: str = "Invalid"
    index: int = 0


@dataclass
class Verdicts:
    """What one policy-binding-param evaluation decided."""

    denials: list[Decision] = field(default_factory=list)
    annotations: list[tuple[str, str]] = field(default_factory=list)


def _message(validation: Validation, env: dict[str, Any]) -> str:
    """The denial's message: messageExpression, else message, else the expression."""
    message = ""
    compiled = validation.message_expression
    if compiled is not None and compiled.program is not None:
        try:
            value = compiled.program.run(env)
        except CelEvalError as exc:
            logger.debug("error while evaluating messageExpression: %s", exc)
            value = None
        if isinstance(value, str):
            message = value.strip()
            if len(message.encode()) > MAX_MESSAGE_BYTES or "\n" in message:
                message = ""
    if not message and validation.message:
        message = validation.message.strip()
    if not message:
        message = f"failed expression: {validation.compiled.expression.strip()}"
    return message


def _failure(policy: Policy, message: str, index: int = 0) -> list[Decision]:
    return [] if policy.ignore_failures else [Decision(message, "", index)]


def _validate_one(
    policy: Policy, index: int, validation: Validation, env: dict[str, Any]
) -> list[Decision]:
    compiled = validation.compiled
    if compiled.program is None:
        return _failure(policy, compiled.error, index)
    try:
        result = compiled.program.run(env)
    except CelEvalError as exc:
        return _failure(policy, evaluation_error(compiled, exc), index)
    if result is True:
        return []
    if result is not False:
        return _failure(policy, evaluation_error(compiled, "no such overload"), index)
    return [Decision(_message(validation, env), validation.reason, index)]


def _audit_one(
    policy: Policy, annotation: AuditAnnotation, env: dict[str, Any], verdicts: Verdicts
) -> None:
    compiled = annotation.compiled
    try:
        if compiled.program is None:
            raise CelEvalError(compiled.error)
        value = compiled.program.run(env)
    except CelEvalError as exc:
        verdicts.denials.extend(_failure(policy, evaluation_error(compiled, exc)))
        return
    if value is None:
        return
    if not isinstance(value, str):
        verdicts.denials.append(
            Decision(
                f"valueExpression '{compiled.expression}' resulted in unsupported return type: "
                f"{type(value).__name__}. Return type must be either string or null."
            )
        )
        return
    value = value.strip()
    if value:
        verdicts.annotations.append((annotation.key, value[:MAX_AUDIT_VALUE_BYTES]))


def evaluate(policy: Policy, env: dict[str, Any]) -> Verdicts:
    """``validator.Validate``: the match conditions, validations and audit annotations."""
    verdicts = Verdicts()
    matches, error = evaluate_match_conditions(policy.match_conditions, env)
    if not matches:
        return verdicts
    if error:
        verdicts.denials.extend(_failure(policy, error))
        return verdicts
    for index, validation in enumerate(policy.validations):
        verdicts.denials.extend(_validate_one(policy, index, validation, env))
    for annotation in policy.audit_annotations:
        _audit_one(policy, annotation, env, verdicts)
    return verdicts


class AuditSink:
    """Where audit annotations of admitted and refused requests go (the server's audit log).

    The embedded server writes no audit log; it keeps each request's annotations here,
    keyed by the request's uid, for tests (`records`).
    """

    def __init__(self, limit: int = 1000) -> None:
        self.records: list[tuple[AdmissionRequest, dict[str, str]]] = []
        """``(request, annotations)`` of the latest requests that got any (oldest first)."""
        self._limit = limit

    def add(self, request: AdmissionRequest, annotations: dict[str, str]) -> None:
        """Record the annotations of one request."""
        if not annotations:
            return
        self.records.append((request, annotations))
        del self.records[: -self._limit]


def validation_failure_annotation(binding: Binding, decision: Decision) -> str:
    """The JSON value of ``validation.policy.admission.k8s.io/validation_failure``."""
    return orjson.dumps(
        [
            {
                "message": decision.message,
                "policy": binding.policy_name,
                "binding": binding.name,
                "expressionIndex": decision.index,
                "validationActions": list(binding.actions),
            }
        ]
    ).decode()


def denial_error(
    request: AdmissionRequest, policy_name: str, binding_name: str, decision: Decision
) -> StatusError:
    """The refusal: ``admission.NewForbidden`` with the decision's reason and code."""
    if binding_name:
        message = (
            f"ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}' "
            f"denied request: {decision.message}"
        )
    else:
        message = f"ValidatingAdmissionPolicy '{policy_name}' denied request: {decision.message}"
    rt = request.resource
    resource = f"{rt.plural}/{request.subresource}" if request.subresource else rt.plural
    name = request.name or str(((request.obj or {}).get("metadata") or {}).get("name") or "")
    target = qualified(rt.group, resource)
    full = (
        f'{target} "{name}" is forbidden: {message}'
        if name
        else f"{target} is forbidden: {message}"
    )
    reason = decision.reason or "Invalid"
    return StatusError(
        _REASON_CODES.get(reason, 422),
        reason,
        full,
        name=name,
        group=rt.group,
        kind=resource,
        causes=[Cause("", message)],
    )
