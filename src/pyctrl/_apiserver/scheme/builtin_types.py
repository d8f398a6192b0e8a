"""The built-in resource types, one small table per API group.

kube-apiserver configures the storage of its built-in types per API group
(``pkg/registry/<group>/rest/storage_<group>.go``); each function here lists one group's
resources with the discovery facts `ResourceType` carries (a kind's rules are its
strategy's, under `pyctrl._apiserver.registry`). `builtin_types` concatenates
them in the order discovery serves them.
"""

from __future__ import annotations

from typing import Any

from pyctrl._apiserver.scheme import events as _events
from pyctrl._apiserver.scheme.resourcetype import ALL_VERBS, ResourceType

__all__ = ["builtin_types"]


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


_STATUS = frozenset({"status"})
_STATUS_SCALE = frozenset({"status", "scale"})
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


def _core_v1_config_and_pods() -> list[ResourceType]:
    """The core group (v1), part one: namespaces, configuration, services, pods and events."""
    return [
        _core(
            "Namespace",
            "namespaces",
            namespaced=False,
            short_names=("ns",),
            subresources=frozenset({"status", "finalize"}),
            # The namespace storage offers no DeleteCollection (pkg/registry/core/namespace).
            verbs=tuple(v for v in ALL_VERBS if v != "deletecollection"),
            field_labels=("status.phase",),
        ),
        _core("ConfigMap", "configmaps", short_names=("cm",)),
        _core("Secret", "secrets", field_labels=("type",)),
        _core(
            "Service",
            "services",
            short_names=("svc",),
            categories=_ALL,
            subresources=_STATUS,
        ),
        _core(
            "ServiceAccount",
            "serviceaccounts",
            short_names=("sa",),
            subresources=frozenset({"token"}),
        ),
        _core(
            "Pod",
            "pods",
            short_names=("po",),
            categories=_ALL,
            subresources=_STATUS | {"eviction"},
            field_labels=_POD_FIELDS,
        ),
        _core(
            "Event",
            "events",
            short_names=("ev",),
            field_labels=_EVENT_FIELDS,
            to_storage=_events.compact_core,
            from_storage=_events.core_view,
        ),
        _core("Endpoints", "endpoints", short_names=("ep",)),
    ]


def _core_v1_storage_and_nodes() -> list[ResourceType]:
    """The core group (v1), part two: volumes, nodes, quotas, templates, controllers."""
    return [
        _core(
            "PersistentVolumeClaim",
            "persistentvolumeclaims",
            short_names=("pvc",),
            subresources=_STATUS,
        ),
        _core(
            "PersistentVolume",
            "persistentvolumes",
            namespaced=False,
            short_names=("pv",),
            subresources=_STATUS,
        ),
        _core(
            "Node",
            "nodes",
            namespaced=False,
            short_names=("no",),
            subresources=_STATUS,
            field_labels=("spec.unschedulable",),
        ),
        _core("LimitRange", "limitranges", short_names=("limits",)),
        _core(
            "ResourceQuota",
            "resourcequotas",
            short_names=("quota",),
            subresources=_STATUS,
        ),
        _core("PodTemplate", "podtemplates"),
        _core(
            "ReplicationController",
            "replicationcontrollers",
            short_names=("rc",),
            categories=_ALL,
            subresources=_STATUS_SCALE,
            scale_paths=_REPLICAS_SCALE,
            field_labels=("status.replicas",),
        ),
    ]


def _apps() -> list[ResourceType]:
    """The apps group."""
    return [
        _builtin(
            "apps",
            "v1",
            "Deployment",
            "deployments",
            short_names=("deploy",),
            categories=_ALL,
            subresources=_STATUS_SCALE,
            scale_paths=_REPLICAS_SCALE,
        ),
        _builtin(
            "apps",
            "v1",
            "ReplicaSet",
            "replicasets",
            short_names=("rs",),
            categories=_ALL,
            subresources=_STATUS_SCALE,
            scale_paths=_REPLICAS_SCALE,
        ),
        _builtin(
            "apps",
            "v1",
            "StatefulSet",
            "statefulsets",
            short_names=("sts",),
            categories=_ALL,
            subresources=_STATUS_SCALE,
            scale_paths=_REPLICAS_SCALE,
        ),
        _builtin(
            "apps",
            "v1",
            "DaemonSet",
            "daemonsets",
            short_names=("ds",),
            categories=_ALL,
            subresources=_STATUS,
        ),
        _builtin(
            "apps",
            "v1",
            "ControllerRevision",
            "controllerrevisions",
        ),
    ]


def _batch() -> list[ResourceType]:
    """The batch group."""
    return [
        _builtin(
            "batch",
            "v1",
            "Job",
            "jobs",
            categories=_ALL,
            subresources=_STATUS,
            field_labels=("status.successful",),
        ),
        _builtin(
            "batch",
            "v1",
            "CronJob",
            "cronjobs",
            short_names=("cj",),
            categories=_ALL,
            subresources=_STATUS,
        ),
    ]


