"""Evaluation of ``x-kubernetes-validations`` rules (apiextensions' ``schema/cel/validation.go``).

Also the rules' ``fieldPath`` check (``ValidFieldPath``).
"""

from __future__ import annotations

import re
from typing import Any, Final

from pyctrl._apiextensions.cel.program import CompiledRule, compile_rules
from pyctrl._apiextensions.cel.values import CelEvalError
from pyctrl._apiextensions.nodes import Node, map_is_correlatable, str_field
from pyctrl._apiextensions.openapi import NO_OLD, map_list_key
from pyctrl._apimachinery.field import (
    Cause,
    Path,
    child,
    field_duplicate,
    field_forbidden,
    field_invalid,
    field_required,
    index,
    key_path,
)
from pyctrl._apimachinery.gofmt import OMIT
from pyctrl._apimachinery.jsonvalue import deep_equal


def valid_field_path(json_path: str, schema: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Check a rule's ``fieldPath`` against a schema, as apiextensions' ValidFieldPath.

    Args:
        json_path: E.g. ``.spec.replicas`` or ``.labels['app.kubernetes.io/name']``.
        schema: The schema node the rule is declared on.

    Returns:
        The field path it denotes (relative, e.g. ``spec.replicas`` or ``labels[app]``)
        and the schema node it leads to.

    Raises:
        ValueError: The path is malformed or does not lead to a field of the schema.
    """
    tokens = _split_json_path(json_path)
    out: str | None = None
    node: dict[str, Any] = schema
    i = 0

    def step(name: str) -> None:
        nonlocal out, node
        props = node.get("properties")
        if isinstance(props, dict) and props:
            if name not in props or not isinstance(props[name], dict):
                raise ValueError("does not refer to a valid field")
            out = child(out, name)
            node = props[name]
        elif isinstance(node.get("additionalProperties"), dict):
            out = key_path(out, name)
            node = node["additionalProperties"]
        else:
            raise ValueError("does not refer to a valid field")

    while i < len(tokens):
        tok = tokens[i]
        if tok == "[":
            if i + 2 >= len(tokens):
                raise ValueError("unexpected end of JSON path")
            lit = tokens[i + 1]
            if len(lit) < 2 or lit[0] != "'" or lit[-1] != "'":
                raise ValueError(f"expected single quoted string but got {lit}")
            step(_unescape_single_quote(lit[1:-1]))
            if tokens[i + 2] != "]":
                raise ValueError(f"expected ] but got {tokens[i + 2]}")
            i += 3
        elif tok == ".":
            if i + 1 >= len(tokens):
                raise ValueError("unexpected end of JSON path")
            step(tokens[i + 1])
            i += 2
        else:
            raise ValueError(f"expected [ or . but got: {tok}")
    return out or "", node


def _split_json_path(path: str) -> list[str]:
    tokens: list[str] = []
    i = 0
    while i < len(path):
        ch = path[i]
        if ch == "'":
            j = i + 1
            while j < len(path) and not (path[j] == "'" and path[j - 1] != "\\"):
                j += 1
            tokens.append(path[i : j + 1])
            i = j + 1
        elif ch in ".[]":
            tokens.append(ch)
            i += 1
        else:
            j = i
            while j < len(path) and path[j] not in ".[]":
                j += 1
            tokens.append(path[i:j])
            i = j
    return tokens


def _unescape_single_quote(s: str) -> str:
    table = {
        "a": "\a",
        "b": "\b",
        "f": "\f",
        "n": "\n",
        "r": "\r",
        "t": "\t",
        "v": "\v",
        "'": "'",
        "\\": "\\",
    }

    def sub(m: re.Match[str]) -> str:
        c = m.group(0)[1]
        if c not in table:
            raise ValueError(f"invalid string literal: invalid escape char {m.group(0)}")
        return table[c]

    return re.sub(r"\\.", sub, s)


# ---------------------------------------------------------------------------------------
# x-kubernetes-validations evaluation (schema/cel/validation.go).
# ---------------------------------------------------------------------------------------


class Unchanged:
    """Lazily computed 'is this value unchanged since the old object' for ratcheting."""

    __slots__ = ("_new", "_old", "_parent", "_value")

    def __init__(self, new: Any, old: Any, parent: Unchanged | None) -> None:
        self._new = new
        self._old = old
        self._parent = parent
        self._value: bool | None = None

    def get(self) -> bool:
        if self._value is None:
            if self._old is NO_OLD:
                self._value = self._parent.get() if self._parent is not None else False
            else:
                self._value = deep_equal(self._new, self._old)
        return self._value


_NEVER_UNCHANGED: Final = Unchanged(None, NO_OLD, None)


def _node_rules(node: Node, is_resource_root: bool) -> list[CompiledRule]:
    rules = node.rules
    if rules is None:
        rules = compile_rules(node.raw, is_resource_root=is_resource_root)
        for rule in rules:
            field_path = str_field(rule.rule, "fieldPath")
            if field_path:
                try:
                    rule.field_path = valid_field_path(field_path, node.raw)[0]
                except ValueError:
                    rule.field_path = ""
        node.rules = rules
    return rules


def _rule_error_string(rule: dict[str, Any]) -> str:
    message = str_field(rule, "message")
    return message.strip() if message else str_field(rule, "rule").strip()


def _rule_message_or_default(rule: dict[str, Any]) -> str:
    message = str_field(rule, "message")
    return message.strip() if message else f"failed rule: {_rule_error_string(rule)}"


def _rule_failure(path: Path, value: Any, detail: str, reason: Any) -> Cause:
    if reason == "FieldValueForbidden":
        return field_forbidden(path, detail)
    if reason == "FieldValueRequired":
        return field_required(path, detail)
    if reason == "FieldValueDuplicate":
        return field_duplicate(path, value)
    return field_invalid(path, value, detail)


def _cel_node_errors(
    node: Node,
    obj: Any,
    old: Any,
    path: Path,
    *,
    is_resource_root: bool,
    unchanged: Unchanged,
) -> list[Cause]:
    errs: list[Cause] = []
    rules = _node_rules(node, is_resource_root)
    has_old = old is not NO_OLD and old is not None
    for compiled in rules:
        rule = compiled.rule
        if compiled.error is not None:
            errs.append(field_invalid(path, node.type, f"rule compile error: {compiled.error}"))
            continue
        program = compiled.program
        if program is None:
            continue
        optional = rule.get("optionalOldSelf") is True
        if compiled.uses_old_self and not has_old and not optional:
            continue
        try:
            result = program.evaluate(
                obj, old if has_old else None, has_old=has_old, optional=optional
            )
        except CelEvalError as e:
            text = str(e)
            if text.startswith("no such overload"):
                detail = (
                    f"'{text}': call arguments did not match a supported operator, function or "
                    "macro "
                    f"signature for rule: {_rule_error_string(rule)}"
                )
            else:
                detail = f"{text} evaluating rule: {_rule_error_string(rule)}"
            errs.append(field_invalid(path, node.type, detail))
            continue
        if result is True:
            continue
        fail_path: Path = path
        if compiled.field_path:
            fail_path = child(path, compiled.field_path)
        detail = ""
        if compiled.message_program is not None:
            detail = _eval_message(compiled, obj, old if has_old else None, has_old, optional)
        if not detail:
            detail = _rule_message_or_default(rule)
        # The failing value itself; objects and arrays are left out of the message.
        value = OMIT if node.type in ("object", "array") else obj
        failure = _rule_failure(fail_path, value, detail, rule.get("reason"))
        if not compiled.uses_old_self and unchanged.get():
            continue
        errs.append(failure)
    return errs


def _eval_message(compiled: CompiledRule, obj: Any, old: Any, has_old: bool, optional: bool) -> str:
    program = compiled.message_program
    assert program is not None
    try:
        value = program.evaluate(obj, old, has_old=has_old, optional=optional)
    except CelEvalError:
        return ""
    if not isinstance(value, str):
        return ""
    text = value.strip()
    if not text or len(text) > 5 * 1024 or "\n" in text:
        return ""
    return text


def cel_errors(
    node: Node,
    obj: Any,
    old: Any,
    has_old: bool,
    path: Path,
    *,
    is_resource_root: bool,
    unchanged: Unchanged | None,
) -> list[Cause]:
    """Validator.validate: evaluate rules on this node and every node below it."""
    if obj is None or not node.has_cel:
        return []
    old_value = old if has_old else NO_OLD
    here = unchanged or _NEVER_UNCHANGED
    if has_old and unchanged is not None:
        here = Unchanged(obj, old_value, unchanged)
    errs: list[Cause] = []
    if node.validations:
        errs += _cel_node_errors(
            node, obj, old_value, path, is_resource_root=is_resource_root, unchanged=here
        )
    if isinstance(obj, list) and node.items is not None and node.items.has_cel:
        errs += _array_cel_errors(node, node.items, obj, old, path, here=here)
    elif isinstance(obj, dict):
        errs += _object_cel_errors(node, obj, old, has_old, path, here=here)
    return errs


def _correlated_item(node: Node, item: Any, old: Any) -> tuple[Any, bool]:
    """The old item of a map list with the same key as ``item``, and whether there is one."""
    if node.list_type == "map" and isinstance(old, list):
        key = map_list_key(node, item)
        if key is not None:
            for candidate in old:
                if map_list_key(node, candidate) == key:
                    return candidate, True
    return None, False


def _array_cel_errors(
    node: Node, items: Node, obj: list[Any], old: Any, path: Path, *, here: Unchanged
) -> list[Cause]:
    """Validator.validateArray: the rules of every item (oldSelf only in map lists)."""
    errs: list[Cause] = []
    for i, item in enumerate(obj):
        item_old, item_has_old = _correlated_item(node, item, old)
        child_unchanged = here if item_has_old else Unchanged(None, NO_OLD, here)
        errs += cel_errors(
            items,
            item,
            item_old,
            item_has_old,
            index(path, i),
            is_resource_root=items.embedded,
            unchanged=child_unchanged,
        )
    return errs


def _object_cel_errors(
    node: Node, obj: dict[str, Any], old: Any, has_old: bool, path: Path, *, here: Unchanged
) -> list[Cause]:
    """Validator.validateMap: the rules of additional properties, then of properties."""
    errs: list[Cause] = []
    correlatable = has_old and isinstance(old, dict) and map_is_correlatable(node.map_type or None)
    props = node.properties
    if node.additional is not None and node.additional.has_cel:
        addl = node.additional
        for k, v in obj.items():
            if props is not None and k in props:
                continue
            sub_has_old = correlatable and k in old
            child_unchanged = here if sub_has_old else Unchanged(None, NO_OLD, here)
            errs += cel_errors(
                addl,
                v,
                old[k] if sub_has_old else None,
                sub_has_old,
                key_path(path, k),
                is_resource_root=addl.embedded,
                unchanged=child_unchanged,
            )
    if props is not None:
        for k, v in obj.items():
            sub = props.get(k)
            if sub is None or not sub.has_cel:
                continue
            sub_has_old = correlatable and k in old
            child_unchanged = here if sub_has_old else Unchanged(None, NO_OLD, here)
            errs += cel_errors(
                sub,
                v,
                old[k] if sub_has_old else None,
                sub_has_old,
                child(path, k),
                is_resource_root=sub.embedded,
                unchanged=child_unchanged,
            )
    return errs


BLOCKING_REASONS: Final = frozenset(
    (
        "FieldValueNotSupported",
        "FieldValueRequired",
        "FieldValueTooLong",
        "FieldValueTooMany",
        "FieldValueTypeInvalid",
    )
)
