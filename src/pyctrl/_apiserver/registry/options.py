"""What one request brings to the registry, and what a write gives back.

`RequestContext` is built once per request by its handler (k8s.io/apiserver's request
context and ``metav1.CreateOptions``, ``UpdateOptions`` and ``PatchOptions``): dry run,
field manager, ``fieldValidation``, ``force``, the options as sent (for admission), the
patch of a PATCH, the warnings the answer carries as ``Warning`` headers (decoding
and admission add to them), and the user who sent it. The registry reads it and never
replaces a field.
`WriteResult` is what an update or patch returns. `DeleteOptions` is
``metav1.DeleteOptions``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pyctrl._apiserver.user import ADMIN, User

__all__ = ["DeleteOptions", "RequestContext", "WriteResult"]


@dataclass(slots=True)
class RequestContext:
    """One create, update or patch request, as the registry reads it."""

    dry_run: bool = False
    field_manager: str = ""
    field_validation: str = "Warn"
    """``Ignore``, ``Warn`` or ``Strict``: what decoding does with unknown fields."""
    force: bool = False
    """An apply's ``force`` (take the conflicting fields from their managers)."""
    raw: dict[str, Any] = field(default_factory=dict)
    """The request's options as sent (``CreateOptions``...), for admission reviews."""
    patch_type: str = ""
    """The patch type of a PATCH request (``json``, ``merge``, ``strategic``, ``apply``);
    how a strict decoding error is reported depends on it. Empty for other requests."""
    patch: Any = None
    """The decoded patch of a PATCH request."""
    warnings: list[str] = field(default_factory=list)
    """What the answer carries as ``Warning`` headers (decoding and admission add)."""
    user: User = ADMIN
    """Who sent the request (authentication's answer; admission reads it)."""


class WriteResult(NamedTuple):
    """What an update or patch did: the object as the request's version shows it."""

    obj: dict[str, Any]
    created: bool
    """Whether the write created the object (create on update, apply): 201."""


@dataclass
class DeleteOptions:
    """Options of a delete request (``metav1.DeleteOptions``)."""

    propagation: str | None = None
    orphan_dependents: bool | None = None
    grace_period: int | None = None
    uid: str | None = None
    resource_version: str | None = None
    dry_run: bool = False
    raw: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    """Admission webhooks' warnings, sent back as ``Warning`` headers."""
    user: User = ADMIN
    """Who sent the request (admission reads it)."""
