"""ValidatingWebhookConfigurations (pkg/registry/admissionregistration/...).

Each webhook's failure policy, match policy, side effects and timeout are defaulted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.registry import defaults as _defaults
from pyctrl._apiserver.registry.printing import name_count_age
from pyctrl._apiserver.registry.rest import Strategy

if TYPE_CHECKING:
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["ValidatingWebhookConfigurationStrategy"]


def set_defaults(obj: dict[str, Any]) -> None:
    """``SetDefaults_ValidatingWebhook``."""
    _defaults.webhook_config(obj, False)


class ValidatingWebhookConfigurationStrategy(Strategy):
    """The rules of ValidatingWebhookConfigurations."""

    has_generation = True
    printer = name_count_age("Webhooks", "webhooks")

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_ValidatingWebhookConfiguration``."""
        set_defaults(obj)
