"""The air conditioner example without an API server: physics, thermostat, flags, files."""

from __future__ import annotations

import asyncio
import itertools
import math
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from examples.airconditioner import (
    AirConditioner,
    RoomModel,
    RoomReading,
    RoomSimulator,
    Settings,
    operator,
    thermostat,
)

from pyctrl.clock import FakeClock
from pyctrl.handler import Funcs
from pyctrl.source import Channel

from .conftest import EXAMPLES

if TYPE_CHECKING:
    from pyctrl.event import GenericEvent
    from pyctrl.handler import Queue
    from pyctrl.reconcile import Request
    from pyctrl.workqueue import Trigger

AIRCONDITIONER = EXAMPLES / "airconditioner"


# -- the thermal model -----------------------------------------------------------------------


def test_room_drifts_toward_the_outside_temperature_without_cooling() -> None:
    """A room left alone warms toward the outside, never past it."""
    room = RoomModel(temperature=20.0, outside_temperature=30.0)
    readings = [room.advance(600) for _ in range(20)]
    assert readings == sorted(readings)
    assert 29.0 < readings[-1] < 30.0


def test_advance_follows_the_exact_solution_whatever_the_step() -> None:
    """Two half steps land where one whole step does (the exact solution, not Euler)."""
    one, two = RoomModel(temperature=30.0), RoomModel(temperature=30.0)
    one.advance(120, units_cooling=1)
    two.advance(60, units_cooling=1)
    two.advance(60, units_cooling=1)
    assert one.temperature == pytest.approx(two.temperature, abs=1e-9)
    settle = one.equilibrium(1)
    expected = settle + (30.0 - settle) * math.exp(-one.loss_rate * 120)
    assert one.temperature == pytest.approx(expected)


def test_each_running_unit_lowers_the_equilibrium() -> None:
    """Two units settle the room colder than one, one colder than none."""
    room = RoomModel(temperature=25.0, outside_temperature=30.0)
    assert room.equilibrium(0) == 30.0
    assert room.equilibrium(2) < room.equilibrium(1) < room.equilibrium(0)


def test_time_never_runs_backwards() -> None:
    """Advancing by a negative time is refused with an error naming the value."""
    with pytest.raises(ValueError, match="seconds=-1"):
        RoomModel(temperature=25.0).advance(-1)


# -- the thermostat ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("current", "cooling", "expected"),
    [
        (27.0, False, True),  # too warm: start cooling
        (25.0, True, False),  # at the target: stop
        (24.0, True, False),  # below: stay idle
        (25.3, False, False),  # inside the band, idle: stay idle
        (25.3, True, True),  # inside the band, cooling: keep cooling
    ],
)
def test_thermostat_cools_above_the_band_and_idles_at_the_target(
    current: float, cooling: bool, expected: bool
) -> None:
    """Above target plus hysteresis the unit cools; at the target it stops; between, it keeps on."""
    assert thermostat(current, 25.0, cooling=cooling, hysteresis=0.5) is expected


def test_closed_loop_settles_in_the_band_and_cycles_the_compressor() -> None:
    """Probing every minute, a 30°C room is held between the target and the band's top."""
    room = RoomModel(temperature=30.0)
    cooling = False
    history = []
    for _ in range(240):  # four simulated hours
        cooling = thermostat(room.temperature, 24.0, cooling=cooling, hysteresis=0.5)
        history.append(cooling)
        room.advance(60, units_cooling=int(cooling))
    settled = []
    for _ in range(60):
        cooling = thermostat(room.temperature, 24.0, cooling=cooling, hysteresis=0.5)
        history.append(cooling)
        room.advance(60, units_cooling=int(cooling))
        settled.append(room.temperature)
    assert min(settled) > 24.0 - 3.0
    assert max(settled) <= 24.5 + 0.2
    switches = sum(1 for a, b in itertools.pairwise(history) if a != b)
    assert switches >= 4, "the compressor should cycle, not run or idle for ever"


# -- the simulator ---------------------------------------------------------------------------


def test_simulator_counts_only_running_units_of_the_room() -> None:
    """A room cools with its own running units; another room's units do not count."""
    world = RoomSimulator(outside_temperature=30.0)
    world.set_cooling("default", "a", "living-room", True)
    world.set_cooling("default", "b", "bedroom", False)
    world.set_cooling("other", "c", "living-room", True)
    assert world.units_cooling("default", "living-room") == 1
    assert world.units_cooling("default", "bedroom") == 0
    world.step(600)
    assert world.temperature("default", "living-room") < 30.0
    assert world.temperature("default", "bedroom") == 30.0


def test_removed_unit_stops_cooling() -> None:
    """A deleted unit no longer cools its room and reads as not cooling."""
    world = RoomSimulator()
    world.set_cooling("default", "a", "den", True)
    world.remove_unit("default", "a")
    assert not world.is_cooling("default", "a")
    assert world.units_cooling("default", "den") == 0


def test_step_reports_only_rooms_whose_displayed_temperature_changed() -> None:
    """A reading goes out when the thermometer's 0.1° display changes, not on every step."""
    world = RoomSimulator(initial_temperature=25.0, outside_temperature=30.0)
    world.room("default", "den")
    assert world.step(0) == [RoomReading("default", "den", 25.0)]
    assert world.step(0.001) == []
    readings = world.step(600)
    assert [r.room for r in readings] == ["den"]
    assert readings[0].temperature > 25.0


