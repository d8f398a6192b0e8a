"""The options of a write or delete request, as the registry reads them.

``metav1.CreateOptions``, ``UpdateOptions`` and ``PatchOptions`` (`WriteOptions`) and
``metav1.DeleteOptions`` (`DeleteOptions`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["DeleteOptions", "WriteOptions"]


@dataclass
class WriteOptions:
    """Options of a create, update or patch request."""

    dry_run: bool = False
    field_manager: str = ""
    force: bool = False
    field_validation: str = "Warn"
    raw: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    patch_type: str = ""
    """The patch type of a PATCH request (``json``, ``merge``, ``strategic``, ``apply``);
    how a strict decoding error is reported depends on it."""
    patch: Any = None
    """The decoded patch of a PATCH request."""


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
