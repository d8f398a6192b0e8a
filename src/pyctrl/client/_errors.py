"""Errors the client raises itself, before or instead of asking the API server."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyctrl.errors import PyctrlError

if TYPE_CHECKING:
    from pyctrl.meta import GroupVersionKind, GroupVersionResource

__all__ = ["NoKindMatchError", "NoMatchError", "NoResourceMatchError", "PatchError"]


class NoMatchError(PyctrlError):
    """The API server does not serve the kind or resource asked for (not even after a refresh).

    Usually a CustomResourceDefinition is not installed, or the version is not served.
    """


class NoKindMatchError(NoMatchError):
    """No resource of the API server serves this kind (``meta.NoKindMatchError``)."""

    def __init__(self, gvk: GroupVersionKind, detail: str = "") -> None:
        self.gvk = gvk
        message = f'no matches for kind "{gvk.kind}" in version "{gvk.api_version}"'
        super().__init__(f"{message}: {detail}" if detail else message)


class NoResourceMatchError(NoMatchError):
    """The API server serves no resource of this name in this group version."""

    def __init__(self, resource: GroupVersionResource, detail: str = "") -> None:
        self.resource = resource
        message = (
            f'no matches for resource "{resource.resource}" in version "{resource.api_version}"'
        )
        super().__init__(f"{message}: {detail}" if detail else message)


class PatchError(PyctrlError, ValueError):
    """A patch could not be built: bad operations, or a patch type the object cannot take."""
