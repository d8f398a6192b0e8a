"""What both kinds of policy share: picking the invocations of a request (``generic``).

As ``policy/generic/policy_dispatcher.go``: a policy whose ``matchConstraints`` match, and
each of its bindings whose ``matchResources`` match, gives one *invocation* per parameter
object; a problem on the way (no match constraints, a selector that does not parse, a
parameter that cannot be had) is a *configuration error* of the policy or of the binding,
which the policy's ``failurePolicy`` then decides.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.admission.plugin.cel import (
    Compiled,
    MatchCondition,
    compile_expression,
    compile_match_conditions,
    request_namespace,
)
from pyctrl._apiserver.admission.plugin.policy.matching import MatchResources
from pyctrl._apiserver.admission.plugin.policy.params import ConfigurationError, collect_params
from pyctrl._apiserver.apimachinery.errors import StatusError

if TYPE_CHECKING:
    from pyctrl._apiserver.admission.interfaces import AdmissionRequest, PluginHost
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = [
    "Binding",
    "Invocations",
    "PolicyBase",
    "at_version",
    "common_fields",
    "invocations",
    "parse_binding",
]


@dataclass(frozen=True)
class PolicyBase:
    """What a stored policy of either kind holds, parsed and compiled."""

    name: str
    ignore_failures: bool
    param_kind: tuple[str, str] | None
    """``(apiVersion, kind)`` of the parameter objects."""
    match: MatchResources | None
    match_conditions: list[MatchCondition]
    variables: dict[str, Compiled]
    """``spec.variables``, each compiled with those declared before it in scope."""


def _param_kind(spec: dict[str, Any]) -> tuple[str, str] | None:
    raw = spec.get("paramKind")
    if not isinstance(raw, dict):
        return None
    return str(raw.get("apiVersion") or ""), str(raw.get("kind") or "")


def common_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """The `PolicyBase` fields of a stored policy (its spec's common part, compiled)."""
    spec = obj.get("spec") or {}
    raw = [v for v in spec.get("variables") or [] if isinstance(v, dict)]
    names = [str(v.get("name") or "") for v in raw]
    variables = {
        name: compile_expression(str(v.get("expression") or ""), names[:i])
        for i, (name, v) in enumerate(zip(names, raw, strict=True))
    }
    return {
        "name": str((obj.get("metadata") or {}).get("name") or ""),
        "ignore_failures": spec.get("failurePolicy") == "Ignore",
        "param_kind": _param_kind(spec),
        "match": MatchResources.parse(spec.get("matchConstraints")),
        "match_conditions": compile_match_conditions(spec.get("matchConditions"), names),
        "variables": variables,
    }


@dataclass(frozen=True)
class Binding:
    """A stored ValidatingAdmissionPolicyBinding, parsed."""

    name: str
    policy_name: str
    param_ref: dict[str, Any] | None
    match: MatchResources | None
    actions: tuple[str, ...]


def parse_binding(obj: dict[str, Any]) -> Binding:
    """Parse a ValidatingAdmissionPolicyBinding (or a Mutating one: no actions)."""
    spec = obj.get("spec") or {}
    ref = spec.get("paramRef")
    return Binding(
        name=str((obj.get("metadata") or {}).get("name") or ""),
        policy_name=str(spec.get("policyName") or ""),
        param_ref=ref if isinstance(ref, dict) else None,
        match=MatchResources.parse(spec.get("matchResources")),
        actions=tuple(str(a) for a in spec.get("validationActions") or []),
    )


@dataclass
class Invocations:
    """A policy's invocations for one request, and its configuration errors."""

    matched: ResourceType | None = None
    """The version of the resource the policy sees (None: the policy does not match)."""
    calls: list[tuple[Binding, dict[str, Any] | None]] = field(default_factory=list)
    """``(binding, param)`` pairs, bindings in name order."""
    errors: list[tuple[str, str]] = field(default_factory=list)
    """``(binding name or "", message)`` of each configuration error."""


def invocations(
    host: PluginHost,
    request: AdmissionRequest,
    match: MatchResources | None,
    param_kind: tuple[str, str] | None,
    bindings: list[Binding],
) -> Invocations:
    """``policyDispatcher.Dispatch``'s selection for one policy."""
    out = Invocations()
    if match is None:
        out.errors.append(("", "policy contained no match constraints, a required field"))
        return out
    try:
        matched = match.matches(host, request)
    except StatusError as exc:
        out.errors.append(("", exc.message))
        return out
    if matched is None:
        return out
    out.matched = matched.rt
    for binding in bindings:
        try:
            if binding.match is not None and binding.match.matches(host, request) is None:
                continue
            params = collect_params(host, param_kind, binding.param_ref, request_namespace(request))
        except StatusError as exc:
            out.errors.append((binding.name, exc.message))
            continue
        except ConfigurationError as exc:
            out.errors.append((binding.name, str(exc)))
            continue
        out.calls.extend((binding, param) for param in params)
    return out


def at_version(
    host: PluginHost, obj: dict[str, Any] | None, source: ResourceType, dest: ResourceType
) -> dict[str, Any] | None:
    """An object of ``source``'s version as ``dest``'s version shows it (equivalent matches)."""
    if obj is None or (source.group, source.version) == (dest.group, dest.version):
        return obj
    api = host.api
    return api.to_external(dest, api.to_storage(source, obj))
