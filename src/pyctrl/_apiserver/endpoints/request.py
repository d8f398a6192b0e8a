"""What a request carries through the server: k8s.io/apiserver's ``endpoints/request``.

kube-apiserver's filters put the authenticated user and the parsed request info on the
request's context, and the handlers read them there. Here the same values ride on the
aiohttp request: `USER` (set by `pyctrl._apiserver.endpoints.filters`), `DEPRECATION` (set
by the installer for a deprecated CRD version) and the routed `Target`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiohttp import web

from pyctrl._apiserver.authentication import User

if TYPE_CHECKING:
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["DEPRECATION", "USER", "Target", "truthy"]

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
