"""Every Python block of docs/ and README.md: complete imports, no invisible names, runs.

For each block (read with its page's prelude and the blocks it continues, see
`tests.docs.snippets`):

- it compiles (a block may ``await`` at top level: it then reads as the body of a
  coroutine, such as a reconciler's);
- no name is used that the block does not import, define or declare (ruff's
  undefined-name check, F821);
- every import in it imports: the names exist where the block says;
- a block without top-level ``await`` runs, as a module; then every ``async def test_*``
  it defines is awaited: without parameters, or with pyctrl's ``envtest`` fixture, for
  which it gets an `Environment` serving the CRDs of the custom resources the block
  defines or imports (what a project's ``envtest_crd_paths`` would hold). A block that
  uses a *given* name (declared ``client: Client``, with no value) at module level stops
  there: what it needs is what the reader has, not something the page made.
"""

from __future__ import annotations

import ast
import asyncio
import builtins
import inspect
import re
import subprocess
import sys
import types
from typing import Any

import pytest

from pyctrl.crd import crds_for
from pyctrl.envtest import Environment
from pyctrl.resource import CustomResource
from tests.docs.snippets import Snippet, all_snippets

SNIPPETS = all_snippets()
OURS = [snippet for snippet in SNIPPETS if not snippet.checked_elsewhere]


def _compile(snippet: Snippet) -> tuple[types.CodeType, bool]:
    """The block's code object, and whether it awaits at top level."""
    name = snippet.id
    try:
        return compile(snippet.source, name, "exec", dont_inherit=True), False
    except SyntaxError:
        flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        return compile(snippet.source, name, "exec", flags=flags, dont_inherit=True), True


def _module(snippet: Snippet) -> types.ModuleType:
    """A fresh module for the block (pydantic resolves a model's annotations there)."""
    module = types.ModuleType(
        "docs_snippet_" + "".join(c if c.isalnum() else "_" for c in snippet.id)
    )
    module.__file__ = str(snippet.page)
    return module


def _crds(module: types.ModuleType) -> list[dict[str, Any]]:
    """The CRDs of the custom resources a block defines or imports."""
    kinds = {
        value
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, CustomResource)
        and value is not CustomResource
    }
    return crds_for(*kinds) if kinds else []


def test_the_docs_have_snippets() -> None:
    """The collection finds the pages' blocks (a broken pattern would find none)."""
    assert len(OURS) > 80
    assert len(SNIPPETS) > 110
    assert {snippet.marker for snippet in SNIPPETS} == {
        "",
        "prelude",
        "continues",
        "excerpt",
        "generated",
        "edit",
    }


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[s.id for s in SNIPPETS])
def test_snippet_compiles(snippet: Snippet) -> None:
    """The block is valid Python (top-level await allowed)."""
    _compile(snippet)


EXCERPTS = [snippet for snippet in SNIPPETS if snippet.excerpt_of]


@pytest.mark.parametrize("snippet", EXCERPTS, ids=[s.id for s in EXCERPTS])
def test_an_excerpt_shows_names_of_its_file(snippet: Snippet) -> None:
    """Every identifier of an excerpt occurs in the files it is taken from."""
    text = "\n".join(path.read_text() for path in snippet.excerpt_of)
    words = set(re.findall(r"\w+", text)) | set(dir(builtins))
    names = set()
    for node in ast.walk(ast.parse(snippet.code)):
        match node:
            case ast.Name(id=name) | ast.Attribute(attr=name) | ast.arg(arg=name):
                names.add(name)
            case ast.FunctionDef(name=name) | ast.AsyncFunctionDef(name=name):
                names.add(name)
            case ast.ClassDef(name=name) | ast.keyword(arg=str(name)):
                names.add(name)
    assert names - words == set(), f"{snippet.id}: not in {snippet.excerpt_of}"


@pytest.mark.parametrize("snippet", OURS, ids=[s.id for s in OURS])
def test_snippet_uses_no_invisible_name(snippet: Snippet) -> None:
    """Every name the block uses is imported, defined or declared in what the reader sees."""
    found = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--select", "F821",
         "--output-format", "concise", "--stdin-filename", "snippet.py", "-"],
        input=snippet.source, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert found.returncode in (0, 1), found.stderr
    # A given name (`client: Client`, no value) is declared: ruff still calls it undefined.
    given = snippet.given()
    undefined = [
        line
        for line in found.stdout.splitlines()
        if (name := re.search(r"Undefined name `([^`]+)`", line)) and name[1] not in given
    ]
    assert not undefined, f"{snippet.id}: " + "\n".join(undefined)


@pytest.mark.parametrize("snippet", OURS, ids=[s.id for s in OURS])
def test_snippet_imports_import(snippet: Snippet) -> None:
    """Every import statement of the block (in functions too) finds its module and names."""
    imports: list[ast.stmt] = [
        node
        for node in ast.walk(ast.parse(snippet.source))
        if isinstance(node, ast.Import | ast.ImportFrom)
    ]
    module = _module(snippet)
    code = compile(ast.Module(body=imports, type_ignores=[]), snippet.id, "exec", dont_inherit=True)
    exec(code, module.__dict__)


@pytest.mark.parametrize("snippet", OURS, ids=[s.id for s in OURS])
async def test_snippet_runs(snippet: Snippet) -> None:
    """The block runs as a module, and its parameterless ``test_*`` coroutines pass."""
    code, awaits = _compile(snippet)
    if awaits:
        return  # the body of a coroutine: checked above, run by no one but the reader
    module = _module(snippet)
    sys.modules[module.__name__] = module
    try:
        try:
            exec(code, module.__dict__)
        except NameError as error:
            if error.name in snippet.given():
                return
            raise
        tests: list[Any] = [
            fn
            for name, fn in module.__dict__.items()
            if name.startswith("test_")
            and inspect.iscoroutinefunction(fn)
            and set(inspect.signature(fn).parameters) <= {"envtest"}
            and fn.__module__ == module.__name__
        ]
        for test in tests:
            async with asyncio.timeout(45):
                if not inspect.signature(test).parameters:
                    await test()
                    continue
                async with Environment(crds=_crds(module)) as env:
                    await test(env)
    finally:
        del sys.modules[module.__name__]
