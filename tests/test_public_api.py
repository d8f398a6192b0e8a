"""The package root: re-exports and documentation of public names."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pyctrl


def test_all_is_sorted_and_complete() -> None:
    """__all__ is sorted and lists exactly the public names the root defines."""
    assert pyctrl.__all__ == sorted(pyctrl.__all__)
    # pytest rewrites the package because it ships a plugin, adding "@py_..." names.
    public = {n for n in dir(pyctrl) if n.isidentifier() and not n.startswith("_")}
    public -= {"annotations", "importlib", "TYPE_CHECKING", "Any"}
    public -= {m.name for m in pkgutil.iter_modules(pyctrl.__path__)}
    assert public | {"__version__"} == set(pyctrl.__all__)


def test_every_public_module_and_name_is_documented() -> None:
    """Every public module has a docstring, and so does every public class and function."""
    undocumented = []
    for info in pkgutil.walk_packages(pyctrl.__path__, "pyctrl."):
        if any(part.startswith("_") for part in info.name.split(".")) or info.name.endswith(
            "__main__"
        ):
            continue
        module = importlib.import_module(info.name)
        if not (module.__doc__ or "").strip():
            undocumented.append(info.name)
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if (inspect.isclass(value) or inspect.isfunction(value)) and not inspect.getdoc(value):
                undocumented.append(f"{info.name}.{name}")
    assert undocumented == []


def test_lazy_names_resolve_to_their_modules() -> None:
    """Lazily exported names are the objects of the modules they come from."""
    from pyctrl.manager import Manager

    assert pyctrl.Manager is Manager
    assert callable(pyctrl.controller_managed_by)
