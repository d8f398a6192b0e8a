"""The AirConditioner controller: probe the room, compare with the target, switch cooling.

This is the seed's control loop, one reconcile per probe:

1. read the room's temperature from its thermometer;
2. decide with `examples.airconditioner.room.thermostat`: warmer than the target (plus a
   hysteresis band) means cool, at or below the target means stay idle;
3. switch the unit's compressor (the simulator's actuator);
4. report the temperature, the compressor and a ``TargetReached`` condition in status,
   and in the ``airconditioner_*`` Prometheus metrics;
5. come back after ``--probe-period`` seconds, "the next detection cycle".

Besides its period, the controller wakes when the world changes: the `RoomSimulator`
sends readings through a `pyctrl.source.Channel`, and a map function turns each reading
into requests for the units in that room, found through a cache field index on
``spec.room``.

`operator` is the process (``python -m examples.airconditioner``) and the source of
the manifests under ``config/``. Besides the usual flags it takes the simulation's:
``--probe-period``, ``--sim-tick``, ``--sim-speed``, ``--outside-temperature``,
``--initial-temperature`` and ``--hysteresis``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prometheus_client import Gauge

from examples.airconditioner.api import TARGET_REACHED, AirConditioner
from examples.airconditioner.room import RoomReading, RoomSimulator, thermostat
from pyctrl import metrics
from pyctrl.app import Operator
from pyctrl.builder import controller_managed_by
from pyctrl.client import MergeFrom
from pyctrl.errors import NotFoundError
from pyctrl.handler import EnqueueRequestsFromMapFunc
from pyctrl.log import get_logger
from pyctrl.meta import Condition, set_status_condition
from pyctrl.reconcile import Request, Result
from pyctrl.source import Channel

if TYPE_CHECKING:
    from kubernetes_asyncio.client import Configuration

    from pyctrl.config import Config
    from pyctrl.manager import Manager

__all__ = [
    "AirConditionerOperator",
    "AirConditionerReconciler",
    "Settings",
    "cooling_gauge",
    "operator",
    "room_temperature_gauge",
    "setup",
    "target_temperature_gauge",
]

_log = get_logger("examples.airconditioner")
_ROOM_INDEX = "spec.room"

room_temperature_gauge = Gauge(
    "airconditioner_room_temperature_celsius",
    "Room temperature the air conditioner measured at its last probe.",
    ["namespace", "unit"],
    registry=metrics.registry,
)
target_temperature_gauge = Gauge(
    "airconditioner_target_temperature_celsius",
    "Temperature the air conditioner holds its room at.",
    ["namespace", "unit"],
    registry=metrics.registry,
)
cooling_gauge = Gauge(
    "airconditioner_cooling",
    "1 while the air conditioner's compressor runs, else 0.",
    ["namespace", "unit"],
    registry=metrics.registry,
)


@dataclass(frozen=True)
class Settings:
    """The control loop's and the simulation's settings (the extra flags).

    Attributes:
        probe_period: Seconds between probes of one unit (``--probe-period``).
        tick: Seconds between simulation steps (``--sim-tick``).
        speed: Simulated seconds per real second (``--sim-speed``).
        outside_temperature: Where rooms drift to, Celsius (``--outside-temperature``).
        initial_temperature: A new room's temperature, Celsius; the outside's when None
            (``--initial-temperature``).
        hysteresis: Degrees above the target before cooling starts (``--hysteresis``).
    """

    probe_period: float = 5.0
    tick: float = 1.0
    speed: float = 60.0
    outside_temperature: float = 30.0
    initial_temperature: float | None = None
    hysteresis: float = 0.5

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Settings:
        """Read the settings from parsed flags."""
        return cls(
            probe_period=args.probe_period,
            tick=args.sim_tick,
            speed=args.sim_speed,
            outside_temperature=args.outside_temperature,
            initial_temperature=args.initial_temperature,
            hysteresis=args.hysteresis,
        )


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def _non_negative(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be zero or more degrees, got {text}")
    return value


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Add the simulation's flags to the operator's parser."""
    defaults = Settings()
    group = parser.add_argument_group("air conditioner and room simulation")
    group.add_argument(
        "--probe-period",
        type=_positive,
        default=defaults.probe_period,
        help="seconds between probes of a unit (the seed's detection cycle)",
    )
    group.add_argument(
        "--sim-tick",
        type=_positive,
        default=defaults.tick,
        help="seconds between steps of the simulated world",
    )
    group.add_argument(
        "--sim-speed",
        type=_positive,
        default=defaults.speed,
        help="simulated seconds per real second",
    )
    group.add_argument(
        "--outside-temperature",
        type=float,
        default=defaults.outside_temperature,
        help="degrees Celsius the rooms drift to",
    )
    group.add_argument(
        "--initial-temperature",
        type=float,
        default=None,
        help="degrees Celsius of a new room (default: the outside temperature)",
    )
    group.add_argument(
        "--hysteresis",
        type=_non_negative,
        default=defaults.hysteresis,
        help="degrees above the target before cooling starts",
    )


