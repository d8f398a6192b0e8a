"""CustomResourceDefinition objects from `CustomResource` classes.

The classes sharing a group and kind are the versions of one CRD. Names, scope and
the other CRD-wide settings must agree between them; per-version settings (served,
storage, deprecation, subresources, printer columns, schema) come from each class.
"""

from __future__ import annotations

import copy
import re
from typing import TYPE_CHECKING, Any, Final

from pyctrl.crd._generate import schema_for
from pyctrl.errors import SchemaError
from pyctrl.resource import CustomResource, PrinterColumn, ResourceInfo

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["crd_for", "crds_for", "truncate_descriptions", "version_priority_key"]

_PRINTER_TYPES: Final = ("integer", "number", "string", "boolean", "date")
_KUBE_VERSION: Final = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")
_STABILITY: Final = {None: 0, "beta": 1, "alpha": 2}
_SENTENCE_ENDS: Final = (".", "!", "?", "\u3002", "\uff01", "\uff1f")

# Settings that belong to the whole CRD, so all versions must agree on them.
_SHARED: Final = ("plural", "singular", "scope", "short_names", "categories", "list_kind")


def version_priority_key(version: str) -> tuple[int, int, int, str]:
    """Sort key that orders versions as Kubernetes ranks them (highest priority first).

    GA versions come before beta before alpha; within each, higher major versions first,
    then higher minor (``v1 > v1beta2 > v1beta1 > v1alpha1``); versions that do not look
    like Kubernetes versions come last, alphabetically (apimachinery's
    ``CompareKubeAwareVersionStrings``).

    Args:
        version: A version name such as ``v1beta1``.

    Returns:
        A tuple; sorting ascending by it puts the preferred version first.
    """
    match = _KUBE_VERSION.match(version)
    if match is None:
        return (3, 0, 0, version)
    major = int(match.group(1))
    minor = int(match.group(3) or 0)
    return (_STABILITY[match.group(2)], -major, -minor, "")


def _info(cls: Any) -> ResourceInfo:
    if not (isinstance(cls, type) and issubclass(cls, CustomResource)):
        raise SchemaError(f"{cls!r} is not a CustomResource class")
    try:
        return cls.resource_info()
    except TypeError as exc:
        raise SchemaError(str(exc)) from None


def _printer_column(column: PrinterColumn, cls: type) -> dict[str, Any]:
    if column.type not in _PRINTER_TYPES:
        raise SchemaError(
            f"{cls.__name__}: printer column {column.name!r} has type {column.type!r}; "
            f"use one of {', '.join(_PRINTER_TYPES)}"
        )
    out: dict[str, Any] = {"jsonPath": column.json_path, "name": column.name, "type": column.type}
    if column.description:
        out["description"] = column.description
    if column.format:
        out["format"] = column.format
    if column.priority:
        out["priority"] = column.priority
    return out


def truncate_descriptions(schema: dict[str, Any], max_length: int) -> None:
    """Shorten every description in ``schema`` to ``max_length``, as controller-gen's maxDescLen.

    A longer description is cut at ``max_length`` characters and then back to its last
    sentence end (``.``, ``!``, ``?``) if there is one; ``0`` removes descriptions.
    """
    description = schema.get("description")
    if isinstance(description, str) and len(description) > max_length:
        if max_length == 0:
            del schema["description"]
        else:
            cut = description[:max_length]
            end = max(cut.rfind(mark) for mark in _SENTENCE_ENDS)
            schema["description"] = cut[: end + 1] if end > 0 else cut
    for key in ("properties", "patternProperties"):
        for child in (schema.get(key) or {}).values():
            if isinstance(child, dict):
                truncate_descriptions(child, max_length)
    for key in ("items", "additionalProperties", "not"):
        if isinstance(schema.get(key), dict):
            truncate_descriptions(schema[key], max_length)
    for key in ("allOf", "anyOf", "oneOf"):
        for child in schema.get(key) or ():
            if isinstance(child, dict):
                truncate_descriptions(child, max_length)


def _version(
    cls: type[CustomResource], info: ResourceInfo, max_description_length: int | None
) -> dict[str, Any]:
    if info.deprecation_warning is not None and not info.deprecated:
        raise SchemaError(
            f"{cls.__name__}: deprecation_warning is set but deprecated=False; "
            "the API server only sends the warning for deprecated versions"
        )
    version: dict[str, Any] = {
        "name": info.version,
        "served": info.served,
        "storage": info.storage,
    }
    if info.deprecated:
        version["deprecated"] = True
        if info.deprecation_warning is not None:
            version["deprecationWarning"] = info.deprecation_warning
    schema = schema_for(cls)
    if max_description_length is not None:
        truncate_descriptions(schema, max_description_length)
    version["schema"] = {"openAPIV3Schema": schema}
    subresources: dict[str, Any] = {}
    if info.status_subresource:
        subresources["status"] = {}
    if info.scale is not None:
        scale: dict[str, Any] = {
            "specReplicasPath": info.scale.spec_replicas_path,
            "statusReplicasPath": info.scale.status_replicas_path,
        }
        if info.scale.label_selector_path is not None:
            scale["labelSelectorPath"] = info.scale.label_selector_path
        subresources["scale"] = scale
    if subresources:
        version["subresources"] = subresources
    if info.printer_columns:
        version["additionalPrinterColumns"] = [
            _printer_column(c, cls) for c in info.printer_columns
        ]
    return version


