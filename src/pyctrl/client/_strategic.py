"""Two-way diffs: JSON merge patches and strategic merge patches between two objects.

A strategic merge patch merges lists by key where the built-in Go types say so
(``patchStrategy:"merge"``); kubernetes-asyncio's models do not carry that metadata,
so the lists of common built-in kinds are described here. A list not described is
diffed as a whole (the changed list is sent complete), which is exact for lists the
server replaces, and never loses an element the server merges.
"""

from __future__ import annotations

from typing import Any

from pyctrl._apiextensions.jsonvalue import json_equal

__all__ = ["merge_diff", "strategic_diff"]

_PRIMITIVE = "<primitive>"

# Where a PodSpec sits in each workload kind.
_POD_SPEC_AT: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    "PodTemplate": ("template", "spec"),
    "Deployment": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "ReplicationController": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
# k8s.io/api/core/v1 PodSpec fields with patchStrategy "merge" and their patchMergeKey.
_POD_SPEC_LISTS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
    "schedulingGates": "name",
}
# Container (and EphemeralContainer) fields with patchStrategy "merge".
_CONTAINER_LISTS_KEYS = {
    "ports": "containerPort",
    "env": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
}
# Kinds whose status.conditions is patchStrategy "merge" on "type".
_CONDITIONS_BY_TYPE = frozenset(
    {
        "Pod",
        "Node",
        "Namespace",
        "PersistentVolumeClaim",
        "Service",
        "Deployment",
        "ReplicaSet",
        "StatefulSet",
        "DaemonSet",
        "Job",
        "ReplicationController",
        "PodDisruptionBudget",
        "HorizontalPodAutoscaler",
        "CertificateSigningRequest",
    }
)
# Other (kind, path) -> merge key.
_OTHER_LISTS: dict[tuple[str, tuple[str, ...]], str] = {
    ("Service", ("spec", "ports")): "port",
    ("Node", ("status", "addresses")): "type",
    ("Node", ("spec", "podCIDRs")): _PRIMITIVE,
    ("ServiceAccount", ("secrets",)): "name",
    ("Pod", ("status", "podIPs")): "ip",
    ("Pod", ("status", "hostIPs")): "ip",
    ("MutatingWebhookConfiguration", ("webhooks",)): "name",
    ("ValidatingWebhookConfiguration", ("webhooks",)): "name",
}


def _list_strategy(kind: str, path: tuple[str, ...]) -> str | None:  # noqa: PLR0911 - one answer per patch strategy
    """The merge key of the list at ``path`` ("[]" steps into list items), or None if atomic."""
    if len(path) >= 2 and path[-2] == "metadata":
        if path[-1] == "finalizers":
            return _PRIMITIVE
        if path[-1] == "ownerReferences":
            return "uid"
    if path == ("status", "conditions") and kind in _CONDITIONS_BY_TYPE:
        return "type"
    other = _OTHER_LISTS.get((kind, path))
    if other is not None:
        return other
    pod_spec = _POD_SPEC_AT.get(kind)
    if pod_spec is None or path[: len(pod_spec)] != pod_spec:
        return None
    rest = path[len(pod_spec) :]
    if len(rest) == 1:
        return _POD_SPEC_LISTS.get(rest[0])
    if len(rest) == 3 and rest[0] in _CONTAINER_LISTS and rest[1] == "[]":
        return _CONTAINER_LISTS_KEYS.get(rest[2])
    return None


def merge_diff(original: dict[str, Any], modified: dict[str, Any]) -> dict[str, Any]:
    """The RFC 7386 JSON merge patch that turns ``original`` into ``modified``.

    Removed keys become ``null``; changed lists are sent whole.
    """
    patch: dict[str, Any] = {}
    for key, new in modified.items():
        if key not in original:
            patch[key] = new
            continue
        old = original[key]
        if isinstance(old, dict) and isinstance(new, dict):
            sub = merge_diff(old, new)
            if sub:
                patch[key] = sub
        elif not json_equal(old, new):
            patch[key] = new
    for key in original:
        if key not in modified:
            patch[key] = None
    return patch


def strategic_diff(
    original: dict[str, Any], modified: dict[str, Any], *, kind: str
) -> dict[str, Any]:
    """The two-way strategic merge patch from ``original`` to ``modified`` for a built-in kind."""
    return _diff_maps(original, modified, (), kind)


def _diff_maps(
    original: dict[str, Any], modified: dict[str, Any], path: tuple[str, ...], kind: str
) -> dict[str, Any]:
    patch: dict[str, Any] = {}
    for key, new in modified.items():
        if key not in original:
            patch[key] = new
            continue
        old = original[key]
        if isinstance(old, dict) and isinstance(new, dict):
            sub = _diff_maps(old, new, (*path, key), kind)
            if sub:
                patch[key] = sub
        elif isinstance(old, list) and isinstance(new, list):
            _diff_lists(patch, key, old, new, path=(*path, key), kind=kind)
        elif not json_equal(old, new):
            patch[key] = new
    for key in original:
        if key not in modified:
            patch[key] = None
    return patch


def _keyed(items: list[Any], key: str) -> dict[Any, dict[str, Any]] | None:
    """Items by merge key, or None if some item has no key or keys repeat."""
    out: dict[Any, dict[str, Any]] = {}
    for item in items:
        if not isinstance(item, dict) or key not in item:
            return None
        value = item[key]
        if isinstance(value, dict | list) or value in out:
            return None
        out[value] = item
    return out


def _diff_lists(  # noqa: PLR0912 - apimachinery's list kinds
    patch: dict[str, Any],
    field: str,
    old: list[Any],
    new: list[Any],
    *,
    path: tuple[str, ...],
    kind: str,
) -> None:
    if json_equal(old, new):
        return
    merge_key = _list_strategy(kind, path)
    if merge_key is None:
        patch[field] = new
        return
    if merge_key == _PRIMITIVE:
        if any(isinstance(v, dict | list) for v in (*old, *new)):
            patch[field] = new
            return
        added = [v for v in new if v not in old]
        deleted = [v for v in old if v not in new]
        if added:
            patch[field] = added
        if deleted:
            patch[f"$deleteFromPrimitiveList/{field}"] = deleted
        patch[f"$setElementOrder/{field}"] = new
        return
    old_by_key = _keyed(old, merge_key)
    new_by_key = _keyed(new, merge_key)
    if old_by_key is None or new_by_key is None:
        patch[field] = new
        return
    items: list[dict[str, Any]] = []
    for item_key, item in new_by_key.items():
        before = old_by_key.get(item_key)
        if before is None:
            items.append(item)
            continue
        sub = _diff_maps(before, item, (*path, "[]"), kind)
        if sub:
            items.append({merge_key: item_key, **sub})
    for item_key in old_by_key:
        if item_key not in new_by_key:
            items.append({merge_key: item_key, "$patch": "delete"})
    if items:
        patch[field] = items
    patch[f"$setElementOrder/{field}"] = [{merge_key: k} for k in new_by_key]
