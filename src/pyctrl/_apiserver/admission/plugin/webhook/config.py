"""Stored webhook configurations parsed, rules matched, and the webhook's answer checked.

As ``k8s.io/apiserver/pkg/admission/plugin/webhook/{config,predicates/rules,request}``.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyctrl._apimachinery.gofmt import go_quote as _quote
from pyctrl._apiserver.admission.plugin.cel import MatchCondition, compile_match_conditions
from pyctrl._apiserver.admission.plugin.webhook.client import DEFAULT_TIMEOUT_SECONDS
from pyctrl._apiserver.apimachinery.errors import StatusError, not_found
from pyctrl._apiserver.apimachinery.fields import (
    LabelSelector,
    SelectorError,
    selector_from_object,
)
from pyctrl._apiserver.storage.keys import NAMESPACES

if TYPE_CHECKING:
    from pyctrl._apiserver.admission.interfaces import AdmissionRequest, PluginHost
    from pyctrl._apiserver.scheme.resources import ResourceType
    from pyctrl._apiserver.storage.store import StorageKey

__all__ = [
    "EXEMPT_KINDS",
    "MUTATING",
    "VALIDATING",
    "Answer",
    "Attributes",
    "Hook",
    "Invocation",
    "is_exempt",
    "is_namespace_resource",
    "matches_any",
    "namespace_selector_matches",
    "object_selector_matches",
    "parse_configuration",
    "rule_matches",
    "selector",
    "verify_admission_response",
]

MUTATING: StorageKey = ("admissionregistration.k8s.io", "mutatingwebhookconfigurations")
VALIDATING: StorageKey = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")

# IsExemptAdmissionConfigurationResource: webhooks never see these, so a broken webhook
# cannot prevent its own configuration from being fixed or removed.
EXEMPT_KINDS = frozenset(
    {
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
    }
)


def is_exempt(rt: ResourceType) -> bool:
    """``IsExemptAdmissionConfigurationResource``: no webhook nor policy sees ``rt``."""
    return rt.group == "admissionregistration.k8s.io" and rt.kind in EXEMPT_KINDS


# --- webhook configurations -------------------------------------------------------------------


@dataclass(frozen=True)
class Hook:
    """One webhook of a stored configuration, parsed."""

    name: str
    uid: str
    rules: tuple[dict[str, Any], ...]
    equivalent: bool
    namespace_selector: LabelSelector | None
    object_selector: LabelSelector | None
    namespace_selector_error: str
    object_selector_error: str
    ignore_failures: bool
    side_effects: str | None
    timeout: int
    reinvoke_if_needed: bool
    client_config: Any
    review_versions: tuple[str, ...]
    match_conditions: tuple[MatchCondition, ...] = ()
    """``matchConditions``, compiled (`pyctrl._apiserver.admission.plugin.cel`)."""


def selector(raw: Any) -> tuple[LabelSelector | None, str]:
    if raw is None:
        # kube-apiserver defaults both selectors to {} (everything): null never reaches it.
        return None, ""
    if not isinstance(raw, dict):
        return None, f"invalid label selector: {raw!r}"
    try:
        return selector_from_object(raw), ""
    except SelectorError as exc:
        return None, str(exc)


def parse_configuration(config: dict[str, Any]) -> list[Hook]:
    config_name = str((config.get("metadata") or {}).get("name") or "")
    hooks: list[Hook] = []
    for index, raw in enumerate(config.get("webhooks") or []):
        if not isinstance(raw, dict):
            continue
        name = str(raw.get("name") or "")
        ns_selector, ns_error = selector(raw.get("namespaceSelector"))
        obj_selector, obj_error = selector(raw.get("objectSelector"))
        timeout = raw.get("timeoutSeconds")
        side_effects = raw.get("sideEffects")
        hooks.append(
            Hook(
                name=name,
                uid=f"{config_name}/{name}/{index}",
                rules=tuple(r for r in raw.get("rules") or [] if isinstance(r, dict)),
                equivalent=(raw.get("matchPolicy") or "Equivalent") == "Equivalent",
                namespace_selector=ns_selector,
                object_selector=obj_selector,
                namespace_selector_error=ns_error,
                object_selector_error=obj_error,
                ignore_failures=raw.get("failurePolicy") == "Ignore",
                side_effects=side_effects if isinstance(side_effects, str) else None,
                timeout=timeout
                if isinstance(timeout, int) and not isinstance(timeout, bool) and timeout > 0
                else DEFAULT_TIMEOUT_SECONDS,
                reinvoke_if_needed=raw.get("reinvocationPolicy") == "IfNeeded",
                client_config=raw.get("clientConfig"),
                review_versions=tuple(
                    str(v) for v in raw.get("admissionReviewVersions") or [] if isinstance(v, str)
                ),
                match_conditions=tuple(compile_match_conditions(raw.get("matchConditions"), None)),
            )
        )
    return hooks


def namespace_selector_matches(
    host: PluginHost, request: AdmissionRequest, namespace: str, selector_: LabelSelector | None
) -> tuple[bool, StatusError | None]:
    """``namespace.Matcher.MatchNamespaceSelector`` (webhooks and policies).

    Cluster-scoped objects always match; a Namespace being created or updated matches on
    its own labels, anything else on its namespace's stored labels.
    """
    is_namespace = is_namespace_resource(request.resource)
    if not namespace and not is_namespace:
        return True, None
    if selector_ is None or selector_.empty:
        return True, None
    if is_namespace and not request.subresource and request.operation in ("CREATE", "UPDATE"):
        labels = ((request.obj or {}).get("metadata") or {}).get("labels")
    else:
        stored = host.store.get(NAMESPACES, "", namespace)
        if stored is None:
            return False, not_found("", "namespaces", namespace)
        labels = (stored.get("metadata") or {}).get("labels")
    return selector_.matches(labels if isinstance(labels, dict) else None), None


def object_selector_matches(
    selector_: LabelSelector | None, obj: dict[str, Any] | None, old: dict[str, Any] | None
) -> bool:
    """``object.Matcher.MatchObjectSelector``: the new or the old object's labels."""
    if selector_ is None or selector_.empty:
        return True
    for candidate in (obj, old):
        if candidate is None:
            continue
        labels = (candidate.get("metadata") or {}).get("labels")
        if selector_.matches(labels if isinstance(labels, dict) else None):
            return True
    return False


