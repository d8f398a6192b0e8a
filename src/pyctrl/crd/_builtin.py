"""CRD schemas of kubernetes-asyncio models, from the OpenAPI the API server publishes.

controller-gen writes the full schema of an embedded ``corev1.PodTemplateSpec`` into a
CRD, read from the Go types. pyctrl takes it from the OpenAPI definitions of the built-in
kinds that its embedded API server publishes (``/openapi/v2``, named after the Go types:
``io.k8s.api.core.v1.Container``...), and turns a definition into the structural form a
CRD needs, as controller-gen renders the same Go types:

* ``$ref`` is inlined, the field's description winning over the type's;
* ``IntOrString`` becomes ``anyOf: [integer, string]`` with
  ``x-kubernetes-int-or-string``, ``Time``/``MicroTime`` a ``date-time`` string,
  a free-form ``object`` (``RawExtension``) preserves unknown fields, and a nested
  ``ObjectMeta`` the embedded ObjectMeta of the generator;
* ``x-kubernetes-list-type``, ``-list-map-keys`` and ``-map-type`` are kept; the
  strategic-merge-patch extensions (``x-kubernetes-patch-*``), which CRDs do not have,
  are dropped;
* a list-map key field that is neither required nor defaulted gets the default the
  Go type declares (``+default``; kube-apiserver publishes it, the embedded server states
  it in the description only, ``Defaults to "TCP"``), else the Go zero value that an
  absent non-pointer field decodes to: the API server refuses list-map keys without one.

The one place that reads the server's data is `_published_definitions`.
"""

from __future__ import annotations

import copy
import functools
import importlib
import re
from typing import TYPE_CHECKING, Any, Final

from pyctrl._builtin_models import is_builtin_model, openapi_type_parts
from pyctrl.errors import SchemaError

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["builtin_schema", "is_builtin_model"]

_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1"
_INT_OR_STRING: Final = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_TIMES: Final = frozenset({f"{_META}.Time", f"{_META}.MicroTime"})
_OBJECT_META: Final = f"{_META}.ObjectMeta"
_REF_PREFIX: Final = "#/definitions/"
_KEPT_EXTENSIONS: Final = frozenset(
    {"x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type"}
)
# How upstream descriptions state a +default of a string field: 'Defaults to "TCP".'
_STATED_DEFAULT: Final = re.compile(r'Defaults to "([^"]+)"')
_ZERO: Final[dict[str, Any]] = {"string": "", "integer": 0, "number": 0, "boolean": False}


def _published_definitions(group: str, version: str, kind: str) -> dict[str, Any] | None:
    """The Swagger 2.0 definitions the embedded API server publishes for one built-in kind."""
    # Imported by name: type-checking a project that uses pyctrl.crd must not analyse the
    # whole embedded server (pyctrl.crd sits above envtest in the import layers all the same).
    server = importlib.import_module("pyctrl._apiserver.scheme.builtin")
    try:
        published: dict[str, Any] | None = server.openapi_definitions(
            group, version, kind, v3=False
        )
        return published
    except KeyError:
        # A kind the client knows but the server does not serve (its catalog lookup
        # fails rather than returning None).
        return None


@functools.cache
def _index() -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """Definition name by model class name, and every published definition by name."""
    from pyctrl.scheme import default_scheme

    scheme = default_scheme()
    names: dict[str, str] = {}
    definitions: dict[str, dict[str, Any]] = {}
    for gvk in scheme.known_kinds():
        published = _published_definitions(gvk.group, gvk.version, gvk.kind)
        model = scheme.type_for(gvk)
        if not published or model is None or not is_builtin_model(model):
            continue
        definitions.update(published)
        _name_models(model, next(iter(published)), published, names)
    return names, definitions


def _name_models(
    model: type, name: str, definitions: dict[str, Any], names: dict[str, str]
) -> None:
    """Walk a model class and its definition side by side, naming the classes reached."""
    if model.__name__ in names:
        return
    names[model.__name__] = name
    properties = definitions.get(name, {}).get("properties", {})
    models = importlib.import_module("kubernetes_asyncio.client.models")
    for attr, typ in model.openapi_types.items():  # type: ignore[attr-defined]
        _, inner = openapi_type_parts(typ)
        target = getattr(models, inner, None)
        if not is_builtin_model(target):
            continue
        ref = _ref_of(properties.get(model.attribute_map[attr], {}))  # type: ignore[attr-defined]
        if ref is not None and ref in definitions:
            _name_models(target, ref, definitions, names)


