from __future__ import annotations

import pyctrl.cache


def test_all_is_sorted_and_lists_every_public_name() -> None:
    """pyctrl.cache.__all__ is sorted and names exactly what the package exports."""
    assert pyctrl.cache.__all__ == sorted(pyctrl.cache.__all__)
    # pytest's assertion rewriting may add "@py_..." names to the module.
    public = {
        name
        for name in vars(pyctrl.cache)
        if name.isidentifier() and not name.startswith("_") and name != "annotations"
    }
    assert public == set(pyctrl.cache.__all__)
