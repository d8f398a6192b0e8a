"""OpenAPI documents of the embedded API server.

kube-apiserver publishes the schema of every resource it serves: one Swagger 2.0
document at ``/openapi/v2`` and, per group version, an OpenAPI 3.0 document listed
at ``/openapi/v3`` (each under ``/openapi/v3/apis/{group}/{version}?hash=...``).
kubectl 1.32 reads the v3 documents for three things:

* ``kubectl explain``: it finds the resource's operations under
  ``paths``, takes their ``x-kubernetes-group-version-kind``, and renders the
  component schema that carries the same GVK;
* field validation: if the PATCH operation of a kind lists the ``fieldValidation``
  query parameter, kubectl leaves validation to the server (``fieldValidation=Strict``)
  instead of validating client side against the v2 document;
* ``kubectl apply`` (client side): if the PATCH operation accepts
  ``application/strategic-merge-patch+json`` it computes a strategic merge patch
  from the document's schemas, otherwise it falls back to its compiled-in types
  (built-ins) or a JSON merge patch (custom resources).

Custom resources get their CRD's ``openAPIV3Schema`` (with the standard
``apiVersion``, ``kind`` and ``metadata`` fields), as the apiextensions server
publishes them (in v2 without what Swagger 2.0 cannot say: ``nullable``,
``oneOf``, ``anyOf``, ``not``). Built-in kinds get their full schemas, named after
their Go types and derived from kubernetes_asyncio's models (`_builtin_schema`), with
the list and patch extensions kube-apiserver publishes
(``x-kubernetes-list-type``/``-list-map-keys``, ``x-kubernetes-patch-merge-key``/
``-patch-strategy``); their PATCH operations accept strategic merge patches, so
kubectl computes them from these schemas as it does against kube-apiserver.

Documents are cached per registry generation; each v3 document's URL carries a
hash of its content, so clients cache them until the set of resources changes.
The v2 document is served as JSON or, as client-go asks for it, in gnostic's
protobuf encoding (kubectl validates client side with it when server-side field
validation is not available for a kind, for example for the items of a ``List``).
"""

from __future__ import annotations

import copy
import hashlib
import re
from typing import TYPE_CHECKING, Any, Protocol

import orjson
from aiohttp import web

from pyctrl._apiserver.apimachinery import errors as _errors
from pyctrl._apiserver.discovery import KUBERNETES_VERSION, error_response
from pyctrl._apiserver.openapi.protobuf import openapi_v2_protobuf
from pyctrl._apiserver.scheme import builtin as _builtin_schema

if TYPE_CHECKING:
    from pyctrl._apiserver.scheme.resources import Registry, ResourceType

__all__ = [
    "add_routes",
    "definition_name",
    "openapi_v2",
    "openapi_v3",
    "openapi_v3_index",
]

_META = "io.k8s.apimachinery.pkg.apis.meta.v1"
_SCALE = "io.k8s.api.autoscaling.v1.Scale"
_JSON = "application/json"
_YAML = "application/yaml"
_PROTOBUF = "application/vnd.kubernetes.protobuf"
_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
# kube-openapi answers with a slightly different spelling of the type it was asked for.
_V2_PROTOBUF_RESPONSE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)
_BUILTIN_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)
_API_CONVENTIONS = (
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"
)
_SERVER_VERSION = "v{}.{}.{}+pyctrl".format(*KUBERNETES_VERSION)

# Top-level fields of a built-in kind without a known Go type: permissive.
_SPEC_STATUS = ("spec", "status")


class _Server(Protocol):
    """What the OpenAPI routes need from the API server: its resource registry."""

    @property
    def registry(self) -> Registry: ...


def _is_custom(rt: ResourceType) -> bool:
    return bool(rt.crd_name) or rt.schema is not None


def _package(group: str, version: str, *, custom: bool) -> str:
    if custom:
        return ".".join(reversed(group.split("."))) + "." + version
    return _builtin_schema.go_package(group, version)


def definition_name(rt: ResourceType) -> str:
    """Return the OpenAPI definition name kube-apiserver uses for a resource's kind.

    Built-ins are named after their Go package (``io.k8s.api.apps.v1.Deployment``),
    custom resources after their reversed group (``com.example.stable.v1.CronTab``).
    """
    return f"{_package(rt.group, rt.version, custom=_is_custom(rt))}.{rt.kind}"


def _list_definition_name(rt: ResourceType) -> str:
    return f"{_package(rt.group, rt.version, custom=_is_custom(rt))}.{rt.list_kind}"


def _gvk(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "kind": kind, "version": version}


