"""The resource types the embedded API server serves.

A :class:`ResourceType` describes one REST resource at one API version: its group, version,
kind, plural and short names, whether it is namespaced, which subresources it has, and the
storage strategy facts kube-apiserver keeps per type (does it track ``metadata.generation``, may
a PUT create it, may a PUT skip ``resourceVersion``, which name rule applies, which field
selectors it accepts). The :class:`Registry` holds the built-in types (core, apps, batch,
coordination, RBAC, admissionregistration, apiextensions...) and the types that
CustomResourceDefinitions add at run time; its ``generation`` counter bumps whenever the set
changes so discovery and OpenAPI caches know when to rebuild.

Several resource types may share one storage (``storage_key``): the versions of one CRD, or
``events`` in the core group and in ``events.k8s.io``. Objects are stored once, at the storage
version, and converted on the way out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from pyctrl.envtest.scheme import events as _events

if TYPE_CHECKING:
    from pyctrl.envtest.storage.store import StorageKey

Converter = Callable[[dict[str, Any]], dict[str, Any]]

ALL_VERBS: tuple[str, ...] = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)


@dataclass(frozen=True)
class PrinterColumn:
    """One column of the ``Table`` rendering (``kubectl get``) of a resource."""

    name: str
    type: str
    json_path: str
    description: str = ""
    priority: int = 0
    format: str = ""


@dataclass(frozen=True)
class ResourceType:
    """One REST resource at one API version, with the storage facts the server needs.

    The first block of fields is the interface discovery and OpenAPI read; the second block
    is the per-type strategy of kube-apiserver's registry (pkg/registry/...).
    """

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    list_kind: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: frozenset[str] = frozenset()
    scale_paths: tuple[str, str, str | None] | None = None
    printer_columns: tuple[PrinterColumn, ...] = ()
    schema: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    storage_version: str = ""
    served: bool = True

    # Strategy facts (kube-apiserver's RESTCreateStrategy / RESTUpdateStrategy per type).
    has_generation: bool = False
    allow_create_on_update: bool = False
    allow_unconditional_update: bool = True
    return_deleted_object: bool = False
    name_rule: str = "subdomain"
    """``subdomain`` (DNS-1123 subdomain), ``label`` (DNS-1123 label), ``label1035``
    (DNS-1035 label) or ``path`` (any path segment name)."""
    field_labels: tuple[str, ...] = ()
    """Field selector labels beyond ``metadata.name`` / ``metadata.namespace``."""
    field_paths: tuple[tuple[str, str], ...] = ()
    """For CRD ``selectableFields``: (label, JSON path)."""
    default_gc_policy: str = "Background"
    """``Background``, ``Orphan`` or ``Unsupported`` (DefaultGarbageCollectionPolicy)."""
    graceful_delete: bool = False
    initial_status: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    """Status set on create for built-ins whose create resets status (None: status dropped
    for CRDs with a status subresource, untouched for types without one)."""
    storage_group: str | None = None
    """Group of the storage when it differs from ``group`` (None: the same)."""
    storage_plural: str = ""
    to_storage: Converter | None = field(default=None, compare=False, hash=False)
    from_storage: Converter | None = field(default=None, compare=False, hash=False)
    crd_name: str = ""
    """Name of the CustomResourceDefinition that defines this type ('' for built-ins)."""
    deprecation_warning: str = ""
    """The Warning of every request on a deprecated CRD version (empty: not deprecated)."""
    preserve_unknown_fields: bool = False

    @property
    def gvk(self) -> tuple[str, str, str]:
        """(group, version, kind)."""
        return (self.group, self.version, self.kind)

    @cached_property
    def api_version(self) -> str:
        """``v1`` for the core group, ``group/version`` otherwise."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @cached_property
    def storage_key(self) -> StorageKey:
        """(group, plural) of the storage this type lives in."""
        group = self.group if self.storage_group is None else self.storage_group
        return (group, self.storage_plural or self.plural)

    @cached_property
    def storage_api_version(self) -> str:
        """apiVersion of stored objects."""
        group = self.group if self.storage_group is None else self.storage_group
        version = self.storage_version or self.version
        return f"{group}/{version}" if group else version

    @cached_property
    def has_status(self) -> bool:
        """Whether the type has a ``/status`` subresource."""
        return "status" in self.subresources

    @property
    def qualified(self) -> str:
        """``plural.group`` (``plural`` for the core group), as error messages name it."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


class Registry:
    """Every resource type the server serves, built-in and CRD-defined."""

    def __init__(self, types: Iterable[ResourceType] = ()) -> None:
        self._by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        self._by_gvk: dict[tuple[str, str, str], ResourceType] = {}
        self._by_crd: dict[str, list[ResourceType]] = {}
        self.generation = 0
        # The resourceVersion each storage's watch cache starts at (kube-apiserver's
        # listResourceVersion): watches from an older version are Expired.
        self.cache_start: dict[StorageKey, int] = {}
        for rt in types:
            self._add(rt)

    def _add(self, rt: ResourceType) -> None:
        self._by_gvr[(rt.group, rt.version, rt.plural)] = rt
        self._by_gvk[(rt.group, rt.version, rt.kind)] = rt
        if rt.crd_name:
            self._by_crd.setdefault(rt.crd_name, []).append(rt)

    def all(self) -> list[ResourceType]:
        """Every served resource type, built-ins and CRD-defined."""
        return [rt for rt in self._by_gvr.values() if rt.served]

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The served type at (group, version, plural), or None."""
        rt = self._by_gvr.get((group, version, plural))
        return rt if rt is not None and rt.served else None

    def by_kind(self, group: str, version: str, kind: str) -> ResourceType | None:
        """The served type of (group, version, kind), or None."""
        rt = self._by_gvk.get((group, version, kind))
        return rt if rt is not None and rt.served else None

    def by_group_kind(self, group: str, kind: str) -> ResourceType | None:
        """Any served version of (group, kind), preferring the storage version."""
        found: ResourceType | None = None
        for rt in self._by_gvk.values():
            if rt.group == group and rt.kind == kind and rt.served:
                if not rt.storage_version or rt.storage_version == rt.version:
                    return rt
                found = found or rt
        return found

    def for_storage(self, key: StorageKey) -> list[ResourceType]:
        """Every type (served or not) that reads and writes the storage ``key``."""
        return [rt for rt in self._by_gvr.values() if rt.storage_key == key]

    def storage_type(self, key: StorageKey) -> ResourceType | None:
        """The type whose version is the storage version of ``key``."""
        candidates = self.for_storage(key)
        for rt in candidates:
            if rt.group == key[0] and (not rt.storage_version or rt.version == rt.storage_version):
                return rt
        return candidates[0] if candidates else None

    def storage_keys(self) -> list[StorageKey]:
        """Every storage key, each once."""
        seen: dict[StorageKey, None] = {}
        for rt in self._by_gvr.values():
            seen.setdefault(rt.storage_key, None)
        return list(seen)

    def crd_types(self, crd_name: str) -> list[ResourceType]:
        """The types a CRD currently defines."""
        return list(self._by_crd.get(crd_name, []))

    def set_crd_types(self, crd_name: str, types: list[ResourceType]) -> None:
        """Replace the types a CRD defines (empty list: the CRD is gone)."""
        old = self._by_crd.pop(crd_name, [])
        for rt in old:
            self._by_gvr.pop((rt.group, rt.version, rt.plural), None)
            self._by_gvk.pop((rt.group, rt.version, rt.kind), None)
        for rt in types:
            self._add(rt)
        if old != types:
            self.generation += 1

    def groups(self) -> list[tuple[str, list[str], str]]:
        """(group, served versions, preferred version) per group; the core group is ''."""
        versions: dict[str, list[str]] = {}
        for rt in self.all():
            vs = versions.setdefault(rt.group, [])
            if rt.version not in vs:
                vs.append(rt.version)
        out: list[tuple[str, list[str], str]] = []
        for group, vs in versions.items():
            ordered = sorted(vs, key=version_priority_key)
            out.append((group, ordered, ordered[0]))
        return out


