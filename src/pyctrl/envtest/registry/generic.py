"""The API semantics of the embedded server: what each verb does to stored objects.

This is kube-apiserver's generic registry (k8s.io/apiserver/pkg/registry/generic/registry
store.go) and the per-type strategies, without HTTP: create, get, list, update, patch (JSON,
merge, strategic merge, server-side apply), delete and deletecollection, the status and scale
subresources, optimistic concurrency on ``resourceVersion``, ``generation``, system metadata,
finalizers and deletion propagation, namespace lifecycle checks, dry runs, and the write
pipeline of kube-apiserver::

    decode (drop unknown fields) -> default -> managedFields
           -> mutating admission -> system fields -> validation -> validating admission
           -> storage

:class:`API` is driven by the HTTP layer (``_server.py``) and by the built-in controllers
(``_gc.py``: garbage collector, namespace and CRD cleanup), which use the ``*_internal``
methods that skip admission as kube-controller-manager's requests do not.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import ipaddress
import random
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar, cast

import orjson

from pyctrl._apiextensions.crd_validation import validate_crd
from pyctrl._apiextensions.gofmt import go_print, go_quote
from pyctrl._apiextensions.pruning import apply_defaults, prune, reapply_is_noop
from pyctrl._apiextensions.validation import validate
from pyctrl._ids import fast_uuid4
from pyctrl.envtest.admission.interfaces import (
    REQUEST_USER,
    AdmissionHook,
    AdmissionRequest,
    ConversionHook,
    UserInfo,
)
from pyctrl.envtest.apimachinery.errors import (
    Cause,
    GoLiteral,
    StatusError,
    already_exists,
    bad_request,
    conflict,
    field_invalid,
    field_not_supported,
    forbidden,
    internal,
    invalid,
    method_not_allowed,
    not_found,
    parse_resource_version,
    resource_expired,
    resource_version_problem,
)
from pyctrl.envtest.apimachinery.fields import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    field_value,
    selector_from_object,
)
from pyctrl.envtest.apimachinery.jsonpath import JSONPathError, find
from pyctrl.envtest.fieldmanager import managedfields as _managedfields
from pyctrl.envtest.fieldmanager import patch as _patch
from pyctrl.envtest.registry import defaults as _defaults
from pyctrl.envtest.registry import service as _service_strategy
from pyctrl.envtest.registry import validation as _validation
from pyctrl.envtest.scheme import builtin as _builtin_schema
from pyctrl.envtest.storage.store import (
    KeyExistsError,
    KeyNotFoundError,
    RVMismatchError,
    Store,
    StoreEvent,
    TooOld,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyctrl.envtest.scheme.resources import Registry, ResourceType
    from pyctrl.envtest.storage.store import StorageKey

NAMESPACES: StorageKey = ("", "namespaces")
CRDS: StorageKey = ("apiextensions.k8s.io", "customresourcedefinitions")
SERVICES: StorageKey = ("", "services")
IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
FIELD_MANAGER_MAX_LENGTH = 128
_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_MAX_GENERATED_PREFIX = 58
_GENERATE_ATTEMPTS = 8
CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted "
    "between the time the first chunk was returned and now may show up in the list."
)
_OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)


_now_cache: list[Any] = [0, ""]


def now_rfc3339(delta_seconds: float = 0.0) -> str:
    """The current UTC time (plus ``delta_seconds``) as RFC 3339 with second precision."""
    second = int(time.time() + delta_seconds)
    if second != _now_cache[0]:
        text = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        if delta_seconds:
            return text
        _now_cache[0], _now_cache[1] = second, text
    return str(_now_cache[1])


_T = TypeVar("_T")


def _decode_error(
    kind: str, version: str, error: str, *, patch_type: str, patch: Any, patched: bytes
) -> StatusError:
    """kube-apiserver's answer to an object that does not decode: a type or strict error.

    A request body answers 400 (the handlers' transformDecodeError); the result of a JSON
    or merge patch, which handlers/patch.go decodes into the Go struct, a 422 naming the
    patched object (``patched``, its JSON), and that of a strategic merge patch, converted
    from the patched map, a 422 naming the patch as Go prints a map.
    """
    if patch_type in ("json", "merge", "strategic"):
        value = go_print(patch) if patch_type == "strategic" else patched.decode()
        return invalid("", "", "", [field_invalid("patch", GoLiteral(go_quote(value)), error)])
    return bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: {error}')


def _strict_patched(opts: WriteOptions, obj: dict[str, Any]) -> bytes:
    """The JSON of a patched object, which a strict decoding error of the patch names."""
    if opts.field_validation == "Strict" and opts.patch_type in ("json", "merge"):
        return orjson.dumps(obj)
    return b""


def deep_copy(value: _T) -> _T:
    """Copy a JSON value (faster than ``copy.deepcopy`` for plain JSON)."""
    return cast("_T", orjson.loads(orjson.dumps(value)))


def meta_of(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj['metadata']`` (a dict; created when missing)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    return meta


def _ro_meta(obj: dict[str, Any] | None) -> dict[str, Any]:
    if obj is None:
        return {}
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


class CRDReconciler(Protocol):
    """What the registry tells about a written CRD: the CRD controller (`controllers.crd`)."""

    def reconcile(self, name: str) -> None:
        """Bring the served types of the CRD ``name`` in line with what is stored."""


@dataclass
class WriteOptions:
    """Options of a create, update or patch request."""

    dry_run: bool = False
    field_manager: str = ""
    force: bool = False
    field_validation: str = "Warn"
    raw: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    patch_type: str = ""
    """The patch type of a PATCH request (``json``, ``merge``, ``strategic``, ``apply``);
    how a strict decoding error is reported depends on it."""
    patch: Any = None
    """The decoded patch of a PATCH request."""


@dataclass
class DeleteOptions:
    """Options of a delete request (``metav1.DeleteOptions``)."""

    propagation: str | None = None
    orphan_dependents: bool | None = None
    grace_period: int | None = None
    uid: str | None = None
    resource_version: str | None = None
    dry_run: bool = False
    raw: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    """Admission webhooks' warnings, sent back as ``Warning`` headers."""


@dataclass
class ListResult:
    """Objects of a list (stored form) and the list metadata."""

    items: list[dict[str, Any]]
    meta: dict[str, Any]


class _IPAllocator:
    """Cluster IPs and node ports for Services."""

    def __init__(self) -> None:
        self.network = ipaddress.ip_network("10.0.0.0/16")
        self.ips: set[str] = set()
        self.ports: set[int] = set()
        self._next_ip = 10
        self._next_port = 30000

    def take_ip(self) -> str:
        size = self.network.num_addresses - 2
        for _ in range(size):
            candidate = str(self.network.network_address + self._next_ip)
            self._next_ip = self._next_ip + 1 if self._next_ip < size else 2
            if candidate not in self.ips:
                return candidate
        raise internal("failed to allocate a serviceIP: range is full")

    def take_port(self) -> int:
        for _ in range(2768):
            candidate = self._next_port
            self._next_port = self._next_port + 1 if self._next_port < 32767 else 30000
            if candidate not in self.ports:
                return candidate
        raise internal("failed to allocate a nodePort: range is full")

    def in_range(self, ip: str) -> bool:
        try:
            return ipaddress.ip_address(ip) in self.network
        except ValueError:
            return False


def _node_port_problem(port: int, allocated: set[int]) -> str:
    """The port allocator's refusal of a requested node port ('' when it is free)."""
    if not 30000 <= port <= 32767:
        return "provided port is not in the valid range. The range of valid ports is 30000-32767"
    return "provided port is already allocated" if port in allocated else ""


def _service_ips(obj: dict[str, Any]) -> tuple[list[str], list[int]]:
    spec = obj.get("spec") or {}
    ips = [ip for ip in spec.get("clusterIPs") or [spec.get("clusterIP")] if ip and ip != "None"]
    ports = [int(p["nodePort"]) for p in spec.get("ports") or [] if p.get("nodePort")]
    return ips, ports


_ABSENT: Final[Any] = object()


def _is_noop(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """Whether an update changes nothing but the times of managedFields entries."""
    # Most updates change something outside metadata: look there first.
    for key in new.keys() | old.keys():
        if key != "metadata" and new.get(key, _ABSENT) != old.get(key, _ABSENT):
            return False
    if new.get("metadata", _ABSENT) == old.get("metadata", _ABSENT):
        return True
    return bool(_strip_managed_times(new) == _strip_managed_times(old))


def _strip_managed_times(obj: dict[str, Any]) -> Any:
    meta = _ro_meta(obj)
    entries = meta.get("managedFields")
    if not entries:
        return obj
    out = dict(obj)
    out["metadata"] = dict(
        meta,
        managedFields=[{k: v for k, v in e.items() if k != "time"} for e in entries],
    )
    return out


_META_ORDER = (
    "name",
    "generateName",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
)


def canonical_order(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with its fields in the order kube-apiserver serializes them."""
    out: dict[str, Any] = {}
    for key in ("kind", "apiVersion"):
        if key in obj:
            out[key] = obj[key]
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        ordered = {k: meta[k] for k in _META_ORDER if k in meta}
        if len(ordered) != len(meta):
            ordered.update((k, v) for k, v in meta.items() if k not in ordered)
        out["metadata"] = ordered
    for key, value in obj.items():
        if key not in out and key != "status":
            out[key] = value
    if "status" in obj:
        out["status"] = obj["status"]
    return out


def _non_meta(obj: dict[str, Any], drop_status: bool) -> dict[str, Any]:
    skip = {"metadata", "status"} if drop_status else {"metadata"}
    return {k: v for k, v in obj.items() if k not in skip and k not in ("apiVersion", "kind")}


class API:
    """The verbs on stored objects, as kube-apiserver's registry implements them."""

    def __init__(
        self,
        store: Store,
        registry: Registry,
        *,
        admission: list[AdmissionHook],
        conversion: Callable[[], ConversionHook | None],
    ) -> None:
        self.store = store
        self.registry = registry
        self.admission = admission
        self._conversion = conversion
        self.crds: CRDReconciler | None = None
        self.ips = _IPAllocator()
        self._snapshots: OrderedDict[tuple[StorageKey, str | None, int], list[dict[str, Any]]] = (
            OrderedDict()
        )
        self._snapshot_keys: dict[tuple[StorageKey, str | None, int], list[str]] = {}
        store.add_listener(self._on_event)

    # --- conversions ------------------------------------------------------------------------

    def to_external(self, rt: ResourceType, stored: dict[str, Any]) -> dict[str, Any]:
        """A stored object as ``rt``'s version shows it (the stored dict itself when equal)."""
        if rt.from_storage is not None:
            return rt.from_storage(stored)
        if stored.get("apiVersion") == rt.api_version:
            return stored
        out = dict(stored)
        out["apiVersion"] = rt.api_version
        if rt.schema is not None and rt.crd_name:
            out = deep_copy(out)
            apply_defaults(out, rt.schema)
        return out

    def to_storage(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """An object of ``rt``'s version in its storage version."""
        if rt.to_storage is not None:
            return rt.to_storage(obj)
        api_version = rt.storage_api_version
        if obj.get("apiVersion") != api_version:
            obj = dict(obj)
            obj["apiVersion"] = api_version
        return obj

    def _hook_for(self, rt: ResourceType) -> ConversionHook | None:
        hook = self._conversion()
        if hook is not None and rt.crd_name and hook.handles(rt.crd_name):
            return hook
        return None

    async def external_many(
        self, rt: ResourceType, stored: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """Convert stored objects to ``rt``'s version, through the conversion hook if any."""
        hook = None if rt.version == rt.storage_version else self._hook_for(rt)
        if hook is None:
            return [self.to_external(rt, o) for o in stored]
        need = [o for o in stored if o.get("apiVersion") != rt.api_version]
        if not need:
            return stored
        converted = await hook.convert(rt.crd_name, need, rt.api_version)
        by_id = {id(o): c for o, c in zip(need, converted, strict=True)}
        return [by_id.get(id(o), o) for o in stored]

    async def external(self, rt: ResourceType, stored: dict[str, Any]) -> dict[str, Any]:
        """Convert one stored object to ``rt``'s version."""
        if rt.version == rt.storage_version:
            return self.to_external(rt, stored)
        return (await self.external_many(rt, [stored]))[0]

    async def _internal(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        hook = None if rt.version == rt.storage_version else self._hook_for(rt)
        if hook is None:
            return self.to_storage(rt, obj)
        return (await hook.convert(rt.crd_name, [obj], rt.storage_api_version))[0]

    def storage_rt(self, rt: ResourceType) -> ResourceType:
        """The type of ``rt``'s storage version (the type itself for single-version types)."""
        return self.registry.storage_type(rt.storage_key) or rt

    # --- field selectors --------------------------------------------------------------------

    def field_labels(self, rt: ResourceType) -> frozenset[str]:
        """Field selector labels ``rt`` supports."""
        return frozenset(
            {"metadata.name", "metadata.namespace", *rt.field_labels}
            | {label for label, _ in rt.field_paths}
        )

    def check_field_selector(self, rt: ResourceType, sel: FieldSelector) -> None:
        """400 ``field label not supported`` for labels ``rt`` does not expose."""
        supported = self.field_labels(rt)
        for req in sel.requirements:
            if req.field not in supported:
                raise bad_request(f"field label not supported: {req.field}")

    def fields_of(self, rt: ResourceType) -> Callable[[dict[str, Any]], dict[str, str]]:
        """A function giving the field-selector values of a stored object."""
        labels = rt.field_labels
        paths = rt.field_paths
        convert = rt.from_storage

        def fields(stored: dict[str, Any]) -> dict[str, str]:
            obj = convert(stored) if convert is not None else stored
            meta = _ro_meta(obj)
            out = {
                "metadata.name": str(meta.get("name", "")),
                "metadata.namespace": str(meta.get("namespace", "")),
            }
            for label in labels:
                out[label] = field_value(obj, label)
            for label, path in paths:
                try:
                    found = find(obj, path)
                except JSONPathError:
                    found = []
                value = found[0] if found else ""
                if isinstance(value, bool):
                    out[label] = "true" if value else "false"
                else:
                    out[label] = "" if value is None else str(value)
            return out

        return fields

    # --- reads ------------------------------------------------------------------------------

    def get_stored(self, rt: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        """The stored object or 404."""
        obj = self.store.get(rt.storage_key, namespace if rt.namespaced else "", name)
        if obj is None:
            raise not_found(rt.group, rt.plural, name)
        return obj

    def list_stored(
        self,
        rt: ResourceType,
        namespace: str | None,
        *,
        labels: LabelSelector,
        fields: FieldSelector,
        limit: int = 0,
        continue_token: str = "",
        resource_version: str = "",
        resource_version_match: str = "",
    ) -> ListResult:
        """List semantics: selectors, pagination with continue tokens, resourceVersion."""
        key = rt.storage_key
        ns = namespace if rt.namespaced else None
        start_after = ""
        if continue_token:
            rv, start_after = self._decode_continue(continue_token)
            if rv < self.store.window_start or rv > self.store.rv:
                err = resource_expired(CONTINUE_EXPIRED)
                err.list_meta = {"continue": self._encode_continue(self.store.rv, start_after)}
                raise err
            items = self._snapshot(key, ns, rv)
        else:
            rv = self.store.rv
            if resource_version and resource_version_match == "Exact":
                wanted = self._parse_rv(resource_version)
                if wanted > self.store.rv:
                    raise self._too_large(wanted)
                try:
                    items = self._snapshot(key, ns, wanted)
                except TooOld as exc:
                    raise resource_expired(str(exc)) from None
                rv = wanted
            else:
                if resource_version and resource_version != "0":
                    wanted = self._parse_rv(resource_version)
                    if wanted > self.store.rv:
                        raise self._too_large(wanted)
                items = self.store.items(key, ns) if not limit else self._snapshot(key, ns, rv)
        if start_after:
            items = self._after(items, key, ns, rv, start_after)
        if not labels.empty or not fields.empty:
            fields_of = self.fields_of(rt)
            items = [
                o
                for o in items
                if labels.matches(_ro_meta(o).get("labels"))
                and (fields.empty or fields.matches(fields_of(o)))
            ]
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if limit and len(items) > limit:
            remaining = len(items) - limit
            items = items[:limit]
            meta["continue"] = self._encode_continue(rv, self._sort_key(items[-1]))
            if labels.empty and fields.empty:
                meta["remainingItemCount"] = remaining
        return ListResult(items, meta)

    def _too_large(self, wanted: int) -> StatusError:
        return StatusError(
            504,
            "Timeout",
            f"Timeout: Too large resource version: {wanted}, current: {self.store.rv}",
            causes=[Cause("ResourceVersionTooLarge", "Too large resource version")],
            retry_after=1,
            details=True,
        )

    @staticmethod
    def _parse_rv(value: str) -> int:
        rv = parse_resource_version(value)
        if rv is None:
            raise bad_request(f"invalid resource version: {resource_version_problem(value)}")
        return rv

    @staticmethod
    def _sort_key(obj: dict[str, Any]) -> str:
        meta = _ro_meta(obj)
        ns = meta.get("namespace") or ""
        return f"{ns}/{meta.get('name', '')}" if ns else str(meta.get("name", ""))

    def _snapshot(self, key: StorageKey, ns: str | None, rv: int) -> list[dict[str, Any]]:
        cache_key = (key, ns, rv)
        cached = self._snapshots.get(cache_key)
        if cached is not None:
            self._snapshots.move_to_end(cache_key)
            return cached
        try:
            items = self.store.state_at(key, ns, rv)
        except TooOld:
            raise resource_expired(CONTINUE_EXPIRED) from None
        self._snapshots[cache_key] = items
        while len(self._snapshots) > 16:
            evicted, _ = self._snapshots.popitem(last=False)
            self._snapshot_keys.pop(evicted, None)
        return items

    def _after(
        self, items: list[dict[str, Any]], key: StorageKey, ns: str | None, rv: int, start: str
    ) -> list[dict[str, Any]]:
        """The items of a snapshot (in key order) whose key sorts after ``start``."""
        cache_key = (key, ns, rv)
        keys = self._snapshot_keys.get(cache_key)
        if keys is None or len(keys) != len(items):
            # Each page of a paginated list starts here: sort keys are computed once per
            # snapshot, and the page found by bisection instead of a scan.
            keys = [self._sort_key(o) for o in items]
            self._snapshot_keys[cache_key] = keys
        return items[bisect.bisect_right(keys, start) :]

    def drop_snapshots(self) -> None:
        """Forget cached list snapshots (after a compaction)."""
        self._snapshots.clear()
        self._snapshot_keys.clear()

    @staticmethod
    def _encode_continue(rv: int, start: str) -> str:
        raw = orjson.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start + "\x00"})
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @staticmethod
    def _decode_continue(token: str) -> tuple[int, str]:
        try:
            padded = token + "=" * (-len(token) % 4)
            data = orjson.loads(base64.urlsafe_b64decode(padded))
            if data.get("v") != "meta.k8s.io/v1":
                raise ValueError(
                    "continue key is not valid: incorrect encoded start resourceVersion "
                    "(version meta.k8s.io/v1)"
                )
            rv = int(data["rv"])
            start = str(data["start"])
        except (ValueError, KeyError, TypeError, binascii.Error, orjson.JSONDecodeError) as exc:
            message = str(exc)
            if not message.startswith("continue key is not valid"):
                message = f"continue key is not valid: {message}"
            raise bad_request(message) from None
        if start.endswith("\x00"):
            start = start[:-1]
        return rv, start

    # --- write pipeline helpers ---------------------------------------------------------------

    def check_type_meta(self, rt: ResourceType, obj: dict[str, Any], *, kind: str = "") -> None:
        """400 when the body's apiVersion/kind do not fit the endpoint; fill them in when absent."""
        want_kind = kind or rt.kind
        api_version = obj.get("apiVersion")
        if api_version and api_version != rt.api_version and not kind:
            raise bad_request(
                f"the API version in the data ({api_version}) does not match the expected API "
                f"version ({rt.api_version})"
            )
        got_kind = obj.get("kind")
        if got_kind and got_kind != want_kind and rt.crd_name and not kind:
            # The unstructured decoder keeps the body's kind; the custom resource
            # validator then refuses it (customResourceValidator.ValidateTypeMeta).
            meta = obj.get("metadata")
            name = str(meta.get("name") or "") if isinstance(meta, dict) else ""
            raise invalid(
                rt.group,
                str(got_kind),
                name,
                [field_invalid("kind", got_kind, f"must be {rt.kind}")],
            )
        if got_kind and got_kind != want_kind:
            raise bad_request(
                f"the kind in the data ({got_kind}) does not match the expected kind ({want_kind})"
            )
        if not kind:
            obj["apiVersion"] = rt.api_version
            obj["kind"] = rt.kind
        meta = obj.get("metadata")
        if meta is not None and not isinstance(meta, dict):
            if not kind and _builtin_schema.has_go_type(rt.group, rt.version, rt.kind):
                # Decoding refuses it as kube-apiserver does (`_decode`).
                return
            raise bad_request("metadata must be an object")

    def _set_namespace(self, rt: ResourceType, namespace: str, obj: dict[str, Any]) -> None:
        meta = meta_of(obj)
        if rt.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and body_ns != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request"
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)

    def _check_namespace_lifecycle(self, rt: ResourceType, namespace: str, name: str) -> None:
        if not rt.namespaced:
            return
        ns_obj = self.store.get(NAMESPACES, "", namespace)
        if ns_obj is None:
            raise not_found("", "namespaces", namespace)
        if (
            _ro_meta(ns_obj).get("deletionTimestamp")
            or (ns_obj.get("status") or {}).get("phase") == "Terminating"
        ):
            raise forbidden(
                rt.group,
                rt.plural,
                name,
                f"unable to create new content in namespace {namespace} because it is being "
                "terminated",
                causes=[
                    Cause(
                        "NamespaceTerminating",
                        f"namespace {namespace} is being terminated",
                        "metadata.namespace",
                    )
                ],
            )

    def _check_crd_terminating(self, rt: ResourceType, verb: str) -> None:
        if not rt.crd_name:
            return
        crd = self.store.get(CRDS, "", rt.crd_name)
        if crd is None:
            return
        for cond in (crd.get("status") or {}).get("conditions") or []:
            if cond.get("type") == "Terminating" and cond.get("status") == "True":
                err = method_not_allowed()
                err.message = f"{verb} not allowed while custom resource definition is terminating"
                err.group = rt.group
                err.kind = rt.plural
                raise err

    @staticmethod
    def _clean_meta(obj: dict[str, Any], unknown: list[str] | None = None) -> None:
        meta = meta_of(obj)
        for key in list(meta):
            if key not in _OBJECT_META_FIELDS:
                if unknown is not None:
                    unknown.append(f"metadata.{key}")
                del meta[key]
        meta.pop("selfLink", None)
        for key in ("labels", "annotations"):
            if key in meta and meta[key] is None:
                del meta[key]

    def _decode(self, rt: ResourceType, obj: dict[str, Any], opts: WriteOptions) -> None:
        """Drop the fields the kind does not declare, as decoding the request body does.

        kube-apiserver decodes a built-in object into its Go struct and a custom resource
        through its CRD's structural schema: unknown fields are dropped and, by
        ``fieldValidation``, ignored, returned as ``Warning`` headers (``Warn``, the
        default) or refused (``Strict``). A built-in value of the wrong JSON type fails
        the decoding whatever ``fieldValidation`` says (`_decode_error`).
        """
        report = opts.field_validation != "Ignore"
        unknown: list[str] = []
        if rt.crd_name:
            before = _strict_patched(opts, obj)
            self._clean_meta(obj, unknown if report else None)
            if rt.schema is not None:
                prune(obj, rt.schema, unknown=unknown if report else None)
            if unknown:
                self._report_unknown(rt.kind, rt.version, unknown, opts, before)
            return
        found = self._decode_go(rt.group, rt.version, rt.kind, obj, opts)
        if found is not None:
            found.drop()
        self._clean_meta(obj)

    @classmethod
    def _decode_go(
        cls, group: str, version: str, kind: str, obj: dict[str, Any], opts: WriteOptions
    ) -> _builtin_schema.Decoded | None:
        """Decode a built-in object (or a Scale) into its Go type, as kube-apiserver does.

        A value of the wrong JSON type fails whatever ``fieldValidation`` says; unknown
        fields are reported as it asks. Returns what was found (the unknown fields are
        still in ``obj``), or None for a kind without a Go type.
        """
        found = _builtin_schema.decode(group, version, kind, obj)
        if found is None:
            return None
        error = found.type_error(unstructured=opts.patch_type == "strategic")
        if error:
            raise _decode_error(
                kind,
                version,
                error,
                patch_type=opts.patch_type,
                patch=opts.patch,
                patched=orjson.dumps(obj),
            )
        if found.paths and opts.field_validation != "Ignore":
            cls._report_unknown(kind, version, found.paths, opts, _strict_patched(opts, obj))
        return found

    @staticmethod
    def _report_unknown(
        kind: str, version: str, unknown: list[str], opts: WriteOptions, before: bytes
    ) -> None:
        """Warn about unknown fields, or raise kube-apiserver's strict decoding error.

        ``before`` is the JSON of the patched object before its unknown fields were
        dropped (`_strict_patched`).
        """
        if opts.field_validation != "Strict":
            # An update retried after a conflict decodes again: warn once, as the
            # deduplicating warning recorder does.
            for path in unknown:
                warning = f'unknown field "{path}"'
                if warning not in opts.warnings:
                    opts.warnings.append(warning)
            return
        text = "strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in unknown)
        raise _decode_error(
            kind, version, text, patch_type=opts.patch_type, patch=opts.patch, patched=before
        )

    def _default_and_prune(
        self, rt: ResourceType, obj: dict[str, Any], opts: WriteOptions, *, decoded: bool = False
    ) -> None:
        if not decoded:
            self._decode(rt, obj, opts)
        if rt.crd_name:
            if rt.schema is not None:
                apply_defaults(obj, rt.schema)
            return
        group = rt.storage_key[0]
        _defaults.apply_builtin_defaults(group, rt.kind, obj)
        if group == "" and rt.kind == "Secret":
            problem = _validation.base64_problem(obj)
            if problem:
                raise bad_request(
                    f'Secret in version "v1" cannot be handled as a Secret: {problem}'
                )
        if group == "" and rt.kind == "ConfigMap":
            problem = _validation.base64_problem(obj, "binaryData")
            if problem:
                raise bad_request(
                    f'ConfigMap in version "v1" cannot be handled as a ConfigMap: {problem}'
                )

    def _reset_status_on_create(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        if not rt.has_status:
            return
        if rt.crd_name:
            obj.pop("status", None)
        elif rt.storage_key == ("", "pods"):
            obj["status"] = _defaults.pod_initial_status(obj)
        elif rt.storage_key == CRDS:
            obj["status"] = {
                "acceptedNames": {"plural": "", "kind": ""},
                "storedVersions": [
                    v.get("name")
                    for v in (obj.get("spec") or {}).get("versions") or []
                    if v.get("storage")
                ],
            }
        elif rt.initial_status is not None:
            obj["status"] = deep_copy(rt.initial_status)

    def _track(
        self,
        rt: ResourceType,
        old: dict[str, Any] | None,
        new: dict[str, Any],
        manager: str,
        *,
        subresource: str = "",
    ) -> None:
        _managedfields.track_update(
            old,
            new,
            manager=manager,
            operation="Update",
            subresource=subresource,
            api_version=rt.api_version,
            now=now_rfc3339(),
            schema=rt.schema,
            group=rt.group,
            kind=rt.kind,
            reset_fields=_reset_fields(rt, subresource),
        )

    def _admission_request(
        self,
        rt: ResourceType,
        operation: str,
        *,
        namespace: str,
        name: str,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        subresource: str,
        dry_run: bool,
        options: dict[str, Any],
        warnings: list[str] | None = None,
    ) -> AdmissionRequest:
        return AdmissionRequest(
            uid=fast_uuid4(),
            operation=operation,
            resource=rt,
            subresource=subresource,
            namespace=namespace if rt.namespaced else "",
            name=name,
            obj=obj,
            old=old,
            dry_run=dry_run,
            options=options,
            user=REQUEST_USER.get() or UserInfo(),
            warnings=warnings if warnings is not None else [],
        )

    async def _mutate(
        self,
        rt: ResourceType,
        operation: str,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        *,
        namespace: str,
        subresource: str,
        opts: WriteOptions,
    ) -> dict[str, Any]:
        if not self.admission:
            return obj
        name = meta_of(obj).get("name") or ""
        mutated_any = False
        for hook in self.admission:
            request = self._admission_request(
                rt,
                operation,
                namespace=namespace,
                name=name,
                obj=obj,
                old=old,
                subresource=subresource,
                dry_run=opts.dry_run,
                options=opts.raw,
                warnings=opts.warnings,
            )
            mutated = await hook.mutate(request)
            if mutated is not None:
                obj = mutated
                mutated_any = True
        if rt.crd_name and rt.schema is not None:
            # An update's object was pruned and defaulted just before (and only its
            # managedFields changed since): unless admission changed it, a second pass would
            # change nothing. A create's status was dropped since; its defaults come back here.
            if operation == "UPDATE" and not mutated_any and reapply_is_noop(rt.schema):
                return obj
            prune(obj, rt.schema)
            apply_defaults(obj, rt.schema)
        return obj

    async def _validate_admission(
        self,
        rt: ResourceType,
        operation: str,
        *,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        namespace: str,
        name: str,
        subresource: str,
        dry_run: bool,
        options: dict[str, Any],
        warnings: list[str] | None = None,
    ) -> None:
        for hook in self.admission:
            request = self._admission_request(
                rt,
                operation,
                namespace=namespace,
                name=name,
                obj=obj,
                old=old,
                subresource=subresource,
                dry_run=dry_run,
                options=options,
                warnings=warnings,
            )
            await hook.validate(request)

    def _validate(self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if not rt.crd_name and rt.storage_key != CRDS:
            # Built-in kinds: the common checks and the type's strategy, in kube's order.
            causes = _validation.validate_builtin_object(rt, obj, old)
            if causes:
                name = _ro_meta(obj).get("name") or _ro_meta(obj).get("generateName") or ""
                raise invalid(rt.group, rt.kind, name, causes)
            return
        causes = _validation.validate_object_meta(rt, obj)
        if old is not None:
            # kube-apiserver checks the metadata update twice: with the common fields
            # (rest.BeforeUpdate) and again in the strategy's ValidateUpdate; both errors
            # are reported.
            meta_update = _validation.validate_meta_update(obj, old)
            causes.extend(meta_update)
            causes.extend(meta_update)
        if rt.crd_name:
            if rt.schema is not None:
                for fc in validate(obj, rt.schema, old=old):
                    causes.append(Cause(fc.reason, fc.message, fc.field))
        elif rt.storage_key == CRDS:
            for fc in validate_crd(obj, old):
                causes.append(Cause(fc.reason, fc.message, fc.field))
        else:
            causes.extend(_validation.validate_builtin(rt, obj, old))
        if causes:
            name = _ro_meta(obj).get("name") or _ro_meta(obj).get("generateName") or ""
            raise invalid(rt.group, rt.kind, name, causes)

    # --- create -------------------------------------------------------------------------------

    async def create(
        self,
        rt: ResourceType,
        namespace: str,
        obj: dict[str, Any],
        opts: WriteOptions,
        *,
        skip_type_check: bool = False,
    ) -> dict[str, Any]:
        """POST: create ``obj`` (decoded body) in ``namespace``; returns the external object."""
        if not skip_type_check:
            self.check_type_meta(rt, obj)
        # kube-apiserver decodes the body before anything else looks at it.
        self._decode(rt, obj, opts)
        self._set_namespace(rt, namespace, obj)
        meta = meta_of(obj)
        self._check_crd_terminating(rt, "create")
        self._check_namespace_lifecycle(rt, namespace, meta.get("name") or "")
        if meta.get("resourceVersion"):
            raise internal("resourceVersion should not be set on objects to be created")
        self._default_and_prune(rt, obj, opts, decoded=True)
        self._reset_status_on_create(rt, obj)
        self._track(rt, None, obj, opts.field_manager)
        obj = await self._mutate(
            rt, "CREATE", obj, None, namespace=namespace, subresource="", opts=opts
        )
        return await self._create_prepared(rt, namespace, obj, opts)

    async def _create_prepared(
        self, rt: ResourceType, namespace: str, obj: dict[str, Any], opts: WriteOptions
    ) -> dict[str, Any]:
        generate = bool(meta_of(obj).get("generateName")) and not meta_of(obj).get("name")
        attempts = _GENERATE_ATTEMPTS if generate else 1
        for attempt in range(attempts):
            candidate = deep_copy(obj) if attempts > 1 else obj
            self._prepare_create(rt, candidate)
            self._validate(rt, candidate, None)
            name = meta_of(candidate)["name"]
            await self._validate_admission(
                rt,
                "CREATE",
                obj=candidate,
                old=None,
                namespace=namespace,
                name=name,
                subresource="",
                dry_run=opts.dry_run,
                options=opts.raw,
                warnings=opts.warnings,
            )
            if self.store.get(rt.storage_key, namespace if rt.namespaced else "", name) is not None:
                if attempt + 1 < attempts:
                    continue
                existing = self.store.get(rt.storage_key, namespace if rt.namespaced else "", name)
                err = already_exists(rt.group, rt.plural, name)
                if existing is not None and _ro_meta(existing).get("deletionTimestamp"):
                    err.message = f"object is being deleted: {err.message}"
                raise err
            self._allocate(rt, candidate, dry_run=opts.dry_run)
            candidate = canonical_order(candidate)
            if opts.dry_run:
                meta_of(candidate).pop("resourceVersion", None)
                return candidate
            stored = await self._internal(rt, candidate)
            try:
                event = self.store.create(rt.storage_key, stored)
            except KeyExistsError:
                raise already_exists(rt.group, rt.plural, name) from None
            if self.crds is not None and rt.storage_key == CRDS:
                self.crds.reconcile(name)
            return await self.external(rt, event.obj)
        raise internal("unreachable: generateName retries exhausted")

    def _prepare_create(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        meta = meta_of(obj)
        if meta.get("generateName") and not meta.get("name"):
            prefix = str(meta["generateName"])[:_MAX_GENERATED_PREFIX]
            meta["name"] = prefix + "".join(random.choices(_GENERATE_ALPHABET, k=5))
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        meta.pop("deletionTimestamp", None)
        meta.pop("deletionGracePeriodSeconds", None)
        # A placeholder keeps the field's position; the store fills in the real version.
        meta["resourceVersion"] = ""
        if rt.has_generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        if rt.storage_key == ("batch", "jobs"):
            _defaults.job_selector(obj, meta["uid"])
        if rt.storage_key == NAMESPACES:
            _defaults.namespace(obj)

    def _allocate(self, rt: ResourceType, obj: dict[str, Any], *, dry_run: bool) -> None:
        if rt.storage_key != SERVICES:
            return
        spec = obj.setdefault("spec", {})
        svc_type = spec.get("type", "ClusterIP")
        if svc_type == "ExternalName":
            return
        ip = spec.get("clusterIP") or ((spec.get("clusterIPs") or [None])[0])
        name = meta_of(obj).get("name", "")
        if ip and ip != "None":
            if not self.ips.in_range(ip):
                raise invalid(
                    "",
                    "Service",
                    name,
                    [
                        field_invalid(
                            "spec.clusterIPs",
                            [ip],
                            f"failed to allocate IP {ip}: the provided IP ({ip}) is not in the "
                            f"valid range. The range of valid IPs is {self.ips.network}",
                        )
                    ],
                )
            if ip in self.ips.ips:
                raise invalid(
                    "",
                    "Service",
                    name,
                    [
                        field_invalid(
                            "spec.clusterIPs",
                            [ip],
                            f"failed to allocate IP {ip}: provided IP is already allocated",
                        )
                    ],
                )
        elif not ip:
            ip = self.ips.take_ip()
        spec["clusterIP"] = ip
        spec["clusterIPs"] = [ip]
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        if svc_type in ("NodePort", "LoadBalancer"):
            for i, port in enumerate(spec.get("ports") or []):
                if not port.get("nodePort"):
                    port["nodePort"] = self.ips.take_port()
                elif (problem := _node_port_problem(int(port["nodePort"]), self.ips.ports)) != "":
                    raise invalid(
                        "",
                        "Service",
                        name,
                        [field_invalid(f"spec.ports[{i}].nodePort", port["nodePort"], problem)],
                    )
        if not dry_run:
            ips, ports = _service_ips(obj)
            self.ips.ips.update(ips)
            self.ips.ports.update(ports)

    def _on_event(self, event: StoreEvent) -> None:
        if event.key != SERVICES:
            return
        if event.prev is not None:
            ips, ports = _service_ips(event.prev)
            self.ips.ips.difference_update(ips)
            self.ips.ports.difference_update(ports)
        if event.type != "DELETED":
            ips, ports = _service_ips(event.obj)
            self.ips.ips.update(ips)
            self.ips.ports.update(ports)

    # --- update / patch -----------------------------------------------------------------------

    async def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: dict[str, Any],
        *,
        opts: WriteOptions,
        subresource: str = "",
    ) -> tuple[dict[str, Any], bool]:
        """PUT: replace an object (or its status); returns (external object, created)."""
        self.check_type_meta(rt, body)
        # Decoded once, before anything else looks at it, as kube-apiserver does.
        self._decode(rt, body, opts)
        self._check_url_name(body, name)

        def compute(existing: dict[str, Any] | None) -> dict[str, Any]:
            del existing
            return deep_copy(body)

        return await self._update_loop(
            rt,
            namespace,
            name,
            compute,
            opts,
            subresource=subresource,
            create_allowed=rt.allow_create_on_update and not subresource,
            decoded=True,
        )

    @staticmethod
    def _check_url_name(obj: dict[str, Any], name: str) -> None:
        body_name = _ro_meta(obj).get("name") or ""
        if body_name != name:
            raise bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL ({name})"
            )

    async def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        patch_type: str,
        patch: Any,
        *,
        opts: WriteOptions,
        subresource: str = "",
    ) -> tuple[dict[str, Any], bool]:
        """PATCH with one of the four patch types; returns (external object, created)."""
        opts.patch_type = patch_type
        opts.patch = patch
        if patch_type == "apply":
            return await self._apply(rt, namespace, name, patch, opts=opts, subresource=subresource)

        def compute(existing: dict[str, Any] | None) -> dict[str, Any]:
            if existing is None:
                raise not_found(rt.group, rt.plural, name)
            try:
                if patch_type == "json":
                    result = _patch.json_patch(existing, patch)
                elif patch_type == "merge":
                    # ``existing`` is the update loop's private copy.
                    result = _patch.json_merge_patch(existing, patch, in_place=True)
                else:
                    result = _patch.strategic_merge_patch(
                        existing, patch, group=rt.group, version=rt.version, kind=rt.kind
                    )
            except _patch.PatchError as exc:
                raise StatusError(exc.code, exc.reason, exc.message, details=False) from None
            if not isinstance(result, dict):
                raise bad_request("the patched object is not an object")
            return result

        return await self._update_loop(
            rt, namespace, name, compute, opts, subresource=subresource, create_allowed=False
        )

    async def _apply(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        applied: Any,
        *,
        opts: WriteOptions,
        subresource: str,
    ) -> tuple[dict[str, Any], bool]:
        if not isinstance(applied, dict):
            raise bad_request("the apply patch must be an object")
        applied_name = _ro_meta(applied).get("name")
        if applied_name and applied_name != name:
            raise bad_request(
                f"the name of the object ({applied_name}) does not match the name on the URL "
                f"({name})"
            )
        ns_in_body = _ro_meta(applied).get("namespace")
        if rt.namespaced and ns_in_body and ns_in_body != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )

        self._check_apply_fields(rt, applied)

        def compute(existing: dict[str, Any] | None) -> dict[str, Any]:
            body = deep_copy(applied)
            meta = meta_of(body)
            meta.setdefault("name", name)
            if rt.namespaced:
                meta.setdefault("namespace", namespace)
            try:
                return _managedfields.server_side_apply(
                    existing,
                    body,
                    manager=opts.field_manager,
                    force=opts.force,
                    api_version=rt.api_version,
                    group=rt.group,
                    kind=rt.kind,
                    now=now_rfc3339(),
                    schema=rt.schema,
                    subresource=subresource,
                    reset_fields=_reset_fields(rt, subresource),
                )
            except _managedfields.ApplyConflict as exc:
                raise _apply_conflict_error(exc) from None
            except _patch.PatchError as exc:
                raise StatusError(exc.code, exc.reason, exc.message, details=False) from None

        return await self._update_loop(
            rt,
            namespace,
            name,
            compute,
            opts,
            subresource=subresource,
            create_allowed=not subresource,
            is_apply=True,
        )

    @classmethod
    def _check_apply_fields(cls, rt: ResourceType, applied: dict[str, Any]) -> None:
        """Refuse an apply patch with fields the kind does not declare.

        The field manager converts the patch to the kind's typed value (for a custom
        resource, the type built from its CRD's schema, with ObjectMeta as metadata),
        which fails on an undeclared field whatever ``fieldValidation`` says (a 500, as
        kube-apiserver answers): an apply is never pruned.
        """
        if applied.get("apiVersion") != rt.api_version or applied.get("kind") != rt.kind:
            return
        if rt.crd_name:
            errors = cls._cr_apply_errors(rt, applied)
        else:
            errors = _builtin_schema.apply_errors(rt.group, rt.version, rt.kind, applied)
        if not errors:
            return
        meta = _ro_meta(applied)
        where = f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
        detail = errors[0] if len(errors) == 1 else "\n  ".join(["errors:", *errors])
        raise StatusError(
            500,
            "",
            f"failed to create typed patch object ({where}; {rt.group}/{rt.version}, "
            f"Kind={rt.kind}): {detail}",
            details=False,
        )

    @staticmethod
    def _cr_apply_errors(rt: ResourceType, applied: dict[str, Any]) -> list[str]:
        """structured-merge-diff's errors of a custom resource's apply patch.

        The first undeclared metadata field (the walk stops there), then the schema's own
        walk (`_builtin_schema.custom_resource_apply_errors`); paths have a leading dot
        (``.spec.bogus: field not declared in schema``).
        """
        errors: list[str] = []
        meta = applied.get("metadata")
        if type(meta) is dict:
            undeclared = next((key for key in meta if key not in _OBJECT_META_FIELDS), None)
            if undeclared is not None:
                errors.append(f".metadata.{undeclared}: field not declared in schema")
        if rt.schema is not None:
            errors.extend(_builtin_schema.custom_resource_apply_errors(rt.schema, applied))
        return errors

    async def _update_loop(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        compute: Callable[[dict[str, Any] | None], dict[str, Any]],
        opts: WriteOptions,
        *,
        subresource: str,
        create_allowed: bool,
        is_apply: bool = False,
        decoded: bool = False,
    ) -> tuple[dict[str, Any], bool]:
        key = rt.storage_key
        ns_key = namespace if rt.namespaced else ""
        for _ in range(16):
            existing_stored = self.store.get(key, ns_key, name)
            if existing_stored is None:
                if not create_allowed:
                    raise not_found(rt.group, rt.plural, name)
                new = compute(None)
                self.check_type_meta(rt, new)
                self._check_url_name(new, name)
                if not decoded:
                    self._decode(rt, new, opts)
                self._set_namespace(rt, namespace, new)
                self._check_crd_terminating(rt, "create")
                self._check_namespace_lifecycle(rt, namespace, name)
                meta_of(new).pop("resourceVersion", None)
                self._default_and_prune(rt, new, opts, decoded=True)
                self._reset_status_on_create(rt, new)
                if not is_apply:
                    self._track(rt, None, new, opts.field_manager)
                new = await self._mutate(
                    rt, "CREATE", new, None, namespace=namespace, subresource="", opts=opts
                )
                try:
                    return await self._create_prepared(rt, namespace, new, opts), True
                except StatusError as exc:
                    if exc.reason == "AlreadyExists":
                        continue
                    raise
            if subresource == "" and rt.crd_name:
                self._check_crd_terminating(rt, "update")
            existing = await self.external(rt, existing_stored)
            new = compute(deep_copy(existing))
            self.check_type_meta(rt, new)
            self._check_url_name(new, name)
            # Decoding sees the whole body: unknown fields of a status a write then ignores
            # are reported too.
            if not decoded:
                self._decode(rt, new, opts)
            new_meta = meta_of(new)
            if rt.namespaced:
                body_ns = new_meta.get("namespace")
                if body_ns and body_ns != namespace:
                    raise bad_request(
                        "the namespace of the provided object does not match the namespace sent "
                        "on the request"
                    )
                new_meta["namespace"] = namespace
            else:
                new_meta.pop("namespace", None)
            if subresource == "status":
                new = self._status_projection(rt, existing, new)
            elif rt.has_status or rt.storage_key == CRDS:
                if "status" in existing:
                    new["status"] = deep_copy(existing["status"])
                else:
                    new.pop("status", None)
            self._default_and_prune(rt, new, opts, decoded=True)
            if not is_apply:
                self._track(rt, existing, new, opts.field_manager, subresource=subresource)
            new = await self._mutate(
                rt,
                "UPDATE",
                new,
                existing,
                namespace=namespace,
                subresource=subresource,
                opts=opts,
            )
            new_meta = meta_of(new)
            existing_rv = _ro_meta(existing_stored).get("resourceVersion") or ""
            new_rv = new_meta.get("resourceVersion") or ""
            if not new_rv:
                if not rt.allow_unconditional_update:
                    raise invalid(
                        rt.group,
                        rt.plural,
                        name,
                        [
                            field_invalid(
                                "metadata.resourceVersion",
                                0,
                                "must be specified for an update",
                            )
                        ],
                    )
                new_meta["resourceVersion"] = existing_rv
            elif new_rv != existing_rv:
                raise conflict(rt.group, rt.plural, name)
            self._prepare_update(rt, new, existing, subresource)
            self._validate(rt, new, existing)
            await self._validate_admission(
                rt,
                "UPDATE",
                obj=new,
                old=existing,
                namespace=namespace,
                name=name,
                subresource=subresource,
                dry_run=opts.dry_run,
                options=opts.raw,
                warnings=opts.warnings,
            )
            if self.store.get(key, ns_key, name) is not existing_stored:
                continue
            new = canonical_order(new)
            stored_new = await self._internal(rt, new)
            result = self._commit_update(rt, existing_stored, stored_new, dry_run=opts.dry_run)
            if result is existing_stored:
                return existing, False
            if result is stored_new and opts.dry_run:
                return new, False
            out = await self.external(rt, result)
            if self.crds is not None and rt.storage_key == CRDS and not opts.dry_run:
                self.crds.reconcile(name)
            return out, False
        raise conflict(rt.group, rt.plural, name)

    def _status_projection(
        self, rt: ResourceType, existing: dict[str, Any], new: dict[str, Any]
    ) -> dict[str, Any]:
        out = deep_copy(existing)
        out_meta = meta_of(out)
        new_meta = meta_of(new)
        out_meta["resourceVersion"] = new_meta.get("resourceVersion", "")
        if "managedFields" in new_meta:
            out_meta["managedFields"] = new_meta["managedFields"]
        if "status" in new:
            out["status"] = new["status"]
        elif rt.crd_name:
            out.pop("status", None)
        else:
            out["status"] = {}
        return out

    def _prepare_update(
        self, rt: ResourceType, new: dict[str, Any], existing: dict[str, Any], subresource: str
    ) -> None:
        new_meta = meta_of(new)
        old_meta = _ro_meta(existing)
        if not new_meta.get("uid") and old_meta.get("uid"):
            new_meta["uid"] = old_meta["uid"]
        if old_meta.get("creationTimestamp"):
            new_meta["creationTimestamp"] = old_meta["creationTimestamp"]
        for key in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            if key in old_meta:
                new_meta[key] = old_meta[key]
            else:
                new_meta.pop(key, None)
        if "generation" in old_meta:
            new_meta["generation"] = old_meta["generation"]
        else:
            new_meta.pop("generation", None)
        new_meta.pop("selfLink", None)
        if rt.has_generation and subresource != "status":
            drop_status = rt.has_status
            if _non_meta(new, drop_status) != _non_meta(existing, drop_status):
                new_meta["generation"] = int(old_meta.get("generation") or 0) + 1
        if rt.storage_key == SERVICES:
            self._keep_allocated(new, existing)
            if subresource != "status":
                _service_strategy.drop_type_dependent_fields(new, existing)
        if rt.storage_key == ("batch", "jobs"):
            spec = new.setdefault("spec", {})
            old_spec = existing.get("spec") or {}
            if "selector" not in spec and "selector" in old_spec:
                spec["selector"] = deep_copy(old_spec["selector"])
        if rt.storage_key == NAMESPACES:
            labels = new_meta.get("labels")
            if not isinstance(labels, dict):
                labels = {}
                new_meta["labels"] = labels
            labels["kubernetes.io/metadata.name"] = new_meta.get("name", "")
            spec = new.setdefault("spec", {})
            if subresource != "finalize":
                old_fins = (existing.get("spec") or {}).get("finalizers")
                if old_fins:
                    spec["finalizers"] = deep_copy(old_fins)
                else:
                    spec.pop("finalizers", None)

    @staticmethod
    def _keep_allocated(new: dict[str, Any], existing: dict[str, Any]) -> None:
        spec = new.setdefault("spec", {})
        old_spec = existing.get("spec") or {}
        if spec.get("type", "ClusterIP") == "ExternalName":
            return
        for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
            if not spec.get(key) and old_spec.get(key):
                spec[key] = deep_copy(old_spec[key])
        old_ports = {
            (p.get("port"), p.get("protocol", "TCP")): p for p in old_spec.get("ports") or []
        }
        if spec.get("type") in ("NodePort", "LoadBalancer"):
            for port in spec.get("ports") or []:
                old = old_ports.get((port.get("port"), port.get("protocol", "TCP")))
                if not port.get("nodePort") and old is not None and old.get("nodePort"):
                    port["nodePort"] = old["nodePort"]

    def _should_delete_during_update(
        self, rt: ResourceType, new: dict[str, Any], existing: dict[str, Any]
    ) -> bool:
        old_meta = _ro_meta(existing)
        if _ro_meta(new).get("finalizers"):
            return False
        if not old_meta.get("deletionTimestamp"):
            return False
        if rt.storage_key == NAMESPACES and (new.get("spec") or {}).get("finalizers"):
            return False
        grace = old_meta.get("deletionGracePeriodSeconds")
        return grace is None or grace == 0

    def _commit_update(
        self,
        rt: ResourceType,
        existing_stored: dict[str, Any],
        stored_new: dict[str, Any],
        *,
        dry_run: bool,
    ) -> dict[str, Any]:
        """Store an update; a no-op update stores nothing; returns the stored result."""
        key = rt.storage_key
        meta = _ro_meta(existing_stored)
        if self._should_delete_during_update(rt, stored_new, existing_stored):
            if not dry_run:
                self.store.delete(key, meta.get("namespace") or "", meta["name"])
            return stored_new
        if _is_noop(stored_new, existing_stored):
            return existing_stored
        if dry_run:
            return stored_new
        try:
            event = self.store.update(key, stored_new, meta.get("resourceVersion") or "")
        except (KeyNotFoundError, RVMismatchError):
            raise conflict(rt.group, rt.plural, meta.get("name", "")) from None
        return event.obj

    def update_internal(
        self,
        key: StorageKey,
        namespace: str,
        name: str,
        mutate: Callable[[dict[str, Any]], bool],
        *,
        manager: str = "kube-controller-manager",
        subresource: str = "",
    ) -> dict[str, Any] | None:
        """A controller's read-modify-write of a stored object (no admission, no validation).

        ``mutate`` changes the copy in place and returns whether it changed anything.
        """
        rt = self.registry.storage_type(key)
        if rt is None:
            return None
        stored = self.store.get(key, namespace, name)
        if stored is None:
            return None
        new = deep_copy(stored)
        if not mutate(new):
            return stored
        self._track(rt, stored, new, manager, subresource=subresource)
        return self._commit_update(rt, stored, new, dry_run=False)

    # --- scale ----------------------------------------------------------------------------------

    def scale_of(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """The ``autoscaling/v1`` ``Scale`` of an object with a scale subresource."""
        spec_path, status_path, selector_path = rt.scale_paths or (
            ".spec.replicas",
            ".status.replicas",
            None,
        )
        meta = _ro_meta(obj)
        spec_replicas = _first_int(obj, spec_path)
        status_replicas = _first_int(obj, status_path)
        if selector_path is not None:
            found = _safe_find(obj, selector_path)
            selector = found[0] if found and isinstance(found[0], str) else ""
        else:
            raw = (obj.get("spec") or {}).get("selector")
            if isinstance(raw, dict) and ("matchLabels" in raw or "matchExpressions" in raw):
                try:
                    parsed = selector_from_object(raw)
                except SelectorError as exc:
                    raise bad_request(str(exc)) from None
                selector = str(parsed) if parsed is not None else ""
            elif isinstance(raw, dict):
                selector = ",".join(f"{k}={v}" for k, v in sorted(raw.items()))
            else:
                selector = ""
        scale_meta = {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        }
        status: dict[str, Any] = {"replicas": status_replicas}
        if selector:
            status["selector"] = selector
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": scale_meta,
            "spec": {"replicas": spec_replicas},
            "status": status,
        }

    async def update_scale(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        *,
        scale_body: dict[str, Any] | None,
        patch_type: str,
        patch: Any,
        opts: WriteOptions,
    ) -> dict[str, Any]:
        """PUT or PATCH of the scale subresource; returns the new Scale.

        The body, or the patched Scale, is decoded as ``autoscaling/v1`` ``Scale``: unknown
        fields are warned about or refused by ``fieldValidation`` (in ``opts.warnings``).
        """
        spec_path = (rt.scale_paths or (".spec.replicas", "", None))[0]
        opts.patch_type = patch_type
        opts.patch = patch

        def compute(existing: dict[str, Any] | None) -> dict[str, Any]:
            if existing is None:
                raise not_found(rt.group, rt.plural, name)
            old_scale = self.scale_of(rt, existing)
            if scale_body is not None:
                scale = deep_copy(scale_body)
            else:
                try:
                    if patch_type == "json":
                        scale = _patch.json_patch(old_scale, patch)
                    elif patch_type == "merge":
                        scale = _patch.json_merge_patch(old_scale, patch)
                    elif patch_type == "strategic":
                        scale = _patch.strategic_merge_patch(
                            old_scale, patch, group="autoscaling", version="v1", kind="Scale"
                        )
                    else:
                        raise bad_request("apply patches are not supported for scale")
                except _patch.PatchError as exc:
                    raise StatusError(exc.code, exc.reason, exc.message, details=False) from None
            self._decode_go("autoscaling", "v1", "Scale", scale, opts)
            if scale.get("kind", "Scale") != "Scale":
                raise bad_request(
                    f"the kind in the data ({scale.get('kind')}) does not match the expected "
                    "kind (Scale)"
                )
            replicas = (scale.get("spec") or {}).get("replicas", 0)
            scale_name = _ro_meta(scale).get("name") or ""
            if scale_name != name:
                raise bad_request(
                    f"the name of the object ({scale_name}) does not match the name on the URL "
                    f"({name})"
                )
            if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
                raise invalid(
                    "autoscaling",
                    "Scale",
                    name,
                    [
                        field_invalid(
                            "spec.replicas", replicas, "must be greater than or equal to 0"
                        )
                    ],
                )
            new = existing
            _set_path(new, spec_path, replicas)
            rv = _ro_meta(scale).get("resourceVersion")
            meta_of(new)["resourceVersion"] = rv or ""
            return new

        result, _ = await self._update_loop(
            rt, namespace, name, compute, opts, subresource="scale", create_allowed=False
        )
        return self.scale_of(rt, result)

    # --- delete ---------------------------------------------------------------------------------

    def validate_delete_options(self, opts: DeleteOptions) -> None:
        """``ValidateDeleteOptions``: 422 for contradicting or unknown options."""
        causes: list[Cause] = []
        if opts.orphan_dependents is not None and opts.propagation is not None:
            causes.append(
                field_invalid(
                    "propagationPolicy",
                    opts.propagation,
                    "orphanDependents and deletionPropagation cannot be both set",
                )
            )
        if opts.propagation is not None and opts.propagation not in (
            "Foreground",
            "Background",
            "Orphan",
        ):
            causes.append(
                field_not_supported(
                    "propagationPolicy",
                    opts.propagation,
                    ["Foreground", "Background", "Orphan", "nil"],
                )
            )
        if causes:
            raise invalid("meta.k8s.io", "DeleteOptions", "", causes)

    async def delete(
        self, rt: ResourceType, namespace: str, name: str, opts: DeleteOptions
    ) -> tuple[dict[str, Any], int]:
        """DELETE: returns (response body, HTTP status)."""
        self.validate_delete_options(opts)
        stored = self.get_stored(rt, namespace, name)
        if rt.storage_key == NAMESPACES and name in IMMORTAL_NAMESPACES:
            raise forbidden("", "namespaces", name, "this namespace may not be deleted")
        self._check_preconditions(rt, stored, opts)
        existing = await self.external(rt, stored)
        await self._validate_admission(
            rt,
            "DELETE",
            obj=None,
            old=existing,
            namespace=namespace,
            name=name,
            subresource="",
            dry_run=opts.dry_run,
            options=opts.raw,
            warnings=opts.warnings,
        )
        result, deleted = self.delete_core(rt, namespace if rt.namespaced else "", name, opts)
        code = 200
        if not deleted and opts.orphan_dependents is False:
            code = 202
        if result.get("kind") == "Status":
            return result, code
        return await self.external(rt, result), code

    def _check_preconditions(
        self, rt: ResourceType, stored: dict[str, Any], opts: DeleteOptions
    ) -> None:
        meta = _ro_meta(stored)
        target = f"{rt.kind}.{rt.group}" if rt.group else rt.kind
        name = meta.get("name", "")
        if opts.uid is not None and opts.uid != meta.get("uid"):
            raise StatusError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {target} "{name}": the UID in the '
                f"precondition ({opts.uid}) does not match the UID in record ({meta.get('uid')}). "
                "The object might have been deleted and then recreated",
                name=name,
                group=rt.group,
                kind=rt.kind,
            )
        if opts.resource_version is not None and opts.resource_version != meta.get(
            "resourceVersion"
        ):
            raise StatusError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {target} "{name}": the ResourceVersion in the '
                f"precondition ({opts.resource_version}) does not match the ResourceVersion in "
                f"record ({meta.get('resourceVersion')}). The object might have been modified",
                name=name,
                group=rt.group,
                kind=rt.kind,
            )

    def _gc_finalizers(
        self, rt: ResourceType, meta: dict[str, Any], opts: DeleteOptions
    ) -> tuple[bool, list[str]]:
        """``deletionFinalizersForGarbageCollection`` of store.go."""
        current = list(meta.get("finalizers") or [])
        if rt.default_gc_policy == "Unsupported":
            return False, current
        orphan = self._should_orphan(rt, current, opts)
        foreground = self._should_foreground(current, opts)
        new = [f for f in current if f not in ("orphan", "foregroundDeletion")]
        if orphan:
            new.append("orphan")
        if foreground:
            new.append("foregroundDeletion")
        if set(new) == set(current):
            return False, current
        return True, new

    @staticmethod
    def _should_orphan(rt: ResourceType, finalizers: list[str], opts: DeleteOptions) -> bool:
        if opts.orphan_dependents is not None:
            return opts.orphan_dependents
        if opts.propagation is not None:
            return opts.propagation == "Orphan"
        for f in finalizers:
            if f == "orphan":
                return True
            if f == "foregroundDeletion":
                return False
        return rt.default_gc_policy == "Orphan"

    @staticmethod
    def _should_foreground(finalizers: list[str], opts: DeleteOptions) -> bool:
        if opts.orphan_dependents is not None:
            return False
        if opts.propagation is not None:
            return opts.propagation == "Foreground"
        for f in finalizers:
            if f == "foregroundDeletion":
                return True
            if f == "orphan":
                return False
        return False

    def delete_core(
        self, rt: ResourceType, ns_key: str, name: str, opts: DeleteOptions
    ) -> tuple[dict[str, Any], bool]:
        """store.Delete: finalizers, graceful deletion, GC finalizers; (stored result, deleted)."""
        key = rt.storage_key
        stored = self.store.get(key, ns_key, name)
        if stored is None:
            raise not_found(rt.group, rt.plural, name)
        if key == NAMESPACES:
            return self._delete_namespace(rt, stored, opts)
        if key == CRDS and not _ro_meta(stored).get("deletionTimestamp"):
            return self._delete_crd(rt, stored, opts)
        meta = _ro_meta(stored)
        new = deep_copy(stored)
        new_meta = meta_of(new)
        graceful = False
        period = 0
        if meta.get("deletionTimestamp"):
            grace = int(meta.get("deletionGracePeriodSeconds") or 0)
            if grace:
                # Only a shorter grace period may be asked for while deletion is pending.
                if opts.grace_period is None or max(opts.grace_period, 0) >= grace:
                    return self._finalize_delete(rt, stored), False
                period = max(opts.grace_period, 0)
                graceful = True
                new_meta["deletionTimestamp"] = _shift_time(
                    str(meta["deletionTimestamp"]), period - grace
                )
                new_meta["deletionGracePeriodSeconds"] = period
        elif rt.graceful_delete:
            graceful = True
            period = self._grace_period(stored, opts)
        update_fins, fins = self._gc_finalizers(rt, meta, opts)
        if update_fins:
            if fins:
                new_meta["finalizers"] = fins
            else:
                new_meta.pop("finalizers", None)
        pending = bool(new_meta.get("finalizers"))
        if graceful or pending or update_fins:
            if graceful:
                if not meta.get("deletionTimestamp"):
                    new_meta["deletionTimestamp"] = now_rfc3339(period)
                    new_meta["deletionGracePeriodSeconds"] = period
                    if int(new_meta.get("generation") or 0) > 0:
                        new_meta["generation"] = int(new_meta["generation"]) + 1
            elif pending:
                if not new_meta.get("deletionTimestamp"):
                    if int(new_meta.get("generation") or 0) > 0:
                        new_meta["generation"] = int(new_meta["generation"]) + 1
                    new_meta["deletionTimestamp"] = now_rfc3339()
                new_meta["deletionGracePeriodSeconds"] = 0
            if graceful or pending:
                out = self._write_deleting(rt, stored, new, opts.dry_run)
                if pending or period > 0:
                    return out, False
                stored = out
        if opts.dry_run:
            return stored if rt.return_deleted_object else self._status_success(rt, stored), True
        try:
            event = self.store.delete(key, ns_key, name)
        except KeyNotFoundError:
            raise not_found(rt.group, rt.plural, name) from None
        return self._finalize_delete(rt, event.obj), True

    def _write_deleting(
        self, rt: ResourceType, stored: dict[str, Any], new: dict[str, Any], dry_run: bool
    ) -> dict[str, Any]:
        if dry_run or new == stored:
            return new
        meta = _ro_meta(stored)
        event = self.store.update(rt.storage_key, new, meta.get("resourceVersion") or "")
        return event.obj

    @staticmethod
    def _grace_period(stored: dict[str, Any], opts: DeleteOptions) -> int:
        spec = stored.get("spec") or {}
        if opts.grace_period is not None:
            period = max(opts.grace_period, 0) if opts.grace_period >= 0 else 1
        else:
            period = int(spec.get("terminationGracePeriodSeconds") or 0)
        if not spec.get("nodeName"):
            period = 0
        if (stored.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            period = 0
        return period

    def _finalize_delete(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        if rt.return_deleted_object:
            return obj
        return self._status_success(rt, obj)

    @staticmethod
    def _status_success(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        meta = _ro_meta(obj)
        details: dict[str, Any] = {"name": meta.get("name", "")}
        if rt.group:
            details["group"] = rt.group
        details["kind"] = rt.plural
        if meta.get("uid"):
            details["uid"] = meta["uid"]
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": details,
        }

    def _delete_namespace(
        self, rt: ResourceType, stored: dict[str, Any], opts: DeleteOptions
    ) -> tuple[dict[str, Any], bool]:
        meta = _ro_meta(stored)
        if not meta.get("deletionTimestamp"):
            new = deep_copy(stored)
            new_meta = meta_of(new)
            new_meta["deletionTimestamp"] = now_rfc3339()
            new.setdefault("status", {})["phase"] = "Terminating"
            fins = list(new_meta.get("finalizers") or [])
            orphan = opts.orphan_dependents is True or opts.propagation == "Orphan"
            foreground = opts.propagation == "Foreground"
            if orphan and "orphan" not in fins:
                fins.append("orphan")
            if foreground and "foregroundDeletion" not in fins:
                fins.append("foregroundDeletion")
            if fins:
                new_meta["finalizers"] = fins
            return self._write_deleting(rt, stored, new, opts.dry_run), False
        if (stored.get("spec") or {}).get("finalizers"):
            return stored, False
        if meta.get("finalizers"):
            return stored, False
        if opts.dry_run:
            return stored, True
        event = self.store.delete(rt.storage_key, "", meta["name"])
        return event.obj, True

    def _delete_crd(
        self, rt: ResourceType, stored: dict[str, Any], opts: DeleteOptions
    ) -> tuple[dict[str, Any], bool]:
        new = deep_copy(stored)
        meta = meta_of(new)
        meta["deletionTimestamp"] = now_rfc3339()
        fins = list(meta.get("finalizers") or [])
        if "customresourcecleanup.apiextensions.k8s.io" not in fins:
            fins.append("customresourcecleanup.apiextensions.k8s.io")
        meta["finalizers"] = fins
        set_condition(
            new,
            "Terminating",
            "True",
            "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        )
        if int(meta.get("generation") or 0) > 0:
            meta["generation"] = int(meta["generation"]) + 1
        return self._write_deleting(rt, stored, new, opts.dry_run), False

    def delete_internal(
        self,
        key: StorageKey,
        namespace: str,
        name: str,
        *,
        propagation: str | None = None,
        uid: str | None = None,
    ) -> None:
        """A controller's delete (no admission); missing objects are fine."""
        rt = self.registry.storage_type(key)
        if rt is None:
            self.store.drop_key(key)
            return
        stored = self.store.get(key, namespace, name)
        if stored is None:
            return
        if uid is not None and _ro_meta(stored).get("uid") != uid:
            return
        try:
            self.delete_core(rt, namespace, name, DeleteOptions(propagation=propagation))
        except StatusError as exc:
            if exc.code != 404:
                raise

    async def delete_collection(
        self,
        rt: ResourceType,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        opts: DeleteOptions,
    ) -> list[dict[str, Any]]:
        """DELETE on a collection: deletes every selected object; returns them as listed."""
        self.validate_delete_options(opts)
        listed = self.list_stored(rt, namespace, labels=labels, fields=fields)
        for obj in listed.items:
            meta = _ro_meta(obj)
            try:
                await self.delete(
                    rt,
                    meta.get("namespace") or "",
                    meta["name"],
                    DeleteOptions(
                        propagation=opts.propagation,
                        orphan_dependents=opts.orphan_dependents,
                        grace_period=opts.grace_period,
                        dry_run=opts.dry_run,
                        raw=opts.raw,
                    ),
                )
            except StatusError as exc:
                if exc.code != 404:
                    raise
        return listed.items


def _shift_time(timestamp: str, seconds: int) -> str:
    try:
        moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return now_rfc3339(seconds)
    return (moment + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _reset_fields(rt: ResourceType, subresource: str) -> list[str]:
    """Fields an endpoint ignores (kube-apiserver's ResetFieldsStrategy)."""
    if subresource == "status":
        return ["spec"]
    if subresource:
        return []
    return ["status"] if rt.has_status else []


def set_condition(obj: dict[str, Any], type_: str, status: str, reason: str, message: str) -> bool:
    """Set a status condition (lastTransitionTime changes only with the status)."""
    conditions = obj.setdefault("status", {}).setdefault("conditions", [])
    for cond in conditions:
        if cond.get("type") == type_:
            changed = bool(
                cond.get("status") != status
                or cond.get("reason") != reason
                or cond.get("message") != message
            )
            if cond.get("status") != status:
                cond["lastTransitionTime"] = now_rfc3339()
            cond["status"] = status
            cond["reason"] = reason
            cond["message"] = message
            return changed
    conditions.append(
        {
            "type": type_,
            "status": status,
            "lastTransitionTime": now_rfc3339(),
            "reason": reason,
            "message": message,
        }
    )
    return True


def _safe_find(obj: dict[str, Any], path: str) -> list[Any]:
    try:
        return find(obj, path)
    except JSONPathError:
        return []


def _first_int(obj: dict[str, Any], path: str) -> int:
    found = _safe_find(obj, path) if path else []
    if found and isinstance(found[0], int) and not isinstance(found[0], bool):
        return int(found[0])
    return 0


def _set_path(obj: dict[str, Any], path: str, value: Any) -> None:
    parts = [p for p in path.split(".") if p]
    cur = obj
    for part in parts[:-1]:
        nxt = cur.get(part)
        if not isinstance(nxt, dict):
            nxt = {}
            cur[part] = nxt
        cur = nxt
    cur[parts[-1]] = value


def _apply_conflict_error(exc: _managedfields.ApplyConflict) -> StatusError:
    causes = [Cause(c["reason"], c["message"], c["field"]) for c in exc.causes]
    return StatusError(409, "Conflict", exc.message, causes=causes, details=True)
