"""ResourceQuotas (kube-apiserver's pkg/registry/core/resourcequota): status starts empty."""

from __future__ import annotations

from pyctrl._apiserver.registry.rest import Strategy

__all__ = ["ResourceQuotaStrategy"]


class ResourceQuotaStrategy(Strategy):
    """The rules of ResourceQuotas."""

    initial_status = {}  # noqa: RUF012 - read only, copied on use
