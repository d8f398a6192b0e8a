"""pytest plugin: the ``envtest`` fixture, a started test `Environment` per test.

Installed with pyctrl (entry point ``pytest11: pyctrl``), so no ``conftest.py`` is
needed. The fixture is async and function-scoped: each test gets a fresh embedded
API server (milliseconds to start) or, with ``USE_EXISTING_CLUSTER=true``, a
connection to an existing cluster, with the CRDs installed::

    async def test_reconcile(envtest):
        async with ApiClient(envtest.config) as api:
            ...

CRDs come from the ini option ``envtest_crd_paths`` (paths relative to the ini
file) plus the ``crds`` of an ``envtest`` marker; the marker's other keyword
arguments go to `Environment`::

    @pytest.mark.envtest(crds=["config/crd/bases"], garbage_collector=False)
    async def test_without_gc(envtest): ...

The ``envtest_fleet`` fixture gives several embedded API servers at once
(`Environment.fleet`), for multi-cluster operators: ``@pytest.mark.envtest_fleet(n=3)``
(default 3, named a, b, c; or ``names=[...]``), with the ``envtest`` marker's CRDs and
options applied to each::

    @pytest.mark.envtest_fleet(names=["hub", "east", "west"])
    async def test_copies(envtest_fleet):
        hub = envtest_fleet["hub"]

The fixture needs pytest-asyncio; pyctrl does not depend on pytest, so the plugin
only fails (with a message saying so) when the fixture is used without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from pyctrl.envtest.environment import Environment, EnvironmentFleet

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

__all__ = ["envtest", "envtest_fleet", "pytest_addoption", "pytest_configure"]

_INI = "envtest_crd_paths"


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ``envtest_crd_paths`` ini option."""
    parser.addini(
        _INI,
        type="paths",
        default=[],
        help="CRD files or directories that the envtest fixture installs (pyctrl)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``envtest`` marker."""
    config.addinivalue_line(
        "markers",
        "envtest(crds=[...], **options): CRDs and Environment options for the envtest "
        "fixture (pyctrl)",
    )
    config.addinivalue_line(
        "markers",
        "envtest_fleet(n=3, names=[...]): the size and names of the envtest_fleet fixture's "
        "API servers (pyctrl)",
    )


def _options(request: pytest.FixtureRequest) -> dict[str, Any]:
    options: dict[str, Any] = {}
    marker = request.node.get_closest_marker("envtest")
    if marker is not None:
        if marker.args:
            raise pytest.UsageError(
                "@pytest.mark.envtest takes keyword arguments only, e.g. envtest(crds=[...])"
            )
        options.update(marker.kwargs)
    options["crds"] = [*request.config.getini(_INI), *options.pop("crds", ())]
    return options


def _environment(request: pytest.FixtureRequest) -> Environment:
    try:
        return Environment(**_options(request))
    except TypeError as exc:
        raise pytest.UsageError(f"bad @pytest.mark.envtest arguments: {exc}") from None


def _fleet(request: pytest.FixtureRequest) -> EnvironmentFleet:
    marker = request.node.get_closest_marker("envtest_fleet")
    shape: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    try:
        return Environment.fleet(
            shape.pop("n", len(shape.get("names") or ()) or 3),
            names=shape.pop("names", None),
            **_options(request),
        )
    except (TypeError, ValueError) as exc:
        raise pytest.UsageError(f"bad envtest_fleet/envtest marker arguments: {exc}") from None


try:
    import pytest_asyncio
except ImportError:  # pragma: no cover - exercised only without pytest-asyncio

    @pytest.fixture(name="envtest")
    def envtest_unavailable() -> None:
        """Fail: the envtest fixture is async and needs pytest-asyncio."""
        pytest.fail("the envtest fixture needs pytest-asyncio (pip install pytest-asyncio)")

    @pytest.fixture(name="envtest_fleet")
    def envtest_fleet_unavailable() -> None:
        """Fail: the envtest_fleet fixture is async and needs pytest-asyncio."""
        pytest.fail("the envtest_fleet fixture needs pytest-asyncio (pip install pytest-asyncio)")

else:

    @pytest_asyncio.fixture(name="envtest")
    async def envtest(request: pytest.FixtureRequest) -> AsyncIterator[Environment]:
        """Yield a started `Environment`; stop it after the test.

        CRDs come from the ``envtest_crd_paths`` ini option and ``@pytest.mark.envtest``.
        """
        async with _environment(request) as env:
            yield env

    @pytest_asyncio.fixture(name="envtest_fleet")
    async def envtest_fleet(request: pytest.FixtureRequest) -> AsyncIterator[EnvironmentFleet]:
        """Yield started embedded API servers (`Environment.fleet`); stop them after the test.

        Sized by ``@pytest.mark.envtest_fleet(n=..., names=[...])``; each gets the CRDs
        and options of ``envtest_crd_paths`` and ``@pytest.mark.envtest``.
        """
        async with _fleet(request) as fleet:
            yield fleet
