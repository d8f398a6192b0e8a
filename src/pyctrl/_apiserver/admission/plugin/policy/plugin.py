"""The admission policy plugin: the server's ValidatingAdmissionPolicy and MutatingAdmissionPolicy.

As ``k8s.io/apiserver/pkg/admission/plugin/policy/{generic,validating,mutating}/plugin.go``:
it reads the stored policies and bindings on each request (compiled once per
resourceVersion), picks the policy-binding-param triples that match, and evaluates them.
The server places it first in its admission list, so that mutating policies run before
mutating webhooks and validating policies before validating webhooks, kube-apiserver's
order (``MutatingAdmissionPolicy``, ``MutatingAdmissionWebhook``,
``ValidatingAdmissionPolicy``, ``ValidatingAdmissionWebhook``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from pyctrl._apiserver.admission.plugin.cel import Activation, no_authorizer
from pyctrl._apiserver.admission.plugin.policy import mutating as _mutating
from pyctrl._apiserver.admission.plugin.policy.generic import (
    Binding,
    at_version,
    invocations,
    parse_binding,
)
from pyctrl._apiserver.admission.plugin.policy.validating import (
    VALIDATION_FAILURE_KEY,
    AuditSink,
    Decision,
    Policy,
    denial_error,
    evaluate,
    parse_policy,
    validation_failure_annotation,
)
from pyctrl._apiserver.admission.plugin.webhook.client import warning_header
from pyctrl._apiserver.admission.plugin.webhook.config import is_exempt

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyctrl._apiextensions.cel.authz import AuthorizeFunc
    from pyctrl._apiserver.admission.interfaces import AdmissionRequest, PluginHost
    from pyctrl._apiserver.scheme.resources import ResourceType
    from pyctrl._apiserver.storage.store import StorageKey

__all__ = ["MAP", "MAPB", "VAP", "VAPB", "PolicyPlugin"]

_GROUP: Final = "admissionregistration.k8s.io"
VAP: Final[StorageKey] = (_GROUP, "validatingadmissionpolicies")
VAPB: Final[StorageKey] = (_GROUP, "validatingadmissionpolicybindings")
MAP: Final[StorageKey] = (_GROUP, "mutatingadmissionpolicies")
MAPB: Final[StorageKey] = (_GROUP, "mutatingadmissionpolicybindings")


class _Parsed:
    """Stored objects of one kind, parsed once per resourceVersion."""

    def __init__(self, key: StorageKey, parse: Callable[[dict[str, Any]], Any]) -> None:
        self.key = key
        self.parse = parse
        self._cache: dict[str, tuple[str, Any]] = {}

    def items(self, host: PluginHost) -> list[Any]:
        out: list[Any] = []
        seen: set[str] = set()
        for obj in sorted(
            host.store.items(self.key, None), key=lambda o: str(o["metadata"].get("name"))
        ):
            meta = obj.get("metadata") or {}
            name, rv = str(meta.get("name") or ""), str(meta.get("resourceVersion") or "")
            cached = self._cache.get(name)
            if cached is None or cached[0] != rv:
                cached = (rv, self.parse(obj))
                self._cache[name] = cached
            seen.add(name)
            out.append(cached[1])
        for gone in set(self._cache) - seen:
            del self._cache[gone]
        return out


@dataclass
class _Denied:
    policy: str
    binding: str
    decision: Decision


class PolicyPlugin:
    """Enforces the stored admission policies (an `AdmissionHook`).

    Args:
        host: The server whose policies, bindings, parameters and namespaces are read.
        authorize: Answers the CEL ``authorizer``'s questions (the server's RBAC);
            None allows everything.
    """

    def __init__(self, host: PluginHost, *, authorize: AuthorizeFunc | None = None) -> None:
        self.host = host
        self.authorize: AuthorizeFunc = authorize or no_authorizer
        self.audit = AuditSink()
        """The audit annotations policies added to requests (the server has no audit log)."""
        self._policies = _Parsed(VAP, parse_policy)
        self._bindings = _Parsed(VAPB, parse_binding)
        self._mutating = _Parsed(MAP, _mutating.parse_policy)
        self._mutating_bindings = _Parsed(MAPB, parse_binding)

    def handles(self, rt: ResourceType, *, mutating: bool) -> bool:
        """Whether a binding of the kind's policies is stored and ``rt`` is not exempt."""
        return not is_exempt(rt) and self.host.store.has_any(MAPB if mutating else VAPB)

    def _pairs(self, policies: _Parsed, bindings: _Parsed) -> list[tuple[Any, list[Binding]]]:
        by_policy: dict[str, list[Binding]] = {}
        for binding in bindings.items(self.host):
            by_policy.setdefault(binding.policy_name, []).append(binding)
        return [(p, by_policy[p.name]) for p in policies.items(self.host) if p.name in by_policy]

    # --- validating ------------------------------------------------------------------

    async def validate(self, request: AdmissionRequest) -> None:
        """Evaluate the matching ValidatingAdmissionPolicies; raise the first denial."""
        if not self.handles(request.resource, mutating=False):
            return
        denied: list[_Denied] = []
        annotations: dict[str, str] = {}
        for policy, bindings in self._pairs(self._policies, self._bindings):
            self._validate_policy(request, policy, bindings, denied, annotations)
        self.audit.add(request, annotations)
        if denied:
            first = denied[0]
            err = denial_error(request, first.policy, first.binding, first.decision)
            if request.warnings:
                err.headers["Warning"] = warning_header(request.warnings)
            raise err

    def _validate_policy(
        self,
        request: AdmissionRequest,
        policy: Policy,
        bindings: list[Binding],
        denied: list[_Denied],
        annotations: dict[str, str],
    ) -> None:
        found = invocations(self.host, request, policy.match, policy.param_kind, bindings)
        if not policy.ignore_failures:
            for binding_name, message in found.errors:
                prefix = (
                    "failed to configure binding" if binding_name else "failed to configure policy"
                )
                denied.append(_Denied(policy.name, binding_name, Decision(f"{prefix}: {message}")))
        if found.matched is None or not found.calls:
            return
        rt = request.resource
        activation = Activation.build(
            self.host,
            request,
            found.matched,
            self.authorize,
            at_version(self.host, request.obj, rt, found.matched),
        )
        activation.old = at_version(self.host, request.old, rt, found.matched)
        policy_annotations: dict[str, list[str]] = {}
        for binding, param in found.calls:
            verdicts = evaluate(policy, activation.env(param, policy.variables))
            self._act(request, policy, binding, verdicts.denials, denied, annotations)
            for key, value in verdicts.annotations:
                values = policy_annotations.setdefault(key, [])
                if value not in values:
                    values.append(value)
        for key, values in policy_annotations.items():
            annotations[f"{policy.name}/{key}"] = ", ".join(values)

    @staticmethod
    def _act(  # noqa: PLR0917 - one decision's destinations: the request, the policy's lists
        request: AdmissionRequest,
        policy: Policy,
        binding: Binding,
        decisions: list[Decision],
        denied: list[_Denied],
        annotations: dict[str, str],
    ) -> None:
        """Send each decision where the binding's ``validationActions`` say."""
        for decision in decisions:
            for action in binding.actions:
                if action == "Deny":
                    denied.append(_Denied(policy.name, binding.name, decision))
                elif action == "Warn":
                    request.warnings.append(
                        f"Validation failed for ValidatingAdmissionPolicy '{policy.name}' "
                        f"with binding '{binding.name}': {decision.message}"
                    )
                elif action == "Audit":
                    annotations[VALIDATION_FAILURE_KEY] = validation_failure_annotation(
                        binding, decision
                    )

    # --- mutating --------------------------------------------------------------------

    async def mutate(self, request: AdmissionRequest) -> dict[str, Any] | None:
        """Apply the matching MutatingAdmissionPolicies; the mutated object (None: unchanged)."""
        if request.obj is None or not self.handles(request.resource, mutating=True):
            return None
        return _mutating.dispatch(
            self.host,
            request,
            self._pairs(self._mutating, self._mutating_bindings),
            self.authorize,
        )
