"""The ``pods/eviction`` sub-resource: a Pod deleted through an Eviction (``policy/v1``).

kube-apiserver's eviction REST (pkg/registry/core/pod/storage/eviction.go): ``POST
/api/v1/namespaces/<ns>/pods/<name>/eviction`` with an ``Eviction`` body runs admission
(CREATE on ``pods/eviction``, the Eviction as the object, so a webhook on that
sub-resource can refuse it) and then deletes the Pod with the Eviction's
``deleteOptions``, answering ``201`` with a Success ``Status``. ``kubectl drain`` evicts
this way.

Not done: PodDisruptionBudgets are not consulted (no eviction is ever refused with 429
for a budget).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.apimachinery.errors import bad_request, not_found
from pyctrl._apiserver.registry.options import DeleteOptions

if TYPE_CHECKING:
    from pyctrl._apiserver.registry.generic import ResourceStore
    from pyctrl._apiserver.registry.options import RequestContext

__all__ = ["evict"]

_KINDS = {("policy/v1", "Eviction"), ("policy/v1beta1", "Eviction"), ("v1", "DeleteOptions")}


async def evict(
    pods: ResourceStore, ctx: RequestContext, namespace: str, name: str, body: dict[str, Any]
) -> dict[str, Any]:
    """Evict Pod ``namespace/name`` (``pods``: the Pods' store); the Status to answer with.

    Raises:
        StatusError: 400 for a body that is not an Eviction of this Pod, 404 for a
            missing Pod, or an admission webhook's denial.
    """
    if (str(body.get("apiVersion", "")), str(body.get("kind", ""))) not in _KINDS:
        raise bad_request(
            f"expected an Eviction (policy/v1), got {body.get('apiVersion')}, "
            f"Kind={body.get('kind')}"
        )
    meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    if body.get("kind") == "Eviction" and meta.get("name") != name:
        raise bad_request("name in URL does not match name in Eviction object")
    rt = pods.rt
    if pods.storage.get(rt.storage_key, namespace, name) is None:
        raise not_found("", "pods", name)
    eviction = {**body, "metadata": {**meta, "name": name, "namespace": namespace}}
    await pods.admission.mutate(
        rt, "CREATE", eviction, None, namespace=namespace, subresource="eviction", opts=ctx
    )
    await pods.admission.validate(
        rt,
        "CREATE",
        obj=eviction,
        old=None,
        namespace=namespace,
        name=name,
        subresource="eviction",
        opts=ctx,
    )
    raw = eviction.get("deleteOptions") if isinstance(eviction.get("deleteOptions"), dict) else {}
    assert isinstance(raw, dict)
    delete = DeleteOptions(
        grace_period=raw.get("gracePeriodSeconds"),
        propagation=raw.get("propagationPolicy"),
        dry_run=ctx.dry_run,
        raw=raw,
    )
    if not ctx.dry_run:
        pods.delete_core(namespace, name, delete)
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
