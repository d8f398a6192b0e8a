"""Create: k8s.io/apiserver's ``endpoints/handlers/create.go``.

`create_resource` stores a new object; `create_eviction` and `create_token_request`
answer the ``pods/eviction`` and ``serviceaccounts/token`` subresources, and
`create_review` the TokenReview and (Self)SubjectAccessReview kinds, which are answered
and never stored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyctrl._apiserver.apimachinery.errors import not_found
from pyctrl._apiserver.authentication import token_request, token_review
from pyctrl._apiserver.authorization import subject_access_review
from pyctrl._apiserver.endpoints.handlers.decode import check_body_kind, decode_object
from pyctrl._apiserver.endpoints.handlers.rest import render_one, request_context
from pyctrl._apiserver.endpoints.negotiation import negotiate_request
from pyctrl._apiserver.endpoints.request import USER
from pyctrl._apiserver.endpoints.responsewriters import respond
from pyctrl._apiserver.registry.eviction import evict
from pyctrl._apiserver.user import User

if TYPE_CHECKING:
    from aiohttp import web

    from pyctrl._apiserver.endpoints.handlers.rest import Scope
    from pyctrl._apiserver.endpoints.request import Target
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["create_eviction", "create_resource", "create_review", "create_token_request"]


async def create_resource(
    scope: Scope, request: web.Request, rt: ResourceType, namespace: str
) -> web.Response:
    """POST of a new object to its collection: 201 with the created object."""
    neg = negotiate_request(request, allow_transform=True)
    ctx = request_context(request, "CreateOptions")
    body = await decode_object(request, rt.kind, unstructured=bool(rt.crd_name))
    check_body_kind(scope.registry, rt, body)
    obj = await scope.stores.for_type(rt).create(ctx, namespace, body)
    return respond(request, render_one(rt, obj, neg, request), 201, neg, ctx.warnings)


async def create_eviction(scope: Scope, request: web.Request, target: Target) -> web.Response:
    """``pods/<name>/eviction``: delete the pod unless a PodDisruptionBudget forbids it."""
    assert target.name is not None
    body = await decode_object(request, "Eviction")
    ctx = request_context(request, "CreateOptions")
    pods = scope.stores.for_type(target.rt)
    status = await evict(pods, ctx, target.namespace or "", target.name, body)
    return respond(request, status, 201, warnings=ctx.warnings)


async def create_review(scope: Scope, request: web.Request, kind: str) -> web.Response:
    """TokenReview, SubjectAccessReview, SelfSubjectAccessReview: answered, not stored."""
    body = await decode_object(request, kind)
    if kind == "TokenReview":
        answer = token_review(scope.authn, body)
    else:
        caller = request.get(USER) if kind == "SelfSubjectAccessReview" else None
        if kind == "SelfSubjectAccessReview" and caller is None:
            caller = User("system:anonymous", ("system:unauthenticated",))
        answer = subject_access_review(scope.authz, body, caller)
    return respond(request, answer, 201)


async def create_token_request(
    scope: Scope, request: web.Request, namespace: str, name: str
) -> web.Response:
    """``serviceaccounts/<name>/token``: a TokenRequest answered with a bound token."""
    body = await decode_object(request, "TokenRequest")
    stored = scope.store.get(("", "serviceaccounts"), namespace, name)
    if stored is None:
        raise not_found("", "serviceaccounts", name)
    answer = token_request(scope.authn, stored, body)
    return respond(request, answer, 201)
