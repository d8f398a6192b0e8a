"""Seams for admission and conversion, the API server's extension points.

kube-apiserver runs every write through admission: mutating admission (built-in plugins, then
MutatingWebhookConfigurations) right after the request body is decoded and defaulted, then
schema validation, then validating admission (ValidatingWebhookConfigurations) just before the
object is stored. Custom resources whose CRD asks for ``conversion.strategy: Webhook`` are
converted between versions by calling the webhook.

The embedded server calls the hooks below at exactly those points. By default there are none
(every request is admitted unchanged; conversion only rewrites ``apiVersion``, kube-apiserver's
``None`` strategy). An :class:`AdmissionHook` appended to ``APIServer.admission`` and a
:class:`ConversionHook` set as ``APIServer.conversion`` plug webhooks in without touching the
write path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pyctrl._apiserver.user import ADMIN, User

if TYPE_CHECKING:
    from pyctrl._apiserver.scheme.resources import Registry, ResourceType
    from pyctrl._apiserver.storage.store import Store


@dataclass
class AdmissionRequest:
    """What admission sees of one write, like ``admission.k8s.io/v1`` ``AdmissionRequest``."""

    uid: str
    operation: str
    """``CREATE``, ``UPDATE``, ``DELETE`` or ``CONNECT``."""
    resource: ResourceType
    subresource: str
    namespace: str
    name: str
    obj: dict[str, Any] | None
    """The object being written (None for DELETE), at the request's version."""
    old: dict[str, Any] | None
    """The stored object (None for CREATE), at the request's version."""
    dry_run: bool
    options: dict[str, Any]
    """``CreateOptions`` / ``UpdateOptions`` / ``DeleteOptions`` / ``PatchOptions`` as a dict."""
    user: User = ADMIN
    """Who sent the request (the request context's user)."""
    warnings: list[str] = field(default_factory=list)
    """Where hooks add warnings; the server sends them as ``Warning`` response headers."""


class AdmissionHook(Protocol):
    """One admission step (e.g. the webhook dispatcher). Raise ``StatusError`` to deny."""

    def handles(self, rt: ResourceType, *, mutating: bool) -> bool:
        """Whether a write of ``rt`` goes through the hook's mutating (or validating) step.

        False skips the step without building its request (e.g. no configuration is
        stored); True calls it, and it may still find nothing to do.
        """

    async def mutate(self, request: AdmissionRequest) -> dict[str, Any] | None:
        """Return the mutated object (or None to keep ``request.obj``)."""

    async def validate(self, request: AdmissionRequest) -> None:
        """Raise ``StatusError`` to reject the request."""


class ConversionHook(Protocol):
    """Converts custom resources between versions for CRDs with a Webhook strategy."""

    def handles(self, crd_name: str) -> bool:
        """Whether objects of this CRD need conversion by this hook."""

    async def convert(
        self, crd_name: str, objects: list[dict[str, Any]], desired_api_version: str
    ) -> list[dict[str, Any]]:
        """Return ``objects`` converted to ``desired_api_version`` (same order)."""


class VersionConverter(Protocol):
    """Converts objects between a type's versions and its storage version."""

    def to_external(self, rt: ResourceType, stored: dict[str, Any]) -> dict[str, Any]:
        """A stored object as ``rt``'s version shows it."""

    def to_storage(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """An object of ``rt``'s version in its storage version."""


class PluginHost(Protocol):
    """What admission plugins and the conversion webhook read of the server they serve."""

    @property
    def store(self) -> Store:
        """The server's objects (webhook configurations, namespaces, CRDs)."""

    @property
    def registry(self) -> Registry:
        """The served types."""

    @property
    def conversion(self) -> ConversionHook | None:
        """The conversion hook for CRDs with a Webhook strategy."""

    @property
    def converter(self) -> VersionConverter:
        """Converts objects between a type's versions."""
