"""Fixtures for end-to-end tests of the manager stack on the embedded API server."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

import pytest
from pydantic import Field, model_validator

from pyctrl.crd import crd_for
from pyctrl.envtest import Environment
from pyctrl.manager import Options
from pyctrl.meta import Condition, KubeModel
from pyctrl.resource import CustomResource

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


class WidgetSpec(KubeModel):
    """Desired state: what to put in the owned ConfigMap."""

    color: str = "blue"
    size: int = 1


class WidgetStatus(KubeModel):
    """Observed state."""

    observed_generation: int = 0
    config_map: str = ""
    conditions: list[Condition] = Field(default_factory=list)


class Widget(CustomResource, group="test.pyctrl.dev", version="v1"):
    """A test custom resource that owns a ConfigMap."""

    spec: WidgetSpec = Field(default_factory=WidgetSpec)
    status: WidgetStatus = Field(default_factory=WidgetStatus)


DECODED: list[str] = []
"""Names of the `DecodeCounted` objects built from JSON, in order: every decode counts."""


class DecodeCounted(KubeModel):
    """A custom resource's mixin recording each decode of one in `DECODED`."""

    @model_validator(mode="after")
    def _counted(self) -> Self:
        DECODED.append(getattr(getattr(self, "metadata", None), "name", None) or "")
        return self


@pytest.fixture
async def env() -> AsyncIterator[Environment]:
    async with Environment(crds=[crd_for(Widget)]) as environment:
        yield environment


def options(**kw: Any) -> Options:
    """Manager options for tests: no metrics port clash, quick sync timeout."""
    return Options(metrics_bind_address="127.0.0.1:0", cache_sync_timeout=20, **kw)
