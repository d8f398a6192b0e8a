"""The MySrv API: group ``myapp.example.com``, version ``v1alpha1``.

A MySrv asks for a small HTTP service: ``spec.name`` names the application and
``spec.port`` is the port it listens on and exposes. The operator answers with a
Deployment and a Service of the same name (owned by the MySrv, so they go with it) and
a DNS record in an external zone, and reports what it sees in ``status``: the
``Available`` and ``DNSRegistered`` conditions, the generation they describe, the
available replicas and the Service's URL.

This module is kubebuilder's ``api/v1alpha1/mysrv_types.go``: the types are the single
source of the CRD (``config/crd/``), of what the controller reads, and of what the
webhooks check. Both spec fields are optional in the schema on purpose: the defaulting
webhook fills in ``port`` and the validating webhook refuses a missing ``name``, so the
example can show both webhooks at work. A real operator would put simple rules like these
into the schema (``Field(ge=1, le=65535)``, a CEL ``self == oldSelf`` rule) and keep
webhooks for what a schema cannot say.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from pyctrl.crd import ListType
from pyctrl.meta import Condition, KubeModel
from pyctrl.resource import CustomResource, PrinterColumn

__all__ = [
    "AVAILABLE",
    "DEFAULT_PORT",
    "DNS_REGISTERED",
    "FINALIZER",
    "GROUP",
    "VERSION",
    "MySrv",
    "MySrvSpec",
    "MySrvStatus",
]

GROUP = "myapp.example.com"
"""The API group of MySrv."""

VERSION = "v1alpha1"
"""The only version of MySrv."""

DEFAULT_PORT = 80
"""The port of a MySrv that names none."""

FINALIZER = "myapp.example.com/dns-record"
"""Held on every MySrv until its DNS record, outside the cluster, is deleted."""

AVAILABLE = "Available"
"""Condition: the Deployment has its replicas available."""

DNS_REGISTERED = "DNSRegistered"
"""Condition: the external DNS record points at the Service."""


class MySrvSpec(KubeModel):
    """The desired state of a MySrv.

    Attributes:
        name: The application's name. It labels the pods and is part of the Deployment's
            selector, which Kubernetes does not let change, so it is immutable. Up to 63
            letters, digits, '-', '_' or '.', starting and ending with a letter or digit.
        port: The TCP port the application listens on and the Service exposes, 1-65535.
            80 when left out.
    """

    name: str | None = None
    port: int | None = None

    def effective_port(self) -> int:
        """The port to serve: ``port``, or `DEFAULT_PORT` when the webhook did not run."""
        return DEFAULT_PORT if self.port is None else self.port


class MySrvStatus(KubeModel):
    """The observed state of a MySrv.

    Attributes:
        observed_generation: The metadata.generation this status describes.
        available_replicas: Pods of the Deployment that are available.
        url: Where the service answers inside the cluster.
        conditions: Available (the Deployment's replicas are available) and
            DNSRegistered (the external DNS record points at the Service).
    """

    observed_generation: int | None = None
    available_replicas: int | None = None
    url: str | None = None
    conditions: Annotated[list[Condition], ListType("map", keys=("type",))] = Field(
        default_factory=list
    )


class MySrv(
    CustomResource,
    group=GROUP,
    version=VERSION,
    short_names=("ms",),
    printer_columns=(
        PrinterColumn("App", ".spec.name"),
        PrinterColumn("Port", ".spec.port", type="integer"),
        PrinterColumn("Available", '.status.conditions[?(@.type=="Available")].status'),
        PrinterColumn("URL", ".status.url"),
        PrinterColumn("Age", ".metadata.creationTimestamp", type="date"),
    ),
):
    """A small HTTP service: a Deployment and a Service, plus a DNS record outside the cluster."""

    spec: MySrvSpec = Field(default_factory=MySrvSpec)
    status: MySrvStatus = Field(default_factory=MySrvStatus)
