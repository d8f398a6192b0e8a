"""CustomResourceDefinition validation on create and update.

apiextensions' ``pkg/apis/apiextensions/validation``.
"""

from __future__ import annotations

import copy
import urllib.parse
from typing import Any, Final

from pyctrl._apiextensions.cel_rules import valid_field_path
from pyctrl._apiextensions.names import is_dns1035_label, is_dns1123_subdomain
from pyctrl._apiextensions.nodes import Node, str_field
from pyctrl._apiextensions.pruning import prune_value
from pyctrl._apiextensions.structural import (
    OPENAPI_V3_TYPES,
    SchemaOpts,
    go_string_slice,
    map_list_keys_map_set_errors,
    new_structural_error,
    schema_validation_errors,
    validate_structural,
)
from pyctrl._apimachinery.field import (
    Cause,
    child,
    field_duplicate,
    field_forbidden,
    field_invalid,
    field_not_supported,
    field_required,
    field_too_many,
    index,
)
from pyctrl._apimachinery.gofmt import GoLiteral, go_json, go_quote
from pyctrl._apimachinery.jsonvalue import deep_equal


def apply_crd_defaults(crd: dict[str, Any]) -> None:
    """Apply the ``apiextensions.k8s.io/v1`` defaults kube-apiserver sets on a CRD, in place.

    ``spec.names.singular`` defaults to the lowercased kind, ``spec.names.listKind`` to
    ``<Kind>List``, ``spec.conversion`` to ``{"strategy": "None"}``, a conversion
    webhook service port to 443.

    Args:
        crd: The CustomResourceDefinition.
    """
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict):
        kind = names.get("kind")
        if isinstance(kind, str) and kind:
            if not names.get("singular"):
                names["singular"] = kind.lower()
            if not names.get("listKind"):
                names["listKind"] = kind + "List"
    conversion = spec.get("conversion")
    if conversion is None:
        spec["conversion"] = {"strategy": "None"}
    elif isinstance(conversion, dict):
        webhook = conversion.get("webhook")
        if isinstance(webhook, dict):
            client = webhook.get("clientConfig")
            if isinstance(client, dict):
                service = client.get("service")
                if isinstance(service, dict) and service.get("port") is None:
                    service["port"] = 443