class AirConditionerReconciler:
    """Probes a unit's room and switches its compressor (see the module docs).

    Args:
        manager: Gives the client that reads the unit from the cache and writes status.
        simulator: The rooms: thermometer and actuator.
        settings: The probe period and hysteresis.
    """

    def __init__(self, manager: Manager, simulator: RoomSimulator, settings: Settings) -> None:
        self._client = manager.client
        self._simulator = simulator
        self._settings = settings

    async def reconcile(self, request: Request) -> Result:
        """Run one probe of the unit ``request`` names."""
        try:
            unit = await self._client.get(AirConditioner, request.name, request.namespace)
        except NotFoundError:
            self._forget(request)
            return Result()
        spec = unit.spec
        current = self._simulator.temperature(request.namespace, spec.room)
        was_cooling = self._simulator.is_cooling(request.namespace, request.name)
        cooling = spec.mode == "cool" and thermostat(
            current,
            spec.target_temperature,
            cooling=was_cooling,
            hysteresis=self._settings.hysteresis,
        )
        self._simulator.set_cooling(request.namespace, request.name, spec.room, cooling)
        if cooling != was_cooling:
            _log.info(
                "cooling switched",
                on=cooling,
                room=spec.room,
                temperature=current,
                target=spec.target_temperature,
            )
        labels = {"namespace": request.namespace, "unit": request.name}
        room_temperature_gauge.labels(**labels).set(current)
        target_temperature_gauge.labels(**labels).set(spec.target_temperature)
        cooling_gauge.labels(**labels).set(1 if cooling else 0)
        await self._report(unit, current, cooling)
        return Result(requeue_after=self._settings.probe_period)

    async def _report(self, unit: AirConditioner, current: float, cooling: bool) -> None:
        original = unit.model_copy(deep=True)
        status = unit.status
        target = unit.spec.target_temperature
        reached = current <= target + self._settings.hysteresis
        doing = "cooling" if cooling else ("idle" if unit.spec.mode == "cool" else "off")
        set_status_condition(
            status.conditions,
            Condition(
                type=TARGET_REACHED,
                status="True" if reached else "False",
                reason="AtTarget" if reached else "TooWarm",
                message=f"room at {current:.1f}°C, target {target:.1f}°C; unit {doing}",
                observed_generation=unit.metadata.generation,
            ),
        )
        status.current_temperature = current
        status.cooling = cooling
        status.observed_generation = unit.metadata.generation or 0
        if status != original.status:
            await self._client.status().patch(unit, MergeFrom(original))

    def _forget(self, request: Request) -> None:
        self._simulator.remove_unit(request.namespace, request.name)
        for gauge in (room_temperature_gauge, target_temperature_gauge, cooling_gauge):
            # A unit deleted before its first probe has no series to remove.
            with contextlib.suppress(KeyError):
                gauge.remove(request.namespace, request.name)


async def setup(manager: Manager, settings: Settings | None = None) -> RoomSimulator:
    """Register the room simulator and the controller on ``manager``.

    Returns:
        The simulator, so that tests and dashboards can look at the rooms.
    """
    settings = settings or Settings()
    cache = manager.cache
    cache.index_field(AirConditioner, _ROOM_INDEX, lambda unit: unit.spec.room)

    async def units_in_room(reading: RoomReading) -> list[Request]:
        units = await cache.list(
            AirConditioner, namespace=reading.namespace, fields={_ROOM_INDEX: reading.room}
        )
        return [Request(reading.namespace, unit.metadata.name or "") for unit in units.items]

    handler = EnqueueRequestsFromMapFunc(units_in_room)
    readings = Channel(handler)
    simulator = RoomSimulator(
        tick=settings.tick,
        speed=settings.speed,
        outside_temperature=settings.outside_temperature,
        initial_temperature=settings.initial_temperature,
        channel=readings,
    )
    manager.add(simulator)
    (
        controller_managed_by(manager)
        .for_(AirConditioner)
        .watches_raw_source(readings)
        .complete(AirConditionerReconciler(manager, simulator, settings))
    )
    return simulator


@dataclass
class AirConditionerOperator(Operator):
    """The `pyctrl.app.Operator`, with the simulation's flags handed to `setup`."""

    def parser(self) -> argparse.ArgumentParser:
        """The usual flags plus the simulation's (see `Settings`)."""
        parser = super().parser()
        add_flags(parser)
        return parser

    async def create_manager(
        self, config: Config | Configuration, args: argparse.Namespace | None = None
    ) -> Manager:
        """Build the Manager from flags and run `setup` with the `Settings` they give."""
        args = args or self.parser().parse_args([])
        settings = Settings.from_args(args)

        async def configured(manager: Manager) -> None:
            await setup(manager, settings)

        return await Operator.create_manager(
            dataclasses.replace(self, setup=configured), config, args
        )


async def _setup_with_defaults(manager: Manager) -> None:
    await setup(manager)


operator = AirConditionerOperator(
    name="airconditioner", types=[AirConditioner], setup=_setup_with_defaults
)
"""The operator: ``operator.main()`` runs it, ``operator.write_manifests(dir)`` writes config/."""
