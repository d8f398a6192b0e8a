"""CronJobs (kube-apiserver's pkg/registry/batch/cronjob).

``SetDefaults_CronJob``: concurrency policy, suspend and history limits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.registry import defaults as _defaults
from pyctrl._apiserver.registry.rest import Strategy

if TYPE_CHECKING:
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["CronJobStrategy"]


class CronJobStrategy(Strategy):
    """The rules of CronJobs."""

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_CronJob``."""
        _defaults.cronjob(obj)
