"""pyctrl: Kubernetes operators in Python, the controller-runtime way.

The everyday names are re-exported here, as controller-runtime's ``alias.go`` does; each
lives in a module named after the controller-runtime package it mirrors:

- `pyctrl.reconcile`: `Request`, `Result`, the `Reconciler` protocol, `TerminalError`.
- `pyctrl.errors`: the error tree, API errors by status (`NotFoundError`...).
- `pyctrl.meta`: `ObjectMeta`, `Condition` and condition helpers, `GroupVersionKind`.
- `pyctrl.resource`: `CustomResource` (typed custom resources), `Unstructured`.
- `pyctrl.scheme`: `Scheme`, mapping Python types to GroupVersionKinds.
"""

from __future__ import annotations

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
    OwnerReference,
    find_status_condition,
    set_status_condition,
)
from pyctrl.reconcile import Reconciler, Request, Result
from pyctrl.resource import CustomResource, PrinterColumn, ScaleSubresource, Unstructured
from pyctrl.scheme import Scheme

__all__ = [
    "APIError",
    "AlreadyExistsError",
    "Condition",
    "ConflictError",
    "CustomResource",
    "GroupVersionKind",
    "KubeModel",
    "NotFoundError",
    "ObjectMeta",
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
    "find_status_condition",
    "ignore_already_exists",
    "ignore_not_found",
    "set_status_condition",
]

__version__ = "0.1.0"
