"""The ``scale`` subresource: an ``autoscaling/v1`` ``Scale`` view of an object.

kube-apiserver's ``ScaleREST`` of Deployments, ReplicaSets and StatefulSets
(pkg/registry/apps/<kind>/storage) and of custom resources with a scale subresource
(apiextensions-apiserver's pkg/registry/customresource/etcd.go): `scale_of` reads the
replicas and selector at the type's paths (``.spec.replicas``, ``.status.replicas`` and
``spec.selector`` for built-ins; the CRD's ``specReplicasPath``, ``statusReplicasPath`` and
``labelSelectorPath`` for custom resources); `scale_update` is the update loop's step that
writes a new Scale's replicas back into the object.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apimachinery.field import field_invalid
from pyctrl._apiserver.apimachinery.errors import StatusError, bad_request, invalid, not_found
from pyctrl._apiserver.apimachinery.fields import SelectorError, selector_from_object
from pyctrl._apiserver.apimachinery.jsonpath import JSONPathError, find
from pyctrl._apiserver.fieldmanager import patch as _patch
from pyctrl._apiserver.registry.decoding import decode_builtin
from pyctrl._apiserver.registry.meta import deep_copy, meta_of, ro_meta

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyctrl._apiserver.registry.options import RequestContext
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["scale_of", "scale_update"]

_DEFAULT_PATHS: tuple[str, str, str | None] = (".spec.replicas", ".status.replicas", None)


def scale_of(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """The ``autoscaling/v1`` ``Scale`` of an object with a scale subresource."""
    spec_path, status_path, selector_path = rt.scale_paths or _DEFAULT_PATHS
    meta = ro_meta(obj)
    spec_replicas = _first_int(obj, spec_path)
    status_replicas = _first_int(obj, status_path)
    if selector_path is not None:
        found = _safe_find(obj, selector_path)
        selector = found[0] if found and isinstance(found[0], str) else ""
    else:
        selector = _spec_selector(obj)
    scale_meta = {
        k: meta[k]
        for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
        if k in meta
    }
    status: dict[str, Any] = {"replicas": status_replicas}
    if selector:
        status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": {"replicas": spec_replicas},
        "status": status,
    }


def _spec_selector(obj: dict[str, Any]) -> str:
    """``spec.selector`` as a selector string (a LabelSelector or a plain label map)."""
    raw = (obj.get("spec") or {}).get("selector")
    if isinstance(raw, dict) and ("matchLabels" in raw or "matchExpressions" in raw):
        try:
            parsed = selector_from_object(raw)
        except SelectorError as exc:
            raise bad_request(str(exc)) from None
        return str(parsed) if parsed is not None else ""
    if isinstance(raw, dict):
        return ",".join(f"{k}={v}" for k, v in sorted(raw.items()))
    return ""


def scale_update(
    rt: ResourceType,
    name: str,
    *,
    scale_body: dict[str, Any] | None,
    patch_type: str,
    patch: Any,
    opts: RequestContext,
) -> Callable[[dict[str, Any] | None], dict[str, Any]]:
    """The update loop's step of a PUT (``scale_body``) or PATCH of the scale subresource.

    The body, or the patched Scale, is decoded as ``autoscaling/v1`` ``Scale``: unknown
    fields are warned about or refused by ``fieldValidation`` (in ``opts.warnings``).
    """
    spec_path = (rt.scale_paths or _DEFAULT_PATHS)[0]

    def compute(existing: dict[str, Any] | None) -> dict[str, Any]:
        if existing is None:
            raise not_found(rt.group, rt.plural, name)
        if scale_body is not None:
            scale = deep_copy(scale_body)
        else:
            scale = _patched_scale(scale_of(rt, existing), patch_type, patch)
        replicas = _checked_replicas(scale, name, opts, validate=not rt.crd_name)
        new = existing
        _set_path(new, spec_path, replicas)
        rv = ro_meta(scale).get("resourceVersion")
        meta_of(new)["resourceVersion"] = rv or ""
        return new

    return compute


def _patched_scale(old_scale: dict[str, Any], patch_type: str, patch: Any) -> Any:
    try:
        if patch_type == "json":
            return _patch.json_patch(old_scale, patch)
        if patch_type == "merge":
            return _patch.json_merge_patch(old_scale, patch)
        if patch_type == "strategic":
            return _patch.strategic_merge_patch(
                old_scale, patch, group="autoscaling", version="v1", kind="Scale"
            )
    except _patch.PatchError as exc:
        raise StatusError(exc.code, exc.reason, exc.message, details=False) from None
    raise bad_request("apply patches are not supported for scale")


def _checked_replicas(
    scale: dict[str, Any], name: str, opts: RequestContext, *, validate: bool
) -> Any:
    """Decode a Scale; its replicas, once its kind, name and (``validate``) replicas are right.

    A built-in kind's scale storage validates the Scale (``ValidateScale``: an error of
    group autoscaling, kind Scale); a custom resource's does not: the replicas are written
    into the object, which its own validation then checks (the custom resource's group and
    kind, the scale paths' and the schema's causes).
    """
    decode_builtin("autoscaling", "v1", "Scale", scale, opts)
    if scale.get("kind", "Scale") != "Scale":
        raise bad_request(
            f"the kind in the data ({scale.get('kind')}) does not match the expected kind (Scale)"
        )
    replicas = (scale.get("spec") or {}).get("replicas", 0)
    scale_name = ro_meta(scale).get("name") or ""
    if scale_name != name:
        raise bad_request(
            f"the name of the object ({scale_name}) does not match the name on the URL ({name})"
        )
    if not validate:
        return replicas
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise invalid(
            "autoscaling",
            "Scale",
            name,
            [field_invalid("spec.replicas", replicas, "must be greater than or equal to 0")],
        )
    return replicas


def _safe_find(obj: dict[str, Any], path: str) -> list[Any]:
    try:
        return find(obj, path)
    except JSONPathError:
        return []


def _first_int(obj: dict[str, Any], path: str) -> int:
    found = _safe_find(obj, path) if path else []
    if found and isinstance(found[0], int) and not isinstance(found[0], bool):
        return int(found[0])
    return 0


def _set_path(obj: dict[str, Any], path: str, value: Any) -> None:
    parts = [p for p in path.split(".") if p]
    cur = obj
    for part in parts[:-1]:
        nxt = cur.get(part)
        if not isinstance(nxt, dict):
            nxt = {}
            cur[part] = nxt
        cur = nxt
    cur[parts[-1]] = value
