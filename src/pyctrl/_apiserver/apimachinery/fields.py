"""Field selectors, parsed and matched as kube-apiserver does; label selectors from `pyctrl.labels`.

A label selector (``?labelSelector=``) is a comma-separated conjunction of requirements:
``key=value``, ``key==value``, ``key!=value``, ``key in (a,b)``, ``key notin (a,b)``, ``key``
(exists), ``!key`` (does not exist), ``key>1`` and ``key<1``. The parser follows
k8s.io/apimachinery/pkg/labels/selector.go, so malformed selectors fail with the same messages.

A field selector (``?fieldSelector=``) is a conjunction of ``field=value``, ``field==value`` and
``field!=value`` over the fields a resource type exposes (``metadata.name``,
``metadata.namespace``, and per-type ones such as ``status.phase`` for pods).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyctrl._apiextensions.names import label_value_problem, qualified_name_problem
from pyctrl.labels import Requirement, SelectorError, from_label_selector
from pyctrl.labels import Selector as LabelSelector
from pyctrl.labels import parse as parse_label_selector

__all__ = [
    "FieldRequirement",
    "FieldSelector",
    "LabelSelector",
    "Requirement",
    "SelectorError",
    "field_value",
    "label_value_problem",
    "parse_field_selector",
    "parse_label_selector",
    "qualified_name_problem",
    "selector_from_object",
]


def selector_from_object(sel: dict[str, Any] | None) -> LabelSelector | None:
    """Convert a ``metav1.LabelSelector`` object; None for a null selector (selects nothing).

    The API server validates selectors where it validates the object; here they are only
    converted.
    """
    if sel is None:
        return None
    return from_label_selector(sel, validate=False)


# --- field selectors (k8s.io/apimachinery/pkg/fields/selector.go) -------------------------------


@dataclass(frozen=True)
class FieldRequirement:
    """One field requirement: ``field == value`` or ``field != value``."""

    field: str
    value: str
    negate: bool = False


@dataclass(frozen=True)
class FieldSelector:
    """A parsed field selector; empty selects everything."""

    requirements: tuple[FieldRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        """Whether this selector selects everything."""
        return not self.requirements

    def matches(self, fields: dict[str, str]) -> bool:
        """Whether an object with the given field values is selected."""
        for req in self.requirements:
            have = fields.get(req.field)
            if req.negate:
                if have == req.value:
                    return False
            elif have != req.value:
                return False
        return True

    def single_value(self, name: str) -> str | None:
        """The exact value required for ``name`` (e.g. ``metadata.name=x``), if any."""
        for req in self.requirements:
            if req.field == name and not req.negate:
                return req.value
        return None


def _split_terms(text: str) -> list[str]:
    terms: list[str] = []
    cur: list[str] = []
    escaped = False
    for ch in text:
        if escaped:
            cur.append("\\" + ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            terms.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if escaped:
        cur.append("\\")
    terms.append("".join(cur))
    return terms


def _unescape(value: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "\\":
            if i + 1 >= len(value):
                raise SelectorError(f"invalid field selector: '{value}': unterminated escape")
            nxt = value[i + 1]
            if nxt not in "\\,=!":
                raise SelectorError(
                    f"invalid field selector: '{value}': invalid escape sequence: \\{nxt}"
                )
            out.append(nxt)
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _find_operator(term: str) -> tuple[int, str]:
    i = 0
    while i < len(term):
        if term[i] == "\\":
            i += 2
            continue
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return i, op
        i += 1
    return -1, ""


def parse_field_selector(text: str) -> FieldSelector:
    """Parse a ``fieldSelector`` query value; raise :class:`SelectorError` when malformed."""
    if not text.strip():
        return FieldSelector()
    reqs: list[FieldRequirement] = []
    for term in _split_terms(text):
        if not term:
            continue
        idx, op = _find_operator(term)
        if idx < 0:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{term}'")
        field, value = term[:idx], term[idx + len(op) :]
        reqs.append(FieldRequirement(_unescape(field), _unescape(value), op == "!="))
    return FieldSelector(tuple(reqs))


def field_value(obj: dict[str, Any], path: str) -> str:  # noqa: PLR0911 - one return per field selector path kind
    """The string form of a dotted ``path`` in ``obj`` for field-selector matching."""
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
        if cur is None:
            return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    if isinstance(cur, list):
        if cur and isinstance(cur[0], dict) and "ip" in cur[0]:
            return ",".join(str(x.get("ip", "")) for x in cur)
        return ",".join(str(x) for x in cur)
    if isinstance(cur, dict):
        return ""
    return str(cur)
