"""pyctrl.client and pyctrl.config: the public names."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

import pytest

import pyctrl.client
import pyctrl.config

if TYPE_CHECKING:
    import types


@pytest.mark.parametrize("module", [pyctrl.client, pyctrl.config])
def test_all_lists_every_public_name_defined_there(module: types.ModuleType) -> None:
    """__all__ names every public class and function the module defines, and all exist."""
    exported = set(module.__all__)
    defined = {
        n
        for n, v in vars(module).items()
        if not n.startswith("_")
        and (inspect.isclass(v) or inspect.isfunction(v))
        and str(getattr(v, "__module__", "")).startswith(module.__name__)
    }
    assert defined <= exported
    assert all(hasattr(module, n) for n in exported)


def test_every_public_class_and_function_is_documented() -> None:
    """Every class and function exported by pyctrl.client has a docstring, as do methods."""
    undocumented = []
    for name in pyctrl.client.__all__:
        value = getattr(pyctrl.client, name)
        if not (inspect.isclass(value) or inspect.isfunction(value)):
            continue
        if not inspect.getdoc(value):
            undocumented.append(name)
        if inspect.isclass(value):
            for attr, member in vars(value).items():
                if attr.startswith("_") or not callable(member):
                    continue
                if not inspect.getdoc(member):
                    undocumented.append(f"{name}.{attr}")
    assert undocumented == []
