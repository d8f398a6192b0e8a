"""Request filters: k8s.io/apiserver's ``endpoints/filters`` and ``server/filters``.

kube-apiserver wraps its handlers in a chain of filters. The embedded server keeps those
that change answers, in `handler_chain` (one aiohttp middleware): authentication
(bearer tokens; 401 without a valid one, the health and version paths open as for
``system:anonymous``), authorization by RBAC (403) and the faults of the requests no
resource route serves; `recovered`, which turns a handler's `StatusError` into
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
    "handler_chain",
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


def handler_chain(authn: Authenticator, authz: Authorizer, faults: Faults) -> Middleware:
    """The filters every request meets before its route's handler, as one middleware.

    Authentication of the bearer token (401 without a valid one; the user is left on the
    request as `pyctrl._apiserver.endpoints.request.USER`, where the handlers' request
    context reads it) and authorization by RBAC (403; ``system:masters`` skips it); then,
    for the requests no resource route serves, the faults `non_resource_faults` names.
    """

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        path = request.path
        if not _public(path) and authn.enabled:
            user = authn.authenticate_header(request.headers.get("Authorization", ""))
            if user is None:
                return status_response(unauthorized())
            request[USER] = user
            if not user.privileged:
                watch = truthy(request.query.get("watch"))
                attrs = request_attributes(request.method, path, watch, user)
                if not authz.authorize(attrs)[0]:
                    return status_response(forbidden_error(attrs))
        if faults.active and request.match_info.route.name != API_ROUTE:
            try:
                await non_resource_faults(faults, request)
            except StatusError as exc:
                return status_response(exc)
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


async def non_resource_faults(faults: Faults, request: web.Request) -> None:
    """The faults of a request no resource route serves (`handler_chain` calls it).

    Discovery, OpenAPI, ``/version`` and health answers are served by routes of their
    own; a fault without a resource filter reaches them too, so a test can make the whole
    server unreachable. Resource requests meet their faults once routed (`inject_faults`).
    """
    await inject_faults(faults, request.method.lower(), ())
