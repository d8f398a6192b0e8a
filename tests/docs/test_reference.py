"""The API reference without building the site: `python -m pyctrl.docs`, docs/api.md, tables."""

from __future__ import annotations

import ast
import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pyctrl.manager
from pyctrl import docs
from pyctrl.manager import Options

REPO = Path(__file__).resolve().parents[2]


def test_the_api_index_page_is_current() -> None:
    """docs/api.md lists every public name with its summary, as pyctrl.docs renders them."""
    page = (REPO / "docs" / "api.md").read_text()
    assert page == docs.markdown_index(), (
        "docs/api.md is stale: run `python -m pyctrl.docs --markdown > docs/api.md`"
    )


def test_every_public_name_has_a_summary() -> None:
    """Each name in a public module's __all__ says what it is in one line."""
    names = docs.public_names()
    assert len(names) > 300
    assert [n.qualified for n in names if not n.summary] == []
    assert {n.module for n in names} == set(docs.public_modules())


def test_every_public_module_has_a_reference_page_in_the_nav() -> None:
    """The site has a reference page per public module, and the index page, in its menu."""
    nav = (REPO / "mkdocs.yml").read_text()
    for module in docs.public_modules():
        page = f"reference/{module.removeprefix('pyctrl.')}.md"
        assert (REPO / "docs" / page).read_text().strip().endswith(f"::: {module}")
        assert f"{module}: {page}" in nav
    assert "api.md" in nav


def test_a_name_prints_its_documentation(capsys: pytest.CaptureFixture[str]) -> None:
    """A short or qualified name prints pydoc's text of it: signature and docstring."""
    assert docs.main(["manager.Options"]) == 0
    text = capsys.readouterr().out
    assert "class Options" in text
    assert "Manager options, with controller-runtime's defaults." in text
    assert docs.main(["Manager"]) == 0
    assert "pyctrl.manager" in capsys.readouterr().out


def test_an_ambiguous_or_unknown_name_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    """A name in several modules lists them; an unknown one points to the list; exit 1."""
    assert docs.main(["Options"]) == 1
    err = capsys.readouterr().err
    assert "pyctrl.manager.Options" in err
    assert "pyctrl.controller.Options" in err
    assert docs.main(["NoSuchThing"]) == 1
    assert "python -m pyctrl.docs" in capsys.readouterr().err


def test_a_constant_prints_its_value_and_docstring(capsys: pytest.CaptureFixture[str]) -> None:
    """A module-level constant prints its value and the docstring written under it."""
    assert docs.main(["pyctrl.handler.LOW_PRIORITY"]) == 0
    assert "LOW_PRIORITY = -100" in capsys.readouterr().out


def test_python_dash_m_runs_it() -> None:
    """`python -m pyctrl.docs NAME` is the command the guides give."""
    done = subprocess.run(
        [sys.executable, "-m", "pyctrl.docs", "pyctrl.reconcile.Result"],
        capture_output=True, text=True, check=False, timeout=50,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "class Result" in done.stdout


GUIDES = [
    "cache", "cli", "client", "config", "controllers", "crd", "debugging", "envtest",
    "envtest-server", "getting-started", "kopf", "manager", "objects", "production",
    "scaling-out", "webhooks", "workqueue",
]  # fmt: skip


@pytest.mark.parametrize("guide", GUIDES)
def test_each_guide_links_to_the_reference(guide: str) -> None:
    """A guide's Reference section links its modules' pages and the index of names."""
    text = (REPO / "docs" / f"{guide}.md").read_text()
    section = text.split("\n## Reference\n", 1)[1]
    assert "](api.md)" in section
    assert re.search(r"\]\(reference/\w+\.md\)", section)
    assert "python -m pyctrl.docs" in section


def _default(text: str) -> object:
    """A default as the table writes it: a literal, or a call of a name of pyctrl.manager."""
    try:
        return ast.literal_eval(text)
    except ValueError:
        return eval(text, vars(pyctrl.manager))


def test_the_manager_page_tables_every_option_with_its_default() -> None:
    """docs/manager.md's Options table has one row per field of Options, with its default."""
    text = (REPO / "docs" / "manager.md").read_text()
    table = text.split("## Options\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| `([^`]*)` \|", table, re.M)
    documented = {name: _default(text) for name, text in rows}
    fields = dataclasses.fields(Options)
    assert list(documented) == [f.name for f in fields]
    for f in fields:
        default = f.default_factory() if callable(f.default_factory) else f.default
        assert documented[f.name] == default, f.name


def test_the_readme_points_to_the_reference() -> None:
    """README says where the API reference is, without building the site."""
    readme = (REPO / "README.md").read_text()
    assert "python -m pyctrl.docs" in readme
    assert "(docs/api.md)" in readme
