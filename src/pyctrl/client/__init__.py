"""The client: read and write Kubernetes objects by their Python type.

`Client` is controller-runtime's ``client.Client``. It takes and returns objects of
the caller's type: `pyctrl.resource.CustomResource` subclasses, kubernetes-asyncio
models of built-in kinds (``V1Pod``, ``V1Deployment``), `pyctrl.resource.Unstructured`,
and `pyctrl.resource.PartialObjectMetadata` for metadata only. The
`pyctrl.scheme.Scheme` says which kind a type is; the `RESTMapper`, built from the API
server's discovery documents, says which resource serves the kind and whether it is
namespaced, and re-reads discovery when it meets a kind it does not know (a CRD
installed after start).

The verbs::

    pod = await client.get(V1Pod, "web-0", "default")
    pods = await client.list(V1Pod, namespace="default", labels={"app": "web"})
    created = await client.create(obj)
    updated = await client.update(obj)
    patched = await client.patch(obj, MergeFrom(original))
    applied = await client.apply(obj, field_manager="my-operator", force=True)
    await client.delete(obj, propagation_policy="Foreground")
    await client.delete_all_of(V1Pod, namespace="default", labels={"app": "web"})
    await client.status().update(obj)

Every object returned is new, never the one passed in. Patches are built with
`MergeFrom` (a JSON merge patch, optionally with an optimistic lock), `JSONPatch`
(RFC 6902, with ``test`` operations), `StrategicMergeFrom` (built-in kinds only),
`MergePatch`, `RawPatch` and `Apply` (server-side apply). `apply_config_for(T)` gives
the all-optional *apply configuration* of a type, to apply a partial object, and
`extract(obj, manager)` the fields a field manager owns (client-go's ``Extract*``).
Failures raise the
`pyctrl.errors` types (``NotFoundError``, ``ConflictError``...); `NoKindMatchError` when
the server does not serve a kind; `PatchError` for a patch that cannot be built.

Below the client, `RESTClient` is the one HTTP door to the API server that the client
and the cache share: authentication from `pyctrl.config.Config` on every request,
429 and 5xx-with-``Retry-After`` answers waited out and retried a bounded number of
times, no client-side rate limit, streaming watches with an idle timeout, and the
``rest_client_requests_total`` metric.

Wrappers, as controller-runtime's: `InterceptorClient` routes chosen calls through
functions of yours (``client/interceptor``: inject a failure into one call in a test),
and `NamespacedClient` scopes every call to one namespace (``NewNamespacedClient``).

`Reader` is the read half, which `pyctrl.cache.Cache` implements too. A Manager's
client reads from its cache and writes to the API server; `Client.api_reader` always
reads from the API server.
"""

from __future__ import annotations

from pyctrl.client._applyconfig import ApplyConfiguration, apply_config_for, extract, owned_fields
from pyctrl.client._client import Client, Preconditions, PropagationPolicy, SubResourceClient
from pyctrl.client._errors import NoKindMatchError, NoMatchError, NoResourceMatchError, PatchError
from pyctrl.client._interceptor import InterceptorClient, InterceptorFuncs
from pyctrl.client._mapper import RESTMapper, RESTMapping
from pyctrl.client._namespaced import NamespacedClient
from pyctrl.client._patch import (
    APPLY_PATCH,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    Apply,
    JSONPatch,
    MergeFrom,
    MergePatch,
    Patch,
    RawPatch,
    StrategicMergeFrom,
    apply_configuration,
    json_pointer,
)
from pyctrl.client._reader import ObjectList, Reader, WriteObserver
from pyctrl.client._rest import RequestObserver, Response, RESTClient

__all__ = [
    "APPLY_PATCH",
    "JSON_PATCH",
    "MERGE_PATCH",
    "STRATEGIC_MERGE_PATCH",
    "Apply",
    "ApplyConfiguration",
    "Client",
    "InterceptorClient",
    "InterceptorFuncs",
    "JSONPatch",
    "MergeFrom",
    "MergePatch",
    "NamespacedClient",
    "NoKindMatchError",
    "NoMatchError",
    "NoResourceMatchError",
    "ObjectList",
    "Patch",
    "PatchError",
    "Preconditions",
    "PropagationPolicy",
    "RESTClient",
    "RESTMapper",
    "RESTMapping",
    "RawPatch",
    "Reader",
    "RequestObserver",
    "Response",
    "StrategicMergeFrom",
    "SubResourceClient",
    "WriteObserver",
    "apply_config_for",
    "apply_configuration",
    "extract",
    "json_pointer",
    "owned_fields",
]
