"""How each field of an object merges: the type model behind patches and managedFields.

kube-apiserver decides how two versions of an object combine from metadata on its Go
types. Strategic merge patch reads the ``patchStrategy`` and ``patchMergeKey`` struct
tags (``containers`` merge by ``name``, ``finalizers`` merge as a set of strings, every
other list is replaced whole). Server-side apply and managedFields read the OpenAPI
extensions generated from the ``+listType``/``+listMapKey``/``+mapType``/``+structType``
markers (``x-kubernetes-list-type: map`` with ``x-kubernetes-list-map-keys``, ``set``,
``atomic``; atomic maps and structs). Custom resources carry the same extensions in the
CRD's ``openAPIV3Schema``, and have no strategic merge patch at all.

This module describes both with one small tree of :class:`Node` values:

- ``struct``: an object whose keys are named fields (``is_named`` is true); fields not
  listed take the node's ``elem`` type;
- ``map``: an object whose keys are entries of one ``elem`` type (labels, ConfigMap data,
  ``additionalProperties``);
- ``list``: ``list_type`` ``atomic`` (replaced and owned whole), ``set`` (scalars, merged
  and owned by value) or ``map`` (items merged and owned by ``keys``); ``strategy`` and
  ``merge_key`` are the strategic-merge-patch tags of the same field;
- ``scalar``.

Built-in kinds are described by hand-written tables taken from the ``k8s.io/api`` types,
listing only what differs from the defaults: a field not listed is a granular struct if
its value is an object and an atomic list if its value is a list, which is what most
Kubernetes fields are. :func:`builtin_root` gives the node of a built-in kind;
:func:`schema_root` converts a CRD version's ``openAPIV3Schema``.
:func:`empty_object` gives the zero value kube-apiserver compares a created object with
(non-pointer structs and non-``omitempty`` lists of the Go type are present there, which
decides where managedFields gets a ``"."`` entry).
"""

from __future__ import annotations

import copy
from typing import Any, Final

__all__ = [
    "BUILTIN_ANY",
    "BUILTIN_GROUPS",
    "DEDUCED",
    "OBJECT_META",
    "SCALAR",
    "Node",
    "builtin_root",
    "empty_object",
    "is_builtin_group",
    "schema_root",
]

BUILTIN_GROUPS = frozenset(
    {
        "",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "apps",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "extensions",
        "flowcontrol.apiserver.k8s.io",
        "internal.apiserver.k8s.io",
        "networking.k8s.io",
        "node.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "resource.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
        "storagemigration.k8s.io",
    }
)
"""API groups served by kube-apiserver itself; every other group is custom (a CRD or an
aggregated API), which strategic merge patch does not support."""

STRUCT: Final = "struct"
MAP: Final = "map"
LIST: Final = "list"
SCALAR_KIND: Final = "scalar"


class Node:
    """The merge semantics of one position in an object (see the module docstring).

    Attributes:
        kind: ``"struct"``, ``"map"``, ``"list"`` or ``"scalar"``.
        fields: declared fields of a struct.
        elem: type of undeclared struct fields, of map entries, or of list items.
        atomic: an atomic struct or map (replaced and owned whole).
        named_unknown: undeclared keys of this struct still count as named fields (true
            for built-in Go structs, whose every key is a field).
        list_type: ``"atomic"``, ``"set"`` or ``"map"`` for lists.
        keys: the ``x-kubernetes-list-map-keys`` of a ``map`` list.
        key_defaults: defaults of key fields an item may omit (``protocol: TCP``).
        strategy: the field's strategic-merge-patch ``patchStrategy`` tag.
        merge_key: the field's strategic-merge-patch ``patchMergeKey`` tag.
    """

    __slots__ = (
        "atomic",
        "elem",
        "fields",
        "key_defaults",
        "keys",
        "kind",
        "list_type",
        "merge_key",
        "named_unknown",
        "strategy",
    )

    def __init__(
        self,
        kind: str,
        *,
        fields: dict[str, Node] | None = None,
        elem: Node | None = None,
        atomic: bool = False,
        named_unknown: bool = False,
        list_type: str = "atomic",
        keys: tuple[str, ...] = (),
        key_defaults: dict[str, Any] | None = None,
        strategy: str = "",
        merge_key: str = "",
    ) -> None:
        self.kind = kind
        self.fields: dict[str, Node] = fields if fields is not None else {}
        self.elem: Node = elem if elem is not None else self
        self.atomic = atomic
        self.named_unknown = named_unknown
        self.list_type = list_type
        self.keys = keys
        self.key_defaults: dict[str, Any] = key_defaults or {}
        self.strategy = strategy
        self.merge_key = merge_key

    def child(self, key: str) -> Node:
        """The node of field or entry ``key`` of this object node."""
        if self.kind == STRUCT:
            found = self.fields.get(key)
            if found is not None:
                return found
        return self.elem

    def is_named(self, key: str) -> bool:
        """Whether ``key`` is a named (struct) field rather than a map entry."""
        return self.kind == STRUCT and (self.named_unknown or key in self.fields)

    def __repr__(self) -> str:
        return f"Node({self.kind}, list_type={self.list_type}, keys={self.keys})"


