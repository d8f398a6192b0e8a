"""Which requests a policy or binding applies to (``policy/matching``, ``policy_matcher``).

A policy's ``matchConstraints`` and a binding's ``matchResources`` are both
``MatchResources``: a namespace selector, an object selector, ``resourceRules`` (rules
with optional ``resourceNames``), ``excludeResourceRules`` and a ``matchPolicy``. The
matcher checks the selectors first, then the exclusions, then the rules (an
``Equivalent`` policy also matches a rule written for another version of the same
resource); selector errors only count once the rules match.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.admission.plugin.cel import request_namespace
from pyctrl._apiserver.admission.plugin.webhook.config import (
    namespace_selector_matches,
    object_selector_matches,
    rule_matches,
    selector,
)
from pyctrl._apiserver.apimachinery.errors import internal

if TYPE_CHECKING:
    from pyctrl._apiserver.admission.interfaces import AdmissionRequest, PluginHost
    from pyctrl._apiserver.apimachinery.fields import LabelSelector
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["MatchResources", "Matched"]


@dataclass(frozen=True)
class Matched:
    """A match: the version of the resource the policy sees (differs for an equivalent)."""

    rt: ResourceType


@dataclass(frozen=True)
class MatchResources:
    """A parsed ``MatchResources``."""

    namespace_selector: LabelSelector | None
    object_selector: LabelSelector | None
    selector_error: str
    rules: tuple[dict[str, Any], ...]
    exclude: tuple[dict[str, Any], ...]
    equivalent: bool

    @classmethod
    def parse(cls, raw: Any) -> MatchResources | None:
        """None for a missing ``MatchResources``."""
        if not isinstance(raw, dict):
            return None
        ns_selector, ns_error = selector(raw.get("namespaceSelector") or {})
        obj_selector, obj_error = selector(raw.get("objectSelector") or {})
        return cls(
            namespace_selector=ns_selector,
            object_selector=obj_selector,
            selector_error=ns_error or obj_error,
            rules=tuple(r for r in raw.get("resourceRules") or [] if isinstance(r, dict)),
            exclude=tuple(r for r in raw.get("excludeResourceRules") or [] if isinstance(r, dict)),
            equivalent=(raw.get("matchPolicy") or "Equivalent") == "Equivalent",
        )

    def matches(self, host: PluginHost, request: AdmissionRequest) -> Matched | None:
        """``Matcher.Matches``: the match, None, or `StatusError` for a selector problem."""
        namespace = request_namespace(request)
        ns_ok, ns_error = namespace_selector_matches(
            host, request, namespace, self.namespace_selector
        )
        if not ns_ok and ns_error is None:
            return None
        if not object_selector_matches(self.object_selector, request.obj, request.old):
            return None
        if self._rule_match(host, request, namespace, self.exclude) is not None:
            return None
        matched = (
            request.resource
            if not self.rules
            else self._rule_match(host, request, namespace, self.rules)
        )
        if matched is None:
            return None
        if ns_error is not None:
            raise ns_error
        if self.selector_error:
            raise internal(self.selector_error)
        return Matched(matched)

    def _rule_match(
        self,
        host: PluginHost,
        request: AdmissionRequest,
        namespace: str,
        rules: tuple[dict[str, Any], ...],
    ) -> ResourceType | None:
        """``matchesResourceRules``: the matched version of the resource, or None."""
        rt, sub, op = request.resource, request.subresource, request.operation
        for rule in rules:
            if rule_matches(rule, rt, sub, op, namespace) and _name_matches(rule, request):
                return rt
        if not self.equivalent:
            return None
        for rule in rules:
            for other in host.registry.for_storage(rt.storage_key):
                if not other.served or (other.group, other.version, other.plural) == (
                    rt.group,
                    rt.version,
                    rt.plural,
                ):
                    continue
                if sub and sub not in other.subresources:
                    continue
                if rule_matches(rule, other, sub, op, namespace) and _name_matches(rule, request):
                    return other
        return None


def _name_matches(rule: dict[str, Any], request: AdmissionRequest) -> bool:
    names = rule.get("resourceNames")
    return not names or (isinstance(names, list) and request.name in names)
