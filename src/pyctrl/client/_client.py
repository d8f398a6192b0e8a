"""The typed client: CRUD by Python type, through the Scheme and the REST mapper."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Self, TypeVar, cast

import orjson

from pyctrl import tracing
from pyctrl.client._mapper import RESTMapper, RESTMapping
from pyctrl.client._patch import (
    Apply,
    JSONPatch,
    MergeFrom,
    MergePatch,
    Patch,
    StrategicMergeFrom,
)
from pyctrl.client._reader import ObjectList, Reader, WriteObserver
from pyctrl.client._rest import RESTClient
from pyctrl.errors import APIError, ClusterNotFoundError
from pyctrl.labels import Selector
from pyctrl.labels import parse as parse_labels
from pyctrl.resource import PartialObjectMetadata, Unstructured, accessor
from pyctrl.scheme import Scheme, default_scheme

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from types import TracebackType

    from pyctrl._fence import LeaseFence
    from pyctrl._kubernetes import Configuration
    from pyctrl.config import Config
    from pyctrl.meta import GroupVersionKind

__all__ = ["Client", "Preconditions", "PropagationPolicy", "SubResourceClient"]

T = TypeVar("T")

_OWN_PATCHES: frozenset[type[Any]] = frozenset(
    {Apply, JSONPatch, MergeFrom, MergePatch, StrategicMergeFrom}
)

PropagationPolicy = Literal["Orphan", "Background", "Foreground"]
"""How deleting an owner treats its dependents (``metav1.DeletionPropagation``)."""

_JSON = "application/json"
_METADATA_ACCEPT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
_METADATA_LIST_ACCEPT = (
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
)
_PROPAGATION = ("Orphan", "Background", "Foreground")
_FIELD_VALIDATION = ("Ignore", "Warn", "Strict")


@dataclass(frozen=True, slots=True)
class Preconditions:
    """Conditions a delete must meet, checked by the server (409 Conflict otherwise).

    Attributes:
        uid: Delete only the object with this UID (not a re-created namesake).
        resource_version: Delete only if the object is still at this version.
    """

    uid: str | None = None
    resource_version: str | None = None


def _field_selector(fields: str | Mapping[str, str] | None) -> str | None:
    if fields is None or isinstance(fields, str):
        return fields or None

    def escape(value: str) -> str:
        return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")

    return ",".join(f"{k}={escape(str(v))}" for k, v in sorted(fields.items())) or None


def _label_selector(labels: str | Mapping[str, str] | Selector | None) -> str | None:
    if labels is None:
        return None
    if isinstance(labels, str):
        return labels or None
    if isinstance(labels, Selector):
        return str(labels) or None
    return str(parse_labels(labels)) or None


def _is_metadata(type_: type[Any]) -> bool:
    return isinstance(type_, type) and issubclass(type_, PartialObjectMetadata)


def _metadata_only(data: dict[str, Any], gvk: GroupVersionKind | None) -> dict[str, Any]:
    # The server answers kind PartialObjectMetadata; callers want the object's own kind.
    return {
        "apiVersion": gvk.api_version if gvk else data.get("apiVersion"),
        "kind": gvk.kind if gvk else data.get("kind"),
        "metadata": data.get("metadata") or {},
    }


class _API:
    """The request building shared by `Client`, its API reader and subresource clients."""

    def __init__(
        self,
        rest: RESTClient,
        scheme: Scheme,
        mapper: RESTMapper,
        *,
        field_owner: str | None,
        field_validation: str | None,
        timeout: float,
        observer: WriteObserver | None = None,
        fence: LeaseFence | None = None,
    ) -> None:
        self.rest = rest
        self.fence = fence
        self.scheme = scheme
        self.mapper = mapper
        self.field_owner = field_owner
        self.field_validation = field_validation
        self.timeout = timeout
        self.observer = observer

    # own writes ---------------------------------------------------------------------------

    def observe(self, gvk: GroupVersionKind, data: Any) -> None:
        """Tell the observer the object in a write's answer is at its resourceVersion."""
        if self.observer is None or not isinstance(data, dict):
            return
        metadata = data.get("metadata") or {}
        name, version = metadata.get("name"), metadata.get("resourceVersion")
        if name and version:
            self.observer.note_write(gvk, str(metadata.get("namespace") or ""), name, str(version))

    def observe_delete(self, gvk: GroupVersionKind, obj: Any, data: Any) -> None:
        """Tell the observer of a delete, from the object deleted and the server's answer."""
        if self.observer is None:
            return
        if (
            isinstance(data, dict)
            and data.get("kind") != "Status"
            and (data.get("metadata") or {}).get("deletionTimestamp")
        ):
            # Finalizers or a grace period keep it: it was updated, not removed.
            self.observe(gvk, data)
            return
        meta = accessor(obj)
        uid = meta.uid
        if not uid and isinstance(data, dict):
            uid = str((data.get("details") or {}).get("uid") or "")
            uid = uid or str((data.get("metadata") or {}).get("uid") or "")
        self.observer.note_delete(gvk, meta.namespace or "", meta.name, uid)

    # identities ---------------------------------------------------------------------------

    def gvk_of_type(self, type_: type[Any], gvk: GroupVersionKind | None) -> GroupVersionKind:
        if type_ is Unstructured or type_ is dict or _is_metadata(type_):
            if gvk is None:
                raise ValueError(
                    f"{type_.__name__} carries no kind: pass gvk=GroupVersionKind(...)"
                )
            return gvk
        known = self.scheme.gvk_for(type_)
        if gvk is not None and gvk != known:
            raise ValueError(f"gvk={gvk} does not match {type_.__qualname__}, which is {known}")
        return known

    def gvk_of(self, obj: Any) -> GroupVersionKind:
        if isinstance(obj, type):
            raise TypeError(f"expected an object, got the class {obj.__qualname__}")
        return self.scheme.gvk_for(obj)

    async def mapping(self, gvk: GroupVersionKind) -> RESTMapping:
        return await self.mapper.mapping_for(gvk)

    @staticmethod
    def namespace_for(mapping: RESTMapping, namespace: str | None, what: str) -> str | None:
        if not mapping.namespaced:
            return None
        if not namespace:
            raise ValueError(
                f"{mapping.gvk.kind} is namespaced: {what} needs a namespace "
                "(set metadata.namespace, or pass namespace=...)"
            )
        return namespace

    async def object_path(
        self, obj: Any, what: str, subresource: str | None = None
    ) -> tuple[GroupVersionKind, str]:
        gvk = self.gvk_of(obj)
        mapping = await self.mapping(gvk)
        meta = accessor(obj)
        if not meta.name:
            raise ValueError(f"{what} {gvk.kind}: the object has no metadata.name")
        namespace = self.namespace_for(mapping, meta.namespace, f"{what} {gvk.kind} {meta.name!r}")
        return gvk, RESTMapper.path(mapping, namespace, meta.name, subresource)

    # decoding -----------------------------------------------------------------------------

    def decode(self, data: Any, type_: type[T], gvk: GroupVersionKind | None) -> T:
        if not isinstance(data, dict):
            raise TypeError(f"the API server answered with a {type(data).__name__}, not an object")
        if _is_metadata(type_):
            model = cast("type[PartialObjectMetadata]", type_)
            return cast("T", model.model_validate(_metadata_only(data, gvk)))
        if gvk is not None and (not data.get("apiVersion") or not data.get("kind")):
            # List items of built-in kinds come without apiVersion and kind.
            data["apiVersion"], data["kind"] = gvk.api_version, gvk.kind
        if type_ is Unstructured:
            # Freshly decoded: nobody else holds this dict, so no copy is needed.
            return cast("T", Unstructured(data))
        if type_ is dict:
            return cast("T", data)
        return self.scheme.from_dict(data, type_)

    def decode_list(self, data: Any, type_: type[T], gvk: GroupVersionKind) -> ObjectList[T]:
        if not isinstance(data, dict):
            raise TypeError(f"the API server answered with a {type(data).__name__}, not a list")
        metadata = data.get("metadata") or {}
        items = [self.decode(item, type_, gvk) for item in data.get("items") or ()]
        remaining = metadata.get("remainingItemCount")
        return ObjectList(
            items=items,
            resource_version=str(metadata.get("resourceVersion") or ""),
            continue_=metadata.get("continue") or None,
            remaining_item_count=int(remaining) if remaining is not None else None,
        )

    # writes -------------------------------------------------------------------------------

    def write_query(
        self, *, dry_run: bool, field_manager: str | None, force: bool | None = None
    ) -> dict[str, str]:
        query: dict[str, str] = {}
        if dry_run:
            query["dryRun"] = "All"
        manager = field_manager or self.field_owner
        if manager:
            query["fieldManager"] = manager
        if self.field_validation:
            query["fieldValidation"] = self.field_validation
        if force is not None:
            query["force"] = "true" if force else "false"
        return query

    async def send(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
        accept: str = _JSON,
        gvk: GroupVersionKind | None = None,
        namespace: str | None = None,
        name: str | None = None,
    ) -> Any:
        send = functools.partial(
            self.rest.request,
            method,
            path,
            query=query,
            body=body,
            content_type=content_type,
            accept=accept,
            timeout=self.timeout,
            fence=None if method == "GET" else self.fence,
        )
        tracer = tracing.tracer()
        if tracer is None:
            return (await send()).json()
        with tracing.client_span(tracer, method, gvk, namespace, name) as span:
            try:
                response = await send()
            except APIError as exc:
                tracing.set_status_code(span, exc.code)
                raise
            tracing.set_status_code(span, response.status)
            data = response.json()
            version = isinstance(data, dict) and (data.get("metadata") or {}).get("resourceVersion")
            if version:
                # The resourceVersion written: the watch event it causes carries the same.
                span.set_attribute("k8s.resource_version", version)
            return data

    async def write(
        self,
        method: str,
        obj: Any,
        *,
        what: str,
        subresource: str | None = None,
        body: Any = None,
        result_type: type[Any] | None = None,
        dry_run: bool,
        field_manager: str | None,
    ) -> Any:
        gvk, path = await self.object_path(obj, what, subresource)
        payload = obj if body is None else body
        meta = accessor(obj)
        data = await self.send(
            method,
            path,
            gvk=gvk,
            namespace=meta.namespace,
            name=meta.name,
            query=self.write_query(dry_run=dry_run, field_manager=field_manager),
            body=orjson.dumps(self.scheme.to_dict(payload)),
            content_type=_JSON,
            accept=_METADATA_ACCEPT if _is_metadata(type(payload)) else _JSON,
        )
        if body is None and not dry_run:
            self.observe(gvk, data)
        type_ = result_type or type(payload)
        return self.decode(data, type_, gvk if body is None else None)

    async def patch(
        self,
        obj: Any,
        patch: Patch,
        *,
        subresource: str | None,
        body: Any,
        dry_run: bool,
        field_manager: str | None,
    ) -> Any:
        # isinstance() against a runtime-checkable Protocol inspects the object's
        # attributes on every call; pyctrl's own patch classes always conform.
        if type(patch) not in _OWN_PATCHES and not isinstance(patch, Patch):
            raise TypeError(
                f"patch must be a pyctrl.client Patch (MergeFrom, JSONPatch, Apply...), "
                f"not {type(patch).__qualname__}"
            )
        gvk, path = await self.object_path(obj, "patch", subresource)
        target = obj if body is None else body
        force: bool | None = None
        if isinstance(patch, Apply):
            force = patch.force
            if not (field_manager or self.field_owner):
                raise ValueError(
                    "server-side apply needs a field manager: pass field_manager=... "
                    "or create the Client with field_owner=..."
                )
        meta = accessor(obj)
        data = await self.send(
            "PATCH",
            path,
            gvk=gvk,
            namespace=meta.namespace,
            name=meta.name,
            query=self.write_query(dry_run=dry_run, field_manager=field_manager, force=force),
            body=patch.data(target, self.scheme),
            content_type=patch.content_type,
            accept=_METADATA_ACCEPT if _is_metadata(type(target)) else _JSON,
        )
        if body is None and not dry_run:
            self.observe(gvk, data)
        # An apply configuration answers with the full object, of the type it configures.
        result_type = getattr(type(target), "__apply_for__", type(target))
        return self.decode(data, result_type, gvk if body is None else None)

    # reads --------------------------------------------------------------------------------

    async def get(
        self,
        type_: type[T],
        name: str,
        namespace: str | None,
        gvk: GroupVersionKind | None,
    ) -> T:
        kind = self.gvk_of_type(type_, gvk)
        if not name:
            raise ValueError(f"get {kind.kind}: name must not be empty")
        mapping = await self.mapping(kind)
        ns = self.namespace_for(mapping, namespace, f"get {kind.kind} {name!r}")
        data = await self.send(
            "GET",
            RESTMapper.path(mapping, ns, name),
            gvk=kind,
            namespace=ns,
            name=name,
            accept=_METADATA_ACCEPT if _is_metadata(type_) else _JSON,
        )
        return self.decode(data, type_, kind)

    async def list(
        self,
        type_: type[T],
        *,
        namespace: str | None,
        labels: str | Mapping[str, str] | Selector | None,
        fields: str | Mapping[str, str] | None,
        limit: int | None,
        continue_: str | None,
        gvk: GroupVersionKind | None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
    ) -> ObjectList[T]:
        kind = self.gvk_of_type(type_, gvk)
        mapping = await self.mapping(kind)
        query: dict[str, str] = {}
        if (selector := _label_selector(labels)) is not None:
            query["labelSelector"] = selector
        if (field_selector := _field_selector(fields)) is not None:
            query["fieldSelector"] = field_selector
        if limit is not None:
            if limit < 0:
                raise ValueError(f"limit must be >= 0, got {limit}")
            query["limit"] = str(limit)
        if continue_:
            query["continue"] = continue_
        if resource_version is not None:
            query["resourceVersion"] = resource_version
        if resource_version_match is not None:
            query["resourceVersionMatch"] = resource_version_match
        ns = namespace if mapping.namespaced and namespace else None
        data = await self.send(
            "GET",
            RESTMapper.path(mapping, ns),
            gvk=kind,
            namespace=ns,
            query=query,
            accept=_METADATA_LIST_ACCEPT if _is_metadata(type_) else _JSON,
        )
        return self.decode_list(data, type_, kind)


