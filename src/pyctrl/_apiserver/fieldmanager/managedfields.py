r"""Field ownership (``metadata.managedFields``) and server-side apply, as kube-apiserver does it.

Every write records who set which fields. ``metadata.managedFields`` holds one entry per
(manager, operation, apiVersion, subresource): ``{"manager": "kubectl", "operation":
"Update" | "Apply", "apiVersion": "apps/v1", "time": ..., "fieldsType": "FieldsV1",
"fieldsV1": {...}, "subresource": "status"?}``. ``fieldsV1`` is a trie of the owned
paths: ``"f:<name>"`` steps into a field, ``"k:{\\"name\\":\\"app\\"}"`` into the item of an
associative list (``x-kubernetes-list-type: map``, or a ``patchMergeKey`` list of a
built-in kind) with those key fields, ``"v:<json>"`` into a value of a set; an empty
object ``{}`` marks an owned leaf, and ``"."`` marks the path itself as owned when it
also has children. Atomic lists and maps are owned whole, as a leaf. Apply entries only
hold what the manager applied; Update entries hold what the manager changed, so they
also own the maps and list items they created (a ``"."`` under ``f:labels`` for a
newly added labels map).

:func:`track_update` runs on every create, update and patch (operation ``Update``): it
diffs the old and new object (the Go zero value of the kind on create), gives the
changed and added fields to the writing manager, takes them from every other manager,
drops removed fields from everyone, and drops entries left empty. A write that changes
nothing leaves managedFields alone. At most 10 Update entries are kept: the oldest are
folded into an ``ancient-changes`` entry per apiVersion. A request may set
managedFields itself (``[]`` or ``[{}]`` resets them); writes to a subresource ignore
the request's managedFields.

:func:`server_side_apply` runs an apply patch (``application/apply-patch+yaml``): the
applied configuration is merged into the live object (maps and structs merge key by key,
associative lists merge item by key, sets by value, atomic lists and maps are replaced),
fields the manager applied last time but omits now are removed unless another manager
also owns them, and every field whose value changes while another manager owns it is a
conflict. Conflicts raise :class:`ApplyConflict` unless ``force`` is set, in which case
the fields change hands. An apply that changes nothing returns the live object (only
the ownership may change).

Paths of the metadata kube-apiserver sets itself (``name``, ``uid``,
``resourceVersion``, ...) and ``apiVersion``/``kind`` are never owned. On the main
endpoint of a kind with a status subresource ``status`` is ignored, and on the status
subresource ``spec`` is (kube-apiserver's "reset fields").

This is a port of sigs.k8s.io/structured-merge-diff (typed compare, merge, field sets,
``merge.Updater``) and k8s.io/apimachinery/pkg/util/managedfields. Known differences:
objects are never converted between API versions (entries of another apiVersion are
compared as if they had this one), kubectl's ``last-applied-configuration`` annotation is
not kept in step, and a map or list that removal leaves empty is dropped rather than
set to ``null``.
"""

from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

import orjson

from pyctrl._apimachinery.gofmt import go_quote
from pyctrl._apimachinery.jsonvalue import json_equal
from pyctrl._apimachinery.merge_keys import (
    DEDUCED,
    Node,
    builtin_root,
    empty_object,
    is_builtin_group,
    schema_root,
)
from pyctrl._apiserver.fieldmanager.patch import PatchError

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = [
    "MAX_UPDATE_MANAGERS",
    "ApplyConflict",
    "Conflict",
    "conflict_status_message",
    "server_side_apply",
    "track_update",
]

MAX_UPDATE_MANAGERS: Final = 10
"""kube-apiserver's cap on Update entries; older ones fold into ``ancient-changes``."""

_ANCIENT_CHANGES: Final = "ancient-changes"
_CURRENT_OPERATION: Final = ("current-operation", "Update", "", "")

# A field set is the children map of the root of a fieldsV1 trie: path element -> node,
# where a node is {} for an owned leaf, or its children plus "." if the path itself is
# also owned. Sets are never mutated once built, so they share subtrees freely.
FieldSet = dict[str, Any]


# --- conflicts ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Conflict:
    """One field another manager owns and an apply would change.

    Attributes:
        manager: the other manager's name.
        path: the field, in structured-merge-diff's form (``.spec.replicas``,
            ``.spec.containers[name="app"].image``).
        operation: ``"Update"`` or ``"Apply"``: how the other manager set it.
        api_version: the apiVersion of the other manager's entry.
        subresource: the subresource the other manager wrote through, if any.
    """

    manager: str
    path: str
    operation: str = "Update"
    api_version: str = ""
    subresource: str = ""

    @property
    def manager_description(self) -> str:
        """kube-apiserver's ``printManager``: ``"mgr" using apps/v1`` for an updater."""
        text = go_quote(self.manager)
        if self.subresource:
            text = f"{text} with subresource {go_quote(self.subresource)}"
        if self.operation == "Update":
            text = f"{text} using {self.api_version}"
        return text

    @property
    def message(self) -> str:
        """The StatusCause message: ``conflict with "mgr" using apps/v1``."""
        return f"conflict with {self.manager_description}"

    def _sort_key(self) -> str:
        return _identifier_json((self.manager, self.operation, self.api_version, self.subresource))


class ApplyConflict(Exception):  # noqa: N818 - the name is the envtest interface
    """Server-side apply would change fields other managers own (HTTP 409).

    Attributes:
        conflicts: ``(manager name, field path)`` per conflicting field.
        details: the same conflicts with the other managers' entry details.
    """

    def __init__(self, details: Sequence[Conflict]) -> None:
        self.details: list[Conflict] = list(details)
        self.conflicts: list[tuple[str, str]] = [(c.manager, c.path) for c in self.details]
        super().__init__(conflict_status_message(self.details))

    @property
    def message(self) -> str:
        """The Status message: ``Apply failed with 1 conflict: conflict with ...``."""
        return conflict_status_message(self.details)

    @property
    def causes(self) -> list[dict[str, str]]:
        """The Status ``details.causes``, one ``FieldManagerConflict`` per field."""
        return [
            {"reason": "FieldManagerConflict", "message": c.message, "field": c.path}
            for c in self.details
        ]

    def status(self) -> dict[str, Any]:
        """The whole Status body kube-apiserver answers with (errors.NewApplyConflict)."""
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": "Conflict",
            "details": {"causes": self.causes},
            "code": 409,
        }


