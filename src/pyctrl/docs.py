"""The API reference in a terminal: ``python -m pyctrl.docs [NAME]``.

The site's API reference is built by mkdocs; in a checkout, or wherever pyctrl is
installed, this module reads the same docstrings without building anything:

- ``python -m pyctrl.docs`` lists every public name (each public module's ``__all__``)
  with the first line of its docstring;
- ``python -m pyctrl.docs Manager`` (or ``pyctrl.manager.Manager``, ``manager.Options``,
  ``pyctrl.client``) prints the whole documentation of that name, as `pydoc` does; a
  short name found in several modules lists them;
- ``python -m pyctrl.docs --markdown`` prints docs/api.md, the index page of the
  documentation, which a test keeps equal to it.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import pkgutil
import pydoc
import sys
from dataclasses import dataclass
from typing import Any

import pyctrl

__all__ = [
    "PublicName",
    "describe",
    "find",
    "main",
    "markdown_index",
    "public_modules",
    "public_names",
]

# Public packages that are programs or plugins rather than APIs to import from.
_NOT_API = frozenset({"cli", "docs"})


@dataclass(frozen=True)
class PublicName:
    """One public name: where it lives, what it is, and the first line of its docstring.

    Attributes:
        module: The public module that exports it (``pyctrl.manager``).
        name: The name in that module's ``__all__`` (``Options``).
        summary: The first line of its docstring ("" when it has none).
    """

    module: str
    name: str
    summary: str

    @property
    def qualified(self) -> str:
        """``module.name``."""
        return f"{self.module}.{self.name}"


def public_modules() -> list[str]:
    """Every public module of pyctrl that has an API, sorted: ``pyctrl.builder``, ..."""
    return sorted(
        f"pyctrl.{info.name}"
        for info in pkgutil.iter_modules(pyctrl.__path__)
        if not info.name.startswith("_") and info.name not in _NOT_API
    )


def _attribute_docstrings(module: Any) -> dict[str, str]:
    """Docstrings written under module-level assignments (``X = 1`` then ``\"\"\"...\"\"\"``)."""
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError):
        return {}
    found: dict[str, str] = {}
    for node, after in zip(tree.body, tree.body[1:], strict=False):
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        if (
            isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            for target in targets:
                if isinstance(target, ast.Name):
                    found[target.id] = inspect.cleandoc(after.value.value)
    return found


def _own_doc(obj: Any) -> str | None:
    """The object's own docstring: not one its type lends it (an int's, a str's)."""
    if inspect.ismodule(obj) or inspect.isclass(obj) or callable(obj):
        return inspect.getdoc(obj)
    return None


def _first_line(doc: str | None) -> str:
    return doc.strip().splitlines()[0].strip() if doc and doc.strip() else ""


def _summary(name: str, obj: Any, attributes: dict[str, str]) -> str:
    """The first line of the name's docstring, or what it is when it has none."""
    if name in attributes:
        return _first_line(attributes[name])
    if not inspect.isclass(obj) and callable(getattr(obj, "describe", None)):
        # A Prometheus metric: its help text is its documentation.
        metrics = obj.describe()
        if metrics and hasattr(metrics[0], "documentation"):
            return f"{metrics[0].type} ``{metrics[0].name}``: {metrics[0].documentation}"
    doc = _own_doc(obj)
    if doc:
        return _first_line(doc)
    if isinstance(obj, str | int | float | bool | bytes):
        return f"``{name} = {obj!r}``"
    return f"type alias: ``{obj}``" if not callable(obj) or hasattr(obj, "__origin__") else ""


def public_names() -> list[PublicName]:
    """Every name in the ``__all__`` of every public module, with its summary."""
    names = []
    for module_name in public_modules():
        module = importlib.import_module(module_name)
        attributes = _attribute_docstrings(module)
        for name in sorted(getattr(module, "__all__", ())):
            names.append(
                PublicName(module_name, name, _summary(name, getattr(module, name), attributes))
            )
    return names


def find(query: str) -> list[str]:
    """The qualified names ``query`` may mean: itself, or the public names it ends."""
    target = query if query.startswith("pyctrl") else f"pyctrl.{query}"
    if target in public_modules() or _resolve(target) is not None:
        return [target]
    return [n.qualified for n in public_names() if n.qualified.endswith(f".{query}")]


def _resolve(qualified: str) -> Any:
    """The object a dotted name names, or None."""
    parts = qualified.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        try:
            for attribute in parts[split:]:
                obj = getattr(obj, attribute)
        except AttributeError:
            return None
        return obj
    return None


class _PlainText(pydoc.TextDoc):
    """pydoc's text, without the backspaces that make bold on a terminal."""

    def bold(self, text: str) -> str:
        return text


def describe(qualified: str) -> str:
    """The documentation of one name, as plain text (pydoc's rendering)."""
    obj = _resolve(qualified)
    if obj is None:
        raise LookupError(f"no public name {qualified!r}")
    if not (inspect.ismodule(obj) or inspect.isclass(obj) or callable(obj)):
        module, _, name = qualified.rpartition(".")
        doc = _attribute_docstrings(importlib.import_module(module)).get(name, "")
        return f"{qualified} = {obj!r}\n\n{doc}\n"
    return pydoc.render_doc(obj, title="%s", renderer=_PlainText())


def markdown_index() -> str:
    """docs/api.md: every public name with its summary, by module, linked to its reference."""
    lines = [
        "# Every public name",
        "",
        "Each public module's `__all__`, with the first line of each docstring. The full",
        "documentation of a name is in the API reference pages of this site, and in a",
        "terminal, without building anything: `python -m pyctrl.docs NAME` (for example",
        "`python -m pyctrl.docs Manager` or `python -m pyctrl.docs pyctrl.manager.Options`).",
        "",
        "This page is generated: `python -m pyctrl.docs --markdown > docs/api.md`.",
    ]
    current = ""
    for item in public_names():
        if item.module != current:
            current = item.module
            page = current.removeprefix("pyctrl.")
            lines += ["", f"## [{current}](reference/{page}.md)", ""]
            lines += ["| name | summary |", "| --- | --- |"]
        summary = item.summary.replace("|", "\\|")
        page = item.module.removeprefix("pyctrl.")
        lines.append(f"| [`{item.name}`](reference/{page}.md#{item.qualified}) | {summary} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m pyctrl.docs [NAME | --markdown]``; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m pyctrl.docs", description="pyctrl's API reference, from its docstrings."
    )
    parser.add_argument("name", nargs="?", help="a public name: Manager, manager.Options, ...")
    parser.add_argument("--markdown", action="store_true", help="print docs/api.md")
    args = parser.parse_args(argv)
    if args.markdown:
        sys.stdout.write(markdown_index())
        return 0
    if args.name is None:
        width = max(len(n.qualified) for n in public_names())
        for item in public_names():
            print(f"{item.qualified:<{width}}  {item.summary}")
        return 0
    matches = find(args.name)
    if not matches:
        print(f"no public name {args.name!r}: `python -m pyctrl.docs` lists them", file=sys.stderr)
        return 1
    if len(matches) > 1:
        print(f"{args.name!r} is in several modules:", *matches, sep="\n  ", file=sys.stderr)
        return 1
    sys.stdout.write(describe(matches[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
