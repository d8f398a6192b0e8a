"""The declarations: policies, their rules, match constraints, params and bindings.

Each class is the Python form of one part of ``admissionregistration.k8s.io/v1``
(``ValidatingAdmissionPolicy``, ``MutatingAdmissionPolicy`` and their bindings), checked
when it is made, with ``to_dict`` giving the wire form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pyctrl.errors import PyctrlError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

__all__ = [
    "VALIDATION_ACTIONS",
    "AuditAnnotation",
    "Binding",
    "Evaluation",
    "Mutation",
    "ParamRef",
    "PolicyError",
    "ResourceRule",
    "Validation",
    "Variable",
]

VALIDATION_ACTIONS = ("Deny", "Warn", "Audit")
"""What a binding does with a failed validation: deny, warn the client, or audit."""

_OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT", "*"})
_SCOPES = frozenset({"Namespaced", "Cluster", "*"})
_REASONS = frozenset({"Unauthorized", "Forbidden", "Invalid", "RequestEntityTooLarge"})
_NOT_FOUND_ACTIONS = frozenset({"Allow", "Deny"})


class PolicyError(PyctrlError):
    """A policy is malformed, or one of its expressions does not compile or type-check.

    The message names the policy and the expression: ``policy "replicas-limit"
    validations[0]: undefined field 'replica'``.
    """


def _one_of(what: str, value: str | None, allowed: frozenset[str]) -> None:
    if value is not None and value not in allowed:
        raise ValueError(f"{what} {value!r} is not one of {', '.join(sorted(allowed))}")


def _selector(what: str, selector: Mapping[str, Any] | None) -> None:
    if selector is not None and not set(selector) <= {"matchLabels", "matchExpressions"}:
        raise ValueError(f"{what} takes matchLabels and matchExpressions, got {sorted(selector)}")


@dataclass(frozen=True)
class Evaluation:
    """What a Python check of a typed rule sees: the request's objects and params.

    Attributes:
        object: The object as it would be stored (None for DELETE), as JSON.
        old_object: The object before an UPDATE or DELETE (None for CREATE), as JSON.
        params: The param object the binding selected, as JSON (None without params).
        operation: ``CREATE``, ``UPDATE``, ``DELETE`` or ``CONNECT``.
    """

    object: Mapping[str, Any] | None
    old_object: Mapping[str, Any] | None = None
    params: Mapping[str, Any] | None = None
    operation: str = "CREATE"


@dataclass(frozen=True)
class Validation:
    """One CEL rule of a ValidatingAdmissionPolicy: the request passes if it is true.

    The typed helpers (`required`, `in_range`, `immutable`...) make them with a default
    message; write one by hand for anything else. Expressions see ``object``,
    ``oldObject``, ``request``, ``params``, ``namespaceObject``, ``variables`` and
    ``authorizer``, as in kube-apiserver; they are type-checked against the kinds'
    schemas when the manifests are generated.

    Args:
        expression: A CEL expression that evaluates to a bool.
        message: Shown when it is false (default: kube-apiserver's ``failed expression:
            <expression>``).
        message_expression: A CEL expression giving the message (a string); wins over
            ``message`` when it evaluates.
        reason: ``Invalid`` (default on the server: ``Invalid``), ``Forbidden``,
            ``Unauthorized`` or ``RequestEntityTooLarge``: the HTTP status of a denial.
        check: The same rule in Python, over an `Evaluation` (the typed helpers give it),
            for `ValidatingPolicy.validator`.
        explain: The message in Python, when ``message_expression`` computes it (a
            helper's bound read from the params).
    """

    expression: str
    message: str = ""
    message_expression: str = ""
    reason: str | None = None
    check: Callable[[Evaluation], bool] | None = field(default=None, compare=False, repr=False)
    explain: Callable[[Evaluation], str] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.expression.strip():
            raise ValueError("Validation.expression is empty")
        _one_of("reason", self.reason, _REASONS)

    def to_dict(self) -> dict[str, Any]:
        """The wire form."""
        out: dict[str, Any] = {"expression": self.expression}
        if self.message:
            out["message"] = self.message
        if self.message_expression:
            out["messageExpression"] = self.message_expression
        if self.reason is not None:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True)
class Variable:
    """A named CEL expression, seen by later variables and rules as ``variables.<name>``."""

    name: str
    expression: str

    def to_dict(self) -> dict[str, Any]:
        """The wire form."""
        return {"name": self.name, "expression": self.expression}


@dataclass(frozen=True)
class AuditAnnotation:
    """An annotation added to the audit event: ``<policy name>/<key>: <value>``.

    Args:
        key: The key (a qualified name's name part, up to 63 characters).
        value_expression: A CEL expression giving a string, or null to add nothing.
    """

    key: str
    value_expression: str

    def to_dict(self) -> dict[str, Any]:
        """The wire form."""
        return {"key": self.key, "valueExpression": self.value_expression}


@dataclass(frozen=True)
class ResourceRule:
    """Which operations on which resources (a ``NamedRuleWithOperations``).

    Args:
        api_groups: API groups (``""`` is the core group, ``*`` any).
        api_versions: Versions (``*`` any).
        resources: Resources, with sub-resources after a slash (``deployments/scale``).
        operations: ``CREATE``, ``UPDATE``, ``DELETE``, ``CONNECT`` or ``*``.
        scope: ``Namespaced``, ``Cluster`` or ``*``.
        resource_names: Only objects of these names (empty: any).
    """

    api_groups: Sequence[str]
    api_versions: Sequence[str]
    resources: Sequence[str]
    operations: Sequence[str] = ("CREATE", "UPDATE")
    scope: str = "*"
    resource_names: Sequence[str] = ()

    def __post_init__(self) -> None:
        for op in self.operations:
            _one_of("operation", op, _OPERATIONS)
        _one_of("scope", self.scope, _SCOPES)
        for name in ("api_groups", "api_versions", "resources", "operations"):
            values = getattr(self, name)
            if isinstance(values, str) or not values:
                raise ValueError(f"ResourceRule.{name} must be a non-empty list, got {values!r}")

    def to_dict(self) -> dict[str, Any]:
        """The wire form."""
        out: dict[str, Any] = {
            "apiGroups": list(self.api_groups),
            "apiVersions": list(self.api_versions),
            "operations": list(self.operations),
            "resources": list(self.resources),
            "scope": self.scope,
        }
        if self.resource_names:
            out["resourceNames"] = list(self.resource_names)
        return out


@dataclass(frozen=True)
class ParamRef:
    """Which param objects a binding gives its policy (``spec.paramRef``).

    Args:
        name: One object by name.
        namespace: Its namespace (namespaced param kinds); unset, the namespace of the
            request's object.
        selector: Or every object matching a label selector: the policy runs once per
            object.
        parameter_not_found_action: ``Deny`` (default) or ``Allow`` when none is found.
    """

    name: str | None = None
    namespace: str | None = None
    selector: Mapping[str, Any] | None = None
    parameter_not_found_action: str = "Deny"

    def __post_init__(self) -> None:
        if (self.name is None) == (self.selector is None):
            raise ValueError("ParamRef takes exactly one of name and selector")
        _selector("ParamRef.selector", self.selector)
        _one_of("parameter_not_found_action", self.parameter_not_found_action, _NOT_FOUND_ACTIONS)

    def to_dict(self) -> dict[str, Any]:
        """The wire form."""
        out: dict[str, Any] = {}
        if self.name is not None:
            out["name"] = self.name
        if self.namespace is not None:
            out["namespace"] = self.namespace
        if self.selector is not None:
            out["selector"] = dict(self.selector)
        out["parameterNotFoundAction"] = self.parameter_not_found_action
        return out


@dataclass(frozen=True)
class Binding:
    """A binding of a policy: which params, where, and what a failure does.

    Args:
        name: The binding's name (default: the policy's name and ``-binding``, with
            ``-<index>`` after the first).
        param_ref: The params; required when the policy has ``params``.
        validation_actions: For a validating policy: ``Deny``, ``Warn`` and/or
            ``Audit`` (``Deny`` and ``Warn`` together are refused by the server).
        namespace_selector: Narrows the policy's match to namespaces with these labels.
        object_selector: Narrows it to objects with these labels.
    """

    name: str | None = None
    param_ref: ParamRef | None = None
    validation_actions: Sequence[str] = ("Deny",)
    namespace_selector: Mapping[str, Any] | None = None
    object_selector: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.validation_actions, str) or not self.validation_actions:
            raise ValueError(
                f"validation_actions must be a non-empty list, got {self.validation_actions!r}"
            )
        for action in self.validation_actions:
            _one_of("validation action", action, frozenset(VALIDATION_ACTIONS))
        if {"Deny", "Warn"} <= set(self.validation_actions):
            raise ValueError("validation_actions cannot hold both Deny and Warn")
        _selector("namespace_selector", self.namespace_selector)
        _selector("object_selector", self.object_selector)


@dataclass(frozen=True)
class Mutation:
    """One mutation of a MutatingAdmissionPolicy.

    Args:
        patch_type: ``ApplyConfiguration`` (a CEL expression giving an ``Object{...}``
            merged as server-side apply merges) or ``JSONPatch`` (a CEL expression
            giving a list of ``JSONPatch{op, path, value}``).
        expression: The CEL expression.
    """

    patch_type: Literal["ApplyConfiguration", "JSONPatch"]
    expression: str

    def __post_init__(self) -> None:
        _one_of("patch_type", self.patch_type, frozenset({"ApplyConfiguration", "JSONPatch"}))
        if not self.expression.strip():
            raise ValueError("Mutation.expression is empty")

    @classmethod
    def apply_configuration(cls, expression: str) -> Mutation:
        """An ``ApplyConfiguration`` mutation."""
        return cls("ApplyConfiguration", expression)

    @classmethod
    def json_patch(cls, expression: str) -> Mutation:
        """A ``JSONPatch`` mutation."""
        return cls("JSONPatch", expression)

    def to_dict(self) -> dict[str, Any]:
        """The wire form."""
        key = "applyConfiguration" if self.patch_type == "ApplyConfiguration" else "jsonPatch"
        return {"patchType": self.patch_type, key: {"expression": self.expression}}
