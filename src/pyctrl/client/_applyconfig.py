"""Apply configurations: partial objects for server-side apply, and what a manager owns.

client-go generates, for every kind, an *apply configuration*: the same fields, every
one optional, serialised only when set (``applyconfigurations/apps/v1.Deployment``), and
``ExtractDeployment(obj, manager)`` to read back the fields one field manager owns. This
module gives pyctrl the same, derived at run time:

- `apply_config_for(MySrv)` is a pydantic model with MySrv's field names and aliases,
  every field (nested models too) optional: ``MySrvApply(spec={"port": 8080})`` is
  valid even though ``MySrv`` requires fields. It serialises only what was set, so a
  server-side apply of it claims only those fields. For a kubernetes-asyncio model
  (``V1Deployment``) the same is built from the model's ``openapi_types``, so partial
  built-in objects can be applied without the model's client-side required-field checks.
- `extract(obj, field_manager)` returns the fields ``field_manager`` owns in ``obj``,
  read from ``metadata.managedFields`` (``fieldsV1``; only the manager's ``Apply``
  entry, as client-go does), as an apply configuration of the object's type: apply it
  back and nothing changes.

`Client.apply` takes either, and returns the object as stored, of the full type.
"""

from __future__ import annotations

import copy
import functools
import re
import types
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Union, cast, get_args, get_origin

import orjson
from pydantic import BaseModel, Field, create_model

from pyctrl.meta import KubeModel, ObjectMeta, Time
from pyctrl.resource import CustomResource, Unstructured
from pyctrl.scheme import default_scheme

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pydantic.fields import FieldInfo

    from pyctrl.scheme import Scheme

__all__ = ["ApplyConfiguration", "apply_config_for", "extract", "owned_fields"]


