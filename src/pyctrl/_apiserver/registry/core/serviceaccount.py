"""ServiceAccounts (kube-apiserver's pkg/registry/core/serviceaccount).

An update may create one, a delete answers the deleted object, and ``kubectl get`` counts
its secrets.
"""

from __future__ import annotations

from pyctrl._apiserver.registry.printing import name_count_age
from pyctrl._apiserver.registry.rest import Strategy

__all__ = ["ServiceAccountStrategy"]


class ServiceAccountStrategy(Strategy):
    """The rules of ServiceAccounts."""

    allow_create_on_update = True
    return_deleted_object = True
    printer = name_count_age("Secrets", "secrets")
