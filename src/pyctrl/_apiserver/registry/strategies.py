"""Which strategy serves which resource type.

kube-apiserver wires each type's storage with its own strategy
(``pkg/registry/<group>/<kind>/storage``); here one table maps a type's storage key to its
strategy (one module per kind under ``registry/<group>/``, holding the kind's defaults and
validation), custom resources share theirs, and every other type gets the default
(`rest.Strategy`: its metadata's rules only).
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
from pyctrl._apiserver.registry.batch.cronjob import CronJobStrategy
from pyctrl._apiserver.registry.batch.job import JobStrategy
from pyctrl._apiserver.registry.coordination.lease import LeaseStrategy
from pyctrl._apiserver.registry.core.configmap import ConfigMapStrategy
from pyctrl._apiserver.registry.core.event import EventStrategy
from pyctrl._apiserver.registry.core.namespace import NamespaceStrategy
from pyctrl._apiserver.registry.core.persistentvolumeclaim import PersistentVolumeClaimStrategy
from pyctrl._apiserver.registry.core.pod import PodStrategy
from pyctrl._apiserver.registry.core.podtemplate import PodTemplateStrategy
from pyctrl._apiserver.registry.core.replicationcontroller import ReplicationControllerStrategy
from pyctrl._apiserver.registry.core.secret import SecretStrategy
from pyctrl._apiserver.registry.core.service import ServiceStrategy
from pyctrl._apiserver.registry.meta import CRDS, NAMESPACES, SERVICES
from pyctrl._apiserver.registry.networking.networkpolicy import NetworkPolicyStrategy
from pyctrl._apiserver.registry.rbac.clusterrolebinding import ClusterRoleBindingStrategy
from pyctrl._apiserver.registry.rbac.rolebinding import RoleBindingStrategy
from pyctrl._apiserver.registry.rest import Strategy

if TYPE_CHECKING:
    from pyctrl._apiserver.scheme.resources import ResourceType
    from pyctrl._apiserver.storage.store import StorageKey, Store

__all__ = ["Strategies"]


class Strategies:
    """The strategies of one server's types (some follow its store, e.g. Service IPs)."""

    def __init__(self, store: Store) -> None:
        self.default = Strategy()
        """The strategy of a type without rules of its own."""
        self.custom_resources = CustomResourceStrategy(store)
        """The strategy of every custom resource."""
        self.crds = CustomResourceDefinitionStrategy()
        """The strategy of CustomResourceDefinitions (it tells the CRD controller)."""
        self.namespaces = NamespaceStrategy()
        """The strategy of Namespaces (with ``/finalize``)."""
        self._by_key: dict[StorageKey, Strategy] = {
            NAMESPACES: self.namespaces,
            SERVICES: ServiceStrategy(store),
            ("", "pods"): PodStrategy(),
            ("", "secrets"): SecretStrategy(),
            ("", "configmaps"): ConfigMapStrategy(),
            ("", "events"): EventStrategy(),
            ("", "replicationcontrollers"): ReplicationControllerStrategy(),
            ("", "persistentvolumeclaims"): PersistentVolumeClaimStrategy(),
            ("", "podtemplates"): PodTemplateStrategy(),
            ("apps", "deployments"): DeploymentStrategy(),
            ("apps", "replicasets"): ReplicaSetStrategy(),
            ("apps", "statefulsets"): StatefulSetStrategy(),
            ("apps", "daemonsets"): DaemonSetStrategy(),
            ("batch", "jobs"): JobStrategy(),
            ("batch", "cronjobs"): CronJobStrategy(),
            ("coordination.k8s.io", "leases"): LeaseStrategy(),
            ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): (
                MutatingWebhookConfigurationStrategy()
            ),
            ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): (
                ValidatingWebhookConfigurationStrategy()
            ),
            ("admissionregistration.k8s.io", "validatingadmissionpolicies"): (
                ValidatingAdmissionPolicyStrategy(store)
            ),
            ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): (
                ValidatingAdmissionPolicyBindingStrategy()
            ),
            ("admissionregistration.k8s.io", "mutatingadmissionpolicies"): (
                MutatingAdmissionPolicyStrategy()
            ),
            ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings"): (
                MutatingAdmissionPolicyBindingStrategy()
            ),
            ("rbac.authorization.k8s.io", "rolebindings"): RoleBindingStrategy(),
            ("rbac.authorization.k8s.io", "clusterrolebindings"): ClusterRoleBindingStrategy(),
            ("networking.k8s.io", "networkpolicies"): NetworkPolicyStrategy(),
            CRDS: self.crds,
        }

    def for_type(self, rt: ResourceType) -> Strategy:
        """The strategy of ``rt``: its type's own, the custom resources', or the default."""
        if rt.crd_name:
            return self.custom_resources
        return self._by_key.get(rt.storage_key, self.default)
