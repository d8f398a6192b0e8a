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
at most ``max_entries`` of each (the oldest go first). Unknown tokens are remembered
in a cache of their own, so a caller sending fresh bad tokens cannot push valid ones
out; tokens are kept as SHA-256 digests, never as sent.

An unauthenticated caller still makes the filter send a TokenReview for every token it
has not seen: each client address may cause at most ``reviews_per_second`` of them
(``review_burst`` at once); beyond that it gets ``429 Too Many Requests`` with a
``Retry-After`` header and no review is sent. Cached answers cost nothing and are not
limited. The operator needs a ClusterRole
that may ``create`` ``tokenreviews`` and ``subjectaccessreviews``; scrapers need
``get`` on the non-resource URL (``pyctrl generate`` writes both roles).
"""

from __future__ import annotations

import hashlib
import math
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
    "RateLimiter",
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
FAILED_TOKEN_CACHE_TTL = 60.0
REVIEWS_PER_SECOND = 5.0
REVIEW_BURST = 20
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


class RateLimiter:
    """Token buckets by key (a client address), bounded in number (least recent evicted).

    Args:
        rate: Tokens added per second.
        burst: The bucket's size: how many may be taken at once.
        clock: Where time is read.
        max_keys: How many keys' buckets it keeps.
    """

    def __init__(self, rate: float, burst: int, clock: Clock, max_keys: int = 4096) -> None:
        if not rate > 0 or burst < 1:
            raise ValueError(f"rate must be positive and burst at least 1, got {rate}, {burst}")
        self.rate, self.burst, self._clock, self._max = rate, burst, clock, max_keys
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def take(self, key: str) -> float:
        """Take one token for ``key``: 0 if granted, else seconds until one is available."""
        now = self._clock.now()
        tokens, since = self._buckets.get(key, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - since) * self.rate)
        granted = tokens >= 1.0
        if granted:
            tokens -= 1.0
        self._buckets[key] = (tokens, now)
        self._buckets.move_to_end(key)
        while len(self._buckets) > self._max:
            self._buckets.popitem(last=False)
        return 0.0 if granted else (1.0 - tokens) / self.rate


class _TooManyReviewsError(Exception):
    def __init__(self, retry_after: float) -> None:
        super().__init__(f"too many token reviews; retry after {retry_after:.1f}s")
        self.retry_after = retry_after


class _AuthFilter:
    def __init__(
        self, rest: RESTClient, clock: Clock, max_entries: int, limiter: RateLimiter
    ) -> None:
        self.rest = rest
        self.tokens = ReviewCache(max_entries, clock)
        self.failed_tokens = ReviewCache(max_entries, clock)
        self.decisions = ReviewCache(max_entries, clock)
        self.limiter = limiter
        self.limited = 0
        """Requests answered 429 because their address sent too many unknown tokens."""
        self.reviews = 0
        """TokenReviews and SubjectAccessReviews sent (the rest came from the caches)."""

    async def _post(self, path: str, body: dict[str, Any]) -> Any:
        self.reviews += 1
        response = await self.rest.request(
            "POST", path, body=orjson.dumps(body), content_type="application/json", timeout=_TIMEOUT
        )
        return response.json()

    async def _authenticate(self, token: str, client: str) -> _User | None:
        key = hashlib.sha256(token.encode()).digest()
        cached = self.tokens.get(key)
        if cached is not None:
            user: _User = cached
            return user
        if self.failed_tokens.get(key) is not None:
            return None
        wait = self.limiter.take(client)
        if wait > 0:
            raise _TooManyReviewsError(wait)
        review = await self._post(
            "/apis/authentication.k8s.io/v1/tokenreviews",
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenReview",
                "spec": {"token": token},
            },
        )
        status = review.get("status") or {}
        if status.get("authenticated") is not True:
            self.failed_tokens.put(key, True, FAILED_TOKEN_CACHE_TTL)
            return None
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
        self.tokens.put(key, user, TOKEN_CACHE_TTL)
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

    async def _user(self, request: web.Request) -> _User | web.Response:
        """The request's authenticated user, or the answer refusing it."""
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        token = token.strip()
        user = None
        if scheme.lower() == "bearer" and token:
            try:
                user = await self._authenticate(token, request.remote or "")
            except _TooManyReviewsError as exc:
                self.limited += 1
                return web.Response(
                    status=429,
                    text="Too many requests with unknown tokens\n",
                    headers={"Retry-After": str(max(1, math.ceil(exc.retry_after)))},
                )
            except Exception as exc:
                _log.error("Authentication failed", error=str(exc))
                return web.Response(status=500, text="Authentication failed\n")
        return user or web.Response(status=401, text="Unauthorized\n")

    async def __call__(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        user = await self._user(request)
        if isinstance(user, web.Response):
            return user
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
    rest: RESTClient,
    *,
    clock: Clock | None = None,
    max_entries: int = 1024,
    reviews_per_second: float = REVIEWS_PER_SECOND,
    review_burst: int = REVIEW_BURST,
) -> Filter:
    """The `FilterProvider` that checks tokens and permissions with the API server.

    Pass other limits with `functools.partial` (``filter_provider=partial(
    with_authentication_and_authorization, reviews_per_second=1)``).

    Args:
        rest: The client that sends the TokenReviews and SubjectAccessReviews.
        clock: Where cache expiry and the review rate limit read time.
        max_entries: The size of each review cache.
        reviews_per_second: TokenReviews each client address may cause per second.
        review_burst: TokenReviews each client address may cause at once.

    Returns:
        A `Filter` (see the module documentation for what it answers).
    """
    clock = clock or RealClock()
    limiter = RateLimiter(reviews_per_second, review_burst, clock, max_keys=max_entries)
    return _AuthFilter(rest, clock, max_entries, limiter)