def _camel(text: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[.\-]", text) if p)


def _op_prefix(group: str, version: str) -> str:
    if not group:
        return "CoreV" + version[1:]
    trimmed = group.removesuffix(".k8s.io") if group.endswith(".k8s.io") else group
    return _camel(trimmed) + _camel(version)


def _tag(group: str, version: str) -> str:
    if not group:
        return f"core_{version}"
    trimmed = group.removesuffix(".k8s.io") if group.endswith(".k8s.io") else group
    name = _camel(trimmed)
    return f"{name[:1].lower()}{name[1:]}_{version}"


class _Dialect:
    """The differences between Swagger 2.0 and OpenAPI 3.0 that the builders need."""

    def __init__(self, *, v3: bool) -> None:
        self.v3 = v3
        self.prefix = "#/components/schemas/" if v3 else "#/definitions/"

    def ref(self, name: str) -> dict[str, Any]:
        return {"$ref": self.prefix + name}

    def field_ref(self, name: str, description: str, *, default: Any = None) -> dict[str, Any]:
        """A property whose type is a named definition (v3 wraps refs in allOf)."""
        if self.v3:
            result: dict[str, Any] = {"allOf": [self.ref(name)]}
            if default is not None:
                result["default"] = default
            result["description"] = description
            return result
        return {"$ref": self.prefix + name, "description": description}

    def query(self, name: str, description: str, kind: str = "string") -> dict[str, Any]:
        if self.v3:
            return {
                "name": name,
                "in": "query",
                "description": description,
                "schema": {"type": kind, "uniqueItems": True},
            }
        return {
            "name": name,
            "in": "query",
            "description": description,
            "type": kind,
            "uniqueItems": True,
        }

    def path_param(self, name: str, description: str) -> dict[str, Any]:
        if self.v3:
            return {
                "name": name,
                "in": "path",
                "description": description,
                "required": True,
                "schema": {"type": "string", "uniqueItems": True},
            }
        return {
            "name": name,
            "in": "path",
            "description": description,
            "required": True,
            "type": "string",
            "uniqueItems": True,
        }

    def body(self, schema: str, media_types: tuple[str, ...]) -> dict[str, Any]:
        """Operation fields for a request body: requestBody (v3) or a body parameter (v2)."""
        if self.v3:
            return {
                "requestBody": {
                    "content": {m: {"schema": self.ref(schema)} for m in media_types},
                    "required": True,
                }
            }
        return {
            "consumes": list(media_types),
            "body_parameter": {
                "name": "body",
                "in": "body",
                "required": True,
                "schema": self.ref(schema),
            },
        }

    def responses(
        self, codes: dict[str, str], schema: str, media_types: tuple[str, ...]
    ) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for code, description in codes.items():
            if self.v3:
                result[code] = {
                    "description": description,
                    "content": {m: {"schema": self.ref(schema)} for m in media_types},
                }
            else:
                result[code] = {"description": description, "schema": self.ref(schema)}
        result["401"] = {"description": "Unauthorized"}
        return result


# ---------------------------------------------------------------------------
# Shared apimachinery definitions


def _string(description: str, **extra: Any) -> dict[str, Any]:
    return {"description": description, "type": "string", **extra}


def _string_map(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "type": "object",
        "additionalProperties": {"type": "string", "default": ""},
    }


def _object_meta_set_fields(d: _Dialect) -> dict[str, Any]:
    """ObjectMeta's fields that clients set: names, labels, annotations, owners, finalizers."""
    return {
        "annotations": _string_map(
            "Annotations is an unstructured key value map stored with a resource "
            "that may be set by external tools to store and retrieve arbitrary metadata."
        ),
        "finalizers": {
            "description": "Must be empty before the object is deleted from the "
            "registry. Each entry is an identifier for the responsible component "
            "that will remove the entry from the list.",
            "type": "array",
            "items": {"type": "string", "default": ""},
            "x-kubernetes-list-type": "set",
            "x-kubernetes-patch-strategy": "merge",
        },
        "generateName": _string(
            "GenerateName is an optional prefix, used by the server, to generate a "
            "unique name ONLY IF the Name field has not been provided."
        ),
        "labels": _string_map(
            "Map of string keys and values that can be used to organize and "
            "categorize (scope and select) objects."
        ),
        "managedFields": {
            "description": "ManagedFields maps workflow-id and version to the set of "
            "fields that are managed by that workflow.",
            "type": "array",
            "items": d.field_ref(f"{_META}.ManagedFieldsEntry", "", default={})
            if d.v3
            else d.ref(f"{_META}.ManagedFieldsEntry"),
            "x-kubernetes-list-type": "atomic",
        },
        "name": _string("Name must be unique within a namespace. Cannot be updated."),
        "namespace": _string(
            "Namespace defines the space within which each name must be unique. Cannot be updated."
        ),
        "ownerReferences": {
            "description": "List of objects depended by this object. If ALL objects "
            "in the list have been deleted, this object will be garbage collected.",
            "type": "array",
            "items": d.field_ref(f"{_META}.OwnerReference", "", default={})
            if d.v3
            else d.ref(f"{_META}.OwnerReference"),
            "x-kubernetes-list-map-keys": ["uid"],
            "x-kubernetes-list-type": "map",
            "x-kubernetes-patch-merge-key": "uid",
            "x-kubernetes-patch-strategy": "merge",
        },
    }


def _object_meta_system_fields(d: _Dialect) -> dict[str, Any]:
    """ObjectMeta's fields that the server populates (read-only to clients)."""
    time = f"{_META}.Time"
    return {
        "creationTimestamp": d.field_ref(
            time,
            "CreationTimestamp is a timestamp representing the server time when this "
            "object was created. Populated by the system. Read-only.",
        ),
        "deletionGracePeriodSeconds": {
            "description": "Number of seconds allowed for this object to gracefully "
            "terminate before it will be removed from the system. Read-only.",
            "type": "integer",
            "format": "int64",
        },
        "deletionTimestamp": d.field_ref(
            time,
            "DeletionTimestamp is the time after which this resource will be deleted. "
            "Set by the server when a graceful deletion is requested. Read-only.",
        ),
        "generation": {
            "description": "A sequence number representing a specific generation of "
            "the desired state. Populated by the system. Read-only.",
            "type": "integer",
            "format": "int64",
        },
        "resourceVersion": _string(
            "An opaque value that represents the internal version of this object "
            "that can be used by clients to determine when objects have changed. "
            "Read-only."
        ),
        "selfLink": _string("Deprecated: selfLink is a legacy read-only field."),
        "uid": _string(
            "UID is the unique in time and space value for this object. Populated "
            "by the system. Read-only."
        ),
    }


def _meta_field_definitions(d: _Dialect) -> dict[str, dict[str, Any]]:
    """Time, FieldsV1, ManagedFieldsEntry and OwnerReference: the parts of ObjectMeta."""
    time = f"{_META}.Time"
    return {
        time: {
            "description": "Time is a wrapper around time.Time which supports correct marshaling "
            "to YAML and JSON (RFC 3339, UTC).",
            "type": "string",
            "format": "date-time",
        },
        f"{_META}.FieldsV1": {
            "description": "FieldsV1 stores a set of fields in a data structure like a Trie, "
            "in JSON format.",
            "type": "object",
        },
        f"{_META}.ManagedFieldsEntry": {
            "description": "ManagedFieldsEntry is a workflow-id, a FieldSet and the group "
            "version of the resource that the fieldset applies to.",
            "type": "object",
            "properties": {
                "apiVersion": _string("APIVersion of the resource this field set applies to."),
                "fieldsType": _string('The format of the field set; only "FieldsV1" exists.'),
                "fieldsV1": d.field_ref(f"{_META}.FieldsV1", "The first JSON version format."),
                "manager": _string("An identifier of the workflow managing these fields."),
                "operation": _string('The operation that set these fields: "Apply" or "Update".'),
                "subresource": _string("The subresource used to update the object, if any."),
                "time": d.field_ref(time, "When these fields were last changed."),
            },
        },
        f"{_META}.OwnerReference": {
            "description": "OwnerReference contains enough information to let you identify an "
            "owning object. An owning object must be in the same namespace as the dependent, "
            "or be cluster-scoped, so there is no namespace field.",
            "type": "object",
            "required": ["apiVersion", "kind", "name", "uid"],
            "properties": {
                "apiVersion": _string("API version of the referent.", default=""),
                "blockOwnerDeletion": {
                    "description": "If true, the owner cannot be deleted from the key-value "
                    'store until this reference is removed ("foreground" deletion).',
                    "type": "boolean",
                },
                "controller": {
                    "description": "If true, this reference points to the managing controller.",
                    "type": "boolean",
                },
                "kind": _string("Kind of the referent.", default=""),
                "name": _string("Name of the referent.", default=""),
                "uid": _string("UID of the referent.", default=""),
            },
            "x-kubernetes-map-type": "atomic",
        },
    }


def _object_meta_definitions(d: _Dialect) -> dict[str, dict[str, Any]]:
    """ObjectMeta and ListMeta."""
    return {
        f"{_META}.ObjectMeta": {
            "description": "ObjectMeta is metadata that all persisted resources must have, "
            "which includes all objects users must create.",
            "type": "object",
            "properties": dict(
                sorted({**_object_meta_set_fields(d), **_object_meta_system_fields(d)}.items())
            ),
        },
        f"{_META}.ListMeta": {
            "description": "ListMeta describes metadata that synthetic resources must have, "
            "including lists and various status objects.",
            "type": "object",
            "properties": {
                "continue": _string(
                    "continue may be set if the user set a limit on the number of items "
                    "returned, and indicates that the server has more data available."
                ),
                "remainingItemCount": {
                    "description": "The number of subsequent items in the list which are "
                    "not included in this list response.",
                    "type": "integer",
                    "format": "int64",
                },
                "resourceVersion": _string(
                    "String that identifies the server's internal version of this object."
                ),
                "selfLink": _string("Deprecated: selfLink is a legacy read-only field."),
            },
        },
    }


def _status_definitions(d: _Dialect) -> dict[str, dict[str, Any]]:
    """Status and its details and causes."""
    return {
        f"{_META}.StatusCause": {
            "description": "StatusCause provides more information about an api.Status failure.",
            "type": "object",
            "properties": {
                "field": _string("The field of the resource that has caused this error."),
                "message": _string("A human-readable description of the cause of the error."),
                "reason": _string("A machine-readable description of the cause of the error."),
            },
        },
        f"{_META}.StatusDetails": {
            "description": "StatusDetails is a set of additional properties that MAY be set "
            "by the server to provide additional information about a response.",
            "type": "object",
            "properties": {
                "causes": {
                    "description": "The Causes array includes more details associated with "
                    "the StatusReason failure.",
                    "type": "array",
                    "items": d.ref(f"{_META}.StatusCause"),
                    "x-kubernetes-list-type": "atomic",
                },
                "group": _string("The group attribute of the resource."),
                "kind": _string("The kind attribute of the resource."),
                "name": _string("The name attribute of the resource."),
                "retryAfterSeconds": {
                    "description": "If specified, the time in seconds before the operation "
                    "should be retried.",
                    "type": "integer",
                    "format": "int32",
                },
                "uid": _string("UID of the resource."),
            },
        },
        f"{_META}.Status": {
            "description": "Status is a return value for calls that don't return other objects.",
            "type": "object",
            "properties": {
                "apiVersion": _string("APIVersion defines the versioned schema."),
                "code": {
                    "description": "Suggested HTTP return code for this status, 0 if not set.",
                    "type": "integer",
                    "format": "int32",
                },
                "details": d.field_ref(
                    f"{_META}.StatusDetails", "Extended data associated with the reason."
                ),
                "kind": _string("Kind is a string value representing the REST resource."),
                "message": _string("A human-readable description of the status."),
                "metadata": d.field_ref(f"{_META}.ListMeta", "Standard list metadata.", default={}),
                "reason": _string(
                    "A machine-readable description of why this operation is in the Failure status."
                ),
                "status": _string('Status of the operation: "Success" or "Failure".'),
            },
            "x-kubernetes-group-version-kind": [_gvk("", "v1", "Status")],
        },
    }


def _delete_options_definitions(d: _Dialect) -> dict[str, dict[str, Any]]:
    """DeleteOptions with its Preconditions, and the Patch body."""
    return {
        f"{_META}.Preconditions": {
            "description": "Preconditions must be fulfilled before an operation (update, "
            "delete, etc.) is carried out.",
            "type": "object",
            "properties": {
                "resourceVersion": _string("Specifies the target ResourceVersion."),
                "uid": _string("Specifies the target UID."),
            },
        },
        f"{_META}.DeleteOptions": {
            "description": "DeleteOptions may be provided when deleting an API object.",
            "type": "object",
            "properties": {
                "apiVersion": _string("APIVersion defines the versioned schema."),
                "dryRun": {
                    "description": "When present, indicates that modifications should not "
                    "be persisted.",
                    "type": "array",
                    "items": {"type": "string", "default": ""},
                    "x-kubernetes-list-type": "atomic",
                },
                "gracePeriodSeconds": {
                    "description": "The duration in seconds before the object should be deleted.",
                    "type": "integer",
                    "format": "int64",
                },
                "kind": _string("Kind is a string value representing the REST resource."),
                "preconditions": d.field_ref(
                    f"{_META}.Preconditions", "Must be fulfilled before a deletion is carried out."
                ),
                "propagationPolicy": _string(
                    "Whether and how garbage collection will be performed: 'Orphan', "
                    "'Background' or 'Foreground'."
                ),
            },
            "x-kubernetes-group-version-kind": [_gvk("", "v1", "DeleteOptions")],
        },
        f"{_META}.Patch": {
            "description": "Patch is provided to give a concrete name and type to the "
            "Kubernetes PATCH request body.",
            "type": "object",
        },
    }


def _meta_definitions(d: _Dialect) -> dict[str, dict[str, Any]]:
    """The apimachinery meta/v1 definitions every document references."""
    return {
        **_meta_field_definitions(d),
        **_object_meta_definitions(d),
        **_status_definitions(d),
        **_delete_options_definitions(d),
    }


def _scale_definitions(d: _Dialect) -> dict[str, dict[str, Any]]:
    return {
        _SCALE: {
            "description": "Scale represents a scaling request for a resource.",
            "type": "object",
            "properties": {
                "apiVersion": _string("APIVersion defines the versioned schema."),
                "kind": _string("Kind is a string value representing the REST resource."),
                "metadata": d.field_ref(
                    f"{_META}.ObjectMeta", "Standard object metadata.", default={}
                ),
                "spec": d.field_ref(
                    f"{_SCALE}Spec", "Defines the behavior of the scale.", default={}
                ),
                "status": d.field_ref(
                    f"{_SCALE}Status", "The current status of the scale. Read-only.", default={}
                ),
            },
            "x-kubernetes-group-version-kind": [_gvk("autoscaling", "v1", "Scale")],
        },
        f"{_SCALE}Spec": {
            "description": "ScaleSpec describes the attributes of a scale subresource.",
            "type": "object",
            "properties": {
                "replicas": {
                    "description": "Desired number of instances for the scaled object.",
                    "type": "integer",
                    "format": "int32",
                }
            },
        },
        f"{_SCALE}Status": {
            "description": "ScaleStatus represents the current status of a scale subresource.",
            "type": "object",
            "required": ["replicas"],
            "properties": {
                "replicas": {
                    "description": "Actual number of observed instances of the scaled object.",
                    "type": "integer",
                    "format": "int32",
                    "default": 0,
                },
                "selector": _string("Label query over pods that should match the replicas count."),
            },
        },
    }


# ---------------------------------------------------------------------------
# Resource definitions


def _v2_schema(schema: Any) -> Any:
    """Reduce a structural v3 schema to what Swagger 2.0 can say, as kube-apiserver does."""
    if isinstance(schema, list):
        return [_v2_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    result: dict[str, Any] = {}
    nullable = schema.get("nullable") is True
    for key, value in schema.items():
        if key in ("nullable", "oneOf", "anyOf", "not"):
            continue
        if key == "type" and nullable:
            # Swagger 2.0 cannot say "string or null": leave the type open.
            continue
        if key in ("properties", "patternProperties", "definitions"):
            result[key] = {name: _v2_schema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "allOf"):
            result[key] = _v2_schema(value)
        else:
            result[key] = value
    return result


def _standard_fields(d: _Dialect) -> dict[str, dict[str, Any]]:
    return {
        "apiVersion": _string(
            "APIVersion defines the versioned schema of this representation of an object. "
            "Servers should convert recognized schemas to the latest internal value, and may "
            f"reject unrecognized values. More info: {_API_CONVENTIONS}#resources"
        ),
        "kind": _string(
            "Kind is a string value representing the REST resource this object represents. "
            "Servers may infer this from the endpoint the client submits requests to. Cannot "
            f"be updated. In CamelCase. More info: {_API_CONVENTIONS}#types-kinds"
        ),
        "metadata": d.field_ref(
            f"{_META}.ObjectMeta",
            f"Standard object's metadata. More info: {_API_CONVENTIONS}#metadata",
            default={},
        ),
    }


def _kind_definition(rt: ResourceType, d: _Dialect) -> dict[str, Any]:
    gvk = [_gvk(rt.group, rt.version, rt.kind)]
    standard = _standard_fields(d)
    if _is_custom(rt):
        schema = copy.deepcopy(rt.schema or {"x-kubernetes-preserve-unknown-fields": True})
        if not d.v3:
            schema = _v2_schema(schema)
        schema.setdefault("type", "object")
        properties = schema.setdefault("properties", {})
        properties.update(standard)
        schema["x-kubernetes-group-version-kind"] = gvk
        return dict(schema)
    description = (
        f"{rt.kind} is the Kubernetes {rt.api_version} kind served at "
        f"{'namespaced' if rt.namespaced else 'cluster-scoped'} resource {rt.plural}."
    )
    definitions = _builtin_schema.openapi_definitions(rt.group, rt.version, rt.kind, v3=d.v3)
    if definitions is not None:
        # The cached definition is shared: extend a copy.
        root = dict(definitions[definition_name(rt)])
        root["description"] = description
        root["x-kubernetes-group-version-kind"] = gvk
        return root
    properties = dict(standard)
    for field in _SPEC_STATUS:
        properties[field] = {
            "description": f"{field} of the {rt.kind}.",
            "x-kubernetes-preserve-unknown-fields": True,
        }
    return {
        "description": description,
        "type": "object",
        "properties": properties,
        "x-kubernetes-group-version-kind": gvk,
    }


def _list_definition(rt: ResourceType, d: _Dialect) -> dict[str, Any]:
    return {
        "description": f"{rt.list_kind} is a list of {rt.kind}",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": _standard_fields(d)["apiVersion"],
            "items": {
                "description": f"List of {rt.plural}. More info: "
                "https://git.k8s.io/community/contributors/devel/sig-architecture/"
                "api-conventions.md",
                "type": "array",
                "items": d.ref(definition_name(rt)),
            },
            "kind": _standard_fields(d)["kind"],
            "metadata": d.field_ref(
                f"{_META}.ListMeta",
                f"Standard list metadata. More info: {_API_CONVENTIONS}#types-kinds",
                default={},
            ),
        },
        "x-kubernetes-group-version-kind": [_gvk(rt.group, rt.version, rt.list_kind)],
    }


# ---------------------------------------------------------------------------
# Operations


def _base_path(rt: ResourceType) -> str:
    return f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"


def _write_params(d: _Dialect, *, patch: bool = False) -> list[dict[str, Any]]:
    params = [
        d.query(
            "dryRun",
            "When present, indicates that modifications should not be persisted. Valid value: All.",
        ),
        d.query(
            "fieldManager",
            "fieldManager is a name associated with the actor or entity that is making "
            "these changes." + (" Required for apply requests." if patch else ""),
        ),
        d.query(
            "fieldValidation",
            "fieldValidation instructs the server on how to handle objects in the request "
            "containing unknown or duplicate fields: Ignore, Warn (the default) or Strict.",
        ),
    ]
    if patch:
        params.append(
            d.query(
                "force",
                'Force is going to "force" Apply requests: it re-acquires conflicting fields '
                "owned by other people. Must be unset for non-apply patch requests.",
                "boolean",
            )
        )
    return params


def _list_params(d: _Dialect) -> list[dict[str, Any]]:
    return [
        d.query("allowWatchBookmarks", "Requests watch events with type BOOKMARK.", "boolean"),
        d.query("continue", "The continue option from a previous paginated list call."),
        d.query("fieldSelector", "A selector to restrict the returned objects by their fields."),
        d.query("labelSelector", "A selector to restrict the returned objects by their labels."),
        d.query("limit", "The maximum number of responses to return for a list call.", "integer"),
        d.query(
            "resourceVersion", "Constrains which resource versions a request may be served from."
        ),
        d.query(
            "resourceVersionMatch",
            "Determines how resourceVersion is applied to list calls.",
        ),
        d.query(
            "sendInitialEvents",
            "With watch=true, starts the watch stream with synthetic events for the current state.",
            "boolean",
        ),
        d.query("timeoutSeconds", "Timeout for the list/watch call.", "integer"),
        d.query(
            "watch",
            "Watch for changes to the described resources and return them as a stream of "
            "add, update, and remove notifications.",
            "boolean",
        ),
    ]


def _delete_params(d: _Dialect) -> list[dict[str, Any]]:
    return [
        d.query("dryRun", "When present, indicates that modifications should not be persisted."),
        d.query(
            "gracePeriodSeconds",
            "The duration in seconds before the object should be deleted.",
            "integer",
        ),
        d.query(
            "propagationPolicy",
            "Whether and how garbage collection will be performed: Orphan, Background or "
            "Foreground.",
        ),
    ]


class _Operations:
    """Builds the path items of one resource in one dialect."""

    def __init__(self, rt: ResourceType, d: _Dialect) -> None:
        self.rt = rt
        self.d = d
        self.custom = _is_custom(rt)
        self.kind_def = definition_name(rt)
        self.list_def = _list_definition_name(rt)
        self.media = (_JSON, _YAML) if self.custom else (_JSON, _YAML, _PROTOBUF)
        self.prefix = _op_prefix(rt.group, rt.version)
        self.tag = _tag(rt.group, rt.version)
        self.gvk = _gvk(rt.group, rt.version, rt.kind)
        self.verbs = set(rt.verbs)
        self.ns = "Namespaced" if rt.namespaced else ""
        collection = _base_path(rt)
        if rt.namespaced:
            collection += "/namespaces/{namespace}"
        self.collection = collection + f"/{rt.plural}"
        self.item = self.collection + "/{name}"
        self.scope_params = [d.query("pretty", "If 'true', then the output is pretty printed.")]
        if rt.namespaced:
            self.scope_params.insert(
                0,
                d.path_param(
                    "namespace", "object name and auth scope, such as for teams and projects"
                ),
            )
        self.item_params = [d.path_param("name", f"name of the {rt.kind}"), *self.scope_params]

    def _op(
        self,
        action: str,
        op_id: str,
        description: str,
        *,
        params: list[dict[str, Any]],
        responses: dict[str, Any],
        body: tuple[str, tuple[str, ...]] | None = None,
        gvk: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        op: dict[str, Any] = {
            "tags": [self.tag],
            "description": description,
            "operationId": op_id,
            "parameters": list(params),
            "responses": responses,
        }
        if body is not None:
            fields = self.d.body(*body)
            body_param = fields.pop("body_parameter", None)
            if body_param is not None:
                op["parameters"].insert(0, body_param)
            op.update(fields)
        if not self.d.v3:
            op["produces"] = list(self.media)
            op["schemes"] = ["https"]
        op["x-kubernetes-action"] = action
        op["x-kubernetes-group-version-kind"] = gvk or self.gvk
        return op

    def _patch_media(self) -> tuple[str, ...]:
        return _PATCH_TYPES if self.custom else _BUILTIN_PATCH_TYPES

    def _collection_ops(self) -> dict[str, Any]:
        """The collection path: list, create and deletecollection."""
        d, kind, ns = self.d, self.rt.kind, self.ns
        ops: dict[str, Any] = {"parameters": self.scope_params}
        if "list" in self.verbs:
            ops["get"] = self._op(
                "list",
                f"list{self.prefix}{ns}{kind}",
                f"list or watch objects of kind {kind}",
                params=_list_params(d),
                responses=d.responses({"200": "OK"}, self.list_def, self.media),
            )
        if "create" in self.verbs:
            ops["post"] = self._op(
                "post",
                f"create{self.prefix}{ns}{kind}",
                f"create a {kind}",
                params=_write_params(d),
                responses=d.responses(
                    {"200": "OK", "201": "Created", "202": "Accepted"}, self.kind_def, self.media
                ),
                body=(self.kind_def, (_JSON, _YAML)),
            )
        if "deletecollection" in self.verbs:
            ops["delete"] = self._op(
                "deletecollection",
                f"delete{self.prefix}Collection{ns}{kind}",
                f"delete collection of {kind}",
                params=_delete_params(d) + _list_params(d)[:8],
                responses=d.responses({"200": "OK"}, f"{_META}.Status", self.media),
            )
        return ops

    def _item_ops(self) -> dict[str, Any]:
        """The item path: get, update, patch and delete."""
        d, kind, ns = self.d, self.rt.kind, self.ns
        ops: dict[str, Any] = {"parameters": self.item_params}
        if "get" in self.verbs:
            ops["get"] = self._op(
                "get",
                f"read{self.prefix}{ns}{kind}",
                f"read the specified {kind}",
                params=[],
                responses=d.responses({"200": "OK"}, self.kind_def, self.media),
            )
        if "update" in self.verbs:
            ops["put"] = self._op(
                "put",
                f"replace{self.prefix}{ns}{kind}",
                f"replace the specified {kind}",
                params=_write_params(d),
                responses=d.responses({"200": "OK", "201": "Created"}, self.kind_def, self.media),
                body=(self.kind_def, (_JSON, _YAML)),
            )
        if "patch" in self.verbs:
            ops["patch"] = self._op(
                "patch",
                f"patch{self.prefix}{ns}{kind}",
                f"partially update the specified {kind}",
                params=_write_params(d, patch=True),
                responses=d.responses({"200": "OK", "201": "Created"}, self.kind_def, self.media),
                body=(f"{_META}.Patch", self._patch_media()),
            )
        if "delete" in self.verbs:
            ops["delete"] = self._op(
                "delete",
                f"delete{self.prefix}{ns}{kind}",
                f"delete a {kind}",
                params=_delete_params(d),
                responses=d.responses(
                    {"200": "OK", "202": "Accepted"}, f"{_META}.Status", self.media
                ),
                body=(f"{_META}.DeleteOptions", (_JSON, _YAML)),
            )
        return ops

    def _all_namespaces_ops(self) -> dict[str, Any]:
        """The cluster-wide list of a namespaced kind."""
        d, kind = self.d, self.rt.kind
        return {
            "parameters": [d.query("pretty", "If 'true', then the output is pretty printed.")],
            "get": self._op(
                "list",
                f"list{self.prefix}{kind}ForAllNamespaces",
                f"list or watch objects of kind {kind}",
                params=_list_params(d),
                responses=d.responses({"200": "OK"}, self.list_def, self.media),
            ),
        }

    def _subresource_ops(self, sub: str, target_def: str, gvk: dict[str, str]) -> dict[str, Any]:
        """The get, put and patch operations of the status or scale subresource."""
        d, kind, ns = self.d, self.rt.kind, self.ns
        suffix = sub.capitalize()
        return {
            "parameters": self.item_params,
            "get": self._op(
                "get",
                f"read{self.prefix}{ns}{kind}{suffix}",
                f"read {sub} of the specified {kind}",
                params=[],
                responses=d.responses({"200": "OK"}, target_def, self.media),
                gvk=gvk,
            ),
            "put": self._op(
                "put",
                f"replace{self.prefix}{ns}{kind}{suffix}",
                f"replace {sub} of the specified {kind}",
                params=_write_params(d),
                responses=d.responses({"200": "OK", "201": "Created"}, target_def, self.media),
                body=(target_def, (_JSON, _YAML)),
                gvk=gvk,
            ),
            "patch": self._op(
                "patch",
                f"patch{self.prefix}{ns}{kind}{suffix}",
                f"partially update {sub} of the specified {kind}",
                params=_write_params(d, patch=True),
                responses=d.responses({"200": "OK", "201": "Created"}, target_def, self.media),
                body=(f"{_META}.Patch", self._patch_media()),
                gvk=gvk,
            ),
        }

    def build(self) -> dict[str, dict[str, Any]]:
        rt = self.rt
        paths: dict[str, dict[str, Any]] = {
            self.collection: self._collection_ops(),
            self.item: self._item_ops(),
        }
        if rt.namespaced and "list" in self.verbs:
            paths[f"{_base_path(rt)}/{rt.plural}"] = self._all_namespaces_ops()
        for sub in sorted(rt.subresources):
            if sub == "status":
                target_def, gvk = self.kind_def, self.gvk
            elif sub == "scale":
                target_def, gvk = _SCALE, _gvk("autoscaling", "v1", "Scale")
            else:
                continue
            paths[f"{self.item}/{sub}"] = self._subresource_ops(sub, target_def, gvk)
        return paths


# ---------------------------------------------------------------------------
# Documents


def _served(registry: Registry) -> list[ResourceType]:
    return [rt for rt in registry.all() if rt.served]


def _add_resources(
    resources: list[ResourceType], d: _Dialect
) -> tuple[dict[str, Any], dict[str, Any]]:
    paths: dict[str, Any] = {}
    definitions = _meta_definitions(d)
    for rt in sorted(resources, key=lambda r: (r.group, r.version, r.plural)):
        if not _is_custom(rt):
            # The types a built-in kind refers to; the shared apimachinery ones above win.
            for name, schema in (
                _builtin_schema.openapi_definitions(rt.group, rt.version, rt.kind, v3=d.v3) or {}
            ).items():
                definitions.setdefault(name, schema)
        definitions[definition_name(rt)] = _kind_definition(rt, d)
        definitions[_list_definition_name(rt)] = _list_definition(rt, d)
        if "scale" in rt.subresources:
            definitions.update(_scale_definitions(d))
        paths.update(_Operations(rt, d).build())
    return paths, dict(sorted(definitions.items()))


_SECURITY_SCHEME = {
    "type": "apiKey",
    "description": "Bearer Token authentication",
    "name": "authorization",
    "in": "header",
}


def openapi_v2(registry: Registry) -> dict[str, Any]:
    """Build the Swagger 2.0 document of every served resource.

    Args:
        registry: The server's resource registry.

    Returns:
        The document, as kube-apiserver serves it at ``/openapi/v2``.
    """
    d = _Dialect(v3=False)
    paths, definitions = _add_resources(_served(registry), d)
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": _SERVER_VERSION},
        "paths": dict(sorted(paths.items())),
        "definitions": definitions,
        "securityDefinitions": {"BearerToken": _SECURITY_SCHEME},
        "security": [{"BearerToken": []}],
    }


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def openapi_v3(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    """Build the OpenAPI 3.0 document of one group version.

    Args:
        registry: The server's resource registry.
        group: The API group ("" for core).
        version: The version.

    Returns:
        The document, or None if the group version serves no resource.
    """
    resources = [rt for rt in _served(registry) if (rt.group, rt.version) == (group, version)]
    if not resources:
        return None
    d = _Dialect(v3=True)
    paths, schemas = _add_resources(resources, d)
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": _SERVER_VERSION},
        "paths": dict(sorted(paths.items())),
        "components": {"schemas": schemas, "securitySchemes": {"BearerToken": _SECURITY_SCHEME}},
    }


def openapi_v3_index(registry: Registry, hashes: dict[str, str]) -> dict[str, Any]:
    """Build the ``/openapi/v3`` index: one entry per served group version.

    Args:
        registry: The server's resource registry.
        hashes: Content hash of each group version document, by index path.

    Returns:
        The index document.
    """
    paths: dict[str, Any] = {}
    for rt in _served(registry):
        path = _gv_path(rt.group, rt.version)
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={hashes[path]}"}
    return {"paths": dict(sorted(paths.items()))}


# ---------------------------------------------------------------------------
# The v2 document in gnostic's protobuf encoding (openapi_v2.Document), which is
# what client-go asks for. Field numbers from gnostic's OpenAPIv2.proto.


def _accepts_json(accept: str | None) -> bool:
    return _negotiate(accept, (_JSON,)) == _JSON


def _negotiate(accept: str | None, offered: tuple[str, ...]) -> str | None:
    """Pick the first offered media type the Accept header allows (None: none)."""
    if not accept:
        return offered[0]
    for part in accept.split(","):
        pieces = [p.strip() for p in part.split(";")]
        media = pieces[0].lower()
        if any(p.replace(" ", "") == "q=0" for p in pieces[1:]):
            continue
        if media in ("*/*", "application/*"):
            return offered[0]
        if media in offered:
            return media
    return None


def _not_acceptable() -> web.Response:
    # kube-apiserver also offers the gnostic protobuf encodings; this server does not.
    return error_response(_errors.not_acceptable([_JSON]))


class _Cache:
    """OpenAPI documents, encoded once per registry generation."""

    def __init__(self, server: _Server) -> None:
        self._server = server
        self._generation: int | None = None
        self._v2_dict: dict[str, Any] | None = None
        self._v2: bytes | None = None
        self._v2_pb: bytes | None = None
        self._v3: dict[str, tuple[bytes, str]] = {}
        self._index: bytes | None = None

    def _fresh(self) -> Registry:
        registry = self._server.registry
        if registry.generation != self._generation:
            self._generation = registry.generation
            self._v2_dict = None
            self._v2 = None
            self._v2_pb = None
            self._v3 = {}
            self._index = None
        return registry

    def _v2_document(self) -> dict[str, Any]:
        registry = self._fresh()
        if self._v2_dict is None:
            self._v2_dict = openapi_v2(registry)
        return self._v2_dict

    def v2(self) -> bytes:
        document = self._v2_document()
        if self._v2 is None:
            self._v2 = orjson.dumps(document)
        return self._v2

    def v2_protobuf(self) -> bytes:
        document = self._v2_document()
        if self._v2_pb is None:
            self._v2_pb = openapi_v2_protobuf(document)
        return self._v2_pb

    def _all_v3(self, registry: Registry) -> dict[str, tuple[bytes, str]]:
        if not self._v3:
            group_versions = {(rt.group, rt.version) for rt in _served(registry)}
            for group, version in sorted(group_versions):
                document = openapi_v3(registry, group, version)
                if document is None:
                    continue
                body = orjson.dumps(document)
                digest = hashlib.sha512(body).hexdigest().upper()
                self._v3[_gv_path(group, version)] = (body, digest)
        return self._v3

    def v3(self, path: str) -> tuple[bytes, str] | None:
        return self._all_v3(self._fresh()).get(path)

    def index(self) -> bytes:
        registry = self._fresh()
        if self._index is None:
            hashes = {path: digest for path, (_, digest) in self._all_v3(registry).items()}
            self._index = orjson.dumps(openapi_v3_index(registry, hashes))
        return self._index


class _Handlers:
    def __init__(self, server: _Server) -> None:
        self._cache = _Cache(server)

    async def v2(self, request: web.Request) -> web.Response:
        chosen = _negotiate(request.headers.get("Accept"), (_JSON, _V2_PROTOBUF))
        if chosen is None:
            return error_response(_errors.not_acceptable([_JSON, _V2_PROTOBUF]))
        if chosen == _JSON:
            body, content_type = self._cache.v2(), _JSON
        else:
            body, content_type = self._cache.v2_protobuf(), _V2_PROTOBUF_RESPONSE
        etag = '"' + hashlib.sha512(body).hexdigest()[:32].upper() + '"'
        headers = {"ETag": etag, "Vary": "Accept"}
        if etag in request.headers.get("If-None-Match", ""):
            return web.Response(status=304, headers=headers)
        headers["Content-Type"] = content_type
        return web.Response(body=body, headers=headers)

    async def v3_index(self, request: web.Request) -> web.Response:
        if not _accepts_json(request.headers.get("Accept")):
            return _not_acceptable()
        return web.Response(body=self._cache.index(), content_type=_JSON)

    async def v3_document(self, request: web.Request) -> web.StreamResponse:
        if not _accepts_json(request.headers.get("Accept")):
            return _not_acceptable()
        path = request.match_info["path"].strip("/")
        found = self._cache.v3(path)
        if found is None:
            return error_response(_errors.unknown_resource())
        body, digest = found
        requested = request.query.get("hash")
        if requested is not None and requested != digest:
            # As kube-apiserver: an outdated hash is redirected to the current one.
            location = f"/openapi/v3/{path}?hash={digest}"
            return web.Response(
                status=301,
                headers={"Location": location, "Cache-Control": "no-cache, no-store, max-age=0"},
            )
        etag = f'"{digest}"'
        cache_control = (
            "public, immutable, max-age=31536000" if requested else "no-cache, max-age=0"
        )
        headers = {"ETag": etag, "Cache-Control": cache_control, "Vary": "Accept"}
        if etag in request.headers.get("If-None-Match", ""):
            return web.Response(status=304, headers=headers)
        return web.Response(body=body, content_type=_JSON, headers=headers)


def add_routes(app: web.Application, server: _Server) -> None:
    """Register ``/openapi/v2``, ``/openapi/v3`` and ``/openapi/v3/{path}`` (GET).

    Authentication is the server's business: these handlers assume the request was
    already let through.

    Args:
        app: The server's aiohttp application (not yet frozen).
        server: The API server; its ``registry`` is read on every request.
    """
    handlers = _Handlers(server)
    app.router.add_get("/openapi/v2", handlers.v2, allow_head=False)
    app.router.add_get("/openapi/v3", handlers.v3_index, allow_head=False)
    app.router.add_get("/openapi/v3/{path:.+}", handlers.v3_document, allow_head=False)
