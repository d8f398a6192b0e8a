"""The air conditioner operator end to end: kubectl and the operator on the embedded API server.

The simulation runs fast (a 0.05 s tick worth 6 simulated seconds, a 0.1 s probe
period), so rooms cool from 30°C to their targets in a second or two of real time.
"""

from __future__ import annotations

import re
import uuid
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest
from examples.airconditioner import AirConditioner, AirConditionerStatus, operator

from pyctrl.cache import ResourceEventHandlerFuncs
from pyctrl.meta import is_status_condition_true
from pyctrl.testing import eventually

from .conftest import EXAMPLES, Kubectl, operator_running

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence
    from pathlib import Path

    from pyctrl.envtest import Environment
    from pyctrl.manager import Manager

AIRCONDITIONER = EXAMPLES / "airconditioner"
FAST = ("--probe-period=0.1", "--sim-tick=0.05", "--sim-speed=120", "--hysteresis=0.5")
TARGETS = {"my-airconditioner-a": 25.0, "my-airconditioner-b": 22.0}


@pytest.fixture
def crds() -> Sequence[Any]:
    return [AIRCONDITIONER / "config" / "crd"]


@pytest.fixture
async def manager(env: Environment) -> AsyncIterator[Manager]:
    async with operator_running(operator, env, *FAST) as running:
        yield running


@pytest.fixture
def statuses(manager: Manager) -> dict[str, list[AirConditionerStatus]]:
    """Every status each unit goes through, as the manager's watch delivers them, in order.

    Registered before the samples are applied, so no status is missed: polling with
    kubectl could step over the second or so a room takes to cool down.
    """
    history: dict[str, list[AirConditionerStatus]] = defaultdict(list)

    def record(unit: AirConditioner) -> None:
        if unit.status.current_temperature is not None:
            history[unit.metadata.name or ""].append(unit.status)

    manager.cache.get_informer(AirConditioner).add_event_handler(
        ResourceEventHandlerFuncs(
            add_func=lambda unit, _initial: record(unit),
            update_func=lambda _old, new: record(new),
        )
    )
    return history


@pytest.fixture
async def units(env: Environment, tmp_path: Path) -> Kubectl:
    """kubectl in a fresh namespace holding the two sample units (metrics are per namespace)."""
    namespace = f"ac-{uuid.uuid4().hex[:8]}"
    kubectl = Kubectl(env.kubeconfig_path, tmp_path / "kube-cache", namespace)
    await kubectl("create", "namespace", namespace)
    await kubectl("apply", "-f", str(AIRCONDITIONER / "samples"))
    return kubectl


def reached(unit: dict[str, Any]) -> bool:
    """Whether the unit reports its target reached with the compressor off."""
    status = unit.get("status") or {}
    conditions = {c["type"]: c for c in status.get("conditions", [])}
    target = unit["spec"]["targetTemperature"]
    current = status.get("currentTemperature")
    return (
        conditions.get("TargetReached", {}).get("status") == "True"
        and status.get("cooling") is False
        and current is not None
        and current <= target + 0.5
    )


async def scrape(manager: Manager) -> str:
    """The manager's /metrics page."""
    assert manager.metrics_address is not None
    url = f"http://{manager.metrics_address}/metrics"
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        assert response.status == 200
        return await response.text()


def gauge(page: str, name: str, namespace: str, unit: str) -> float | None:
    """The value of one series of a gauge in a metrics page, or None if absent."""
    pattern = rf'^{name}\{{namespace="{namespace}",unit="{unit}"\}} (\S+)$'
    match = re.search(pattern, page, re.MULTILINE)
    return float(match.group(1)) if match else None


async def test_units_a_and_b_converge_to_their_own_targets(
    manager: Manager, statuses: dict[str, list[AirConditionerStatus]], units: Kubectl
) -> None:
    """Both sample units cool their rooms from 30°C down to their different targets."""
    seen: list[dict[str, Any]] = []

    async def both_reached() -> bool:
        seen[:] = (await units.json("airconditioners"))["items"]
        return len(seen) == 2 and all(reached(unit) for unit in seen)

    await eventually(both_reached)
    # The state that converged, not a later read: by then the room may have warmed past
    # the hysteresis band and the unit cools again (it does so under load).
    final = {u["metadata"]["name"]: u for u in seen}
    for name, target in TARGETS.items():
        current = final[name]["status"]["currentTemperature"]
        assert target - 2.0 < current <= target + 0.5, (name, current)
        assert statuses[name][0].current_temperature == 30.0
        assert statuses[name][0].cooling
    assert (
        final["my-airconditioner-b"]["status"]["currentTemperature"]
        < final["my-airconditioner-a"]["status"]["currentTemperature"]
    )


