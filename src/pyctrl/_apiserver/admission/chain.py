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
from pyctrl._apiserver.admission.interfaces import AdmissionRequest
from pyctrl._ids import fast_uuid4

if TYPE_CHECKING:
    from pyctrl._apiserver.admission.interfaces import AdmissionHook
    from pyctrl._apiserver.scheme.resources import ResourceType
    from pyctrl._apiserver.user import User

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
    def warnings(self) -> list[str]:
        """Where admission adds warnings."""

    @property
    def user(self) -> User:
        """Who sent the request."""


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

    @staticmethod
    def request(
        rt: ResourceType,
        operation: str,
        *,
        namespace: str,
        name: str,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        subresource: str,
        opts: AdmissionOptions,
    ) -> AdmissionRequest:
        """The ``AdmissionRequest`` one hook sees of an operation (each its own uid)."""
        return AdmissionRequest(
            uid=fast_uuid4(),
            operation=operation,
            resource=rt,
            subresource=subresource,
            namespace=namespace if rt.namespaced else "",
            name=name,
            obj=obj,
            old=old,
            dry_run=opts.dry_run,
            options=opts.raw,
            user=opts.user,
            warnings=opts.warnings,
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
        """Run the mutating hooks that handle ``rt``; the object they leave.

        With hooks, ``strategy`` decodes their result again
        (`Strategy.after_mutating_admission`).
        """
        hooks = [hook for hook in self.hooks if hook.handles(rt, mutating=True)]
        if not hooks:
            return obj
        name = meta_of(obj).get("name") or ""
        mutated_any = False
        for hook in hooks:
            request = self.request(
                rt,
                operation,
                namespace=namespace,
                name=name,
                obj=obj,
                old=old,
                subresource=subresource,
                opts=opts,
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
        opts: AdmissionOptions,
    ) -> None:
        """Run the validating hooks that handle ``rt``; the first refusal raises."""
        for hook in self.hooks:
            if not hook.handles(rt, mutating=False):
                continue
            request = self.request(
                rt,
                operation,
                namespace=namespace,
                name=name,
                obj=obj,
                old=old,
                subresource=subresource,
                opts=opts,
            )
            await hook.validate(request)
