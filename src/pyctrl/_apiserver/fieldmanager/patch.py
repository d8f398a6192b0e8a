"""The three PATCH body formats of kube-apiserver, applied to plain JSON objects.

A PATCH request names its format with its Content-Type, and the API server turns the
stored object plus the body into the new object:

- ``application/merge-patch+json``: a JSON merge patch (RFC 7386). Objects merge key by
  key, ``null`` deletes a key, anything else (lists included) replaces. kube-apiserver
  uses evanphx/json-patch's ``MergePatch``; :func:`json_merge_patch` does the same.
- ``application/json-patch+json``: a JSON patch (RFC 6902), a list of ``add``,
  ``remove``, ``replace``, ``move``, ``copy`` and ``test`` operations applied in order
  (:func:`json_patch`, built on the ``jsonpatch`` library). A body that is not a list of
  operation objects is a 400 BadRequest; an operation that fails (a ``test`` that does
  not hold, a path that does not exist) is a 422 Invalid whose message is
  kube-apiserver's generic "the server rejected our request due to an error in our
  request". More than 10,000 operations is a 413.
- ``application/strategic-merge-patch+json``: a strategic merge patch
  (:func:`strategic_merge_patch`), a JSON merge patch that knows the Go types: lists
  tagged ``patchStrategy:"merge"`` merge their items by ``patchMergeKey``
  (``containers`` by ``name``, ``ports`` by ``containerPort``) or, for lists of strings
  such as ``finalizers``, as a set; other lists are replaced. Directives steer it:

  - ``"$patch": "replace"`` in an object replaces the object instead of merging it; as
    an item of a merging list it makes the list's other items replace the list;
  - ``"$patch": "delete"`` in an object empties it; as an item of a merging list it
    deletes the item with that merge key;
  - ``"$patch": "merge"`` is rejected, as kube-apiserver rejects it;
  - ``"$retainKeys": [...]`` clears every key of the object not listed, then merges;
  - ``"$deleteFromPrimitiveList/<field>": [...]`` removes values from a merging list
    of scalars;
  - ``"$setElementOrder/<field>": [...]`` orders the merged list (by merge key).

  Only kinds with Go types have the metadata, so the server answers 415 for custom
  resources (:func:`supports_strategic_merge`). This is a port of the apply half of
  k8s.io/apimachinery/pkg/util/strategicpatch, with the merge keys of
  :mod:`pyctrl._apimachinery.merge_keys`.

Every function returns a new object and leaves its arguments untouched. Failures raise
:class:`PatchError` carrying the HTTP status code and Status reason kube-apiserver
answers with.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Final

import jsonpatch
import jsonpointer

from pyctrl._apimachinery.gofmt import go_json_kind, go_kind, go_print
from pyctrl._apimachinery.jsonvalue import deep_equal, json_equal
from pyctrl._apimachinery.merge_keys import (
    BUILTIN_ANY,
    Node,
    builtin_root,
    is_builtin_group,
)

__all__ = [
    "PatchError",
    "copy_json",
    "json_merge_patch",
    "json_patch",
    "strategic_merge_patch",
    "supports_strategic_merge",
]

MAX_JSON_PATCH_OPERATIONS: Final = 10_000
"""kube-apiserver's limit on the operations of one JSON patch (a 413 beyond it)."""

_INVALID_REQUEST: Final = "the server rejected our request due to an error in our request"
_UNSUPPORTED_MEDIA: Final = (
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
)


