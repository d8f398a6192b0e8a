"""The CEL environment of admission (``k8s.io/apiserver/pkg/admission/plugin/cel``).

Shared by the admission policies (`policy`) and webhook ``matchConditions`` (`webhook`).

Policy expressions, their ``matchConditions`` and webhook ``matchConditions`` see:

- ``object`` and ``oldObject``: the incoming and the stored object (null when absent);
- ``request``: the ``AdmissionRequest`` (kind, resource, subResource, requestKind,
  requestResource, name, namespace, operation, userInfo, dryRun, options);
- ``params``: the binding's parameter object (null without one);
- ``namespaceObject``: the request's Namespace (metadata, spec and status; null for a
  cluster-scoped object);
- ``authorizer``: the authorizer library (`pyctrl._apiextensions.cel.authz`) for the
  request's user, and ``authorizer.requestResource``;
- ``variables``: the policy's ``spec.variables``, each evaluated on first use.

Mutating policies may also build ``Object{...}`` apply configurations and ``JSONPatch{...}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from pyctrl._apiextensions.cel import DYN, CelCompileError, CelEvalError, Program, compile_env
from pyctrl._apiextensions.cel.authz import AuthorizeFunc, Authorizer, Decision
from pyctrl._apiserver.storage.keys import NAMESPACES

if TYPE_CHECKING:
    from pyctrl._apiextensions.cel import T
    from pyctrl._apiserver.admission.interfaces import AdmissionRequest, PluginHost
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = [
    "ADMISSION_VARIABLES",
    "Activation",
    "Compiled",
    "LazyVariables",
    "MatchCondition",
    "admission_request",
    "compile_expression",
    "compile_match_conditions",
    "evaluate_match_conditions",
    "no_authorizer",
    "request_namespace",
]

ADMISSION_VARIABLES: Final[dict[str, T]] = dict.fromkeys(
    ("object", "oldObject", "request", "params", "namespaceObject", "authorizer"), DYN
)


@dataclass(frozen=True)
class Compiled:
    """One expression: its program, or the compilation error (``compilation failed: ...``)."""

    expression: str
    program: Program | None
    error: str = ""


def compile_expression(
    expression: str, variables: list[str] | None = None, *, constructors: bool = False
) -> Compiled:
    """Compile ``expression`` in the admission environment (with ``variables.<name>``)."""
    lazy = dict.fromkeys(variables, DYN) if variables is not None else None
    try:
        program = compile_env(
            expression.strip(), ADMISSION_VARIABLES, lazy=lazy, constructors=constructors
        )
    except CelCompileError as exc:
        return Compiled(expression, None, f"compilation failed: {exc}")
    return Compiled(expression, program)


def compile_match_conditions(raw: Any, variables: list[str] | None) -> list[MatchCondition]:
    """The ``matchConditions`` of a policy or a webhook, compiled."""
    return [
        MatchCondition(
            str(c.get("name") or ""),
            compile_expression(str(c.get("expression") or ""), variables),
        )
        for c in raw or []
        if isinstance(c, dict)
    ]


def request_namespace(request: AdmissionRequest) -> str:
    """kube-apiserver's ``attr.GetNamespace()``: a Namespace object's own name, but on create."""
    rt = request.resource
    is_namespace = rt.group == "" and rt.version == "v1" and rt.plural == "namespaces"
    if is_namespace and request.operation != "CREATE":
        return request.name
    return request.namespace


class LazyVariables:
    """``variables``: each composited variable evaluated once, when first used."""

    def __init__(self, programs: dict[str, Compiled], env: dict[str, Any]) -> None:
        self._programs = programs
        self._env = env
        self._values: dict[str, Any] = {}

    def get(self, name: str) -> Any:
        """The variable's value; `CelEvalError` when it fails to compile or evaluate."""
        if name in self._values:
            return self._values[name]
        compiled = self._programs.get(name)
        if compiled is None:
            raise CelEvalError(f"no such key: {name}")
        if compiled.program is None:
            raise CelEvalError(f'composited variable "{name}" fails to compile: {compiled.error}')
        value = compiled.program.run(self._env)
        self._values[name] = value
        return value


def no_authorizer(user: Any, verb: str, check: Any) -> Decision:
    """An `AuthorizeFunc` for a server without an authorizer: everything is allowed."""
    del user, verb, check
    return Decision(True)


