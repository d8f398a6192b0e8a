"""Typed models for CRDs you did not write: Python source from a CustomResourceDefinition.

This is pyctrl's kopium. `models_for` reads a CRD (cert-manager's Certificate,
prometheus-operator's ServiceMonitor, a Gateway API route...) and writes a module of
`pyctrl.resource.CustomResource` classes, one per served version, and a `KubeModel`
per nested object, such that `pyctrl.crd.crd_for` of the classes gives back the CRD's
schemas:

* property names become snake_case attributes with the wire name as alias;
* a required property is a plain field; any other is ``Omittable[X] = None`` (absent
  rather than null on the wire) or ``X | None = None`` where the schema says
  ``nullable``; a schema ``default`` stays in the schema (`Default`), for the API server
  to fill in, so an object read and written back is unchanged;
* ``enum`` becomes ``Literal``; int-or-string ``IntOrString`` (``Quantity`` with the
  quantity pattern); ``date-time`` strings ``Time``; ``int32``/``int64`` ``Int32``/
  ``Int64``; constraints ``Field(ge=..., max_length=..., pattern=...)``;
* list and map types, CEL rules, unknown-field preservation and embedded resources
  become the matching markers; keywords with no Python form are kept with `SchemaExtra`;
* descriptions become class docstrings (an ``Attributes:`` entry per field, or
  ``Field(description=...)`` when a docstring could not carry the text exactly);
* identical nested objects (one Go type used in several places) share one class, named
  after the first place it appears.

The output depends only on the input, so generating again changes nothing.
"""

from __future__ import annotations

import ast
import keyword
import re
from dataclasses import astuple, dataclass, field
from typing import Any, Final

from pydantic import BaseModel

from pyctrl.crd._crd import version_priority_key
from pyctrl.crd._docs import class_docs
from pyctrl.crd._markers import QUANTITY_PATTERN
from pyctrl.errors import SchemaError

__all__ = ["models_for"]

_ROOT_FIELDS: Final = frozenset({"apiVersion", "kind", "metadata"})
# Keywords turned into Python types, constraints or markers; the rest go to SchemaExtra.
_HANDLED: Final = frozenset(
    {
        "type", "format", "description", "properties", "required", "items",
        "additionalProperties", "enum", "nullable", "default", "pattern", "minLength",
        "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "multipleOf", "minItems", "maxItems", "minProperties", "maxProperties",
        "x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource", "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys", "x-kubernetes-map-type", "x-kubernetes-validations",
        "anyOf",
    }
)  # fmt: skip
# Attribute names a generated field must not take: pydantic's and KubeModel's, and the
# builtins the class body's annotations use (class attributes shadow them there).
_RESERVED: Final = frozenset(dir(BaseModel)) | {
    "to_dict", "from_dict", "str", "int", "float", "bool", "list", "dict",
}  # fmt: skip
# And on the CustomResource class itself.
_ROOT_RESERVED: Final = _RESERVED | {"api_version", "kind", "metadata", "gvk", "resource_info"}
_CAMEL_BOUNDARY: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_INT_FORMATS: Final = {"int32": "Int32", "int64": "Int64"}


def _to_camel(name: str) -> str:
    # pydantic's to_camel, as KubeModel's alias generator applies it.
    from pydantic.alias_generators import to_camel

    return to_camel(name)


def _snake(wire: str, reserved: frozenset[str]) -> str:
    name = _CAMEL_BOUNDARY.sub("_", wire).lower()
    name = re.sub(r"\W", "_", name)
    if not name or name[0].isdigit():
        name = "f_" + name
    if (
        keyword.iskeyword(name)
        or name in reserved
        or name in _IMPORTED_NAMES
        or name.startswith(("model_", "_"))
    ):
        name += "_"
    return name


def _pascal(wire: str) -> str:
    parts = re.split(r"[^A-Za-z0-9]+", wire)
    return "".join(p[:1].upper() + p[1:] for p in parts if p)


@dataclass
class _Field:
    name: str
    wire: str
    annotation: str
    default: str | None  # Python source of the default, None when required
    description: str


@dataclass
class _Class:
    name: str
    base: str
    description: str
    fields: list[_Field] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)
    decorators: list[str] = field(default_factory=list)


