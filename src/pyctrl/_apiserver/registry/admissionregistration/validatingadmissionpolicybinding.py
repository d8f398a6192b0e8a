"""ValidatingAdmissionPolicyBindings (kube-apiserver's pkg/registry/admissionregistration).

Defaulted and validated (their CEL expressions compiled) as kube-apiserver does; see
`pyctrl._apiserver.registry.validation.admissionpolicy`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.registry.printing import policy_binding
from pyctrl._apiserver.registry.rest import Strategy
from pyctrl._apiserver.registry.validation import admissionpolicy as _policy

if TYPE_CHECKING:
    from pyctrl._apimachinery.field import Cause
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["ValidatingAdmissionPolicyBindingStrategy"]


class ValidatingAdmissionPolicyBindingStrategy(Strategy):
    """The rules of ValidatingAdmissionPolicyBindings."""

    has_generation = True
    printer = policy_binding

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_ValidatingAdmissionPolicyBinding``."""
        _policy.default_binding(obj)

    def validate_create(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        """The metadata rules, then the spec's."""
        return super().validate_create(rt, obj) + _policy.validate_binding(obj, validating=True)
