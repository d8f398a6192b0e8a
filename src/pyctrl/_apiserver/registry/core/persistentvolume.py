"""PersistentVolumes (kube-apiserver's pkg/registry/core/persistentvolume).

A new volume starts ``Pending``; a delete answers the deleted object.
"""

from __future__ import annotations

from pyctrl._apiserver.registry.rest import Strategy

__all__ = ["PersistentVolumeStrategy"]


class PersistentVolumeStrategy(Strategy):
    """The rules of PersistentVolumes."""

    return_deleted_object = True
    initial_status = {"phase": "Pending"}  # noqa: RUF012 - read only, copied on use