class _Writer:
    """Turns the schemas of one CRD into classes, nested ones first."""

    def __init__(self) -> None:
        self.classes: list[_Class] = []
        self.names: set[str] = set()
        self.shapes: dict[tuple[Any, ...], _Class] = {}
        self.imports: dict[str, set[str]] = {}

    def use(self, module: str, *names: str) -> None:
        self.imports.setdefault(module, set()).update(names)

    def class_name(self, wanted: str) -> str:
        name, n = wanted, 2
        while name in self.names or name in _IMPORTED_NAMES:
            name, n = f"{wanted}{n}", n + 1
        self.names.add(name)
        return name

    # --- types -----------------------------------------------------------------------

    def annotation(self, schema: dict[str, Any], path: str) -> str:
        """The Python type of ``schema`` (without its nullability)."""
        base, markers = self._base(schema, path)
        markers += self._markers(schema)
        if schema.get("description") and not _is_class(schema):
            self.use("pyctrl.crd", "Description")
            markers.append(f"Description({_literal(schema['description'])})")
        extra = {k: v for k, v in schema.items() if k not in _HANDLED}
        if schema.get("anyOf") is not None and not schema.get("x-kubernetes-int-or-string"):
            extra["anyOf"] = schema["anyOf"]
        if extra:
            self.use("pyctrl.crd", "SchemaExtra")
            markers.append(f"SchemaExtra({_literal(extra)})")
        if not markers:
            return base
        self.use("typing", "Annotated")
        return f"Annotated[{base}, {', '.join(markers)}]"

    def _base(self, schema: dict[str, Any], path: str) -> tuple[str, list[str]]:  # noqa: PLR0911 - one branch per schema type
        kind = schema.get("type")
        if "enum" in schema and kind in ("string", "integer"):
            self.use("typing", "Literal")
            values = ", ".join(_literal(v) for v in schema["enum"] if v is not None)
            return f"Literal[{values}]", self._constraints(schema)
        if schema.get("x-kubernetes-int-or-string"):
            self.use("pyctrl.crd", "IntOrString", "Quantity")
            if schema.get("pattern") == QUANTITY_PATTERN:
                return "Quantity", []
            extra = {"pattern": schema["pattern"]} if "pattern" in schema else {}
            if extra:
                self.use("pyctrl.crd", "SchemaExtra")
                return "IntOrString", [f"SchemaExtra({_literal(extra)})"]
            return "IntOrString", []
        if kind == "string":
            return self._string(schema)
        if kind == "integer":
            fmt = schema.get("format")
            if fmt in _INT_FORMATS:
                self.use("pyctrl.crd", _INT_FORMATS[fmt])
                return _INT_FORMATS[fmt], self._constraints(schema)
            return "int", self._format(schema) + self._constraints(schema)
        if kind == "number":
            return "float", self._format(schema) + self._constraints(schema)
        if kind == "boolean":
            return "bool", []
        if kind == "array":
            items = schema.get("items") or {}
            item = self.annotation(items, path)
            if items.get("nullable"):
                item = f"{item} | None"
            return f"list[{item}]", self._constraints(schema)
        if kind == "object" or kind is None:
            return self._object(schema, path)
        raise SchemaError(f"{path}: type {kind!r} has no Python form")

    def _string(self, schema: dict[str, Any]) -> tuple[str, list[str]]:
        if schema.get("format") == "date-time":
            self.use("pyctrl.meta", "Time")
            return "Time", self._constraints(schema)
        return "str", self._format(schema) + self._constraints(schema)

    def _format(self, schema: dict[str, Any]) -> list[str]:
        if "format" not in schema:
            return []
        self.use("pyctrl.crd", "Format")
        return [f"Format({_literal(schema['format'])})"]

    def _constraints(self, schema: dict[str, Any]) -> list[str]:
        args: list[str] = []
        pairs = (
            ("minLength", "min_length"), ("maxLength", "max_length"), ("pattern", "pattern"),
            ("minItems", "min_length"), ("maxItems", "max_length"),
            ("minProperties", "min_length"), ("maxProperties", "max_length"),
            ("multipleOf", "multiple_of"),
        )  # fmt: skip
        for key, arg in pairs:
            if key in schema:
                args.append(f"{arg}={_literal(schema[key])}")
        for key, inclusive, exclusive, flag in (
            ("minimum", "ge", "gt", "exclusiveMinimum"),
            ("maximum", "le", "lt", "exclusiveMaximum"),
        ):
            if key in schema:
                arg = exclusive if schema.get(flag) is True else inclusive
                args.append(f"{arg}={_literal(schema[key])}")
        if not args:
            return []
        self.use("pydantic", "Field")
        return [f"Field({', '.join(args)})"]

    def _markers(self, schema: dict[str, Any]) -> list[str]:
        out: list[str] = []
        list_type = schema.get("x-kubernetes-list-type")
        if list_type is not None:
            self.use("pyctrl.crd", "ListType")
            keys = schema.get("x-kubernetes-list-map-keys")
            if keys:
                out.append(f"ListType({_literal(list_type)}, keys={_literal(tuple(keys))})")
            else:
                out.append(f"ListType({_literal(list_type)})")
        if "x-kubernetes-map-type" in schema:
            self.use("pyctrl.crd", "MapType")
            out.append(f"MapType({_literal(schema['x-kubernetes-map-type'])})")
        if schema.get("x-kubernetes-embedded-resource"):
            self.use("pyctrl.crd", "EmbeddedResource")
            out.append("EmbeddedResource()")
        if schema.get("x-kubernetes-preserve-unknown-fields") and schema.get("properties"):
            self.use("pyctrl.crd", "PreserveUnknownFields")
            out.append("PreserveUnknownFields()")
        out.extend(self.rules(schema))
        if "default" in schema:
            self.use("pyctrl.crd", "Default")
            out.append(f"Default({_literal(schema['default'])})")
        return out

    def rules(self, schema: dict[str, Any]) -> list[str]:
        out: list[str] = []
        for rule in schema.get("x-kubernetes-validations") or ():
            self.use("pyctrl.crd", "XValidation")
            args = [_literal(rule["rule"])]
            for key, arg in (
                ("message", "message"),
                ("messageExpression", "message_expression"),
                ("reason", "reason"),
                ("fieldPath", "field_path"),
                ("optionalOldSelf", "optional_old_self"),
            ):
                if key in rule:
                    args.append(f"{arg}={_literal(rule[key])}")
            out.append(f"XValidation({', '.join(args)})")
        return out

    def _object(self, schema: dict[str, Any], path: str) -> tuple[str, list[str]]:
        constraints = self._constraints(schema)
        if _is_class(schema):
            return self.model(schema, path, base="KubeModel").name, constraints
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict):
            value = self.annotation(additional, path)
            if additional.get("nullable"):
                value = f"{value} | None"
            return f"dict[str, {value}]", constraints
        self.use("typing", "Any")
        if schema.get("type") is None:
            return "Any", constraints
        if schema.get("x-kubernetes-preserve-unknown-fields") or schema.get(
            "x-kubernetes-embedded-resource"
        ):
            return "dict[str, Any]", constraints
        self.use("pydantic.json_schema", "WithJsonSchema")
        return "dict[str, Any]", [*constraints, 'WithJsonSchema({"type": "object"})']

    # --- classes ---------------------------------------------------------------------

    def model(
        self,
        schema: dict[str, Any],
        path: str,
        *,
        base: str,
        skip: frozenset[str] = frozenset(),
        name: str | None = None,
    ) -> _Class:
        cls = _Class(name=name or "", base=base, description=str(schema.get("description", "")))
        self.use("pyctrl.meta", "KubeModel")
        required = set(schema.get("required") or ())
        used: set[str] = set()
        for wire, prop in (schema.get("properties") or {}).items():
            if wire in skip:
                continue
            py = _snake(wire, _ROOT_RESERVED if base == "CustomResource" else _RESERVED)
            while py in used:
                py += "_"
            used.add(py)
            cls.fields.append(self.field(py, wire, prop, wire in required, path + _pascal(wire)))
        if name is None:
            # One class per distinct object schema: the same Go type used in several places
            # (a SecretKeySelector, a TLS config) gives one class, named where first met.
            shape = (base, cls.description, tuple(astuple(f) for f in cls.fields))
            if shape in self.shapes:
                return self.shapes[shape]
            cls.name = self.class_name(path)
            self.shapes[shape] = cls
        self.classes.append(cls)
        return cls

    def field(
        self, name: str, wire: str, schema: dict[str, Any], required: bool, path: str
    ) -> _Field:
        node = dict(schema)
        description = ""
        if not (node.get("properties") and node.get("type") == "object"):
            # An object's description is its class docstring; any other is the field's.
            description = str(node.pop("description", ""))
        annotation = self.annotation(node, path)
        default: str | None = None
        if schema.get("nullable"):
            annotation, default = f"{annotation} | None", "None"
        elif not required:
            self.use("pyctrl.crd", "Omittable")
            annotation, default = f"Omittable[{annotation}]", "None"
        return _Field(name, wire, annotation, default, description)


