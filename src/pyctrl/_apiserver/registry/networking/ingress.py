"""Ingresses (kube-apiserver's pkg/registry/networking/ingress).

Spec changes count in ``metadata.generation``; status starts empty.
"""

from __future__ import annotations

from pyctrl._apiserver.registry.rest import Strategy

__all__ = ["IngressStrategy"]


class IngressStrategy(Strategy):
    """The rules of Ingresses."""

    has_generation = True
    initial_status = {}  # noqa: RUF012 - read only, copied on use