async def test_cooling_switches_off_once_the_target_is_reached(
    manager: Manager, statuses: dict[str, list[AirConditionerStatus]], units: Kubectl
) -> None:
    """A unit cools while the room is too warm and stops, TargetReached, once at the target."""

    async def unit_a_reached() -> bool:
        return reached(await units.json("airconditioner", "my-airconditioner-a"))

    await eventually(unit_a_reached)
    history = statuses["my-airconditioner-a"]
    first_off = next(i for i, status in enumerate(history) if not status.cooling)
    assert first_off > 0, "the room started too warm: the unit must have cooled first"
    for status in history[:first_off]:
        assert status.current_temperature is not None
        assert status.current_temperature > 25.0
        # Within the hysteresis band the target counts as reached, but cooling goes on.
        reached_band = status.current_temperature <= 25.5
        assert is_status_condition_true(status.conditions, "TargetReached") is reached_band
    off = history[first_off]
    assert off.current_temperature is not None
    assert off.current_temperature <= 25.0
    assert is_status_condition_true(off.conditions, "TargetReached")


async def test_mode_off_stops_the_compressor_and_the_room_warms(
    manager: Manager, units: Kubectl
) -> None:
    """Switching a unit off keeps the compressor off; the room warms past the band."""

    async def a_reached() -> bool:
        return reached(await units.json("airconditioner", "my-airconditioner-a"))

    await eventually(a_reached)
    await units(
        "patch", "airconditioner", "my-airconditioner-a", "--type=merge",
        "-p", '{"spec":{"mode":"off"}}',
    )  # fmt: skip

    async def too_warm_and_idle() -> bool:
        unit = await units.json("airconditioner", "my-airconditioner-a")
        status = unit["status"]
        conditions = {c["type"]: c for c in status["conditions"]}
        return (
            status["currentTemperature"] > 25.5
            and status["cooling"] is False
            and conditions["TargetReached"]["status"] == "False"
            and "unit off" in conditions["TargetReached"]["message"]
        )

    await eventually(too_warm_and_idle)


async def test_kubectl_get_shows_the_printer_columns(manager: Manager, units: Kubectl) -> None:
    """``kubectl get ac`` lists room, mode, target, current temperature and cooling."""

    async def probed() -> bool:
        items = (await units.json("airconditioners"))["items"]
        return all((u.get("status") or {}).get("currentTemperature") for u in items)

    await eventually(probed)
    table = (await units("get", "ac")).out.splitlines()
    assert table[0].split() == ["NAME", "ROOM", "MODE", "TARGET", "CURRENT", "COOLING", "AGE"]
    rows = {line.split()[0]: line.split() for line in table[1:]}
    assert rows["my-airconditioner-a"][1:4] == ["living-room", "cool", "25"]
    assert rows["my-airconditioner-b"][1:4] == ["bedroom", "cool", "22"]


async def test_metrics_expose_each_units_room_temperature(manager: Manager, units: Kubectl) -> None:
    """/metrics carries the room temperature, target and compressor state of each unit."""

    async def both_reached() -> bool:
        items = (await units.json("airconditioners"))["items"]
        return len(items) == 2 and all(reached(u) for u in items)

    await eventually(both_reached)
    ns = units.namespace

    async def metrics_converged() -> bool:
        page = await scrape(manager)
        values = {
            name: gauge(page, "airconditioner_room_temperature_celsius", ns, name)
            for name in TARGETS
        }
        return all(v is not None and v <= TARGETS[n] + 0.5 for n, v in values.items())

    await eventually(metrics_converged)
    page = await scrape(manager)
    assert gauge(page, "airconditioner_target_temperature_celsius", ns, "my-airconditioner-b") == (
        22.0
    )
    assert gauge(page, "airconditioner_cooling", ns, "my-airconditioner-a") in (0.0, 1.0)


async def test_deleting_a_unit_removes_its_metrics(manager: Manager, units: Kubectl) -> None:
    """Once a unit is deleted, its series disappear from /metrics."""
    ns = units.namespace

    async def exported() -> bool:
        page = await scrape(manager)
        return all(
            gauge(page, "airconditioner_room_temperature_celsius", ns, n) is not None
            for n in TARGETS
        )

    await eventually(exported)
    await units("delete", "airconditioner", "my-airconditioner-b")

    async def b_gone() -> bool:
        page = await scrape(manager)
        return (
            gauge(page, "airconditioner_room_temperature_celsius", ns, "my-airconditioner-b")
            is None
        )

    await eventually(b_gone)
    page = await scrape(manager)
    assert gauge(page, "airconditioner_room_temperature_celsius", ns, "my-airconditioner-a")
