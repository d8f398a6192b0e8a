"""Label selectors: parse them, print them, match label sets against them.

The selector language is apimachinery's (``k8s.io/apimachinery/pkg/labels``):
``app=web``, ``app==web``, ``tier!=db``, ``env in (prod, staging)``,
``env notin (dev)``, ``canary`` (key exists), ``!canary`` (key absent), ``replicas>1``
and ``replicas<3``, joined by commas, all of which must hold. `parse` reads that string
form with apimachinery's parser, so a malformed selector fails with the message
kube-apiserver would give; `from_label_selector` reads the structured
``metav1.LabelSelector`` (``matchLabels`` and ``matchExpressions``) used in Deployments
and webhook configurations. The embedded API server (`pyctrl.envtest`) selects with the
same code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pyctrl._apiextensions.names import label_value_problem, qualified_name_problem

__all__ = ["Requirement", "Selector", "SelectorError", "everything", "from_label_selector", "parse"]

Operator = Literal["=", "==", "!=", "in", "notin", "exists", "!", "gt", "lt"]


class SelectorError(ValueError):
    """A selector could not be parsed; the message is apimachinery's."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """One clause of a selector: a key, an operator and the values it compares with."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:  # noqa: PLR0911 - one answer per operator
        """True if the label set satisfies this clause."""
        op = self.operator
        if op in ("=", "==", "in"):
            return self.key in labels and labels[self.key] in self.values
        # "!=" and "notin" hold for label sets that lack the key, as in apimachinery.
        if op in ("!=", "notin"):
            return self.key not in labels or labels[self.key] not in self.values
        if op == "exists":
            return self.key in labels
        if op == "!":
            return self.key not in labels
        if self.key not in labels:
            return False
        try:
            have = int(labels[self.key])
        except ValueError:
            return False
        want = int(self.values[0])
        return have > want if op == "gt" else have < want

    def __str__(self) -> str:
        op = self.operator
        if op == "exists":
            return self.key
        if op == "!":
            return "!" + self.key
        if op in ("in", "notin"):
            return f"{self.key} {op} ({','.join(self.values)})"
        if op == "gt":
            return f"{self.key}>{self.values[0]}"
        if op == "lt":
            return f"{self.key}<{self.values[0]}"
        return f"{self.key}{op}{self.values[0]}"


