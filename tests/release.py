"""The release checks `nox -s release` runs besides building and `twine check`.

pyctrl's version is ``__version__`` in ``src/pyctrl/_version.py`` (Semantic Versioning;
see docs/releasing.md). A release of version X.Y.Z needs CHANGELOG.md (Keep a Changelog)
to have a ``## [X.Y.Z]`` section, dated, with at least one entry, and the built sdist and
wheel to carry that version::

    python -m tests.release DIST_DIR     # exit 1 with the reasons when not releasable
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_VERSION = re.compile(r'^__version__ = "([^"]+)"$', re.M)
_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?$")
_HEADING = re.compile(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?\s*$", re.M)


def version(repo: Path = REPO) -> str:
    """``__version__`` of ``src/pyctrl/_version.py``."""
    found = _VERSION.search((repo / "src/pyctrl/_version.py").read_text())
    if found is None:
        raise SystemExit('src/pyctrl/_version.py has no __version__ = "X.Y.Z" line')
    return found.group(1)


def changelog_problems(text: str, release: str) -> list[str]:
    """Why CHANGELOG.md's ``text`` does not document ``release`` (empty: it does)."""
    problems = []
    if not _SEMVER.match(release):
        problems.append(f"version {release!r} is not MAJOR.MINOR.PATCH (Semantic Versioning)")
    headings = list(_HEADING.finditer(text))
    mine = [h for h in headings if h.group(1) == release]
    if not mine:
        named = ", ".join(h.group(1) for h in headings) or "none"
        return [*problems, f"CHANGELOG.md has no '## [{release}]' section (sections: {named})"]
    heading = mine[0]
    if heading.group(2) is None:
        problems.append(f"'## [{release}]' has no date: write '## [{release}] - YYYY-MM-DD'")
    following = [h.start() for h in headings if h.start() > heading.start()]
    body = text[heading.end() : following[0] if following else len(text)]
    if not re.search(r"^\s*- \S", body, re.M):
        problems.append(f"'## [{release}]' lists no change")
    return problems


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
    """Check CHANGELOG.md and the distributions in DIST (argv[0]) for the current version."""
    args = sys.argv[1:] if argv is None else argv
    release = version()
    problems = changelog_problems((REPO / "CHANGELOG.md").read_text(), release)
    if args:
        problems += dist_problems(Path(args[0]), release)
    for problem in problems:
        print(f"not releasable: {problem}", file=sys.stderr)
    if not problems:
        print(f"pyctrl-runtime {release}: CHANGELOG.md and the distributions agree")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
