"""What a request carries through the server: k8s.io/apiserver's ``endpoints/request``.

kube-apiserver's filters put the authenticated user and the parsed request info on the
request's context, and the handlers read them there. Here the same values ride on the
aiohttp request: `USER` (set by `pyctrl._apiserver.endpoints.filters`), `DEPRECATION` (set
by the installer for a deprecated CRD version). `route` parses a path into its `Target`
(``RequestInfoFactory``), and `Router` remembers the paths it resolved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiohttp import web

from pyctrl._apiserver.user import User

if TYPE_CHECKING:
    from pyctrl._apiserver.scheme.resources import Registry, ResourceType

__all__ = ["DEPRECATION", "USER", "Router", "Target", "route", "truthy"]

USER = web.RequestKey("pyctrl_envtest_user", User)
"""Where the authentication filter leaves the authenticated `User` on the request."""

DEPRECATION = web.RequestKey("pyctrl.envtest.deprecation", str)
"""The deprecation warning of a deprecated CRD version, sent on every response to it."""


@dataclass(frozen=True)
class Target:
    """A request path resolved to a served resource (kube-apiserver's ``RequestInfo``).

    Attributes:
        rt: The resource type served at the path.
        namespace: The namespace of the path, None for cluster-wide or cluster-scoped.
        name: The object's name, None on a collection path.
        subresource: The subresource (``status``, ``scale``, ...), empty for the object.
        legacy_watch: The path had the deprecated ``/watch/`` prefix.
    """

    rt: ResourceType
    namespace: str | None
    name: str | None
    subresource: str
    legacy_watch: bool


def truthy(value: str | None) -> bool:
    """Whether a query parameter reads as true (``true``, ``1``, ``yes``)."""
    return value is not None and value.lower() in ("true", "1", "yes")


_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


def route(registry: Registry, path: str) -> Target | None:  # noqa: PLR0911, PLR0912 - the mux's and go-restful's path parsing, one return per refusal
    """The served resource of ``path``, or None where the mux answers 404."""
    parts = [p for p in path.split("/") if p != ""]
    if not parts or parts[0] not in ("api", "apis"):
        return None
    if parts[0] == "api":
        if len(parts) < 2:
            return None
        group, version, rest = "", parts[1], parts[2:]
    else:
        if len(parts) < 3:
            return None
        group, version, rest = parts[1], parts[2], parts[3:]
    legacy_watch = False
    if rest and rest[0] == "watch":
        legacy_watch = True
        rest = rest[1:]
    if not rest:
        return None
    namespace: str | None = None
    if rest[0] == "namespaces" and len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
        namespace = rest[1]
        rest = rest[2:]
    if len(rest) > 3:
        return None
    rt = registry.lookup(group, version, rest[0])
    if rt is None:
        return None
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else ""
    if rt.namespaced and namespace is None and name is not None:
        return None
    if not rt.namespaced and namespace is not None:
        return None
    if sub and sub not in rt.subresources:
        return None
    return Target(rt, namespace, name, sub, legacy_watch)


class Router:
    """`route` with memory: the paths resolved before, as kube-apiserver installs its routes once.

    A remembered target holds while the registry serves the same type object at its
    group, version and resource (a CRD's change makes new type objects); at most
    `ROUTES` paths are remembered.
    """

    ROUTES = 4096
    """How many resolved paths are remembered (all are forgotten when it is reached)."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._targets: dict[str, Target] = {}

    def route(self, path: str) -> Target | None:
        """The served resource of ``path``, or None where the mux answers 404."""
        target = self._targets.get(path)
        if target is not None:
            rt = target.rt
            if self.registry.lookup(rt.group, rt.version, rt.plural) is rt:
                return target
        target = route(self.registry, path)
        if target is not None:
            if len(self._targets) >= self.ROUTES:
                self._targets.clear()
            self._targets[path] = target
        return target
