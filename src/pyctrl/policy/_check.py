"""Type-checking a policy's expressions, and running them here.

Every expression is compiled by pyctrl's CEL compiler (`pyctrl._apiextensions.cel`, the
one that checks CRDs' ``x-kubernetes-validations``) in kube-apiserver's policy
environment, once per kind the policy matches (`pyctrl.policy._schema`). A failure names
the policy, the expression's field and the kind::

    policy "replicas-limit" validations[0]: undefined field 'replica' (line 1, column 12,
    for myapp.example.com/v1alpha1 MySrv)
     | object.spec.replica <= 5
     | ...........^

A mutation's ``Object{...}`` and ``JSONPatch{...}`` constructions are checked inside
(every value expression), but the constructed field names are not checked against the
schema; ``authorizer`` is dynamic (its methods are known, their chaining is not typed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from pyctrl._apiextensions.cel import (
    DYN,
    CelCompileError,
    CelEvalError,
    Program,
    T,
    compile_env,
)
from pyctrl.policy._schema import kind_type, request_type
from pyctrl.policy._types import PolicyError
from pyctrl.scheme import default_scheme

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

    from pyctrl.policy._types import (
        AuditAnnotation,
        Mutation,
        ResourceRule,
        Validation,
        Variable,
    )
    from pyctrl.webhook import MatchCondition

__all__ = ["Checked", "check", "evaluate"]

_ISSUE: Final = re.compile(r"^ERROR: <input>:(\d+):(\d+): (.*)$")
_BOOL: Final = ("bool", "dyn")
_STRING: Final = ("string", "dyn")


class Checked(Protocol):
    """What checking reads of a policy (`ValidatingPolicy`, `MutatingPolicy`)."""

    @property
    def name(self) -> str:
        """The policy's name."""

    @property
    def kinds(self) -> list[type[Any]]:
        """The typed kinds it matches."""

    @property
    def rules(self) -> Sequence[ResourceRule]:
        """Explicit resource rules (kinds then untyped)."""

    @property
    def params(self) -> type[Any] | None:
        """The param kind."""

    @property
    def variables(self) -> Sequence[Variable]:
        """Its variables."""

    @property
    def match_conditions(self) -> Sequence[MatchCondition]:
        """Its match conditions."""

    @property
    def failure_policy(self) -> str:
        """``Fail`` or ``Ignore``."""


@dataclass(frozen=True)
class _Expr:
    """One expression of a policy: where it is, its text, what it must evaluate to."""

    field: str
    source: str
    results: tuple[str, ...] = ()


def _expressions(
    policy: Checked,
    validations: Sequence[Validation],
    audit_annotations: Sequence[AuditAnnotation],
) -> Iterator[_Expr]:
    for i, condition in enumerate(policy.match_conditions):
        yield _Expr(f"matchConditions[{i}]", condition.expression, _BOOL)
    for i, validation in enumerate(validations):
        yield _Expr(f"validations[{i}]", validation.expression, _BOOL)
        if validation.message_expression:
            yield _Expr(
                f"validations[{i}].messageExpression", validation.message_expression, _STRING
            )
    for i, annotation in enumerate(audit_annotations):
        yield _Expr(
            f"auditAnnotations[{i}].valueExpression",
            annotation.value_expression,
            ("string", "null_type", "dyn"),
        )


def _describe(policy: Checked, field: str, error: str, kind: str) -> PolicyError:
    lines = error.split("\n")
    found = _ISSUE.match(lines[0])
    if found is None:
        return PolicyError(f"policy {policy.name!r} {field}: {error}{kind}".replace("'", '"', 2))
    line, column, message = found.groups()
    head = f'policy "{policy.name}" {field}: {message} (line {line}, column {column}{kind})'
    return PolicyError("\n".join([head, *lines[1:]]))