def _delete_options(
    *,
    propagation_policy: PropagationPolicy | None,
    grace_period_seconds: int | None,
    preconditions: Preconditions | None,
    dry_run: bool,
) -> bytes:
    options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
    if propagation_policy is not None:
        if propagation_policy not in _PROPAGATION:
            raise ValueError(
                f"propagation_policy must be one of {', '.join(_PROPAGATION)}, "
                f"not {propagation_policy!r}"
            )
        options["propagationPolicy"] = propagation_policy
    if grace_period_seconds is not None:
        if grace_period_seconds < 0:
            raise ValueError(f"grace_period_seconds must be >= 0, got {grace_period_seconds}")
        options["gracePeriodSeconds"] = grace_period_seconds
    if preconditions is not None:
        conditions: dict[str, str] = {}
        if preconditions.uid:
            conditions["uid"] = preconditions.uid
        if preconditions.resource_version:
            conditions["resourceVersion"] = preconditions.resource_version
        if conditions:
            options["preconditions"] = conditions
    if dry_run:
        options["dryRun"] = ["All"]
    return orjson.dumps(options)


class _APIReader:
    """Reads straight from the API server (the client's uncached reader)."""

    def __init__(self, api: _API) -> None:
        self._api = api

    async def get(
        self,
        type_: type[T],
        name: str,
        namespace: str | None = None,
        *,
        gvk: GroupVersionKind | None = None,
    ) -> T:
        """Read one object from the API server."""
        return await self._api.get(type_, name, namespace, gvk)

    async def list(
        self,
        type_: type[T],
        *,
        namespace: str | None = None,
        labels: str | Mapping[str, str] | Selector | None = None,
        fields: str | Mapping[str, str] | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        gvk: GroupVersionKind | None = None,
    ) -> ObjectList[T]:
        """List objects from the API server."""
        return await self._api.list(
            type_,
            namespace=namespace,
            labels=labels,
            fields=fields,
            limit=limit,
            continue_=continue_,
            gvk=gvk,
        )