def _coordination() -> list[ResourceType]:
    """The coordination.k8s.io group."""
    return [
        _builtin(
            "coordination.k8s.io",
            "v1",
            "Lease",
            "leases",
        ),
    ]


def _apiextensions() -> list[ResourceType]:
    """The apiextensions.k8s.io group."""
    return [
        _builtin(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            namespaced=False,
            short_names=("crd", "crds"),
            categories=("api-extensions",),
            subresources=_STATUS,
        ),
    ]


def _admissionregistration() -> list[ResourceType]:
    """The admissionregistration.k8s.io group."""
    return [
        _builtin(
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            namespaced=False,
            categories=("api-extensions",),
        ),
        _builtin(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            namespaced=False,
            categories=("api-extensions",),
        ),
        *_admission_policies(),
    ]


def _admission_policies() -> list[ResourceType]:
    """The admission policies and their bindings (v1 in Kubernetes 1.36, MAP's first GA)."""
    common: dict[str, Any] = {
        "namespaced": False,
        "categories": ("api-extensions",),
    }
    return [
        _builtin(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicy",
            "validatingadmissionpolicies",
            subresources=_STATUS,
            **common,
        ),
        _builtin(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
            **common,
        ),
        _builtin(
            "admissionregistration.k8s.io",
            "v1",
            "MutatingAdmissionPolicy",
            "mutatingadmissionpolicies",
            **common,
        ),
        _builtin(
            "admissionregistration.k8s.io",
            "v1",
            "MutatingAdmissionPolicyBinding",
            "mutatingadmissionpolicybindings",
            **common,
        ),
    ]


def _rbac() -> list[ResourceType]:
    """The rbac.authorization.k8s.io group."""
    return [
        _builtin(
            "rbac.authorization.k8s.io",
            "v1",
            "Role",
            "roles",
        ),
        _builtin(
            "rbac.authorization.k8s.io",
            "v1",
            "RoleBinding",
            "rolebindings",
        ),
        _builtin(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
            namespaced=False,
        ),
        _builtin(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
            namespaced=False,
        ),
    ]


def _events_group() -> list[ResourceType]:
    """The events.k8s.io group, stored as core Events."""
    return [
        _builtin(
            "events.k8s.io",
            "v1",
            "Event",
            "events",
            short_names=("ev",),
            field_labels=_EVENTS_V1_FIELDS,
            storage_group="",
            storage_plural="events",
            to_storage=_events.events_v1_to_core,
            from_storage=_events.core_to_events_v1,
        ),
    ]


def _networking() -> list[ResourceType]:
    """The networking.k8s.io group."""
    return [
        _builtin(
            "networking.k8s.io",
            "v1",
            "Ingress",
            "ingresses",
            short_names=("ing",),
            subresources=_STATUS,
        ),
        _builtin(
            "networking.k8s.io",
            "v1",
            "NetworkPolicy",
            "networkpolicies",
            short_names=("netpol",),
        ),
        _builtin(
            "networking.k8s.io",
            "v1",
            "IngressClass",
            "ingressclasses",
            namespaced=False,
        ),
    ]


def _policy() -> list[ResourceType]:
    """The policy group."""
    return [
        _builtin(
            "policy",
            "v1",
            "PodDisruptionBudget",
            "poddisruptionbudgets",
            short_names=("pdb",),
            subresources=_STATUS,
        ),
    ]


def _autoscaling() -> list[ResourceType]:
    """The autoscaling group."""
    return [
        _builtin(
            "autoscaling",
            "v2",
            "HorizontalPodAutoscaler",
            "horizontalpodautoscalers",
            short_names=("hpa",),
            categories=_ALL,
            subresources=_STATUS,
        ),
    ]


def _storage() -> list[ResourceType]:
    """The storage.k8s.io group."""
    return [
        _builtin(
            "storage.k8s.io",
            "v1",
            "StorageClass",
            "storageclasses",
            namespaced=False,
            short_names=("sc",),
        ),
    ]


def _scheduling() -> list[ResourceType]:
    """The scheduling.k8s.io group."""
    return [
        _builtin(
            "scheduling.k8s.io",
            "v1",
            "PriorityClass",
            "priorityclasses",
            namespaced=False,
            short_names=("pc",),
        ),
    ]


def _discovery() -> list[ResourceType]:
    """The discovery.k8s.io group."""
    return [
        _builtin(
            "discovery.k8s.io",
            "v1",
            "EndpointSlice",
            "endpointslices",
        ),
    ]


def builtin_types() -> list[ResourceType]:
    """The built-in resource types, as a kube-apiserver of Kubernetes 1.32 serves them."""
    return [
        *_core_v1_config_and_pods(),
        *_core_v1_storage_and_nodes(),
        *_apps(),
        *_batch(),
        *_coordination(),
        *_apiextensions(),
        *_admissionregistration(),
        *_rbac(),
        *_events_group(),
        *_networking(),
        *_policy(),
        *_autoscaling(),
        *_storage(),
        *_scheduling(),
        *_discovery(),
    ]
