"""pyctrl.crd as a package: its public names and its place in the layers."""

from __future__ import annotations

import asyncio
import sys

import pyctrl.crd


def test_all_is_sorted_and_resolves() -> None:
    """__all__ is sorted and every name in it exists."""
    assert pyctrl.crd.__all__ == sorted(pyctrl.crd.__all__)
    missing = [name for name in pyctrl.crd.__all__ if not hasattr(pyctrl.crd, name)]
    assert missing == []


async def test_importing_crd_does_not_import_envtest() -> None:
    """Importing pyctrl.crd loads neither the server nor its schema checker."""
    code = (
        "import sys, pyctrl.crd; "
        "print(sorted(m for m in sys.modules if m.startswith("
        "('pyctrl.envtest', 'pyctrl._apiextensions'))))"
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, stdout=asyncio.subprocess.PIPE
    )
    async with asyncio.timeout(30):
        out, _ = await process.communicate()
    assert process.returncode == 0
    assert out.decode().strip() == "[]"


def test_structural_errors_word_each_problem_like_kube_apiserver() -> None:
    """structural_errors gives one ``<field>: <error>`` line per problem, under ``path``."""
    untyped = {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"x": {}}}},
    }
    path = "spec.versions[0].schema.openAPIV3Schema"
    assert pyctrl.crd.structural_errors(untyped, path) == [
        f"{path}.properties[spec].properties[x].type: "
        "Required value: must not be empty for specified object fields"
    ]
    assert pyctrl.crd.structural_errors({"type": "object"}) == []
