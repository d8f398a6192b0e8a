"""Validation of object metadata and of the built-in types, worded as kube-apiserver words it.

Every write is validated before it is stored: the name against the type's naming rule, labels,
annotations, finalizers and owner references (k8s.io/apimachinery/pkg/api/validation
objectmeta.go), immutable metadata on update, and for some built-in types the checks operators
trip over most (a Deployment's selector must match its template labels, a Service needs ports,
ConfigMap keys must be valid). Each problem is a
:class:`~pyctrl.envtest.apimachinery.errors.Cause`; the server answers 422 Invalid with all
of them. Built-in validation is deliberately a subset of kube-apiserver's,
documented in docs/envtest-server.md.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import TYPE_CHECKING, Any

from pyctrl._apiextensions.gofmt import go_json_kind
from pyctrl.envtest.apimachinery.errors import (
    Cause,
    GoStruct,
    field_forbidden,
    field_invalid,
    field_required,
)
from pyctrl.envtest.apimachinery.fields import (
    SelectorError,
    label_value_problem,
    qualified_name_problem,
    selector_from_object,
)

if TYPE_CHECKING:
    from pyctrl.envtest.scheme.resources import ResourceType

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")

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


def name_problems(name: str, rule: str, *, prefix: bool = False) -> list[str]:
    """Why ``name`` breaks ``rule`` (empty list when it is valid).

    With ``prefix`` the name is a generateName prefix: a trailing dash is allowed.
    """
    if prefix:
        name = name.rstrip("-") or name
    if rule == "path":
        out = []
        if name in (".", ".."):
            out.append(f"may not be '{name}'")
        for bad in ("/", "%"):
            if bad in name:
                out.append(f"may not contain '{bad}'")
        return out
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
    return out


def validate_object_meta(rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
    """``ValidateObjectMeta`` for a create (or the new object of an update)."""
    causes: list[Cause] = []
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return [field_required("metadata", "")]
    name = meta.get("name") or ""
    generate = meta.get("generateName") or ""
    if not name and not generate:
        causes.append(field_required("metadata.name", "name or generateName is required"))
    if generate and not name:
        for problem in name_problems(generate, rt.name_rule, prefix=True):
            causes.append(field_invalid("metadata.generateName", generate, problem))
    if name:
        for problem in name_problems(name, rt.name_rule):
            causes.append(field_invalid("metadata.name", name, problem))
    labels = meta.get("labels")
    if isinstance(labels, dict):
        for key, value in labels.items():
            problem = qualified_name_problem(str(key))
            if problem:
                causes.append(field_invalid("metadata.labels", key, problem))
            if not isinstance(value, str):
                causes.append(field_invalid("metadata.labels", value, "must be a string"))
                continue
            problem = label_value_problem(value)
            if problem:
                causes.append(field_invalid("metadata.labels", value, problem))
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        total = 0
        for key, value in annotations.items():
            problem = qualified_name_problem(str(key).lower())
            if problem:
                causes.append(field_invalid("metadata.annotations", key, problem))
            total += len(str(key)) + len(str(value))
        if total > _MAX_ANNOTATIONS:
            causes.append(
                Cause(
                    "FieldValueTooLong",
                    f"Too long: may not be more than {_MAX_ANNOTATIONS} bytes",
                    "metadata.annotations",
                )
            )
    for i, fin in enumerate(meta.get("finalizers") or []):
        problem = qualified_name_problem(str(fin))
        if problem:
            causes.append(field_invalid(f"metadata.finalizers[{i}]", fin, problem))
    causes.extend(_owner_references(meta.get("ownerReferences") or []))
    return causes


def _owner_references(refs: list[Any]) -> list[Cause]:
    causes: list[Cause] = []
    controllers: list[str] = []
    for ref in refs:
        if not isinstance(ref, dict):
            causes.append(field_invalid("metadata.ownerReferences", ref, "must be an object"))
            continue
        base = "metadata.ownerReferences"
        api_version = ref.get("apiVersion") or ""
        if not api_version:
            causes.append(field_invalid(f"{base}.apiVersion", "", "version must not be empty"))
        if not ref.get("kind"):
            causes.append(field_invalid(f"{base}.kind", "", "kind must not be empty"))
        if not ref.get("name"):
            causes.append(field_invalid(f"{base}.name", "", "name must not be empty"))
        if not ref.get("uid"):
            causes.append(field_invalid(f"{base}.uid", "", "uid must not be empty"))
        if ref.get("controller"):
            controllers.append(str(ref.get("name", "")))
    if len(controllers) > 1:
        causes.append(
            field_invalid(
                "metadata.ownerReferences",
                [_owner_reference_json(r) for r in refs if isinstance(r, dict)],
                'Only one reference can have Controller set to true. Found "true" in '
                f"references for {' and '.join(controllers)}",
            )
        )
    return causes


def validate_meta_update(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """``ValidateObjectMetaUpdate``: immutable metadata, no finalizers added while deleting."""
    causes: list[Cause] = []
    nm, om = new.get("metadata") or {}, old.get("metadata") or {}
    for key in ("name", "namespace", "uid", "creationTimestamp"):
        if (nm.get(key) or "") != (om.get(key) or ""):
            causes.append(field_invalid(f"metadata.{key}", nm.get(key) or "", "field is immutable"))
    if om.get("deletionTimestamp"):
        old_fins = set(om.get("finalizers") or [])
        extra = [f for f in nm.get("finalizers") or [] if f not in old_fins]
        if extra:
            listed = ", ".join(f'"{f}"' for f in sorted(set(extra)))
            causes.append(
                field_forbidden(
                    "metadata.finalizers",
                    "no new finalizers can be added if the object is being deleted, found new "
                    f"finalizers []string{{{listed}}}",
                )
            )
    return causes


def _owner_reference_json(ref: dict[str, Any]) -> dict[str, Any]:
    """A metav1.OwnerReference as json.Marshal writes it: its fields in struct order."""
    out = GoStruct({k: ref.get(k, "") for k in ("apiVersion", "kind", "name", "uid")})
    out.update({k: ref[k] for k in ("controller", "blockOwnerDeletion") if ref.get(k) is not None})
    return out


def _label_selector_json(selector: Any) -> dict[str, Any]:
    """A metav1.LabelSelector as json.Marshal writes it (empty parts left out)."""
    out = GoStruct()
    if not isinstance(selector, dict):
        return out
    if selector.get("matchLabels"):
        out["matchLabels"] = selector["matchLabels"]
    expressions = [
        GoStruct(
            {
                "key": e.get("key", ""),
                "operator": e.get("operator", ""),
                **({"values": e["values"]} if e.get("values") else {}),
            }
        )
        for e in selector.get("matchExpressions") or ()
        if isinstance(e, dict)
    ]
    if expressions:
        out["matchExpressions"] = expressions
    return out


def _containers(spec: dict[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    containers = spec.get("containers")
    if not containers:
        return [field_required(f"{path}.containers")]
    seen: set[str] = set()
    for i, c in enumerate(containers):
        if not isinstance(c, dict):
            continue
        cname = c.get("name") or ""
        cpath = f"{path}.containers[{i}]"
        if not cname:
            causes.append(field_required(f"{cpath}.name"))
        else:
            for problem in name_problems(cname, "label"):
                causes.append(field_invalid(f"{cpath}.name", cname, problem))
            if cname in seen:
                causes.append(
                    Cause("FieldValueDuplicate", f'Duplicate value: "{cname}"', f"{cpath}.name")
                )
            seen.add(cname)
        if not c.get("image"):
            causes.append(field_required(f"{cpath}.image"))
    return causes


def _workload(obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    causes: list[Cause] = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [field_required("spec")]
    replicas = spec.get("replicas")
    if isinstance(replicas, int) and replicas < 0:
        causes.append(
            field_invalid("spec.replicas", replicas, "must be greater than or equal to 0")
        )
    selector = spec.get("selector")
    if not selector:
        causes.append(field_required("spec.selector"))
    else:
        try:
            parsed = selector_from_object(selector)
        except SelectorError as exc:
            causes.append(field_invalid("spec.selector", "", str(exc)))
            parsed = None
        if parsed is not None and parsed.empty:
            causes.append(
                field_invalid(
                    "spec.selector",
                    _label_selector_json(selector),
                    "empty selector is invalid for deployment",
                )
            )
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        if parsed is not None and not parsed.empty and not parsed.matches(template_labels):
            causes.append(
                field_invalid(
                    "spec.template.metadata.labels",
                    dict(template_labels),
                    "`selector` does not match template `labels`",
                )
            )
        if old is not None and (old.get("spec") or {}).get("selector") != selector:
            causes.append(
                field_invalid("spec.selector", _label_selector_json(selector), "field is immutable")
            )
    template = spec.get("template")
    if not isinstance(template, dict):
        causes.append(field_required("spec.template"))
    else:
        causes.extend(_containers(template.get("spec") or {}, "spec.template.spec"))
    return causes


def _config_keys(obj: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for field in ("data", "binaryData"):
        data = obj.get(field)
        if not isinstance(data, dict):
            continue
        for key in data:
            if not _CONFIG_KEY.match(key) or len(key) > 253:
                causes.append(
                    field_invalid(
                        f"{field}",
                        key,
                        "a valid config key must consist of alphanumeric characters, '-', '_' or "
                        "'.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for "
                        "validation is '[-._a-zA-Z0-9]+')",
                    )
                )
            if key in seen:
                causes.append(field_invalid("data", key, "duplicate of key present in binaryData"))
            seen.add(key)
    return causes


_IMMUTABLE_SET = "field is immutable when `immutable` is set"


def _immutable_data(
    obj: dict[str, Any], old: dict[str, Any] | None, fields: tuple[str, ...]
) -> list[Cause]:
    """``ValidateConfigMapUpdate`` / ``ValidateSecretUpdate``: an immutable object stays so."""
    if old is None or old.get("immutable") is not True:
        return []
    causes: list[Cause] = []
    if obj.get("immutable") is not True:
        causes.append(field_forbidden("immutable", _IMMUTABLE_SET))
    for field in fields:
        if (obj.get(field) or {}) != (old.get(field) or {}):
            causes.append(field_forbidden(field, _IMMUTABLE_SET))
    return causes


# ValidateSecret's required data keys by type (the basic-auth and ssh-auth paths are
# literally "data[%s][key]" in kube-apiserver).
_SECRET_KEYS: dict[str, tuple[tuple[str, str], ...]] = {
    "kubernetes.io/dockercfg": (("data", ".dockercfg"),),
    "kubernetes.io/dockerconfigjson": (("data", ".dockerconfigjson"),),
    "kubernetes.io/tls": (("data", "tls.crt"), ("data", "tls.key")),
}


def _secret(obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    """``ValidateSecretUpdate`` and ``ValidateSecret``: type, immutability, required keys."""
    causes: list[Cause] = []
    kind = obj.get("type") or ""
    if old is not None and kind != (old.get("type") or ""):
        causes.append(field_invalid("type", kind, "field is immutable"))
    causes.extend(_immutable_data(obj, old, ("data",)))
    causes.extend(_config_keys(obj))
    data = obj.get("data") if isinstance(obj.get("data"), dict) else {}
    assert isinstance(data, dict)
    if kind in ("kubernetes.io/dockercfg", "kubernetes.io/dockerconfigjson"):
        ((_, key),) = _SECRET_KEYS[kind]
        if key not in data:
            causes.append(field_required(f"data[{key}]"))
        else:
            try:
                decoded = json.loads(base64.b64decode(str(data[key])))
            except (ValueError, binascii.Error) as exc:
                causes.append(field_invalid(f"data[{key}]", "<secret contents redacted>", str(exc)))
            else:
                if not isinstance(decoded, dict):
                    causes.append(
                        field_invalid(
                            f"data[{key}]",
                            "<secret contents redacted>",
                            f"json: cannot unmarshal {go_json_kind(decoded)} into Go value of "
                            "type map[string]interface {}",
                        )
                    )
    elif kind == "kubernetes.io/tls":
        causes.extend(field_required(f"data[{k}]") for _, k in _SECRET_KEYS[kind] if k not in data)
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            causes.append(field_required("data[%s][username]"))
            causes.append(field_required("data[%s][password]"))
    elif kind == "kubernetes.io/ssh-auth":
        if not data.get("ssh-privatekey"):
            causes.append(field_required("data[%s][ssh-privatekey]"))
    elif kind == "kubernetes.io/service-account-token":
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if not annotations.get("kubernetes.io/service-account.name"):
            causes.append(
                field_required("metadata.annotations[kubernetes.io/service-account.name]")
            )
    return causes


def base64_problem(obj: dict[str, Any], field: str = "data") -> str:
    """Why a Secret's (or ConfigMap binaryData's) values are not valid base64, or ''."""
    data = obj.get(field)
    if not isinstance(data, dict):
        return ""
    for value in data.values():
        if not isinstance(value, str):
            return "illegal base64 data: value is not a string"
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return f"illegal base64 data at input byte {_bad_b64_index(value)}"
    return ""


def _bad_b64_index(value: str) -> int:
    alphabet = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
    for i, ch in enumerate(value):
        if ch not in alphabet:
            return i
    return len(value) - (len(value) % 4)


def _service(obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    causes: list[Cause] = []
    spec = obj.get("spec") or {}
    svc_type = spec.get("type", "ClusterIP")
    supported = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
    if svc_type not in supported:
        from pyctrl.envtest.apimachinery.errors import field_not_supported

        causes.append(field_not_supported("spec.type", svc_type, supported))
    headless = spec.get("clusterIP") == "None"
    ports = spec.get("ports") or []
    if not ports and not headless and svc_type != "ExternalName":
        causes.append(field_required("spec.ports"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        if not isinstance(port, dict):
            continue
        number = port.get("port")
        if not isinstance(number, int) or not 1 <= number <= 65535:
            causes.append(
                field_invalid(
                    f"spec.ports[{i}].port",
                    number,
                    "must be between 1 and 65535, inclusive",
                )
            )
        if len(ports) > 1 and not port.get("name"):
            causes.append(field_required(f"spec.ports[{i}].name"))
        pname = port.get("name")
        if pname:
            if pname in names:
                causes.append(
                    Cause(
                        "FieldValueDuplicate",
                        f'Duplicate value: "{pname}"',
                        f"spec.ports[{i}].name",
                    )
                )
            names.add(pname)
    if svc_type == "ExternalName" and not spec.get("externalName"):
        causes.append(field_required("spec.externalName"))
    if old is not None:
        old_ip = (old.get("spec") or {}).get("clusterIP")
        new_ip = spec.get("clusterIP")
        if old_ip and new_ip and old_ip != new_ip and svc_type != "ExternalName":
            causes.append(field_invalid("spec.clusterIPs[0]", new_ip, "may not change once set"))
    return causes


def validate_builtin(
    rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
) -> list[Cause]:
    """Type-specific validation of built-in objects (a subset of kube-apiserver's)."""
    group, kind = rt.storage_key[0], rt.kind
    if group == "apps" and kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"):
        return _workload(obj, old)
    if group == "" and kind == "ConfigMap":
        return _immutable_data(obj, old, ("data", "binaryData")) + _config_keys(obj)
    if group == "" and kind == "Secret":
        return _secret(obj, old)
    if group == "" and kind == "Service":
        return _service(obj, old)
    if group == "" and kind == "Pod":
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return [field_required("spec")]
        return _containers(spec, "spec")
    if group == "batch" and kind == "Job":
        template = (obj.get("spec") or {}).get("template")
        if not isinstance(template, dict):
            return [field_required("spec.template")]
        tspec = template.get("spec") or {}
        causes = _containers(tspec, "spec.template.spec")
        policy = tspec.get("restartPolicy")
        if policy not in ("OnFailure", "Never"):
            from pyctrl.envtest.apimachinery.errors import field_not_supported

            causes.append(
                field_not_supported(
                    "spec.template.spec.restartPolicy", policy, ["OnFailure", "Never"]
                )
            )
        return causes
    if group == "coordination.k8s.io" and kind == "Lease":
        duration = (obj.get("spec") or {}).get("leaseDurationSeconds")
        if isinstance(duration, int) and duration <= 0:
            return [field_invalid("spec.leaseDurationSeconds", duration, "must be greater than 0")]
    return []
