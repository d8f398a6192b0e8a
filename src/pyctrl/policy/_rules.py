"""Typed helpers: the common rules, as CEL with a good message and the same rule in Python.

A field is named by its dotted path from the object's root (``spec.replicas``); a
snake_case segment is written camelCase as on the wire (``spec.max_replicas`` is
``spec.maxReplicas``). A rule about a field that may be absent holds when the field is
absent (``required`` says it must be there), as a webhook written over optional fields
does. Each helper gives a `Validation` whose ``check`` is the same rule in Python, so
`ValidatingPolicy.validator` can serve it from a webhook too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from pyctrl._apiextensions.cel.types import escape_name
from pyctrl._apiextensions.goregex import compile_go_regex
from pyctrl.policy._types import Evaluation, Mutation, Validation

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "Param",
    "at_least",
    "at_most",
    "immutable",
    "in_range",
    "label_required",
    "matches",
    "one_of",
    "param",
    "required",
    "set_default",
]

_MISSING: Final = object()
_CAMEL: Final = re.compile(r"_([a-z0-9])")


def _segments(path: str) -> list[str]:
    parts = path.split(".")
    if not path or any(not p for p in parts):
        raise ValueError(f"{path!r} is not a dotted field path such as 'spec.replicas'")
    return [_CAMEL.sub(lambda m: m.group(1).upper(), p) for p in parts]


def _wire(path: str) -> str:
    return ".".join(_segments(path))


def _ref(root: str, path: str) -> str:
    out = root
    for segment in _segments(path):
        escaped = escape_name(segment)
        if escaped is None:
            raise ValueError(f"field {segment!r} of {path!r} cannot be named in CEL")
        out += f".{escaped}"
    return out


def _has(root: str, path: str) -> str:
    """``has(root.a) && has(root.a.b)``: true when the whole path is present."""
    segments = _segments(path)
    checks = [f"has({_ref(root, '.'.join(segments[: i + 1]))})" for i in range(len(segments))]
    return " && ".join(checks)


def _get(obj: Mapping[str, Any] | None, path: str) -> Any:
    value: Any = obj
    for segment in _segments(path):
        if not isinstance(value, dict) or segment not in value:
            return _MISSING
        value = value[segment]
    return value


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return json.dumps(value)
    raise TypeError(f"{value!r}: a rule's value is a bool, a number or a string")


@dataclass(frozen=True)
class Param:
    """A field of the policy's param object, as a rule's bound (`param`)."""

    path: str
    as_int: bool = False

    def cel(self) -> str:
        """The CEL that reads it."""
        ref = _ref("params", self.path)
        return f"int({ref})" if self.as_int else ref

    def value(self, params: Mapping[str, Any] | None) -> Any:
        """Its value in ``params``, or a `KeyError` naming the field."""
        found = _get(params, self.path)
        if found is _MISSING:
            raise KeyError(f"params.{_wire(self.path)}")
        return int(found) if self.as_int else found


def param(path: str, *, as_int: bool = False) -> Param:
    """A field of the param object, e.g. ``param("spec.max_replicas")``.

    Args:
        path: Its dotted path in the param object.
        as_int: Parse it as an integer (a ConfigMap's ``data`` holds strings).
    """
    return Param(path, as_int)


def _bound(value: float | Param) -> tuple[str, str]:
    """CEL of a bound, and how a message shows it."""
    if isinstance(value, Param):
        return value.cel(), f"params.{_wire(value.path)}"
    return _literal(value), str(value)


def _bound_value(value: float | Param, ev: Evaluation) -> Any:
    return value.value(ev.params) if isinstance(value, Param) else value


def required(path: str, *, message: str = "") -> Validation:
    """The field must be set."""

    def check(ev: Evaluation) -> bool:
        return _get(ev.object, path) is not _MISSING

    return Validation(_has("object", path), message or f"{_wire(path)} is required", check=check)


def in_range(
    path: str,
    minimum: float | Param | None = None,
    maximum: float | Param | None = None,
    *,
    message: str = "",
) -> Validation:
    """The field, when set, is within ``minimum`` and ``maximum`` (each included).

    A bound may be a field of the params (`param`): the message then says its value.
    """
    if minimum is None and maximum is None:
        raise ValueError("in_range needs a minimum or a maximum")
    ref, wire = _ref("object", path), _wire(path)
    tests, words, pieces = [], [], []
    if minimum is not None:
        cel, shown = _bound(minimum)
        tests.append(f"{ref} >= {cel}")
        words.append(f"at least {shown}")
        pieces.append(("at least", minimum, cel))
    if maximum is not None:
        cel, shown = _bound(maximum)
        tests.append(f"{ref} <= {cel}")
        words.append(f"at most {shown}")
        pieces.append(("at most", maximum, cel))
    expression = f"!({_has('object', path)}) || ({' && '.join(tests)})"
    message_expression = ""
    if any(isinstance(bound, Param) for _, bound, _ in pieces):
        parts = " + ' and ' + ".join(f"'{word} ' + string({cel})" for word, _, cel in pieces)
        message_expression = f"'{wire} must be ' + {parts}"

    def check(ev: Evaluation) -> bool:
        value = _get(ev.object, path)
        if value is _MISSING:
            return True
        low = None if minimum is None else _bound_value(minimum, ev)
        high = None if maximum is None else _bound_value(maximum, ev)
        return (low is None or value >= low) and (high is None or value <= high)

    literal = not any(isinstance(bound, Param) for _, bound, _ in pieces)
    if literal and len(pieces) == 2:
        words = [f"between {minimum} and {maximum}"]

    def explain(ev: Evaluation) -> str:
        said = [f"{word} {_bound_value(bound, ev)}" for word, bound, _ in pieces]
        return f"{wire} must be {' and '.join(said)}"

    computed = bool(message_expression) and not message
    return Validation(
        expression,
        message or f"{wire} must be {' and '.join(words)}",
        message_expression if computed else "",
        check=check,
        explain=explain if computed else None,
    )


def at_most(path: str, limit: float | Param, *, message: str = "") -> Validation:
    """The field, when set, is at most ``limit`` (a number or a `param`)."""
    return in_range(path, maximum=limit, message=message)


def at_least(path: str, limit: float | Param, *, message: str = "") -> Validation:
    """The field, when set, is at least ``limit`` (a number or a `param`)."""
    return in_range(path, minimum=limit, message=message)


def matches(path: str, regex: str, *, message: str = "") -> Validation:
    """The string field, when set, matches ``regex`` (RE2, searched as CEL's ``matches``)."""
    pattern = compile_go_regex(regex)

    def check(ev: Evaluation) -> bool:
        value = _get(ev.object, path)
        return value is _MISSING or (isinstance(value, str) and bool(pattern.search(value)))

    expression = f"!({_has('object', path)}) || {_ref('object', path)}.matches({_literal(regex)})"
    return Validation(expression, message or f"{_wire(path)} must match {regex}", check=check)


def one_of(path: str, values: Sequence[Any], *, message: str = "") -> Validation:
    """The field, when set, is one of ``values`` (strings, numbers or bools)."""
    if isinstance(values, str) or not values:
        raise ValueError(f"one_of needs a non-empty list of values, got {values!r}")
    listed = ", ".join(_literal(v) for v in values)
    expression = f"!({_has('object', path)}) || {_ref('object', path)} in [{listed}]"
    allowed = list(values)

    def check(ev: Evaluation) -> bool:
        value = _get(ev.object, path)
        return value is _MISSING or any(type(value) is type(v) and value == v for v in allowed)

    shown = ", ".join(str(v) for v in values)
    return Validation(expression, message or f"{_wire(path)} must be one of {shown}", check=check)


def immutable(path: str, *, message: str = "") -> Validation:
    """On UPDATE, the field keeps its value: it may not be set, changed or removed."""
    new, old = _has("object", path), _has("oldObject", path)
    expression = (
        f"request.operation != 'UPDATE' || (({new}) == ({old}) && "
        f"(!({new}) || {_ref('object', path)} == {_ref('oldObject', path)}))"
    )

    def check(ev: Evaluation) -> bool:
        if ev.operation != "UPDATE":
            return True
        return bool(_get(ev.object, path) == _get(ev.old_object, path))

    return Validation(expression, message or f"{_wire(path)} is immutable", check=check)


def label_required(key: str, *, message: str = "") -> Validation:
    """The object carries the label ``key`` (any value)."""

    def check(ev: Evaluation) -> bool:
        labels = _get(ev.object, "metadata.labels")
        return isinstance(labels, dict) and key in labels

    expression = f"has(object.metadata.labels) && {_literal(key)} in object.metadata.labels"
    return Validation(expression, message or f"label {key} is required", check=check)


def set_default(path: str, value: Any) -> Mutation:
    """A mutation setting the field to ``value`` when it is absent (server-side apply)."""
    segments = _segments(path)
    construction = _literal(value)
    for depth in range(len(segments), 0, -1):
        type_name = ".".join(["Object", *segments[: depth - 1]])
        construction = f"{type_name}{{{segments[depth - 1]}: {construction}}}"
    return Mutation.apply_configuration(f"{_has('object', path)} ? Object{{}} : {construction}")
