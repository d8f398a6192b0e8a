"""Validation the core kinds share: ConfigMap and Secret data, containers.

From k8s.io/kubernetes/pkg/apis/core/validation/validation.go (``ValidateConfigMap``,
``ValidateSecret`` and their ``...Update`` forms, which share their data rules), in its
order, and the containers' names and images a pod spec is checked for (Pods and workload
templates). Namespace, Pod, Service and Event rules are in their kinds' modules.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from pyctrl._apimachinery.field import (
    Cause,
    field_duplicate,
    field_forbidden,
    field_invalid,
    field_required,
    field_too_long,
)
from pyctrl._apimachinery.gofmt import go_json_kind
from pyctrl._apiserver.registry.meta import ro_meta
from pyctrl._apiserver.registry.validation import meta as _meta

_CONFIG_KEY_MSG = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
    "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
)
_MAX_SECRET_SIZE = 1024 * 1024
_IMMUTABLE_SET = "field is immutable when `immutable` is set"


def config_key_problems(key: str) -> list[str]:
    """``IsConfigMapKey``."""
    problems = []
    if len(key) > 253:
        problems.append("must be no more than 253 characters")
    if not key or any(not (c.isascii() and (c.isalnum() or c in "-._")) for c in key):
        problems.append(_CONFIG_KEY_MSG)
    if key == ".":
        problems.append("must not be '.'")
    elif key == "..":
        problems.append("must not be '..'")
    elif key.startswith(".."):
        problems.append("must not start with '..'")
    return problems


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _decoded_size(value: Any) -> int:
    try:
        return len(base64.b64decode(str(value)))
    except (binascii.Error, ValueError):
        return 0


def validate_configmap(obj: dict[str, Any]) -> list[Cause]:
    """``ValidateConfigMap``."""
    causes = _meta.object_meta(obj, "subdomain", namespaced=True, kube=True)
    data, binary = _dict(obj.get("data")), _dict(obj.get("binaryData"))
    total = 0
    for key, value in data.items():
        causes.extend(field_invalid(f"data[{key}]", key, p) for p in config_key_problems(key))
        if key in binary:
            causes.append(
                field_invalid(f"data[{key}]", key, "duplicate of key present in binaryData")
            )
        total += len(str(value).encode())
    for key, value in binary.items():
        causes.extend(field_invalid(f"binaryData[{key}]", key, p) for p in config_key_problems(key))
        total += _decoded_size(value)
    if total > _MAX_SECRET_SIZE:
        causes.append(field_too_long("", "", _MAX_SECRET_SIZE))
    return causes


def _immutable(obj: dict[str, Any], old: dict[str, Any], fields: tuple[str, ...]) -> list[Cause]:
    if old.get("immutable") is not True:
        return []
    causes: list[Cause] = []
    if obj.get("immutable") is not True:
        causes.append(field_forbidden("immutable", _IMMUTABLE_SET))
    for name in fields:
        if (obj.get(name) or {}) != (old.get(name) or {}):
            causes.append(field_forbidden(name, _IMMUTABLE_SET))
    return causes


def validate_configmap_update(obj: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """``ValidateConfigMapUpdate``."""
    causes = _meta.meta_update(obj, old, kube=True)
    causes.extend(_immutable(obj, old, ("data", "binaryData")))
    return causes + validate_configmap(obj)


def _docker_config(data: dict[str, Any], key: str) -> list[Cause]:
    if key not in data:
        return [field_required(f"data[{key}]")]
    try:
        decoded = json.loads(base64.b64decode(str(data[key])))
    except (ValueError, binascii.Error) as exc:
        return [field_invalid(f"data[{key}]", "<secret contents redacted>", str(exc))]
    if not isinstance(decoded, dict):
        return [
            field_invalid(
                f"data[{key}]",
                "<secret contents redacted>",
                f"json: cannot unmarshal {go_json_kind(decoded)} into Go value of "
                "type map[string]interface {}",
            )
        ]
    return []


def _secret_type_rules(obj: dict[str, Any], data: dict[str, Any]) -> list[Cause]:  # noqa: PLR0911 - one return per Secret type's rules, as ValidateSecret
    kind = obj.get("type") or ""
    if kind == "kubernetes.io/service-account-token":
        annotations = _dict(ro_meta(obj).get("annotations"))
        if not annotations.get("kubernetes.io/service-account.name"):
            return [field_required("metadata.annotations[kubernetes.io/service-account.name]")]
    elif kind == "kubernetes.io/dockercfg":
        return _docker_config(data, ".dockercfg")
    elif kind == "kubernetes.io/dockerconfigjson":
        return _docker_config(data, ".dockerconfigjson")
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            return [field_required("data[username]"), field_required("data[password]")]
    elif kind == "kubernetes.io/ssh-auth":
        if not data.get("ssh-privatekey"):
            return [field_required("data[ssh-privatekey]")]
    elif kind == "kubernetes.io/tls":
        return [field_required(f"data[{k}]") for k in ("tls.crt", "tls.key") if k not in data]
    return []


def validate_secret(obj: dict[str, Any]) -> list[Cause]:
    """``ValidateSecret``."""
    causes = _meta.object_meta(obj, "subdomain", namespaced=True, kube=True)
    data = _dict(obj.get("data"))
    total = 0
    for key, value in data.items():
        causes.extend(field_invalid(f"data[{key}]", key, p) for p in config_key_problems(key))
        total += _decoded_size(value)
    if total > _MAX_SECRET_SIZE:
        causes.append(field_too_long("data", "", _MAX_SECRET_SIZE))
    return causes + _secret_type_rules(obj, data)


def validate_secret_update(obj: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """``ValidateSecretUpdate``."""
    causes = _meta.meta_update(obj, old, kube=True)
    kind = obj.get("type") or ""
    if kind != (old.get("type") or ""):
        causes.append(field_invalid("type", kind, _meta.IMMUTABLE_MSG))
    causes.extend(_immutable(obj, old, ("data",)))
    return causes + validate_secret(obj)


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


def containers(spec: dict[str, Any], path: str) -> list[Cause]:
    """Each container: a unique DNS-1123 label name and an image (part of ValidatePodSpec)."""
    items = spec.get("containers")
    if not items:
        return [field_required(f"{path}.containers")]
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, container in enumerate(items):
        if not isinstance(container, dict):
            continue
        name = container.get("name") or ""
        cpath = f"{path}.containers[{i}]"
        if not name:
            causes.append(field_required(f"{cpath}.name"))
        else:
            causes.extend(
                field_invalid(f"{cpath}.name", name, p) for p in _meta.name_problems(name, "label")
            )
            if name in seen:
                causes.append(field_duplicate(f"{cpath}.name", name))
            seen.add(name)
        if not container.get("image"):
            causes.append(field_required(f"{cpath}.image"))
    return causes
