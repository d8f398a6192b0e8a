"""PersistentVolumeClaims (kube-apiserver's pkg/registry/core/persistentvolumeclaim).

``volumeMode`` defaults to ``Filesystem``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.registry.rest import Strategy

if TYPE_CHECKING:
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["PersistentVolumeClaimStrategy"]


def set_defaults(obj: dict[str, Any]) -> None:
    """``SetDefaults_PersistentVolumeClaim``."""
    obj.setdefault("spec", {}).setdefault("volumeMode", "Filesystem")


class PersistentVolumeClaimStrategy(Strategy):
    """The rules of PersistentVolumeClaims."""

    initial_status = {"phase": "Pending"}  # noqa: RUF012 - read only, copied on use

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_PersistentVolumeClaim``."""
        set_defaults(obj)