def conflict_status_message(
    conflicts: ApplyConflict | Sequence[Conflict] | Sequence[tuple[str, str]],
) -> str:
    """kube-apiserver's message for apply conflicts.

    ``Apply failed with 1 conflict: conflict with "mgr" using apps/v1: .spec.replicas``,
    or, for several, ``Apply failed with 2 conflicts: conflicts with "a" using v1:`` and
    one ``- <path>`` line per field, grouped by manager. Plain ``(manager, path)``
    tuples print the manager's name only.
    """
    items: list[Conflict] = []
    source = conflicts.details if isinstance(conflicts, ApplyConflict) else conflicts
    for item in source:
        if isinstance(item, Conflict):
            items.append(item)
        else:
            name, path = item
            items.append(Conflict(manager=name, path=path, operation="Apply"))
    if len(items) == 1:
        only = items[0]
        return f"Apply failed with 1 conflict: {only.message}: {only.path}"
    groups: dict[str, list[Conflict]] = {}
    for item in items:
        groups.setdefault(item._sort_key(), []).append(item)
    lines: list[str] = []
    for key in sorted(groups):
        group = groups[key]
        lines.append(f"conflicts with {group[0].manager_description}:")
        lines.extend(f"- {c.path}" for c in group)
    return f"Apply failed with {len(items)} conflicts: " + "\n".join(lines)


# --- entries --------------------------------------------------------------------------------

# (manager, operation, apiVersion ("" for Apply), subresource): kube-apiserver's manager
# identifier, which keys the entries.
_Id = tuple[str, str, str, str]


@dataclass
class _Entry:
    fields: FieldSet
    api_version: str
    applied: bool
    time: str | None


class _DecodeError(Exception):
    pass


def _identifier(manager: str, operation: str, api_version: str, subresource: str) -> _Id:
    return (manager, operation, "" if operation == "Apply" else api_version, subresource)


def _identifier_json(ident: _Id) -> str:
    """BuildManagerIdentifier: the JSON of the entry without time, type and fields."""
    out: dict[str, str] = {}
    if ident[0]:
        out["manager"] = ident[0]
    if ident[1]:
        out["operation"] = ident[1]
    if ident[2]:
        out["apiVersion"] = ident[2]
    if ident[3]:
        out["subresource"] = ident[3]
    return json.dumps(out, separators=(",", ":"), ensure_ascii=False)


def _decode(entries: Any) -> dict[_Id, _Entry]:
    """DecodeManagedFields, with its validation."""
    if entries is None:
        return {}
    if not isinstance(entries, list):
        raise _DecodeError("managedFields must be a list")
    out: dict[_Id, _Entry] = {}
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise _DecodeError(f"managed fields entry {index} is not an object")
        operation = entry.get("operation")
        if operation not in ("Apply", "Update"):
            raise _DecodeError("operation must be `Apply` or `Update`")
        api_version = entry.get("apiVersion")
        if not isinstance(api_version, str) or not api_version:
            raise _DecodeError("apiVersion must not be empty")
        fields_type = entry.get("fieldsType")
        if not fields_type:
            raise _DecodeError(f"missing fieldsType in managed fields entry {index}")
        if fields_type != "FieldsV1":
            raise _DecodeError(
                f"invalid fieldsType {fields_type!r} in managed fields entry {index}"
            )
        manager = entry.get("manager") or ""
        subresource = entry.get("subresource") or ""
        if not isinstance(manager, str) or not isinstance(subresource, str):
            raise _DecodeError(f"managed fields entry {index} has a non-string manager")
        time = entry.get("time")
        ident = _identifier(manager, operation, api_version, subresource)
        out[ident] = _Entry(
            fields=_parse_fields(entry.get("fieldsV1")),
            api_version=api_version,
            applied=operation == "Apply",
            time=time if isinstance(time, str) else None,
        )
    return out


def _is_reset(entries: Any) -> bool:
    """``[]`` or ``[{}]``: the request asks for managedFields to be cleared."""
    if isinstance(entries, list):
        return not entries or (len(entries) == 1 and entries[0] == {})
    return False


def _encode(managed: dict[_Id, _Entry]) -> list[dict[str, Any]]:
    out: list[tuple[tuple[str, int, str, str, str], dict[str, Any]]] = []
    for ident, entry in managed.items():
        operation = "Apply" if entry.applied else "Update"
        encoded: dict[str, Any] = {
            "manager": ident[0],
            "operation": operation,
            "apiVersion": entry.api_version,
        }
        if entry.time is not None:
            encoded["time"] = entry.time
        encoded["fieldsType"] = "FieldsV1"
        encoded["fieldsV1"] = _serialize(entry.fields)
        if ident[3]:
            encoded["subresource"] = ident[3]
        sort_key = (operation, _seconds(entry.time), ident[0], entry.api_version, ident[3])
        out.append((sort_key, encoded))
    out.sort(key=lambda pair: pair[0])
    return [encoded for _, encoded in out]


@functools.lru_cache(maxsize=1024)
def _seconds(time: str | None) -> int:
    """metav1.Time.Unix() of an entry's time (0 when absent)."""
    if not time:
        return 0
    try:
        return int(datetime.fromisoformat(time).timestamp())
    except ValueError:
        return 0


def _cap_update_managers(managed: dict[_Id, _Entry]) -> None:
    """capManagersManager: fold the oldest Update entries into ``ancient-changes``."""
    updaters = [ident for ident, entry in managed.items() if not entry.applied]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return
    updaters.sort(key=lambda i: (_seconds(managed[i].time), _identifier_json(i)))
    first_by_version: dict[str, _Id] = {}
    length = len(updaters)
    for ident in updaters:
        if length <= MAX_UPDATE_MANAGERS:
            break
        entry = managed[ident]
        version = entry.api_version
        bucket = _identifier(_ANCIENT_CHANGES, "Update", version, "")
        first = first_by_version.get(version)
        if first is None:
            first_by_version[version] = ident
            continue
        if bucket not in managed:
            managed[bucket] = managed.pop(first)
        merged = managed[bucket]
        managed[bucket] = _Entry(
            fields=_union(entry.fields, merged.fields),
            api_version=version,
            applied=False,
            time=entry.time,
        )
        del managed[ident]
        length -= 1


