"""pyctrl: Kubernetes operators in Python, the controller-runtime way.

The everyday names are re-exported here, as controller-runtime's ``alias.go`` does; each
lives in a module named after the controller-runtime package it mirrors:

- `pyctrl.reconcile`: `Request`, `Result`, the `Reconciler` and `ObjectReconciler`
  protocols, `TerminalError`.
- `pyctrl.errors`: the error tree, API errors by status (`NotFoundError`...).
- `pyctrl.meta`: `ObjectMeta`, `Condition` and condition helpers, `GroupVersionKind`.
- `pyctrl.resource`: `CustomResource` (typed custom resources), `Unstructured`.
- `pyctrl.scheme`: `Scheme`, mapping Python types to GroupVersionKinds.
- `pyctrl.manager`, `pyctrl.builder`: `Manager`, `controller_managed_by`,
  `webhook_managed_by`; `pyctrl.app`: `Operator`.
- `pyctrl.client`, `pyctrl.cache`, `pyctrl.config`: `Client`, `Cache`, `get_config`.

Names from the modules that load kubernetes-asyncio (the manager, client, cache...) are
imported on first use, so ``import pyctrl.crd`` stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from pyctrl._version import __version__
from pyctrl.errors import (
    AlreadyExistsError,
    APIError,
    ConflictError,
    NotFoundError,
    PyctrlError,
    TerminalError,
    ignore_already_exists,
    ignore_not_found,
)
from pyctrl.meta import (
    Condition,
    GroupVersionKind,
    KubeModel,
    ObjectMeta,
    ObjectReference,
    OwnerReference,
    find_status_condition,
    set_status_condition,
)
from pyctrl.reconcile import ObjectReconciler, Reconciler, Request, Result
from pyctrl.resource import CustomResource, PrinterColumn, ScaleSubresource, Unstructured
from pyctrl.scheme import Scheme

if TYPE_CHECKING:
    from pyctrl.app import Operator
    from pyctrl.builder import controller_managed_by, webhook_managed_by
    from pyctrl.cache import Cache, CacheOptions
    from pyctrl.client import Client
    from pyctrl.config import get_config
    from pyctrl.manager import Manager

__all__ = [
    "APIError",
    "AlreadyExistsError",
    "Cache",
    "CacheOptions",
    "Client",
    "Condition",
    "ConflictError",
    "CustomResource",
    "GroupVersionKind",
    "KubeModel",
    "Manager",
    "NotFoundError",
    "ObjectMeta",
    "ObjectReconciler",
    "ObjectReference",
    "Operator",
    "OwnerReference",
    "PrinterColumn",
    "PyctrlError",
    "Reconciler",
    "Request",
    "Result",
    "ScaleSubresource",
    "Scheme",
    "TerminalError",
    "Unstructured",
    "__version__",
    "controller_managed_by",
    "find_status_condition",
    "get_config",
    "ignore_already_exists",
    "ignore_not_found",
    "set_status_condition",
    "webhook_managed_by",
]


_LAZY = {
    "Cache": "pyctrl.cache",
    "CacheOptions": "pyctrl.cache",
    "Client": "pyctrl.client",
    "Manager": "pyctrl.manager",
    "Operator": "pyctrl.app",
    "controller_managed_by": "pyctrl.builder",
    "get_config": "pyctrl.config",
    "webhook_managed_by": "pyctrl.builder",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pyctrl' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
