"""The air conditioner operator: the controller pattern, as the seed tells it.

An `AirConditioner` holds a room at a target temperature. Its controller probes the
room on a period, compares the reading with the target and switches the compressor,
then reports what it saw in status and in Prometheus metrics. The rooms are simulated
(`examples.airconditioner.room`): Newton's law of cooling with units attached, so the
loop visibly converges. Run it with ``python -m examples.airconditioner``.
"""

from __future__ import annotations

from examples.airconditioner.api import AirConditioner, AirConditionerSpec, AirConditionerStatus
from examples.airconditioner.controller import AirConditionerReconciler, Settings, operator, setup
from examples.airconditioner.room import RoomModel, RoomReading, RoomSimulator, thermostat

__all__ = [
    "AirConditioner",
    "AirConditionerReconciler",
    "AirConditionerSpec",
    "AirConditionerStatus",
    "RoomModel",
    "RoomReading",
    "RoomSimulator",
    "Settings",
    "operator",
    "setup",
    "thermostat",
]