class _Environment:
    """The declarations of one kind's environment, variables added as they compile."""

    def __init__(self, policy: Checked, type_: type[Any] | None) -> None:
        self.policy = policy
        where = f"policy {policy.name!r}"
        object_t = kind_type(type_, where)
        params_t = kind_type(policy.params, where) if policy.params is not None else T("null_type")
        from kubernetes_asyncio.client import V1Namespace

        self.kind = ""
        if type_ is not None:
            gvk = default_scheme().gvk_for(type_)
            self.kind = f", for {gvk.api_version} {gvk.kind}"
        self.variables: dict[str, T] = {}
        self.declarations: dict[str, T] = {
            "object": object_t,
            "oldObject": object_t,
            "request": request_type(),
            "params": params_t,
            "namespaceObject": kind_type(V1Namespace, where),
            "authorizer": DYN,
        }

    def compile(self, expr: _Expr, *, constructors: bool = False) -> Program:
        """The checked program."""
        try:
            program = compile_env(
                expr.source, self.declarations, lazy=self.variables, constructors=constructors
            )
        except CelCompileError as exc:
            raise _describe(self.policy, expr.field, str(exc), self.kind) from None
        kind = program.result_type.kind
        if expr.results and kind not in expr.results:
            wanted = " or ".join(k for k in expr.results if k != "dyn")
            raise PolicyError(
                f'policy "{self.policy.name}" {expr.field}: must evaluate to {wanted}, '
                f"not {program.result_type!r}{f' ({self.kind[2:]})' if self.kind else ''}"
            )
        return program

    def declare_variables(self) -> dict[str, Program]:
        programs: dict[str, Program] = {}
        for i, variable in enumerate(self.policy.variables):
            program = self.compile(_Expr(f"variables[{i}] ({variable.name})", variable.expression))
            programs[variable.name] = program
            self.variables[variable.name] = program.result_type
        return programs


def _environments(policy: Checked) -> list[_Environment]:
    kinds: list[type[Any] | None] = list(policy.kinds)
    return [_Environment(policy, kind) for kind in kinds or [None]]


def check(
    policy: Checked,
    validations: Sequence[Validation] = (),
    audit_annotations: Sequence[AuditAnnotation] = (),
    mutations: Sequence[Mutation] = (),
) -> None:
    """Compile every expression of ``policy`` for each of its kinds.

    Mutations are parsed only (see the module).

    Raises:
        PolicyError: The first expression that does not compile or check.
    """
    for env in _environments(policy):
        env.declare_variables()
        for expr in _expressions(policy, validations, audit_annotations):
            env.compile(expr)
        for i, mutation in enumerate(mutations):
            env.compile(_Expr(f"mutations[{i}]", mutation.expression), constructors=True)


def _request(
    policy: Checked, obj: Mapping[str, Any] | None, old: Mapping[str, Any] | None, op: str
) -> dict[str, Any]:
    source = obj if obj is not None else old or {}
    meta = source.get("metadata") or {}
    return {
        "operation": op,
        "name": meta.get("name", ""),
        "namespace": meta.get("namespace", ""),
        "userInfo": {"username": "", "groups": []},
        "dryRun": False,
    }


def _run(program: Program, env: dict[str, Any]) -> Any:
    return program.run(env)


def evaluate(
    policy: Checked,
    validations: Sequence[Validation],
    obj: Mapping[str, Any] | None,
    old: Mapping[str, Any] | None,
    *,
    params: Mapping[str, Any] | None,
    operation: str,
    request: Mapping[str, Any] | None,
    namespace: Mapping[str, Any] | None,
) -> list[str]:
    """The messages of ``policy``'s failed validations for one request (see its method).

    Raises:
        PolicyError: An expression does not compile (``authorizer`` is not served
            here: an expression using it errors, as under a failing authorizer).
    """
    environment = _environments(policy)[0]
    variable_programs = environment.declare_variables()
    env: dict[str, Any] = {
        "object": obj,
        "oldObject": old,
        "request": {**_request(policy, obj, old, operation), **(request or {})},
        "params": params,
        "namespaceObject": namespace,
        "variables": {},
    }
    for name, program in variable_programs.items():
        try:
            env["variables"][name] = _run(program, env)
        except CelEvalError:
            continue  # an error surfaces where the variable is used: "no such key"
    for i, condition in enumerate(policy.match_conditions):
        program = environment.compile(_Expr(f"matchConditions[{i}]", condition.expression))
        if _run(program, env) is False:
            return []
    failures = []
    for i, validation in enumerate(validations):
        program = environment.compile(_Expr(f"validations[{i}]", validation.expression))
        try:
            passed = _run(program, env)
        except CelEvalError as exc:
            if policy.failure_policy == "Fail":
                failures.append(f"expression '{validation.expression}' resulted in error: {exc}")
            continue
        if passed is True:
            continue
        failures.append(_message(environment, i, validation, env))
    return failures


def _message(
    environment: _Environment, index: int, validation: Validation, env: dict[str, Any]
) -> str:
    if validation.message_expression:
        program = environment.compile(
            _Expr(f"validations[{index}].messageExpression", validation.message_expression)
        )
        try:
            text = _run(program, env)
        except CelEvalError:
            text = None
        if isinstance(text, str) and text.strip() and "\n" not in text:
            return text.strip()
    return validation.message or f"failed expression: {validation.expression}"