class _Recorder:
    def __init__(self) -> None:
        self.readings: asyncio.Queue[RoomReading] = asyncio.Queue()

    async def generic(self, event: GenericEvent[Any], queue: Queue) -> None:
        await self.readings.put(event.object)


class _NoQueue:
    def add(self, item: Request, *, priority: int = 0, trigger: Trigger | None = None) -> None:
        raise AssertionError("the recording handler enqueues nothing")


async def test_simulator_runs_on_its_clock_and_sends_readings() -> None:
    """On each tick of a fake clock the world advances tick*speed seconds and sends readings."""
    clock = FakeClock()
    recorder = _Recorder()
    channel = Channel(Funcs(on_generic=recorder.generic))
    world = RoomSimulator(clock=clock, tick=1.0, speed=60.0, channel=channel)
    world.set_cooling("default", "a", "den", True)
    async with asyncio.TaskGroup() as tg:
        runner = tg.create_task(world.start())
        deliverer = tg.create_task(channel.start(_NoQueue()))
        async with asyncio.timeout(5):
            await clock.wait_for_timers(1)
            clock.advance(1.0)
            first = await recorder.readings.get()
            await clock.wait_for_timers(1)
            clock.advance(1.0)
            second = await recorder.readings.get()
        runner.cancel()
        deliverer.cancel()
    expected = RoomModel(temperature=30.0)
    expected.advance(60, units_cooling=1)
    assert first == RoomReading("default", "den", round(expected.temperature, 1))
    expected.advance(60, units_cooling=1)
    assert second.temperature == round(expected.temperature, 1) < first.temperature


async def test_simulator_keeps_running_when_nobody_drains_the_channel() -> None:
    """With the channel full (controller not running) readings are dropped; time goes on."""
    clock = FakeClock()
    channel = Channel(buffer_size=1)
    world = RoomSimulator(clock=clock, tick=1.0, speed=60.0, channel=channel)
    world.set_cooling("default", "a", "den", True)
    world.set_cooling("default", "b", "hall", True)
    async with asyncio.TaskGroup() as tg:
        runner = tg.create_task(world.start())
        async with asyncio.timeout(5):
            for _ in range(3):  # each tick has two readings for a buffer of one
                await clock.wait_for_timers(1)
                clock.advance(1.0)
            await clock.wait_for_timers(1)  # asleep again, not stuck sending
        runner.cancel()
    expected = RoomModel(temperature=30.0)
    expected.advance(180, units_cooling=1)
    assert world.temperature("default", "hall") == round(expected.temperature, 1)


def test_simulator_rejects_a_stopped_clock() -> None:
    """A non-positive tick is refused with an error naming it."""
    with pytest.raises(ValueError, match="tick must be positive"):
        RoomSimulator(tick=0)


# -- flags -----------------------------------------------------------------------------------


def test_flags_become_settings() -> None:
    """The simulation flags reach the settings setup() receives."""
    args = operator.parser().parse_args(
        [
            "--probe-period=0.5",
            "--sim-tick=0.1",
            "--sim-speed=600",
            "--outside-temperature=35",
            "--initial-temperature=28",
            "--hysteresis=0.2",
        ]
    )
    assert Settings.from_args(args) == Settings(
        probe_period=0.5,
        tick=0.1,
        speed=600,
        outside_temperature=35,
        initial_temperature=28,
        hysteresis=0.2,
    )


def test_defaults_match_settings_defaults() -> None:
    """Without flags the operator runs with the documented defaults."""
    assert Settings.from_args(operator.parser().parse_args([])) == Settings()


def test_bad_period_is_refused_with_its_flag_named(capsys: pytest.CaptureFixture[str]) -> None:
    """A zero probe period fails flag parsing, naming the flag and the reason."""
    with pytest.raises(SystemExit):
        operator.parser().parse_args(["--probe-period=0"])
    err = capsys.readouterr().err
    assert "--probe-period" in err
    assert "must be a positive number of seconds" in err


# -- checked-in files ---------------------------------------------------------------------------


async def test_checked_in_manifests_are_current() -> None:
    """config/ holds exactly what the Python types generate (regenerate if this fails)."""
    rendered = await operator.render_manifests()
    config = AIRCONDITIONER / "config"
    on_disk = {str(path.relative_to(config)): path.read_text() for path in config.rglob("*.yaml")}
    assert on_disk == rendered, (
        "examples/airconditioner/config is stale: run "
        "pyctrl generate examples.airconditioner:operator --out examples/airconditioner/config"
    )


async def test_role_grants_only_what_the_controller_uses() -> None:
    """The ClusterRole covers AirConditioners, their status and Events, and nothing else."""
    role = (await operator.manifests())["rbac/role.yaml"][0]
    resources = {res for rule in role["rules"] for res in rule["resources"]}
    assert resources == {
        "airconditioners",
        "airconditioners/status",
        "airconditioners/finalizers",
        "events",
    }
    assert all("*" not in rule["verbs"] for rule in role["rules"])


def test_samples_are_units_a_and_b_with_different_targets() -> None:
    """The samples are valid AirConditioners: the seed's units A and B, in different rooms."""
    units = [
        AirConditioner.model_validate(yaml.safe_load(path.read_text()))
        for path in sorted((AIRCONDITIONER / "samples").glob("*.yaml"))
    ]
    assert [u.metadata.name for u in units] == ["my-airconditioner-a", "my-airconditioner-b"]
    assert units[0].spec.target_temperature != units[1].spec.target_temperature
    assert units[0].spec.room != units[1].spec.room
