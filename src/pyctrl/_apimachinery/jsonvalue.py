"""Equality of decoded JSON values, named by what each comparison means.

Two questions are asked of decoded JSON, and Python's ``==`` answers neither (it says
``True == 1`` and compares ``1`` with ``1.0`` as equal):

- `deep_equal` is Go's ``reflect.DeepEqual`` on values decoded into ``interface{}``:
  types must match, so ``1`` (an ``int64``) is not ``1.0`` (a ``float64``). The API server's
  Go code asks it (a default that pruning changed, equal enum values, ratcheting).
- `json_equal` is equality of JSON values: numbers compare by value (``1`` equals
  ``1.0``), booleans are not numbers. JSON patch's ``test``, managedFields comparisons
  and the client's strategic diff ask it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["deep_equal", "json_equal"]


def deep_equal(a: Any, b: Any) -> bool:
    """Go's ``reflect.DeepEqual`` on decoded JSON: ints, floats and bools never compare equal."""
    if a is b:
        return True
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is dict:
        if len(a) != len(b):
            return False
        return all(k in b and deep_equal(v, b[k]) for k, v in a.items())
    if ta is list:
        return len(a) == len(b) and all(deep_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def json_equal(a: Any, b: Any) -> bool:  # noqa: PLR0911 - one return per JSON kind
    """Equality of JSON values: numbers compare by value, booleans are not numbers."""
    if a is b:
        return True
    if isinstance(a, dict):
        if not isinstance(b, dict) or len(a) != len(b):
            return False
        return all(key in b and json_equal(value, b[key]) for key, value in a.items())
    if isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            return False
        return all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and bool(a == b)
