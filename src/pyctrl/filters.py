"""Filters: authentication and authorization in front of the metrics and debug servers.

controller-runtime's ``pkg/metrics/filters``. `with_authentication_and_authorization`
is a `FilterProvider`: given the manager's `pyctrl.client.RESTClient`, it returns a
`Filter` that checks each request before its handler runs, as
``filters.WithAuthenticationAndAuthorization`` does:

1. the ``Authorization: Bearer <token>`` header is checked with a TokenReview
   (``authentication.k8s.io/v1``): no token or an unknown one is ``401 Unauthorized``;
2. the user is checked with a SubjectAccessReview (``authorization.k8s.io/v1``) for the
   request's lowercase method (``get``) on the non-resource URL path (``/metrics``):
   without the permission, ``403 Authorization denied for user <name>``;
3. a failure to reach the API server is ``500`` (``Authentication failed``,
   ``Authorization for user <name> failed``) and is not cached.

Answers are cached as controller-runtime's delegating authenticator and authorizer
cache them: token reviews 1 minute, allowed reviews 5 minutes, denied ones 30 seconds;
at most ``max_entries`` of each (the oldest go first). The operator needs a ClusterRole
that may ``create`` ``tokenreviews`` and ``subjectaccessreviews``; scrapers need
``get`` on the non-resource URL (``pyctrl generate`` writes both roles).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import web

from pyctrl.clock import Clock, RealClock
from pyctrl.log import get_logger

if TYPE_CHECKING:
    from pyctrl.client import RESTClient

__all__ = [
    "Filter",
    "FilterProvider",
    "Handler",
    "ReviewCache",
    "with_authentication_and_authorization",
]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
"""An aiohttp request handler."""
Filter = Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]
"""Runs before a handler: answers itself (401, 403) or calls the handler."""
FilterProvider = Callable[["RESTClient"], Filter]
"""Builds a `Filter` from the manager's REST client (``metricsserver.Options.filter_provider``)."""

TOKEN_CACHE_TTL = 60.0
ALLOW_CACHE_TTL = 300.0
DENY_CACHE_TTL = 30.0
_TIMEOUT = 10.0
_log = get_logger("pyctrl.filters")


@dataclass(frozen=True)
class _User:
    name: str
    uid: str
    groups: tuple[str, ...]
    extra: tuple[tuple[str, tuple[str, ...]], ...]


class ReviewCache:
    """A small TTL cache of review answers, bounded in size (oldest evicted first).

    Args:
        max_entries: How many answers it holds.
        clock: Where time is read.
    """

    def __init__(self, max_entries: int, clock: Clock) -> None:
        self._entries: OrderedDict[Any, tuple[float, Any]] = OrderedDict()
        self._max = max_entries
        self._clock = clock

    def get(self, key: Any) -> Any:
        """The cached answer, or None when absent or expired."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, value = entry
        if self._clock.now() >= expires:
            del self._entries[key]
            return None
        return value

    def put(self, key: Any, value: Any, ttl: float) -> None:
        """Remember ``value`` for ``ttl`` seconds."""
        self._entries[key] = (self._clock.now() + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


class _AuthFilter:
    def __init__(self, rest: RESTClient, clock: Clock, max_entries: int) -> None:
        self.rest = rest
        self.tokens = ReviewCache(max_entries, clock)
        self.decisions = ReviewCache(max_entries, clock)
        self.reviews = 0
        """TokenReviews and SubjectAccessReviews sent (the rest came from the caches)."""

    async def _post(self, path: str, body: dict[str, Any]) -> Any:
        self.reviews += 1
        response = await self.rest.request(
            "POST", path, body=orjson.dumps(body), content_type="application/json", timeout=_TIMEOUT
        )
        return response.json()

    async def _authenticate(self, token: str) -> _User | None:
        cached = self.tokens.get(token)
        if cached is not None:
            user: _User | None = cached[0]
            return user
        review = await self._post(
            "/apis/authentication.k8s.io/v1/tokenreviews",
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenReview",
                "spec": {"token": token},
            },
        )
        status = review.get("status") or {}
        user = None
        if status.get("authenticated") is True:
            info = status.get("user") or {}
            user = _User(
                name=str(info.get("username", "")),
                uid=str(info.get("uid", "")),
                groups=tuple(str(g) for g in info.get("groups") or ()),
                extra=tuple(
                    (str(k), tuple(str(x) for x in v))
                    for k, v in sorted((info.get("extra") or {}).items())
                ),
            )
        # Failures are cached too (controller-runtime uses one TTL for both).
        self.tokens.put(token, (user,), TOKEN_CACHE_TTL)
        return user

    async def _authorize(self, user: _User, verb: str, path: str) -> bool:
        key = (user, verb, path)
        cached = self.decisions.get(key)
        if cached is not None:
            return bool(cached)
        spec: dict[str, Any] = {
            "user": user.name,
            "groups": list(user.groups),
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra}
        review = await self._post(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": spec,
            },
        )
        allowed = (review.get("status") or {}).get("allowed") is True
        self.decisions.put(key, allowed, ALLOW_CACHE_TTL if allowed else DENY_CACHE_TTL)
        return allowed

    async def __call__(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return web.Response(status=401, text="Unauthorized\n")
        try:
            user = await self._authenticate(token)
        except Exception as exc:
            _log.error("Authentication failed", error=str(exc))
            return web.Response(status=500, text="Authentication failed\n")
        if user is None:
            return web.Response(status=401, text="Unauthorized\n")
        try:
            allowed = await self._authorize(user, request.method.lower(), request.path)
        except Exception as exc:
            message = f"Authorization for user {user.name} failed"
            _log.error(message, error=str(exc))
            return web.Response(status=500, text=message + "\n")
        if not allowed:
            return web.Response(status=403, text=f"Authorization denied for user {user.name}\n")
        return await handler(request)


def with_authentication_and_authorization(
    rest: RESTClient, *, clock: Clock | None = None, max_entries: int = 1024
) -> Filter:
    """The `FilterProvider` that checks tokens and permissions with the API server.

    Args:
        rest: The client that sends the TokenReviews and SubjectAccessReviews.
        clock: Where cache expiry reads time.
        max_entries: The size of each review cache.

    Returns:
        A `Filter` (see the module documentation for what it answers).
    """
    return _AuthFilter(rest, clock or RealClock(), max_entries)
