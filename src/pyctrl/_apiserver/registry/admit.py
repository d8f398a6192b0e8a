"""Admission as the registry calls it, and the NamespaceLifecycle check.

kube-apiserver's handlers run mutating admission before the Store's create or update
(endpoints/handlers/create.go, update.go), and pass validating admission to the Store
as ``rest.ValidateObjectFunc``, run after the strategy's validation. :class:`Admission`
builds the ``AdmissionRequest`` of a write and runs the hooks (`admission.interfaces`,
the webhooks of `admission.webhooks`). `check_namespace_lifecycle` is the
NamespaceLifecycle admission plugin: no new object in a missing or terminating namespace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.admission.interfaces import REQUEST_USER, AdmissionRequest, UserInfo
from pyctrl._apiserver.apimachinery.errors import Cause, forbidden, not_found
from pyctrl._apiserver.registry.meta import NAMESPACES, meta_of, ro_meta
from pyctrl._ids import fast_uuid4

if TYPE_CHECKING:
    from pyctrl._apiserver.admission.interfaces import AdmissionHook
    from pyctrl._apiserver.registry.options import WriteOptions
    from pyctrl._apiserver.registry.rest import Strategy
    from pyctrl._apiserver.scheme.resources import ResourceType
    from pyctrl._apiserver.storage.store import Store

__all__ = ["Admission", "check_namespace_lifecycle"]


class Admission:
    """The admission hooks of a server, run on every write that goes through the API."""

    def __init__(self, hooks: list[AdmissionHook]) -> None:
        self.hooks = hooks
        """The hooks, in order (the server's list: hooks added later run too)."""

    def request(
        self,
        rt: ResourceType,
        operation: str,
        *,
        namespace: str,
        name: str,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        subresource: str,
        dry_run: bool,
        options: dict[str, Any],
        warnings: list[str] | None = None,
    ) -> AdmissionRequest:
        """The ``AdmissionRequest`` of one operation, by the request's user."""
        return AdmissionRequest(
            uid=fast_uuid4(),
            operation=operation,
            resource=rt,
            subresource=subresource,
            namespace=namespace if rt.namespaced else "",
            name=name,
            obj=obj,
            old=old,
            dry_run=dry_run,
            options=options,
            user=REQUEST_USER.get() or UserInfo(),
            warnings=warnings if warnings is not None else [],
        )

    async def mutate(
        self,
        rt: ResourceType,
        operation: str,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        *,
        namespace: str,
        subresource: str,
        opts: WriteOptions,
        strategy: Strategy | None = None,
    ) -> dict[str, Any]:
        """Run the mutating hooks; the object they leave.

        With hooks, ``strategy`` decodes their result again
        (`Strategy.after_mutating_admission`).
        """
        if not self.hooks:
            return obj
        name = meta_of(obj).get("name") or ""
        mutated_any = False
        for hook in self.hooks:
            request = self.request(
                rt,
                operation,
                namespace=namespace,
                name=name,
                obj=obj,
                old=old,
                subresource=subresource,
                dry_run=opts.dry_run,
                options=opts.raw,
                warnings=opts.warnings,
            )
            mutated = await hook.mutate(request)
            if mutated is not None:
                obj = mutated
                mutated_any = True
        if strategy is not None:
            strategy.after_mutating_admission(rt, operation, obj, mutated_any)
        return obj

    async def validate(
        self,
        rt: ResourceType,
        operation: str,
        *,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        namespace: str,
        name: str,
        subresource: str,
        dry_run: bool,
        options: dict[str, Any],
        warnings: list[str] | None = None,
    ) -> None:
        """Run the validating hooks; the first refusal raises."""
        for hook in self.hooks:
            request = self.request(
                rt,
                operation,
                namespace=namespace,
                name=name,
                obj=obj,
                old=old,
                subresource=subresource,
                dry_run=dry_run,
                options=options,
                warnings=warnings,
            )
            await hook.validate(request)


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
