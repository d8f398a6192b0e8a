"""Object metadata validation: k8s.io/apimachinery/pkg/api/validation/objectmeta.go.

``object_meta`` is ``ValidateObjectMetaAccessor`` (create), ``meta_update`` is
``ValidateObjectMetaAccessorUpdate``; ``kube_finalizers`` is the extra finalizer check
``pkg/apis/core/validation`` adds for the built-in kinds (``validateKubeFinalizerName``).
Each returns its causes in kube-apiserver's order.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from pyctrl._apiextensions.names import is_label_value, is_qualified_name
from pyctrl._apimachinery.field import (
    Cause,
    field_forbidden,
    field_invalid,
    field_required,
    field_too_long,
)
from pyctrl._apimachinery.gofmt import GoStruct
from pyctrl._apiserver.registry.meta import ro_meta

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_LABEL1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_LABEL1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?\Z")

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL1123_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
LABEL1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})
_MAX_ANNOTATIONS = 256 * 1024
NEGATIVE_MSG = "must be greater than or equal to 0"
IMMUTABLE_MSG = "field is immutable"


def _mask_trailing_dash(name: str) -> str:
    """apimachinery's maskTrailingDash (it drops two characters, as Go's code does)."""
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def name_problems(name: str, rule: str, *, prefix: bool = False) -> list[str]:
    """Why ``name`` breaks ``rule`` (empty list when it is valid).

    With ``prefix`` the name is a generateName prefix: a trailing dash is allowed.
    """
    return list(_name_problems(name, rule, prefix))


@functools.lru_cache(maxsize=4096)
def _name_problems(name: str, rule: str, prefix: bool) -> tuple[str, ...]:
    # Every write checks its name and namespace, and the same few recur: remember them.
    if rule == "path":
        out: list[str] = []
        if not prefix and name in (".", ".."):
            out.append(f"may not be '{name}'")
        for bad in ("/", "%"):
            if bad in name:
                out.append(f"may not contain '{bad}'")
        return tuple(out)
    if prefix:
        name = _mask_trailing_dash(name)
    if rule == "label":
        limit, regex, msg = 63, _LABEL1123, LABEL1123_MSG
    elif rule == "label1035":
        limit, regex, msg = 63, _LABEL1035, LABEL1035_MSG
    else:
        limit, regex, msg = 253, _SUBDOMAIN, SUBDOMAIN_MSG
    out = []
    if len(name) > limit:
        out.append(f"must be no more than {limit} characters")
    if not regex.match(name):
        out.append(msg)
    return tuple(out)


def validate_labels(value: Any, path: str) -> list[Cause]:
    """``ValidateLabels``: each key a qualified name, each value a label value."""
    causes: list[Cause] = []
    if not isinstance(value, dict):
        return causes
    for key, val in value.items():
        for m in is_qualified_name(str(key)):
            causes.append(field_invalid(path, key, m))
        for m in is_label_value(str(val)):
            causes.append(field_invalid(path, val, m))
    return causes


def validate_annotations(value: Any, path: str) -> list[Cause]:
    """``ValidateAnnotations``: keys are qualified names (any case); 256 KiB in all."""
    causes: list[Cause] = []
    if not isinstance(value, dict):
        return causes
    total = 0
    for key, val in value.items():
        for m in is_qualified_name(str(key).lower()):
            causes.append(field_invalid(path, key, m))
        total += len(str(key).encode()) + len(str(val).encode())
    if total > _MAX_ANNOTATIONS:
        causes.append(field_too_long(path, "", _MAX_ANNOTATIONS))
    return causes


def _owner_reference_json(ref: dict[str, Any]) -> dict[str, Any]:
    """A metav1.OwnerReference as json.Marshal writes it: its fields in struct order."""
    out = GoStruct({k: ref.get(k, "") for k in ("apiVersion", "kind", "name", "uid")})
    out.update({k: ref[k] for k in ("controller", "blockOwnerDeletion") if ref.get(k) is not None})
    return out


def _version_of(api_version: str) -> str:
    """The version ``schema.ParseGroupVersion`` finds in ``api_version`` ('' if none)."""
    parts = api_version.split("/")
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2:
        return parts[1]
    return ""


def owner_references(refs: Any, path: str = "metadata.ownerReferences") -> list[Cause]:
    """``ValidateOwnerReferences``: every field of each, one controller at most, no Event."""
    causes: list[Cause] = []
    if not isinstance(refs, list):
        return causes
    first_controller = ""
    for ref in refs:
        if not isinstance(ref, dict):
            continue
        api_version = str(ref.get("apiVersion") or "")
        version = _version_of(api_version)
        kind = str(ref.get("kind") or "")
        if not version:
            causes.append(
                field_invalid(f"{path}.apiVersion", api_version, "version must not be empty")
            )
        if not kind:
            causes.append(field_invalid(f"{path}.kind", kind, "must not be empty"))
        if not ref.get("name"):
            causes.append(field_invalid(f"{path}.name", ref.get("name") or "", "must not be empty"))
        if not ref.get("uid"):
            causes.append(field_invalid(f"{path}.uid", ref.get("uid") or "", "must not be empty"))
        group = api_version.rsplit("/", 1)[0] if api_version.count("/") == 1 else ""
        if (group, version, kind) == ("", "v1", "Event"):
            causes.append(
                field_invalid(
                    path,
                    _owner_reference_json(ref),
                    "/v1, Kind=Event is disallowed from being an owner",
                )
            )
        if ref.get("controller") is True:
            current = f"{kind}/{ref.get('name') or ''}"
            if first_controller:
                causes.append(
                    field_invalid(
                        path,
                        [_owner_reference_json(r) for r in refs if isinstance(r, dict)],
                        'Only one reference can have Controller set to true. Found "true" in '
                        f"references for {first_controller} and {current}",
                    )
                )
            else:
                first_controller = current
    return causes


def finalizers(value: Any, path: str = "metadata.finalizers") -> list[Cause]:
    """``ValidateFinalizers``: qualified names; not both ``orphan`` and ``foregroundDeletion``."""
    causes: list[Cause] = []
    if not isinstance(value, list):
        return causes
    for fin in value:
        causes.extend(field_invalid(path, fin, m) for m in is_qualified_name(str(fin)))
    if "orphan" in value and "foregroundDeletion" in value:
        causes.append(
            field_invalid(path, value, "finalizer orphan and foregroundDeletion cannot be both set")
        )
    return causes


def kube_finalizers(meta: dict[str, Any], path: str = "metadata.finalizers") -> list[Cause]:
    """core's ``validateKubeFinalizerName`` of each finalizer: unqualified ones are standard."""
    causes: list[Cause] = []
    for i, fin in enumerate(meta.get("finalizers") or ()):
        text = str(fin)
        if "/" not in text and text not in STANDARD_FINALIZERS:
            causes.append(
                field_invalid(
                    f"{path}[{i}]",
                    text,
                    "name is neither a standard finalizer name nor is it fully qualified",
                )
            )
    return causes


