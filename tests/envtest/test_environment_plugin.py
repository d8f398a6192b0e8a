"""The pytest plugin's ``envtest`` fixture, exercised in a pytester-run inner session."""

from __future__ import annotations

import importlib.metadata
from typing import TYPE_CHECKING

import yaml

if TYPE_CHECKING:
    import pytest

pytest_plugins = ["pytester"]

_INSTALLED = any(ep.name == "pyctrl" for ep in importlib.metadata.entry_points(group="pytest11"))
# The plugin normally arrives through the pyctrl entry point; before the package is
# installed the inner session has to load it by module name.
_PLUGIN_ARGS = () if _INSTALLED else ("-p", "pyctrl.envtest.pytest_plugin")

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "plugs.plugin.pyctrl.dev"},
    "spec": {
        "group": "plugin.pyctrl.dev",
        "names": {"kind": "Plug", "listKind": "PlugList", "plural": "plugs", "singular": "plug"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}

_INI = """
[pytest]
asyncio_mode = strict
asyncio_default_fixture_loop_scope = function
envtest_crd_paths = crds
filterwarnings = error
"""


def _run(pytester: pytest.Pytester, test_code: str) -> pytest.RunResult:
    pytester.makeini(_INI)
    crds = pytester.mkdir("crds")
    (crds / "plug.yaml").write_text(yaml.safe_dump(CRD))
    pytester.makepyfile(test_code)
    return pytester.runpytest_inprocess(*_PLUGIN_ARGS, "-p", "no:cacheprovider", "-W", "error")


def test_fixture_yields_started_environment_with_ini_crds(pytester: pytest.Pytester) -> None:
    """The envtest fixture yields a started embedded Environment with the ini option's CRDs."""
    result = _run(
        pytester,
        """
        import pytest

        @pytest.mark.asyncio
        async def test_it(envtest):
            assert envtest.mode == "embedded"
            assert [c["metadata"]["name"] for c in envtest.crds] == ["plugs.plugin.pyctrl.dev"]
            assert envtest.kubeconfig_path.exists()
        """,
    )
    result.assert_outcomes(passed=1)


def test_marker_adds_crds_and_environment_options(pytester: pytest.Pytester) -> None:
    """The envtest marker's crds add to the ini CRDs and its other options reach Environment."""
    extra = dict(CRD, metadata={"name": "sockets.plugin.pyctrl.dev"})
    extra["spec"] = dict(
        CRD["spec"],  # type: ignore[arg-type]
        names={
            "kind": "Socket",
            "listKind": "SocketList",
            "plural": "sockets",
            "singular": "socket",
        },
    )
    result = _run(
        pytester,
        f"""
        import pytest

        EXTRA = {extra!r}

        @pytest.mark.asyncio
        @pytest.mark.envtest(crds=[EXTRA], history_size=5)
        async def test_it(envtest):
            names = sorted(c["metadata"]["name"] for c in envtest.crds)
            assert names == ["plugs.plugin.pyctrl.dev", "sockets.plugin.pyctrl.dev"]
        """,
    )
    result.assert_outcomes(passed=1)


def test_bad_marker_arguments_are_a_usage_error(pytester: pytest.Pytester) -> None:
    """A marker argument Environment does not take is reported as an error naming it."""
    result = _run(
        pytester,
        """
        import pytest

        @pytest.mark.asyncio
        @pytest.mark.envtest(colour="blue")
        async def test_it(envtest):
            pass
        """,
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*bad @pytest.mark.envtest arguments*colour*"])