# --- path elements --------------------------------------------------------------------------


class _TypeError(Exception):
    """A value that does not fit its type (structured-merge-diff's validation errors)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.path: list[str] = []

    def describe(self) -> str:
        where = "".join(_pe_string(pe) for pe in self.path)
        return f"{where}: {self.message}" if where else self.message


def _json_compact(value: Any) -> str:
    """JSON as structured-merge-diff writes it in path elements (sorted keys, Go escapes)."""
    text = orjson.dumps(_go_numbers(value), option=orjson.OPT_SORT_KEYS).decode()
    if any(c in text for c in "<>&\u2028\u2029"):
        # Go's encoder escapes HTML characters and line separators.
        for char, escaped in (
            ("<", "\\u003c"),
            (">", "\\u003e"),
            ("&", "\\u0026"),
            ("\u2028", "\\u2028"),
            ("\u2029", "\\u2029"),
        ):
            text = text.replace(char, escaped)
    return text


def _go_numbers(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, dict):
        return {k: _go_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_go_numbers(v) for v in value]
    return value


@functools.lru_cache(maxsize=16384)
def _canonical_pe(pe: str) -> str:
    """The canonical form of a path element read from stored managedFields."""
    if pe.startswith(("k:", "v:")):
        try:
            value = json.loads(pe[2:])
        except ValueError as exc:
            raise _DecodeError(f"invalid path element {pe!r}") from exc
        if pe[0] == "k" and not isinstance(value, dict):
            raise _DecodeError(f"invalid path element {pe!r}")
        return pe[:2] + _json_compact(value)
    if pe.startswith(("f:", "i:")):
        return pe
    raise _DecodeError(f"invalid path element {pe!r}")


def _item_pe(list_node: Node, item: Any) -> str:
    """The path element of a list item: ``k:{...}`` by key fields or ``v:<json>``."""
    if list_node.list_type == "map":
        if item is None:
            raise _TypeError("associative list with keys may not have a null element")
        if not isinstance(item, dict):
            raise _TypeError("associative list with keys may not have non-map elements")
        key: dict[str, Any] = {}
        for name in list_node.keys:
            if name in item:
                key[name] = item[name]
            elif name in list_node.key_defaults:
                key[name] = list_node.key_defaults[name]
            else:
                raise _TypeError(
                    "associative list with keys has an element that omits key field "
                    f'"{name}" (and doesn\'t have default value)'
                )
        return "k:" + _json_compact(key)
    if isinstance(item, dict):
        raise _TypeError("associative list without keys has an element that's a map type")
    if isinstance(item, list):
        raise _TypeError("not supported: associative list with lists as elements")
    if item is None:
        raise _TypeError("associative list without keys has an element that's an explicit null")
    return "v:" + _json_compact(item)


def _value_string(value: Any) -> str:
    """structured-merge-diff's value.ToString."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, list):
        return "[" + ",".join(_value_string(v) for v in value) + "]"
    if isinstance(value, dict):
        return "".join(f"{k}={_value_string(v)}" for k, v in value.items())
    return str(_go_numbers(value))


@functools.lru_cache(maxsize=16384)
def _pe_string(pe: str) -> str:
    """A path element as it prints in a conflict: ``.f``, ``[k=v]``, ``[=v]``, ``[i]``."""
    if pe.startswith("f:"):
        return "." + pe[2:]
    if pe.startswith("k:"):
        fields = json.loads(pe[2:])
        return "[" + ",".join(f"{k}={_value_string(v)}" for k, v in fields.items()) + "]"
    if pe.startswith("v:"):
        return "[=" + _value_string(json.loads(pe[2:])) + "]"
    return "[" + pe[2:] + "]"


def _path_string(path: Iterable[str]) -> str:
    return "".join(_pe_string(pe) for pe in path)


_PE_RANK: Final = {"f": 0, "k": 1, "v": 2, "i": 3}


@functools.lru_cache(maxsize=16384)
def _pe_sort_key(pe: str) -> tuple[Any, ...]:
    """PathElement.Compare: fields, then keys, then values, then indexes."""
    rank = _PE_RANK.get(pe[0], 4)
    if rank == 1:
        fields = json.loads(pe[2:])
        return (rank, len(fields), tuple((k, _value_sort_key(v)) for k, v in fields.items()))
    if rank == 2:
        return (rank, _value_sort_key(json.loads(pe[2:])))
    if rank == 3:
        return (rank, int(pe[2:]) if pe[2:].isdigit() else 0)
    return (rank, pe[2:])


def _value_sort_key(value: Any) -> tuple[Any, ...]:
    """value.Compare's order, close enough: null, numbers, strings, booleans, the rest."""
    if value is None:
        return (0,)
    if isinstance(value, bool):
        return (3, value)
    if isinstance(value, int | float):
        return (1, value)
    if isinstance(value, str):
        return (2, value)
    return (4, json.dumps(value, sort_keys=True))


# --- field sets -----------------------------------------------------------------------------


# Set operations take and return children maps. A node passed as a children map keeps its
# "." key, which every operation skips; only _make decides whether a node has one.


def _is_member(node: dict[str, Any]) -> bool:
    return not node or "." in node


def _has_kids(fields: FieldSet) -> bool:
    return bool(fields) and (len(fields) > 1 or "." not in fields)


def _make(member: bool, kids: FieldSet) -> dict[str, Any] | None:
    """The node of a path: owned itself or not, with these children (None if empty)."""
    if not _has_kids(kids):
        return {} if member else None
    if member == ("." in kids):
        return kids
    if member:
        out: dict[str, Any] = {".": {}}
        out.update(kids)
        return out
    return {k: v for k, v in kids.items() if k != "."}


