r"""Decoding of Kubernetes protobuf request bodies for a few built-in kinds.

kubectl's typed commands (``kubectl create namespace``, ``create configmap``, ``create
secret``, ``create serviceaccount``, ``create token``, ``create role``, ``create
rolebinding``, ``auth can-i``...) send their objects as
``application/vnd.kubernetes.protobuf``: the magic ``k8s\\x00`` followed by a
``runtime.Unknown`` envelope whose ``raw`` bytes are the object's protobuf message. The
embedded server answers in JSON (clients list JSON in Accept), but must read these bodies.
This module decodes them into the JSON dicts the server works with, for the kinds listed in
``KINDS``; other kinds answer 415 so that the client's error names the limitation.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

MAGIC = b"k8s\x00"

Schema = dict[int, tuple[str, str]]

_TIME: Schema = {1: ("seconds", "int"), 2: ("nanos", "int")}
_OWNER: Schema = {
    1: ("kind", "string"),
    3: ("name", "string"),
    4: ("uid", "string"),
    5: ("apiVersion", "string"),
    6: ("controller", "bool"),
    7: ("blockOwnerDeletion", "bool"),
}
_META: Schema = {
    1: ("name", "string"),
    2: ("generateName", "string"),
    3: ("namespace", "string"),
    5: ("uid", "string"),
    6: ("resourceVersion", "string"),
    7: ("generation", "int"),
    8: ("creationTimestamp", "time"),
    9: ("deletionTimestamp", "time"),
    10: ("deletionGracePeriodSeconds", "int"),
    11: ("labels", "map:string"),
    12: ("annotations", "map:string"),
    13: ("ownerReferences", "list:owner"),
    14: ("finalizers", "list:string"),
}
_OBJECT_REF: Schema = {
    1: ("kind", "string"),
    2: ("namespace", "string"),
    3: ("name", "string"),
    4: ("uid", "string"),
    5: ("apiVersion", "string"),
    6: ("resourceVersion", "string"),
    7: ("fieldPath", "string"),
}
_LOCAL_REF: Schema = {1: ("name", "string")}
_NAMESPACE_SPEC: Schema = {1: ("finalizers", "list:string")}
_NAMESPACE_STATUS: Schema = {1: ("phase", "string")}

_SCHEMAS: dict[str, Schema] = {
    "time": _TIME,
    "owner": _OWNER,
    "meta": _META,
    "objref": _OBJECT_REF,
    "localref": _LOCAL_REF,
    "nsspec": _NAMESPACE_SPEC,
    "nsstatus": _NAMESPACE_STATUS,
    "boundref": {
        1: ("kind", "string"),
        2: ("apiVersion", "string"),
        3: ("name", "string"),
        4: ("uid", "string"),
    },
    "resattrs": {
        1: ("namespace", "string"),
        2: ("verb", "string"),
        3: ("group", "string"),
        4: ("version", "string"),
        5: ("resource", "string"),
        6: ("subresource", "string"),
        7: ("name", "string"),
    },
    "nonresattrs": {1: ("path", "string"), 2: ("verb", "string")},
    "ssarspec": {
        1: ("resourceAttributes", "msg:resattrs"),
        2: ("nonResourceAttributes", "msg:nonresattrs"),
    },
    "sarspec": {
        1: ("resourceAttributes", "msg:resattrs"),
        2: ("nonResourceAttributes", "msg:nonresattrs"),
        3: ("user", "string"),
        4: ("groups", "list:string"),
        6: ("uid", "string"),
    },
    "trspec": {1: ("token", "string"), 2: ("audiences", "list:string")},
    "policyrule": {
        1: ("verbs", "list:string"),
        2: ("apiGroups", "list:string"),
        3: ("resources", "list:string"),
        4: ("resourceNames", "list:string"),
        5: ("nonResourceURLs", "list:string"),
    },
    "subject": {
        1: ("kind", "string"),
        2: ("apiGroup", "string"),
        3: ("name", "string"),
        4: ("namespace", "string"),
    },
    "roleref": {1: ("apiGroup", "string"), 2: ("kind", "string"), 3: ("name", "string")},
    "tokenspec": {
        1: ("audiences", "list:string"),
        3: ("boundObjectRef", "msg:boundref"),
        4: ("expirationSeconds", "int"),
    },
}

KINDS: dict[tuple[str, str], Schema] = {
    ("v1", "Namespace"): {
        1: ("metadata", "msg:meta"),
        2: ("spec", "msg:nsspec"),
        3: ("status", "msg:nsstatus"),
    },
    ("v1", "ConfigMap"): {
        1: ("metadata", "msg:meta"),
        2: ("data", "map:string"),
        3: ("binaryData", "map:bytes"),
        4: ("immutable", "bool"),
    },
    ("v1", "Secret"): {
        1: ("metadata", "msg:meta"),
        2: ("data", "map:bytes"),
        3: ("type", "string"),
        4: ("stringData", "map:string"),
        5: ("immutable", "bool"),
    },
    ("authentication.k8s.io/v1", "TokenRequest"): {
        1: ("metadata", "msg:meta"),
        2: ("spec", "msg:tokenspec"),
    },
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): {
        1: ("metadata", "msg:meta"),
        2: ("spec", "msg:ssarspec"),
    },
    ("authorization.k8s.io/v1", "SubjectAccessReview"): {
        1: ("metadata", "msg:meta"),
        2: ("spec", "msg:sarspec"),
    },
    ("authentication.k8s.io/v1", "TokenReview"): {
        1: ("metadata", "msg:meta"),
        2: ("spec", "msg:trspec"),
    },
    ("rbac.authorization.k8s.io/v1", "Role"): {
        1: ("metadata", "msg:meta"),
        2: ("rules", "list:policyrule"),
    },
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): {
        1: ("metadata", "msg:meta"),
        2: ("rules", "list:policyrule"),
    },
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): {
        1: ("metadata", "msg:meta"),
        2: ("subjects", "list:subject"),
        3: ("roleRef", "msg:roleref"),
    },
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): {
        1: ("metadata", "msg:meta"),
        2: ("subjects", "list:subject"),
        3: ("roleRef", "msg:roleref"),
    },
    ("v1", "ServiceAccount"): {
        1: ("metadata", "msg:meta"),
        2: ("secrets", "list:objref"),
        3: ("imagePullSecrets", "list:localref"),
        4: ("automountServiceAccountToken", "bool"),
    },
}


class ProtobufError(ValueError):
    """The body is not a protobuf object this module can decode."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    out: list[tuple[int, int, Any]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            value = data[pos : pos + length]
            if len(value) != length:
                raise ProtobufError("truncated field")
            pos += length
        elif wire == 1:
            value = data[pos : pos + 8]
            pos += 8
        elif wire == 5:
            value = data[pos : pos + 4]
            pos += 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _scalar(kind: str, value: Any) -> Any:
    if kind == "string":
        return bytes(value).decode()
    if kind == "bytes":
        return base64.b64encode(bytes(value)).decode()
    if kind == "int":
        return value - (1 << 64) if value >= 1 << 63 else value
    if kind == "bool":
        return bool(value)
    if kind == "time":
        fields = decode_message(bytes(value), _TIME)
        moment = datetime.fromtimestamp(int(fields.get("seconds", 0)), UTC)
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    if kind.startswith("msg:"):
        return decode_message(bytes(value), _SCHEMAS[kind[4:]])
    raise ProtobufError(f"unknown field type {kind}")


