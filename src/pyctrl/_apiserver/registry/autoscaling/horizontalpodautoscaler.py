"""HorizontalPodAutoscalers (pkg/registry/autoscaling/horizontalpodautoscaler).

Status starts empty.
"""

from __future__ import annotations

from pyctrl._apiserver.registry.rest import Strategy

__all__ = ["HorizontalPodAutoscalerStrategy"]


class HorizontalPodAutoscalerStrategy(Strategy):
    """The rules of HorizontalPodAutoscalers."""

    initial_status = {}  # noqa: RUF012 - read only, copied on use
