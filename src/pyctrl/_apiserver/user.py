"""Who sent a request: k8s.io/apiserver's ``pkg/authentication/user``.

`User` is ``user.Info``: authentication (`pyctrl._apiserver.authentication`) finds it
from the request's bearer token, the handlers put it in the request's context
(``RequestContext.user``), and authorization, admission (the ``userInfo`` of an
``AdmissionReview``, CEL's ``request.userInfo`` and ``authorizer``) read it there.
`ADMIN` is the user of a server that authenticates no one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ADMIN", "AUTHENTICATED", "MASTERS", "User"]

MASTERS = "system:masters"
"""kube-apiserver's privileged group: every request of its members is allowed."""
AUTHENTICATED = "system:authenticated"
"""The group every authenticated user is in."""


@dataclass(frozen=True, slots=True)
class User:
    """An authenticated user, as ``user.Info``."""

    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: dict[str, list[str]] = field(default_factory=dict, compare=False, hash=False)

    @property
    def privileged(self) -> bool:
        """In ``system:masters``: the authorizer allows everything."""
        return MASTERS in self.groups

    def to_dict(self) -> dict[str, Any]:
        """``authentication.k8s.io/v1`` UserInfo."""
        out: dict[str, Any] = {"username": self.name}
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = {k: list(v) for k, v in self.extra.items()}
        return out


ADMIN = User("admin", (MASTERS, AUTHENTICATED))
"""The user of every request when the server authenticates no one (the admin token's)."""