SCALAR: Final = Node(SCALAR_KIND)
"""A scalar (string, number, boolean, or IntOrString/Quantity)."""

DEDUCED: Final = Node(MAP)
"""An untyped, granular value: objects are maps of deduced values, lists are atomic."""

UNTYPED_ATOMIC: Final = Node(MAP, atomic=True)
"""An untyped atomic value (``RawExtension``, JSON): replaced and owned whole."""

BUILTIN_ANY: Final = Node(STRUCT, named_unknown=True)
"""A field of a built-in type not listed in the tables: a granular Go struct."""


def _struct(fields: dict[str, Node] | None = None, *, atomic: bool = False) -> Node:
    return Node(STRUCT, fields=fields, elem=BUILTIN_ANY, atomic=atomic, named_unknown=True)


def _map(elem: Node = SCALAR, *, atomic: bool = False) -> Node:
    return Node(MAP, elem=elem, atomic=atomic)


def _keyed(
    elem: Node,
    keys: tuple[str, ...],
    *,
    merge_key: str | None = None,
    strategy: str = "merge",
    defaults: dict[str, Any] | None = None,
) -> Node:
    """A ``+listType=map`` list, merged by strategic merge patch on ``merge_key``."""
    return Node(
        LIST,
        elem=elem,
        list_type="map",
        keys=keys,
        key_defaults=defaults,
        strategy=strategy,
        merge_key=keys[0] if merge_key is None else merge_key,
    )


def _atomic_list(elem: Node = BUILTIN_ANY, *, merge_key: str = "", strategy: str = "") -> Node:
    return Node(LIST, elem=elem, strategy=strategy, merge_key=merge_key)


def _set(*, strategy: str = "merge") -> Node:
    """A ``+listType=set`` list of scalars (strategic merge patch merges it too)."""
    return Node(LIST, elem=SCALAR, list_type="set", strategy=strategy)


_ATOMIC_STRUCT = _struct(atomic=True)
LABEL_SELECTOR: Final = _ATOMIC_STRUCT
_CONDITIONS = _keyed(_struct(), ("type",))

OBJECT_META: Final = _struct(
    {
        "labels": _map(),
        "annotations": _map(),
        # OwnerReference is +structType=atomic.
        "ownerReferences": _keyed(_ATOMIC_STRUCT, ("uid",)),
        "finalizers": _set(),
        "managedFields": _atomic_list(),
    }
)
"""ObjectMeta (k8s.io/apimachinery/pkg/apis/meta/v1)."""