def matches_any(items: Any, requested: str) -> bool:
    return isinstance(items, list) and any(i in ("*", requested) for i in items)


def is_namespace_resource(rt: ResourceType) -> bool:
    return rt.group == "" and rt.version == "v1" and rt.plural == "namespaces"


def rule_matches(  # noqa: PLR0911 - a rule's match: operations, groups, versions, resources, scope
    rule: dict[str, Any], rt: ResourceType, subresource: str, operation: str, namespace: str
) -> bool:
    """``rules.Matcher.Matches``."""
    scope = rule.get("scope") or "*"
    if scope == "Namespaced":
        if is_namespace_resource(rt) or not namespace:
            return False
    elif scope == "Cluster":
        if not (is_namespace_resource(rt) or not namespace):
            return False
    elif scope != "*":
        return False
    if not matches_any(rule.get("operations"), operation):
        return False
    if not matches_any(rule.get("apiGroups"), rt.group):
        return False
    if not matches_any(rule.get("apiVersions"), rt.version):
        return False
    for entry in rule.get("resources") or []:
        if not isinstance(entry, str):
            continue
        resource, _, sub = entry.partition("/")
        if (resource in ("*", rt.plural)) and (sub in ("*", subresource)):
            return True
    return False


@dataclass
class Attributes:
    """One admission request as the matchers and review builders see it."""

    request: AdmissionRequest
    namespace: str
    """kube-apiserver's ``attr.GetNamespace()``: a Namespace object's own name."""
    obj: dict[str, Any] | None
    warnings: list[str]


@dataclass(frozen=True)
class Invocation:
    hook: Hook
    rt: ResourceType
    """The version of the resource the webhook gets (differs for an equivalent match)."""


@dataclass
class Answer:
    allowed: bool
    status: Any
    patch: bytes = b""
    patch_type: str = ""
    warnings: list[str] = field(default_factory=list)


def verify_admission_response(  # noqa: PLR0912 - VerifyAdmissionResponse: one refusal per field of the response
    uid: str, mutating: bool, review_version: str, answer: Any
) -> Answer:
    """``VerifyAdmissionResponse``; ValueError with kube-apiserver's wording."""
    if not isinstance(answer, dict):
        raise ValueError("webhook response was absent")
    response = answer.get("response")
    if not isinstance(response, dict):
        raise ValueError("webhook response was absent")
    if review_version == "v1":
        got_uid = response.get("uid")
        if got_uid != uid:
            raise ValueError(
                f"expected response.uid={_quote(uid)}, got {_quote(str(got_uid or ''))}"
            )
        api_version, kind = str(answer.get("apiVersion") or ""), str(answer.get("kind") or "")
        if api_version != "admission.k8s.io/v1" or kind != "AdmissionReview":
            gv = api_version if "/" in api_version else f"/{api_version}"
            raise ValueError(
                "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, "
                f"got {gv}, Kind={kind}"
            )
    raw_patch = response.get("patch")
    patch_type = response.get("patchType")
    patch = b""
    if raw_patch:
        if not isinstance(raw_patch, str):
            raise ValueError("response.patch must be a base64-encoded string")
        try:
            patch = base64.b64decode(raw_patch, validate=True)
        except binascii.Error as exc:
            raise ValueError(f"illegal base64 data in response.patch: {exc}") from None
    if mutating:
        if review_version == "v1":
            if patch and patch_type is None:
                raise ValueError("webhook returned response.patch but not response.patchType")
            if not patch and patch_type is not None:
                raise ValueError("webhook returned response.patchType but not response.patch")
            if patch_type is not None and not patch_type:
                raise ValueError('webhook returned invalid response.patchType of ""')
        elif patch:
            patch_type = "JSONPatch"
    else:
        if patch:
            raise ValueError("validating webhook may not return response.patch")
        if patch_type is not None:
            raise ValueError("validating webhook may not return response.patchType")
    warnings = response.get("warnings")
    return Answer(
        allowed=response.get("allowed") is True,
        status=response.get("status"),
        patch=patch,
        patch_type=str(patch_type or ""),
        warnings=[w for w in warnings if isinstance(w, str)] if isinstance(warnings, list) else [],
    )
