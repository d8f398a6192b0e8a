"""kubernetes-asyncio's models as pydantic field types.

kubernetes-asyncio generates one plain class per Kubernetes type (``V1PodTemplateSpec``,
``V1ResourceRequirements``...): ``openapi_types`` maps each attribute to its type
(``list[V1Container]``, ``dict(str, str)``, ``int``, ``datetime``, ``object``) and
``attribute_map`` to its JSON name. Pydantic knows nothing of them, so a `KubeModel`
field typed ``V1JobTemplateSpec`` would fail with ``PydanticSchemaGenerationError``.

`teach_pydantic` gives every model class a ``__get_pydantic_core_schema__`` built from
those two tables, so that such a field:

* validates the wire form (camelCase keys, also the Python names) into the model, with
  Go's decoder's strictness for scalars (``"80"`` is not an integer, ``1`` is not a
  string); an instance of the model is taken as it is; unknown keys are dropped, as
  kube-apiserver drops fields its Go type lacks;
* serialises back to the wire form, ``None`` attributes left out.

Nothing here imports kubernetes-asyncio: its ~700 models load only when user code
imports them (see `pyctrl._kubernetes`). `KubeModel` calls `teach_pydantic` each time a
subclass is created, which patches the classes once the models package is loaded.
"""

from __future__ import annotations

import functools
import re
import sys
import threading
from typing import Any, Final, TypeGuard

from pydantic_core import core_schema

__all__ = ["is_builtin_model", "openapi_type_parts", "required_attribute", "teach_pydantic"]

_MODELS: Final = "kubernetes_asyncio.client.models"
_SCHEMA_HOOK: Final = "__get_pydantic_core_schema__"
_LIST: Final = re.compile(r"^list\[(.+)\]$")
_DICT: Final = re.compile(r"^dict\(([^,]*), (.+)\)$")
_lock = threading.Lock()
_taught: set[int] = set()
_in_progress = threading.local()


def is_builtin_model(tp: Any) -> TypeGuard[type]:
    """Whether ``tp`` is a kubernetes-asyncio model class."""
    return (
        isinstance(tp, type)
        and tp.__module__.startswith(_MODELS)
        and isinstance(getattr(tp, "openapi_types", None), dict)
        and isinstance(getattr(tp, "attribute_map", None), dict)
    )


def openapi_type_parts(typ: str) -> tuple[str, str]:
    """Split an ``openapi_types`` entry: ``(list, inner)``, ``(dict, value)`` or ``("", typ)``."""
    if match := _LIST.match(typ):
        return "list", match.group(1)
    if match := _DICT.match(typ):
        return "dict", match.group(2)
    return "", typ


def required_attribute(cls: type, attr: str) -> bool:
    """Whether the model's attribute is required (its generated setter refuses None)."""
    prop = cls.__dict__.get(attr)
    code = getattr(getattr(prop, "fset", None), "__code__", None)
    if code is None:
        return False
    marker = f"Invalid value for `{attr}`, must not be `None`"
    return any(isinstance(c, str) and c.startswith(marker) for c in code.co_consts)


def teach_pydantic() -> None:
    """Give each loaded kubernetes-asyncio model a pydantic core schema (once)."""
    models = sys.modules.get(_MODELS)
    if models is None or id(models) in _taught:
        return
    with _lock:
        if id(models) in _taught:
            return
        for value in list(vars(models).values()):
            if is_builtin_model(value) and _SCHEMA_HOOK not in value.__dict__:
                setattr(value, _SCHEMA_HOOK, classmethod(_core_schema))
        _taught.add(id(models))


@functools.cache
def _configuration() -> Any:
    # No client-side checks: validation already happened, and a value the server sent
    # (an enum value newer than the client) must not fail.
    from kubernetes_asyncio.client.configuration import Configuration

    config = Configuration()
    config.client_side_validation = False
    return config


def _scalar(name: str) -> core_schema.CoreSchema | None:
    schemas: dict[str, core_schema.CoreSchema] = {
        "str": core_schema.str_schema(strict=True),
        "int": core_schema.int_schema(strict=True),
        "bool": core_schema.bool_schema(strict=True),
        "float": core_schema.float_schema(strict=True),
        "datetime": core_schema.datetime_schema(),
        "date": core_schema.date_schema(),
        "object": core_schema.any_schema(),
    }
    return schemas.get(name)


def _value_schema(typ: str, handler: Any) -> core_schema.CoreSchema:
    container, inner = openapi_type_parts(typ)
    if container == "list":
        return core_schema.list_schema(core_schema.nullable_schema(_value_schema(inner, handler)))
    if container == "dict":
        return core_schema.dict_schema(
            core_schema.str_schema(),
            core_schema.nullable_schema(_value_schema(inner, handler)),
        )
    scalar = _scalar(inner)
    if scalar is not None:
        return scalar
    models = sys.modules[_MODELS]
    target = getattr(models, inner)
    stack: list[type] = _stack()
    if target in stack:
        return core_schema.definition_reference_schema(_ref(target))
    schema: core_schema.CoreSchema = handler.generate_schema(target)
    return schema


def _stack() -> list[type]:
    stack: list[type] | None = getattr(_in_progress, "stack", None)
    if stack is None:
        stack = []
        _in_progress.stack = stack
    return stack


def _ref(cls: type) -> str:
    return f"kubernetes_asyncio.{cls.__name__}"


def _core_schema(cls: type, source: Any, handler: Any) -> core_schema.CoreSchema:
    stack = _stack()
    stack.append(cls)
    try:
        openapi_types: dict[str, str] = cls.openapi_types  # type: ignore[attr-defined]
        attribute_map: dict[str, str] = cls.attribute_map  # type: ignore[attr-defined]
        fields: dict[str, core_schema.TypedDictField] = {}
        out_fields: dict[str, core_schema.TypedDictField] = {}
        for attr, typ in openapi_types.items():
            wire = attribute_map[attr]
            value = _value_schema(typ, handler)
            required = required_attribute(cls, attr)
            aliases: list[list[str | int]] = [[wire], [attr]]
            fields[attr] = core_schema.typed_dict_field(
                value if required else core_schema.nullable_schema(value),
                required=required,
                validation_alias=aliases if wire != attr else None,
            )
            out_fields[wire] = core_schema.typed_dict_field(
                core_schema.nullable_schema(value), required=False
            )
    finally:
        stack.pop()

    def build(data: dict[str, Any]) -> Any:
        return cls(local_vars_configuration=_configuration(), **data)

    def dump(obj: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for attr in openapi_types:
            value = getattr(obj, attr)
            if value is not None:
                out[attribute_map[attr]] = value
        return out

    def take_instance(value: Any, validate: core_schema.ValidatorFunctionWrapHandler) -> Any:
        return value if isinstance(value, cls) else validate(value)

    return core_schema.no_info_wrap_validator_function(
        take_instance,
        core_schema.no_info_after_validator_function(
            build, core_schema.typed_dict_schema(fields, extra_behavior="ignore")
        ),
        serialization=core_schema.plain_serializer_function_ser_schema(
            dump,
            return_schema=core_schema.typed_dict_schema(out_fields),
        ),
        ref=_ref(cls),
    )
