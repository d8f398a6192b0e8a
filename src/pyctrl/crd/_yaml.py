"""YAML output in controller-gen's layout, for ``kubectl apply -f``.

Each object is one document opening with ``---``; keys are sorted (controller-gen
marshals Go maps and structs through JSON, so every level comes out sorted); lists are
block style and not indented under their key; multi-line descriptions are literal
blocks (``|-``), as in controller-gen's output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml

__all__ = ["to_yaml"]


class _Dumper(yaml.SafeDumper):
    """SafeDumper with literal blocks for multi-line strings."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        # PyYAML falls back to a quoted scalar itself when a literal block cannot hold it
        # (trailing spaces, special characters).
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _represent_str)


def to_yaml(objects: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> str:
    """Render one object (a CRD from `crd_for`) or a list of them as YAML documents.

    Args:
        objects: A JSON-ready dict, or a list of them.

    Returns:
        The YAML text: one ``---`` document per object, keys sorted, block style.

    Raises:
        TypeError: ``objects`` is neither a mapping nor a list of mappings.
    """
    docs = [objects] if isinstance(objects, Mapping) else list(objects)
    for doc in docs:
        if not isinstance(doc, Mapping):
            raise TypeError(f"to_yaml renders dicts (objects), not {type(doc).__name__}")
    text: str = yaml.dump_all(
        [_plain(doc) for doc in docs],
        Dumper=_Dumper,
        explicit_start=True,
        default_flow_style=False,
        sort_keys=True,
        allow_unicode=True,
        width=80,
    )
    return text


def _plain(value: Any) -> Any:
    # SafeDumper only knows the exact builtin types; tuples and other mappings become
    # plain lists and dicts.
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
