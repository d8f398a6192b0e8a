"""The admission chain: every write's ``AdmissionRequest``, run through the hooks in order.

kube-apiserver's handlers run mutating admission before the Store's create or update
(endpoints/handlers/create.go, update.go), and pass validating admission to the Store
as ``rest.ValidateObjectFunc``, run after the strategy's validation
(``k8s.io/apiserver/pkg/admission/chain.go``). :class:`Admission` builds the
``AdmissionRequest`` of a write and runs the hooks (`admission.interfaces`; the webhook
plugin is `admission.plugin.webhook`). The NamespaceLifecycle plugin is
`admission.plugin.namespace.lifecycle`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from pyctrl._apimachinery.meta import meta_of
from pyctrl._apiserver.admission.interfaces import REQUEST_USER, AdmissionRequest, UserInfo
from pyctrl._ids import fast_uuid4

if TYPE_CHECKING:
    from pyctrl._apiserver.admission.interfaces import AdmissionHook
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["Admission", "AdmissionOptions", "AfterMutation"]


class AdmissionOptions(Protocol):
    """What admission reads of a write's options (the registry's ``RequestContext``)."""

    @property
    def dry_run(self) -> bool:
        """Whether the write is a dry run."""

    @property
    def raw(self) -> dict[str, Any]:
        """The request's options as a dict."""

    @property
    def warnings(self) -> list[str] | None:
        """Where admission adds warnings."""


class AfterMutation(Protocol):
    """The type's step after mutating admission (the registry's ``Strategy``)."""

    def after_mutating_admission(
        self, rt: ResourceType, operation: str, obj: dict[str, Any], mutated: bool
    ) -> None:
        """Decode again what the hooks returned."""


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
        opts: AdmissionOptions,
        strategy: AfterMutation | None = None,
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