def decode_message(data: bytes, schema: Schema) -> dict[str, Any]:
    """Decode one message with ``schema`` into a JSON dict (unknown fields are dropped)."""
    out: dict[str, Any] = {}
    for number, _, value in _fields(data):
        spec = schema.get(number)
        if spec is None:
            continue
        name, kind = spec
        if kind.startswith("map:"):
            entry = {n: v for n, _, v in _fields(bytes(value))}
            key = bytes(entry.get(1, b"")).decode()
            out.setdefault(name, {})[key] = _scalar(kind[4:], entry.get(2, b""))
        elif kind.startswith("list:"):
            item_kind = kind[5:]
            item = (
                _scalar("string", value)
                if item_kind == "string"
                else decode_message(bytes(value), _SCHEMAS[item_kind])
            )
            out.setdefault(name, []).append(item)
        else:
            out[name] = _scalar(kind, value)
    return out


def decode_object(body: bytes) -> dict[str, Any]:
    r"""Decode a ``k8s\\x00``-prefixed protobuf object body into a JSON dict."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf magic prefix")
    envelope = {n: v for n, _, v in _fields(body[len(MAGIC) :])}
    type_meta = decode_message(
        bytes(envelope.get(1, b"")), {1: ("apiVersion", "string"), 2: ("kind", "string")}
    )
    api_version = type_meta.get("apiVersion", "")
    kind = type_meta.get("kind", "")
    schema = KINDS.get((api_version, kind))
    if schema is None:
        raise ProtobufError(f"protobuf bodies of {api_version}, Kind={kind} are not supported")
    obj = decode_message(bytes(envelope.get(2, b"")), schema)
    return {"apiVersion": api_version, "kind": kind, **obj}
