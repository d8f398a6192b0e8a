"""Patches: the `Patch` protocol and the ready-made kinds of patch."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import orjson

from pyctrl.client._errors import PatchError
from pyctrl.client._strategic import merge_diff, strategic_diff
from pyctrl.meta import BUILTIN_GROUPS, KubeModel
from pyctrl.resource import CustomResource
from pyctrl.scheme import Scheme, default_scheme

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from pyctrl.meta import GroupVersionKind

__all__ = [
    "APPLY_PATCH",
    "JSON_PATCH",
    "MERGE_PATCH",
    "STRATEGIC_MERGE_PATCH",
    "Apply",
    "JSONPatch",
    "MergeFrom",
    "MergePatch",
    "Patch",
    "RawPatch",
    "StrategicMergeFrom",
    "json_pointer",
]

JSON_PATCH = "application/json-patch+json"
"""Media type of RFC 6902 JSON patches."""
MERGE_PATCH = "application/merge-patch+json"
"""Media type of RFC 7386 JSON merge patches."""
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
"""Media type of Kubernetes strategic merge patches (built-in kinds only)."""
APPLY_PATCH = "application/apply-patch+yaml"
"""Media type of server-side apply requests."""

_JSON_PATCH_OPS = frozenset({"add", "remove", "replace", "move", "copy", "test"})


@runtime_checkable
class Patch(Protocol):
    """A change to send with ``PATCH`` (an extension point; controller-runtime's ``client.Patch``).

    ``content_type`` is the patch's media type; `data` renders the patch body for the
    object being patched (the object as the caller holds it, after any changes).
    """

    @property
    def content_type(self) -> str:
        """The media type of the patch body."""
        ...

    def data(self, obj: Any, scheme: Scheme) -> bytes:
        """The encoded patch body for ``obj``."""
        ...


def _with_lock(patch: dict[str, Any], resource_version: str) -> dict[str, Any]:
    metadata = patch.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
        patch["metadata"] = metadata
    metadata["resourceVersion"] = resource_version
    return patch


def _resource_version(data: dict[str, Any]) -> str:
    return str((data.get("metadata") or {}).get("resourceVersion") or "")


class MergeFrom:
    """A JSON merge patch from a snapshot of the object to the object as it is when patched.

    Like controller-runtime's ``client.MergeFrom``: take the snapshot, change the object,
    then patch::

        patch = MergeFrom(deploy)
        deploy.spec.replicas = 3
        deploy = await client.patch(deploy, patch)

    Only what changed is sent, so concurrent changes to other fields survive. Lists are
    replaced whole (that is what merge patches do). With ``optimistic_lock=True`` the
    snapshot's ``resourceVersion`` is included, so the server answers 409 Conflict if
    the object changed since the snapshot.

    Args:
        original: The object before the change; it is copied at once.
        optimistic_lock: Fail with `pyctrl.errors.ConflictError` if the object changed
            on the server since ``original`` was read.
        scheme: The scheme to serialise ``original`` with (default: the default scheme).

    Raises:
        PatchError: ``optimistic_lock`` is set but ``original`` has no resourceVersion.
    """

    content_type = MERGE_PATCH

    def __init__(
        self, original: Any, *, optimistic_lock: bool = False, scheme: Scheme | None = None
    ) -> None:
        self._original = (scheme or default_scheme()).to_dict(original)
        self._lock = _resource_version(self._original) if optimistic_lock else None
        if optimistic_lock and not self._lock:
            raise PatchError(
                "MergeFrom(optimistic_lock=True) needs an original with a resourceVersion"
            )

    def data(self, obj: Any, scheme: Scheme) -> bytes:
        """The merge patch from the snapshot to ``obj``."""
        patch = merge_diff(self._original, scheme.to_dict(obj))
        if self._lock is not None:
            _with_lock(patch, self._lock)
        return orjson.dumps(patch)


def _check_builtin(gvk: GroupVersionKind, original: Any) -> None:
    if isinstance(original, CustomResource) or gvk.group not in BUILTIN_GROUPS:
        raise PatchError(
            f"strategic merge patch is not supported for {gvk} (a custom resource): "
            "the API server answers 415 for it; use MergeFrom, JSONPatch or Apply"
        )


class StrategicMergeFrom:
    """A strategic merge patch from a snapshot to the object as it is when patched.

    For built-in kinds only (custom resources are refused here, before the server would
    refuse them with 415). Lists the built-in types merge by key (containers by name,
    ports, env, volumes, finalizers, owner references, conditions...) are patched item by
    item, with deletions and order, so that another writer's items survive::

        patch = StrategicMergeFrom(deploy)
        deploy.spec.template.spec.containers[0].image = "nginx:1.27"
        deploy = await client.patch(deploy, patch)

    Args:
        original: The object before the change; it is copied at once.
        optimistic_lock: Include the snapshot's ``resourceVersion`` (409 if it changed).
        scheme: The scheme to serialise ``original`` with.

    Raises:
        PatchError: ``original`` is a custom resource, or ``optimistic_lock`` is set and
            it has no resourceVersion.
    """

    content_type = STRATEGIC_MERGE_PATCH

    def __init__(
        self, original: Any, *, optimistic_lock: bool = False, scheme: Scheme | None = None
    ) -> None:
        scheme = scheme or default_scheme()
        self._gvk = scheme.gvk_for(original)
        _check_builtin(self._gvk, original)
        self._original = scheme.to_dict(original)
        self._lock = _resource_version(self._original) if optimistic_lock else None
        if optimistic_lock and not self._lock:
            raise PatchError(
                "StrategicMergeFrom(optimistic_lock=True) needs an original with a resourceVersion"
            )

    def data(self, obj: Any, scheme: Scheme) -> bytes:
        """The strategic merge patch from the snapshot to ``obj``."""
        patch = strategic_diff(
            self._original, scheme.to_dict(obj), group=self._gvk.group, kind=self._gvk.kind
        )
        if self._lock is not None:
            _with_lock(patch, self._lock)
        return orjson.dumps(patch)


def json_pointer(*tokens: str | int) -> str:
    """A JSON pointer (RFC 6901) to the given keys and indexes, escaping ``~`` and ``/``.

    ``json_pointer("metadata", "annotations", "example.com/owner")`` is
    ``/metadata/annotations/example.com~1owner``.
    """
    return "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in tokens)


class JSONPatch:
    """An RFC 6902 JSON patch: a list of operations applied in order, all or nothing.

    A ``test`` operation makes the whole patch fail (422 Invalid) if the value differs,
    which makes read-modify-write safe without a resourceVersion::

        JSONPatch([
            {"op": "test", "path": "/metadata/finalizers", "value": ["a"]},
            {"op": "replace", "path": "/metadata/finalizers", "value": ["a", "b"]},
        ])

    Args:
        operations: The operations, each a mapping with ``op`` and ``path`` (and
            ``value`` or ``from`` as the operation needs).

    Raises:
        PatchError: An operation is malformed; the message names it.
    """

    content_type = JSON_PATCH

    def __init__(self, operations: Iterable[Mapping[str, Any]]) -> None:
        ops = [dict(op) for op in operations]
        for index, op in enumerate(ops):
            _check_operation(index, op)
        self.operations: list[dict[str, Any]] = ops

    @classmethod
    def diff(cls, original: Any, modified: Any, *, scheme: Scheme | None = None) -> JSONPatch:
        """The JSON patch that turns ``original`` into ``modified``."""
        import jsonpatch

        scheme = scheme or default_scheme()
        ops = jsonpatch.make_patch(scheme.to_dict(original), scheme.to_dict(modified)).patch
        return cls(ops)

    def data(self, obj: Any, scheme: Scheme) -> bytes:
        """The operations, encoded (``obj`` only chooses the target)."""
        return orjson.dumps(self.operations)

    def __repr__(self) -> str:
        return f"JSONPatch({self.operations!r})"


def _check_operation(index: int, op: dict[str, Any]) -> None:
    name = op.get("op")
    if name not in _JSON_PATCH_OPS:
        raise PatchError(
            f"JSON patch operation {index}: op must be one of "
            f"{', '.join(sorted(_JSON_PATCH_OPS))}, not {name!r}"
        )
    path = op.get("path")
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise PatchError(
            f"JSON patch operation {index} ({name}): path must be a JSON pointer "
            f"starting with '/', not {path!r}"
        )
    if name in ("add", "replace", "test") and "value" not in op:
        raise PatchError(f"JSON patch operation {index} ({name} {path}): needs a value")
    if name in ("move", "copy"):
        source = op.get("from")
        if not isinstance(source, str) or (source and not source.startswith("/")):
            raise PatchError(
                f"JSON patch operation {index} ({name} {path}): from must be a JSON pointer"
            )


class MergePatch:
    """A JSON merge patch given as a mapping (``null`` values delete keys).

    ``MergePatch({"metadata": {"labels": {"tier": "web"}}})``.
    """

    content_type = MERGE_PATCH

    def __init__(self, patch: Mapping[str, Any]) -> None:
        self._body = orjson.dumps(dict(patch))

    def data(self, obj: Any, scheme: Scheme) -> bytes:
        """The patch, encoded."""
        return self._body


class RawPatch:
    """A patch body sent as given, with its media type (controller-runtime's ``RawPatch``).

    Args:
        content_type: One of `JSON_PATCH`, `MERGE_PATCH`, `STRATEGIC_MERGE_PATCH`,
            `APPLY_PATCH`.
        body: The encoded patch.
    """

    def __init__(self, content_type: str, body: bytes) -> None:
        if content_type not in (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH):
            raise PatchError(f"unknown patch media type {content_type!r}")
        self.content_type = content_type
        self._body = body

    def data(self, obj: Any, scheme: Scheme) -> bytes:
        """The body, as given."""
        return self._body


class Apply:
    """Server-side apply: send the fields you manage; the server merges and tracks owners.

    The object is sent as an apply configuration: for a `pyctrl.resource.CustomResource`
    or other pydantic model only the fields that were *set* (given to the constructor or
    assigned) are sent, so defaults do not become owned fields; other forms are sent as
    they are. ``metadata.managedFields`` is never sent. A field manager is required
    (``field_manager=`` on the call, or the client's ``field_owner``).

    Args:
        force: Take ownership of fields another manager owns instead of failing with
            `pyctrl.errors.ConflictError`.
    """

    content_type = APPLY_PATCH

    def __init__(self, *, force: bool = False) -> None:
        self.force = force

    def data(self, obj: Any, scheme: Scheme) -> bytes:
        """The apply configuration (JSON, which is valid YAML)."""
        return orjson.dumps(apply_configuration(obj, scheme))

    def __repr__(self) -> str:
        return f"Apply(force={self.force})"


def apply_configuration(obj: Any, scheme: Scheme) -> dict[str, Any]:
    """The body of a server-side apply of ``obj`` (see `Apply`)."""
    if isinstance(obj, KubeModel):
        data = obj.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude_none=True)
        if not data.get("apiVersion") or not data.get("kind"):
            gvk = scheme.gvk_for(obj)
            data["apiVersion"], data["kind"] = gvk.api_version, gvk.kind
    else:
        data = scheme.to_dict(obj)
    metadata = data.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
    return data
