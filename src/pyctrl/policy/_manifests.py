"""A set of policies as manifests: the policies, their bindings, and the params' RBAC.

kube-apiserver reads params itself (with its own loopback credentials), so the API
server needs no grant, and the operator needs none either unless it creates policies or
params itself. What RBAC does govern is *who may install and tune them*:

- creating a policy with ``paramKind`` requires ``get`` on every object of that kind,
  and a binding with ``paramRef`` ``get`` on the objects it names (kube-apiserver's
  ``authz.go`` of both registries checks it on create, and on update when the reference
  changes): whoever applies the manifests needs it, as cluster-admin has it;
- whoever tunes the params needs to edit them: `params_role` is a ClusterRole for that,
  ``<operator>-policy-params-editor``, bound to nobody (bind it to the people or the
  GitOps account that own the limits). It names the param objects the bindings refer to
  when every binding refers to one by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl.policy._types import PolicyError
from pyctrl.scheme import default_scheme

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pyctrl.policy._policy import MutatingPolicy, ValidatingPolicy

__all__ = ["params_role", "policy_manifests"]

_VERBS = ["get", "list", "watch", "create", "update", "patch", "delete"]


def policy_manifests(
    policies: Sequence[ValidatingPolicy | MutatingPolicy],
) -> list[dict[str, Any]]:
    """Every policy and binding, each policy type-checked.

    Raises:
        PolicyError: A policy does not check, or two objects have the same kind and name.
    """
    objects: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for policy in policies:
        for obj in policy.manifests():
            key = (obj["kind"], obj["metadata"]["name"])
            if key in seen:
                raise PolicyError(f"two policies make the {key[0]} {key[1]!r}")
            seen.add(key)
            objects.append(obj)
    return objects


def params_role(
    policies: Sequence[ValidatingPolicy | MutatingPolicy], name: str
) -> dict[str, Any] | None:
    """The ClusterRole ``name`` that may edit the policies' params; None without params."""
    from pyctrl.webhook._config import resource_of

    by_resource: dict[tuple[str, str], set[str] | None] = {}
    scheme = default_scheme()
    for policy in policies:
        if policy.params is None:
            continue
        gvk = scheme.gvk_for(policy.params)
        key = (gvk.group, resource_of(policy.params, gvk))
        names = by_resource.setdefault(key, set())
        for binding in policy.bindings:
            ref = binding.param_ref
            if names is None or ref is None or ref.name is None:
                by_resource[key] = names = None
            else:
                names.add(ref.name)
    if not by_resource:
        return None
    rules = []
    for (group, resource), names in sorted(by_resource.items()):
        rule: dict[str, Any] = {"apiGroups": [group], "resources": [resource]}
        if names is not None:
            # create cannot be limited by name: the object does not exist yet.
            rules.append({**rule, "verbs": ["create"]})
            rule["resourceNames"] = sorted(names)
            rules.append({**rule, "verbs": [v for v in _VERBS if v != "create"]})
        else:
            rules.append({**rule, "verbs": list(_VERBS)})
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": rules,
    }
