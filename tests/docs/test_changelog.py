"""CHANGELOG.md keeps the form of Keep a Changelog and names the version pyctrl reports."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import pyctrl

REPO = Path(__file__).resolve().parents[2]
SECTIONS = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security", "Upgrading"}
# semver.org's regular expression, without build metadata (a wheel version cannot hold it).
SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
)
VERSION = re.compile(r"## \[(?P<version>[^\]]+)\](?: - (?P<date>\d{4}-\d{2}-\d{2}))?$")


def versions() -> list[tuple[str, str | None]]:
    """The (version, date) of every `## [...]` heading, in the file's order."""
    found = []
    for line in (REPO / "CHANGELOG.md").read_text().splitlines():
        if line.startswith("## "):
            heading = VERSION.fullmatch(line)
            assert heading is not None, f"not a Keep a Changelog version heading: {line!r}"
            found.append((heading["version"], heading["date"]))
    return found


def test_the_version_follows_semantic_versioning() -> None:
    """pyctrl.__version__ is MAJOR.MINOR.PATCH (with an optional pre-release)."""
    assert SEMVER.fullmatch(pyctrl.__version__), pyctrl.__version__


def test_the_changelog_names_the_current_version_or_collects_unreleased_changes() -> None:
    """The newest heading is [Unreleased] or the version pyctrl reports."""
    newest = versions()[0][0]
    assert newest in ("Unreleased", pyctrl.__version__)
    assert pyctrl.__version__ in [version for version, _ in versions()] or newest == "Unreleased"


def test_released_versions_are_semver_dated_and_newest_first() -> None:
    """Every version but [Unreleased] is semver with a date; versions and dates descend."""
    released = versions()
    if released[0][0] == "Unreleased":
        released = released[1:]
    assert all(when is not None and SEMVER.fullmatch(v) for v, when in released), released
    keys = [tuple(int(part) for part in v.split("-")[0].split(".")) for v, _ in released]
    assert keys == sorted(keys, reverse=True)
    dates = [date.fromisoformat(when) for _, when in released if when is not None]
    assert dates == sorted(dates, reverse=True)


def test_only_keep_a_changelog_sections_appear_under_a_version() -> None:
    """Each `###` heading is one of the kinds of change (or Upgrading), once per version."""
    text = (REPO / "CHANGELOG.md").read_text()
    for block in re.split(r"^## ", text, flags=re.M)[1:]:
        headings = re.findall(r"^### (.+)$", block, re.M)
        assert set(headings) <= SECTIONS, (block.splitlines()[0], headings)
        assert len(headings) == len(set(headings)), block.splitlines()[0]


def test_unreleased_has_a_place_for_every_kind_of_change() -> None:
    """[Unreleased], when present, offers Added, Changed, Fixed and Upgrading."""
    text = (REPO / "CHANGELOG.md").read_text()
    if "## [Unreleased]" not in text:
        return
    unreleased = text.split("## [Unreleased]", 1)[1].split("\n## ", 1)[0]
    assert {"Added", "Changed", "Fixed", "Upgrading"} <= set(
        re.findall(r"^### (.+)$", unreleased, re.M)
    )


def test_the_readme_points_developers_to_the_changelog() -> None:
    """README's Developing section says where changes and upgrade notes are written."""
    readme = (REPO / "README.md").read_text()
    developing = readme.split("## Developing pyctrl", 1)[1]
    assert "CHANGELOG.md" in developing