def crd_stored_versions(crd: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    """The ``status.storedVersions`` kube-apiserver records for a CRD create or update.

    Create starts from nothing, update from the old object's list; either way the current
    storage version is appended if missing.

    Args:
        crd: The new CustomResourceDefinition.
        old: The existing object on update, else None.

    Returns:
        The stored versions, oldest first.
    """
    stored: list[str] = []
    if old is not None:
        status = old.get("status")
        if isinstance(status, dict) and isinstance(status.get("storedVersions"), list):
            stored = [v for v in status["storedVersions"] if isinstance(v, str)]
    spec = crd.get("spec")
    versions = spec.get("versions") if isinstance(spec, dict) else None
    for version in versions if isinstance(versions, list) else []:
        if isinstance(version, dict) and version.get("storage") is True:
            name = version.get("name")
            if isinstance(name, str) and name not in stored:
                stored.append(name)
            break
    return stored


class _Internal:
    """The internal (hoisted) view of a v1 CRD spec that validation works on."""

    def __init__(self, spec: dict[str, Any]) -> None:
        versions = spec.get("versions")
        self.versions: list[dict[str, Any]] = (
            [v if isinstance(v, dict) else {} for v in versions]
            if isinstance(versions, list)
            else []
        )
        self.validation: dict[str, Any] | None = None
        self.subresources: dict[str, Any] | None = None
        self.columns: list[Any] | None = None
        self.per_version_schema = True
        self.per_version_subresources = True
        self.per_version_columns = True
        self.selectable: list[Any] | None = None
        self.per_version_selectable = True
        if not self.versions:
            return
        first = self.versions[0]
        for key in ("schema", "subresources", "additionalPrinterColumns", "selectableFields"):
            values = [v.get(key) for v in self.versions]
            if all(deep_equal(values[0], v) for v in values):
                if key == "schema":
                    self.validation = (
                        first.get("schema") if isinstance(first.get("schema"), dict) else None
                    )
                    self.per_version_schema = False
                elif key == "subresources":
                    sub = first.get("subresources")
                    self.subresources = sub if isinstance(sub, dict) else None
                    self.per_version_subresources = False
                elif key == "selectableFields":
                    fields = first.get("selectableFields")
                    self.selectable = fields if isinstance(fields, list) else None
                    self.per_version_selectable = False
                else:
                    cols = first.get("additionalPrinterColumns")
                    self.columns = cols if isinstance(cols, list) else None
                    self.per_version_columns = False

    def version_subresources(self, version: dict[str, Any]) -> dict[str, Any] | None:
        if not self.per_version_subresources:
            return self.subresources
        sub = version.get("subresources")
        return sub if isinstance(sub, dict) else None

    def any_status(self) -> bool:
        if self.subresources is not None and self.subresources.get("status") is not None:
            return True
        for v in self.versions:
            sub = v.get("subresources")
            if isinstance(sub, dict) and sub.get("status") is not None:
                return True
        return False

    def schemas(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if self.validation is not None and isinstance(self.validation.get("openAPIV3Schema"), dict):
            out.append(self.validation["openAPIV3Schema"])
        if self.per_version_schema:
            for v in self.versions:
                sch = v.get("schema")
                if isinstance(sch, dict) and isinstance(sch.get("openAPIV3Schema"), dict):
                    out.append(sch["openAPIV3Schema"])
        return out


def _schema_has(s: Any, pred: Any) -> bool:
    if not isinstance(s, dict):
        return False
    if pred(s):
        return True
    subs: list[Any] = []
    items = s.get("items")
    if isinstance(items, list):
        subs.extend(items)
    else:
        subs.append(items)
    for name in ("allOf", "anyOf", "oneOf"):
        value = s.get(name)
        if isinstance(value, list):
            subs.extend(value)
    subs.append(s.get("not"))
    for name in ("properties", "patternProperties", "definitions", "dependencies"):
        value = s.get(name)
        if isinstance(value, dict):
            subs.extend(value.values())
    subs.append(s.get("additionalProperties"))
    subs.append(s.get("additionalItems"))
    return any(_schema_has(sub, pred) for sub in subs)


def _has_non_atomic_set(s: dict[str, Any]) -> bool:
    items = s.get("items")
    if s.get("x-kubernetes-list-type") != "set" or not isinstance(items, dict):
        return False
    if items.get("type") == "array":
        lt = items.get("x-kubernetes-list-type")
        return lt is not None and lt != "atomic"
    if items.get("type") == "object":
        return items.get("x-kubernetes-map-type") != "atomic"
    return False


def _has_unpruned_default(s: dict[str, Any]) -> bool:
    if new_structural_error(s) is not None or validate_structural(s, ""):
        return False
    node = Node(s)

    def walk(n: Node) -> bool:
        if n.has_default:
            pruned = copy.deepcopy(n.default)
            prune_value(pruned, n, n.embedded, None, "")
            if not deep_equal(pruned, n.default):
                return True
        kids = list((n.properties or {}).values())
        if n.items is not None:
            kids.append(n.items)
        return any(walk(k) for k in kids)

    return walk(node)


def _schema_opts(old_spec: _Internal | None) -> SchemaOpts:
    if old_spec is None:
        return SchemaOpts()
    schemas = old_spec.schemas()

    def any_schema(pred: Any) -> bool:
        return any(_schema_has(s, pred) for s in schemas)

    return SchemaOpts(
        require_valid_property_type=not any_schema(
            lambda s: (
                isinstance(s.get("type"), str) and s["type"] and s["type"] not in OPENAPI_V3_TYPES
            )
        ),
        require_pruned_defaults=not any(_has_unpruned_default(s) for s in schemas),
        require_atomic_set_type=not any_schema(_has_non_atomic_set),
        require_map_list_keys_map_set_validation=not any_schema(
            lambda s: bool(map_list_keys_map_set_errors(s, ""))
        ),
    )


def _is_established(crd: dict[str, Any]) -> bool:
    status = crd.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for cond in conditions if isinstance(conditions, list) else []:
        if (
            isinstance(cond, dict)
            and cond.get("type") == "Established"
            and cond.get("status") == "True"
        ):
            return True
    return False


def validate_crd(crd: dict[str, Any], old: dict[str, Any] | None = None) -> list[Cause]:
    """Validate an ``apiextensions.k8s.io/v1`` CustomResourceDefinition as kube-apiserver.

    Checks ``metadata.name`` (``<plural>.<group>``, a DNS subdomain), the group, scope,
    names (plural/singular/kind/listKind/shortNames/categories), versions (DNS-1035
    names, unique, exactly one storage version, schemas present and acceptable as
    :func:`structural_errors` describes, subresources, printer columns, selectable
    fields, deprecation warnings), conversion settings, API approval of protected groups
    and stored versions. On update (``old`` given) the group and plural are immutable,
    the scope and kind too once ``old`` is Established, every stored version must remain
    in ``spec.versions``, and checks that would reject what ``old`` already contained are
    relaxed as kube-apiserver relaxes them.

    The v1 defaults (see :func:`apply_crd_defaults`) are applied to a copy first; the
    stored versions are computed with :func:`crd_stored_versions`. Generic ObjectMeta
    checks other than the name (labels, annotations, immutable metadata fields) are left
    to the caller.

    Args:
        crd: The CustomResourceDefinition as decoded JSON.
        old: The existing object on update, else None.

    Returns:
        The causes, in kube-apiserver's order.
    """
    crd = copy.deepcopy(crd)
    apply_crd_defaults(crd)
    spec = crd.get("spec") if isinstance(crd.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
    assert isinstance(names, dict)
    group = str_field(spec, "group")
    plural = str_field(names, "plural")
    errs: list[Cause] = []
    errs += _crd_metadata_errors(crd, plural, group)
    old_spec: dict[str, Any] | None = None
    if old is not None:
        old = copy.deepcopy(old)
        apply_crd_defaults(old)
        old_spec = old.get("spec") if isinstance(old.get("spec"), dict) else {}
    internal = _Internal(spec)
    old_internal = _Internal(old_spec) if old_spec is not None else None
    errs += _crd_spec_errors(spec, internal, _schema_opts(old_internal))
    if old is not None and old_spec is not None:
        old_names = old_spec.get("names") if isinstance(old_spec.get("names"), dict) else {}
        assert isinstance(old_names, dict)
        if _is_established(old):
            errs += _immutable("spec.scope", spec.get("scope"), old_spec.get("scope"))
            errs += _immutable("spec.names.kind", names.get("kind"), old_names.get("kind"))
        errs += _immutable("spec.group", spec.get("group"), old_spec.get("group"))
        errs += _immutable("spec.names.plural", names.get("plural"), old_names.get("plural"))
    status = crd.get("status") if isinstance(crd.get("status"), dict) else {}
    assert isinstance(status, dict)
    accepted = status.get("acceptedNames")
    if isinstance(accepted, dict):
        errs += _names_errors(accepted, "status.acceptedNames")
    errs += _stored_versions_errors(crd_stored_versions(crd, old), internal.versions)
    errs += _api_approval_errors(crd, old)
    errs += _preserve_unknown_fields_errors(spec, old_spec)
    return errs


def _immutable(path: str, new: Any, old: Any) -> list[Cause]:
    if deep_equal(new, old):
        return []
    return [field_invalid(path, new, "field is immutable")]


def _crd_metadata_errors(crd: dict[str, Any], plural: str, group: str) -> list[Cause]:
    meta = crd.get("metadata") if isinstance(crd.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    errs: list[Cause] = []
    generate_name = str_field(meta, "generateName")
    required_name = f"{plural}.{group}"

    def name_errors(name: str, prefix: bool) -> list[str]:
        candidate = name[:-1] if prefix and name.endswith("-") else name
        out = is_dns1123_subdomain(candidate)
        if name != required_name:
            out.append('must be spec.names.plural+"."+spec.group')
        return out

    if generate_name:
        for msg in name_errors(generate_name, True):
            errs.append(field_invalid("metadata.generateName", generate_name, msg))
    name = str_field(meta, "name")
    if not name:
        errs.append(field_required("metadata.name", "name or generateName is required"))
    else:
        for msg in name_errors(name, False):
            errs.append(field_invalid("metadata.name", name, msg))
    if str_field(meta, "namespace"):
        errs.append(field_forbidden("metadata.namespace", "not allowed on this type"))
    return errs


def _go_versions(versions: list[dict[str, Any]]) -> GoLiteral:
    # Go prints the internal structs with %#v; their JSON is the readable equivalent.
    if not versions:
        return GoLiteral("[]apiextensions.CustomResourceDefinitionVersion(nil)")
    return GoLiteral("[]apiextensions.CustomResourceDefinitionVersion" + go_json(versions))


def _crd_spec_errors(spec: dict[str, Any], internal: _Internal, opts: SchemaOpts) -> list[Cause]:
    """ValidateCustomResourceDefinitionSpec."""
    errs = _group_and_scope_errors(spec)
    errs += _schema_presence_errors(spec, internal, opts)
    errs += _versions_errors(internal, opts)
    names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
    assert isinstance(names, dict)
    for field in ("plural", "singular", "kind", "listKind"):
        if not names.get(field):
            errs.append(field_required(f"spec.names.{field}"))
    errs += _names_errors(names, "spec.names")
    errs += _hoisted_errors(internal, opts)
    conversion = spec.get("conversion")
    if isinstance(conversion, dict):
        if conversion.get("strategy") != "None" and spec.get("preserveUnknownFields") is True:
            errs.append(
                field_invalid(
                    "spec.conversion.strategy",
                    conversion.get("strategy"),
                    "must be None if spec.preserveUnknownFields is true",
                )
            )
        errs += _conversion_errors(conversion)
    return errs


def _group_and_scope_errors(spec: dict[str, Any]) -> list[Cause]:
    """The group is a DNS subdomain with a dot; the scope is Cluster or Namespaced."""
    errs: list[Cause] = []
    group = str_field(spec, "group")
    if not group:
        errs.append(field_required("spec.group"))
    elif dns_errs := is_dns1123_subdomain(group):
        errs.append(field_invalid("spec.group", group, ",".join(dns_errs)))
    elif len(group.split(".")) < 2:
        errs.append(field_invalid("spec.group", group, "should be a domain with at least one dot"))
    scope = spec.get("scope")
    if not scope:
        errs.append(field_required("spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        errs.append(field_not_supported("spec.scope", scope, ["Cluster", "Namespaced"]))
    return errs


def _schema_presence_errors(
    spec: dict[str, Any], internal: _Internal, opts: SchemaOpts
) -> list[Cause]:
    """Every version has a schema; defaults in it exclude preserveUnknownFields."""
    errs: list[Cause] = []
    if internal.validation is None or internal.validation.get("openAPIV3Schema") is None:
        for i, v in enumerate(internal.versions):
            sch = v.get("schema")
            if not isinstance(sch, dict) or sch.get("openAPIV3Schema") is None:
                errs.append(
                    field_required(
                        f"spec.versions[{i}].schema.openAPIV3Schema", "schemas are required"
                    )
                )
    if (
        opts.allow_defaults
        and any(_schema_has(s, lambda n: n.get("default") is not None) for s in internal.schemas())
        and spec.get("preserveUnknownFields") is True
    ):
        errs.append(
            field_invalid(
                "spec.preserveUnknownFields",
                True,
                "must be false in order to use defaults in the schema",
            )
        )
    return errs


def _versions_errors(internal: _Internal, opts: SchemaOpts) -> list[Cause]:
    """Each version; names unique DNS-1035 labels; exactly one storage version."""
    errs: list[Cause] = []
    versions = internal.versions
    storage_count = 0
    seen: set[str] = set()
    unique = True
    for i, version in enumerate(versions):
        if version.get("storage") is True:
            storage_count += 1
        name = str_field(version, "name")
        if name in seen:
            unique = False
        seen.add(name)
        if dns_errs := is_dns1035_label(name):
            errs.append(field_invalid(f"spec.versions[{i}].name", name, ",".join(dns_errs)))
        errs += _crd_version_errors(version, f"spec.versions[{i}]", internal, opts)
    if not unique:
        errs.append(
            field_invalid(
                "spec.versions", _go_versions(versions), "must contain unique version names"
            )
        )
    if storage_count != 1:
        errs.append(
            field_invalid(
                "spec.versions",
                _go_versions(versions),
                "must have exactly one version marked as storage version",
            )
        )
    if versions:
        first = str_field(versions[0], "name")
        if first and (dns_errs := is_dns1035_label(first)):
            errs.append(field_invalid("spec.version", first, ",".join(dns_errs)))
    return errs


def _hoisted_errors(internal: _Internal, opts: SchemaOpts) -> list[Cause]:
    """What all versions share, hoisted to the spec: schema, subresources, columns, fields."""
    errs: list[Cause] = []
    if internal.validation is not None:
        errs += _validation_errors(
            internal.validation, "spec.validation", internal.any_status(), opts
        )
    errs += _subresources_errors(internal.subresources, "spec.subresources")
    for i, col in enumerate(internal.columns or []):
        errs += _column_errors(col, f"spec.additionalPrinterColumns[{i}]")
    if internal.selectable:
        hoisted = (internal.validation or {}).get("openAPIV3Schema")
        if not isinstance(hoisted, dict):
            errs.append(
                field_invalid(
                    "spec.selectableFields",
                    "",
                    "may only be set when validations.schema is included",
                )
            )
        else:
            errs += _selectable_fields_errors(internal.selectable, hoisted, "spec.selectableFields")
    return errs


def _validation_errors(
    validation: dict[str, Any], path: str, status_enabled: bool, opts: SchemaOpts
) -> list[Cause]:
    schema = validation.get("openAPIV3Schema")
    if not isinstance(schema, dict):
        return []
    return schema_validation_errors(
        schema, child(path, "openAPIV3Schema"), status_enabled=status_enabled, opts=opts
    )


def _crd_version_errors(  # noqa: PLR0912 - one check per CRD version field, in apiextensions validation's order
    version: dict[str, Any], path: str, internal: _Internal, opts: SchemaOpts
) -> list[Cause]:
    errs: list[Cause] = []
    warning = version.get("deprecationWarning")
    deprecated = version.get("deprecated") is True
    if warning is not None:
        text = warning if isinstance(warning, str) else str(warning)
        problems: list[str] = []
        if not deprecated:
            problems.append("can only be set for deprecated versions")
        else:
            if len(text.encode()) > 256:
                problems.append("must be <= 256 characters long")
            if not text:
                problems.append("must not be an empty string")
            for i, ch in enumerate(text):
                if not ch.isprintable():
                    problems.append(
                        f"must only contain printable UTF-8 characters; non-printable character "
                        f"found at index {i}"
                    )
                    break
        for problem in problems:
            errs.append(field_invalid(child(path, "deprecationWarning"), text, problem))
    if internal.per_version_schema:
        schema = version.get("schema")
        if isinstance(schema, dict):
            subresources = internal.version_subresources(version)
            status = subresources is not None and subresources.get("status") is not None
            errs += _validation_errors(schema, child(path, "schema"), status, opts)
    if internal.per_version_subresources:
        sub = version.get("subresources")
        errs += _subresources_errors(
            sub if isinstance(sub, dict) else None, child(path, "subresources")
        )
    if internal.per_version_columns:
        cols = version.get("additionalPrinterColumns")
        for i, col in enumerate(cols if isinstance(cols, list) else []):
            errs += _column_errors(col, index(child(path, "additionalPrinterColumns"), i))
    # The v1 to internal conversion hoists what all versions share (the schema, the
    # selectable fields) to the spec: a version's own selectable fields then meet no
    # schema of the version, and kube-apiserver refuses them with this (inverted) message.
    fields = version.get("selectableFields") if internal.per_version_selectable else None
    if isinstance(fields, list) and fields:
        sch = version.get("schema") if internal.per_version_schema else None
        schema = sch.get("openAPIV3Schema") if isinstance(sch, dict) else None
        if not isinstance(schema, dict):
            errs.append(
                field_invalid(
                    child(path, "selectableFields"),
                    "",
                    "may only be set when `version.schema.openAPIV3Schema` is not included",
                )
            )
        else:
            errs += _selectable_fields_errors(fields, schema, child(path, "selectableFields"))
    return errs


def _names_errors(names: dict[str, Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    for field in ("plural", "singular"):
        value = str_field(names, field)
        if value and (dns_errs := is_dns1035_label(value)):
            errs.append(field_invalid(f"{path}.{field}", value, ",".join(dns_errs)))
    for field in ("kind", "listKind"):
        value = str_field(names, field)
        if value and (dns_errs := is_dns1035_label(value.lower())):
            errs.append(
                field_invalid(
                    f"{path}.{field}",
                    value,
                    "may have mixed case, but should otherwise match: " + ",".join(dns_errs),
                )
            )
    short_names = names.get("shortNames")
    for i, short in enumerate(short_names if isinstance(short_names, list) else []):
        text = short if isinstance(short, str) else str(short)
        if dns_errs := is_dns1035_label(text):
            errs.append(field_invalid(f"{path}.shortNames[{i}]", text, ",".join(dns_errs)))
    kind = str_field(names, "kind")
    if kind and kind == str_field(names, "listKind"):
        errs.append(
            field_invalid(f"{path}.listKind", kind, "kind and listKind may not be the same")
        )
    categories = names.get("categories")
    for i, category in enumerate(categories if isinstance(categories, list) else []):
        text = category if isinstance(category, str) else str(category)
        if dns_errs := is_dns1035_label(text):
            errs.append(field_invalid(f"{path}.categories[{i}]", text, ",".join(dns_errs)))
    return errs


def _simple_json_path_errors(s: str, path: str) -> list[Cause]:
    if not s:
        return [field_invalid(path, s, "must not be empty")]
    if s[0] != ".":
        return [field_invalid(path, s, "must be a simple json path starting with .")]
    return []


def _subresources_errors(sub: dict[str, Any] | None, path: str) -> list[Cause]:
    if sub is None:
        return []
    scale = sub.get("scale")
    if not isinstance(scale, dict):
        return []
    errs: list[Cause] = []
    spec_path = str_field(scale, "specReplicasPath")
    field = f"{path}.scale.specReplicasPath"
    if not spec_path:
        errs.append(field_required(field))
    elif simple := _simple_json_path_errors(spec_path, field):
        errs += simple
    elif not spec_path.startswith(".spec."):
        errs.append(field_invalid(field, spec_path, "should be a json path under .spec"))
    status_path = str_field(scale, "statusReplicasPath")
    field = f"{path}.scale.statusReplicasPath"
    if not status_path:
        errs.append(field_required(field))
    elif simple := _simple_json_path_errors(status_path, field):
        errs += simple
    elif not status_path.startswith(".status."):
        errs.append(field_invalid(field, status_path, "should be a json path under .status"))
    selector = scale.get("labelSelectorPath")
    if isinstance(selector, str) and selector:
        field = f"{path}.scale.labelSelectorPath"
        if simple := _simple_json_path_errors(selector, field):
            errs += simple
        elif not selector.startswith((".spec.", ".status.")):
            errs.append(
                field_invalid(
                    field, selector, "should be a json path under either .spec or .status"
                )
            )
    return errs


_PRINTER_TYPES: Final = ["boolean", "date", "integer", "number", "string"]
_PRINTER_FORMATS: Final = [
    "byte",
    "date",
    "date-time",
    "double",
    "float",
    "int32",
    "int64",
    "password",
]


def _column_errors(col: Any, path: str) -> list[Cause]:
    col = col if isinstance(col, dict) else {}
    errs: list[Cause] = []
    if not str_field(col, "name"):
        errs.append(field_required(f"{path}.name"))
    typ = str_field(col, "type")
    types_msg = "must be one of " + ",".join(_PRINTER_TYPES)
    if not typ:
        errs.append(field_required(f"{path}.type", types_msg))
    elif typ not in _PRINTER_TYPES:
        errs.append(field_invalid(f"{path}.type", typ, types_msg))
    fmt = str_field(col, "format")
    if fmt and fmt not in _PRINTER_FORMATS:
        errs.append(
            field_invalid(f"{path}.format", fmt, "must be one of " + ",".join(_PRINTER_FORMATS))
        )
    json_path = str_field(col, "jsonPath")
    if not json_path:
        errs.append(field_required(f"{path}.JSONPath"))
    else:
        errs += _simple_json_path_errors(json_path, f"{path}.JSONPath")
    return errs


def _selectable_fields_errors(fields: list[Any], schema: dict[str, Any], path: str) -> list[Cause]:
    errs: list[Cause] = []
    seen: set[str] = set()
    for i, raw_item in enumerate(fields):
        item = raw_item if isinstance(raw_item, dict) else {}
        ipath = f"{path}[{i}].jsonPath"
        json_path = str_field(item, "jsonPath")
        if not json_path:
            errs.append(field_required(ipath))
            continue
        if "[" in json_path:
            errs.append(
                field_invalid(ipath, json_path, "is an invalid path: array notation is not allowed")
            )
            continue
        try:
            normalized, node = valid_field_path(json_path, schema)
        except ValueError as e:
            errs.append(field_invalid(ipath, json_path, f"is an invalid path: {e}"))
            continue
        if normalized.split(".")[0].split("[")[0] == "metadata":
            errs.append(field_invalid(ipath, json_path, "must not point to fields in metadata"))
        if node.get("type") not in ("string", "boolean", "integer"):
            errs.append(
                field_invalid(
                    ipath,
                    json_path,
                    "must point to a field of type string, boolean or integer. Enum string "
                    "fields and strings "
                    "with formats are allowed.",
                )
            )
        if normalized in seen:
            errs.append(field_duplicate(ipath, json_path))
        seen.add(normalized)
    if len(seen) > 8:
        errs.append(field_too_many(path, len(seen), 8))
    return errs


def _conversion_errors(conversion: dict[str, Any]) -> list[Cause]:
    errs: list[Cause] = []
    path = "spec.conversion"
    strategy = conversion.get("strategy")
    if not strategy:
        errs.append(field_required(f"{path}.strategy"))
    elif strategy not in ("None", "Webhook"):
        errs.append(field_not_supported(f"{path}.strategy", strategy, ["None", "Webhook"]))
    webhook = conversion.get("webhook") if isinstance(conversion.get("webhook"), dict) else None
    assert webhook is None or isinstance(webhook, dict)
    client = webhook.get("clientConfig") if webhook is not None else None
    review_versions = webhook.get("conversionReviewVersions") if webhook is not None else None
    if strategy == "Webhook":
        if not isinstance(client, dict):
            errs.append(
                field_required(
                    f"{path}.webhookClientConfig", "required when strategy is set to Webhook"
                )
            )
        else:
            url = client.get("url")
            service = client.get("service")
            cc_path = f"{path}.webhookClientConfig"
            if (url is None) == (service is None):
                errs.append(field_required(cc_path, "exactly one of url or service is required"))
            elif url is not None:
                errs += _webhook_url_errors(f"{cc_path}.url", str(url))
            elif isinstance(service, dict):
                errs += _webhook_service_errors(f"{cc_path}.service", service)
        errs += _review_versions_errors(review_versions, f"{path}.conversionReviewVersions")
    else:
        if client is not None:
            errs.append(
                field_forbidden(
                    f"{path}.webhookClientConfig",
                    "should not be set when strategy is not set to Webhook",
                )
            )
        if isinstance(review_versions, list) and review_versions:
            errs.append(
                field_forbidden(
                    f"{path}.conversionReviewVersions",
                    "should not be set when strategy is not set to Webhook",
                )
            )
    return errs


def _review_versions_errors(versions: Any, path: str) -> list[Cause]:
    if not isinstance(versions, list) or not versions:
        return [field_required(path)]
    errs: list[Cause] = []
    seen: set[str] = set()
    accepted = False
    for i, v in enumerate(versions):
        text = v if isinstance(v, str) else str(v)
        if text in seen:
            errs.append(field_invalid(f"{path}[{i}]", text, "duplicate version"))
            continue
        seen.add(text)
        for msg in is_dns1035_label(text):
            errs.append(field_invalid(f"{path}[{i}]", text, msg))
        if text in ("v1", "v1beta1"):
            accepted = True
    if not accepted:
        errs.append(
            field_invalid(
                path, go_string_slice(versions), "must include at least one of v1, v1beta1"
            )
        )
    return errs


def _webhook_url_errors(path: str, url: str) -> list[Cause]:
    form = "; desired format: https://host[/path]"
    try:
        parsed = urllib.parse.urlsplit(url)
    except ValueError as e:
        return [field_required(path, f"url must be a valid URL: {e}{form}")]
    errs: list[Cause] = []
    if parsed.scheme != "https":
        errs.append(
            field_invalid(path, parsed.scheme, "'https' is the only allowed URL scheme" + form)
        )
    if not parsed.netloc.rpartition("@")[2]:
        errs.append(field_invalid(path, "", "host must be specified" + form))
    if "@" in parsed.netloc:
        errs.append(
            field_invalid(
                path,
                parsed.netloc.rpartition("@")[0],
                "user information is not permitted in the URL",
            )
        )
    if parsed.fragment:
        errs.append(field_invalid(path, parsed.fragment, "fragments are not permitted in the URL"))
    if parsed.query:
        errs.append(
            field_invalid(path, parsed.query, "query parameters are not permitted in the URL")
        )
    return errs


def _webhook_service_errors(path: str, service: dict[str, Any]) -> list[Cause]:
    errs: list[Cause] = []
    if not str_field(service, "name"):
        errs.append(field_required(f"{path}.name", "service name is required"))
    if not str_field(service, "namespace"):
        errs.append(field_required(f"{path}.namespace", "service namespace is required"))
    port = service.get("port", 443)
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
        errs.append(
            field_invalid(
                f"{path}.port", port, "port is not valid: must be between 1 and 65535, inclusive"
            )
        )
    url_path = service.get("path")
    if isinstance(url_path, str) and url_path not in ("", "/"):
        if url_path == "//":
            errs.append(field_invalid(f"{path}.path", url_path, "segment[0] may not be empty"))
        elif not url_path.startswith("/"):
            errs.append(field_invalid(f"{path}.path", url_path, "must start with a '/'"))
        else:
            for i, segment in enumerate(url_path[1:].split("/")):
                if not segment and i != len(url_path[1:].split("/")) - 1:
                    errs.append(
                        field_invalid(f"{path}.path", url_path, f"segment[{i}] may not be empty")
                    )
    return errs


def _stored_versions_errors(stored: list[str], versions: list[dict[str, Any]]) -> list[Cause]:
    path = "status.storedVersions"
    if not stored:
        return [
            field_invalid(path, go_string_slice(stored), "must have at least one stored version")
        ]
    errs: list[Cause] = []
    remaining = {v: i for i, v in enumerate(stored)}
    for version in versions:
        name = str_field(version, "name")
        if version.get("storage") is True and name not in remaining:
            errs.append(
                field_invalid(
                    path, go_string_slice(stored), f"must have the storage version {name}"
                )
            )
        remaining.pop(name, None)
    for v, i in remaining.items():
        errs.append(
            field_invalid(
                f"{path}[{i}]",
                v,
                f"missing from spec.versions; {v} was previously a storage version, and must "
                "remain in "
                f"spec.versions until a storage migration ensures no data remains persisted in "
                f"{v} and "
                f"removes {v} from status.storedVersions",
            )
        )
    return errs


_APPROVAL_ANNOTATION: Final = "api-approved.kubernetes.io"


def _approval_state(crd: dict[str, Any]) -> tuple[str, str]:
    meta = crd.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    value = annotations.get(_APPROVAL_ANNOTATION) if isinstance(annotations, dict) else None
    if not isinstance(value, str) or not value:
        return "missing", (
            f"protected groups must have approval annotation {go_quote(_APPROVAL_ANNOTATION)}, "
            "see https://github.com/kubernetes/enhancements/pull/1111"
        )
    if value.startswith("unapproved"):
        return "bypassed", ""
    parsed = urllib.parse.urlsplit(value)
    if (parsed.scheme and (parsed.netloc or parsed.path)) or value.startswith("/"):
        return "approved", ""
    return "invalid", (
        f"protected groups must have approval annotation {go_quote(_APPROVAL_ANNOTATION)} with "
        "either a URL "
        'or a reason starting with "unapproved", see https://github.com/kubernetes/enhancements/pull/1111'
    )


def _api_approval_errors(crd: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    spec = crd.get("spec")
    group = str_field(spec, "group") if isinstance(spec, dict) else ""
    protected = len(group.split(".")) >= 2 and (
        group in ("k8s.io", "kubernetes.io") or group.endswith((".k8s.io", ".kubernetes.io"))
    )
    if not protected:
        return []
    state, reason = _approval_state(crd)
    if old is not None and _approval_state(old)[0] == state:
        return []
    path = f"metadata.annotations[{_APPROVAL_ANNOTATION}]"
    if state == "missing":
        return [field_required(path, reason)]
    if state == "invalid":
        meta = crd.get("metadata")
        annotations = meta.get("annotations") if isinstance(meta, dict) else {}
        value = annotations.get(_APPROVAL_ANNOTATION) if isinstance(annotations, dict) else ""
        return [field_invalid(path, value, reason)]
    return []


def _preserve_unknown_fields_errors(
    spec: dict[str, Any], old_spec: dict[str, Any] | None
) -> list[Cause]:
    if old_spec is not None and old_spec.get("preserveUnknownFields") is True:
        return []
    if spec.get("preserveUnknownFields") is True:
        return [
            field_invalid(
                "spec.preserveUnknownFields",
                True,
                "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in "
                "spec.versions[*].schema "
                "instead",
            )
        ]
    return []