class PatchError(Exception):
    """A patch that kube-apiserver would refuse, with the status it would answer.

    Attributes:
        message: the Status ``message``.
        code: the HTTP status code: 400 for a malformed body, 422 for a patch that
            does not apply, 413 for too many JSON patch operations, 415 for a
            strategic merge patch of a custom resource, 500 where kube-apiserver fails
            with an error that is not a Status (its reason is then empty).
        reason: the Status ``reason`` ("BadRequest", "Invalid", ...; "" for none).
        detail: what went wrong, for logs, when ``message`` is kube-apiserver's generic
            text (it does not show the detail to the client either).
    """

    def __init__(
        self, message: str, *, code: int = 422, reason: str = "Invalid", detail: str = ""
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.reason = reason
        self.detail = detail or message

    def __str__(self) -> str:
        if self.detail != self.message:
            return f"{self.message} ({self.detail})"
        return self.message


def _invalid(detail: str) -> PatchError:
    """kube-apiserver's NewGenericServerResponse(422, ...): the detail stays server-side."""
    return PatchError(_INVALID_REQUEST, code=422, reason="Invalid", detail=detail)


def _bad_request(message: str) -> PatchError:
    return PatchError(message, code=400, reason="BadRequest")


def _internal(message: str) -> PatchError:
    """An error kube-apiserver returns without a Status: 500 with no reason."""
    return PatchError(message, code=500, reason="")


# --- JSON merge patch (RFC 7386) ------------------------------------------------------------


def json_merge_patch(
    original: dict[str, Any], patch: Any, *, in_place: bool = False
) -> dict[str, Any]:
    """Apply a JSON merge patch (RFC 7386) to ``original``; returns a new object.

    Args:
        original: The object to patch.
        patch: The decoded patch body.
        in_place: Patch ``original`` itself and return it, for callers that pass a
            private copy (the API server's write path), saving a second copy.

    Raises:
        PatchError: 400 for a body that is not a JSON object (``null``, a number, a
            string); 422 for a list body, whose result is not an object.
    """
    if isinstance(patch, dict):
        return _merge_docs(original if in_place else copy_json(original), patch)
    if isinstance(patch, list):
        raise PatchError(
            f"patch: Invalid value: {json.dumps(patch)}: the result of a merge patch whose "
            "body is a list is that list, not an object",
            code=422,
            reason="Invalid",
        )
    raise _bad_request("Invalid JSON Patch")


def _merge_docs(doc: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """evanphx/json-patch mergeDocs: what kube-apiserver runs for merge patches."""
    for key, value in patch.items():
        if value is None:
            doc.pop(key, None)
            continue
        current = doc.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            doc[key] = _merge_docs(current, value)
        elif isinstance(current, dict):
            # A non-object patch value over an object is taken as it is, nulls and all.
            doc[key] = copy_json(value)
        else:
            doc[key] = _prune_nulls(value)
    return doc


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON value (dicts and lists copied, scalars shared).

    Several times faster than ``copy.deepcopy``, which keeps a memo for shared and
    cyclic references that decoded JSON never has.
    """
    kind = type(value)
    if kind is dict:
        return {k: copy_json(v) for k, v in value.items()}
    if kind is list:
        return [copy_json(v) for v in value]
    if kind in _SCALARS:
        return value
    return copy.deepcopy(value)


_SCALARS: Final = frozenset({str, int, float, bool, type(None)})


def _prune_nulls(value: Any) -> Any:
    """Copy of ``value`` without null object members (list items stay, even null)."""
    if isinstance(value, dict):
        return {k: _prune_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_prune_nulls(v) for v in value]
    return value


# --- JSON patch (RFC 6902) ------------------------------------------------------------------

_OPS = frozenset({"add", "remove", "replace", "move", "copy", "test"})


def json_patch(original: dict[str, Any], operations: Any) -> dict[str, Any]:
    """Apply a JSON patch (RFC 6902) to ``original``; returns a new object.

    Raises:
        PatchError: 400 if ``operations`` is not a list of objects; 413 beyond 10,000
            operations; 422 if an operation fails or the result is not an object.
    """
    if not isinstance(operations, list):
        raise _bad_request(
            f"json: cannot unmarshal {go_json_kind(operations)} "
            "into Go value of type jsonpatch.Patch"
        )
    for op in operations:
        if not isinstance(op, dict):
            raise _bad_request(
                f"json: cannot unmarshal {go_json_kind(op)} "
                "into Go value of type jsonpatch.Operation"
            )
    if len(operations) > MAX_JSON_PATCH_OPERATIONS:
        raise PatchError(
            "Request entity too large: The allowed maximum operations in a JSON patch is "
            f"{MAX_JSON_PATCH_OPERATIONS}, got {len(operations)}",
            code=413,
            reason="RequestEntityTooLarge",
        )
    doc: Any = copy_json(original)
    for op in operations:
        doc = _apply_operation(doc, op)
    if not isinstance(doc, dict):
        raise PatchError(
            f"patch: Invalid value: {json.dumps(doc)}: the patched document is not an object",
            code=422,
            reason="Invalid",
        )
    return doc


def _apply_operation(doc: Any, op: dict[str, Any]) -> Any:
    kind = op.get("op")
    if kind not in _OPS:
        raise _invalid(f"Unexpected kind: {kind}: unknown object type")
    path = op.get("path")
    if not isinstance(path, str):
        raise _invalid(f"{kind} operation failed to decode path: operation missing path field")
    if kind in ("add", "replace", "test") and "value" not in op:
        raise _invalid(f"{kind} operation has no value: missing value")
    if kind in ("move", "copy") and not isinstance(op.get("from"), str):
        raise _invalid(f"{kind} operation failed to decode from: operation missing from field")
    if kind == "test":
        _test_operation(doc, path, op["value"])
        return doc
    try:
        return jsonpatch.JsonPatch([copy.deepcopy(op)]).apply(doc, in_place=True)
    except (
        jsonpatch.JsonPatchException,
        jsonpointer.JsonPointerException,
        TypeError,
        KeyError,
        IndexError,
    ) as exc:
        raise _invalid(_operation_failure(kind, op, exc)) from exc


def _operation_failure(kind: str, op: dict[str, Any], exc: Exception) -> str:
    """evanphx/json-patch v4's wording of a failed operation."""
    path = op.get("path")
    if kind in ("move", "copy"):
        return f"{kind} operation does not apply: doc is missing from path: {op.get('from')}"
    if kind == "add":
        return f'add operation does not apply: doc is missing path: "{path}": missing value'
    if kind == "remove":
        return f'remove operation does not apply: doc is missing path: "{path}": missing value'
    if kind == "replace":
        return f"replace operation does not apply: doc is missing path: {path}: missing value"
    return f"{kind} operation failed: {exc}"


def _test_operation(doc: Any, path: str, expected: Any) -> None:
    """RFC 6902 ``test`` with JSON equality (``true`` is not ``1``, unlike Python)."""
    try:
        actual = jsonpointer.resolve_pointer(doc, path)
    except jsonpointer.JsonPointerException as exc:
        if expected is None:
            return
        raise _invalid(
            f"test operation does not apply: is missing path: {path}: missing value"
        ) from exc
    if not json_equal(actual, expected):
        raise _invalid(f"testing value {path} failed: test failed")


# --- strategic merge patch ------------------------------------------------------------------

_DIRECTIVE: Final = "$patch"
_DELETE: Final = "delete"
_REPLACE: Final = "replace"
_MERGE: Final = "merge"
_RETAIN_KEYS: Final = "$retainKeys"
_DELETE_FROM_PRIMITIVE_LIST: Final = "$deleteFromPrimitiveList"
_SET_ELEMENT_ORDER: Final = "$setElementOrder"
_DIRECTIVE_PREFIXES: Final = (_DELETE_FROM_PRIMITIVE_LIST + "/", _SET_ELEMENT_ORDER + "/")

# k8s.io/apimachinery/pkg/util/mergepatch errors; kube-apiserver maps them to statuses.
_ERR_BAD_PRIMITIVE_LIST: Final = "invalid patch format of primitive list"
_ERR_BAD_RETAIN_KEYS: Final = "invalid patch format of retainKeys"
_ERR_BAD_SET_ELEMENT_ORDER: Final = "invalid patch format of setElementOrder list"
_ERR_NO_LIST_OF_LISTS: Final = "lists of lists are not supported"


def supports_strategic_merge(group: str, version: str, kind: str) -> bool:
    """Whether kube-apiserver accepts a strategic merge patch for this kind.

    True for the kinds it serves itself (they have Go types with merge metadata);
    False for custom resources, which get 415 Unsupported Media Type.
    """
    del version, kind  # every kind of a built-in group has Go types
    return is_builtin_group(group)


def strategic_merge_patch(
    original: dict[str, Any], patch: Any, *, group: str, version: str, kind: str
) -> dict[str, Any]:
    """Apply a strategic merge patch to ``original``; returns a new object.

    Raises:
        PatchError: 415 for a kind without Go types (a custom resource); 400 for a body
            that is not an object or a malformed directive; 422 for lists of lists and
            failed ``$retainKeys`` checks; 500 (no reason) for the errors kube-apiserver
            does not map to a Status (a merge-list item without its merge key, an
            unknown or ``merge`` ``$patch`` directive).
    """
    if not supports_strategic_merge(group, version, kind):
        raise PatchError(_UNSUPPORTED_MEDIA, code=415, reason="UnsupportedMediaType")
    if patch is None:
        result: dict[str, Any] = copy_json(original)
        return result
    if not isinstance(patch, dict):
        raise _bad_request(
            f"json: cannot unmarshal {go_json_kind(patch)} into Go value of type "
            "map[string]interface {}"
        )
    try:
        merged = _merge_map(copy_json(original), copy_json(patch), builtin_root(group, kind))
    except _SMPError as exc:
        raise _smp_status(exc.message) from exc
    return merged


class _SMPError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _smp_status(message: str) -> PatchError:
    """kube-apiserver's interpretStrategicMergePatchError."""
    if message in (_ERR_BAD_PRIMITIVE_LIST, _ERR_BAD_RETAIN_KEYS, _ERR_BAD_SET_ELEMENT_ORDER):
        return _bad_request(message)
    if message == _ERR_NO_LIST_OF_LISTS:
        return _invalid(message)
    return _internal(message)


def _err_no_merge_key(item: Any, key: str) -> _SMPError:
    return _SMPError(f"map: {go_print(item)} does not contain declared merge key: {key}")


def _err_bad_patch_type(directive: Any, item: Any) -> _SMPError:
    return _SMPError(f"unknown patch type: {go_print(directive)} in map: {go_print(item)}")


def _lookup(node: Node, key: str) -> tuple[Node, str, str]:
    """(type of field ``key``, its patch strategy without retainKeys, its merge key)."""
    child = node.child(key) if node.kind in ("struct", "map") else BUILTIN_ANY
    strategies = [s for s in child.strategy.split(",") if s and s != "retainKeys"]
    if len(strategies) > 1:
        raise _SMPError(f"unexpected patch strategy: {child.strategy}")
    return child, (strategies[0] if strategies else ""), child.merge_key


def _item_type(list_node: Node) -> Node:
    return list_node.elem if list_node.kind == "list" else BUILTIN_ANY


def _merge_map(original: dict[str, Any], patch: dict[str, Any], node: Node) -> dict[str, Any]:  # noqa: PLR0912 - strategicpatch's mergeMap: one branch per directive and patch strategy
    """mergeMap: merge ``patch`` into ``original`` (both owned here; both may change)."""
    if _DIRECTIVE in patch:
        return _directive_in_map(patch[_DIRECTIVE], patch)
    _apply_retain_keys(original, patch)
    _merge_set_element_order(original, patch, node)
    for patch_key, patch_value in list(patch.items()):
        key = patch_key
        is_delete_list = False
        if patch_key.startswith(_DELETE_FROM_PRIMITIVE_LIST):
            key = _extract_key(patch_key, _DELETE_FROM_PRIMITIVE_LIST)
            is_delete_list = True
        if patch_value is None:
            original.pop(key, None)
            continue
        if key not in original:
            if not is_delete_list:
                _discard_nulls(patch_value)
                value, keep = _remove_directives(patch_value)
                if keep:
                    original[key] = value
            continue
        current = original[key]
        if go_kind(current) != go_kind(patch_value):
            if not is_delete_list:
                _discard_nulls(patch_value)
                value, keep = _remove_directives(patch_value)
                if keep:
                    original[key] = value
                else:
                    del original[key]
            continue
        child, strategy, merge_key = _lookup(node, key)
        if isinstance(current, dict):
            if strategy == _REPLACE:
                original[key] = patch_value
            else:
                original[key] = _merge_map(current, patch_value, child)
        elif isinstance(current, list):
            original[key] = _merge_slice_handler(
                current,
                patch_value,
                item_type=_item_type(child),
                strategy=strategy,
                merge_key=merge_key,
                is_delete_list=is_delete_list,
            )
        else:
            value, keep = _remove_directives(patch_value)
            if keep:
                original[key] = value
            else:
                del original[key]
    return original


def _directive_in_map(directive: Any, patch: dict[str, Any]) -> dict[str, Any]:
    if directive == _REPLACE:
        del patch[_DIRECTIVE]
        return patch
    if directive == _DELETE:
        return {}
    raise _err_bad_patch_type(directive, patch)


def _discard_nulls(value: Any) -> None:
    """discardNullValuesFromPatch: drop null members, in place, at every depth."""
    if isinstance(value, dict):
        for key in [k for k, v in value.items() if v is None]:
            del value[key]
        for v in value.values():
            _discard_nulls(v)
    elif isinstance(value, list):
        for v in value:
            _discard_nulls(v)


def _remove_directives(value: Any) -> tuple[Any, bool]:
    """removeDirectives: a value taken from the patch as-is, without ``$patch`` entries.

    An object carrying ``$patch`` is dropped entirely (second item False), as is any
    other parallel directive key, which Go's decoding of the result would discard.
    """
    if isinstance(value, dict):
        if _DIRECTIVE in value:
            return None, False
        out: dict[str, Any] = {}
        for key, sub in value.items():
            if key == _RETAIN_KEYS or key.startswith(_DIRECTIVE_PREFIXES):
                continue
            sub_value, keep = _remove_directives(sub)
            if keep:
                out[key] = sub_value
        return out, True
    if isinstance(value, list):
        items = []
        for sub in value:
            sub_value, keep = _remove_directives(sub)
            if keep:
                items.append(sub_value)
        return items, True
    return value, True


def _extract_key(key: str, prefix: str) -> str:
    head, sep, rest = key.partition("/")
    if not sep or head != prefix:
        if prefix == _DELETE_FROM_PRIMITIVE_LIST:
            raise _SMPError(_ERR_BAD_PRIMITIVE_LIST)
        raise _SMPError(_ERR_BAD_SET_ELEMENT_ORDER)
    return rest


def _apply_retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    if _RETAIN_KEYS not in patch:
        return
    retain = patch.pop(_RETAIN_KEYS)
    if not isinstance(retain, list):
        raise _SMPError(_ERR_BAD_RETAIN_KEYS)
    keep = {_hashable(v) for v in retain}
    for key, value in patch.items():
        if value is None or key.startswith(_DIRECTIVE_PREFIXES):
            continue
        if key not in keep:
            raise _SMPError(_ERR_BAD_RETAIN_KEYS)
    for key in [k for k in original if k not in keep]:
        del original[key]


def _hashable(value: Any) -> Any:
    return value if isinstance(value, str | int | float | bool) or value is None else repr(value)


def _merge_set_element_order(original: dict[str, Any], patch: dict[str, Any], node: Node) -> None:
    """mergePatchIntoOriginal: merge each list that has a ``$setElementOrder`` directive."""
    for key in [k for k in patch if k.startswith(_SET_ELEMENT_ORDER)]:
        order = patch.pop(key)
        if not isinstance(order, list):
            raise _SMPError(f"expected a slice, but received a {go_kind(order)}")
        field = _extract_key(key, _SET_ELEMENT_ORDER)
        original_list = _optional_list(original, field)
        patch_list = _optional_list(patch, field)
        child, strategy, merge_key = _lookup(node, field)
        _validate_set_element_order(patch_list, order, merge_key)
        backing = _Backing(original_list or [])
        if original_list is not None and patch_list is not None:
            merged = _merge_slice_handler(
                original_list,
                patch_list,
                item_type=_item_type(child),
                strategy=strategy,
                merge_key=merge_key,
                is_delete_list=False,
                backing=backing,
            )
        elif original_list is not None:
            merged = original_list
        elif patch_list is not None:
            merged = _remove_directives(patch_list)[0]
        else:
            continue
        if merge_key:
            patch_items, server_only = _partition_maps(merged, order, merge_key)
        else:
            patch_items, server_only = _partition_primitives(merged, order)
        kind = _slice_element_kind(backing.view, patch_list or [])
        original[field] = _normalize_element_order(
            patch_items,
            server_only,
            patch_order=order,
            server_order=backing.view,
            merge_key=merge_key,
            kind=kind,
        )
        patch.pop(field, None)


def _optional_list(obj: dict[str, Any], key: str) -> list[Any] | None:
    if key not in obj:
        return None
    value = obj[key]
    if not isinstance(value, list):
        raise _SMPError(f"expected a slice, but received a {go_kind(value)}")
    return value


def _validate_set_element_order(patch_list: Any, order: list[Any], merge_key: str) -> None:
    """The patch items must appear in the ``$setElementOrder`` list, in its order."""
    if patch_list is None or not order or not patch_list:
        return
    items = [i for i in patch_list if not (merge_key and _is_delete_item(i))]
    p = s = 0
    while p < len(items) and s < len(order):
        if isinstance(items[p], dict) and _DIRECTIVE in items[p]:
            p += 1
            continue
        if _merge_key_equal(items[p], order[s], merge_key):
            p += 1
        s += 1
    if p < len(items) and s >= len(order):
        raise _SMPError(
            f"the order in patch list:\n{go_print(patch_list)}\n doesn't match "
            f"{_SET_ELEMENT_ORDER} list:\n{go_print(order)}"
        )


def _is_delete_item(item: Any) -> bool:
    if not isinstance(item, dict):
        raise _SMPError(f"expected a map, but received a {go_kind(item)}")
    return item.get(_DIRECTIVE) == _DELETE


def _merge_key_equal(left: Any, right: Any, merge_key: str) -> bool:
    if not merge_key:
        return deep_equal(left, right)
    if not isinstance(left, dict):
        raise _SMPError(f"expected a map, but received a {go_kind(left)}")
    if not isinstance(right, dict):
        raise _SMPError(f"expected a map, but received a {go_kind(right)}")
    if merge_key not in left:
        raise _err_no_merge_key(left, merge_key)
    if merge_key not in right:
        raise _err_no_merge_key(right, merge_key)
    return deep_equal(left[merge_key], right[merge_key])


class _Backing:
    """The backing array of a Go slice, as an older, longer header still sees it.

    mergePatchIntoOriginal keeps the live list's slice header while mergeSlice deletes
    items (shifting the array left in place) and appends new ones (into the freed tail
    until the capacity runs out). The order it then imposes uses that stale view, so
    the result depends on it; this replays the same writes.
    """

    def __init__(self, items: list[Any]) -> None:
        self.view = list(items)
        self.length = len(items)
        self.detached = False

    def delete(self, index: int) -> None:
        if not self.detached:
            self.view[index : self.length - 1] = self.view[index + 1 : self.length]
        self.length -= 1

    def write(self, index: int, value: Any) -> None:
        if not self.detached:
            self.view[index] = value

    def append(self, value: Any) -> None:
        if self.detached or self.length >= len(self.view):
            # The capacity of a decoded list is its length: append reallocates.
            self.detached = True
        else:
            self.view[self.length] = value
        self.length += 1


def _merge_slice_handler(
    original: list[Any],
    patch: list[Any],
    *,
    item_type: Node,
    strategy: str,
    merge_key: str,
    is_delete_list: bool,
    backing: _Backing | None = None,
) -> list[Any]:
    # Delete lists are handled the same way whatever the field's patch strategy is.
    if strategy == _MERGE or is_delete_list:
        return _merge_slice(
            original,
            patch,
            item_type=item_type,
            merge_key=merge_key,
            is_delete_list=is_delete_list,
            backing=backing,
        )
    return patch


def _slice_element_kind(*lists: list[Any]) -> str:
    """sliceElementType: the one element kind of the lists; no lists of lists."""
    kind = ""
    for items in lists:
        for item in items:
            current = go_kind(item)
            if not kind:
                kind = current
                if kind == "slice":
                    raise _SMPError(_ERR_NO_LIST_OF_LISTS)
            elif kind != current:
                raise _SMPError(
                    "list element types are not identical: " + go_print([list(x) for x in lists])
                )
    if not kind:
        raise _SMPError("no elements in any of the given slices")
    return kind


def _merge_slice(
    original: list[Any],
    patch: list[Any],
    *,
    item_type: Node,
    merge_key: str,
    is_delete_list: bool,
    backing: _Backing | None,
) -> list[Any]:
    if not original and not patch:
        return original
    kind = _slice_element_kind(original, patch)
    if kind != "map":
        if is_delete_list:
            return _delete_from_slice(original, patch)
        if patch or backing is None:
            # append(original, patch...) reallocates: the live list is not touched.
            merged = original + patch
            merged = merged[: _deduplicate_scalars(merged)]
        else:
            # append(original) with nothing to add is the live list itself.
            merged = backing.view[: _deduplicate_scalars(backing.view)]
            original = backing.view
    else:
        if not merge_key:
            raise _SMPError(f"cannot merge lists without merge key for {kind}")
        original, patch = _merge_slice_special_elements(original, patch, merge_key, backing)
        merged = _merge_slice_plain_elements(original, patch, merge_key, item_type, backing)
    if merge_key:
        patch_items, server_only = _partition_maps(merged, patch, merge_key)
    else:
        patch_items, server_only = _partition_primitives(merged, patch)
    return _normalize_element_order(
        patch_items,
        server_only,
        patch_order=patch,
        server_order=original,
        merge_key=merge_key,
        kind=kind,
    )


def _merge_slice_special_elements(
    original: list[Any], patch: list[Any], merge_key: str, backing: _Backing | None
) -> tuple[list[Any], list[Any]]:
    plain: list[Any] = []
    replace = False
    original = list(original)
    for item in patch:
        assert isinstance(item, dict)
        if _DIRECTIVE not in item:
            plain.append(item)
            continue
        directive = item[_DIRECTIVE]
        if directive == _DELETE:
            if merge_key not in item:
                raise _err_no_merge_key(item, merge_key)
            while (index := _find_by_key(original, merge_key, item[merge_key])) >= 0:
                del original[index]
                if backing is not None:
                    backing.delete(index)
        elif directive == _REPLACE:
            # Keep going, so the other $patch items of the list are dropped too.
            replace = True
        elif directive == _MERGE:
            raise _SMPError("merging lists cannot yet be specified in the patch")
        else:
            raise _err_bad_patch_type(directive, item)
    if replace:
        return plain, []
    return original, plain


def _find_by_key(items: list[Any], merge_key: str, value: Any) -> int:
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise _SMPError(f"value for key {index} is not a map")
        if merge_key in item and deep_equal(item[merge_key], value):
            return index
    return -1


def _merge_slice_plain_elements(
    original: list[Any],
    patch: list[Any],
    merge_key: str,
    item_type: Node,
    backing: _Backing | None,
) -> list[Any]:
    merged = list(original)
    for item in patch:
        if merge_key not in item:
            raise _err_no_merge_key(item, merge_key)
        index = _find_by_key(merged, merge_key, item[merge_key])
        if index >= 0:
            merged[index] = _merge_map(merged[index], item, item_type)
            if backing is not None:
                backing.write(index, merged[index])
        else:
            merged.append(item)
            if backing is not None:
                backing.append(item)
    return merged


def _delete_from_slice(current: list[Any], to_delete: list[Any]) -> list[Any]:
    return [v for v in current if not any(deep_equal(v, d) for d in to_delete)]


def _deduplicate_scalars(s: list[Any]) -> int:
    """deduplicateScalars, in place: returns the new length (a duplicate takes the last)."""
    length = len(s) - 1
    i = 0
    while i < length:
        j = i + 1
        while j <= length:
            if deep_equal(s[i], s[j]):
                s[j] = s[length]
                length -= 1
                j -= 1
            j += 1
        i += 1
    return length + 1


def _partition_primitives(merged: list[Any], by: list[Any]) -> tuple[list[Any], list[Any]]:
    patch_items: list[Any] = []
    server_only: list[Any] = []
    for value in merged:
        if any(deep_equal(value, b) for b in by):
            patch_items.append(value)
        else:
            server_only.append(value)
    return patch_items, server_only


def _partition_maps(
    merged: list[Any], by: list[Any], merge_key: str
) -> tuple[list[Any], list[Any]]:
    patch_items: list[Any] = []
    server_only: list[Any] = []
    for value in merged:
        if not isinstance(value, dict):
            raise _SMPError(f"expected a map, but received a {go_kind(value)}")
        if merge_key not in value:
            raise _err_no_merge_key(value, merge_key)
        if _find_by_key(by, merge_key, value[merge_key]) >= 0:
            patch_items.append(value)
        else:
            server_only.append(value)
    return patch_items, server_only


def _index(items: list[Any], value: Any, merge_key: str, kind: str) -> int:
    def key_of(item: Any) -> Any:
        if kind == "map":
            return item.get(merge_key) if isinstance(item, dict) else None
        return item

    wanted = key_of(value)
    for position, item in enumerate(items):
        if deep_equal(key_of(item), wanted):
            return position
    return -1


def _normalize_slice_order(
    to_sort: list[Any], order: list[Any], merge_key: str, kind: str
) -> list[Any]:
    to_delete: list[Any] = []
    if kind == "map":
        for item in [*to_sort, *order]:
            if not isinstance(item, dict):
                raise _SMPError(f"expected a map, but received a {go_kind(item)}")
            if merge_key not in item:
                raise _err_no_merge_key(item, merge_key)
        to_delete = [i for i in to_sort if i.get(_DIRECTIVE) == _DELETE]
        to_sort = [i for i in to_sort if i.get(_DIRECTIVE) != _DELETE]
    positions = [_index(order, item, merge_key, kind) for item in to_sort]
    # Go's sort.SliceStable with this less: items both in `order` sort by position,
    # anything else counts as "less" (an insertion sort, as Go's does below 20 items).
    out = list(zip(positions, to_sort, strict=True))
    for i in range(1, len(out)):
        j = i
        while j > 0:
            pj, pk = out[j][0], out[j - 1][0]
            less = pj < pk if pj >= 0 and pk >= 0 else True
            if not less:
                break
            out[j], out[j - 1] = out[j - 1], out[j]
            j -= 1
    return [item for _, item in out] + to_delete


def _normalize_element_order(
    patch_items: list[Any],
    server_only: list[Any],
    *,
    patch_order: list[Any],
    server_order: list[Any],
    merge_key: str,
    kind: str,
) -> list[Any]:
    """Patch items in patch order, server-only items in live order, interleaved."""
    patch_items = _normalize_slice_order(patch_items, patch_order, merge_key, kind)
    server_only = _normalize_slice_order(server_only, server_order, merge_key, kind)
    return _merge_sorted(server_only, patch_items, server_order, merge_key, kind)


def _merge_sorted(
    left: list[Any], right: list[Any], server_order: list[Any], merge_key: str, kind: str
) -> list[Any]:
    out: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            out.append(right[j])
            j += 1
        elif j >= len(right):
            out.append(left[i])
            i += 1
        else:
            li = _index(server_order, left[i], merge_key, kind)
            ri = _index(server_order, right[j], merge_key, kind)
            if li >= 0 and ri >= 0 and li < ri:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out