def _union(a: FieldSet, b: FieldSet) -> FieldSet:
    if not _has_kids(a) or a is b:
        return b
    if not _has_kids(b):
        return a
    out = {k: v for k, v in a.items() if k != "."}
    for pe, nb in b.items():
        if pe == ".":
            continue
        na = out.get(pe)
        if na is None:
            out[pe] = nb
        elif na is not nb:
            node = _make(_is_member(na) or _is_member(nb), _union(na, nb))
            assert node is not None
            out[pe] = node
    return out


def _difference(a: FieldSet, b: FieldSet) -> FieldSet:
    """Paths of ``a`` not in ``b`` (the children of a removed path stay)."""
    if not _has_kids(a) or not _has_kids(b):
        return a
    out: FieldSet = {}
    changed = False
    for pe, na in a.items():
        if pe == ".":
            continue
        nb = b.get(pe)
        if nb is None or pe == ".":
            out[pe] = na
            continue
        node = _make(_is_member(na) and not _is_member(nb), _difference(na, nb))
        if node is not na:
            changed = True
        if node is not None:
            out[pe] = node
    return out if changed else a


def _recursive_difference(a: FieldSet, b: FieldSet) -> FieldSet:
    """Paths of ``a`` neither in ``b`` nor under a path of ``b``."""
    if not _has_kids(a) or not _has_kids(b):
        return a
    out: FieldSet = {}
    for pe, na in a.items():
        if pe == ".":
            continue
        nb = b.get(pe)
        if nb is None:
            out[pe] = na
            continue
        if _is_member(nb):
            continue
        node = _make(_is_member(na), _recursive_difference(na, nb))
        if node is not None:
            out[pe] = node
    return out


def _intersection(a: FieldSet, b: FieldSet) -> FieldSet:
    if not _has_kids(a) or not _has_kids(b):
        return {}
    if len(b) < len(a):
        a, b = b, a
    out: FieldSet = {}
    for pe, na in a.items():
        if pe == ".":
            continue
        nb = b.get(pe)
        if nb is None:
            continue
        node = _make(_is_member(na) and _is_member(nb), _intersection(na, nb))
        if node is not None:
            out[pe] = node
    return out