def admission_request(request: AdmissionRequest, matched: ResourceType) -> dict[str, Any]:
    """``CreateAdmissionRequest``: the request as CEL's ``request`` sees it."""
    asked = request.resource
    sub = request.subresource
    out: dict[str, Any] = {
        "uid": request.uid,
        "kind": {"group": matched.group, "version": matched.version, "kind": matched.kind},
        "resource": {
            "group": matched.group,
            "version": matched.version,
            "resource": matched.plural,
        },
        "subResource": sub,
        "requestKind": {"group": asked.group, "version": asked.version, "kind": asked.kind},
        "requestResource": {
            "group": asked.group,
            "version": asked.version,
            "resource": asked.plural,
        },
        "requestSubResource": sub,
        "name": request.name,
        "namespace": request_namespace(request),
        "operation": request.operation,
        "userInfo": {
            "username": request.user.name,
            "uid": request.user.uid,
            "groups": list(request.user.groups),
        },
        "dryRun": request.dry_run,
        "options": request.options or None,
    }
    return out


def _namespace_object(host: PluginHost, request: AdmissionRequest) -> dict[str, Any] | None:
    """``CreateNamespaceObject``: the Namespace's metadata, spec and status, or None."""
    if request.resource.kind == "Namespace" and request.resource.group == "":
        return None
    namespace = request.namespace
    if not namespace:
        return None
    stored = host.store.get(NAMESPACES, "", namespace)
    if stored is None:
        return None
    return {
        "metadata": stored.get("metadata") or {},
        "spec": stored.get("spec") or {},
        "status": stored.get("status") or {},
    }


@dataclass
class Activation:
    """The values of one evaluation (one policy, binding and param)."""

    obj: dict[str, Any] | None
    old: dict[str, Any] | None
    request: dict[str, Any]
    namespace_object: dict[str, Any] | None
    authorizer: Authorizer

    @classmethod
    def build(
        cls,
        host: PluginHost,
        request: AdmissionRequest,
        matched: ResourceType,
        authorize: AuthorizeFunc,
        obj: dict[str, Any] | None = None,
    ) -> Activation:
        """The activation of ``request`` as the version ``matched`` sees it."""
        rt = request.resource
        return cls(
            obj=obj if obj is not None else request.obj,
            old=request.old,
            request=admission_request(request, matched),
            namespace_object=_namespace_object(host, request),
            authorizer=Authorizer(
                request.user,
                authorize,
                (rt.group, rt.plural, request.subresource, request.namespace, request.name),
            ),
        )

    def env(
        self, params: dict[str, Any] | None, variables: dict[str, Compiled] | None = None
    ) -> dict[str, Any]:
        """The CEL environment, with ``params`` and the policy's ``variables``."""
        env: dict[str, Any] = {
            "object": self.obj,
            "oldObject": self.old,
            "request": self.request,
            "params": params,
            "namespaceObject": self.namespace_object,
            "authorizer": self.authorizer,
        }
        env["variables"] = LazyVariables(variables or {}, env)
        return env


@dataclass(frozen=True)
class MatchCondition:
    """One ``matchConditions`` entry, compiled."""

    name: str
    compiled: Compiled


def evaluation_error(compiled: Compiled, exc: CelEvalError | str) -> str:
    """``expression '<e>' resulted in error: <err>``, as the CEL filter reports it."""
    return f"expression '{compiled.expression}' resulted in error: {exc}"


def evaluate_match_conditions(
    conditions: list[MatchCondition], env: dict[str, Any]
) -> tuple[bool, str]:
    """``matchconditions.Matcher.Match`` before the failure policy: (matches, error).

    A false condition means no match; otherwise any errors (joined as Go's aggregate
    error prints them) are returned with ``matches`` True.
    """
    errors: list[str] = []
    for condition in conditions:
        compiled = condition.compiled
        if compiled.program is None:
            errors.append(compiled.error)
            continue
        try:
            result = compiled.program.run(env)
        except CelEvalError as exc:
            errors.append(evaluation_error(compiled, exc))
            continue
        if result is False:
            return False, ""
        if result is not True:
            errors.append(
                evaluation_error(compiled, f"cel expression must evaluate to a bool, got {result}")
            )
    if not errors:
        return True, ""
    return True, errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