_RESOURCES = _struct(
    {"limits": _map(), "requests": _map(), "claims": _keyed(_struct(), ("name",), strategy="")}
)
_ENV_VAR = _struct(
    {
        "valueFrom": _struct(
            {
                "configMapKeyRef": _ATOMIC_STRUCT,
                "secretKeyRef": _ATOMIC_STRUCT,
                "fieldRef": _ATOMIC_STRUCT,
                "resourceFieldRef": _ATOMIC_STRUCT,
                "fileKeyRef": _ATOMIC_STRUCT,
            }
        )
    }
)
_CONTAINER = _struct(
    {
        "ports": _keyed(
            _struct(),
            ("containerPort", "protocol"),
            merge_key="containerPort",
            defaults={"protocol": "TCP"},
        ),
        "env": _keyed(_ENV_VAR, ("name",)),
        "volumeMounts": _keyed(_struct(), ("mountPath",)),
        "volumeDevices": _keyed(_struct(), ("devicePath",)),
        "resources": _RESOURCES,
    }
)
_PVC_SPEC = _struct(
    {
        "resources": _RESOURCES,
        "selector": LABEL_SELECTOR,
        "dataSource": _ATOMIC_STRUCT,
    }
)
_VOLUME = _struct(
    {
        "csi": _struct({"volumeAttributes": _map(), "nodePublishSecretRef": _ATOMIC_STRUCT}),
        "flexVolume": _struct({"options": _map(), "secretRef": _ATOMIC_STRUCT}),
        "ephemeral": _struct(
            {"volumeClaimTemplate": _struct({"metadata": OBJECT_META, "spec": _PVC_SPEC})}
        ),
    }
)
_AFFINITY_TERM = _struct({"labelSelector": LABEL_SELECTOR, "namespaceSelector": LABEL_SELECTOR})
_POD_SPEC = _struct(
    {
        "volumes": _keyed(_VOLUME, ("name",), strategy="merge,retainKeys"),
        "initContainers": _keyed(_CONTAINER, ("name",)),
        "containers": _keyed(_CONTAINER, ("name",)),
        "ephemeralContainers": _keyed(_CONTAINER, ("name",)),
        # LocalObjectReference is +structType=atomic.
        "imagePullSecrets": _keyed(_ATOMIC_STRUCT, ("name",)),
        "hostAliases": _keyed(_struct(), ("ip",)),
        "topologySpreadConstraints": _keyed(
            _struct({"labelSelector": LABEL_SELECTOR}),
            ("topologyKey", "whenUnsatisfiable"),
            merge_key="topologyKey",
        ),
        "schedulingGates": _keyed(_struct(), ("name",)),
        "resourceClaims": _keyed(_struct(), ("name",), strategy="merge,retainKeys"),
        "nodeSelector": _map(atomic=True),
        "overhead": _map(),
        "affinity": _struct(
            {
                "nodeAffinity": _struct(
                    # NodeSelector is +structType=atomic.
                    {"requiredDuringSchedulingIgnoredDuringExecution": _ATOMIC_STRUCT}
                ),
                "podAffinity": _struct(
                    {"requiredDuringSchedulingIgnoredDuringExecution": _atomic_list(_AFFINITY_TERM)}
                ),
                "podAntiAffinity": _struct(
                    {"requiredDuringSchedulingIgnoredDuringExecution": _atomic_list(_AFFINITY_TERM)}
                ),
            }
        ),
    }
)
_POD_TEMPLATE_SPEC = _struct({"metadata": OBJECT_META, "spec": _POD_SPEC})
_POD_STATUS = _struct(
    {
        "conditions": _CONDITIONS,
        "podIPs": _keyed(_struct(), ("ip",)),
        "hostIPs": _keyed(_struct(), ("ip",)),
        "resourceClaimStatuses": _keyed(_struct(), ("name",), strategy="merge,retainKeys"),
    }
)
_STATUS_WITH_CONDITIONS = _struct({"conditions": _CONDITIONS})
_WORKLOAD_SPEC = _struct({"selector": LABEL_SELECTOR, "template": _POD_TEMPLATE_SPEC})
_JOB_SPEC = _struct({"selector": LABEL_SELECTOR, "template": _POD_TEMPLATE_SPEC})
_WEBHOOKS = _keyed(
    _struct({"namespaceSelector": LABEL_SELECTOR, "objectSelector": LABEL_SELECTOR}),
    ("name",),
)


