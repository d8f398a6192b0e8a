"""Value validation as kube-openapi's SchemaValidator, errors as apiextensions words them.

Types, formats, ranges, lengths, patterns, enums, required fields and the composites
(``anyOf``/``allOf``/``oneOf``/``not``), converted to field errors as apiextensions'
``kubeOpenAPIResultToFieldErrors`` does, with validation ratcheting on update.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Final

from pyctrl._apiextensions.formats import SUPPORTED_FORMATS, format_ok
from pyctrl._apiextensions.goregex import compile_go_regex
from pyctrl._apimachinery.field import (
    Cause,
    Path,
    child,
    field_invalid,
    field_not_supported,
    field_required,
    field_too_long_max_length,
    field_too_many,
    field_type_invalid,
)
from pyctrl._apimachinery.gofmt import go_json, go_print, go_quote
from pyctrl._apimachinery.jsonvalue import deep_equal

if TYPE_CHECKING:
    from pyctrl._apiextensions.nodes import Node

# ---------------------------------------------------------------------------------------
# Value validation: kube-openapi's SchemaValidator, errors converted as
# apiextensions' kubeOpenAPIResultToFieldErrors does.
# ---------------------------------------------------------------------------------------

# Error kinds, mirroring the kube-openapi error codes that map to distinct field errors.
_E_TYPE: Final = 0
_E_REQUIRED: Final = 1
_E_ENUM: Final = 2
_E_TOO_LONG: Final = 3
_E_MAX_ITEMS: Final = 4
_E_MAX_PROPS: Final = 5
_E_OTHER: Final = 6
_E_COMPOSITE: Final = 7

_IN: Final = "body"


class _VErr:
    """One kube-openapi validation error before conversion to a field error."""

    __slots__ = ("code", "message", "name", "valid", "value", "values")

    def __init__(
        self,
        code: int,
        name: str,
        message: str,
        value: Any = None,
        *,
        valid: Any = None,
        values: list[Any] | None = None,
    ) -> None:
        self.code = code
        self.name = name
        self.message = message
        self.value = value
        self.valid = valid
        self.values = values


class _Count:
    """kube-openapi's Result.MatchCount, kept only where anyOf/oneOf need it."""

    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0


_EMPTY: Final[list[_VErr]] = []


def _msg(name: str, tail: str) -> str:
    return f"{name} in {_IN} {tail}"


