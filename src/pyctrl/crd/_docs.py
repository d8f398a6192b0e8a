"""Descriptions from docstrings: the Python counterpart of controller-gen's Go comments.

A class docstring becomes the description of its object schema. Google-style
``Attributes:`` sections are taken apart: each entry describes the field of that name,
and the section itself is left out of the class description.
"""

from __future__ import annotations

import inspect
import re
from typing import Final

_SECTION: Final = re.compile(r"^(Attributes|Attrs):\s*$")
_ENTRY: Final = re.compile(r"^(\w+)\s*(\([^)]*\))?\s*:\s?(.*)$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def class_docs(cls: type) -> tuple[str, dict[str, str]]:
    """Split the docstring of ``cls`` into its description and its attribute entries.

    Only the class's own docstring counts (``__doc__`` is not inherited), as controller-gen
    only reads the comment on the type itself.

    Args:
        cls: The class.

    Returns:
        The description (without the ``Attributes:`` section) and a map of attribute
        name to its description.
    """
    raw = cls.__dict__.get("__doc__")
    if not isinstance(raw, str) or not raw.strip():
        return "", {}
    lines = inspect.cleandoc(raw).splitlines()
    kept: list[str] = []
    attributes: dict[str, list[str]] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        if not _SECTION.match(line.strip()) or _indent(line) != 0:
            kept.append(line)
            i += 1
            continue
        i += 1
        current: list[str] | None = None
        entry_indent: int | None = None
        while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > 0):
            body = lines[i]
            i += 1
            if not body.strip():
                if current is not None:
                    current.append("")
                continue
            if entry_indent is None:
                entry_indent = _indent(body)
            match = _ENTRY.match(body.strip()) if _indent(body) == entry_indent else None
            if match:
                current = attributes.setdefault(match.group(1), [])
                if match.group(3):
                    current.append(match.group(3).strip())
            elif current is not None:
                current.append(body.strip())
    description = "\n".join(kept).strip()
    return description, {
        name: "\n".join(text).strip() for name, text in attributes.items() if "".join(text).strip()
    }
