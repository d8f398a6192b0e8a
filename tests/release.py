"""The release checks `nox -s release` runs besides building and `twine check`.

pyctrl's version is ``__version__`` in ``src/pyctrl/_version.py`` (Semantic Versioning;
see docs/releasing.md). Two checks, one per moment of the version's life:

- on every commit (CI: ``nox -s release``): CHANGELOG.md (Keep a Changelog) opens with
  ``## [Unreleased]``, where changes collect, and ``__version__`` is the last release:
  it has a dated ``## [X.Y.Z]`` section listing changes, the newest one; the built sdist
  and wheel carry that version. A version raised without its section fails here, on the
  commit that raised it.
- when cutting the release (``nox -s release -- --final``, on the commit to be tagged
  ``vX.Y.Z``, and on any commit tagged so): besides, ``## [Unreleased]`` lists nothing:
  every change is in the version's section, none would ship unlisted. A ``v*`` tag on
  the commit must name ``__version__``.

::

    python -m tests.release [--final] [DIST_DIR]   # exit 1 with the reasons when not
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_VERSION = re.compile(r'^__version__ = "([^"]+)"$', re.M)
_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?$")
_HEADING = re.compile(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?\s*$", re.M)
_ENTRY = re.compile(r"^\s*- \S", re.M)
UNRELEASED = "Unreleased"


def version(repo: Path = REPO) -> str:
    """``__version__`` of ``src/pyctrl/_version.py``."""
    found = _VERSION.search((repo / "src/pyctrl/_version.py").read_text())
    if found is None:
        raise SystemExit('src/pyctrl/_version.py has no __version__ = "X.Y.Z" line')
    return found.group(1)


def _sections(text: str) -> list[tuple[str, str | None, str]]:
    """Each ``## [name] - date`` section: its name, date (or None) and body."""
    headings = list(_HEADING.finditer(text))
    ends = [h.start() for h in headings[1:]] + [len(text)]
    return [
        (h.group(1), h.group(2), text[h.end() : end]) for h, end in zip(headings, ends, strict=True)
    ]


def changelog_problems(text: str, release: str, *, final: bool = False) -> list[str]:
    """Why CHANGELOG.md's ``text`` does not document ``release`` (empty: it does).

    ``final``: the release is being cut, so nothing may be left under Unreleased.
    """
    problems = []
    if not _SEMVER.match(release):
        problems.append(f"version {release!r} is not MAJOR.MINOR.PATCH (Semantic Versioning)")
    sections = _sections(text)
    names = [name for name, _, _ in sections]
    if not names or names[0] != UNRELEASED:
        problems.append(
            f"CHANGELOG.md does not open with '## [{UNRELEASED}]', where changes collect"
        )
    mine = [s for s in sections if s[0] == release]
    if not mine:
        named = ", ".join(names) or "none"
        return [*problems, f"CHANGELOG.md has no '## [{release}]' section (sections: {named})"]
    _, date, body = mine[0]
    if date is None:
        problems.append(f"'## [{release}]' has no date: write '## [{release}] - YYYY-MM-DD'")
    if not _ENTRY.search(body):
        problems.append(f"'## [{release}]' lists no change")
    versions = [name for name in names if name != UNRELEASED]
    if versions[0] != release:
        problems.append(
            f"'## [{release}]' is not the newest version section ('## [{versions[0]}]' is): "
            f"src/pyctrl/_version.py says {release}"
        )
    if final and UNRELEASED in names:
        unreleased = sections[names.index(UNRELEASED)][2]
        if _ENTRY.search(unreleased):
            problems.append(
                f"'## [{UNRELEASED}]' still lists changes: move them into '## [{release}]' "
                "(they would ship unlisted)"
            )
    return problems


def head_tags(repo: Path = REPO) -> list[str]:
    """The git tags on the checkout's HEAD (none outside a git checkout)."""
    try:
        done = subprocess.run(
            ["git", "tag", "--points-at", "HEAD"],
            cwd=repo,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return done.stdout.split() if done.returncode == 0 else []


def tag_problems(tags: list[str], release: str) -> list[str]:
    """Why the release tags (``v*``) among ``tags`` do not name ``release``."""
    return [
        f"HEAD is tagged {tag}, but src/pyctrl/_version.py says {release}"
        for tag in tags
        if tag.startswith("v") and tag != f"v{release}"
    ]


def dist_problems(dist: Path, release: str) -> list[str]:
    """Why ``dist`` does not hold exactly one sdist and one wheel of ``release``."""
    wheels = sorted(p.name for p in dist.glob("*.whl"))
    sdists = sorted(p.name for p in dist.glob("*.tar.gz"))
    problems = []
    if wheels != [f"pyctrl_runtime-{release}-py3-none-any.whl"]:
        problems.append(f"expected the wheel of {release} alone in {dist}, found {wheels}")
    if sdists != [f"pyctrl_runtime-{release}.tar.gz"]:
        problems.append(f"expected the sdist of {release} alone in {dist}, found {sdists}")
    return problems


def main(argv: list[str] | None = None) -> int:
    """Check CHANGELOG.md and the distributions in DIST for the current version."""
    parser = argparse.ArgumentParser(prog="python -m tests.release", description=__doc__)
    parser.add_argument("dist", nargs="?", type=Path, help="where the sdist and wheel are")
    parser.add_argument(
        "--final", action="store_true", help="cutting the release: nothing left Unreleased"
    )
    args = parser.parse_args(argv)
    release = version()
    tags = head_tags()
    final = args.final or f"v{release}" in tags  # the tagged commit is the release
    problems = tag_problems(tags, release)
    problems += changelog_problems((REPO / "CHANGELOG.md").read_text(), release, final=final)
    if args.dist is not None:
        problems += dist_problems(args.dist, release)
    for problem in problems:
        print(f"not releasable: {problem}", file=sys.stderr)
    if not problems:
        checked = "CHANGELOG.md and the distributions agree" if args.dist else "CHANGELOG.md agrees"
        what = "ready to release" if final else "the last release; changes since: Unreleased"
        print(f"pyctrl-runtime {release}: {checked} ({what})")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
