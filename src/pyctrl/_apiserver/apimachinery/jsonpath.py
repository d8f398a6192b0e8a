"""The subset of Kubernetes JSONPath that printer columns and scale paths use.

CRD ``additionalPrinterColumns`` name a value with a path such as ``.spec.replicas``,
``.status.conditions[?(@.type=="Ready")].status``, ``.spec.containers[*].image`` or
``.metadata.labels['app.kubernetes.io/name']``. :func:`find` evaluates one and returns every
match, in document order (k8s.io/client-go/util/jsonpath semantics for these forms).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson


class JSONPathError(ValueError):
    """The path is not in the supported subset."""


@dataclass(frozen=True)
class _Field:
    name: str  # "*" for wildcard


@dataclass(frozen=True)
class _Recursive:
    name: str


@dataclass(frozen=True)
class _Index:
    start: int | None
    end: int | None
    single: bool


@dataclass(frozen=True)
class _Filter:
    path: tuple[Any, ...]
    op: str
    value: Any


_Step = _Field | _Recursive | _Index | _Filter
_IDENT = re.compile(r"[A-Za-z0-9_\-/$]+")
_FILTER = re.compile(
    r"^@((?:\.[A-Za-z0-9_\-/]+|\['[^']*'\]|\[\"[^\"]*\"\])*)\s*(?:(==|!=|<=|>=|<|>)\s*(.+))?$"
)


def _literal(text: str) -> Any:
    text = text.strip()
    if (text.startswith('"') and text.endswith('"')) or (
        text.startswith("'") and text.endswith("'")
    ):
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def parse(path: str) -> tuple[_Step, ...]:
    """Parse ``path`` (with or without surrounding braces)."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if text.startswith("$"):
        text = text[1:]
    steps: list[_Step] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if text.startswith("..", i):
            m = _IDENT.match(text, i + 2)
            if m is None:
                raise JSONPathError(f"unsupported JSONPath {path!r}")
            steps.append(_Recursive(m.group()))
            i = m.end()
        elif ch == ".":
            if i + 1 < len(text) and text[i + 1] == "*":
                steps.append(_Field("*"))
                i += 2
                continue
            m = _IDENT.match(text, i + 1)
            if m is None:
                if i + 1 == len(text):
                    i += 1
                    continue
                raise JSONPathError(f"unsupported JSONPath {path!r}")
            steps.append(_Field(m.group()))
            i = m.end()
        elif ch == "[":
            end = _closing_bracket(text, i)
            inner = text[i + 1 : end].strip()
            steps.append(_bracket(inner, path))
            i = end + 1
        else:
            raise JSONPathError(f"unsupported JSONPath {path!r}")
    return tuple(steps)


def _closing_bracket(text: str, start: int) -> int:
    depth = 0
    quote = ""
    for j in range(start, len(text)):
        c = text[j]
        if quote:
            if c == quote:
                quote = ""
            continue
        if c in "'\"":
            quote = c
        elif c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return j
    raise JSONPathError(f"unclosed bracket in JSONPath {text!r}")


def _bracket(inner: str, path: str) -> _Step:
    if inner == "*":
        return _Field("*")
    if (inner.startswith("'") and inner.endswith("'")) or (
        inner.startswith('"') and inner.endswith('"')
    ):
        return _Field(inner[1:-1])
    if inner.startswith("?(") and inner.endswith(")"):
        m = _FILTER.match(inner[2:-1].strip())
        if m is None:
            raise JSONPathError(f"unsupported filter in JSONPath {path!r}")
        sub = parse(m.group(1)) if m.group(1) else ()
        op = m.group(2) or "exists"
        value = _literal(m.group(3)) if m.group(3) is not None else None
        return _Filter(sub, op, value)
    if ":" in inner:
        a, _, b = inner.partition(":")
        b = b.split(":")[0]
        return _Index(int(a) if a.strip() else None, int(b) if b.strip() else None, False)
    try:
        n = int(inner)
    except ValueError:
        raise JSONPathError(f"unsupported JSONPath {path!r}") from None
    return _Index(n, None, True)


def _apply(step: _Step, values: list[Any]) -> list[Any]:  # noqa: PLR0912 - client-go jsonpath's evaluation, one branch per step kind
    out: list[Any] = []
    for v in values:
        if isinstance(step, _Field):
            if step.name == "*":
                if isinstance(v, dict):
                    out.extend(v.values())
                elif isinstance(v, list):
                    out.extend(v)
            elif isinstance(v, dict) and step.name in v:
                out.append(v[step.name])
        elif isinstance(step, _Recursive):
            out.extend(_recursive(v, step.name))
        elif isinstance(step, _Index):
            if not isinstance(v, list):
                continue
            if step.single:
                idx = step.start or 0
                if -len(v) <= idx < len(v):
                    out.append(v[idx])
            else:
                out.extend(v[step.start : step.end])
        else:
            items = v if isinstance(v, list) else list(v.values()) if isinstance(v, dict) else []
            out.extend(item for item in items if _passes(step, item))
    return out


def _recursive(value: Any, name: str) -> list[Any]:
    out: list[Any] = []
    if isinstance(value, dict):
        if name in value:
            out.append(value[name])
        for child in value.values():
            out.extend(_recursive(child, name))
    elif isinstance(value, list):
        for child in value:
            out.extend(_recursive(child, name))
    return out


def _passes(f: _Filter, item: Any) -> bool:  # noqa: PLR0911 - client-go jsonpath's filter, one return per operator
    found = _evaluate(f.path, item)
    if f.op == "exists":
        return bool(found)
    if not found:
        return False
    have = found[0]
    want = f.value
    try:
        if f.op == "==":
            return bool(have == want)
        if f.op == "!=":
            return bool(have != want)
        if f.op == "<":
            return bool(have < want)
        if f.op == ">":
            return bool(have > want)
        if f.op == "<=":
            return bool(have <= want)
        return bool(have >= want)
    except TypeError:
        return False


def _evaluate(steps: tuple[_Step, ...], obj: Any) -> list[Any]:
    values = [obj]
    for step in steps:
        values = _apply(step, values)
        if not values:
            break
    return values


def find(obj: Any, path: str) -> list[Any]:
    """Every value ``path`` selects in ``obj``."""
    return _evaluate(parse(path), obj)


def to_text(value: Any) -> str:
    """Print a value as Kubernetes JSONPath output does (JSON for maps and lists)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "<nil>"
    if isinstance(value, dict | list):
        return orjson.dumps(value).decode()
    return str(value)
