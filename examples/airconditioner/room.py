"""The physical world of the demo: rooms that warm up, units that cool them.

A `RoomModel` is Newton's law of cooling with an air conditioner attached: heat leaks
in from outside at a rate proportional to the difference of temperatures, and each
running unit removes a fixed amount of heat per second::

    dT/dt = -loss_rate * (T - outside) - units_cooling * cooling_power

The model advances by the exact solution of that equation, so any time step is stable
and stepping twice by ``dt`` lands where stepping once by ``2 * dt`` does.

`RoomSimulator` is the world the controller acts on. It keeps the rooms of every
namespace, knows which units run (the controller switches them with
`RoomSimulator.set_cooling`, the actuator), answers `RoomSimulator.temperature` (the
thermometer), and is a Manager runnable: every ``tick`` seconds of its clock it
advances the rooms by ``tick * speed`` simulated seconds and sends a `RoomReading`
through a `pyctrl.source.Channel` when a room's displayed temperature changes, so the
controller reacts to the world as well as probing it on its period.

`thermostat` is the seed's decision rule with a hysteresis band, so the compressor
does not chatter around the target.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pyctrl.clock import Clock, RealClock
from pyctrl.log import get_logger

if TYPE_CHECKING:
    from pyctrl.source import Channel

__all__ = ["RoomModel", "RoomReading", "RoomSimulator", "thermostat"]

_log = get_logger("examples.airconditioner.room")
_DISPLAY_RESOLUTION = 1  # decimals a room thermometer shows


@dataclass
class RoomModel:
    """One room's temperature, the weather outside, and how both interact.

    Attributes:
        temperature: The room temperature, degrees Celsius.
        outside_temperature: The temperature the room drifts toward, degrees Celsius.
        loss_rate: How fast heat leaks through the walls, per second (1/time constant).
        cooling_power: Degrees Celsius per second one running unit removes.
    """

    temperature: float
    outside_temperature: float = 30.0
    loss_rate: float = 1 / 1800
    cooling_power: float = 0.05

    def __post_init__(self) -> None:
        if self.loss_rate <= 0:
            raise ValueError(f"loss_rate must be positive, got {self.loss_rate}")
        if self.cooling_power < 0:
            raise ValueError(f"cooling_power must not be negative, got {self.cooling_power}")

    def equilibrium(self, units_cooling: int = 0) -> float:
        """The temperature the room settles at with ``units_cooling`` units running."""
        return self.outside_temperature - units_cooling * self.cooling_power / self.loss_rate

    def advance(self, seconds: float, units_cooling: int = 0) -> float:
        """Move the room ``seconds`` forward with ``units_cooling`` units running.

        Returns:
            The new temperature.
        """
        if seconds < 0:
            raise ValueError(f"time only moves forward: seconds={seconds}")
        settle = self.equilibrium(units_cooling)
        self.temperature = settle + (self.temperature - settle) * math.exp(
            -self.loss_rate * seconds
        )
        return self.temperature


def thermostat(current: float, target: float, *, cooling: bool, hysteresis: float) -> bool:
    """Whether the compressor should run: the seed's rule, with a hysteresis band.

    Warmer than ``target + hysteresis``: cool. At or below ``target``: stay idle until
    the next probe. In between, keep doing what the unit does, so it neither starts for a
    tenth of a degree nor stops the moment it dips under the band.
    """
    if current > target + hysteresis:
        return True
    if current <= target:
        return False
    return cooling


@dataclass(frozen=True, slots=True)
class RoomReading:
    """A room thermometer's reading, sent to the controller through a Channel.

    Attributes:
        namespace: The namespace the room belongs to.
        room: The room's name.
        temperature: Degrees Celsius, as the thermometer displays it.
    """

    namespace: str
    room: str
    temperature: float


@dataclass
class _Unit:
    namespace: str
    room: str
    cooling: bool


@dataclass
class RoomSimulator:
    """Simulates every room the units sit in; a Manager runnable (see the module docs).

    Attributes:
        clock: Where time comes from (tests pass a `pyctrl.clock.FakeClock`).
        tick: Clock seconds between simulation steps.
        speed: Simulated seconds per clock second (60: a minute passes each second).
        outside_temperature: Where rooms drift to, degrees Celsius.
        initial_temperature: A new room's temperature (default: the outside's).
        channel: Where readings go when a room's displayed temperature changes.
    """

    clock: Clock = field(default_factory=RealClock)
    tick: float = 1.0
    speed: float = 60.0
    outside_temperature: float = 30.0
    initial_temperature: float | None = None
    channel: Channel | None = None
    _rooms: dict[tuple[str, str], RoomModel] = field(default_factory=dict, init=False)
    _units: dict[tuple[str, str], _Unit] = field(default_factory=dict, init=False)
    _displayed: dict[tuple[str, str], float] = field(default_factory=dict, init=False)

    need_leader_election = False
    """The world turns whether or not this replica leads: rooms warm up regardless."""

    def __post_init__(self) -> None:
        if self.tick <= 0:
            raise ValueError(f"tick must be positive, got {self.tick}")
        if self.speed <= 0:
            raise ValueError(f"speed must be positive, got {self.speed}")

    def room(self, namespace: str, room: str) -> RoomModel:
        """The model of a room, created at the initial temperature when first asked for."""
        key = (namespace, room)
        model = self._rooms.get(key)
        if model is None:
            start = self.initial_temperature
            model = RoomModel(
                temperature=self.outside_temperature if start is None else start,
                outside_temperature=self.outside_temperature,
            )
            self._rooms[key] = model
        return model

    def temperature(self, namespace: str, room: str) -> float:
        """The thermometer: the room's temperature as displayed (0.1 degree resolution)."""
        return round(self.room(namespace, room).temperature, _DISPLAY_RESOLUTION)

    def set_cooling(self, namespace: str, unit: str, room: str, on: bool) -> None:
        """The actuator: switch unit ``namespace/unit``, sitting in ``room``, on or off."""
        self.room(namespace, room)
        self._units[(namespace, unit)] = _Unit(namespace, room, on)

    def is_cooling(self, namespace: str, unit: str) -> bool:
        """Whether unit ``namespace/unit`` runs (False for a unit never switched)."""
        state = self._units.get((namespace, unit))
        return state is not None and state.cooling

    def remove_unit(self, namespace: str, unit: str) -> None:
        """Take a unit out of its room (it was deleted): it cools nothing any more."""
        self._units.pop((namespace, unit), None)

    def units_cooling(self, namespace: str, room: str) -> int:
        """How many units run in a room."""
        return sum(
            1
            for unit in self._units.values()
            if unit.cooling and (unit.namespace, unit.room) == (namespace, room)
        )

    def step(self, simulated_seconds: float) -> list[RoomReading]:
        """Advance every room; return the readings whose displayed value changed."""
        changed = []
        for (namespace, name), model in self._rooms.items():
            model.advance(simulated_seconds, self.units_cooling(namespace, name))
            shown = round(model.temperature, _DISPLAY_RESOLUTION)
            if self._displayed.get((namespace, name)) != shown:
                self._displayed[(namespace, name)] = shown
                changed.append(RoomReading(namespace, name, shown))
        return changed

    async def start(self) -> None:
        """Run the world until cancelled: step on every tick and publish changed readings."""
        _log.info("room simulator started", tick=self.tick, speed=self.speed)
        last = self.clock.now()
        while True:
            await self.clock.sleep(self.tick)
            now = self.clock.now()
            readings = self.step((now - last) * self.speed)
            last = now
            self._publish(readings)

    def _publish(self, readings: list[RoomReading]) -> None:
        if self.channel is None:
            return
        for reading in readings:
            try:
                self.channel.send_nowait(reading)
            except asyncio.QueueFull:
                # The controller is not draining (not started, or not the leader): a
                # reading is only a nudge, and the controller's periodic probe catches up.
                _log.debug("reading dropped, channel full", room=reading.room)