_IMPORTED_NAMES: Final = frozenset(
    {
        "Annotated", "Any", "Literal", "Field", "WithJsonSchema", "KubeModel", "Time",
        "CustomResource", "PrinterColumn", "ScaleSubresource", "Default", "EmbeddedResource",
        "Format", "Int32", "Int64", "IntOrString", "ListType", "MapType", "Omittable",
        "Description",
        "PreserveUnknownFields", "Quantity", "SchemaExtra", "XValidation",
    }
)  # fmt: skip


def _is_class(schema: dict[str, Any]) -> bool:
    return bool(schema.get("properties")) and schema.get("type") in ("object", None)


def _literal(value: Any) -> str:
    if isinstance(value, tuple):
        inner = ", ".join(_literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    return repr(value)


# --- rendering -------------------------------------------------------------------------


def _docstring(text: str, indent: str) -> str:
    body = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = body.split("\n")
    if len(lines) > 1:
        # Open with a line break so the first line is indented like the others, which
        # is what inspect.cleandoc (and so the section parser) expects.
        lines = ["", *lines]
    out = [f'{indent}"""{lines[0]}']
    out += [f"{indent}{line}" if line else "" for line in lines[1:]]
    if len(lines) == 1 and not lines[0].endswith('"'):
        return f'{indent}"""{lines[0]}"""'
    return "\n".join(out) + f'\n{indent}"""'


def _parses_back(description: str, entries: dict[str, str]) -> bool:
    """Whether a docstring with ``entries`` as ``Attributes:`` gives them back exactly."""
    # Through the source text, as the class statement will carry it.
    doc = ast.literal_eval(_docstring(_compose_doc(description, entries), "    ").strip())
    probe = type("Probe", (), {"__doc__": doc})
    return class_docs(probe) == (description.strip(), entries)


def _compose_doc(description: str, entries: dict[str, str]) -> str:
    parts = [description] if description else []
    if entries:
        lines = ["Attributes:"]
        for name, text in entries.items():
            first, *rest = text.split("\n")
            lines.append(f"    {name}: {first}".rstrip())
            lines += [f"        {line}" if line else "" for line in rest]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def _render_class(cls: _Class) -> str:
    entries = {f.name: f.description for f in cls.fields if f.description.strip()}
    inline: set[str] = set()
    # Entries that a docstring cannot carry exactly go to Field(description=...).
    for name in list(entries):
        if not _parses_back("", {name: entries[name]}) or entries[name] != entries[name].strip():
            inline.add(name)
            del entries[name]
    if not _parses_back(cls.description, entries):
        inline |= set(entries)
        entries = {}
    header = ", ".join([cls.base, *cls.keywords])
    lines = [*cls.decorators, f"class {cls.name}({header}):"]
    doc = _compose_doc(cls.description.strip(), entries)
    if doc:
        lines.append(_docstring(doc, "    "))
        lines.append("")
    for f in cls.fields:
        args: list[str] = []
        if f.default is not None:
            args.append(f"default={f.default}")
        if _to_camel(f.name) != f.wire:
            args.append(f"alias={_literal(f.wire)}")
        if f.name in inline:
            args.append(f"description={_literal(f.description)}")
        if args == [f"default={f.default}"]:
            lines.append(f"    {f.name}: {f.annotation} = {f.default}")
        elif args:
            lines.append(f"    {f.name}: {f.annotation} = Field({', '.join(args)})")
        else:
            lines.append(f"    {f.name}: {f.annotation}")
    if not cls.fields and not doc:
        lines.append("    pass")
    return "\n".join(lines)


def _resource_keywords(crd: dict[str, Any], version: dict[str, Any]) -> list[str]:
    spec = crd["spec"]
    names = spec["names"]
    kind = names["kind"]
    out = [
        f"group={_literal(spec['group'])}",
        f"version={_literal(version['name'])}",
        f"kind={_literal(kind)}",
        f"plural={_literal(names['plural'])}",
    ]
    if names.get("singular", kind.lower()) != kind.lower():
        out.append(f"singular={_literal(names['singular'])}")
    if spec.get("scope", "Namespaced") != "Namespaced":
        out.append(f"scope={_literal(spec['scope'])}")
    for key, arg in (("shortNames", "short_names"), ("categories", "categories")):
        if names.get(key):
            out.append(f"{arg}={_literal(tuple(names[key]))}")
    out.append(f"storage={version.get('storage', False)!r}")
    if version.get("deprecated"):
        out.append("deprecated=True")
        if "deprecationWarning" in version:
            out.append(f"deprecation_warning={_literal(version['deprecationWarning'])}")
    subresources = version.get("subresources") or {}
    out.append(f"status_subresource={'status' in subresources!r}")
    return out


def _columns_and_scale(writer: _Writer, version: dict[str, Any]) -> list[str]:
    out: list[str] = []
    columns = version.get("additionalPrinterColumns") or []
    if columns:
        writer.use("pyctrl.resource", "PrinterColumn")
        rendered = []
        for column in columns:
            args = [
                _literal(column["name"]),
                _literal(column["jsonPath"]),
                _literal(column["type"]),
            ]
            for key in ("description", "priority", "format"):
                if column.get(key):
                    args.append(f"{key}={_literal(column[key])}")
            rendered.append(f"PrinterColumn({', '.join(args)})")
        out.append(f"printer_columns=({', '.join(rendered)},)")
    scale = (version.get("subresources") or {}).get("scale")
    if scale is not None:
        writer.use("pyctrl.resource", "ScaleSubresource")
        args = [
            f"spec_replicas_path={_literal(scale['specReplicasPath'])}",
            f"status_replicas_path={_literal(scale['statusReplicasPath'])}",
        ]
        if "labelSelectorPath" in scale:
            args.append(f"label_selector_path={_literal(scale['labelSelectorPath'])}")
        out.append(f"scale=ScaleSubresource({', '.join(args)})")
    return out


def models_for(crd: dict[str, Any], *, source: str = "") -> str:
    """Python source of `CustomResource` models for a CustomResourceDefinition.

    Args:
        crd: An ``apiextensions.k8s.io/v1`` CustomResourceDefinition.
        source: Where the CRD came from, named in the module docstring.

    Returns:
        The module's source text: one `CustomResource` class per served version (named
        after the kind, with the version appended when several are served) and one
        `KubeModel` per nested object.

    Raises:
        SchemaError: The CRD is not an ``apiextensions.k8s.io/v1`` CRD with schemas.
    """
    if crd.get("kind") != "CustomResourceDefinition" or crd.get("apiVersion") != (
        "apiextensions.k8s.io/v1"
    ):
        raise SchemaError(
            f"expected an apiextensions.k8s.io/v1 CustomResourceDefinition, got "
            f"{crd.get('apiVersion')}, Kind={crd.get('kind')}"
        )
    spec = crd["spec"]
    kind = spec["names"]["kind"]
    served = sorted(
        (v for v in spec["versions"] if v.get("served", True)),
        key=lambda v: version_priority_key(v["name"]),
    )
    writer = _Writer()
    roots: list[str] = []
    for version in served:
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if schema is None:
            raise SchemaError(f"{crd['metadata']['name']} {version['name']} has no schema")
        name = writer.class_name(kind if len(served) == 1 else kind + _pascal(version["name"]))
        writer.use("pyctrl.resource", "CustomResource")
        root = writer.model(schema, name, base="CustomResource", skip=_ROOT_FIELDS, name=name)
        root.keywords = [*_resource_keywords(crd, version), *_columns_and_scale(writer, version)]
        root.decorators = [f"@{rule}" for rule in writer.rules(schema)]
        roots.append(name)
    header = (
        f'"""Typed models of the {kind} custom resource ({crd["metadata"]["name"]}).\n\n'
        f"Generated by ``pyctrl generate models``{f' from {source}' if source else ''}; "
        'do not edit.\n"""'
    )
    body = "\n\n\n".join(_render_class(c) for c in writer.classes)
    if " = Field(" in body:
        writer.use("pydantic", "Field")
    imports = []
    for module in sorted(writer.imports, key=lambda m: (m.startswith("pyctrl"), m != "typing", m)):
        names = ", ".join(sorted(writer.imports[module]))
        imports.append(f"from {module} import {names}")
    exported = ", ".join(_literal(n) for n in sorted(c.name for c in writer.classes))
    return f"{header}\n\n" + "\n".join(imports) + f"\n\n__all__ = [{exported}]\n\n\n{body}\n"
