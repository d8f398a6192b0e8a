"""The Python blocks of the docs pages, grouped as a reader runs them.

A block is read on its own, as a module, unless the line before its fence says otherwise:

- ``<!-- snippet: prelude -->``: the page's shared names (imports, and *given* names
  declared with a type and no value, such as ``client: Client``, for what the reader
  already has in hand). It is prepended to every later block of the page.
- ``<!-- snippet: continues -->``: the block goes on from the previous block of the page
  (the two read as one module).
- ``<!-- snippet: generated -->``: code that ``pyctrl init`` and ``pyctrl create`` write
  into a project named ``guestbook``; tests/cli/test_create_project.py finds each of its
  lines in the project it grows that way.
- ``<!-- snippet: edit -->``: a line the reader puts into the project a page's walk grows
  (docs/production.md's path from ``pyctrl init`` to an installed operator):
  tests/cli/test_production_docs.py makes the edit and runs the page's commands.
- ``<!-- snippet: excerpt of examples/x/y.py [examples/x/z.py] -->``: an abridged excerpt
  of files of the repository (the example pages show their example's code), which their
  own tests run: every identifier of the block must occur in one of the files.

``python -m tests.docs.snippets DIR`` writes each block (with its context) as a module
into DIR, for ``nox -s typecheck`` to run mypy over them (tests/docs/mypy-snippets.ini):
a block that awaits at top level becomes the body of a coroutine function.

A block titled ``kopf...`` (``title="kopf"``) is kopf's code, shown for comparison: only
its syntax is checked (kopf is not a dependency).
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGES = [*sorted((REPO / "docs").glob("**/*.md")), REPO / "README.md"]
_FENCE = re.compile(
    r"^(?P<indent> *)```(?:python|py)(?P<attrs>[^\n]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
    re.M | re.S,
)
_MARKER = re.compile(r"<!-- snippet: (?P<marker>[a-z]+)(?: of (?P<paths>[^>]+?))? -->\s*$")
MARKERS = ("prelude", "continues", "excerpt", "generated", "edit")
IN_FLIGHT: set[tuple[str, str]] = set()


@dataclass(frozen=True)
class Snippet:
    """One block, with the code it is read with (the prelude, the blocks it continues)."""

    page: Path
    line: int
    marker: str
    title: str
    code: str
    context: str
    excerpt_of: tuple[Path, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"

    @property
    def source(self) -> str:
        """The module a reader would run: the context, then the block."""
        return self.context + self.code

    @property
    def checked_elsewhere(self) -> bool:
        """Whether the block is not checked as a module of its own.

        kopf's code (syntax only), an excerpt or generated code (checked against its
        source), an edit of a walk's project (made by its test), a block another change
        rewrites.
        """
        page = str(self.page.relative_to(REPO))
        in_flight = any(page == p and self.code.startswith(s) for p, s in IN_FLIGHT)
        return (
            self.title.startswith("kopf")
            or in_flight
            or bool(self.excerpt_of)
            or self.marker in ("generated", "edit")
        )

    def given(self) -> set[str]:
        """Module-level names declared with a type and no value (``client: Client``)."""
        try:
            tree = ast.parse(self.source)
        except SyntaxError:
            return set()
        return {
            node.target.id
            for node in tree.body
            if isinstance(node, ast.AnnAssign)
            and node.value is None
            and isinstance(node.target, ast.Name)
        }


def page_snippets(page: Path) -> list[Snippet]:
    """Every Python block of ``page``, with its context."""
    text = page.read_text()
    found: list[Snippet] = []
    prelude = previous = ""
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marked = _MARKER.search(before)
        marker = marked["marker"] if marked else ""
        assert marker in ("", *MARKERS), f"{page}: unknown snippet marker {marker!r}"
        title = re.search(r'title="([^"]*)"', match["attrs"])
        code = textwrap.dedent(match["body"])
        line = text[: match.start()].count("\n") + 1
        context = previous if marker == "continues" else prelude
        paths = marked["paths"].split() if marked and marked["paths"] else []
        excerpt_of = tuple(REPO / path for path in paths)
        assert (marker == "excerpt") == bool(excerpt_of), f"{page}: {before}"
        snippet = Snippet(page, line, marker, title[1] if title else "", code, context, excerpt_of)
        found.append(snippet)
        if snippet.checked_elsewhere:
            continue
        previous = snippet.source
        if marker == "prelude":
            prelude = snippet.source
    return found


def all_snippets() -> list[Snippet]:
    """Every Python block of every docs page and the README."""
    return [snippet for page in PAGES for snippet in page_snippets(page)]


def write_modules(directory: Path) -> list[Path]:
    """Write every block checked as a module into ``directory``, one module each."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for snippet in all_snippets():
        if snippet.checked_elsewhere:
            continue
        source = snippet.source
        try:
            compile(source, snippet.id, "exec", dont_inherit=True)
        except SyntaxError:  # top-level await: the body of a coroutine, as the reader's
            source = "async def _snippet() -> None:\n" + textwrap.indent(source, "    ")
        path = directory / (re.sub(r"\W", "_", snippet.id) + ".py")
        path.write_text(f"# {snippet.id}\n{source}")
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write_modules(Path(sys.argv[1])):
        print(path)