class SubResourceClient:
    """Reads and writes one subresource of objects: ``status``, ``scale``, ``eviction``...

    Got from `Client.status` or `Client.subresource`; controller-runtime's
    ``SubResourceClient``. Results are new objects: of the object's own type for
    ``status``, of the body's type when a separate body is sent (a ``Scale``, an
    ``Eviction``), else `pyctrl.resource.Unstructured`.
    """

    def __init__(self, api: _API, name: str) -> None:
        if not name or "/" in name:
            raise ValueError(f"invalid subresource name {name!r}")
        self._api = api
        self.name = name

    def _result_type(self, obj: Any, body: Any, type_: type[Any] | None) -> type[Any]:
        if type_ is not None:
            return type_
        if body is not None:
            return type(body)
        return type(obj) if self.name == "status" else Unstructured

    async def get(self, obj: T, *, type_: type[Any] | None = None) -> Any:
        """Read the subresource of ``obj`` (e.g. its ``scale``).

        Args:
            obj: The object whose subresource to read (its kind, name and namespace).
            type_: The type to decode into (default: ``obj``'s type for ``status``,
                `Unstructured` otherwise).
        """
        gvk, path = await self._api.object_path(obj, "get", self.name)
        result = self._result_type(obj, None, type_)
        data = await self._api.send("GET", path)
        return self._api.decode(data, result, gvk if result is type(obj) else None)

    async def create(
        self,
        obj: Any,
        body: Any,
        *,
        type_: type[Any] | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> Any:
        """POST ``body`` to the subresource of ``obj`` (e.g. an Eviction to ``pods/eviction``).

        Returns:
            The server's answer, decoded into ``type_`` (default: the body's type).
        """
        return await self._api.write(
            "POST",
            obj,
            what="create",
            subresource=self.name,
            body=body,
            result_type=self._result_type(obj, body, type_),
            dry_run=dry_run,
            field_manager=field_manager,
        )

    async def update(
        self,
        obj: T,
        *,
        body: Any = None,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> Any:
        """PUT the subresource: ``obj`` itself for ``status``, or ``body`` (e.g. a Scale).

        Returns:
            The updated object, of ``obj``'s type (or ``body``'s type when given).
        """
        return await self._api.write(
            "PUT",
            obj,
            what="update",
            subresource=self.name,
            body=body,
            result_type=self._result_type(obj, body, None),
            dry_run=dry_run,
            field_manager=field_manager,
        )

    async def patch(
        self,
        obj: T,
        patch: Patch,
        *,
        body: Any = None,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> Any:
        """PATCH the subresource; the patch is rendered from ``body`` if given, else ``obj``.

        Returns:
            The patched object, of ``obj``'s type (or ``body``'s type when given).
        """
        return await self._api.patch(
            obj,
            patch,
            subresource=self.name,
            body=body,
            dry_run=dry_run,
            field_manager=field_manager,
        )

    async def apply(
        self,
        obj: T,
        *,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> T:
        """Server-side apply ``obj`` to the subresource (e.g. the fields of status you own)."""
        result: T = await self.patch(
            obj, Apply(force=force), dry_run=dry_run, field_manager=field_manager
        )
        return result


class Client:
    """Reads and writes Kubernetes objects by Python type (controller-runtime's ``client.Client``).

    Objects may be `pyctrl.resource.CustomResource` instances, kubernetes-asyncio models
    of built-in kinds (``V1Deployment``), `pyctrl.resource.Unstructured`,
    `pyctrl.resource.PartialObjectMetadata` (metadata-only), or plain dicts; the
    `pyctrl.scheme.Scheme` says which kind each is and the `RESTMapper` where it lives.
    Every returned object is new: the caller's object is never changed, nor shared.

    Reads (`get`, `list`) go to ``cache`` when one is given (the Manager's client reads
    from its informers, like controller-runtime's default client) and to the API server
    otherwise; `api_reader` always reads from the API server. Writes always go to the
    API server. When ``cache`` is a `WriteObserver` (as `pyctrl.cache.Cache` is), every
    write is reported to it, so that cached reads never go behind this client's own
    writes (`pyctrl.cache.CacheOptions.read_your_own_writes`).

    Args:
        rest: The HTTP client.
        scheme: The type registry (default: `pyctrl.scheme.default_scheme`).
        mapper: The REST mapper (default: a new one over ``rest``).
        cache: A reader to serve `get` and `list` from (e.g. `pyctrl.cache.Cache`).
        field_owner: The field manager recorded for every write that names none
            (controller-runtime's ``client.WithFieldOwner``).
        uncached_types: Types whose reads bypass ``cache``.
        cache_unstructured: Read `Unstructured` objects from ``cache`` too (by default
            they are read from the API server, as in controller-runtime).
        field_validation: ``"Strict"``, ``"Warn"`` or ``"Ignore"``: how the server
            treats unknown or duplicate fields in writes (server default when None).
        timeout: Seconds allowed for each request.
        fence: A `pyctrl.leaderelection.LeaseFence`: once its hold on the Lease ends,
            every write (create, update, patch, apply, delete, status and other
            subresources) raises `pyctrl.errors.LeaseLostError` unsent. The Manager
            passes its leader-election fence; reads are never fenced.
    """

    def __init__(
        self,
        rest: RESTClient,
        *,
        scheme: Scheme | None = None,
        mapper: RESTMapper | None = None,
        cache: Reader | None = None,
        field_owner: str | None = None,
        uncached_types: Iterable[type[Any]] = (),
        cache_unstructured: bool = False,
        field_validation: Literal["Ignore", "Warn", "Strict"] | None = None,
        timeout: float = 60.0,
        fence: LeaseFence | None = None,
    ) -> None:
        if field_validation is not None and field_validation not in _FIELD_VALIDATION:
            raise ValueError(
                f"field_validation must be one of {', '.join(_FIELD_VALIDATION)}, "
                f"not {field_validation!r}"
            )
        self._api = _API(
            rest,
            scheme or default_scheme(),
            mapper or RESTMapper(rest),
            field_owner=field_owner,
            field_validation=field_validation,
            timeout=timeout,
            observer=cache if isinstance(cache, WriteObserver) else None,
            fence=fence,
        )
        self._cache = cache
        self._uncached = frozenset(uncached_types)
        if not cache_unstructured:
            self._uncached |= {Unstructured, dict}
        self._api_reader = _APIReader(self._api)
        self._owns_rest = False
        self.cluster_resolver: Callable[[str], Client] | None = None
        """Finds the client of an engaged cluster for `for_cluster`; the Manager sets it."""

    @classmethod
    def from_config(cls, config: Config | Configuration, **options: Any) -> Client:
        """A client with its own `RESTClient` for ``config``; close it with `aclose`.

        ``options`` are the other arguments of `Client`.
        """
        client = cls(RESTClient(config), **options)
        client._owns_rest = True
        return client

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the `RESTClient` if this client created it (`from_config`)."""
        if self._owns_rest:
            await self._api.rest.aclose()

    @property
    def rest(self) -> RESTClient:
        """The HTTP client."""
        return self._api.rest

    @property
    def scheme(self) -> Scheme:
        """The type registry."""
        return self._api.scheme

    @property
    def mapper(self) -> RESTMapper:
        """The REST mapper."""
        return self._api.mapper

    @property
    def field_owner(self) -> str | None:
        """The default field manager of writes."""
        return self._api.field_owner

    @property
    def api_reader(self) -> Reader:
        """A reader that always reads from the API server, never from the cache."""
        return self._api_reader

    def for_cluster(self, cluster: str) -> Client:
        """The client of the engaged cluster ``cluster``; this client for "" (the local one).

        A multi-cluster reconciler writes where its request lives with
        ``client.for_cluster(request.cluster)`` (see `pyctrl.cluster`).

        Raises:
            ClusterNotFoundError: No cluster of that name is engaged (or this client
                belongs to no manager that engages clusters).
        """
        if not cluster:
            return self
        if self.cluster_resolver is None:
            raise ClusterNotFoundError(
                f"cluster {cluster!r}: this client belongs to no manager that engages clusters"
            )
        return self.cluster_resolver(cluster)

    def with_field_owner(self, field_owner: str) -> Client:
        """A client like this one whose writes name ``field_owner`` as field manager."""
        clone = Client.__new__(Client)
        clone.__dict__.update(self.__dict__)
        api = self._api
        clone._api = _API(
            api.rest,
            api.scheme,
            api.mapper,
            field_owner=field_owner,
            field_validation=api.field_validation,
            timeout=api.timeout,
            observer=api.observer,
            fence=api.fence,
        )
        clone._api_reader = _APIReader(clone._api)
        clone._owns_rest = False
        return clone

    def _reader_for(self, type_: type[Any]) -> Reader:
        if self._cache is None or type_ in self._uncached:
            return self._api_reader
        return self._cache

    def gvk_for(self, obj_or_type: Any) -> GroupVersionKind:
        """The GroupVersionKind of an object or type, per the client's scheme."""
        return self._api.scheme.gvk_for(obj_or_type)

    async def get(
        self,
        type_: type[T],
        name: str,
        namespace: str | None = None,
        *,
        gvk: GroupVersionKind | None = None,
    ) -> T:
        """Read the object ``namespace/name`` of ``type_``.

        Args:
            type_: The Python type to return.
            name: The object's name.
            namespace: Its namespace (required for namespaced kinds).
            gvk: The kind, for `Unstructured`, `PartialObjectMetadata` and dict.

        Raises:
            pyctrl.errors.NotFoundError: No such object.
            NoKindMatchError: The server does not serve the kind.
        """
        return await self._reader_for(type_).get(type_, name, namespace, gvk=gvk)

    async def list(
        self,
        type_: type[T],
        *,
        namespace: str | None = None,
        labels: str | Mapping[str, str] | Selector | None = None,
        fields: str | Mapping[str, str] | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        gvk: GroupVersionKind | None = None,
    ) -> ObjectList[T]:
        """List objects of ``type_``.

        Args:
            type_: The item type (``V1Pod``, not a list type).
            namespace: Only this namespace; None for all namespaces.
            labels: A label selector (``"app=web,tier!=db"``, or ``{"app": "web"}``).
            fields: A field selector (``"status.phase=Running"`` or a mapping).
            limit: At most this many items per page; continue with ``continue_``.
            continue_: The `ObjectList.continue_` token of the previous page.
            gvk: The kind, for `Unstructured`, `PartialObjectMetadata` and dict.
        """
        return await self._reader_for(type_).list(
            type_,
            namespace=namespace,
            labels=labels,
            fields=fields,
            limit=limit,
            continue_=continue_,
            gvk=gvk,
        )

    async def create(self, obj: T, *, dry_run: bool = False, field_manager: str | None = None) -> T:
        """Create ``obj``; return the object as stored (uid, resourceVersion, defaults).

        Raises:
            pyctrl.errors.AlreadyExistsError: An object of that name exists.
            pyctrl.errors.InvalidError: The object failed validation.
        """
        gvk = self._api.gvk_of(obj)
        mapping = await self._api.mapping(gvk)
        meta = accessor(obj)
        if not meta.name and not getattr_generate_name(obj):
            raise ValueError(f"create {gvk.kind}: set metadata.name or metadata.generateName")
        namespace = self._api.namespace_for(
            mapping, meta.namespace, f"create {gvk.kind} {meta.name!r}"
        )
        data = await self._api.send(
            "POST",
            RESTMapper.path(mapping, namespace),
            gvk=gvk,
            namespace=namespace,
            name=meta.name,
            query=self._api.write_query(dry_run=dry_run, field_manager=field_manager),
            body=orjson.dumps(self._api.scheme.to_dict(obj)),
            content_type=_JSON,
            accept=_METADATA_ACCEPT if _is_metadata(type(obj)) else _JSON,
        )
        if not dry_run:
            self._api.observe(gvk, data)
        result: T = self._api.decode(data, type(obj), gvk)
        return result

    async def update(self, obj: T, *, dry_run: bool = False, field_manager: str | None = None) -> T:
        """Replace ``obj`` on the server (PUT); its resourceVersion guards against races.

        Changes to ``status`` are ignored when the kind has a status subresource: use
        ``client.status().update(obj)``.

        Raises:
            pyctrl.errors.ConflictError: The object changed since it was read.
        """
        result: T = await self._api.write(
            "PUT", obj, what="update", dry_run=dry_run, field_manager=field_manager
        )
        return result

    async def patch(
        self,
        obj: T,
        patch: Patch,
        *,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> T:
        """Patch ``obj``: `MergeFrom`, `StrategicMergeFrom`, `JSONPatch`, `Apply`...

        Returns:
            The patched object as stored.
        """
        result: T = await self._api.patch(
            obj, patch, subresource=None, body=None, dry_run=dry_run, field_manager=field_manager
        )
        return result

    async def apply(
        self,
        obj: T,
        *,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> T:
        """Server-side apply ``obj``: create it, or merge the fields it sets (see `Apply`).

        Args:
            obj: The apply configuration: the object with only the fields you manage.
            field_manager: Who manages the fields (default: the client's field owner;
                one of the two is required).
            force: Take over fields another manager owns instead of raising
                `pyctrl.errors.ConflictError`.
            dry_run: Validate without persisting.
        """
        return await self.patch(
            obj, Apply(force=force), dry_run=dry_run, field_manager=field_manager
        )

    async def delete(
        self,
        obj: Any,
        *,
        propagation_policy: PropagationPolicy | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Preconditions | None = None,
        dry_run: bool = False,
    ) -> None:
        """Delete ``obj`` (identified by kind, namespace and name).

        An object with finalizers is only marked for deletion; it goes once they are gone.

        Raises:
            pyctrl.errors.NotFoundError: It does not exist (see
                `pyctrl.errors.ignore_not_found`).
            pyctrl.errors.ConflictError: A precondition failed.
        """
        body = _delete_options(
            propagation_policy=propagation_policy,
            grace_period_seconds=grace_period_seconds,
            preconditions=preconditions,
            dry_run=dry_run,
        )
        gvk, path = await self._api.object_path(obj, "delete")
        meta = accessor(obj)
        data = await self._api.send(
            "DELETE",
            path,
            gvk=gvk,
            namespace=meta.namespace,
            name=meta.name,
            query={"dryRun": "All"} if dry_run else None,
            body=body,
            content_type=_JSON,
        )
        if not dry_run:
            self._api.observe_delete(gvk, obj, data)

    async def delete_all_of(
        self,
        type_: type[Any],
        *,
        namespace: str | None = None,
        labels: str | Mapping[str, str] | Selector | None = None,
        fields: str | Mapping[str, str] | None = None,
        gvk: GroupVersionKind | None = None,
        propagation_policy: PropagationPolicy | None = None,
        grace_period_seconds: int | None = None,
        dry_run: bool = False,
    ) -> None:
        """Delete every object of ``type_`` in ``namespace`` matching the selectors.

        Raises:
            ValueError: The kind is namespaced and no namespace was given (the API has
                no cross-namespace delete).
        """
        kind = self._api.gvk_of_type(type_, gvk)
        mapping = await self._api.mapping(kind)
        ns = self._api.namespace_for(mapping, namespace, f"delete_all_of {kind.kind}")
        query: dict[str, str] = {}
        if (selector := _label_selector(labels)) is not None:
            query["labelSelector"] = selector
        if (field_selector := _field_selector(fields)) is not None:
            query["fieldSelector"] = field_selector
        if dry_run:
            query["dryRun"] = "All"
        body = _delete_options(
            propagation_policy=propagation_policy,
            grace_period_seconds=grace_period_seconds,
            preconditions=None,
            dry_run=dry_run,
        )
        await self._api.send(
            "DELETE",
            RESTMapper.path(mapping, ns),
            query=query,
            body=body,
            content_type=_JSON,
            gvk=kind,
            namespace=ns,
        )

    def status(self) -> SubResourceClient:
        """A client for the ``status`` subresource: ``await client.status().update(obj)``."""
        return SubResourceClient(self._api, "status")

    def subresource(self, name: str) -> SubResourceClient:
        """A client for any subresource by name (``scale``, ``eviction``, ``token``...)."""
        return SubResourceClient(self._api, name)


def getattr_generate_name(obj: Any) -> str:
    """``metadata.generateName`` of any object form, or ""."""
    if isinstance(obj, Unstructured):
        return str(obj.metadata.get("generateName") or "")
    if isinstance(obj, dict):
        return str((obj.get("metadata") or {}).get("generateName") or "")
    metadata = getattr(obj, "metadata", None)
    return str(getattr(metadata, "generate_name", None) or "")
