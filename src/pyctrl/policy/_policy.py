"""`ValidatingPolicy` and `MutatingPolicy`: a policy, its match and its bindings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pyctrl.policy import _check
from pyctrl.policy._types import (
    AuditAnnotation,
    Binding,
    Evaluation,
    Mutation,
    PolicyError,
    ResourceRule,
    Validation,
    Variable,
)
from pyctrl.resource import CustomResource
from pyctrl.scheme import default_scheme
from pyctrl.webhook import InvalidObjectError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from pyctrl.meta import GroupVersionKind
    from pyctrl.webhook import MatchCondition

__all__ = ["MutatingPolicy", "PolicyValidator", "ValidatingPolicy"]

_GROUP = "admissionregistration.k8s.io"
_VERSION = f"{_GROUP}/v1"


def _kinds(for_: type[Any] | Sequence[type[Any]]) -> list[type[Any]]:
    return [for_] if isinstance(for_, type) else list(for_)


def _rule(type_: type[Any], gvk: GroupVersionKind, operations: Sequence[str]) -> ResourceRule:
    from pyctrl.webhook._config import resource_of

    scope = "*"
    if issubclass(type_, CustomResource):
        scope = "Namespaced" if type_.resource_info().namespaced else "Cluster"
    return ResourceRule(
        api_groups=(gvk.group,),
        api_versions=(gvk.version,),
        resources=(resource_of(type_, gvk),),
        operations=tuple(operations),
        scope=scope,
    )


@dataclass(frozen=True)
class _Policy:
    """What validating and mutating policies share: the match, params and variables."""

    name: str
    for_: type[Any] | Sequence[type[Any]] = ()
    operations: Sequence[str] = ("CREATE", "UPDATE")
    params: type[Any] | None = None
    variables: Sequence[Variable] = ()
    match_conditions: Sequence[MatchCondition] = ()
    failure_policy: Literal["Fail", "Ignore"] = "Fail"
    rules: Sequence[ResourceRule] = ()
    exclude: Sequence[ResourceRule] = ()
    namespace_selector: Mapping[str, Any] | None = None
    object_selector: Mapping[str, Any] | None = None
    match_policy: Literal["Exact", "Equivalent"] | None = None
    bindings: Sequence[Binding] = (Binding(),)

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a policy needs a name")
        if not self.kinds and not self.rules:
            raise ValueError(f"policy {self.name!r} matches nothing: give for_ or rules")
        if self.failure_policy not in ("Fail", "Ignore"):
            raise ValueError(f"failure_policy {self.failure_policy!r} is not Fail or Ignore")
        if self.match_policy not in (None, "Exact", "Equivalent"):
            raise ValueError(f"match_policy {self.match_policy!r} is not Exact or Equivalent")
        self.match_rules()  # unknown kinds and bad operations fail here, not at generation
        names = [v.name for v in self.variables]
        if len(set(names)) != len(names):
            raise ValueError(f"policy {self.name!r} declares a variable twice: {names}")
        if not self.bindings:
            raise ValueError(f"policy {self.name!r} has no binding: it would never run")
        for binding in self.bindings:
            if (self.params is None) != (binding.param_ref is None):
                need = "needs a param_ref" if self.params is not None else "has a param_ref"
                raise ValueError(
                    f"policy {self.name!r}: a binding {need}, the policy has "
                    f"{'params' if self.params is not None else 'no params'}"
                )

    @property
    def kinds(self) -> list[type[Any]]:
        """The typed kinds the policy matches (``for_``)."""
        return _kinds(self.for_)

    def match_rules(self) -> list[ResourceRule]:
        """The resource rules: ``rules``, else one per kind of ``for_``."""
        if self.rules:
            return list(self.rules)
        scheme = default_scheme()
        return [_rule(t, scheme.gvk_for(t), self.operations) for t in self.kinds]

    def _spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {}
        if self.params is not None:
            gvk = default_scheme().gvk_for(self.params)
            spec["paramKind"] = {"apiVersion": gvk.api_version, "kind": gvk.kind}
        constraints: dict[str, Any] = {"resourceRules": [r.to_dict() for r in self.match_rules()]}
        if self.exclude:
            constraints["excludeResourceRules"] = [r.to_dict() for r in self.exclude]
        if self.namespace_selector is not None:
            constraints["namespaceSelector"] = dict(self.namespace_selector)
        if self.object_selector is not None:
            constraints["objectSelector"] = dict(self.object_selector)
        if self.match_policy is not None:
            constraints["matchPolicy"] = self.match_policy
        spec["matchConstraints"] = constraints
        if self.variables:
            spec["variables"] = [v.to_dict() for v in self.variables]
        if self.match_conditions:
            spec["matchConditions"] = [c.to_dict() for c in self.match_conditions]
        spec["failurePolicy"] = self.failure_policy
        return spec

    def _binding_objects(self, kind: str, validating: bool) -> list[dict[str, Any]]:
        out = []
        for index, binding in enumerate(self.bindings):
            spec: dict[str, Any] = {"policyName": self.name}
            if binding.param_ref is not None:
                spec["paramRef"] = binding.param_ref.to_dict()
            match: dict[str, Any] = {}
            if binding.namespace_selector is not None:
                match["namespaceSelector"] = dict(binding.namespace_selector)
            if binding.object_selector is not None:
                match["objectSelector"] = dict(binding.object_selector)
            if match:
                spec["matchResources"] = match
            if validating:
                spec["validationActions"] = list(binding.validation_actions)
            name = binding.name or f"{self.name}-binding{f'-{index}' if index else ''}"
            out.append(
                {"apiVersion": _VERSION, "kind": kind, "metadata": {"name": name}, "spec": spec}
            )
        return out


@dataclass(frozen=True)
class ValidatingPolicy(_Policy):
    """A ValidatingAdmissionPolicy and its bindings, declared next to the types.

    Args:
        name: The policy's name (cluster-wide).
        for_: The kinds it guards (custom resource classes, kubernetes-asyncio models):
            its resource rules, and the schemas its expressions are checked against.
        validations: The rules (typed helpers or `Validation`).
        operations: The operations matched for ``for_`` (``CREATE``, ``UPDATE``).
        params: The param kind (a custom resource class, or ``V1ConfigMap``): bindings
            then give a `ParamRef` and expressions read ``params``.
        variables: Named expressions (``variables.<name>``).
        match_conditions: Expressions that must all be true for the policy to run.
        audit_annotations: Annotations added to the audit event.
        failure_policy: ``Fail`` (default) or ``Ignore`` when an expression errors or
            the policy is misconfigured.
        rules: Explicit resource rules instead of those of ``for_`` (whose kinds still
            type the expressions; without ``for_`` they are dynamic).
        exclude: Resource rules left out.
        namespace_selector: Only objects in namespaces with these labels.
        object_selector: Only objects with these labels.
        match_policy: ``Equivalent`` (the server's default) or ``Exact``.
        bindings: Its bindings (default: one, ``<name>-binding``, that denies).
    """

    validations: Sequence[Validation] = ()
    audit_annotations: Sequence[AuditAnnotation] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.validations and not self.audit_annotations:
            raise ValueError(f"policy {self.name!r} needs validations or audit_annotations")

    def check(self) -> None:
        """Type-check every expression against the kinds' schemas.

        Raises:
            PolicyError: Naming the policy and the expression, with the CEL error.
        """
        _check.check(self, self.validations, self.audit_annotations)

    def manifests(self) -> list[dict[str, Any]]:
        """The ValidatingAdmissionPolicy and its bindings, checked (`check`)."""
        self.check()
        spec = self._spec()
        if self.validations:
            spec["validations"] = [v.to_dict() for v in self.validations]
        if self.audit_annotations:
            spec["auditAnnotations"] = [a.to_dict() for a in self.audit_annotations]
        policy = {
            "apiVersion": _VERSION,
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": self.name},
            "spec": spec,
        }
        return [policy, *self._binding_objects("ValidatingAdmissionPolicyBinding", True)]

    def evaluate(
        self,
        obj: Mapping[str, Any] | None,
        old: Mapping[str, Any] | None = None,
        *,
        params: Mapping[str, Any] | None = None,
        operation: str | None = None,
        request: Mapping[str, Any] | None = None,
        namespace: Mapping[str, Any] | None = None,
    ) -> list[str]:
        """Run the policy's CEL here, on JSON objects: the messages of the failed rules.

        A unit test of the rules without an API server. Match conditions apply; the
        resource match (kinds, selectors) and the bindings' actions do not.

        Args:
            obj: The object (None for DELETE).
            old: The old object (UPDATE, DELETE).
            params: The param object.
            operation: Default ``CREATE``, or ``UPDATE`` with ``old``.
            request: More of the AdmissionRequest (``userInfo``...).
            namespace: The namespace object.

        Raises:
            PolicyError: An expression does not compile or errors when it runs.
        """
        op = operation or ("UPDATE" if old is not None and obj is not None else "CREATE")
        return _check.evaluate(
            self,
            self.validations,
            obj,
            old,
            params=params,
            operation=op,
            request=request,
            namespace=namespace,
        )

    def validator(self, params: Callable[[], Mapping[str, Any] | None] | None = None) -> Any:
        """A webhook `pyctrl.webhook.Validator` applying the same rules in Python.

        Each validation must carry its Python ``check`` (the typed helpers do): a
        cluster without policies, or a webhook kept while the policy runs in ``Warn``.
        A failed rule denies with its message (the first binding's ``Warn`` turns it into
        a warning).

        Args:
            params: Gives the param object (JSON) for each request, for a policy with
                params: e.g. a function reading it from the manager's cache.

        Raises:
            PolicyError: A validation has no Python check.
        """
        return PolicyValidator(self, params)


@dataclass(frozen=True)
class MutatingPolicy(_Policy):
    """A MutatingAdmissionPolicy and its bindings.

    Args:
        name: The policy's name.
        for_: The kinds it mutates.
        mutations: The mutations, in order (`set_default` or `Mutation`).
        reinvocation_policy: ``Never`` (default) or ``IfNeeded``: run again when a later
            mutation changed the object.

    The other arguments are those of `ValidatingPolicy`.
    """

    mutations: Sequence[Mutation] = ()
    reinvocation_policy: Literal["Never", "IfNeeded"] = "Never"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.mutations:
            raise ValueError(f"policy {self.name!r} has no mutations")
        if self.reinvocation_policy not in ("Never", "IfNeeded"):
            raise ValueError(
                f"reinvocation_policy {self.reinvocation_policy!r} is not Never or IfNeeded"
            )
        for binding in self.bindings:
            if tuple(binding.validation_actions) != ("Deny",):
                raise ValueError(f"policy {self.name!r}: a mutating binding has no actions")

    def check(self) -> None:
        """Check every expression (see `ValidatingPolicy.check`; mutations: see the module).

        Raises:
            PolicyError: Naming the policy and the expression.
        """
        _check.check(self, mutations=self.mutations)

    def manifests(self) -> list[dict[str, Any]]:
        """The MutatingAdmissionPolicy and its bindings, checked."""
        self.check()
        spec = self._spec()
        spec["mutations"] = [m.to_dict() for m in self.mutations]
        spec["reinvocationPolicy"] = self.reinvocation_policy
        policy = {
            "apiVersion": _VERSION,
            "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": self.name},
            "spec": spec,
        }
        return [policy, *self._binding_objects("MutatingAdmissionPolicyBinding", False)]


class PolicyValidator:
    """A `pyctrl.webhook.Validator` checking a policy's typed rules in Python.

    Args:
        policy: The policy; each of its validations needs its Python ``check``.
        params: Gives the param object as JSON for each request (a policy with params);
            e.g. a function reading it from the manager's cache.
    """

    def __init__(
        self,
        policy: ValidatingPolicy,
        params: Callable[[], Mapping[str, Any] | None] | None = None,
    ) -> None:
        missing = [i for i, v in enumerate(policy.validations) if v.check is None]
        if missing:
            raise PolicyError(
                f'policy "{policy.name}" validations{missing}: written in CEL, with no '
                "Python check to run in a webhook (use the typed helpers, or pass check=)"
            )
        self.policy = policy
        self.params = params
        self.warn = "Warn" in policy.bindings[0].validation_actions

    def _verdict(self, ev: Evaluation) -> list[str] | None:
        failed = []
        for validation in self.policy.validations:
            assert validation.check is not None
            if validation.check(ev):
                continue
            if validation.explain is not None:
                failed.append(validation.explain(ev))
            else:
                failed.append(validation.message or f"failed expression: {validation.expression}")
        if not failed:
            return None
        if self.warn:
            return failed
        raise InvalidObjectError("; ".join(failed))

    def _json(self, obj: Any) -> dict[str, Any]:
        return default_scheme().to_dict(obj)

    def _evaluation(self, obj: Any, old: Any, operation: str) -> Evaluation:
        return Evaluation(
            object=None if obj is None else self._json(obj),
            old_object=None if old is None else self._json(old),
            params=self.params() if self.params is not None else None,
            operation=operation,
        )

    async def validate_create(self, obj: Any) -> list[str] | None:
        """Check a create."""
        if "CREATE" not in self.policy.operations:
            return None
        return self._verdict(self._evaluation(obj, None, "CREATE"))

    async def validate_update(self, old: Any, new: Any) -> list[str] | None:
        """Check an update."""
        if "UPDATE" not in self.policy.operations:
            return None
        return self._verdict(self._evaluation(new, old, "UPDATE"))

    async def validate_delete(self, obj: Any) -> list[str] | None:
        """Check a delete."""
        if "DELETE" not in self.policy.operations:
            return None
        return self._verdict(self._evaluation(None, obj, "DELETE"))