def _check_versions(types: tuple[type[CustomResource], ...], infos: list[ResourceInfo]) -> None:
    first, first_info = types[0], infos[0]
    for cls, info in zip(types[1:], infos[1:], strict=True):
        if (info.group, info.kind) != (first_info.group, first_info.kind):
            raise SchemaError(
                f"{first.__name__} is {first_info.kind}.{first_info.group} but {cls.__name__} "
                f"is {info.kind}.{info.group}: the versions of one CRD share group and kind "
                "(use crds_for for several CRDs)"
            )
        for attr in _SHARED:
            if getattr(info, attr) != getattr(first_info, attr):
                raise SchemaError(
                    f"{first.__name__} and {cls.__name__} are versions of one CRD but differ in "
                    f"{attr}: {getattr(first_info, attr)!r} != {getattr(info, attr)!r}"
                )
    seen: dict[str, type] = {}
    for cls, info in zip(types, infos, strict=True):
        if info.version in seen:
            raise SchemaError(
                f"{seen[info.version].__name__} and {cls.__name__} are both version "
                f"{info.version} of {info.kind}.{info.group}"
            )
        seen[info.version] = cls
    storage = [(cls, info) for cls, info in zip(types, infos, strict=True) if info.storage]
    if len(storage) != 1:
        listed = ", ".join(f"{cls.__name__} ({info.version})" for cls, info in storage)
        raise SchemaError(
            f"{first_info.kind}.{first_info.group} needs exactly one storage version, but "
            + (
                f"{listed} are all marked storage=True; set storage=False on all but one"
                if storage
                else "none of "
                + ", ".join(
                    f"{c.__name__} ({i.version})" for c, i in zip(types, infos, strict=True)
                )
                + " is marked storage=True"
            )
        )
    if not any(info.served for info in infos):
        raise SchemaError(f"{first_info.kind}.{first_info.group}: no version is served")


def crd_for(
    *types: type[CustomResource],
    conversion: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    max_description_length: int | None = None,
) -> dict[str, Any]:
    """Build the ``apiextensions.k8s.io/v1`` CustomResourceDefinition of one kind.

    Each class is one version of the CRD; they must share group, kind, names and scope,
    and exactly one must be the storage version. Versions are listed in Kubernetes'
    priority order (``v1``, ``v1beta1``, ``v1alpha1``).

    Args:
        *types: The `CustomResource` classes, one per version.
        conversion: ``spec.conversion``, placed verbatim (e.g. a webhook conversion).
            Without it the API server converts by rewriting ``apiVersion`` only.
        labels: ``metadata.labels`` of the CRD.
        annotations: ``metadata.annotations`` of the CRD (e.g. cert-manager's
            ``cert-manager.io/inject-ca-from`` for a conversion webhook).
        max_description_length: Shorten descriptions to this many characters (at a
            sentence end when possible; ``0`` drops them), like controller-gen's
            ``crd:maxDescLen``: embedded built-in types (a ``V1PodTemplateSpec``) bring
            some 200 KiB of descriptions, and ``kubectl apply`` stores the whole CRD in
            an annotation limited to 256 KiB.

    Returns:
        The CRD as a JSON-ready dict.

    Raises:
        SchemaError: The classes are not the versions of one CRD, do not have exactly
            one storage version, or a schema cannot be generated.
    """
    if not types:
        raise SchemaError("crd_for needs at least one CustomResource class")
    if max_description_length is not None and max_description_length < 0:
        raise SchemaError(f"max_description_length must be 0 or more, not {max_description_length}")
    infos = [_info(cls) for cls in types]
    _check_versions(types, infos)
    info = infos[0]
    names: dict[str, Any] = {
        "kind": info.kind,
        "listKind": info.list_kind,
        "plural": info.plural,
        "singular": info.singular,
    }
    if info.short_names:
        names["shortNames"] = list(info.short_names)
    if info.categories:
        names["categories"] = list(info.categories)
    ordered = sorted(
        zip(types, infos, strict=True), key=lambda pair: version_priority_key(pair[1].version)
    )
    spec: dict[str, Any] = {
        "group": info.group,
        "names": names,
        "scope": info.scope,
        "versions": [_version(cls, i, max_description_length) for cls, i in ordered],
    }
    if conversion is not None:
        spec["conversion"] = copy.deepcopy(dict(conversion))
    metadata: dict[str, Any] = {"name": info.crd_name}
    if labels:
        metadata["labels"] = dict(labels)
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": spec,
    }


def crds_for(
    *types: type[CustomResource],
    conversions: Mapping[str, Mapping[str, Any]] | None = None,
    max_description_length: int | None = None,
) -> list[dict[str, Any]]:
    """Build the CRDs of many classes, grouping the versions of each kind into one CRD.

    Args:
        *types: `CustomResource` classes of any groups and kinds.
        conversions: ``spec.conversion`` per CRD name (``<plural>.<group>``).
        max_description_length: As for `crd_for`.

    Returns:
        One CRD per group and kind, sorted by CRD name.

    Raises:
        SchemaError: As `crd_for`, or a conversion names a CRD that is not generated.
    """
    groups: dict[tuple[str, str], list[type[CustomResource]]] = {}
    for cls in types:
        info = _info(cls)
        groups.setdefault((info.group, info.kind), []).append(cls)
    crds: dict[str, dict[str, Any]] = {}
    for members in groups.values():
        name = _info(members[0]).crd_name
        if name in crds:
            other = crds[name]["spec"]["names"]["kind"]
            raise SchemaError(
                f"kinds {other} and {_info(members[0]).kind} would both be CRD {name}: "
                "give one of them another plural"
            )
        conversion = (conversions or {}).get(name)
        crds[name] = crd_for(
            *members, conversion=conversion, max_description_length=max_description_length
        )
    unknown = set(conversions or {}) - set(crds)
    if unknown:
        raise SchemaError(
            f"conversions name CRDs that are not generated: {', '.join(sorted(unknown))} "
            f"(generated: {', '.join(sorted(crds)) or 'none'})"
        )
    return [crds[name] for name in sorted(crds)]
