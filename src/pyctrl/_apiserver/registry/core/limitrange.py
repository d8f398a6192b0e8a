"""LimitRanges (kube-apiserver's pkg/registry/core/limitrange): an update may create one."""

from __future__ import annotations

from pyctrl._apiserver.registry.rest import Strategy

__all__ = ["LimitRangeStrategy"]


class LimitRangeStrategy(Strategy):
    """The rules of LimitRanges."""

    allow_create_on_update = True
