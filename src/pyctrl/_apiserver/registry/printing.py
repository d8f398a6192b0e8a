"""What every kind's table printer is made of (kube-apiserver's ``pkg/printers``).

A built-in kind's strategy names its `Printer`: the columns ``kubectl get`` shows and the
function that fills one row. The cells speak kubectl's language: ages as
``duration.HumanDuration`` (`human_duration`), selectors as their string form,
``<none>`` for nothing. `pyctrl._apiserver.endpoints.table` renders the ``Table``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pyctrl._apimachinery.meta import ro_meta

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "AGE",
    "CONTAINERS",
    "INTEGER",
    "NAME",
    "STRING",
    "Cells",
    "Printer",
    "admission_policy",
    "age",
    "containers",
    "get",
    "human_duration",
    "map_selector",
    "name_count_age",
    "name_created_at",
    "parse_time",
    "pod_template_spec",
    "policy_binding",
    "selector_text",
    "workload_cells",
]

Cells = list[Any]
Column = tuple[str, str, int]
"""(name, type, priority) of one column."""

STRING, INTEGER = "string", "integer"
NAME: Column = ("Name", STRING, 0)
AGE: Column = ("Age", STRING, 0)
CONTAINERS: tuple[Column, ...] = (("Containers", STRING, 1), ("Images", STRING, 1))


@dataclass(frozen=True)
class Printer:
    """A kind's table: its columns, and the cells of one object at a moment."""

    columns: tuple[Column, ...]
    cells: Callable[[dict[str, Any], datetime], Cells]


def human_duration(seconds: float) -> str:  # noqa: PLR0911 - duration.HumanDuration, one return per magnitude
    """Kubernetes' ``duration.HumanDuration``: ``5s``, ``3m20s``, ``4h``, ``2d3h``, ``1y``."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rem = s % 60
        return f"{minutes}m" if rem == 0 else f"{minutes}m{rem}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rem = minutes % 60
        return f"{hours}h" if rem == 0 else f"{hours}h{rem}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rem = hours % 24
        return f"{hours // 24}d" if rem == 0 else f"{hours // 24}d{rem}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        rem = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y" if rem == 0 else f"{years}y{rem}d"
    return f"{hours // 24 // 365}y"


def parse_time(value: str | None) -> datetime | None:
    """Parse an RFC 3339 timestamp as the API uses them."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def age(ts: str | None, now: datetime) -> str:
    """The age of timestamp ``ts`` at ``now`` (``<unknown>`` without one)."""
    when = parse_time(ts)
    if when is None:
        return "<unknown>"
    return human_duration((now - when).total_seconds())


def get(obj: Any, *path: str, default: Any = None) -> Any:
    """The value at ``path`` in nested objects, or ``default``."""
    cur = obj
    for part in path:
        if not isinstance(cur, dict):
            return default
        cur = cur.get(part)
        if cur is None:
            return default
    return cur


def selector_text(sel: dict[str, Any] | None) -> str:
    """A label selector object as text (``<none>`` when empty, ``<error>`` when invalid)."""
    from pyctrl._apiserver.apimachinery.fields import SelectorError, selector_from_object

    if not sel:
        return "<none>"
    try:
        parsed = selector_from_object(sel)
    except SelectorError:
        return "<error>"
    text = str(parsed) if parsed is not None else ""
    return text or "<none>"


def map_selector(sel: dict[str, str] | None) -> str:
    """A map selector as ``k=v,...`` (``<none>`` when empty)."""
    if not sel:
        return "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(sel.items()))


def containers(template_spec: dict[str, Any] | None) -> tuple[str, str]:
    """(container names, images) of a pod spec, comma separated."""
    found = (template_spec or {}).get("containers") or []
    names = ",".join(str(c.get("name", "")) for c in found)
    images = ",".join(str(c.get("image", "")) for c in found)
    return names, images