@dataclass(frozen=True, slots=True)
class Selector:
    """A conjunction of requirements; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """True if every requirement holds for ``labels``."""
        if not self.requirements:
            return True
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


def parse(text: str | Mapping[str, str] | None) -> Selector:
    """Parse a selector string (or build one from a map of equalities).

    Raises:
        SelectorError: the string is not a valid selector, worded as kube-apiserver words it.
    """
    if text is None:
        return Selector()
    if isinstance(text, Mapping):
        reqs = []
        for key, value in sorted(text.items()):
            _validate_label_key(key)
            _validate_label_value(key, value, 0)
            reqs.append(Requirement(key, "=", (value,)))
        return Selector(tuple(reqs))
    if not text.strip():
        return Selector()
    return _Parser(text).parse()


_OPERATORS: dict[str, Operator] = {
    "In": "in",
    "NotIn": "notin",
    "Exists": "exists",
    "DoesNotExist": "!",
}


def from_label_selector(selector: Mapping[str, Any] | None, *, validate: bool = True) -> Selector:
    """Build a Selector from a ``metav1.LabelSelector`` dict (matchLabels, matchExpressions).

    ``None`` matches everything, as an absent selector does in most Kubernetes APIs.
    Requirements are sorted by key and their values deduplicated and sorted, as
    apimachinery's ``LabelSelectorAsSelector`` does, so the selector prints canonically.

    Args:
        selector: The ``metav1.LabelSelector`` as a dict.
        validate: Check keys, values and operator arguments (``False`` where the caller
            reports those problems itself, as the API server's validation does).

    Raises:
        SelectorError: an operator is unknown, or (with ``validate``) a key, a value or an
            operator's values are invalid.
    """
    if not selector:
        return Selector()
    reqs: list[Requirement] = []
    for key, value in (selector.get("matchLabels") or {}).items():
        if validate:
            _validate_label_key(str(key))
            _validate_label_value(str(key), str(value), 0)
        reqs.append(Requirement(str(key), "=", (str(value),)))
    for expr in selector.get("matchExpressions") or ():
        operator = str(expr.get("operator", ""))
        op = _OPERATORS.get(operator)
        if op is None:
            raise SelectorError(f'"{operator}" is not a valid label selector operator')
        key = str(expr.get("key", ""))
        values: Sequence[str] = expr.get("values") or ()
        if validate:
            _validate_label_key(key)
            if op in ("in", "notin") and not values:
                raise SelectorError(f"values: must be specified when operator is {operator}")
            if op in ("exists", "!") and values:
                raise SelectorError(f"values: may not be specified when operator is {operator}")
            for i, v in enumerate(values):
                _validate_label_value(key, str(v), i)
        reqs.append(Requirement(key, op, tuple(sorted({str(v) for v in values}))))
    reqs.sort(key=lambda r: r.key)
    return Selector(tuple(reqs))


def _validate_label_key(key: str) -> None:
    problem = qualified_name_problem(key)
    if problem:
        raise SelectorError(f'key: Invalid value: "{key}": {problem}')


def _validate_label_value(key: str, value: str, index: int) -> None:
    problem = label_value_problem(value)
    if problem:
        raise SelectorError(f'values[{index}][{key}]: Invalid value: "{value}": {problem}')


# --- the selector language's lexer and parser (apimachinery's labels/selector.go) -------

_SPECIAL = set("!=,()<>")
_T_ID, _T_EOS, _T_COMMA, _T_NOT, _T_EQ, _T_DEQ, _T_NEQ, _T_IN, _T_NOTIN = range(9)
_T_OPEN, _T_CLOSE, _T_GT, _T_LT = range(9, 13)
_SYMBOLS = {
    "!": _T_NOT,
    "!=": _T_NEQ,
    "(": _T_OPEN,
    ")": _T_CLOSE,
    ",": _T_COMMA,
    "=": _T_EQ,
    "==": _T_DEQ,
    ">": _T_GT,
    "<": _T_LT,
}


def _lex(text: str) -> list[tuple[int, str]]:
    tokens: list[tuple[int, str]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if ch in _SPECIAL:
            two = text[i : i + 2]
            if two in ("!=", "=="):
                tokens.append((_SYMBOLS[two], two))
                i += 2
            else:
                tokens.append((_SYMBOLS[ch], ch))
                i += 1
            continue
        j = i
        while j < n and not text[j].isspace() and text[j] not in _SPECIAL:
            j += 1
        word = text[i:j]
        if word == "in":
            tokens.append((_T_IN, word))
        elif word == "notin":
            tokens.append((_T_NOTIN, word))
        else:
            tokens.append((_T_ID, word))
        i = j
    tokens.append((_T_EOS, ""))
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _lex(text)
        self.pos = 0

    def _peek(self, values_mode: bool = False) -> tuple[int, str]:
        tok, lit = self.tokens[self.pos]
        if values_mode and tok in (_T_IN, _T_NOTIN):
            return _T_ID, lit
        return tok, lit

    def _next(self, values_mode: bool = False) -> tuple[int, str]:
        tok = self._peek(values_mode)
        self.pos += 1
        return tok

    def parse(self) -> Selector:
        reqs: list[Requirement] = []
        while True:
            tok, lit = self._peek(values_mode=True)
            if tok in (_T_ID, _T_NOT):
                try:
                    reqs.append(self._requirement())
                except SelectorError as exc:
                    raise SelectorError(f"unable to parse requirement: {exc}") from None
                tok, lit = self._next(values_mode=True)
                if tok == _T_EOS:
                    break
                if tok == _T_COMMA:
                    tok2, lit2 = self._peek(values_mode=True)
                    if tok2 not in (_T_ID, _T_NOT):
                        raise SelectorError(f"found '{lit2}', expected: identifier after ','")
                    continue
                raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            if tok == _T_EOS:
                break
            raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")
        reqs.sort(key=lambda r: r.key)
        return Selector(tuple(reqs))

    def _requirement(self) -> Requirement:  # noqa: PLR0912 - apimachinery's parser
        op: Operator | None = None
        tok, lit = self._next(values_mode=True)
        if tok == _T_NOT:
            op = "!"
            tok, lit = self._next(values_mode=True)
        if tok != _T_ID:
            raise SelectorError(f"found '{lit}', expected: identifier")
        key = lit
        _validate_label_key(key)
        nxt, _ = self._peek(values_mode=True)
        if op == "!" or nxt in (_T_EOS, _T_COMMA):
            return Requirement(key, op or "exists")
        tok, lit = self._next()
        ops: dict[int, Operator] = {
            _T_IN: "in",
            _T_NOTIN: "notin",
            _T_EQ: "=",
            _T_DEQ: "==",
            _T_NEQ: "!=",
            _T_GT: "gt",
            _T_LT: "lt",
        }
        if tok not in ops:
            raise SelectorError(f"found '{lit}', expected: in, notin, =, ==, !=, gt, lt")
        op = ops[tok]
        if op in ("in", "notin"):
            values = self._value_set()
            if not values:
                raise SelectorError(
                    "values: Invalid value: []string{}: for 'in', 'notin' operators, "
                    "values set can't be empty"
                )
        else:
            tok, lit = self._next(values_mode=True)
            if tok == _T_ID:
                values = [lit]
            elif tok in (_T_EOS, _T_COMMA):
                values = [""]
                self.pos -= 1
            else:
                raise SelectorError(f"found '{lit}', expected: identifier")
        for i, v in enumerate(values):
            _validate_label_value(key, v, i)
        if op in ("gt", "lt"):
            try:
                int(values[0])
            except ValueError:
                raise SelectorError(
                    f"values[0]: Invalid value: \"{values[0]}\": for 'Gt', 'Lt' operators, "
                    "the value must be an integer"
                ) from None
        return Requirement(key, op, tuple(sorted(set(values))))

    def _value_set(self) -> list[str]:
        tok, lit = self._next()
        if tok != _T_OPEN:
            raise SelectorError(f"found '{lit}', expected: '('")
        values: list[str] = []
        tok, lit = self._peek(values_mode=True)
        if tok == _T_CLOSE:
            self._next()
            return values
        while True:
            tok, lit = self._next(values_mode=True)
            if tok == _T_ID:
                values.append(lit)
                tok, lit = self._next(values_mode=True)
            elif tok in (_T_COMMA, _T_CLOSE):
                values.append("")
            else:
                raise SelectorError(f"found '{lit}', expected: ',', or identifier")
            if tok == _T_CLOSE:
                return values
            if tok != _T_COMMA:
                raise SelectorError(f"found '{lit}', expected: ',' or ')'")
            nxt, _ = self._peek(values_mode=True)
            if nxt == _T_CLOSE:
                self._next()
                values.append("")
                return values