def version_priority_key(version: str) -> tuple[int, int, int, str]:
    """Sort key of Kubernetes version priority: GA > beta > alpha, higher numbers first."""
    import re

    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if m is None:
        return (3, 0, 0, version)
    major = int(m.group(1))
    if m.group(2) is None:
        return (0, -major, 0, version)
    level = 1 if m.group(2) == "beta" else 2
    return (level, -major, -int(m.group(3)), version)


# --- built-in types ---------------------------------------------------------------------------

_NAME_DESC = (
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
_AGE_DESC = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)


def _core(kind: str, plural: str, **kw: Any) -> ResourceType:
    return _builtin("", "v1", kind, plural, **kw)


def _builtin(
    group: str,
    version: str,
    kind: str,
    plural: str,
    *,
    namespaced: bool = True,
    **kw: Any,
) -> ResourceType:
    return ResourceType(
        group=group,
        version=version,
        kind=kind,
        plural=plural,
        singular=kind.lower(),
        namespaced=namespaced,
        list_kind=kind + "List",
        storage_version=version,
        **kw,
    )


_REPLICAS_SCALE = (".spec.replicas", ".status.replicas", None)
_ALL = ("all",)
_POD_FIELDS = (
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.podIPs",
    "status.nominatedNodeName",
)
_EVENT_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)
_EVENTS_V1_FIELDS = (
    "regarding.kind",
    "regarding.namespace",
    "regarding.name",
    "regarding.uid",
    "regarding.apiVersion",
    "regarding.resourceVersion",
    "regarding.fieldPath",
    "reason",
    "reportingController",
    "type",
)


