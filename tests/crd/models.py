"""Realistic custom resource types shared by the pyctrl.crd tests."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from pyctrl.crd import Int32, IntOrString, ListType, XValidation
from pyctrl.meta import Condition, KubeModel, Time
from pyctrl.resource import CustomResource, PrinterColumn, ScaleSubresource


class ServicePort(KubeModel):
    """ServicePort is one port the server listens on.

    Attributes:
        name: Name of the port, unique within the server.
        port: Port number.
        protocol: Transport protocol.
    """

    name: str
    port: Annotated[int, Field(ge=1, le=65535)]
    protocol: Literal["TCP", "UDP"] = "TCP"


class Probe(KubeModel):
    """Probe checks that the server answers."""

    path: str = "/healthz"
    period_seconds: Annotated[int, Field(gt=0)] = 10
    target: IntOrString = "http"


@XValidation("self.minReplicas <= self.maxReplicas", message="minReplicas exceeds maxReplicas")
class Autoscaling(KubeModel):
    """Autoscaling bounds the number of replicas."""

    min_replicas: Int32 = 1
    max_replicas: Int32 = 3


class MySrvSpec(KubeModel):
    """MySrvSpec defines the desired state of MySrv.

    Attributes:
        name: Name of the server process.
        port: Main port.
        replicas: Number of pods.
        mode: How the server trades speed for safety.
        labels: Labels put on the pods.
        ports: Extra ports.
        probe: Health probe; none when unset.
        autoscaling: Autoscaling bounds.
    """

    name: Annotated[str, Field(min_length=1, max_length=63)]
    port: Annotated[int, Field(ge=1, le=65535)] = 80
    replicas: Int32 = 1
    mode: Literal["fast", "safe"] = "safe"
    labels: dict[str, str] = Field(default_factory=dict)
    ports: Annotated[list[ServicePort], ListType("map", keys=("name",))] = Field(
        default_factory=list
    )
    probe: Probe | None = None
    autoscaling: Autoscaling = Field(default_factory=Autoscaling)


class MySrvStatus(KubeModel):
    """MySrvStatus is the observed state of MySrv."""

    conditions: list[Condition] = Field(default_factory=list)
    replicas: Int32 = 0
    selector: str = ""
    observed_generation: int | None = None
    last_backup: Time | None = None


class MySrv(
    CustomResource,
    group="myapp.example.com",
    version="v1",
    short_names=("ms",),
    categories=("all", "myapp"),
    printer_columns=(
        PrinterColumn("Port", ".spec.port", "integer", description="Main port"),
        PrinterColumn("Mode", ".spec.mode"),
        PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
        PrinterColumn("Replicas", ".status.replicas", "integer", priority=1),
    ),
    scale=ScaleSubresource(label_selector_path=".status.selector"),
):
    """MySrv is the Schema for the mysrvs API."""

    spec: MySrvSpec
    status: MySrvStatus = Field(default_factory=MySrvStatus)


class MySrvAlphaSpec(KubeModel):
    """MySrvAlphaSpec is the v1alpha1 spec: a single port, no modes."""

    name: str
    port: int = 80


class MySrvV1alpha1(
    CustomResource,
    group="myapp.example.com",
    version="v1alpha1",
    kind="MySrv",
    short_names=("ms",),
    categories=("all", "myapp"),
    storage=False,
    deprecated=True,
    deprecation_warning="myapp.example.com/v1alpha1 MySrv is deprecated; use v1",
):
    """MySrv is the Schema for the mysrvs API (v1alpha1)."""

    spec: MySrvAlphaSpec
    status: dict[str, Any] = Field(default_factory=dict)


class ClusterPoolSpec(KubeModel):
    """ClusterPoolSpec lists the nodes of the pool."""

    nodes: Annotated[list[str], ListType("set")] = Field(default_factory=list)
    weight: float = 1.0


class ClusterPool(
    CustomResource,
    group="infra.example.com",
    version="v1beta1",
    scope="Cluster",
    status_subresource=False,
):
    """ClusterPool is a cluster-wide pool of nodes."""

    spec: ClusterPoolSpec = Field(default_factory=ClusterPoolSpec)