_KIND: Final[dict[type, str]] = {
    dict: "object",
    list: "array",
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


def _invalid_type(name: str, type_name: str, value: Any) -> _VErr:
    if isinstance(value, str):
        message = f"{name} in {_IN} must be of type {type_name}: {go_quote(value)}"
    else:
        message = f"{name} in {_IN} must be of type {type_name}"
    return _VErr(_E_TYPE, name, message, value)


def _data_format(value: Any) -> tuple[str, str]:
    """typeValidator.schemaInfoForType for decoded JSON."""
    kind = _KIND.get(type(value), "object")
    if kind == "integer":
        return kind, "int64"
    if kind == "number":
        return kind, "float64"
    return kind, ""


def _is_json_integer(f: float) -> bool:
    """swag.IsFloat64AJSONInteger."""
    if math.isnan(f) or math.isinf(f) or abs(f) > float(1 << 53):
        return False
    if f.is_integer():
        return True
    g = float(int(f))
    diff = abs(f - g)
    if f == 0 or g == 0:
        return diff < 1e-9 * 5e-324
    return diff / min(abs(f) + abs(g), 1.7976931348623157e308) < 1e-9


def _check_type(node: Node, data: Any, path: str) -> _VErr | None:
    """typeValidator.Validate for a value whose kind is not among the node's types."""
    types = node.types
    fmt = node.format
    if data is None:
        if types and "null" not in types and not node.nullable:
            return _invalid_type(path, ",".join(types), "null")
        return None
    sch_type, data_fmt = _data_format(data)
    is_str_or_list = sch_type in ("string", "array")
    is_float_int = sch_type == "number" and "integer" in types and _is_json_integer(data)
    is_int_float = sch_type == "integer" and "number" in types
    if (
        not is_str_or_list
        and fmt
        and not (sch_type in types or data_fmt == fmt or is_float_int or is_int_float)
    ):
        return _invalid_type(path, fmt, data_fmt)
    if not ("number" in types or "integer" in types) and fmt and is_str_or_list:
        return None
    if not (sch_type in types or is_float_int or is_int_float):
        return _invalid_type(path, ",".join(types), sch_type)
    return None


def _enum_matches(data: Any, enum: list[Any]) -> bool:
    for candidate in enum:
        if candidate is None:
            continue
        if deep_equal(data, candidate):
            return True
        # Go converts the value to the enum value's type before comparing.
        if data is True or data is False or candidate is True or candidate is False:
            continue
        if isinstance(candidate, int) and isinstance(data, float):
            if math.isfinite(data) and int(data) == candidate:
                return True
        elif isinstance(candidate, float) and isinstance(data, int) and float(data) == candidate:
            return True
    return False


def _enum_error(node: Node, data: Any, path: str) -> _VErr:
    enum = node.enum or []
    message = _msg(path, f"should be one of {_go_slice(enum)}")
    return _VErr(_E_ENUM, path, message, data, values=enum)


def _go_slice(values: list[Any]) -> str:
    # fmt %v of []interface{}.
    return go_print(values)


def _check_string(node: Node, data: str, path: str) -> _VErr | None:
    if node.max_length is not None and len(data) > node.max_length:
        message = _msg(path, f"should be at most {node.max_length} chars long")
        return _VErr(_E_TOO_LONG, path, message, data, valid=node.max_length)
    if node.min_length is not None and len(data) < node.min_length:
        message = _msg(path, f"should be at least {node.min_length} chars long")
        return _VErr(_E_OTHER, path, message, data)
    if node.pattern:
        try:
            rx = compile_go_regex(node.pattern)
        except ValueError as e:
            shown = f"{node.pattern}, but pattern is invalid: {e}"
            return _VErr(_E_OTHER, path, _msg(path, f"should match '{shown}'"), data)
        if rx.search(data) is None:
            return _VErr(_E_OTHER, path, _msg(path, f"should match '{node.pattern}'"), data)
    return None


def _check_format(node: Node, data: str, path: str) -> _VErr | None:
    fmt = node.format
    if fmt.replace("-", "") not in SUPPORTED_FORMATS or format_ok(fmt, data):
        return None
    return _invalid_type(path, fmt, data)


def _check_number(node: Node, data: int | float, path: str) -> list[_VErr]:
    errs: list[_VErr] = []
    is_int = isinstance(data, int)
    if node.multiple_of is not None:
        factor = node.multiple_of
        if factor < 0:
            message = f"factor MultipleOf declared for {path} must be positive: {go_print(factor)}"
            errs.append(_VErr(_E_OTHER, path, message, factor))
        elif is_int and int(factor) != 0:
            ifactor = int(factor)
            if data % ifactor != 0:
                message = _msg(path, f"should be a multiple of {ifactor}")
                errs.append(_VErr(_E_OTHER, path, message, data))
        elif factor != 0:
            f = float(data)
            mult = (1 / factor * f) if factor < 1 else (f / factor)
            if not _is_json_integer(mult):
                message = _msg(path, f"should be a multiple of {go_print(float(factor))}")
                errs.append(_VErr(_E_OTHER, path, message, data))
    if node.minimum is not None:
        bound: int | float = int(node.minimum) if is_int else float(node.minimum)
        if (not node.excl_min and data < bound) or (node.excl_min and data <= bound):
            op = "greater than" if node.excl_min else "greater than or equal to"
            errs.append(
                _VErr(_E_OTHER, path, _msg(path, f"should be {op} {go_print(bound)}"), data)
            )
    if node.maximum is not None:
        bound = int(node.maximum) if is_int else float(node.maximum)
        if (not node.excl_max and data > bound) or (node.excl_max and data >= bound):
            op = "less than" if node.excl_max else "less than or equal to"
            errs.append(
                _VErr(_E_OTHER, path, _msg(path, f"should be {op} {go_print(bound)}"), data)
            )
    return errs


def _correlate_item(node: Node, old: Any, data: list[Any], i: int) -> tuple[bool, Any]:  # noqa: PLR0911 - kube-openapi's ratcheting correlation, one case per list type
    """The old value correlated to item ``i`` for ratcheting (ratcheting.go)."""
    if not isinstance(old, list):
        return False, None
    if node.list_type == "map":
        key = map_list_key(node, data[i])
        if key is None:
            return False, None
        for item in old:
            if map_list_key(node, item) == key:
                return True, item
        return False, None
    if node.list_type in ("set", "atomic"):
        return False, None
    if i < len(old):
        return True, old[i]
    return False, None


def map_list_key(node: Node, item: Any) -> tuple[Any, ...] | None:
    if not isinstance(item, dict) or not node.list_map_keys:
        return None
    key: list[Any] = []
    for k in node.list_map_keys:
        if k in item:
            key.append(_hashable(item[k]))
        else:
            props = node.items.properties if node.items is not None else None
            sub = props.get(k) if props else None
            if sub is None or not sub.has_default:
                return None
            key.append(_hashable(sub.default))
    return tuple(key)


def _hashable(value: Any) -> Any:
    if isinstance(value, dict | list):
        return ("json", go_json(value))
    return (type(value).__name__, value)


NO_OLD: Final = object()


def _validate_node(  # noqa: PLR0912 - kube-openapi's SchemaValidator: one branch per schema keyword
    node: Node, data: Any, path: str, old: Any = NO_OLD, count: _Count | None = None
) -> list[_VErr]:
    """SchemaValidator.Validate, with ratcheting when ``old`` is given.

    The validators run in kube-openapi's order: type, allOf/anyOf/oneOf/not, string,
    format, number, array, enum, object.
    """
    if count is not None:
        count.n += 1
    kind = _KIND.get(type(data))
    errs: list[_VErr] | None = None
    if data is None:
        err = _check_type(node, None, path)
        if err is not None:
            errs = [err]
        if node.enum is not None:
            errs = (errs or []) + [_enum_error(node, data, path)]
    else:
        if (node.types or node.format) and kind not in node.types:
            err = _check_type(node, data, path)
            if err is not None:
                errs = [err]
        if node.has_junctors:
            sub = _check_props(node, data, path, old, count)
            if sub:
                errs = (errs or []) + sub
        if kind == "string":
            if node.string_checks:
                err = _check_string(node, data, path)
                if err is not None:
                    errs = (errs or []) + [err]
            if node.format:
                err = _check_format(node, data, path)
                if err is not None:
                    errs = (errs or []) + [err]
        elif kind in ("integer", "number"):
            if node.number_checks:
                sub = _check_number(node, data, path)
                if sub:
                    errs = (errs or []) + sub
        elif kind == "array":
            sub = _check_slice(node, data, path, old, count)
            if sub:
                errs = (errs or []) + sub
        if node.enum is not None and not _enum_matches(data, node.enum):
            errs = (errs or []) + [_enum_error(node, data, path)]
        if kind == "object":
            sub = _check_object(node, data, path, old, count)
            if sub:
                errs = (errs or []) + sub
    if errs is None:
        return _EMPTY
    if old is not NO_OLD and deep_equal(data, old):
        return _EMPTY
    return errs


def _check_slice(
    node: Node, data: list[Any], path: str, old: Any, count: _Count | None
) -> list[_VErr]:
    errs: list[_VErr] = []
    items = node.items
    if items is not None:
        for i, item in enumerate(data):
            item_path = f"{path}[{i}]"
            if old is NO_OLD:
                sub = _validate_node(items, item, item_path, NO_OLD, count)
            else:
                found, old_item = _correlate_item(node, old, data, i)
                sub = _validate_node(items, item, item_path, old_item if found else NO_OLD, count)
            if sub:
                errs += sub
    size = len(data)
    if node.min_items is not None and size < node.min_items:
        message = _msg(path, f"should have at least {node.min_items} items")
        errs.append(_VErr(_E_OTHER, path, message, size))
    if node.max_items is not None and size > node.max_items:
        message = _msg(path, f"should have at most {node.max_items} items")
        errs.append(_VErr(_E_MAX_ITEMS, path, message, size, valid=node.max_items))
    if node.unique_items:
        for i in range(size):
            if any(deep_equal(data[i], data[j]) for j in range(i)):
                errs.append(_VErr(_E_OTHER, path, _msg(path, "shouldn't contain duplicates")))
                break
    return errs


def _check_object(  # noqa: PLR0912 - kube-openapi's object validator: one branch per object keyword
    node: Node, data: dict[str, Any], path: str, old: Any, count: _Count | None
) -> list[_VErr]:
    n = len(data)
    if node.min_properties is not None and n < node.min_properties:
        message = _msg(path, f"should have at least {node.min_properties} properties")
        return [_VErr(_E_OTHER, path, message, n)]
    if node.max_properties is not None and n > node.max_properties:
        message = _msg(path, f"should have at most {node.max_properties} properties")
        return [_VErr(_E_MAX_PROPS, path, message, n, valid=node.max_properties)]
    errs: list[_VErr] = []
    props = node.properties
    old_map = old if type(old) is dict else None
    if node.additional_allows is False:
        for key in data:
            if props is None or key not in props:
                message = f"{path}.{key} in {_IN} is a forbidden property"
                errs.append(_VErr(_E_OTHER, path, message, key))
    elif node.additional is not None:
        addl = node.additional
        for key, value in data.items():
            if props is None or key not in props:
                sub_old = old_map.get(key, NO_OLD) if old_map is not None else NO_OLD
                sub = _validate_node(addl, value, f"{path}.{key}", sub_old, count)
                if sub:
                    errs += sub
    if props is not None:
        if len(props) <= len(data):
            pairs = [(name, sub_node) for name, sub_node in props.items() if name in data]
        else:
            pairs = [(name, props[name]) for name in data if name in props]
        for name, sub_node in pairs:
            sub_path = f"{path}.{name}" if path else name
            sub_old = old_map.get(name, NO_OLD) if old_map is not None else NO_OLD
            sub = _validate_node(sub_node, data[name], sub_path, sub_old, count)
            if sub:
                errs += sub
    for name in node.required:
        if name not in data:
            errs.append(_VErr(_E_REQUIRED, f"{path}.{name}", _msg(f"{path}.{name}", "is required")))
    return errs


def _dedupe(errs: list[_VErr]) -> list[_VErr]:
    seen: set[str] = set()
    out: list[_VErr] = []
    for e in errs:
        if e.message not in seen:
            seen.add(e.message)
            out.append(e)
    return out


def _check_props(node: Node, data: Any, path: str, old: Any, count: _Count | None) -> list[_VErr]:  # noqa: PLR0912 - kube-openapi's properties validator: one branch per property rule
    errs: list[_VErr] = []
    quoted = go_quote(path)
    if node.any_of:
        best: tuple[int, list[_VErr]] | None = None
        first_success: list[_VErr] | None = None
        for alt in node.any_of:
            alt_count = _Count()
            r = _validate_node(alt, data, path, old, alt_count)
            if not r:
                best = None
                first_success = r
                break
            if best is None or alt_count.n > best[0]:
                best = (alt_count.n, r)
        if first_success is None:
            message = f"{quoted} must validate at least one schema (anyOf)"
            errs.append(_VErr(_E_COMPOSITE, path, message))
        if best is not None:
            errs += best[1]
    if node.one_of:
        best = None
        validated = 0
        for alt in node.one_of:
            alt_count = _Count()
            r = _validate_node(alt, data, path, old, alt_count)
            if not r:
                validated += 1
                best = None
                continue
            if validated == 0 and (best is None or alt_count.n > best[0]):
                best = (alt_count.n, r)
        if validated != 1:
            extra = (
                "Found none valid" if validated == 0 else f"Found {validated} valid alternatives"
            )
            message = f"{quoted} must validate one and only one schema (oneOf). {extra}"
            errs.append(_VErr(_E_COMPOSITE, path, message))
            if best is not None:
                errs += best[1]
    if node.all_of:
        validated = 0
        for alt in node.all_of:
            r = _validate_node(alt, data, path, old, count)
            if not r:
                validated += 1
            errs += r
        if validated != len(node.all_of):
            extra = ". None validated" if validated == 0 else ""
            message = f"{quoted} must validate all the schemas (allOf){extra}"
            errs.append(_VErr(_E_COMPOSITE, path, message))
    if node.not_ is not None and not _validate_node(node.not_, data, path, old, None):
        errs.append(_VErr(_E_COMPOSITE, path, f"{quoted} must not validate the schema (not)"))
    return _dedupe(errs) if errs else errs


def _to_causes(errors: list[_VErr], base: Path) -> list[Cause]:
    """kubeOpenAPIResultToFieldErrors."""
    out: list[Cause] = []
    for e in errors:
        if e.code == _E_COMPOSITE:
            out.append(field_invalid(base, "", e.message))
            continue
        path: Path = base
        if e.name and e.name != ".":
            path = child(base, e.name[1:] if e.name.startswith(".") else e.name)
        if e.code == _E_REQUIRED:
            out.append(field_required(path))
        elif e.code == _E_ENUM:
            values = [v if isinstance(v, str) else go_json(v) for v in (e.values or [])]
            out.append(field_not_supported(path, e.value, values))
        elif e.code == _E_TOO_LONG:
            out.append(field_too_long_max_length(path, e.valid if isinstance(e.valid, int) else -1))
        elif e.code in (_E_MAX_ITEMS, _E_MAX_PROPS):
            actual = e.value if isinstance(e.value, int) else -1
            out.append(field_too_many(path, actual, e.valid if isinstance(e.valid, int) else -1))
        elif e.code == _E_TYPE:
            out.append(field_type_invalid(path, "" if e.value is None else e.value, e.message))
        else:
            out.append(field_invalid(path, "" if e.value is None else e.value, e.message))
    return out


def openapi_errors(node: Node, obj: Any, base: Path, old: Any = NO_OLD) -> list[Cause]:
    errs = _validate_node(node, obj, "", old)
    return _to_causes(_dedupe(errs), base) if errs else []