def _root(fields: dict[str, Node] | None = None) -> Node:
    return _struct({"metadata": OBJECT_META, **(fields or {})})


_ROOTS: dict[tuple[str, str], Node] = {
    ("", "Pod"): _root({"spec": _POD_SPEC, "status": _POD_STATUS}),
    ("", "PodTemplate"): _root({"template": _POD_TEMPLATE_SPEC}),
    ("", "ReplicationController"): _root(
        {
            "spec": _struct({"selector": _map(atomic=True), "template": _POD_TEMPLATE_SPEC}),
            "status": _STATUS_WITH_CONDITIONS,
        }
    ),
    ("", "Service"): _root(
        {
            "spec": _struct(
                {
                    "ports": _keyed(
                        _struct(),
                        ("port", "protocol"),
                        merge_key="port",
                        defaults={"protocol": "TCP"},
                    ),
                    "selector": _map(atomic=True),
                }
            ),
            "status": _STATUS_WITH_CONDITIONS,
        }
    ),
    ("", "ConfigMap"): _root({"data": _map(), "binaryData": _map()}),
    ("", "Secret"): _root({"data": _map(), "stringData": _map()}),
    ("", "Namespace"): _root({"status": _STATUS_WITH_CONDITIONS}),
    ("", "Node"): _root(
        {
            "spec": _struct({"podCIDRs": _set()}),
            "status": _struct(
                {
                    "conditions": _CONDITIONS,
                    "addresses": _keyed(_struct(), ("type",)),
                    "capacity": _map(),
                    "allocatable": _map(),
                }
            ),
        }
    ),
    ("", "PersistentVolumeClaim"): _root(
        {
            "spec": _PVC_SPEC,
            "status": _struct(
                {
                    "conditions": _CONDITIONS,
                    "capacity": _map(),
                    "allocatedResources": _map(),
                    "allocatedResourceStatuses": _map(atomic=True),
                }
            ),
        }
    ),
    ("", "PersistentVolume"): _root(
        {"spec": _struct({"capacity": _map(), "claimRef": _ATOMIC_STRUCT})}
    ),
    ("", "ServiceAccount"): _root({"secrets": _keyed(_ATOMIC_STRUCT, ("name",))}),
    ("", "ResourceQuota"): _root(
        {
            "spec": _struct({"hard": _map()}),
            "status": _struct({"hard": _map(), "used": _map()}),
        }
    ),
    ("", "Event"): _root({"involvedObject": _ATOMIC_STRUCT, "related": _ATOMIC_STRUCT}),
    ("apps", "Deployment"): _root(
        {
            "spec": _struct(
                {
                    "selector": LABEL_SELECTOR,
                    "template": _POD_TEMPLATE_SPEC,
                    "strategy": Node(
                        STRUCT, elem=BUILTIN_ANY, named_unknown=True, strategy="retainKeys"
                    ),
                }
            ),
            "status": _STATUS_WITH_CONDITIONS,
        }
    ),
    ("apps", "ReplicaSet"): _root({"spec": _WORKLOAD_SPEC, "status": _STATUS_WITH_CONDITIONS}),
    ("apps", "DaemonSet"): _root({"spec": _WORKLOAD_SPEC, "status": _STATUS_WITH_CONDITIONS}),
    ("apps", "StatefulSet"): _root({"spec": _WORKLOAD_SPEC, "status": _STATUS_WITH_CONDITIONS}),
    ("apps", "ControllerRevision"): _root({"data": UNTYPED_ATOMIC}),
    ("batch", "Job"): _root(
        {
            "spec": _JOB_SPEC,
            # JobStatus.conditions: patchStrategy merge on type, but +listType=atomic.
            "status": _struct({"conditions": _atomic_list(merge_key="type", strategy="merge")}),
        }
    ),
    ("batch", "CronJob"): _root(
        {"spec": _struct({"jobTemplate": _struct({"metadata": OBJECT_META, "spec": _JOB_SPEC})})}
    ),
    ("policy", "PodDisruptionBudget"): _root(
        {
            "spec": _struct({"selector": LABEL_SELECTOR}),
            "status": _struct({"conditions": _CONDITIONS, "disruptedPods": _map()}),
        }
    ),
    ("autoscaling", "HorizontalPodAutoscaler"): _root({"status": _STATUS_WITH_CONDITIONS}),
    ("networking.k8s.io", "NetworkPolicy"): _root(
        {"spec": _struct({"podSelector": LABEL_SELECTOR})}
    ),
    ("storage.k8s.io", "StorageClass"): _root({"parameters": _map()}),
    ("rbac.authorization.k8s.io", "RoleBinding"): _root({"roleRef": _ATOMIC_STRUCT}),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): _root({"roleRef": _ATOMIC_STRUCT}),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): _root(
        {"webhooks": _WEBHOOKS}
    ),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): _root(
        {"webhooks": _WEBHOOKS}
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _root(
        {"status": _struct({"conditions": _keyed(_struct(), ("type",), merge_key="", strategy="")})}
    ),
    ("certificates.k8s.io", "CertificateSigningRequest"): _root(
        {"spec": _struct({"extra": _map()}), "status": _STATUS_WITH_CONDITIONS}
    ),
}
_GENERIC_ROOT = _root()


