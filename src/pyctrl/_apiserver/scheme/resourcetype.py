"""The value types of the scheme: one REST resource at one API version, and its columns.

`ResourceType` carries what discovery and OpenAPI read about a resource (group, version,
kind, names, scope, verbs, subresources, printer columns, schema) and the scheme's facts
about it (field labels, the storage it lives in and the conversion to it). A kind's rules
(kube-apiserver's strategy flags, defaults, validation, table) are its strategy's, in
`pyctrl._apiserver.registry`. `pyctrl._apiserver.scheme.resources` holds
the registry of them; `pyctrl._apiserver.scheme.builtin_types` lists the built-in ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyctrl._apiserver.storage.store import StorageKey

__all__ = ["ALL_VERBS", "Converter", "PrinterColumn", "ResourceType"]

Converter = Callable[[dict[str, Any]], dict[str, Any]]

ALL_VERBS: tuple[str, ...] = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)


@dataclass(frozen=True)
class PrinterColumn:
    """One column of the ``Table`` rendering (``kubectl get``) of a resource."""

    name: str
    type: str
    json_path: str
    description: str = ""
    priority: int = 0
    format: str = ""


@dataclass(frozen=True)
class ResourceType:
    """One REST resource at one API version: what discovery, OpenAPI and the scheme know.

    The first block of fields is the interface discovery and OpenAPI read; the second block
    is the scheme's: field labels, storage and conversion, the defining CRD.
    """

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    list_kind: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: frozenset[str] = frozenset()
    scale_paths: tuple[str, str, str | None] | None = None
    printer_columns: tuple[PrinterColumn, ...] = ()
    schema: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    storage_version: str = ""
    served: bool = True

    # Scheme facts: field label conversion, storage, the CRD it comes from.
    field_labels: tuple[str, ...] = ()
    """Field selector labels beyond ``metadata.name`` / ``metadata.namespace``."""
    field_paths: tuple[tuple[str, str], ...] = ()
    """For CRD ``selectableFields``: (label, JSON path)."""
    storage_group: str | None = None
    """Group of the storage when it differs from ``group`` (None: the same)."""
    storage_plural: str = ""
    to_storage: Converter | None = field(default=None, compare=False, hash=False)
    from_storage: Converter | None = field(default=None, compare=False, hash=False)
    crd_name: str = ""
    """Name of the CustomResourceDefinition that defines this type ('' for built-ins)."""
    deprecation_warning: str = ""
    """The Warning of every request on a deprecated CRD version (empty: not deprecated)."""

    @property
    def gvk(self) -> tuple[str, str, str]:
        """(group, version, kind)."""
        return (self.group, self.version, self.kind)

    @cached_property
    def api_version(self) -> str:
        """``v1`` for the core group, ``group/version`` otherwise."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @cached_property
    def storage_key(self) -> StorageKey:
        """(group, plural) of the storage this type lives in."""
        group = self.group if self.storage_group is None else self.storage_group
        return (group, self.storage_plural or self.plural)

    @cached_property
    def storage_api_version(self) -> str:
        """apiVersion of stored objects."""
        group = self.group if self.storage_group is None else self.storage_group
        version = self.storage_version or self.version
        return f"{group}/{version}" if group else version

    @cached_property
    def has_status(self) -> bool:
        """Whether the type has a ``/status`` subresource."""
        return "status" in self.subresources

    @property
    def qualified(self) -> str:
        """``plural.group`` (``plural`` for the core group), as error messages name it."""
        return f"{self.plural}.{self.group}" if self.group else self.plural