def _paths(fields: FieldSet, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every owned path, in structured-merge-diff's iteration order."""
    out: list[tuple[str, ...]] = []
    ordered = sorted((pe for pe in fields if pe != "."), key=_pe_sort_key)
    out.extend((*prefix, pe) for pe in ordered if _is_member(fields[pe]))
    for pe in ordered:
        if _has_kids(fields[pe]):
            out.extend(_paths(fields[pe], (*prefix, pe)))
    return out


# Stored entries mostly come back unchanged on the next write: parsing and serializing
# them is the bulk of the work, so both are cached (sets are immutable, so shareable).
_CACHE_SIZE: Final = 4096
_parsed: dict[bytes, FieldSet] = {}
_serialized: dict[bytes, bytes] = {}


def _remember(cache: dict[Any, Any], key: Any, value: Any) -> None:
    if len(cache) >= _CACHE_SIZE:
        cache.pop(next(iter(cache)))
    cache[key] = value


def _parse_fields(raw: Any) -> FieldSet:
    """FieldsToSet: a ``fieldsV1`` object as a field set (path elements canonical)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _DecodeError("fieldsV1 must be an object")
    try:
        key = orjson.dumps(raw)
    except TypeError as exc:
        raise _DecodeError(f"fieldsV1 is not JSON: {exc}") from exc
    cached = _parsed.get(key)
    if cached is not None:
        return cached
    fields = _parse_children(raw)
    _remember(_parsed, key, fields)
    return fields


def _parse_children(raw: dict[str, Any]) -> FieldSet:
    out: FieldSet = {}
    for pe, sub in raw.items():
        if pe == ".":
            continue
        if not isinstance(sub, dict):
            raise _DecodeError(f"fieldsV1 entry {pe!r} is not an object")
        node = _make(not sub or "." in sub, _parse_children(sub) if sub else {})
        if node is not None:
            out[_canonical_pe(pe)] = node
    return out


def _serialize(fields: FieldSet) -> dict[str, Any]:
    """SetToFields: a fresh ``fieldsV1`` object, ``"."`` first, path elements in order."""
    key = orjson.dumps(fields)
    cached = _serialized.get(key)
    if cached is not None:
        loaded: dict[str, Any] = orjson.loads(cached)
        return loaded
    out = _serialize_children(fields)
    _remember(_serialized, key, orjson.dumps(out))
    return out


def _serialize_children(fields: FieldSet) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pe in sorted((pe for pe in fields if pe != "."), key=_pe_sort_key):
        node = fields[pe]
        if not node:
            out[pe] = {}
            continue
        sub: dict[str, Any] = {".": {}} if "." in node else {}
        sub.update(_serialize_children(node))
        out[pe] = sub
    return out


def _field_path_set(dotted: str) -> FieldSet:
    """The set holding one ``a.b.c`` path of named fields."""
    node: dict[str, Any] = {}
    for name in reversed(dotted.split(".")):
        node = {"f:" + name: node}
    return node


_STRIP: Final[FieldSet] = {
    "f:apiVersion": {},
    "f:kind": {},
    "f:metadata": {
        ".": {},
        "f:name": {},
        "f:namespace": {},
        "f:creationTimestamp": {},
        "f:selfLink": {},
        "f:uid": {},
        "f:clusterName": {},
        "f:generation": {},
        "f:managedFields": {},
        "f:resourceVersion": {},
    },
}
"""stripMetaManager: paths never owned by anyone."""


# --- typed walks ----------------------------------------------------------------------------

_MISSING: Final[Any] = object()
_DROP: Final[Any] = object()
_ATOMIC_LIST: Final = Node("list")


def _object_node(node: Node) -> Node:
    return node if node.kind in ("struct", "map") else DEDUCED


def _list_node(node: Node) -> Node:
    return node if node.kind == "list" else _ATOMIC_LIST


def _child_type(node: Node, pe: str) -> Node:
    if pe[0] == "f":
        return _object_node(node).child(pe[2:])
    return node.elem if node.kind == "list" else DEDUCED


def _same(a: Any, b: Any) -> bool:
    """Whether two JSON values are equal (fast for the large, usually equal, subtrees)."""
    if a is b:
        return True
    if a != b:
        return False
    # Python's == takes True for 1 and 1 for 1.0: equal encodings rule that out. Key order
    # may differ between equal objects, which only sends the caller down the slow path.
    try:
        return orjson.dumps(a) == orjson.dumps(b)
    except TypeError:
        return json_equal(a, b)


def _to_field_set(obj: dict[str, Any], root: Node, *, strict: bool) -> FieldSet:
    """ToFieldSet: every field the object sets, as an applier would own it."""
    return _fs_object(obj, _object_node(root), strict=strict)


def _fs_object(value: dict[str, Any], node: Node, *, strict: bool) -> FieldSet:
    out: FieldSet = {}
    for key, sub in value.items():
        pe = "f:" + key
        try:
            kids, leaf = _fs_value(sub, node.child(key), strict=strict)
        except _TypeError as exc:
            exc.path.insert(0, pe)
            raise
        member = (
            leaf or sub is None or (isinstance(sub, dict) and not sub) or not node.is_named(key)
        )
        made = _make(member, kids)
        if made is not None:
            out[pe] = made
    return out


def _fs_value(value: Any, node: Node, *, strict: bool) -> tuple[FieldSet, bool]:
    """(owned children, whether the value is owned whole as a leaf)."""
    if isinstance(value, dict):
        obj = _object_node(node)
        if obj.atomic:
            return {}, True
        return _fs_object(value, obj, strict=strict), False
    if isinstance(value, list):
        lst = _list_node(node)
        if lst.list_type == "atomic":
            return {}, True
        out: FieldSet = {}
        for item in value:
            pe = _item_pe(lst, item)
            if pe in out:
                if strict:
                    raise _TypeError(f"duplicate entries for key {_pe_string(pe)}")
                continue
            try:
                kids, _ = _fs_value(item, lst.elem, strict=strict)
            except _TypeError as exc:
                exc.path.insert(0, pe)
                raise
            made = _make(True, kids)
            assert made is not None
            out[pe] = made
        return out, False
    return {}, True


class _Diff:
    """Typed comparison of two objects: added, modified and removed field sets."""

    __slots__ = ("added", "modified", "removed")

    def __init__(self) -> None:
        self.added: FieldSet = {}
        self.modified: FieldSet = {}
        self.removed: FieldSet = {}

    def exclude(self, ignored: FieldSet) -> None:
        if ignored:
            self.added = _recursive_difference(self.added, ignored)
            self.modified = _recursive_difference(self.modified, ignored)
            self.removed = _recursive_difference(self.removed, ignored)


def _compare(old: dict[str, Any], new: dict[str, Any], root: Node) -> _Diff:
    diff = _Diff()
    _cmp_object(old, new, _object_node(root), diff)
    return diff


def _cmp_object(
    old: dict[str, Any] | None, new: dict[str, Any] | None, node: Node, diff: _Diff
) -> None:
    if old:
        for key, value in old.items():
            other = new.get(key, _MISSING) if new else _MISSING
            kind = type(value)
            if kind is type(other) and kind in _SCALARS and value == other:
                continue  # the usual case, settled without the general walk
            _cmp(value, other, node.child(key), "f:" + key, diff)
    if new:
        for key, value in new.items():
            if not old or key not in old:
                _cmp(_MISSING, value, node.child(key), "f:" + key, diff)


def _fits(value: Any, kind: type) -> bool:
    return value is _MISSING or value is None or isinstance(value, kind)


def _cmp(old: Any, new: Any, node: Node, pe: str, diff: _Diff) -> None:  # noqa: PLR0911 - structured-merge-diff's compare, one return per node kind
    """Compare one field or item, recording into ``diff`` (the parent's sets) under ``pe``.

    A null counts as an empty value of the other side's shape, but as present: only a
    missing value makes a map or list "added" or "removed" as a whole.
    """
    sample = new if new is not _MISSING and new is not None else old
    if isinstance(sample, dict):
        if not (_fits(old, dict) and _fits(new, dict)):
            diff.modified[pe] = {}
            return
        obj = _object_node(node)
        old_map = old if isinstance(old, dict) else None
        new_map = new if isinstance(new, dict) else None
        if obj.atomic or (not old_map and not new_map):
            _cmp_leaf(old, new, pe, diff)
            return
        if old_map is not None and new_map is not None and _same(old_map, new_map):
            return
        kids = _Diff()
        _cmp_object(old_map, new_map, obj, kids)
    elif isinstance(sample, list):
        if not (_fits(old, list) and _fits(new, list)):
            diff.modified[pe] = {}
            return
        lst = _list_node(node)
        old_list = old if isinstance(old, list) else None
        new_list = new if isinstance(new, list) else None
        if lst.list_type == "atomic" or (not old_list and not new_list):
            _cmp_leaf(old, new, pe, diff)
            return
        if old_list is not None and new_list is not None and _same(old_list, new_list):
            return
        kids = _Diff()
        _cmp_items(old_list or [], new_list or [], lst, kids)
    else:
        _cmp_leaf(old, new, pe, diff)
        return
    _attach(diff.added, pe, kids.added, member=old is _MISSING)
    _attach(diff.modified, pe, kids.modified, member=False)
    _attach(diff.removed, pe, kids.removed, member=new is _MISSING and old is not _MISSING)


def _attach(parent: FieldSet, pe: str, kids: FieldSet, *, member: bool) -> None:
    node = _make(member, kids)
    if node is not None:
        parent[pe] = node


def _cmp_leaf(old: Any, new: Any, pe: str, diff: _Diff) -> None:
    if old is _MISSING:
        diff.added[pe] = {}
    elif new is _MISSING:
        diff.removed[pe] = {}
    elif type(old) is type(new) and type(old) in _SCALARS:
        # Two strings, integers, floats or booleans: equal as JSON exactly when equal.
        if old != new:
            diff.modified[pe] = {}
    elif old is not new and not json_equal(old, new):
        diff.modified[pe] = {}


_SCALARS: Final = frozenset({str, int, float, bool})


def _index_items(items: list[Any], lst: Node) -> dict[str, Any]:
    """Items by path element; later duplicates are ignored, as kube-apiserver allows."""
    out: dict[str, Any] = {}
    for item in items:
        pe = _item_pe(lst, item)
        if pe not in out:
            out[pe] = item
    return out


def _cmp_items(old: list[Any], new: list[Any], lst: Node, diff: _Diff) -> None:
    old_items = _index_items(old, lst)
    new_items = _index_items(new, lst)
    for pe, value in new_items.items():
        _cmp(old_items.get(pe, _MISSING), value, lst.elem, pe, diff)
    for pe, value in old_items.items():
        if pe not in new_items:
            _cmp(value, _MISSING, lst.elem, pe, diff)


def _merge(live: Any, config: Any, node: Node) -> Any:
    """Merge an applied value into the live one (structured-merge-diff, keep-RHS rule)."""
    if live is _MISSING or live is None or config is None:
        return _without_nulls(config)
    if isinstance(live, dict) and isinstance(config, dict):
        obj = _object_node(node)
        if obj.atomic or (not live and not config):
            return _without_nulls(config)
        return _merge_object(live, config, obj)
    if isinstance(live, list) and isinstance(config, list):
        lst = _list_node(node)
        if lst.list_type == "atomic" or (not live and not config):
            return _without_nulls(config)
        return _merge_items(live, config, lst)
    return _without_nulls(config)


def _merge_object(live: dict[str, Any], config: dict[str, Any], node: Node) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in live.items():
        if key in config:
            merged = _merge(value, config[key], node.child(key))
            if merged is not None:
                out[key] = merged
        else:
            out[key] = value
    for key, value in config.items():
        if key not in live and value is not None:
            out[key] = _without_nulls(value)
    return out


def _without_nulls(value: Any) -> Any:
    """An applied value as stored: explicit nulls mean "absent" to the typed object."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _merge_items(live: list[Any], config: list[Any], lst: Node) -> list[Any]:
    """Merge associative lists item by item, in structured-merge-diff's order."""
    live_order = list(_index_items(live, lst).items())
    live_items = dict(live_order)
    config_order = list(_index_items(config, lst).items())
    config_items = dict(config_order)
    shared = [pe for pe, _ in config_order if pe in live_items]
    shared_index = 0
    next_shared: str | None = shared[0] if shared else None
    out: list[Any] = []
    li = ri = 0
    while li < len(live_order) or ri < len(config_order):
        if li < len(live_order) and ri < len(config_order):
            pe = live_order[li][0]
            if pe == config_order[ri][0]:
                out.append(_merge(live_items[pe], config_items[pe], lst.elem))
                li += 1
                ri += 1
                shared_index += 1
                next_shared = shared[shared_index] if shared_index < len(shared) else None
                continue
            if pe in config_items and next_shared is not None and next_shared != pe:
                # A shared item, but not the one wanted in this round.
                li += 1
                continue
        if li < len(live_order):
            pe = live_order[li][0]
            if pe not in config_items:
                out.append(live_items[pe])
                li += 1
                continue
            if ri >= len(config_order):
                # Already merged in config order.
                li += 1
                continue
        if ri < len(config_order):
            pe = config_order[ri][0]
            out.append(_merge(live_items.get(pe, _MISSING), config_items[pe], lst.elem))
            ri += 1
            if next_shared is not None and next_shared == pe:
                shared_index += 1
                next_shared = shared[shared_index] if shared_index < len(shared) else None
    return out


def _remove(value: Any, fields: FieldSet, node: Node) -> Any:  # noqa: PLR0912 - structured-merge-diff's remove, one branch per node and list type
    """RemoveItems: ``value`` without the owned paths in ``fields`` (``_DROP`` if emptied)."""
    if not _has_kids(fields):
        return value
    if isinstance(value, dict):
        obj = _object_node(node)
        if obj.atomic or not value:
            return value
        out: dict[str, Any] = {}
        for key, sub in value.items():
            entry = fields.get("f:" + key)
            if entry is None:
                out[key] = sub
                continue
            if _is_member(entry):
                continue
            kept = _remove(sub, entry, obj.child(key))
            if kept is not _DROP:
                out[key] = kept
        return out if out else _DROP
    if isinstance(value, list):
        lst = _list_node(node)
        if lst.list_type == "atomic" or not value:
            return value
        items: list[Any] = []
        for item in value:
            try:
                pe = _item_pe(lst, item)
            except _TypeError:
                items.append(item)
                continue
            entry = fields.get(pe)
            if entry is None:
                items.append(item)
                continue
            if _is_member(entry):
                continue
            kept = _remove(item, entry, lst.elem)
            items.append({} if kept is _DROP else kept)
        return items if items else _DROP
    return value


def _remove_from_object(obj: dict[str, Any], fields: FieldSet, root: Node) -> dict[str, Any]:
    kept = _remove(obj, fields, root)
    return {} if kept is _DROP else kept


def _ensure_named(fields: FieldSet, node: Node) -> FieldSet:
    """EnsureNamedFieldsAreMembers: struct fields with owned children are owned too."""
    if not fields:
        return fields
    out: FieldSet = {}
    for pe, entry in fields.items():
        if pe == ".":
            continue
        if not _has_kids(entry):
            out[pe] = entry
            continue
        named = pe[0] == "f" and node.kind != "list" and _object_node(node).is_named(pe[2:])
        made = _make(_is_member(entry) or named, _ensure_named(entry, _child_type(node, pe)))
        assert made is not None
        out[pe] = made
    return out


# --- the updater ----------------------------------------------------------------------------


def _root_type(group: str, kind: str, schema: dict[str, Any] | None) -> tuple[Node, bool]:
    """(type of the kind, whether it is a built-in kind)."""
    if schema is not None:
        return schema_root(schema), False
    if is_builtin_group(group):
        return builtin_root(group, kind), True
    return schema_root(_UNTYPED_SCHEMA), False


_UNTYPED_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "x-kubernetes-preserve-unknown-fields": True,
}


@functools.lru_cache(maxsize=64)
def _reset_set(reset_fields: tuple[str, ...]) -> FieldSet:
    """The field set of dotted paths (sets are never mutated, so one can be shared)."""
    out: FieldSet = {}
    for dotted in reset_fields:
        out = _union(out, _field_path_set(dotted))
    return out


def _update_others(
    old: dict[str, Any],
    new: dict[str, Any],
    managed: dict[_Id, _Entry],
    workflow: _Id,
    *,
    root: Node,
    ignored: FieldSet,
    force: bool,
) -> _Diff:
    """Updater.update: take changed fields from, and drop removed ones for, other managers."""
    diff = _compare(old, new, root)
    diff.exclude(ignored)
    changed = _union(diff.modified, diff.added)
    conflicts: dict[_Id, FieldSet] = {}
    for ident, entry in managed.items():
        if ident == workflow:
            continue
        overlap = _intersection(entry.fields, changed)
        if overlap:
            conflicts[ident] = overlap
    if conflicts and not force:
        raise ApplyConflict(_conflicts(conflicts, managed))
    for ident, entry in list(managed.items()):
        if ident == workflow:
            continue
        fields = entry.fields
        if ident in conflicts:
            fields = _difference(fields, conflicts[ident])
        if diff.removed:
            fields = _difference(fields, diff.removed)
        if fields:
            entry.fields = fields
        else:
            del managed[ident]
    return diff


def _conflicts(conflicts: dict[_Id, FieldSet], managed: dict[_Id, _Entry]) -> list[Conflict]:
    out: list[Conflict] = []
    for ident in sorted(conflicts, key=_identifier_json):
        entry = managed[ident]
        out.extend(
            Conflict(
                manager=ident[0],
                path=_path_string(path),
                operation="Apply" if entry.applied else "Update",
                api_version=entry.api_version,
                subresource=ident[3],
            )
            for path in _paths(conflicts[ident])
        )
    return out


def _without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """A shallow copy of ``obj`` whose metadata has no managedFields."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    out = dict(obj)
    out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return out


def _set_managed_fields(obj: dict[str, Any], managed: dict[_Id, _Entry]) -> None:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    if managed:
        meta["managedFields"] = _encode(managed)
    else:
        meta.pop("managedFields", None)


def _live_managed_fields(live: dict[str, Any] | None) -> Any:
    """The stored object's raw managedFields (None without a stored object)."""
    if live is not None and isinstance(live.get("metadata"), dict):
        return live["metadata"].get("managedFields")
    return None


def _managed_for_update(requested: Any, live_fields: Any, subresource: str) -> dict[_Id, _Entry]:
    """decodeLiveOrNew: the entries an update starts from.

    The request's managedFields win unless the write is to a subresource; ``[]`` or
    ``[{}]`` resets them; an empty or undecodable request keeps the live entries.
    """
    try:
        if subresource:
            return _decode(live_fields)
        if _is_reset(requested):
            return {}
        try:
            managed = _decode(requested)
        except _DecodeError:
            managed = {}
        return managed or _decode(live_fields)
    except _DecodeError:
        return {}


def track_update(
    old: dict[str, Any] | None,
    new: dict[str, Any],
    *,
    manager: str,
    operation: str = "Update",
    subresource: str = "",
    api_version: str,
    now: str,
    schema: dict[str, Any] | None = None,
    group: str,
    kind: str,
    reset_fields: Sequence[str],
) -> None:
    """Set ``new["metadata"]["managedFields"]`` for a create, update or patch.

    Args:
        old: the stored object before the write; None for a create (the kind's Go zero
            value is compared with then).
        new: the object about to be stored; its managedFields are read (a client may
            set them; ``[]`` or ``[{}]`` clears them) and replaced, in place.
        manager: the field manager (the request's ``fieldManager``, or what the server
            derives from the User-Agent); empty means ``unknown``.
        operation: the entry's operation, ``"Update"`` for every non-apply write.
        subresource: ``"status"`` for writes through the status subresource; the
            request's managedFields are then ignored.
        api_version: the apiVersion the request was made with (``"apps/v1"``).
        now: the entry's time, RFC 3339 in UTC with seconds (``2024-05-01T10:00:00Z``).
        schema: the CRD version's ``openAPIV3Schema``; None for a built-in kind.
        group: the kind's API group (``""`` for the core group).
        kind: the kind.
        reset_fields: dotted paths the endpoint ignores, owned by no one (the kind's
            strategy's ``GetResetFields``: ``status`` on the main endpoint of a kind with a
            status subresource, ``spec`` on the status subresource).
    """
    meta = new.get("metadata")
    if not isinstance(meta, dict):
        return
    live_fields = _live_managed_fields(old)
    managed = _managed_for_update(meta.pop("managedFields", None), live_fields, subresource)
    root, builtin = _root_type(group, kind, schema)
    before = (
        _without_managed_fields(old)
        if old is not None
        else empty_object(group, kind, builtin=builtin)
    )
    ignored = _reset_set(tuple(reset_fields))
    try:
        diff = _update_others(
            before, new, managed, _CURRENT_OPERATION, root=root, ignored=ignored, force=True
        )
    except _TypeError:
        # UpdateNoErrors: a value that does not fit its type keeps the live entries.
        if live_fields is not None:
            meta["managedFields"] = live_fields
        return
    changed = _difference(_union(diff.modified, diff.added), diff.removed)
    changed = _difference(_recursive_difference(changed, ignored), _STRIP)
    if changed:
        ident = _identifier(manager or "unknown", operation, api_version, subresource)
        previous = managed.get(ident)
        managed[ident] = _Entry(
            fields=_union(changed, previous.fields) if previous is not None else changed,
            api_version=api_version,
            applied=operation == "Apply",
            time=now,
        )
    _cap_update_managers(managed)
    _set_managed_fields(new, managed)


def _gvk_string(api_version: Any, kind: Any) -> str:
    """schema.GroupVersionKind.String(): ``apps/v1, Kind=Deployment``, ``/v1, Kind=Pod``."""
    text = api_version if isinstance(api_version, str) else ""
    group, _, version = text.rpartition("/")
    return f"{group}/{version}, Kind={kind if isinstance(kind, str) else ''}"


def _check_apply_patch(applied: Any, api_version: str, kind: str) -> None:
    """Reject an apply patch that is no object, of another type, or sets managedFields."""
    if not isinstance(applied, dict):
        raise PatchError("apply patch must be an object", code=400, reason="BadRequest")
    if applied.get("apiVersion") != api_version or applied.get("kind") != kind:
        raise PatchError(
            f"invalid object type: {_gvk_string(applied.get('apiVersion'), applied.get('kind'))}",
            code=400,
            reason="BadRequest",
        )
    applied_meta = applied.get("metadata")
    if isinstance(applied_meta, dict) and applied_meta.get("managedFields") is not None:
        raise PatchError("metadata.managedFields must be nil", code=400, reason="BadRequest")


def _apply_fields(
    before: dict[str, Any],
    config: dict[str, Any],
    config_fields: FieldSet,
    managed: dict[_Id, _Entry],
    ident: _Id,
    *,
    api_version: str,
    root: Node,
    ignored: FieldSet,
    force: bool,
) -> dict[str, Any]:
    """Updater.Apply: merge ``config`` into ``before`` and record ``ident``'s fields.

    Fields the applier owned last time and no longer applies are pruned; other managers
    lose the fields the apply changes (or conflict, without ``force``). ``managed`` is
    updated in place; the merged object is returned.
    """
    merged: dict[str, Any] = _merge(before, config, root)
    last = managed.get(ident)
    managed[ident] = _Entry(
        fields=config_fields,
        api_version=api_version,
        applied=True,
        time=last.time if last is not None else None,
    )
    if last is not None and last.fields:
        merged = _prune(merged, managed, last.fields, root)
    _update_others(before, merged, managed, ident, root=root, ignored=ignored, force=force)
    return merged


def _applied_fields(config: dict[str, Any], root: Node, ignored: FieldSet, gvk: str) -> FieldSet:
    """The fields an apply configuration sets, less those the endpoint ignores."""
    try:
        config_fields = _to_field_set(config, root, strict=True)
    except _TypeError as exc:
        raise PatchError(
            f"failed to create typed patch object ({gvk}): {exc.describe()}", code=500, reason=""
        ) from exc
    return _recursive_difference(config_fields, ignored)


def _settle_apply_entry(managed: dict[_Id, _Entry], ident: _Id, *, changed: bool, now: str) -> None:
    """The applier's entry: stamped when the apply changed the object, dropped when empty."""
    entry = managed[ident]
    entry.fields = _difference(entry.fields, _STRIP)
    if changed:
        entry.time = now
    if not entry.fields:
        del managed[ident]


def server_side_apply(
    live: dict[str, Any] | None,
    applied: dict[str, Any],
    *,
    manager: str,
    force: bool,
    api_version: str,
    group: str,
    kind: str,
    now: str,
    schema: dict[str, Any] | None = None,
    subresource: str = "",
    reset_fields: Sequence[str],
) -> dict[str, Any]:
    """Apply a configuration the way kube-apiserver's field manager does.

    Args:
        live: the stored object, or None when the apply creates it.
        applied: the decoded apply patch: a (partial) object with apiVersion and kind.
        manager: the request's ``fieldManager``.
        force: take conflicting fields from their managers instead of failing.
        api_version: the apiVersion of the endpoint (``"apps/v1"``).
        group: the kind's API group (``""`` for the core group).
        kind: the kind.
        now: the entry's time, RFC 3339 in UTC with seconds.
        schema: the CRD version's ``openAPIV3Schema``; None for a built-in kind.
        subresource: ``"status"`` when applying through the status subresource.
        reset_fields: as for :func:`track_update`.

    Returns:
        The new object with its managedFields; the live object itself (with updated
        managedFields) when the apply changes no field. The caller still defaults,
        validates and stores it, and resets what the endpoint ignores (status on the
        main endpoint).

    Raises:
        ApplyConflict: other managers own fields this apply changes, and not ``force``.
        PatchError: 400 for a patch of another apiVersion/kind or one that sets
            managedFields; 500 for a patch that does not fit the kind's type (a list item
            without its key fields, duplicate keys).
    """
    _check_apply_patch(applied, api_version, kind)
    root, _ = _root_type(group, kind, schema)
    gvk = _gvk_string(api_version, kind)
    try:
        managed = _decode(_live_managed_fields(live))
    except _DecodeError as exc:
        raise PatchError(f"failed to decode managed fields: {exc}", code=500, reason="") from exc
    before = _without_managed_fields(live) if live is not None else {}
    config = _without_managed_fields(applied)
    ignored = _reset_set(tuple(reset_fields))
    config_fields = _applied_fields(config, root, ignored, gvk)
    ident = _identifier(manager or "unknown", "Apply", api_version, subresource)
    try:
        merged = _apply_fields(
            before,
            config,
            config_fields,
            managed,
            ident,
            api_version=api_version,
            root=root,
            ignored=ignored,
            force=force,
        )
    except _TypeError as exc:
        raise PatchError(
            f"failed to create typed live object ({gvk}): {exc.describe()}", code=500, reason=""
        ) from exc
    changed = not _same(before, merged)
    _settle_apply_entry(managed, ident, changed=changed, now=now)
    result = copy.deepcopy(merged if changed else before)
    _set_managed_fields(result, managed)
    return result


def _prune(
    merged: dict[str, Any], managed: dict[_Id, _Entry], last: FieldSet, root: Node
) -> dict[str, Any]:
    """Updater.prune: drop what the applier owned last time and nobody owns now."""

    def named(fields: FieldSet) -> FieldSet:
        return _ensure_named(fields, root)

    pruned = _remove_from_object(merged, named(last), root)
    owned: FieldSet = {}
    for entry in managed.values():
        owned = _union(owned, entry.fields)
    merged_set = named(_to_field_set(merged, root, strict=False))
    pruned_set = named(_to_field_set(pruned, root, strict=False))
    pruned = _remove_from_object(
        merged, _difference(merged_set, _union(pruned_set, named(owned))), root
    )
    pruned_set = named(_to_field_set(pruned, root, strict=False))
    return _remove_from_object(
        merged, _intersection(_difference(merged_set, pruned_set), named(last)), root
    )
