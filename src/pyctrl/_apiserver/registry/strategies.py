"""Which strategy serves which resource type.

kube-apiserver wires each type's storage with its own strategy
(``pkg/registry/<group>/<kind>/storage``); here one table maps a type's storage key to its
strategy, custom resources share theirs, and every other type gets the default
(`rest.Strategy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyctrl._apiserver.registry.apiextensions.customresource import CustomResourceStrategy
from pyctrl._apiserver.registry.apiextensions.customresourcedefinition import (
    CustomResourceDefinitionStrategy,
)
from pyctrl._apiserver.registry.batch.job import JobStrategy
from pyctrl._apiserver.registry.core.configmap import ConfigMapStrategy
from pyctrl._apiserver.registry.core.namespace import NamespaceStrategy
from pyctrl._apiserver.registry.core.pod import PodStrategy
from pyctrl._apiserver.registry.core.secret import SecretStrategy
from pyctrl._apiserver.registry.core.service import ServiceStrategy
from pyctrl._apiserver.registry.meta import CRDS, NAMESPACES, SERVICES
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
        self._by_key: dict[StorageKey, Strategy] = {
            NAMESPACES: NamespaceStrategy(),
            SERVICES: ServiceStrategy(store),
            ("", "pods"): PodStrategy(),
            ("", "secrets"): SecretStrategy(),
            ("", "configmaps"): ConfigMapStrategy(),
            ("batch", "jobs"): JobStrategy(),
            CRDS: self.crds,
        }

    def for_type(self, rt: ResourceType) -> Strategy:
        """The strategy of ``rt``: its type's own, the custom resources', or the default."""
        if rt.crd_name:
            return self.custom_resources
        return self._by_key.get(rt.storage_key, self.default)
