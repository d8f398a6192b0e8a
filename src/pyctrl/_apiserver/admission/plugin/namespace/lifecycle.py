"""The NamespaceLifecycle admission plugin: no new object in a missing or terminating namespace.

As ``k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle``: a create of a namespaced
object is refused with 404 when its namespace does not exist and with 403
(``NamespaceTerminating``) while it is being deleted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyctrl._apimachinery.field import Cause
from pyctrl._apimachinery.meta import ro_meta
from pyctrl._apiserver.apimachinery.errors import forbidden, not_found
from pyctrl._apiserver.storage.keys import NAMESPACES

if TYPE_CHECKING:
    from pyctrl._apiserver.scheme.resources import ResourceType
    from pyctrl._apiserver.storage.store import Store

__all__ = ["check_namespace_lifecycle"]


def check_namespace_lifecycle(store: Store, rt: ResourceType, namespace: str, name: str) -> None:
    """404 for a missing namespace, 403 for a terminating one (namespaced types only)."""
    if not rt.namespaced:
        return
    ns_obj = store.get(NAMESPACES, "", namespace)
    if ns_obj is None:
        raise not_found("", "namespaces", namespace)
    if (
        ro_meta(ns_obj).get("deletionTimestamp")
        or (ns_obj.get("status") or {}).get("phase") == "Terminating"
    ):
        raise forbidden(
            rt.group,
            rt.plural,
            name,
            f"unable to create new content in namespace {namespace} because it is being terminated",
            causes=[
                Cause(
                    "NamespaceTerminating",
                    f"namespace {namespace} is being terminated",
                    "metadata.namespace",
                )
            ],
        )
