"""Conversion between a type's served versions and its storage version.

A type with one version is stored as it is served; a built-in with several versions
converts through its own functions (``ResourceType.to_storage``/``from_storage``); a custom
resource whose CRD has a conversion webhook converts through it (`admission.interfaces`
``ConversionHook``), else only its ``apiVersion`` changes (the ``None`` strategy), with
the served version's defaults applied on the way out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiextensions.pruning import apply_defaults
from pyctrl._apiserver.registry.meta import deep_copy

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyctrl._apiserver.admission.interfaces import ConversionHook
    from pyctrl._apiserver.scheme.resources import Registry, ResourceType

__all__ = ["Converter"]


class Converter:
    """Converts objects of the served types to and from their storage versions."""

    def __init__(self, registry: Registry, conversion: Callable[[], ConversionHook | None]) -> None:
        self.registry = registry
        self._conversion = conversion

    def to_external(self, rt: ResourceType, stored: dict[str, Any]) -> dict[str, Any]:
        """A stored object as ``rt``'s version shows it (the stored dict itself when equal)."""
        if rt.from_storage is not None:
            return rt.from_storage(stored)
        if stored.get("apiVersion") == rt.api_version:
            return stored
        out = dict(stored)
        out["apiVersion"] = rt.api_version
        if rt.schema is not None and rt.crd_name:
            out = deep_copy(out)
            apply_defaults(out, rt.schema)
        return out

    def to_storage(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """An object of ``rt``'s version in its storage version."""
        if rt.to_storage is not None:
            return rt.to_storage(obj)
        api_version = rt.storage_api_version
        if obj.get("apiVersion") != api_version:
            obj = dict(obj)
            obj["apiVersion"] = api_version
        return obj

    def hook_for(self, rt: ResourceType) -> ConversionHook | None:
        """The conversion webhook of ``rt``'s CRD, if it has one."""
        hook = self._conversion()
        if hook is not None and rt.crd_name and hook.handles(rt.crd_name):
            return hook
        return None

    async def external_many(
        self, rt: ResourceType, stored: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """Convert stored objects to ``rt``'s version, through the conversion hook if any."""
        hook = None if rt.version == rt.storage_version else self.hook_for(rt)
        if hook is None:
            return [self.to_external(rt, o) for o in stored]
        need = [o for o in stored if o.get("apiVersion") != rt.api_version]
        if not need:
            return stored
        converted = await hook.convert(rt.crd_name, need, rt.api_version)
        by_id = {id(o): c for o, c in zip(need, converted, strict=True)}
        return [by_id.get(id(o), o) for o in stored]

    async def external(self, rt: ResourceType, stored: dict[str, Any]) -> dict[str, Any]:
        """Convert one stored object to ``rt``'s version."""
        if rt.version == rt.storage_version:
            return self.to_external(rt, stored)
        return (await self.external_many(rt, [stored]))[0]

    async def internal(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """Convert an object of ``rt``'s version to its storage version."""
        hook = None if rt.version == rt.storage_version else self.hook_for(rt)
        if hook is None:
            return self.to_storage(rt, obj)
        return (await hook.convert(rt.crd_name, [obj], rt.storage_api_version))[0]

    def storage_rt(self, rt: ResourceType) -> ResourceType:
        """The type of ``rt``'s storage version (the type itself for single-version types)."""
        return self.registry.storage_type(rt.storage_key) or rt
