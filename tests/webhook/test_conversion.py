"""Conversion: hub and spoke, ConversionReview, and lossless round trips."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from pyctrl.resource import CustomResource
from pyctrl.webhook import CONVERSION_DATA_ANNOTATION, ConversionHandler

from .conftest import ThermostatV1, ThermostatV1alpha1

HANDLER = ConversionHandler(ThermostatV1, [ThermostatV1alpha1])


def _v1(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "climate.example.com/v1",
        "kind": "Thermostat",
        "metadata": {"name": "a"},
        "spec": spec,
    }


def test_spoke_to_hub_and_back() -> None:
    """Objects convert between versions through the hub."""
    down = HANDLER.convert(_v1(targetCelsius=20.0), "climate.example.com/v1alpha1")
    assert down["apiVersion"] == "climate.example.com/v1alpha1"
    assert down["spec"] == {"targetFahrenheit": 68.0}
    up = HANDLER.convert(down, "climate.example.com/v1")
    assert up["spec"]["targetCelsius"] == 20.0


def test_round_trip_keeps_fields_the_spoke_cannot_hold() -> None:
    """Hub-only fields survive hub -> spoke -> hub through the conversion-data annotation."""
    original = _v1(targetCelsius=20.0, mode="heat", schedule=["08:00"])
    down = HANDLER.convert(original, "climate.example.com/v1alpha1")
    assert CONVERSION_DATA_ANNOTATION in down["metadata"]["annotations"]
    up = HANDLER.convert(down, "climate.example.com/v1")
    assert up["spec"] == {"targetCelsius": 20.0, "mode": "heat", "schedule": ["08:00"]}
    assert CONVERSION_DATA_ANNOTATION not in up["metadata"].get("annotations", {})


def test_spoke_changes_win_over_the_saved_data() -> None:
    """A field changed in the spoke version is not overwritten by the saved hub data."""
    down = HANDLER.convert(_v1(targetCelsius=20.0, mode="heat"), "climate.example.com/v1alpha1")
    spec: dict[str, Any] = down["spec"]
    spec["targetFahrenheit"] = 77.0
    up = HANDLER.convert(down, "climate.example.com/v1")
    assert up["spec"]["targetCelsius"] == 25.0
    assert up["spec"]["mode"] == "heat"


def test_unknown_versions_and_bad_declarations() -> None:
    """Unknown versions are refused by name; a spoke without methods is refused at setup."""
    with pytest.raises(ValueError, match=r"unknown version 'climate\.example\.com/v9'"):
        HANDLER.convert(_v1(targetCelsius=1.0), "climate.example.com/v9")

    class Plain(CustomResource, group="climate.example.com", version="v2", kind="Thermostat"):
        pass

    with pytest.raises(TypeError, match="must define to_hub"):
        ConversionHandler(ThermostatV1, [Plain])


async def test_conversion_review_success_and_failure() -> None:
    """A ConversionReview converts every object, or reports Failure with the reason."""
    body: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {
            "uid": "u",
            "desiredAPIVersion": "climate.example.com/v1alpha1",
            "objects": [_v1(targetCelsius=0.0), _v1(targetCelsius=100.0)],
        },
    }
    answer = orjson.loads((await HANDLER.review(body)).body)  # type: ignore[arg-type]
    response = answer["response"]
    assert response["uid"] == "u"
    assert response["result"] == {"status": "Success"}
    assert [o["spec"]["targetFahrenheit"] for o in response["convertedObjects"]] == [32.0, 212.0]
    body["request"]["objects"] = [_v1(targetCelsius="hot")]
    failed = orjson.loads((await HANDLER.review(body)).body)["response"]  # type: ignore[arg-type]
    assert failed["result"]["status"] == "Failure"
    assert "conversion failed" in failed["result"]["message"]
