"""README.md stays true to pyproject.toml."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_readme_names_every_runtime_dependency() -> None:
    """The README's list of runtime dependencies is pyproject's, no more and no fewer."""
    readme = " ".join((REPO / "README.md").read_text().split())
    listed = re.search(r"Runtime dependencies: ([^.]+)\.", readme)
    assert listed is not None, "README.md has no 'Runtime dependencies: ...' sentence"
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = {re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0] for spec in project["dependencies"]}
    assert set(listed.group(1).split(", ")) == declared
