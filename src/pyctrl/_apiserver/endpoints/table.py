"""Server-side ``Table`` rendering, what ``kubectl get`` prints.

When a request's Accept header asks for ``application/json;as=Table;v=v1;g=meta.k8s.io``,
kube-apiserver answers a ``meta.k8s.io/v1`` ``Table``: column definitions and one row of cells
per object, each row carrying the object as ``PartialObjectMetadata`` (``includeObject=Metadata``,
the default), in full (``Object``) or not at all (``None``). Built-in types get the columns
kubectl shows (NAME, READY, STATUS, AGE...): their strategy's `Printer`. Custom resources
get their CRD's ``additionalPrinterColumns`` evaluated with JSONPath, or NAME and AGE when
it declares none; anything else gets NAME and CREATED AT, kube-apiserver's default table
convertor.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from pyctrl._apimachinery.meta import ro_meta
from pyctrl._apiserver.apimachinery import jsonpath as _jsonpath
from pyctrl._apiserver.registry.printing import Cells, human_duration
from pyctrl._apiserver.registry.strategies import kind_strategy
from pyctrl._apiserver.scheme.resources import (
    CREATED_AT_COLUMN,
    NAME_COLUMN,
    PrinterColumn,
    ResourceType,
)

_DESCRIPTIONS = {"Name": NAME_COLUMN.description, "Age": CREATED_AT_COLUMN.description}


def _column_dict(col: PrinterColumn) -> dict[str, Any]:
    return {
        "name": col.name,
        "type": col.type,
        "format": col.format,
        "description": col.description,
        "priority": col.priority,
    }


_RFC3339 = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})")


def _rfc3339(text: str) -> datetime | None:
    """Go's ``time.Parse(time.RFC3339, text)``: None if it does not parse."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        return None
    base, fraction, zone = match.groups()
    micros = (fraction or "").ljust(6, "0")[:6]
    try:
        return datetime.fromisoformat(f"{base}.{micros}{'+00:00' if zone == 'Z' else zone}")
    except ValueError:
        return None


def date_cell(value: str, now: datetime) -> str:
    """A ``type: date`` printer column's cell, as kube-apiserver's table convertor makes it.

    The timestamp shows as its age (``duration.HumanDuration``: ``5s``, ``3m2s``, ``4d``):
    ``<unknown>`` for an empty (or ``null``) timestamp, ``<invalid>`` for one that is not
    RFC 3339 (or lies more than a second in the future).
    """
    if not value or value == "null":
        return "<unknown>"
    when = _rfc3339(value)
    if when is None:
        return "<invalid>"
    return human_duration((now - when).total_seconds())


def _custom_cell(col: PrinterColumn, obj: dict[str, Any], now: datetime) -> Any:  # noqa: PLR0911 - one return per printer column type, as the CRD table convertor
    try:
        results = _jsonpath.find(obj, col.json_path)
    except _jsonpath.JSONPathError:
        return None
    if not results:
        return None
    value = results[0]
    if col.type == "string":
        return _jsonpath.to_text(value)
    if col.type == "integer":
        return (
            int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
        )
    if col.type == "number":
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if col.type == "boolean":
        return value if isinstance(value, bool) else None
    if col.type == "date":
        return date_cell(value, now) if isinstance(value, str) else None
    return value


def columns_for(rt: ResourceType) -> list[dict[str, Any]]:
    """The column definitions of ``rt``'s table."""
    if rt.printer_columns:
        return [_column_dict(NAME_COLUMN), *(_column_dict(c) for c in rt.printer_columns)]
    printer = kind_strategy(rt).printer
    if printer is None:
        return [_column_dict(NAME_COLUMN), _column_dict(CREATED_AT_COLUMN)]
    out = []
    for name, type_, priority in printer.columns:
        out.append(
            {
                "name": name,
                "type": type_,
                "format": "name" if name == "Name" and priority == 0 else "",
                "description": _DESCRIPTIONS.get(name, f"{name} of the {rt.kind}"),
                "priority": priority,
            }
        )
    return out


def cells_for(rt: ResourceType, obj: dict[str, Any], now: datetime | None = None) -> Cells:
    """The cells of ``obj``'s row."""
    moment = now or datetime.now(UTC)
    if rt.printer_columns:
        name = ro_meta(obj).get("name", "")
        return [name, *(_custom_cell(c, obj, moment) for c in rt.printer_columns)]
    printer = kind_strategy(rt).printer
    if printer is None:
        return [ro_meta(obj).get("name", ""), ro_meta(obj).get("creationTimestamp")]
    return printer.cells(obj, moment)


def partial_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as a ``meta.k8s.io/v1`` ``PartialObjectMetadata``."""
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata") or {},
    }


def row_for(rt: ResourceType, obj: dict[str, Any], include: str, now: datetime) -> dict[str, Any]:
    """One table row, with the object as ``include`` asks (Object, Metadata or None)."""
    row: dict[str, Any] = {"cells": cells_for(rt, obj, now)}
    if include == "Object":
        row["object"] = obj
    elif include != "None":
        row["object"] = partial_metadata(obj)
    return row


def to_table(
    rt: ResourceType,
    objs: list[dict[str, Any]],
    *,
    include: str,
    list_meta: dict[str, Any],
    headers: bool = True,
    api_version: str = "meta.k8s.io/v1",
) -> dict[str, Any]:
    """A ``Table`` of ``objs``."""
    now = datetime.now(UTC)
    return {
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": list_meta,
        "columnDefinitions": columns_for(rt) if headers else [],
        "rows": [row_for(rt, obj, include, now) for obj in objs],
    }
