"""The Kubernetes authorizer library of CEL (``k8s.io/apiserver/pkg/cel/library/authz.go``).

Admission policies (and webhook ``matchConditions``) see an ``authorizer`` variable that
asks the API server's authorizer about the request's user::

    authorizer.group('apps').resource('deployments').namespace('ns').name('x')
        .check('delete').allowed()
    authorizer.path('/healthz').check('get').allowed()
    authorizer.serviceAccount('ns', 'sa').group('').resource('pods').check('list').reason()
    authorizer.requestResource.check('update').allowed()

The server supplies the question's answer through an `AuthorizeFunc`; this module only
builds the question (`ResourceCheck`, `PathCheck`) and holds the answer (`Decision`).
``fieldSelector`` and ``labelSelector`` are recorded and passed on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from pyctrl._apiextensions.cel.types import BOOL, DYN, STRING, T
from pyctrl._apiextensions.cel.values import CelEvalError

__all__ = [
    "AUTHZ_METHODS",
    "AuthorizeFunc",
    "Authorizer",
    "Decision",
    "PathCheck",
    "ResourceCheck",
]


@dataclass(frozen=True, slots=True)
class ResourceCheck:
    """A resource question being built: ``authorizer.group(g).resource(r)...``."""

    authorizer: Authorizer
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    field_selector: str = ""
    label_selector: str = ""


@dataclass(frozen=True, slots=True)
class PathCheck:
    """A non-resource question: ``authorizer.path('/healthz')``."""

    authorizer: Authorizer
    path: str


@dataclass(frozen=True, slots=True)
class Decision:
    """The authorizer's answer: ``allowed()``, ``reason()``, ``errored()``, ``error()``."""

    allowed: bool
    reason: str = ""
    error: str = ""


AuthorizeFunc = Callable[[Any, str, "ResourceCheck | PathCheck"], Decision]
"""``(user, verb, question) -> Decision``, supplied by the server."""


@dataclass(frozen=True, slots=True)
class Authorizer:
    """The ``authorizer`` variable: the request's user (or a service account) and the server."""

    user: Any
    """Whom the questions are about (opaque here; the server's `AuthorizeFunc` reads it)."""
    authorize: AuthorizeFunc
    request: tuple[str, str, str, str, str] = ("", "", "", "", "")
    """The request's group, resource, subresource, namespace and name."""

    @property
    def request_resource(self) -> ResourceCheck:
        """``authorizer.requestResource``: the resource of the request being admitted."""
        return ResourceCheck(self, *self.request)


def _bad(method: str, target: Any) -> CelEvalError:
    return CelEvalError(f"no such overload: {type(target).__name__}.{method}")


def _group(target: Any, group: str) -> ResourceCheck:
    if not isinstance(target, Authorizer):
        raise _bad("group", target)
    return ResourceCheck(target, group=group)


def _path(target: Any, path: str) -> PathCheck:
    if not isinstance(target, Authorizer):
        raise _bad("path", target)
    return PathCheck(target, path)


def _service_account(target: Any, namespace: str, name: str) -> Authorizer:
    if not isinstance(target, Authorizer):
        raise _bad("serviceAccount", target)
    return Authorizer(f"system:serviceaccount:{namespace}:{name}", target.authorize)


def _setter(field: str) -> Callable[[Any, Any], ResourceCheck]:
    def set_field(target: Any, value: Any) -> ResourceCheck:
        if not isinstance(target, ResourceCheck) or not isinstance(value, str):
            raise _bad(field, target)
        changes: dict[str, Any] = {field: value}
        return dataclasses.replace(target, **changes)

    return set_field


def _check(target: Any, verb: Any) -> Decision:
    if not isinstance(target, ResourceCheck | PathCheck) or not isinstance(verb, str):
        raise _bad("check", target)
    return target.authorizer.authorize(target.authorizer.user, verb, target)


def _decision(method: str) -> Callable[[Any], Any]:
    def read(target: Any) -> Any:
        if not isinstance(target, Decision):
            raise _bad(method, target)
        if method == "allowed":
            return target.allowed
        if method == "reason":
            return target.reason
        if method == "errored":
            return bool(target.error)
        return target.error

    return read


AUTHZ_METHODS: Final[dict[str, tuple[Callable[..., Any], T, tuple[int, ...]]]] = {
    "group": (_group, DYN, (1,)),
    "path": (_path, DYN, (1,)),
    "serviceAccount": (_service_account, DYN, (2,)),
    "resource": (_setter("resource"), DYN, (1,)),
    "subresource": (_setter("subresource"), DYN, (1,)),
    "namespace": (_setter("namespace"), DYN, (1,)),
    "name": (_setter("name"), DYN, (1,)),
    "fieldSelector": (_setter("field_selector"), DYN, (1,)),
    "labelSelector": (_setter("label_selector"), DYN, (1,)),
    "check": (_check, DYN, (1,)),
    "allowed": (_decision("allowed"), BOOL, (0,)),
    "reason": (_decision("reason"), STRING, (0,)),
    "errored": (_decision("errored"), BOOL, (0,)),
    "error": (_decision("error"), STRING, (0,)),
}
"""The library's receiver functions, merged into the CEL method table."""
