"""PodDisruptionBudgets (kube-apiserver's pkg/registry/policy/poddisruptionbudget).

Spec changes count in ``metadata.generation``; status starts with zero counts.
"""

from __future__ import annotations

from pyctrl._apiserver.registry.rest import Strategy

__all__ = ["PodDisruptionBudgetStrategy"]


class PodDisruptionBudgetStrategy(Strategy):
    """The rules of PodDisruptionBudgets."""

    has_generation = True
    initial_status = {  # noqa: RUF012 - read only, copied on use
        "disruptionsAllowed": 0,
        "currentHealthy": 0,
        "desiredHealthy": 0,
        "expectedPods": 0,
    }