def object_meta(
    obj: dict[str, Any], rule: str, *, namespaced: bool, kube: bool = False
) -> list[Cause]:
    """``ValidateObjectMeta`` of a create with name rule ``rule``.

    With ``kube`` the built-in kinds' finalizer check follows (core's ValidateObjectMeta).
    """
    # Most objects have valid names and no labels, annotations, owners or finalizers:
    # each check runs only when there is something to check.
    meta = ro_meta(obj)
    causes: list[Cause] = []
    name = str(meta.get("name") or "")
    generate = str(meta.get("generateName") or "")
    if generate and (problems := _name_problems(generate, rule, True)):
        causes.extend(field_invalid("metadata.generateName", generate, p) for p in problems)
    if not name:
        causes.append(field_required("metadata.name", "name or generateName is required"))
    elif problems := _name_problems(name, rule, False):
        causes.extend(field_invalid("metadata.name", name, p) for p in problems)
    namespace = str(meta.get("namespace") or "")
    if namespaced:
        if not namespace:
            causes.append(field_required("metadata.namespace"))
        elif problems := _name_problems(namespace, "label", False):
            causes.extend(field_invalid("metadata.namespace", namespace, p) for p in problems)
    elif namespace:
        causes.append(field_forbidden("metadata.namespace", "not allowed on this type"))
    generation = meta.get("generation")
    if isinstance(generation, int) and generation < 0:
        causes.append(field_invalid("metadata.generation", generation, NEGATIVE_MSG))
    _set_parts(meta, causes, kube=kube)
    return causes


def _set_parts(meta: dict[str, Any], causes: list[Cause], *, kube: bool) -> None:
    """Add the problems of the labels, annotations, owners and finalizers ``meta`` has."""
    if labels := meta.get("labels"):
        causes.extend(validate_labels(labels, "metadata.labels"))
    if annotations := meta.get("annotations"):
        causes.extend(validate_annotations(annotations, "metadata.annotations"))
    if owners := meta.get("ownerReferences"):
        causes.extend(owner_references(owners))
    if fins := meta.get("finalizers"):
        causes.extend(finalizers(fins))
        if kube:
            causes.extend(kube_finalizers(meta))


def meta_update(new: dict[str, Any], old: dict[str, Any], *, kube: bool = False) -> list[Cause]:
    """``ValidateObjectMetaAccessorUpdate`` (with ``kube``: core's ValidateObjectMetaUpdate)."""
    nm, om = ro_meta(new), ro_meta(old)
    causes: list[Cause] = []
    if om.get("deletionTimestamp"):
        old_fins = set(om.get("finalizers") or ())
        extra = sorted({str(f) for f in nm.get("finalizers") or () if f not in old_fins})
        if extra:
            listed = ", ".join(f'"{f}"' for f in extra)
            causes.append(
                field_forbidden(
                    "metadata.finalizers",
                    "no new finalizers can be added if the object is being deleted, found new "
                    f"finalizers []string{{{listed}}}",
                )
            )
    if not nm.get("resourceVersion"):
        causes.append(
            field_invalid("metadata.resourceVersion", "", "must be specified for an update")
        )
    new_gen, old_gen = nm.get("generation") or 0, om.get("generation") or 0
    if isinstance(new_gen, int) and isinstance(old_gen, int) and new_gen < old_gen:
        causes.append(field_invalid("metadata.generation", new_gen, "must not be decremented"))
    for key in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp"):
        if (nm.get(key) or "") != (om.get(key) or ""):
            causes.append(field_invalid(f"metadata.{key}", nm.get(key) or "", IMMUTABLE_MSG))
    if nm.get("deletionGracePeriodSeconds") != om.get("deletionGracePeriodSeconds"):
        causes.append(
            field_invalid(
                "metadata.deletionGracePeriodSeconds",
                nm.get("deletionGracePeriodSeconds"),
                IMMUTABLE_MSG,
            )
        )
    causes.extend(validate_labels(nm.get("labels"), "metadata.labels"))
    causes.extend(validate_annotations(nm.get("annotations"), "metadata.annotations"))
    causes.extend(owner_references(nm.get("ownerReferences")))
    if kube:
        causes.extend(kube_finalizers(nm))
    return causes
