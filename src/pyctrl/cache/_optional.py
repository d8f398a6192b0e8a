"""Optional kinds: informers that run only while the API server serves their kind.

``owns(ServiceMonitor)`` when prometheus-operator is not installed would hold every
controller at start, then stop the manager after ``cache_sync_timeout``. An informer
asked for with ``optional=True`` instead waits, inactive, until its kind is served:

- `ServedKinds` watches CustomResourceDefinitions (one slim informer per cache, holding
  only each CRD's group, kind, versions and conditions) and knows which kinds are served
  now: those of a CRD whose ``Established`` condition is True, in a version marked
  ``served``;
- when an optional kind becomes served, its informer starts (lists, watches, hands
  events to its handlers); when it stops being served (the CRD deleted, or the version
  no longer served) the informer stops with one log line, its objects leave with a
  delete each, and it waits again;
- an inactive informer is not waited for at start, not counted by readiness, and shows
  as ``inactive`` in ``/debug/informers``; ``pyctrl_informer_served{gvk}`` is 1 while
  an optional kind is served, 0 while not.

Reading CRDs needs ``get``, ``list`` and ``watch`` on
``customresourcedefinitions.apiextensions.k8s.io``; `pyctrl.app` adds them to the
generated ClusterRole when a controller has an optional watch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prometheus_client import Gauge

from pyctrl import metrics
from pyctrl.cache._informer import InformerConfig, SharedInformer
from pyctrl.cache._listwatch import RESTSource
from pyctrl.cache._processor import ResourceEventHandlerFuncs
from pyctrl.meta import GroupVersionKind
from pyctrl.resource import Unstructured

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyctrl.cache._options import CacheOptions
    from pyctrl.client import RESTClient, RESTMapper
    from pyctrl.clock import Clock
    from pyctrl.scheme import Scheme

__all__ = ["CRD_GVK", "ServedKinds", "informer_served", "served_by"]

CRD_GVK = GroupVersionKind("apiextensions.k8s.io", "v1", "CustomResourceDefinition")

informer_served = Gauge(
    "pyctrl_informer_served",
    "1 while an optional informer's kind is served (its informer runs), 0 while not.",
    ["gvk"],
    registry=metrics.registry,
)


def _slim(crd: dict[str, Any]) -> dict[str, Any]:
    """What the served-kinds informer keeps of a CRD: no schemas."""
    spec = crd.get("spec") or {}
    meta = crd.get("metadata") or {}
    return {
        "apiVersion": crd.get("apiVersion"),
        "kind": crd.get("kind"),
        "metadata": {k: meta[k] for k in ("name", "uid", "resourceVersion") if k in meta},
        "spec": {
            "group": spec.get("group", ""),
            "names": {"kind": (spec.get("names") or {}).get("kind", "")},
            "versions": [
                {"name": v.get("name", ""), "served": bool(v.get("served"))}
                for v in spec.get("versions") or ()
                if isinstance(v, dict)
            ],
        },
        "status": {
            "conditions": [
                {"type": c.get("type"), "status": c.get("status")}
                for c in (crd.get("status") or {}).get("conditions") or ()
                if isinstance(c, dict)
            ]
        },
    }


def served_by(crd: dict[str, Any]) -> frozenset[GroupVersionKind]:
    """The kinds a CRD serves now: none until it is Established, then its served versions."""
    established = any(
        c.get("type") == "Established" and c.get("status") == "True"
        for c in (crd.get("status") or {}).get("conditions") or ()
    )
    if not established:
        return frozenset()
    spec = crd.get("spec") or {}
    group, kind = spec.get("group", ""), (spec.get("names") or {}).get("kind", "")
    return frozenset(
        GroupVersionKind(group, v["name"], kind) for v in spec.get("versions") or () if v["served"]
    )


class ServedKinds:
    """Knows which kinds the CRDs serve now, and says when that changes.

    Args:
        rest, mapper, scheme, options, clock, random: As the cache's own.
        changed: Called with a kind and whether it is served now, on every change.
    """

    def __init__(
        self,
        rest: RESTClient,
        mapper: RESTMapper,
        scheme: Scheme,
        options: CacheOptions,
        *,
        clock: Clock,
        random: Callable[[], float],
        changed: Callable[[GroupVersionKind, bool], None],
    ) -> None:
        self.informer = SharedInformer(
            gvk=CRD_GVK,
            source=RESTSource(rest, mapper, CRD_GVK),
            config=InformerConfig.for_cache(options, transform=_slim),
            scheme=scheme,
            clock=clock,
            random=random,
            description=f"{CRD_GVK.api_version}/{CRD_GVK.kind} (served kinds)",
        )
        self._changed = changed
        self._by_crd: dict[str, frozenset[GroupVersionKind]] = {}
        self.served: set[GroupVersionKind] = set()
        """The kinds served now, as far as the CRDs seen so far tell."""
        self.informer.add_listener(
            ResourceEventHandlerFuncs(
                add_func=lambda obj, _initial: self._seen(obj),
                update_func=lambda _old, new: self._seen(new),
                delete_func=lambda obj, _unknown: self._seen(obj, gone=True),
            ),
            Unstructured,
        )

    def _seen(self, crd: Unstructured, *, gone: bool = False) -> None:
        data = crd.object
        name = (data.get("metadata") or {}).get("name", "")
        self._by_crd[name] = frozenset() if gone else served_by(data)
        if gone:
            del self._by_crd[name]
        now: set[GroupVersionKind] = set().union(*self._by_crd.values())
        before, self.served = self.served, now
        for gvk in now - before:
            self._changed(gvk, True)
        for gvk in before - now:
            self._changed(gvk, False)
