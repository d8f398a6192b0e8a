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

The fixture needs pytest-asyncio; pyctrl does not depend on pytest, so the plugin
only fails (with a message saying so) when the fixture is used without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from pyctrl.envtest.environment import Environment

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

__all__ = ["envtest", "pytest_addoption", "pytest_configure"]

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


def _environment(request: pytest.FixtureRequest) -> Environment:
    options: dict[str, Any] = {}
    marker = request.node.get_closest_marker("envtest")
    if marker is not None:
        if marker.args:
            raise pytest.UsageError(
                "@pytest.mark.envtest takes keyword arguments only, e.g. envtest(crds=[...])"
            )
        options.update(marker.kwargs)
    crds = [*request.config.getini(_INI), *options.pop("crds", ())]
    try:
        return Environment(crds=crds, **options)
    except TypeError as exc:
        raise pytest.UsageError(f"bad @pytest.mark.envtest arguments: {exc}") from None


try:
    import pytest_asyncio
except ImportError:  # pragma: no cover - exercised only without pytest-asyncio

    @pytest.fixture(name="envtest")
    def envtest_unavailable() -> None:
        """Fail: the envtest fixture is async and needs pytest-asyncio."""
        pytest.fail("the envtest fixture needs pytest-asyncio (pip install pytest-asyncio)")

else:

    @pytest_asyncio.fixture(name="envtest")
    async def envtest(request: pytest.FixtureRequest) -> AsyncIterator[Environment]:
        """Yield a started `Environment`; stop it after the test.

        CRDs come from the ``envtest_crd_paths`` ini option and ``@pytest.mark.envtest``.
        """
        async with _environment(request) as env:
            yield env
