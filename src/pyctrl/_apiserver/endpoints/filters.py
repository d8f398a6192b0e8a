"""Request filters: k8s.io/apiserver's ``endpoints/filters`` and ``server/filters``.

kube-apiserver wraps its handlers in a chain of filters. The embedded server keeps those
that change answers: `authentication` (bearer tokens; 401 without a valid one, the
health and version paths open as for ``system:anonymous``) with authorization by RBAC
(403), as an aiohttp middleware; `recovered`, which turns a handler's `StatusError` into
its ``Status`` answer and any other exception into 500 ``InternalError`` (as
``WithPanicRecovery``) and puts a deprecated version's warning first (as the CRD
handler's warning recorder); and `inject_faults`, the latency and failures that
`pyctrl._apiserver.faults` asks for.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from aiohttp import web

from pyctrl._apiserver.admission.interfaces import REQUEST_USER, UserInfo
from pyctrl._apiserver.apimachinery.errors import StatusError, unauthorized
from pyctrl._apiserver.authorization import forbidden_error, request_attributes
from pyctrl._apiserver.endpoints.request import DEPRECATION, USER, truthy
from pyctrl._apiserver.endpoints.responsewriters import (
    add_warning_first,
    internal_error,
    status_response,
)

if TYPE_CHECKING:
    from aiohttp.typedefs import Handler, Middleware

    from pyctrl._apiserver.authentication import Authenticator
    from pyctrl._apiserver.authorization import Authorizer
    from pyctrl._apiserver.endpoints.request import Target
    from pyctrl._apiserver.faults import Faults

__all__ = [
    "API_ROUTE",
    "PUBLIC_PATHS",
    "authentication",
    "inject_faults",
    "non_resource_faults",
    "recovered",
    "resource_names",
]

logger = logging.getLogger("pyctrl.envtest.server")

PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version"})
"""Paths served without authentication (kube-apiserver allows them to anyone)."""


API_ROUTE = "api"
"""The name of the route serving resources; its requests meet faults once routed."""


def _public(path: str) -> bool:
    return path in PUBLIC_PATHS or path.startswith(("/healthz/", "/livez/", "/readyz/"))


def authentication(authn: Authenticator, authz: Authorizer) -> Middleware:
    """The middleware authenticating each request's bearer token and authorizing it by RBAC.

    The user is left on the request (`pyctrl._apiserver.endpoints.request.USER`) and in the
    admission context (`REQUEST_USER`); ``system:masters`` skips authorization.
    """

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        path = request.path
        if not _public(path) and authn.enabled:
            user = authn.authenticate_header(request.headers.get("Authorization", ""))
            if user is None:
                return status_response(unauthorized())
            request[USER] = user
            # Each request runs in its own task: admission reads who sent it from here.
            REQUEST_USER.set(UserInfo(user.name, user.uid, list(user.groups)))
            if not user.privileged:
                watch = truthy(request.query.get("watch"))
                attrs = request_attributes(request.method, path, watch, user)
                if not authz.authorize(attrs)[0]:
                    return status_response(forbidden_error(attrs))
        return await handler(request)

    return middleware


async def recovered(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Serve ``request`` with ``handler``, answering its errors as kube-apiserver does."""
    try:
        response = await handler(request)
    except StatusError as exc:
        response = status_response(exc)
    except (ConnectionResetError, asyncio.CancelledError):
        raise
    except Exception as exc:
        logger.exception("internal error serving %s %s", request.method, request.path)
        response = internal_error(exc)
    warning = request.get(DEPRECATION)
    if warning and not response.prepared:
        # The CRD handler warns on every request of a deprecated version, first.
        add_warning_first(response, warning)
    return response


def resource_names(target: Target) -> tuple[str, ...]:
    """The names a fault's resource filter matches for a request of ``target``."""
    rt = target.rt
    names: tuple[str, ...] = (rt.plural, rt.qualified)
    if target.subresource:
        names = (*names, f"{rt.plural}/{target.subresource}")
    return names


async def inject_faults(faults: Faults, verb: str, names: tuple[str, ...]) -> None:
    """Delay or fail the request as the active faults say for its verb and resource names.

    A request for no resource (discovery, OpenAPI, ``/version``, health) has no names: only
    faults without a resource filter reach it.
    """
    if not faults.active:
        return
    delay = faults.latency_for(verb, names)
    if delay > 0:
        await faults.clock.sleep(delay)
    failure = faults.failure_for(verb, names)
    if failure is not None:
        raise failure


def non_resource_faults(faults: Faults) -> Middleware:
    """The middleware injecting faults into the requests no resource route serves.

    Discovery, OpenAPI, ``/version`` and health answers are served by routes of their
    own; a fault without a resource filter reaches them too, so a test can make the whole
    server unreachable. Resource requests meet their faults once routed (`inject_faults`).
    """

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if faults.active and request.match_info.route.name != API_ROUTE:
            try:
                await inject_faults(faults, request.method.lower(), ())
            except StatusError as exc:
                return status_response(exc)
        return await handler(request)

    return middleware