def is_builtin_group(group: str) -> bool:
    """Whether ``group`` is served by kube-apiserver itself (so has Go types)."""
    return group in BUILTIN_GROUPS


def builtin_root(group: str, kind: str) -> Node:
    """The type of a built-in kind (a generic struct with ObjectMeta if not tabled)."""
    return _ROOTS.get((group, kind), _GENERIC_ROOT)


# --- empty objects --------------------------------------------------------------------------

_PT: dict[str, Any] = {"metadata": {}, "spec": {"containers": None}}
_EMPTY: dict[tuple[str, str], dict[str, Any]] = {
    ("", "Pod"): {"spec": {"containers": None}, "status": {}},
    ("", "PodTemplate"): {"template": _PT},
    ("", "ReplicationController"): {"spec": {}, "status": {}},
    ("", "Service"): {"spec": {}, "status": {"loadBalancer": {}}},
    ("", "Namespace"): {"spec": {}, "status": {}},
    ("", "Node"): {
        "spec": {},
        "status": {"daemonEndpoints": {"kubeletEndpoint": {}}, "nodeInfo": {}},
    },
    ("", "PersistentVolumeClaim"): {"spec": {"resources": {}}, "status": {}},
    ("", "PersistentVolume"): {"spec": {}, "status": {}},
    ("", "ResourceQuota"): {"spec": {}, "status": {}},
    ("", "Event"): {"involvedObject": {}, "source": {}},
    ("apps", "Deployment"): {"spec": {"template": _PT, "strategy": {}}, "status": {}},
    ("apps", "ReplicaSet"): {"spec": {"template": _PT}, "status": {}},
    ("apps", "DaemonSet"): {"spec": {"template": _PT, "updateStrategy": {}}, "status": {}},
    ("apps", "StatefulSet"): {"spec": {"template": _PT, "updateStrategy": {}}, "status": {}},
    ("batch", "Job"): {"spec": {"template": _PT}, "status": {}},
    ("batch", "CronJob"): {
        "spec": {"jobTemplate": {"metadata": {}, "spec": {"template": _PT}}},
        "status": {},
    },
    ("coordination.k8s.io", "Lease"): {"spec": {}},
    ("networking.k8s.io", "Ingress"): {"spec": {}, "status": {"loadBalancer": {}}},
    ("policy", "PodDisruptionBudget"): {"spec": {}, "status": {}},
    ("autoscaling", "HorizontalPodAutoscaler"): {"spec": {"scaleTargetRef": {}}, "status": {}},
    ("rbac.authorization.k8s.io", "Role"): {"rules": None},
    ("rbac.authorization.k8s.io", "ClusterRole"): {"rules": None},
    ("rbac.authorization.k8s.io", "RoleBinding"): {"roleRef": {}},
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): {"roleRef": {}},
    ("apiextensions.k8s.io", "CustomResourceDefinition"): {
        "spec": {"names": {}},
        "status": {"conditions": None, "acceptedNames": {}, "storedVersions": None},
    },
}