class ApplyConfiguration(KubeModel):
    """Base of apply configurations: every field optional, only the fields set are sent.

    Built by `apply_config_for`; ``applies_to()`` names the full type it configures.
    """

    __apply_for__: ClassVar[type[Any]]

    @classmethod
    def applies_to(cls) -> type[Any]:
        """The full type this configuration is a partial view of."""
        return cls.__apply_for__

    def to_apply(self) -> dict[str, Any]:
        """The wire form of the fields that were set (what server-side apply sends)."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


# -- pydantic models ---------------------------------------------------------------------

# Field definitions are built at run time: pydantic's typed overloads cannot follow them.
_create_model = cast("Any", create_model)


def _optional(annotation: Any) -> Any:
    """``annotation`` with every KubeModel in it replaced by its apply configuration."""
    if isinstance(annotation, type) and issubclass(annotation, KubeModel):
        # ObjectMeta has every field optional already.
        return annotation if annotation is ObjectMeta else _pydantic_config(annotation)
    origin = get_origin(annotation)
    if origin is None:
        return annotation
    args = get_args(annotation)
    if origin is Annotated:
        return Annotated[(_optional(args[0]), *annotation.__metadata__)]
    converted = tuple(_optional(arg) for arg in args)
    if converted == args:
        return annotation
    if origin is Union or origin is types.UnionType:
        return functools.reduce(lambda a, b: a | b, converted)
    return origin[converted if len(converted) > 1 else converted[0]]


def _optional_field(name: str, info: FieldInfo) -> tuple[Any, Any]:
    annotation = _optional(info.annotation)
    if info.metadata:
        annotation = Annotated[(annotation, *info.metadata)]
    alias = info.alias if info.alias and info.alias != name else None
    return annotation | None, Field(default=None, alias=alias) if alias else None


@functools.cache
def _pydantic_config(model: type[KubeModel]) -> type[ApplyConfiguration]:
    fields = {name: _optional_field(name, info) for name, info in model.model_fields.items()}
    if issubclass(model, CustomResource):
        # A CustomResource subclass: the scheme, the client and controllerutil know its
        # kind from the same ResourceInfo, and apiVersion/kind are filled in (as set).
        bases = cast("tuple[type[ApplyConfiguration], ...]", (ApplyConfiguration, CustomResource))
        fields["metadata"] = (ObjectMeta | None, None)
    else:
        bases = (ApplyConfiguration,)
    made: type[ApplyConfiguration] = _create_model(
        model.__name__, __base__=bases, __module__=model.__module__, **fields
    )
    made.__apply_for__ = model
    made.__doc__ = f"The apply configuration of {model.__qualname__}: every field optional."
    if issubclass(model, CustomResource):
        made.__resource__ = model.resource_info()  # type: ignore[attr-defined]
    return made


# -- kubernetes-asyncio models ------------------------------------------------------------

_LIST = re.compile(r"^list\[(.+)\]$")
_DICT = re.compile(r"^dict\(([^,]*), (.+)\)$")
_SCALARS: dict[str, Any] = {
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "object": Any,
    "datetime": Time,
    "date": Time,
    # pyctrl's ObjectMeta, all-optional: so accessor() reads any configuration.
    "V1ObjectMeta": ObjectMeta,
}
_RESERVED = frozenset(dir(BaseModel))


def _model_type(name: str, building: frozenset[str]) -> Any:
    if name in _SCALARS:
        return _SCALARS[name]
    if match := _LIST.match(name):
        return list[_model_type(match.group(1), building)]  # type: ignore[misc]
    if match := _DICT.match(name):
        return dict[str, _model_type(match.group(2), building)]  # type: ignore[misc]
    if name in building:
        return dict[str, Any]  # a recursive type (JSONSchemaProps): nested levels as JSON
    from kubernetes_asyncio.client import models

    return _builtin_config(getattr(models, name), building)


def _builtin_config(
    model: type[Any], building: frozenset[str] = frozenset()
) -> type[ApplyConfiguration]:
    cached = _BUILTIN.get(model)
    if cached is not None:
        return cached
    inner = building | {model.__name__}
    fields: dict[str, Any] = {}
    for attr, type_name in model.openapi_types.items():
        wire = model.attribute_map[attr]
        name = attr.lstrip("_")
        if name in _RESERVED:
            name += "_"
        fields[name] = (_model_type(type_name, inner) | None, Field(default=None, alias=wire))
    made: type[ApplyConfiguration] = _create_model(
        model.__name__, __base__=ApplyConfiguration, __module__=model.__module__, **fields
    )
    made.__apply_for__ = model
    made.__doc__ = f"The apply configuration of {model.__name__}: every field optional."
    _BUILTIN[model] = made
    return made


_BUILTIN: dict[type[Any], type[ApplyConfiguration]] = {}


def apply_config_for(type_: type[Any]) -> type[ApplyConfiguration]:
    """The apply configuration type of ``type_`` (made once per type, then reused).

    ``type_`` is a `pyctrl.resource.CustomResource` (or another `pyctrl.meta.KubeModel`)
    or a kubernetes-asyncio model such as ``V1Deployment``. The result has the same field
    names and wire names, every field optional (nested models too), and sends only the
    fields that were set::

        MySrvApply = apply_config_for(MySrv)
        partial = MySrvApply(metadata={"name": "a", "namespace": "default"},
                             spec={"port": 8080})
        await client.apply(partial, field_manager="tuner")

    Raises:
        TypeError: ``type_`` is not a model of a Kubernetes type.
    """
    if isinstance(type_, type) and issubclass(type_, ApplyConfiguration):
        return type_
    if isinstance(type_, type) and issubclass(type_, KubeModel):
        return _pydantic_config(type_)
    if isinstance(type_, type) and hasattr(type_, "openapi_types"):
        return _builtin_config(type_)
    raise TypeError(
        f"{getattr(type_, '__qualname__', type_)!r} has no apply configuration: "
        "give a CustomResource, a KubeModel or a kubernetes-asyncio model class"
    )


# -- extract -------------------------------------------------------------------------------


def owned_fields(
    data: Mapping[str, Any], field_manager: str, *, subresource: str = ""
) -> dict[str, Any]:
    """The part of the object ``data`` (its wire form) that ``field_manager`` applied.

    Reads the manager's ``Apply`` entries of ``metadata.managedFields`` for
    ``subresource`` ("" for the main resource). ``apiVersion``, ``kind``, and the name
    and namespace are always kept, as client-go's ``Extract*`` does.
    """
    metadata = data.get("metadata") or {}
    out: dict[str, Any] = {"apiVersion": data.get("apiVersion"), "kind": data.get("kind")}
    for entry in metadata.get("managedFields") or ():
        if (
            entry.get("manager") == field_manager
            and entry.get("operation") == "Apply"
            and (entry.get("subresource") or "") == subresource
        ):
            _merge(out, _pick(dict(data), entry.get("fieldsV1") or {}))
    ident = {k: metadata[k] for k in ("name", "namespace") if metadata.get(k)}
    out["metadata"] = {**ident, **(out.get("metadata") or {})}
    return {k: v for k, v in out.items() if v is not None}


def _pick(value: Any, fields: Mapping[str, Any]) -> Any:
    """The parts of ``value`` named by the ``fieldsV1`` trie ``fields``."""
    children = {k: v for k, v in fields.items() if k != "."}
    if not children:
        return copy.deepcopy(value)
    if isinstance(value, dict):
        picked: dict[str, Any] = {}
        for key, sub in children.items():
            if key.startswith("f:") and key[2:] in value:
                picked[key[2:]] = _pick(value[key[2:]], sub)
        return picked
    if isinstance(value, list):
        return _pick_items(value, children)
    return copy.deepcopy(value)


def _pick_items(items: list[Any], fields: Mapping[str, Any]) -> list[Any]:
    chosen: dict[int, Any] = {}
    for key, sub in fields.items():
        if key.startswith("k:"):
            wanted = orjson.loads(key[2:])
            for index, item in enumerate(items):
                if isinstance(item, dict) and all(item.get(k) == v for k, v in wanted.items()):
                    # The key fields identify the item: an apply configuration needs them.
                    chosen[index] = {**wanted, **_pick(item, sub)}
                    break
        elif key.startswith("v:"):
            wanted = orjson.loads(key[2:])
            if wanted in items:
                chosen[items.index(wanted)] = wanted
        elif key.startswith("i:"):
            index = int(key[2:])
            if index < len(items):
                chosen[index] = _pick(items[index], sub)
    return [chosen[index] for index in sorted(chosen)]


def _merge(into: dict[str, Any], more: dict[str, Any]) -> None:
    for key, value in more.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def extract(
    obj: Any, field_manager: str, *, subresource: str = "", scheme: Scheme | None = None
) -> Any:
    """The fields ``field_manager`` owns in ``obj`` (client-go's ``Extract*``).

    Args:
        obj: An object as read from the API server, with ``metadata.managedFields``
            (a manager's cache strips them by default: read with ``client.api_reader``).
        field_manager: The field manager whose applied fields to return.
        subresource: ``"status"`` for the fields applied to the status subresource.
        scheme: Serialises ``obj`` (default: the default scheme).

    Returns:
        An apply configuration of ``obj``'s type (`apply_config_for`) for a typed object,
        an `pyctrl.resource.Unstructured` for an Unstructured one, a dict for a dict.
    """
    scheme = scheme or default_scheme()
    data = owned_fields(scheme.to_dict(obj), field_manager, subresource=subresource)
    if isinstance(obj, Unstructured):
        return Unstructured(data)
    if isinstance(obj, dict):
        return data
    return apply_config_for(type(obj)).model_validate(data)
