"""Validation the apps workloads share: a subset of kube-apiserver's.

Deployments, ReplicaSets, StatefulSets and DaemonSets: replicas, a selector that matches the
template's labels and does not change, containers (pkg/apis/apps/validation). Metadata is
checked in full first. Jobs' and Leases' rules are in their kinds' modules.
"""

from __future__ import annotations

from typing import Any

from pyctrl._apimachinery.field import Cause, field_invalid, field_required
from pyctrl._apimachinery.gofmt import GoStruct
from pyctrl._apiserver.apimachinery.fields import SelectorError, selector_from_object
from pyctrl._apiserver.registry.validation import meta as _meta
from pyctrl._apiserver.registry.validation.core import containers


def _label_selector_json(selector: Any) -> dict[str, Any]:
    """A metav1.LabelSelector as json.Marshal writes it (empty parts left out)."""
    out = GoStruct()
    if not isinstance(selector, dict):
        return out
    if selector.get("matchLabels"):
        out["matchLabels"] = selector["matchLabels"]
    expressions = [
        GoStruct(
            {
                "key": e.get("key", ""),
                "operator": e.get("operator", ""),
                **({"values": e["values"]} if e.get("values") else {}),
            }
        )
        for e in selector.get("matchExpressions") or ()
        if isinstance(e, dict)
    ]
    if expressions:
        out["matchExpressions"] = expressions
    return out


def _selector(spec: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    selector = spec.get("selector")
    if not selector:
        return [field_required("spec.selector")]
    causes: list[Cause] = []
    try:
        parsed = selector_from_object(selector)
    except SelectorError as exc:
        causes.append(field_invalid("spec.selector", "", str(exc)))
        parsed = None
    if parsed is not None and parsed.empty:
        causes.append(
            field_invalid(
                "spec.selector",
                _label_selector_json(selector),
                "empty selector is invalid for deployment",
            )
        )
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if parsed is not None and not parsed.empty and not parsed.matches(template_labels):
        causes.append(
            field_invalid(
                "spec.template.metadata.labels",
                dict(template_labels),
                "`selector` does not match template `labels`",
            )
        )
    if old is not None and (old.get("spec") or {}).get("selector") != selector:
        causes.append(
            field_invalid("spec.selector", _label_selector_json(selector), "field is immutable")
        )
    return causes


def validate_workload(obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    """Deployments, ReplicaSets, StatefulSets, DaemonSets (create, or update with ``old``)."""
    if old is None:
        causes = _meta.object_meta(obj, "subdomain", namespaced=True, kube=True)
    else:
        causes = _meta.meta_update(obj, old, kube=True)
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [*causes, field_required("spec")]
    replicas = spec.get("replicas")
    if isinstance(replicas, int) and replicas < 0:
        causes.append(field_invalid("spec.replicas", replicas, _meta.NEGATIVE_MSG))
    causes.extend(_selector(spec, old))
    template = spec.get("template")
    if not isinstance(template, dict):
        causes.append(field_required("spec.template"))
    else:
        causes.extend(containers(template.get("spec") or {}, "spec.template.spec"))
    return causes