def _ref_of(prop: dict[str, Any]) -> str | None:
    for node in (prop, prop.get("items") or {}, prop.get("additionalProperties") or {}):
        ref = node.get("$ref") if isinstance(node, dict) else None
        if isinstance(ref, str):
            return ref.removeprefix(_REF_PREFIX)
    return None


def builtin_schema(
    model: type, object_meta: Callable[[], dict[str, Any]], where: str
) -> dict[str, Any]:
    """The structural CRD schema of a kubernetes-asyncio model class.

    Args:
        model: E.g. ``V1PodTemplateSpec``.
        object_meta: The schema of a nested ObjectMeta.
        where: Names the field, for errors.

    Returns:
        A new schema dict.

    Raises:
        SchemaError: No built-in kind the server publishes uses the type, or the type
            is recursive (``V1JSONSchemaProps``).
    """
    names, definitions = _index()
    name = names.get(model.__name__)
    if name is None:
        raise SchemaError(
            f"{where}: {model.__name__} is used by no built-in kind the API server publishes, "
            "so it has no schema to embed; use dict[str, Any] with PreserveUnknownFields()"
        )
    return _Converter(definitions, object_meta, model.__name__, where).convert(name, [])


class _Converter:
    """Inlines one definition and everything it refers to into a structural schema."""

    def __init__(
        self,
        definitions: dict[str, dict[str, Any]],
        object_meta: Callable[[], dict[str, Any]],
        model: str,
        where: str,
    ) -> None:
        self.definitions = definitions
        self.object_meta = object_meta
        self.model = model
        self.where = where

    def convert(self, name: str, stack: list[str]) -> dict[str, Any]:
        if name == _INT_OR_STRING:
            return {
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "x-kubernetes-int-or-string": True,
            }
        if name in _TIMES:
            return {"type": "string", "format": "date-time"}
        if name == _OBJECT_META:
            return self.object_meta()
        if name in stack:
            chain = " -> ".join(n.rsplit(".", 1)[-1] for n in [*stack[stack.index(name) :], name])
            raise SchemaError(
                f"{self.where}: {self.model} is recursive ({chain}); a CRD schema cannot "
                "be: use dict[str, Any] with PreserveUnknownFields()"
            )
        definition = self.definitions.get(name)
        if definition is None:
            raise SchemaError(f"{self.where}: the published OpenAPI has no definition {name}")
        return self.node(definition, [*stack, name])

    def node(self, raw: dict[str, Any], stack: list[str]) -> dict[str, Any]:
        ref = raw.get("$ref")
        if isinstance(ref, str):
            out = self.convert(ref.removeprefix(_REF_PREFIX), stack)
        else:
            out = {
                k: copy.deepcopy(v)
                for k, v in raw.items()
                if not k.startswith("x-")
                and k not in ("properties", "items", "additionalProperties", "description")
            }
        if raw.get("description"):
            out["description"] = raw["description"]
        for key in _KEPT_EXTENSIONS & raw.keys():
            out[key] = copy.deepcopy(raw[key])
        if isinstance(raw.get("properties"), dict):
            out["properties"] = {
                key: self.node(prop, stack) for key, prop in raw["properties"].items()
            }
        for key in ("items", "additionalProperties"):
            if isinstance(raw.get(key), dict):
                out[key] = self.node(raw[key], stack)
        if out.get("type") == "object" and not (
            {"properties", "additionalProperties"} & out.keys()
        ):
            out["x-kubernetes-preserve-unknown-fields"] = True
        if out.get("x-kubernetes-list-type") == "map":
            _default_map_keys(out)
        return out


def _default_map_keys(schema: dict[str, Any]) -> None:
    items = schema.get("items", {})
    required = set(items.get("required", ()))
    for key in schema.get("x-kubernetes-list-map-keys", ()):
        prop = items.get("properties", {}).get(key)
        if prop is None or key in required or "default" in prop:
            continue
        stated = _STATED_DEFAULT.search(prop.get("description", ""))
        if stated is not None and prop.get("type") == "string":
            prop["default"] = stated.group(1)
        elif prop.get("type") in _ZERO:
            # A non-pointer Go field: absent decodes as the zero value.
            prop["default"] = _ZERO[prop["type"]]