def empty_object(group: str, kind: str, *, builtin: bool) -> dict[str, Any]:
    """The zero value of a kind, as kube-apiserver's field manager sees it on create.

    For a built-in kind this is the Go zero value serialized: ``metadata`` plus the
    non-pointer structs and non-omitempty lists of the type (``spec.template`` of a
    Deployment, ``status``). For a custom resource it is an empty object.
    """
    if not builtin:
        return {}
    base = _EMPTY.get((group, kind))
    out: dict[str, Any] = copy.deepcopy(base) if base is not None else {}
    out["metadata"] = {}
    return out


# --- CRD schemas ----------------------------------------------------------------------------

_SCALAR_TYPES = frozenset({"string", "integer", "number", "boolean"})
_schema_cache: dict[int, tuple[dict[str, Any], Node]] = {}
_SCHEMA_CACHE_SIZE = 256


def schema_root(schema: dict[str, Any]) -> Node:
    """The type of a custom resource from its CRD version's ``openAPIV3Schema``.

    ``apiVersion``, ``kind`` and ``metadata`` are always the standard fields, whatever
    the schema says about them (kube-apiserver does the same).
    """
    cached = _schema_cache.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    node = _schema_node(schema)
    if node.kind != STRUCT:
        node = Node(STRUCT, elem=DEDUCED)
    fields = dict(node.fields)
    fields["metadata"] = OBJECT_META
    fields["apiVersion"] = SCALAR
    fields["kind"] = SCALAR
    root = Node(STRUCT, fields=fields, elem=node.elem, atomic=False)
    if len(_schema_cache) >= _SCHEMA_CACHE_SIZE:
        _schema_cache.pop(next(iter(_schema_cache)))
    # Holding the schema in the cache keeps its id from being reused while cached.
    _schema_cache[id(schema)] = (schema, root)
    return root


def _schema_node(schema: Any) -> Node:  # noqa: PLR0911 - one return per schema node kind and list type
    if not isinstance(schema, dict):
        return DEDUCED
    if schema.get("x-kubernetes-int-or-string") is True:
        return SCALAR
    typ = schema.get("type")
    if typ == "array":
        return _schema_list(schema)
    if typ in _SCALAR_TYPES:
        return SCALAR
    props = schema.get("properties")
    additional = schema.get("additionalProperties")
    if typ == "object" or isinstance(props, dict) or isinstance(additional, dict):
        atomic = schema.get("x-kubernetes-map-type") == "atomic"
        if isinstance(props, dict) and props:
            fields = {name: _schema_node(sub) for name, sub in props.items()}
            if schema.get("x-kubernetes-embedded-resource") is True:
                fields.setdefault("metadata", OBJECT_META)
                fields.setdefault("apiVersion", SCALAR)
                fields.setdefault("kind", SCALAR)
            return Node(STRUCT, fields=fields, elem=DEDUCED, atomic=atomic)
        if isinstance(additional, dict):
            return Node(MAP, elem=_schema_node(additional), atomic=atomic)
        return Node(MAP, elem=DEDUCED, atomic=atomic)
    return DEDUCED


def _schema_list(schema: dict[str, Any]) -> Node:
    items = schema.get("items")
    elem = _schema_node(items)
    list_type = schema.get("x-kubernetes-list-type", "atomic")
    if list_type == "map":
        keys = tuple(str(k) for k in schema.get("x-kubernetes-list-map-keys") or ())
        defaults: dict[str, Any] = {}
        item_props = items.get("properties") if isinstance(items, dict) else None
        if isinstance(item_props, dict):
            for key in keys:
                sub = item_props.get(key)
                if isinstance(sub, dict) and "default" in sub:
                    defaults[key] = sub["default"]
        return Node(LIST, elem=elem, list_type="map", keys=keys, key_defaults=defaults)
    if list_type == "set":
        return Node(LIST, elem=elem, list_type="set")
    return Node(LIST, elem=elem)
