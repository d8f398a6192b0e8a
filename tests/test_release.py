"""The release checks (tests/release.py, `nox -s release`) and the version a project pins."""

from __future__ import annotations

import subprocess
from typing import TYPE_CHECKING

from click.testing import CliRunner

from pyctrl import __version__
from pyctrl.cli import app
from tests.release import (
    changelog_problems,
    dist_problems,
    head_tags,
    main,
    tag_problems,
    version,
)

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

CHANGELOG = """# Changelog

## [Unreleased]

### Added

- something new

## [1.2.0] - 2026-11-20

### Fixed

- a bug

## [1.1.0]

## [1.0.0] - 2026-01-01

- first
"""


def test_a_dated_section_with_changes_is_releasable() -> None:
    """`## [1.2.0] - date` listing a change, the newest, documents 1.2.0 (Unreleased lists more)."""
    assert changelog_problems(CHANGELOG, "1.2.0") == []


def test_what_is_not_releasable_is_named() -> None:
    """A missing, undated, empty or older section, and a version that is not SemVer, are named."""
    assert changelog_problems(CHANGELOG, "1.3.0") == [
        "CHANGELOG.md has no '## [1.3.0]' section (sections: Unreleased, 1.2.0, 1.1.0, 1.0.0)"
    ]
    assert changelog_problems(CHANGELOG, "1.1.0") == [
        "'## [1.1.0]' has no date: write '## [1.1.0] - YYYY-MM-DD'",
        "'## [1.1.0]' lists no change",
        "'## [1.1.0]' is not the newest version section ('## [1.2.0]' is): "
        "src/pyctrl/_version.py says 1.1.0",
    ]
    assert changelog_problems(CHANGELOG, "v1.2")[0] == (
        "version 'v1.2' is not MAJOR.MINOR.PATCH (Semantic Versioning)"
    )
    # Unreleased changes alone do not make a release.
    assert changelog_problems("## [Unreleased]\n\n- x\n", "0.1.0") == [
        "CHANGELOG.md has no '## [0.1.0]' section (sections: Unreleased)"
    ]
    # Changes collect under Unreleased, at the top.
    assert changelog_problems("## [0.1.0] - 2026-01-01\n\n- x\n", "0.1.0") == [
        "CHANGELOG.md does not open with '## [Unreleased]', where changes collect"
    ]


def test_cutting_a_release_leaves_nothing_unreleased() -> None:
    """With final=True (the commit to tag), changes still under Unreleased are refused."""
    assert changelog_problems(CHANGELOG, "1.2.0", final=True) == [
        "'## [Unreleased]' still lists changes: move them into '## [1.2.0]' "
        "(they would ship unlisted)"
    ]
    cut = CHANGELOG.replace("### Added\n\n- something new\n\n", "")
    assert changelog_problems(cut, "1.2.0", final=True) == []


def test_a_release_tag_must_name_the_version() -> None:
    """A `v*` tag on HEAD other than v<__version__> is refused; other tags are not ours."""
    assert tag_problems(["v1.2.0", "nightly"], "1.2.0") == []
    assert tag_problems(["v1.3.0"], "1.2.0") == [
        "HEAD is tagged v1.3.0, but src/pyctrl/_version.py says 1.2.0"
    ]


def test_the_tags_are_read_from_git(tmp_path: Path) -> None:
    """`git tag --points-at HEAD` of the checkout; none outside a git checkout."""
    assert head_tags(tmp_path) == []
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], cwd=tmp_path, check=True)
    subprocess.run([*git, "tag", "v0.1.0"], cwd=tmp_path, check=True)
    assert head_tags(tmp_path) == ["v0.1.0"]


def test_this_checkouts_changelog_documents_its_version(capsys: pytest.CaptureFixture[str]) -> None:
    """What CI checks on every commit: `python -m tests.release` passes on this checkout."""
    assert main([]) == 0
    assert f"pyctrl-runtime {__version__}: CHANGELOG.md agrees" in capsys.readouterr().out


def test_the_distributions_must_be_of_the_version(tmp_path: Path) -> None:
    """One wheel and one sdist of exactly that version."""
    (tmp_path / "pyctrl_runtime-1.2.0-py3-none-any.whl").touch()
    (tmp_path / "pyctrl_runtime-1.1.0.tar.gz").touch()
    assert dist_problems(tmp_path, "1.2.0") == [
        f"expected the sdist of 1.2.0 alone in {tmp_path}, found ['pyctrl_runtime-1.1.0.tar.gz']"
    ]


def test_the_version_is_the_packages() -> None:
    """The release version is pyctrl.__version__ (src/pyctrl/_version.py)."""
    assert version() == __version__


def test_a_new_projects_image_pins_the_pyctrl_it_was_made_with(tmp_path: Path) -> None:
    """`pyctrl init` writes a Dockerfile installing exactly this pyctrl-runtime."""
    result = CliRunner().invoke(app, ["init", str(tmp_path / "shop")])
    assert result.exit_code == 0, result.output
    dockerfile = (tmp_path / "shop/Dockerfile").read_text()
    assert f"ARG PYCTRL_VERSION={__version__}\n" in dockerfile
    assert 'RUN pip install --no-cache-dir "pyctrl-runtime==${PYCTRL_VERSION}" .' in dockerfile