def pod_template_spec(obj: dict[str, Any]) -> dict[str, Any]:
    """A workload's ``spec.template.spec``."""
    return get(obj, "spec", "template", "spec", default={}) or {}


def workload_cells(obj: dict[str, Any], now: datetime) -> Cells:
    """A workload's last cells: its age, its pod template's containers and images, its selector."""
    names, images = containers(pod_template_spec(obj))
    selector = get(obj, "spec", "selector")
    return [age(ro_meta(obj).get("creationTimestamp"), now), names, images, selector_text(selector)]


def name_count_age(column: str, field: str) -> Printer:
    """Name, the length of the list ``field`` under ``column``, and age."""

    def cells(obj: dict[str, Any], now: datetime) -> Cells:
        return [
            ro_meta(obj).get("name", ""),
            len(obj.get(field) or []),
            age(ro_meta(obj).get("creationTimestamp"), now),
        ]

    return Printer((NAME, (column, INTEGER, 0), AGE), cells)


def _name_and_creation(obj: dict[str, Any], now: datetime) -> Cells:
    del now
    return [ro_meta(obj).get("name", ""), ro_meta(obj).get("creationTimestamp")]


name_created_at = Printer((NAME, ("Created At", STRING, 0)), _name_and_creation)
"""Name and the creation timestamp as written (RBAC roles)."""


# --- admission policies (printValidatingAdmissionPolicy... of kube-apiserver's printers) ----


def _param_kind(spec: dict[str, Any]) -> str:
    kind = spec.get("paramKind")
    if not isinstance(kind, dict):
        return "<unset>"
    return f"{kind.get('apiVersion', '')}/{kind.get('kind', '')}"


def _go_label_selector(sel: dict[str, Any]) -> str:
    """``metav1.LabelSelector.String()``, the generated Go form kubectl shows for a paramRef."""
    labels = sel.get("matchLabels") or {}
    pairs = "".join(f"{k}: {labels[k]}," for k in sorted(labels))
    requirements = "".join(
        f"LabelSelectorRequirement{{Key:{r.get('key', '')},Operator:{r.get('operator', '')},"
        f"Values:[{' '.join(r.get('values') or [])}],}},"
        for r in sel.get("matchExpressions") or []
        if isinstance(r, dict)
    )
    return (
        f"&LabelSelector{{MatchLabels:map[string]string{{{pairs}}},"
        f"MatchExpressions:[]LabelSelectorRequirement{{{requirements}}},}}"
    )


def _param_ref(spec: dict[str, Any]) -> str:
    ref = spec.get("paramRef")
    if not isinstance(ref, dict):
        return "<unset>"
    if ref.get("name"):
        return f"{ref.get('namespace') or '*'}/{ref['name']}"
    if isinstance(ref.get("selector"), dict):
        return _go_label_selector(ref["selector"])
    return "<unset>"


def admission_policy(column: str, items: str) -> Printer:
    """``print{Validating,Mutating}AdmissionPolicy``: name, how many items, paramKind, age."""

    def cells(obj: dict[str, Any], now: datetime) -> Cells:
        spec = obj.get("spec") or {}
        return [
            ro_meta(obj).get("name", ""),
            len(spec.get(items) or []),
            _param_kind(spec),
            age(ro_meta(obj).get("creationTimestamp"), now),
        ]

    return Printer((NAME, (column, INTEGER, 0), ("ParamKind", STRING, 0), AGE), cells)


def _policy_binding(obj: dict[str, Any], now: datetime) -> Cells:
    spec = obj.get("spec") or {}
    return [
        ro_meta(obj).get("name", ""),
        spec.get("policyName", ""),
        _param_ref(spec),
        age(ro_meta(obj).get("creationTimestamp"), now),
    ]


policy_binding = Printer(
    (NAME, ("PolicyName", STRING, 0), ("ParamRef", STRING, 0), AGE), _policy_binding
)
"""``print{Validating,Mutating}AdmissionPolicyBinding``: name, policy, paramRef, age."""
