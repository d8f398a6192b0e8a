"""Label selectors: parse them, print them, match label sets against them.

The selector language is apimachinery's (``k8s.io/apimachinery/pkg/labels``):
``app=web``, ``app==web``, ``tier!=db``, ``env in (prod, staging)``,
``env notin (dev)``, ``canary`` (key exists) and ``!canary`` (key absent), joined by
commas, all of which must hold. `parse` reads that string form; `from_label_selector`
reads the structured ``metav1.LabelSelector`` (``matchLabels`` and
``matchExpressions``) used in Deployments and webhook configurations.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Requirement", "Selector", "SelectorError", "everything", "from_label_selector", "parse"]

Operator = Literal["=", "!=", "in", "notin", "exists", "!"]

_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


class SelectorError(ValueError):
    """A selector could not be parsed; the message names the offending part."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """One clause of a selector: a key, an operator and the values it compares with."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """True if the label set satisfies this clause."""
        op = self.operator
        if op == "exists":
            return self.key in labels
        if op == "!":
            return self.key not in labels
        if op in ("=", "in"):
            return self.key in labels and labels[self.key] in self.values
        # "!=" and "notin" hold for label sets that lack the key, as in apimachinery.
        return self.key not in labels or labels[self.key] not in self.values

    def __str__(self) -> str:
        if self.operator == "exists":
            return self.key
        if self.operator == "!":
            return f"!{self.key}"
        if self.operator in ("=", "!="):
            return f"{self.key}{self.operator}{self.values[0]}"
        return f"{self.key} {self.operator} ({','.join(sorted(self.values))})"


@dataclass(frozen=True, slots=True)
class Selector:
    """A conjunction of requirements; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """True if every requirement holds for ``labels``."""
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        """True for the selector that matches everything."""
        return not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def everything() -> Selector:
    """The selector that matches every label set."""
    return Selector()


def _check_key(key: str, text: str) -> str:
    if not _KEY.match(key) or len(key.rpartition("/")[2]) > 63:
        raise SelectorError(f"invalid label key {key!r} in selector {text!r}")
    return key


def _check_value(value: str, text: str) -> str:
    if len(value) > 63 or not _VALUE.match(value):
        raise SelectorError(f"invalid label value {value!r} in selector {text!r}")
    return value


_TOKEN = re.compile(r"\s*(!=|==|=|\(|\)|,|!|[^\s!=(),]+)")


def parse(text: str | Mapping[str, str] | None) -> Selector:
    """Parse a selector string (or build one from a map of equalities).

    Raises:
        SelectorError: the string is not a valid selector; the message quotes it.
    """
    if text is None:
        return Selector()
    if isinstance(text, Mapping):
        return Selector(
            tuple(
                Requirement(_check_key(k, str(text)), "=", (_check_value(v, str(text)),))
                for k, v in sorted(text.items())
            )
        )
    tokens = _TOKEN.findall(text)
    if "".join(tokens) != re.sub(r"\s+", "", text):
        raise SelectorError(f"unable to parse selector {text!r}")
    reqs: list[Requirement] = []
    i = 0

    def take() -> str:
        nonlocal i
        if i >= len(tokens):
            raise SelectorError(f"unexpected end of selector {text!r}")
        i += 1
        return str(tokens[i - 1])

    while i < len(tokens):
        token = take()
        if token == "!":
            reqs.append(Requirement(_check_key(take(), text), "!"))
        elif token in ("=", "==", "!=", "(", ")", ","):
            raise SelectorError(f"unexpected {token!r} in selector {text!r}")
        else:
            key = _check_key(token, text)
            nxt = tokens[i] if i < len(tokens) else ","
            if nxt == ",":
                reqs.append(Requirement(key, "exists"))
            elif nxt in ("=", "==", "!="):
                take()
                value = tokens[i] if i < len(tokens) else ""
                if value in (",", ""):
                    value = ""
                else:
                    take()
                reqs.append(
                    Requirement(key, "!=" if nxt == "!=" else "=", (_check_value(value, text),))
                )
            elif nxt in ("in", "notin"):
                take()
                if take() != "(":
                    raise SelectorError(f"expected '(' after {nxt} in selector {text!r}")
                values: list[str] = []
                while True:
                    item = take()
                    if item == ")":
                        break
                    if item == ",":
                        continue
                    values.append(_check_value(item, text))
                if not values:
                    raise SelectorError(f"{nxt} needs at least one value in selector {text!r}")
                reqs.append(Requirement(key, "in" if nxt == "in" else "notin", tuple(values)))
            else:
                raise SelectorError(f"unexpected {nxt!r} after {key!r} in selector {text!r}")
        if i < len(tokens):
            if tokens[i] != ",":
                raise SelectorError(f"expected ',' before {tokens[i]!r} in selector {text!r}")
            i += 1
            if i == len(tokens):
                raise SelectorError(f"trailing ',' in selector {text!r}")
    return Selector(tuple(reqs))


def from_label_selector(selector: Mapping[str, Any] | None) -> Selector:
    """Build a Selector from a ``metav1.LabelSelector`` dict (matchLabels, matchExpressions).

    ``None`` matches everything, as an absent selector does in most Kubernetes APIs.

    Raises:
        SelectorError: an operator is unknown or its values are inconsistent.
    """
    if not selector:
        return Selector()
    reqs = [
        Requirement(_check_key(k, str(selector)), "=", (_check_value(str(v), str(selector)),))
        for k, v in sorted((selector.get("matchLabels") or {}).items())
    ]
    ops: dict[str, Operator] = {
        "In": "in",
        "NotIn": "notin",
        "Exists": "exists",
        "DoesNotExist": "!",
    }
    for expr in selector.get("matchExpressions") or ():
        op = ops.get(str(expr.get("operator")))
        key = _check_key(str(expr.get("key", "")), str(selector))
        values: Sequence[str] = expr.get("values") or ()
        if op is None:
            raise SelectorError(f"{expr.get('operator')!r} is not a valid label selector operator")
        if op in ("in", "notin") and not values:
            raise SelectorError(f"values: must be specified when operator is {expr['operator']}")
        if op in ("exists", "!") and values:
            raise SelectorError(f"values: may not be specified when operator is {expr['operator']}")
        reqs.append(Requirement(key, op, tuple(str(v) for v in values)))
    return Selector(tuple(reqs))
