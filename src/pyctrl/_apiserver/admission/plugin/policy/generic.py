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

from pyctrl._apiserver.admission.plugin.cel import request_namespace
from pyctrl._apiserver.admission.plugin.policy.params import ConfigurationError, collect_params
from pyctrl._apiserver.apimachinery.errors import StatusError

if TYPE_CHECKING:
    from pyctrl._apiserver.admission.interfaces import AdmissionRequest, PluginHost
    from pyctrl._apiserver.admission.plugin.policy.matching import MatchResources
    from pyctrl._apiserver.admission.plugin.policy.validating import Binding
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["Invocations", "at_version", "invocations"]


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
