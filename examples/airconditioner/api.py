"""The AirConditioner custom resource: a unit that holds a room at a target temperature.

An AirConditioner names the room it sits in and the temperature to hold there
(``spec``); the controller reports what it measures and does (``status``): the room's
current temperature, whether the compressor runs, and a ``TargetReached`` condition.
This is the seed's example of the controller pattern: a desired value, an observed
value, and a loop that acts on the difference.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from pyctrl.meta import Condition, KubeModel
from pyctrl.resource import CustomResource, PrinterColumn

__all__ = [
    "TARGET_REACHED",
    "AirConditioner",
    "AirConditionerSpec",
    "AirConditionerStatus",
]

TARGET_REACHED = "TargetReached"
"""Condition type: True while the room is no warmer than the target plus the hysteresis."""


class AirConditionerSpec(KubeModel):
    """AirConditionerSpec is the desired state of an air conditioner.

    Attributes:
        target_temperature: The room temperature to hold, in degrees Celsius.
        mode: "cool" runs the control loop; "off" keeps the compressor off.
        room: The room the unit cools (rooms are per namespace; units may share one).
    """

    target_temperature: Annotated[float, Field(ge=16, le=30)]
    mode: Literal["cool", "off"] = "cool"
    room: Annotated[
        str, Field(min_length=1, max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    ]


class AirConditionerStatus(KubeModel):
    """AirConditionerStatus is what the controller last observed and did.

    Attributes:
        current_temperature: The room temperature at the last probe, in degrees Celsius.
        cooling: Whether the compressor runs.
        observed_generation: The metadata.generation the status was computed from.
        conditions: TargetReached: whether the room is at most the hysteresis above target.
    """

    current_temperature: float | None = None
    cooling: bool = False
    observed_generation: int = 0
    conditions: list[Condition] = Field(default_factory=list)


class AirConditioner(
    CustomResource,
    group="climate.example.com",
    version="v1",
    short_names=("ac",),
    printer_columns=(
        PrinterColumn("Room", ".spec.room"),
        PrinterColumn("Mode", ".spec.mode"),
        PrinterColumn("Target", ".spec.targetTemperature", "number"),
        PrinterColumn("Current", ".status.currentTemperature", "number"),
        PrinterColumn("Cooling", ".status.cooling", "boolean"),
        PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
    ),
):
    """AirConditioner holds a room at a target temperature by switching its compressor."""

    spec: AirConditionerSpec
    status: AirConditionerStatus = Field(default_factory=AirConditionerStatus)
