"""Server-side apply and managedFields tracking, as the registry's writes call them.

kube-apiserver's handlers wrap every write in the field manager
(endpoints/handlers/fieldmanager): an update records its manager's fields (`track`), an
apply patch merges the applied configuration into the live object with conflict
detection (`apply_patch`, the ``compute`` step of the update loop). The merge itself is
`fieldmanager.managedfields`; this module checks an apply patch against the endpoint
(`check_apply`) and turns the field manager's errors into API errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apimachinery.field import Cause
from pyctrl._apiserver.apimachinery.errors import StatusError, bad_request
from pyctrl._apiserver.fieldmanager import managedfields as _managedfields
from pyctrl._apiserver.fieldmanager import patch as _patch
from pyctrl._apiserver.registry.meta import deep_copy, meta_of, now_rfc3339, ro_meta

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyctrl._apiserver.registry.options import RequestContext
    from pyctrl._apiserver.registry.rest import Strategy
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["apply_conflict_error", "apply_patch", "check_apply", "track"]


def track(
    strategy: Strategy,
    rt: ResourceType,
    old: dict[str, Any] | None,
    new: dict[str, Any],
    manager: str,
    *,
    subresource: str = "",
) -> None:
    """Record in ``new``'s managedFields the fields ``manager`` set by an update."""
    _managedfields.track_update(
        old,
        new,
        manager=manager,
        operation="Update",
        subresource=subresource,
        api_version=rt.api_version,
        now=now_rfc3339(),
        schema=rt.schema,
        group=rt.group,
        kind=rt.kind,
        reset_fields=strategy.reset_fields(rt, subresource),
    )


def check_apply(
    strategy: Strategy, rt: ResourceType, namespace: str, name: str, applied: Any
) -> dict[str, Any]:
    """The apply patch, checked: an object of this name and namespace, of declared fields.

    The field manager converts the patch to the kind's typed value (for a custom
    resource, the type built from its CRD's schema, with ObjectMeta as metadata), which
    fails on an undeclared field whatever ``fieldValidation`` says (a 500, as
    kube-apiserver answers): an apply is never pruned.

    Raises:
        StatusError: 400 for another name or namespace, 500 for undeclared fields.
    """
    if not isinstance(applied, dict):
        raise bad_request("the apply patch must be an object")
    applied_name = ro_meta(applied).get("name")
    if applied_name and applied_name != name:
        raise bad_request(
            f"the name of the object ({applied_name}) does not match the name on the URL ({name})"
        )
    ns_in_body = ro_meta(applied).get("namespace")
    if rt.namespaced and ns_in_body and ns_in_body != namespace:
        raise bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    if applied.get("apiVersion") != rt.api_version or applied.get("kind") != rt.kind:
        return applied
    errors = strategy.apply_errors(rt, applied)
    if not errors:
        return applied
    meta = ro_meta(applied)
    where = f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
    detail = errors[0] if len(errors) == 1 else "\n  ".join(["errors:", *errors])
    raise StatusError(
        500,
        "",
        f"failed to create typed patch object ({where}; {rt.group}/{rt.version}, "
        f"Kind={rt.kind}): {detail}",
        details=False,
    )


def apply_patch(
    strategy: Strategy,
    rt: ResourceType,
    namespace: str,
    name: str,
    applied: dict[str, Any],
    *,
    opts: RequestContext,
    subresource: str,
) -> Callable[[dict[str, Any] | None], dict[str, Any]]:
    """The update loop's step of an apply: the live object (or None) to the applied one."""

    def compute(existing: dict[str, Any] | None) -> dict[str, Any]:
        body = deep_copy(applied)
        meta = meta_of(body)
        meta.setdefault("name", name)
        if rt.namespaced:
            meta.setdefault("namespace", namespace)
        try:
            return _managedfields.server_side_apply(
                existing,
                body,
                manager=opts.field_manager,
                force=opts.force,
                api_version=rt.api_version,
                group=rt.group,
                kind=rt.kind,
                now=now_rfc3339(),
                schema=rt.schema,
                subresource=subresource,
                reset_fields=strategy.reset_fields(rt, subresource),
            )
        except _managedfields.ApplyConflict as exc:
            raise apply_conflict_error(exc) from None
        except _patch.PatchError as exc:
            raise StatusError(exc.code, exc.reason, exc.message, details=False) from None

    return compute


def apply_conflict_error(exc: _managedfields.ApplyConflict) -> StatusError:
    """The 409 of an apply that conflicts with other managers' fields."""
    causes = [Cause(c["reason"], c["message"], c["field"]) for c in exc.causes]
    return StatusError(409, "Conflict", exc.message, causes=causes, details=True)