def builtin_types() -> list[ResourceType]:
    """The built-in resource types, as a kube-apiserver of Kubernetes 1.32 serves them."""
    status = frozenset({"status"})
    status_scale = frozenset({"status", "scale"})
    return [
        _core(
            "Namespace",
            "namespaces",
            namespaced=False,
            short_names=("ns",),
            subresources=frozenset({"status", "finalize"}),
            name_rule="label",
            field_labels=("status.phase",),
            return_deleted_object=True,
            initial_status={"phase": "Active"},
        ),
        _core("ConfigMap", "configmaps", short_names=("cm",)),
        _core("Secret", "secrets", field_labels=("type",)),
        _core(
            "Service",
            "services",
            short_names=("svc",),
            categories=_ALL,
            subresources=status,
            name_rule="label1035",
            allow_create_on_update=True,
            return_deleted_object=True,
            initial_status={"loadBalancer": {}},
        ),
        _core(
            "ServiceAccount",
            "serviceaccounts",
            short_names=("sa",),
            subresources=frozenset({"token"}),
            allow_create_on_update=True,
            return_deleted_object=True,
        ),
        _core(
            "Pod",
            "pods",
            short_names=("po",),
            categories=_ALL,
            subresources=status | {"eviction"},
            field_labels=_POD_FIELDS,
            return_deleted_object=True,
            graceful_delete=True,
            initial_status={"phase": "Pending"},
        ),
        _core(
            "Event",
            "events",
            short_names=("ev",),
            field_labels=_EVENT_FIELDS,
            allow_create_on_update=True,
            to_storage=_events.compact_core,
            from_storage=_events.core_view,
        ),
        _core("Endpoints", "endpoints", short_names=("ep",), allow_create_on_update=True),
        _core(
            "PersistentVolumeClaim",
            "persistentvolumeclaims",
            short_names=("pvc",),
            subresources=status,
            initial_status={"phase": "Pending"},
        ),
        _core(
            "PersistentVolume",
            "persistentvolumes",
            namespaced=False,
            short_names=("pv",),
            subresources=status,
            return_deleted_object=True,
            initial_status={"phase": "Pending"},
        ),
        _core(
            "Node",
            "nodes",
            namespaced=False,
            short_names=("no",),
            subresources=status,
            field_labels=("spec.unschedulable",),
        ),
        _core("LimitRange", "limitranges", short_names=("limits",), allow_create_on_update=True),
        _core(
            "ResourceQuota",
            "resourcequotas",
            short_names=("quota",),
            subresources=status,
            initial_status={},
        ),
        _core("PodTemplate", "podtemplates", return_deleted_object=True),
        _core(
            "ReplicationController",
            "replicationcontrollers",
            short_names=("rc",),
            categories=_ALL,
            subresources=status_scale,
            scale_paths=_REPLICAS_SCALE,
            has_generation=True,
            field_labels=("status.replicas",),
            default_gc_policy="Orphan",
            initial_status={"replicas": 0},
        ),
        _builtin(
            "apps",
            "v1",
            "Deployment",
            "deployments",
            short_names=("deploy",),
            categories=_ALL,
            subresources=status_scale,
            scale_paths=_REPLICAS_SCALE,
            has_generation=True,
            initial_status={},
        ),
        _builtin(
            "apps",
            "v1",
            "ReplicaSet",
            "replicasets",
            short_names=("rs",),
            categories=_ALL,
            subresources=status_scale,
            scale_paths=_REPLICAS_SCALE,
            has_generation=True,
            initial_status={"replicas": 0},
        ),
        _builtin(
            "apps",
            "v1",
            "StatefulSet",
            "statefulsets",
            short_names=("sts",),
            categories=_ALL,
            subresources=status_scale,
            scale_paths=_REPLICAS_SCALE,
            has_generation=True,
            initial_status={"replicas": 0, "availableReplicas": 0},
        ),
        _builtin(
            "apps",
            "v1",
            "DaemonSet",
            "daemonsets",
            short_names=("ds",),
            categories=_ALL,
            subresources=status,
            has_generation=True,
            initial_status={
                "currentNumberScheduled": 0,
                "numberMisscheduled": 0,
                "desiredNumberScheduled": 0,
                "numberReady": 0,
            },
        ),
        _builtin(
            "apps",
            "v1",
            "ControllerRevision",
            "controllerrevisions",
        ),
        _builtin(
            "batch",
            "v1",
            "Job",
            "jobs",
            categories=_ALL,
            subresources=status,
            has_generation=True,
            field_labels=("status.successful",),
            default_gc_policy="Orphan",
            initial_status={},
        ),
        _builtin(
            "batch",
            "v1",
            "CronJob",
            "cronjobs",
            short_names=("cj",),
            categories=_ALL,
            subresources=status,
            has_generation=True,
            initial_status={},
        ),
        _builtin(
            "coordination.k8s.io",
            "v1",
            "Lease",
            "leases",
            allow_create_on_update=True,
        ),
        _builtin(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            namespaced=False,
            short_names=("crd", "crds"),
            categories=("api-extensions",),
            subresources=status,
            has_generation=True,
            allow_unconditional_update=False,
        ),
        _builtin(
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            namespaced=False,
            categories=("api-extensions",),
            has_generation=True,
        ),
        _builtin(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            namespaced=False,
            categories=("api-extensions",),
            has_generation=True,
        ),
        _builtin(
            "rbac.authorization.k8s.io",
            "v1",
            "Role",
            "roles",
            name_rule="path",
            allow_create_on_update=True,
        ),
        _builtin(
            "rbac.authorization.k8s.io",
            "v1",
            "RoleBinding",
            "rolebindings",
            name_rule="path",
            allow_create_on_update=True,
        ),
        _builtin(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
            namespaced=False,
            name_rule="path",
            allow_create_on_update=True,
        ),
        _builtin(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
            namespaced=False,
            name_rule="path",
            allow_create_on_update=True,
        ),
        _builtin(
            "events.k8s.io",
            "v1",
            "Event",
            "events",
            short_names=("ev",),
            field_labels=_EVENTS_V1_FIELDS,
            allow_create_on_update=True,
            storage_group="",
            storage_plural="events",
            to_storage=_events.events_v1_to_core,
            from_storage=_events.core_to_events_v1,
        ),
        _builtin(
            "networking.k8s.io",
            "v1",
            "Ingress",
            "ingresses",
            short_names=("ing",),
            subresources=status,
            has_generation=True,
            initial_status={},
        ),
        _builtin(
            "networking.k8s.io",
            "v1",
            "NetworkPolicy",
            "networkpolicies",
            short_names=("netpol",),
            has_generation=True,
        ),
        _builtin(
            "networking.k8s.io",
            "v1",
            "IngressClass",
            "ingressclasses",
            namespaced=False,
        ),
        _builtin(
            "policy",
            "v1",
            "PodDisruptionBudget",
            "poddisruptionbudgets",
            short_names=("pdb",),
            subresources=status,
            has_generation=True,
            initial_status={
                "disruptionsAllowed": 0,
                "currentHealthy": 0,
                "desiredHealthy": 0,
                "expectedPods": 0,
            },
        ),
        _builtin(
            "autoscaling",
            "v2",
            "HorizontalPodAutoscaler",
            "horizontalpodautoscalers",
            short_names=("hpa",),
            categories=_ALL,
            subresources=status,
            initial_status={},
        ),
        _builtin(
            "storage.k8s.io",
            "v1",
            "StorageClass",
            "storageclasses",
            namespaced=False,
            short_names=("sc",),
        ),
        _builtin(
            "scheduling.k8s.io",
            "v1",
            "PriorityClass",
            "priorityclasses",
            namespaced=False,
            short_names=("pc",),
        ),
        _builtin(
            "discovery.k8s.io",
            "v1",
            "EndpointSlice",
            "endpointslices",
        ),
    ]


NAME_COLUMN = PrinterColumn("Name", "string", ".metadata.name", _NAME_DESC, 0, "name")
AGE_COLUMN = PrinterColumn("Age", "date", ".metadata.creationTimestamp", _AGE_DESC)
CREATED_AT_COLUMN = PrinterColumn("Created At", "date", ".metadata.creationTimestamp", _AGE_DESC)
