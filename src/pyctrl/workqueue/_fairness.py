"""Ready-made fairness keys for a fair `pyctrl.workqueue.WorkQueue`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Hashable

__all__ = ["by_cluster", "by_cluster_and_namespace", "by_namespace"]


class _Namespaced(Protocol):
    @property
    def namespace(self) -> str: ...


def by_namespace(key: _Namespaced) -> Hashable:
    """A key's namespace: each namespace (tenant) gets its turn.

    For `pyctrl.reconcile.Request` keys; cluster-scoped objects ("" namespace) form one
    group.
    """
    return key.namespace


def by_cluster(key: object) -> Hashable:
    """A key's cluster (``key.cluster``, "" for the local one): each cluster gets its turn.

    For `pyctrl.reconcile.Request` keys of a multi-cluster controller; keys without a
    ``cluster`` attribute all belong to the local cluster's group.
    """
    return getattr(key, "cluster", "")


def by_cluster_and_namespace(key: _Namespaced) -> Hashable:
    """A key's (cluster, namespace) pair: each namespace of each cluster gets its turn."""
    return (getattr(key, "cluster", ""), key.namespace)
