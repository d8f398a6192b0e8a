"""Which strategy serves which resource type.

kube-apiserver wires each type's storage with its own strategy
(``pkg/registry/<group>/<kind>/storage``); here `KINDS` maps a type's storage key to its
strategy class (one module per kind under ``registry/<group>/``, holding everything the
kind rules: its facts, defaults, validation, table and reset fields), custom resources
share theirs, and every other type gets the default (`rest.Strategy`: its metadata's rules
only). `Strategies` holds one server's instances (some follow its store).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyctrl._apiserver.registry.admissionregistration.mutatingadmissionpolicy import (
    MutatingAdmissionPolicyStrategy,
)
from pyctrl._apiserver.registry.admissionregistration.mutatingadmissionpolicybinding import (
    MutatingAdmissionPolicyBindingStrategy,
)
from pyctrl._apiserver.registry.admissionregistration.mutatingwebhookconfiguration import (
    MutatingWebhookConfigurationStrategy,
)
from pyctrl._apiserver.registry.admissionregistration.validatingadmissionpolicy import (
    ValidatingAdmissionPolicyStrategy,
)
from pyctrl._apiserver.registry.admissionregistration.validatingadmissionpolicybinding import (
    ValidatingAdmissionPolicyBindingStrategy,
)
from pyctrl._apiserver.registry.admissionregistration.validatingwebhookconfiguration import (
    ValidatingWebhookConfigurationStrategy,
)
from pyctrl._apiserver.registry.apiextensions.customresource import CustomResourceStrategy
from pyctrl._apiserver.registry.apiextensions.customresourcedefinition import (
    CustomResourceDefinitionStrategy,
)
from pyctrl._apiserver.registry.apps.daemonset import DaemonSetStrategy
from pyctrl._apiserver.registry.apps.deployment import DeploymentStrategy
from pyctrl._apiserver.registry.apps.replicaset import ReplicaSetStrategy
from pyctrl._apiserver.registry.apps.statefulset import StatefulSetStrategy
from pyctrl._apiserver.registry.autoscaling.horizontalpodautoscaler import (
    HorizontalPodAutoscalerStrategy,
)
from pyctrl._apiserver.registry.batch.cronjob import CronJobStrategy
from pyctrl._apiserver.registry.batch.job import JobStrategy
from pyctrl._apiserver.registry.coordination.lease import LeaseStrategy
from pyctrl._apiserver.registry.core.configmap import ConfigMapStrategy
from pyctrl._apiserver.registry.core.endpoints import EndpointsStrategy
from pyctrl._apiserver.registry.core.event import EventStrategy
from pyctrl._apiserver.registry.core.limitrange import LimitRangeStrategy
from pyctrl._apiserver.registry.core.namespace import NamespaceStrategy
from pyctrl._apiserver.registry.core.persistentvolume import PersistentVolumeStrategy
from pyctrl._apiserver.registry.core.persistentvolumeclaim import PersistentVolumeClaimStrategy
from pyctrl._apiserver.registry.core.pod import PodStrategy
from pyctrl._apiserver.registry.core.podtemplate import PodTemplateStrategy
from pyctrl._apiserver.registry.core.replicationcontroller import ReplicationControllerStrategy
from pyctrl._apiserver.registry.core.resourcequota import ResourceQuotaStrategy
from pyctrl._apiserver.registry.core.secret import SecretStrategy
from pyctrl._apiserver.registry.core.service import ServiceStrategy
from pyctrl._apiserver.registry.core.serviceaccount import ServiceAccountStrategy
from pyctrl._apiserver.registry.meta import CRDS, NAMESPACES, SERVICES
from pyctrl._apiserver.registry.networking.ingress import IngressStrategy
from pyctrl._apiserver.registry.networking.networkpolicy import NetworkPolicyStrategy
from pyctrl._apiserver.registry.policy.poddisruptionbudget import PodDisruptionBudgetStrategy
from pyctrl._apiserver.registry.rbac.clusterrole import ClusterRoleStrategy
from pyctrl._apiserver.registry.rbac.clusterrolebinding import ClusterRoleBindingStrategy
from pyctrl._apiserver.registry.rbac.role import RoleStrategy
from pyctrl._apiserver.registry.rbac.rolebinding import RoleBindingStrategy
from pyctrl._apiserver.registry.rest import Strategy

if TYPE_CHECKING:
    from pyctrl._apiserver.scheme.resources import ResourceType
    from pyctrl._apiserver.storage.store import StorageKey, Store

__all__ = ["KINDS", "Strategies", "kind_strategy"]


KINDS: dict[StorageKey, type[Strategy]] = {
    NAMESPACES: NamespaceStrategy,
    SERVICES: ServiceStrategy,
    ("", "pods"): PodStrategy,
    ("", "secrets"): SecretStrategy,
    ("", "configmaps"): ConfigMapStrategy,
    ("", "events"): EventStrategy,
    ("", "endpoints"): EndpointsStrategy,
    ("", "serviceaccounts"): ServiceAccountStrategy,
    ("", "limitranges"): LimitRangeStrategy,
    ("", "resourcequotas"): ResourceQuotaStrategy,
    ("", "persistentvolumes"): PersistentVolumeStrategy,
    ("", "replicationcontrollers"): ReplicationControllerStrategy,
    ("", "persistentvolumeclaims"): PersistentVolumeClaimStrategy,
    ("", "podtemplates"): PodTemplateStrategy,
    ("apps", "deployments"): DeploymentStrategy,
    ("apps", "replicasets"): ReplicaSetStrategy,
    ("apps", "statefulsets"): StatefulSetStrategy,
    ("apps", "daemonsets"): DaemonSetStrategy,
    ("batch", "jobs"): JobStrategy,
    ("batch", "cronjobs"): CronJobStrategy,
    ("coordination.k8s.io", "leases"): LeaseStrategy,
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): (
        MutatingWebhookConfigurationStrategy
    ),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): (
        ValidatingWebhookConfigurationStrategy
    ),
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"): (
        ValidatingAdmissionPolicyStrategy
    ),
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): (
        ValidatingAdmissionPolicyBindingStrategy
    ),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicies"): (
        MutatingAdmissionPolicyStrategy
    ),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings"): (
        MutatingAdmissionPolicyBindingStrategy
    ),
    ("rbac.authorization.k8s.io", "roles"): RoleStrategy,
    ("rbac.authorization.k8s.io", "clusterroles"): ClusterRoleStrategy,
    ("rbac.authorization.k8s.io", "rolebindings"): RoleBindingStrategy,
    ("rbac.authorization.k8s.io", "clusterrolebindings"): ClusterRoleBindingStrategy,
    ("networking.k8s.io", "networkpolicies"): NetworkPolicyStrategy,
    ("networking.k8s.io", "ingresses"): IngressStrategy,
    ("policy", "poddisruptionbudgets"): PodDisruptionBudgetStrategy,
    ("autoscaling", "horizontalpodautoscalers"): HorizontalPodAutoscalerStrategy,
    CRDS: CustomResourceDefinitionStrategy,
}
"""The strategy class of each built-in kind with rules of its own, by storage key."""


def kind_strategy(rt: ResourceType) -> type[Strategy]:
    """The strategy class of ``rt``'s kind (for what a kind states, e.g. its table)."""
    if rt.crd_name:
        return CustomResourceStrategy
    return KINDS.get(rt.storage_key, Strategy)


class Strategies:
    """The strategies of one server's types (some follow its store, e.g. Service IPs)."""

    def __init__(self, store: Store) -> None:
        self.default = Strategy()
        """The strategy of a type without rules of its own."""
        self._by_key: dict[StorageKey, Strategy] = {
            key: cls.for_store(store) for key, cls in KINDS.items()
        }
        self.custom_resources = CustomResourceStrategy.for_store(store)
        """The strategy of every custom resource."""
        crds = self._by_key[CRDS]
        namespaces = self._by_key[NAMESPACES]
        assert isinstance(crds, CustomResourceDefinitionStrategy)
        assert isinstance(namespaces, NamespaceStrategy)
        self.crds = crds
        """The strategy of CustomResourceDefinitions (it tells the CRD controller)."""
        self.namespaces = namespaces
        """The strategy of Namespaces (with ``/finalize``)."""

    def for_type(self, rt: ResourceType) -> Strategy:
        """The strategy of ``rt``: its type's own, the custom resources', or the default."""
        if rt.crd_name:
            return self.custom_resources
        return self._by_key.get(rt.storage_key, self.default)
