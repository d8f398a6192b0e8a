"""MutatingAdmissionPolicies: ApplyConfiguration and JSONPatch mutations, as kube-apiserver.

As ``k8s.io/apiserver/pkg/admission/plugin/policy/mutating/{dispatcher,patch}``:

- each matching policy-binding-param triple runs its ``mutations`` in order, after its
  ``matchConditions``; a mutation's expression sees the object as the previous one left it;
- ``ApplyConfiguration``: the expression returns ``Object{...}`` (fields of the object,
  nested ``Object.spec{...}`` values); it is merged into the object as server-side apply
  merges: maps field by field, lists with ``x-kubernetes-list-type: map`` (or a built-in
  kind's merge key) item by item, every other list replaced;
- ``JSONPatch``: the expression returns a list of ``JSONPatch{op, path, value, from}``
  applied as an RFC 6902 patch (``jsonpatch.escapeKey`` escapes a key for a path); a
  failed ``test`` operation leaves the object unchanged, any other failure is an error
  (``JSONPath: <error>``, kube-apiserver's wording);
- ``reinvocationPolicy: IfNeeded``: when a later policy changed the object, an earlier
  IfNeeded policy runs once more;
- an error (compilation, evaluation, a patch that does not apply, a failed match
  condition, a missing parameter) under ``failurePolicy: Fail`` refuses the request with
  403 ``policy '<p>' with binding '<b>' denied request: <error>`` (``policy "<p>" denied
  request: ...`` without a binding) and reason ``Invalid``; under ``Ignore`` the policy
  is skipped.

The mutated object is then decoded, defaulted and validated again by the type, and seen
by the validating policies and webhooks.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyctrl._apiextensions.cel import CelEvalError
from pyctrl._apimachinery.field import Cause
from pyctrl._apimachinery.merge_keys import Node, builtin_root, schema_root
from pyctrl._apiserver.admission.plugin.cel import (
    Activation,
    Compiled,
    compile_expression,
    evaluate_match_conditions,
    evaluation_error,
)
from pyctrl._apiserver.admission.plugin.policy.generic import (
    Binding,
    PolicyBase,
    at_version,
    common_fields,
    invocations,
)
from pyctrl._apiserver.apimachinery.errors import StatusError
from pyctrl._apiserver.fieldmanager.patch import PatchError, json_patch

if TYPE_CHECKING:
    from pyctrl._apiextensions.cel.authz import AuthorizeFunc
    from pyctrl._apiserver.admission.interfaces import AdmissionRequest, PluginHost
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["MutatingPolicy", "dispatch", "parse_policy"]


@dataclass(frozen=True)
class Mutation:
    """One ``spec.mutations`` entry, compiled."""

    patch_type: str
    compiled: Compiled


@dataclass(frozen=True)
class MutatingPolicy(PolicyBase):
    """A stored MutatingAdmissionPolicy, parsed and compiled."""

    reinvoke_if_needed: bool
    mutations: list[Mutation]


def parse_policy(obj: dict[str, Any]) -> MutatingPolicy:
    """Compile a MutatingAdmissionPolicy."""
    spec = obj.get("spec") or {}
    common = common_fields(obj)
    names = list(common["variables"])
    mutations = []
    for raw in spec.get("mutations") or []:
        if not isinstance(raw, dict):
            continue
        patch_type = str(raw.get("patchType") or "")
        body = raw.get("applyConfiguration" if patch_type == "ApplyConfiguration" else "jsonPatch")
        expression = str((body or {}).get("expression") or "") if isinstance(body, dict) else ""
        mutations.append(
            Mutation(patch_type, compile_expression(expression, names, constructors=True))
        )
    return MutatingPolicy(
        **common,
        reinvoke_if_needed=spec.get("reinvocationPolicy") == "IfNeeded",
        mutations=mutations,
    )


# --- applying patches ---------------------------------------------------------------------


class MutationError(Exception):
    """A mutation that failed (its message is the policy error's)."""


def _merge_list(live: list[Any], applied: list[Any], node: Node | None) -> list[Any]:
    if node is None or node.list_type != "map" or not node.keys:
        return copy.deepcopy(applied)
    elem = node.elem
    out = copy.deepcopy(live)
    for item in applied:
        if not isinstance(item, dict):
            return copy.deepcopy(applied)
        key = tuple(item.get(k) for k in node.keys)
        index = next(
            (
                i
                for i, o in enumerate(out)
                if isinstance(o, dict) and tuple(o.get(k) for k in node.keys) == key
            ),
            None,
        )
        if index is None:
            out.append(copy.deepcopy(item))
        else:
            out[index] = merge_apply(out[index], item, elem)
    return out


def _child(node: Node | None, name: str) -> Node | None:
    if node is None:
        return None
    if node.fields and name in node.fields:
        return node.fields[name]
    return node.elem


def merge_apply(live: Any, applied: Any, node: Node | None) -> Any:
    """Merge an apply configuration into ``live`` (server-side apply's merge, no ownership)."""
    if isinstance(applied, dict) and isinstance(live, dict) and not (node and node.atomic):
        out = dict(live)
        for name, value in applied.items():
            if value is None:
                out.pop(name, None)
                continue
            out[name] = merge_apply(live.get(name), value, _child(node, name))
        return out
    if isinstance(applied, list) and isinstance(live, list):
        return _merge_list(live, applied, node)
    return copy.deepcopy(applied)


def _root_node(rt: ResourceType) -> Node:
    return schema_root(rt.schema) if rt.crd_name and rt.schema else builtin_root(rt.group, rt.kind)


def apply_mutation(
    mutation: Mutation, env: dict[str, Any], obj: dict[str, Any], rt: ResourceType
) -> dict[str, Any]:
    compiled = mutation.compiled
    if compiled.program is None:
        raise MutationError(compiled.error)
    try:
        result = compiled.program.run(env)
    except CelEvalError as exc:
        raise MutationError(evaluation_error(compiled, exc)) from None
    if mutation.patch_type == "ApplyConfiguration":
        if not isinstance(result, dict):
            raise MutationError("ApplyConfiguration expression must return an Object")
        merged = merge_apply(obj, result, _root_node(rt))
        assert isinstance(merged, dict)
        return merged
    if mutation.patch_type != "JSONPatch":
        raise MutationError(f"unsupported patch type {mutation.patch_type!r}")
    if not isinstance(result, list) or not all(isinstance(op, dict) for op in result):
        raise MutationError("JSONPatch expression must return a list of JSONPatch")
    try:
        return json_patch(obj, result)
    except PatchError as exc:
        if exc.detail.endswith(": test failed"):
            # A failed ``test`` operation leaves the object as it was (jsonpatch.ErrTestFailed).
            return obj
        raise MutationError(f"JSONPath: {exc.detail}") from None


# --- dispatch -----------------------------------------------------------------------------


@dataclass
class _PolicyError:
    policy: str
    binding: str
    message: str


class _Run:
    """One request's run of the mutating policies."""

    def __init__(
        self, host: PluginHost, request: AdmissionRequest, authorize: AuthorizeFunc
    ) -> None:
        self.host = host
        self.request = request
        self.authorize = authorize
        self.obj: dict[str, Any] = request.obj or {}
        self.errors: list[_PolicyError] = []

    def error(self, policy: MutatingPolicy, binding: str, message: str) -> None:
        if not policy.ignore_failures:
            self.errors.append(_PolicyError(policy.name, binding, message))

    def invocations(
        self, policy: MutatingPolicy, bindings: list[Binding]
    ) -> list[tuple[Binding, dict[str, Any] | None, ResourceType]]:
        """The policy's matching binding-param pairs (errors recorded)."""
        found = invocations(self.host, self.request, policy.match, policy.param_kind, bindings)
        for binding, message in found.errors:
            self.error(policy, binding, message)
        matched = found.matched
        if matched is None:
            return []
        return [(binding, param, matched) for binding, param in found.calls]

    def invoke(
        self,
        policy: MutatingPolicy,
        binding: Binding,
        param: dict[str, Any] | None,
        matched: ResourceType,
    ) -> bool:
        """Run one invocation's mutations; whether the object changed."""
        rt = self.request.resource
        obj = at_version(self.host, self.obj, rt, matched) or {}
        activation = Activation.build(self.host, self.request, matched, self.authorize, obj)
        activation.old = at_version(self.host, self.request.old, rt, matched)
        matches, error = evaluate_match_conditions(
            policy.match_conditions, activation.env(param, policy.variables)
        )
        if error and matches:
            self.error(policy, binding.name, error)
            return False
        if not matches:
            return False
        before = obj
        for mutation in policy.mutations:
            activation.obj = obj
            try:
                obj = apply_mutation(
                    mutation, activation.env(param, policy.variables), obj, matched
                )
            except MutationError as exc:
                self.error(policy, binding.name, str(exc))
                return False
        if obj == before:
            return False
        self.obj = at_version(self.host, obj, matched, rt) or {}
        return True

    def refusal(self) -> StatusError:
        """``admission.NewForbidden`` with the policy errors' messages."""
        request = self.request
        rt = request.resource
        resource = f"{rt.plural}/{request.subresource}" if request.subresource else rt.plural
        name = request.name or str((self.obj.get("metadata") or {}).get("name") or "")
        messages = [
            f"policy '{e.policy}' with binding '{e.binding}' denied request: {e.message}"
            if e.binding
            else f'policy "{e.policy}" denied request: {e.message}'
            for e in self.errors
        ]
        return StatusError(
            403,
            "Invalid",
            messages[0],
            name=name,
            group=rt.group,
            kind=resource,
            causes=[Cause("", m) for m in messages],
        )


def dispatch(
    host: PluginHost,
    request: AdmissionRequest,
    pairs: list[tuple[MutatingPolicy, list[Binding]]],
    authorize: AuthorizeFunc,
) -> dict[str, Any] | None:
    """Run the mutating policies over ``request``; the mutated object, or None.

    Raises:
        StatusError: A policy under ``failurePolicy: Fail`` failed.
    """
    run = _Run(host, request, authorize)
    invocations = [
        (policy, binding, param, matched)
        for policy, bindings in pairs
        for binding, param, matched in run.invocations(policy, bindings)
    ]
    changed_any = False
    reinvoke: list[int] = []
    reinvocable: list[int] = []
    for index, (policy, binding, param, matched) in enumerate(invocations):
        if run.invoke(policy, binding, param, matched):
            changed_any = True
            reinvoke.extend(reinvocable)
            reinvocable = []
        if policy.reinvoke_if_needed:
            reinvocable.append(index)
    for index in sorted(set(reinvoke)):
        policy, binding, param, matched = invocations[index]
        changed_any = run.invoke(policy, binding, param, matched) or changed_any
    if run.errors:
        raise run.refusal()
    return run.obj if changed_any else None
