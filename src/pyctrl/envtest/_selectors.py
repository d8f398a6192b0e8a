"""Label and field selectors, parsed and matched as kube-apiserver does.

A label selector (``?labelSelector=``) is a comma-separated conjunction of requirements:
``key=value``, ``key==value``, ``key!=value``, ``key in (a,b)``, ``key notin (a,b)``, ``key``
(exists), ``!key`` (does not exist), ``key>1`` and ``key<1``. The parser follows
k8s.io/apimachinery/pkg/labels/selector.go, so malformed selectors fail with the same messages.

A field selector (``?fieldSelector=``) is a conjunction of ``field=value``, ``field==value`` and
``field!=value`` over the fields a resource type exposes (``metadata.name``,
``metadata.namespace``, and per-type ones such as ``status.phase`` for pods).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN_RE = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"


class SelectorError(ValueError):
    """A selector string could not be parsed; the message is kube-apiserver's."""


@dataclass(frozen=True)
class Requirement:
    """One label requirement: ``key <op> values``."""

    key: str
    op: str  # "=", "==", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        """Whether ``labels`` satisfy this requirement."""
        op = self.op
        if op in ("=", "==", "in"):
            return self.key in labels and labels[self.key] in self.values
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
        if self.op == "exists":
            return self.key
        if self.op == "!":
            return "!" + self.key
        if self.op in ("in", "notin"):
            return f"{self.key} {self.op} ({','.join(self.values)})"
        if self.op == "gt":
            return f"{self.key}>{self.values[0]}"
        if self.op == "lt":
            return f"{self.key}<{self.values[0]}"
        return f"{self.key}{self.op}{self.values[0]}"


@dataclass(frozen=True)
class LabelSelector:
    """A parsed label selector; empty selects everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: dict[str, str] | None) -> bool:
        """Whether an object with ``labels`` is selected."""
        if not self.requirements:
            return True
        lbls = labels or {}
        return all(r.matches(lbls) for r in self.requirements)

    @property
    def empty(self) -> bool:
        """Whether this selector selects everything."""
        return not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


# --- label selector lexer/parser (k8s.io/apimachinery/pkg/labels/selector.go) ------------------

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

    def parse(self) -> LabelSelector:
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
        return LabelSelector(tuple(reqs))

    def _requirement(self) -> Requirement:
        op = ""
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
        ops = {
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


def _validate_label_key(key: str) -> None:
    problem = qualified_name_problem(key)
    if problem:
        raise SelectorError(f'key: Invalid value: "{key}": {problem}')


def _validate_label_value(key: str, value: str, index: int) -> None:
    problem = label_value_problem(value)
    if problem:
        raise SelectorError(f'values[{index}][{key}]: Invalid value: "{value}": {problem}')


def qualified_name_problem(name: str) -> str:
    """Why ``name`` is not a valid qualified name (label key, finalizer), or ''."""
    parts = name.split("/")
    if len(parts) == 1:
        short = parts[0]
    elif len(parts) == 2:
        prefix, short = parts
        if not prefix:
            return "prefix part must be non-empty"
        if len(prefix) > 253:
            return "prefix part must be no more than 253 characters"
        if not _DNS1123_SUBDOMAIN_RE.match(prefix):
            return (
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case "
                "alphanumeric characters, '-' or '.', and must start and end with an "
                "alphanumeric character (e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            )
    else:
        return (
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and "
            "must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  "
            f"or '123-abc', regex used for validation is '{_NAME_FMT}') with an optional DNS "
            "subdomain prefix and '/' (e.g. 'example.com/MyName')"
        )
    if not short:
        return "name part must be non-empty"
    if len(short) > 63:
        return "name part must be no more than 63 characters"
    if not _NAME_RE.match(short):
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
            f"'123-abc', regex used for validation is '{_NAME_FMT}')"
        )
    return ""


def label_value_problem(value: str) -> str:
    """Why ``value`` is not a valid label value, or ''."""
    if not value:
        return ""
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _NAME_RE.match(value):
        return (
            "a valid label must be an empty string or consist of alphanumeric characters, "
            "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
            "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        )
    return ""


def parse_label_selector(text: str) -> LabelSelector:
    """Parse a ``labelSelector`` query value; raise :class:`SelectorError` when malformed."""
    if not text.strip():
        return LabelSelector()
    return _Parser(text).parse()


def selector_from_object(sel: dict[str, Any] | None) -> LabelSelector | None:
    """Convert a ``metav1.LabelSelector`` object; None for a null selector (selects nothing)."""
    if sel is None:
        return None
    reqs: list[Requirement] = []
    for key, value in (sel.get("matchLabels") or {}).items():
        reqs.append(Requirement(key, "=", (str(value),)))
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for expr in sel.get("matchExpressions") or []:
        op = ops.get(expr.get("operator", ""))
        if op is None:
            raise SelectorError(f'"{expr.get("operator")}" is not a valid label selector operator')
        values = tuple(sorted(set(expr.get("values") or ())))
        reqs.append(Requirement(expr.get("key", ""), op, values))
    reqs.sort(key=lambda r: r.key)
    return LabelSelector(tuple(reqs))


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


def field_value(obj: dict[str, Any], path: str) -> str:
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
