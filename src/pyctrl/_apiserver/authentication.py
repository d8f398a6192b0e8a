"""Authentication: bearer tokens to users, and the TokenReview API (``authentication.k8s.io/v1``).

kube-apiserver authenticates each request (here: a static token file's worth of bearer
tokens, and ServiceAccount tokens issued through ``serviceaccounts/<name>/token``), then
authorizes it (`pyctrl._apiserver.authorization`). ``POST
/apis/authentication.k8s.io/v1/tokenreviews`` lets a client ask who a token belongs to:
the answer is the review with ``status.authenticated`` and ``status.user`` filled in
(pkg/registry/authentication/tokenreview), which is how a metrics endpoint protected by
controller-runtime's ``WithAuthenticationAndAuthorization`` checks its callers.

What the embedded server knows:

- the Environment's admin token: user ``admin`` in ``system:masters`` (all allowed);
- tokens added with `Authenticator.add_user` (``Environment.add_user``): any name and
  groups, always with ``system:authenticated``;
- ServiceAccount tokens from a TokenRequest: user ``system:serviceaccount:<ns>:<name>``
  in ``system:serviceaccounts`` and ``system:serviceaccounts:<ns>``; they stop working
  when they expire or when the ServiceAccount is deleted (checked by uid).
"""

from __future__ import annotations

import datetime
import secrets
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyctrl._apimachinery.field import field_invalid
from pyctrl._apiserver.apimachinery.errors import bad_request, invalid
from pyctrl._apiserver.user import AUTHENTICATED, MASTERS, User

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = ["Authenticator", "token_request", "token_review"]

DEFAULT_AUDIENCE = "https://kubernetes.default.svc.cluster.local"


@dataclass(frozen=True)
class _ServiceAccountToken:
    namespace: str
    name: str
    uid: str
    expires: float


class Authenticator:
    """Maps bearer tokens to users.

    Args:
        admin_tokens: Tokens of the ``admin`` user (``system:masters``).
        service_account_uid: Looks up a ServiceAccount's uid (``namespace``, ``name``),
            None when it is gone; its tokens die with it.
        clock: Seconds since the epoch (for token expiry).
    """

    def __init__(
        self,
        admin_tokens: Iterable[str],
        *,
        service_account_uid: Callable[[str, str], str | None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        admin = User("admin", (MASTERS, AUTHENTICATED))
        self._users: dict[str, User] = dict.fromkeys(admin_tokens, admin)
        self._service_accounts: dict[str, _ServiceAccountToken] = {}
        self._service_account_uid = service_account_uid
        self._clock = clock

    @property
    def enabled(self) -> bool:
        """Whether requests must carry a token (the server was given any)."""
        return bool(self._users)

    def add_user(self, name: str, groups: Iterable[str] = (), *, token: str = "") -> str:
        """Add a user (``system:authenticated`` is added to ``groups``); return its token."""
        if not name:
            raise ValueError("a user needs a name")
        token = token or secrets.token_urlsafe(32)
        all_groups = tuple(dict.fromkeys([*groups, AUTHENTICATED]))
        self._users[token] = User(name, all_groups)
        return token

    def issue_service_account_token(
        self, namespace: str, name: str, uid: str, expiration_seconds: int
    ) -> tuple[str, float]:
        """A token for a ServiceAccount (TokenRequest); returns it and its expiry time."""
        token = "sa." + secrets.token_urlsafe(32)
        expires = self._clock() + expiration_seconds
        self._service_accounts[token] = _ServiceAccountToken(namespace, name, uid, expires)
        return token, expires

    def authenticate(self, token: str) -> User | None:
        """The user a token belongs to, or None."""
        user = self._users.get(token)
        if user is not None:
            return user
        sa = self._service_accounts.get(token)
        if sa is None:
            return None
        if self._clock() >= sa.expires:
            return None
        lookup = self._service_account_uid
        if lookup is not None and lookup(sa.namespace, sa.name) != sa.uid:
            return None
        return User(
            f"system:serviceaccount:{sa.namespace}:{sa.name}",
            ("system:serviceaccounts", f"system:serviceaccounts:{sa.namespace}", AUTHENTICATED),
            uid=sa.uid,
        )

    def authenticate_header(self, header: str) -> User | None:
        """The user of an ``Authorization: Bearer <token>`` header, or None."""
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        return self.authenticate(token.strip())


def token_review(authenticator: Authenticator, body: dict[str, Any]) -> dict[str, Any]:
    """Answer a TokenReview: the review with its status filled in.

    Raises:
        StatusError: 400 without a token, as kube-apiserver answers.
    """
    spec = body.get("spec")
    token = spec.get("token") if isinstance(spec, dict) else None
    if not isinstance(token, str) or not token:
        raise bad_request("token is required for TokenReview in authentication")
    user = authenticator.authenticate(token)
    audiences = spec.get("audiences") if isinstance(spec, dict) else None
    status: dict[str, Any] = {"user": {}}
    if user is not None:
        status = {
            "authenticated": True,
            "user": user.to_dict(),
            "audiences": list(audiences) if audiences else [DEFAULT_AUDIENCE],
        }
    metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    return {
        "kind": "TokenReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {**(metadata or {}), "creationTimestamp": None},
        "spec": spec,
        "status": status,
    }


def token_request(
    authenticator: Authenticator, service_account: dict[str, Any], body: dict[str, Any]
) -> dict[str, Any]:
    """Answer a TokenRequest for ``service_account``: a token that authenticates as it.

    Raises:
        StatusError: 422 for an ``expirationSeconds`` under 10 minutes.
    """
    meta = service_account.get("metadata") or {}
    namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
    raw_spec = body.get("spec")
    spec: dict[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
    seconds = spec.get("expirationSeconds") or 3600
    if not isinstance(seconds, int) or isinstance(seconds, bool) or seconds < 600:
        raise invalid(
            "authentication.k8s.io",
            "TokenRequest",
            name,
            [
                field_invalid(
                    "spec.expirationSeconds",
                    seconds,
                    "may not specify a duration less than 10 minutes",
                )
            ],
        )
    uid = str(meta.get("uid", ""))
    token, expires = authenticator.issue_service_account_token(namespace, name, uid, seconds)
    stamp = datetime.datetime.fromtimestamp(expires, datetime.UTC)
    return {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": None},
        "spec": {
            "audiences": spec.get("audiences") or [DEFAULT_AUDIENCE],
            "expirationSeconds": seconds,
            "boundObjectRef": spec.get("boundObjectRef"),
        },
        "status": {"token": token, "expirationTimestamp": stamp.strftime("%Y-%m-%dT%H:%M:%SZ")},
    }
