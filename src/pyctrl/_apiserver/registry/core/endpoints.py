"""Endpoints (kube-apiserver's pkg/registry/core/endpoint).

An update may create them (``AllowCreateOnUpdate``); ``kubectl get`` lists each subset's
addresses with their ports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apimachinery.meta import ro_meta
from pyctrl._apiserver.registry.printing import (
    AGE,
    NAME,
    STRING,
    Cells,
    Printer,
    age,
)
from pyctrl._apiserver.registry.rest import Strategy

if TYPE_CHECKING:
    from datetime import datetime

__all__ = ["EndpointsStrategy"]


def _endpoints(obj: dict[str, Any], now: datetime) -> Cells:
    parts: list[str] = []
    for subset in obj.get("subsets") or []:
        ports = [p.get("port") for p in subset.get("ports") or []] or [None]
        for addr in subset.get("addresses") or []:
            for port in ports:
                ip = addr.get("ip", "")
                parts.append(f"{ip}:{port}" if port is not None else str(ip))
    return [
        ro_meta(obj).get("name", ""),
        ",".join(parts) if parts else "<none>",
        age(ro_meta(obj).get("creationTimestamp"), now),
    ]


class EndpointsStrategy(Strategy):
    """The rules of Endpoints."""

    printer = Printer(
        (NAME, ("Endpoints", STRING, 0), AGE),
        _endpoints,
    )

    allow_create_on_update = True
